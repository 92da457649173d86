"""RuntimeClass: what the API server's admission plugin adds to a pod, applied to manifests.

A pod written by hand that names a RuntimeClass has not met the plugin yet: allot adds the class's
overhead (so the pod asks its node for more) and merges the class's node selector and
tolerations, as creating the pod would. A dump's pods already carry all of that and come back
unchanged; a pod the API server would refuse (its selector contradicts the class's) is an error.
"""

from __future__ import annotations

from allot.cluster.resources import pod_requests
from allot.cluster.state import ClusterState
from allot.model.core import Pod
from allot.model.errors import ManifestErrors
from allot.model.loader import load_text
from allot.model.runtime import RuntimeClass, admit_runtime_class
from allot.plan.planner import plan

KATA = """
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 250m, memory: 128Mi}}
scheduling:
  nodeSelector: {example.com/sandbox: kata}
  tolerations: [{key: example.com/sandbox, operator: Exists, effect: NoSchedule}]
"""

# Two nodes of 2 CPUs: n-kata is labelled and tainted for sandboxed pods, n-plain is not.
NODES = """
apiVersion: v1
kind: Node
metadata: {name: n-kata, labels: {example.com/sandbox: kata}}
spec: {taints: [{key: example.com/sandbox, value: "true", effect: NoSchedule}]}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n-plain}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
"""


def pod(name: str, cpu: str, *, runtime_class: str = "kata", extra: str = "") -> str:
    named = f"runtimeClassName: {runtime_class}\n  " if runtime_class else ""
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  {named}{extra}containers: [{{name: c, image: x, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
"""


def manifests(*documents: str) -> str:
    return "\n---\n".join([KATA, NODES, *documents])


def test_the_class_overhead_is_added_to_what_the_pod_asks_its_node() -> None:
    state = ClusterState.from_manifests(load_text(manifests(pod("p", "1"))))
    requests = pod_requests(state.pods["default/p"].pod)
    # Millicores and bytes: 1 CPU + 250m, 1Gi + 128Mi.
    assert requests["cpu"] == 1250
    assert requests["memory"] == 1152 * 2**20


def test_a_pod_that_fits_a_node_only_without_the_overhead_stays_pending() -> None:
    # 2 CPUs asked on a 2-CPU node: the 250m overhead makes it too much, as on a real cluster.
    result = plan(load_text(manifests(pod("whole", "2"))))
    assert not result.bound
    assert "Insufficient cpu" in result.waiting["default/whole"]
    # The same pod without the class fits n-plain (it does not tolerate n-kata's taint).
    result = plan(load_text(manifests(pod("whole", "2", runtime_class=""))))
    assert {b.pod: b.node for b in result.bound} == {"default/whole": "n-plain"}


def test_the_class_scheduling_sends_the_pod_where_its_handler_is() -> None:
    # The class's toleration lets the pod onto the tainted node and its selector keeps it there.
    result = plan(load_text(manifests(pod("sandboxed", "1"))))
    assert {b.pod: b.node for b in result.bound} == {"default/sandboxed": "n-kata"}


def test_a_class_not_among_the_manifests_changes_nothing() -> None:
    text = "\n---\n".join([NODES, pod("p", "2", runtime_class="gvisor")])
    state = ClusterState.from_manifests(load_text(text))
    assert pod_requests(state.pods["default/p"].pod)["cpu"] == 2000


def test_an_admitted_pod_is_left_as_the_api_server_left_it() -> None:
    loaded = load_text(
        manifests(
            pod(
                "dumped",
                "1",
                extra="overhead: {cpu: 250m, memory: 128Mi}\n  nodeSelector: {example.com/sandbox: kata}\n  "
                "tolerations: [{key: example.com/sandbox, operator: Exists, effect: NoSchedule}]\n  ",
            )
        )
    )
    (dumped,) = loaded.of_kind(Pod)
    (kata,) = loaded.of_kind(RuntimeClass)
    assert admit_runtime_class(dumped, {"kata": kata}) is dumped
    # Admitting a raw pod twice gives what admitting it once gave.
    (raw,) = load_text(manifests(pod("raw", "1"))).of_kind(Pod)
    once = admit_runtime_class(raw, {"kata": kata})
    assert once != raw
    assert admit_runtime_class(once, {"kata": kata}) == once


def test_a_selector_that_contradicts_the_class_is_refused_as_the_api_server_does() -> None:
    text = manifests(pod("clash", "1", extra="nodeSelector: {example.com/sandbox: gvisor}\n  "))
    try:
        load_text(text)
    except ManifestErrors as error:
        message = str(error)
    else:
        raise AssertionError("a pod whose selector contradicts its RuntimeClass loaded")
    assert "Pod default/clash" in message
    assert "spec.nodeSelector[example.com/sandbox]" in message
    assert "conflict: runtimeClass.scheduling.nodeSelector[example.com/sandbox] = kata" in message


def test_a_runtime_class_without_a_handler_is_refused() -> None:
    try:
        load_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: bad}\n")
    except ManifestErrors as error:
        assert "handler: Required value" in str(error)
    else:
        raise AssertionError("a RuntimeClass without a handler loaded")

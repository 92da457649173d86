"""API-server defaulting applied by the loader (allot.model.defaults)."""

from __future__ import annotations

from pathlib import Path

from allot.model.core import Node, Pod
from allot.model.loader import load_paths, load_text
from allot.model.quantity import Quantity
from allot.model.resource import ResourceClaim, ResourceClaimTemplate
from allot.model.scheduling import PriorityClass

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: one
      exactly:
        deviceClassName: gpu.example.com
        tolerations: [{key: example.com/t, value: "1"}]
    - name: all
      exactly: {deviceClassName: gpu.example.com, allocationMode: All}
    - name: three
      exactly: {deviceClassName: gpu.example.com, count: 3}
    - name: either
      firstAvailable:
      - {name: big, deviceClassName: gpu.example.com}
      - {name: small, deviceClassName: gpu.example.com, count: 2, tolerations: [{key: k, operator: Exists}]}
"""


def test_claim_defaults() -> None:
    claim = load_text(CLAIM).of_kind(ResourceClaim)[0]
    assert claim.namespace == "default"
    one, every, three, either = claim.spec.devices.requests
    assert one.exactly is not None and every.exactly is not None and three.exactly is not None
    assert (one.exactly.allocation_mode, one.exactly.count) == ("ExactCount", 1)
    assert one.exactly.tolerations[0].operator == "Equal"
    assert (every.exactly.allocation_mode, every.exactly.count) == ("All", None)
    assert (three.exactly.allocation_mode, three.exactly.count) == ("ExactCount", 3)
    big, small = either.first_available
    assert (big.allocation_mode, big.count) == ("ExactCount", 1)
    assert (small.count, small.tolerations[0].operator) == (2, "Exists")


def test_template_defaults() -> None:
    body = "".join("    " + line for line in CLAIM.split("spec:\n", 1)[1].splitlines(keepends=True))
    text = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t}\nspec:\n  spec:\n"
        + body
    )
    template = load_text(text).of_kind(ResourceClaimTemplate)[0]
    first = template.spec.spec.devices.requests[0].exactly
    assert first is not None and (first.allocation_mode, first.count) == ("ExactCount", 1)


def test_pod_defaults() -> None:
    text = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    resources:
      requests: {cpu: 500m}
      limits: {cpu: "1", memory: 1Gi}
"""
    pod = load_text(text).of_kind(Pod)[0]
    assert (pod.namespace, pod.spec.scheduler_name, pod.spec.preemption_policy) == (
        "default",
        "default-scheduler",
        "PreemptLowerPriority",
    )
    # A limit without a request becomes the request; an explicit request is kept.
    assert pod.spec.containers[0].resources.requests == {
        "cpu": Quantity.parse("500m"),
        "memory": Quantity.parse("1Gi"),
    }


def test_explicit_values_are_kept() -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\nspec:\n  schedulerName: allot\n  preemptionPolicy: Never\n  containers: [{name: c}]\n"
    pod = load_text(text).of_kind(Pod)[0]
    assert (pod.namespace, pod.spec.scheduler_name, pod.spec.preemption_policy) == ("a", "allot", "Never")


def test_node_allocatable_defaults_to_capacity() -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus:\n  capacity: {cpu: '8', nvidia.com/gpu: '4'}\n"
    node = load_text(text).of_kind(Node)[0]
    assert node.status.allocatable == node.status.capacity
    assert node.ready  # no Ready condition: taken as ready


def test_priority_class_preemption_policy() -> None:
    text = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 10\n"
    assert load_text(text).of_kind(PriorityClass)[0].preemption_policy == "PreemptLowerPriority"


def test_kubectl_output_is_already_defaulted(examples: Path) -> None:
    # kubectl prints the stored (defaulted) object, so defaulting changes nothing in the examples.
    manifests = load_paths([examples / "cluster"])
    template = manifests.of_kind(ResourceClaimTemplate)[0]
    gpu = template.spec.spec.devices.requests[0].exactly
    assert gpu is not None and (gpu.allocation_mode, gpu.count) == ("ExactCount", 1)
    node = manifests.of_kind(Node)[0]
    assert node.status.allocatable["cpu"] == Quantity.parse("222")
    assert node.ready

"""Workloads from pods: groups, priority resolution, requests and DRA charges."""

from __future__ import annotations

import pytest

from allot.admission import AdmissionConfig, AdmissionState, Mode, workload_key_of
from allot.model.core import Pod
from allot.model.loader import load_text

BASE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, pods, nvidia.com/gpu, gpu.nvidia.com/cores]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: memory, nominalQuota: 64Gi}
      - {name: pods, nominalQuota: "10"}
      - {name: nvidia.com/gpu, nominalQuota: "8"}
      - {name: gpu.nvidia.com/cores, nominalQuota: "400"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team}
spec: {clusterQueue: q}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: urgent}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: 50
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: everyone}
value: 7
globalDefault: true
---
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
metadata: {name: kueue}
resources:
  deviceClassMappings:
  - {name: nvidia.com/gpu, deviceClassNames: [gpu.nvidia.com]}
  - {name: gpu.nvidia.com/cores, deviceClassNames: [gpu.nvidia.com]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: two-gpus, namespace: team}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com, count: 2}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: shared-slice, namespace: team}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          capacity: {requests: {gpu.nvidia.com/cores: "25"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: nics, namespace: team}
spec:
  spec:
    devices:
      requests:
      - name: nic
        exactly: {deviceClassName: nic.example.com}
"""


def pod(
    name: str, *, labels: str = "", annotations: str = "", cpu: str = "1", extra: str = "", created: str = ""
) -> str:
    stamp = f"creationTimestamp: '{created}'" if created else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: team
  {stamp}
  labels: {{kueue.x-k8s.io/queue-name: lq{labels}}}
  annotations: {{{annotations}}}
spec:
  containers:
  - name: main
    resources: {{requests: {{cpu: "{cpu}"}}}}
{extra}
"""


def build(*pods: str) -> tuple[AdmissionState, list]:
    manifests = load_text(BASE + "".join(pods))
    state = AdmissionState.from_manifests(manifests)
    return state, state.workloads_from_pods(manifests.of_kind(Pod))


UNQUEUED = """
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: team}
spec:
  containers:
  - name: main
    resources: {requests: {cpu: "1"}}
"""


def test_single_pod_and_unqueued_pods() -> None:
    _, workloads = build(pod("p1", created="2026-01-01T00:00:10Z"), UNQUEUED)
    (w,) = workloads  # the pod without a queue label is not a workload
    assert w.key == "team/p1" and w.local_queue == "team/lq"
    assert w.pod_sets[0].requests == {"cpu": 1000}
    assert w.created == pytest.approx(1767225610.0)
    pods = {p.name: p for p in load_text(UNQUEUED + pod("p1")).of_kind(Pod)}
    plain, queued = pods["plain"], pods["p1"]
    assert workload_key_of(plain) is None
    assert workload_key_of(queued) == "team/p1"


GROUP = ", kueue.x-k8s.io/pod-group-name: g"
TOTAL3 = "kueue.x-k8s.io/pod-group-total-count: '3'"


def test_pod_group_waits_until_complete() -> None:
    state, workloads = build(
        pod("g-0", labels=GROUP, annotations=TOTAL3), pod("g-1", labels=GROUP, annotations=TOTAL3)
    )
    (w,) = workloads
    assert w.key == "team/g"
    assert w.incomplete == "pod group 'g' has 2 of 3 pods"
    state.submit(w)
    assert list(state.candidates(0)) == []
    _, workloads = build(*(pod(f"g-{i}", labels=GROUP, annotations=TOTAL3) for i in range(3)))
    (complete,) = workloads
    assert complete.incomplete is None
    state.submit(complete)
    assert [c.workload.key for c in state.candidates(0)] == ["team/g"]
    # One pod set of three identical pods; with `pods` covered, the assignment counts 3 pods.
    assert complete.pod_sets[0].count == 3
    assignment = state.assign(complete)
    assert assignment.usage[("default", "pods")] == 3
    assert assignment.usage[("default", "cpu")] == 3000


def test_pod_group_with_two_shapes_has_two_pod_sets() -> None:
    _, workloads = build(
        pod("g-0", labels=GROUP, annotations=TOTAL3, cpu="4"),
        pod("g-1", labels=GROUP, annotations=TOTAL3),
        pod("g-2", labels=GROUP, annotations=TOTAL3),
    )
    (w,) = workloads
    assert sorted((ps.count, ps.requests["cpu"]) for ps in w.pod_sets) == [(1, 4000), (2, 1000)]
    assert w.total_requests()["cpu"] == 6000


@pytest.mark.parametrize(
    ("labels", "extra", "priority", "source"),
    [
        (
            ", kueue.x-k8s.io/priority-class: urgent",
            "  priorityClassName: batch",
            1000,
            "WorkloadPriorityClass/urgent",
        ),
        ("", "  priorityClassName: batch", 50, "PriorityClass/batch"),
        ("", "", 7, "PriorityClass/everyone"),
    ],
)
def test_priority_resolution(labels: str, extra: str, priority: int, source: str) -> None:
    _, (w,) = build(pod("p", labels=labels, extra=extra))
    assert (w.priority, w.priority_source) == (priority, source)


def test_missing_workload_priority_class_is_invalid() -> None:
    state, (w,) = build(pod("p", labels=", kueue.x-k8s.io/priority-class: nope"))
    assert w.invalid == "WorkloadPriorityClass 'nope' (label kueue.x-k8s.io/priority-class) does not exist"
    state.submit(w)
    assert state.pending_reason(w.key) == w.invalid
    assert state.assign(w).mode is Mode.NO_FIT


def claims(*names: str) -> str:
    entries = "\n".join(f"  - name: c{i}\n    resourceClaimTemplateName: {n}" for i, n in enumerate(names))
    return "  resourceClaims:\n" + entries


def test_dra_device_counts_and_capacity_are_charged_through_mappings() -> None:
    _, (w,) = build(pod("p", extra=claims("two-gpus", "shared-slice")))
    assert w.invalid is None
    # two-gpus: 2 devices; shared-slice: 1 device and 25 cores.
    assert w.pod_sets[0].requests == {"cpu": 1000, "nvidia.com/gpu": 3, "gpu.nvidia.com/cores": 25}


def test_unmapped_device_class_is_inadmissible() -> None:
    _, (w,) = build(pod("p", extra=claims("nics")))
    assert w.invalid is not None
    assert "DeviceClass 'nic.example.com'" in w.invalid
    assert "deviceClassMappings" in w.invalid


def test_configuration_is_read_from_manifests() -> None:
    state, _ = build()
    assert isinstance(state.config, AdmissionConfig)
    assert state.config.mapped_resources("gpu.nvidia.com") == ("nvidia.com/gpu", "gpu.nvidia.com/cores")

"""Every quantity and integer the API server accepts, up to its limits, loads, hashes, compares and
allocates: no OverflowError, no wrapped-around arithmetic, the same placement a small value gets.

The values come from each field's limits: quantities from the smallest step (1n) to past int64 in
nano-units (17Gi and up), to int64 itself and far beyond (the API server keeps any decimal quantity;
binary ones are capped at 2^63-1), integers at int32/int64 bounds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.cli.main import cli
from allot.cluster.invariants import check
from allot.cluster.state import ClusterState
from allot.model.errors import ManifestErrors
from allot.model.loader import load_text
from allot.model.presets import gpu_sharing as gs
from allot.model.quantity import Quantity
from allot.plan.planner import plan
from allot.scheduling.profile import Profile
from builders import node
from fuzzing import examples, memory_ceiling
from sharing.helpers import hami_pod, hami_slice, schedule_all, scheduler, sharing_profile

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
INT64 = 2**63 - 1
# Quantities at every limit that matters: past int64 in nano-units (about 9.2 G), past int64 in
# milli-units, at int64, past it (binary suffixes are capped there; decimal ones are not), past floats.
BIG_QUANTITIES = [
    "17Gi",
    "80Gi",
    "81559Mi",
    "9223372036854775807",
    "9223372036854775808m",
    "8Ei",
    "16Ei",
    "1e18",
    "1e19",
    "1e30",
    "123456789012345678901234567890",
    "1e400",
]
quantities = st.sampled_from(BIG_QUANTITIES) | st.integers(0, 2**70).map(str)

MIG_POD = """
apiVersion: v1
kind: Pod
metadata: {name: mig-user, namespace: default}
spec:
  containers: [{name: c, image: x, resources: {claims: [{name: mig}]}}]
  resourceClaims: [{name: mig, resourceClaimName: inference-mig}]
"""


def test_a_node_with_an_80gi_counter_of_its_own_places_its_pod(tmp_path: Path) -> None:
    """The MIG example publishes `memory: 81559Mi` in its own pool's shared counters (> 2^64 nano)."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(MIG_POD)
    paths = [str(EXAMPLES / "mig"), str(EXAMPLES / "cluster" / "deviceclasses.yaml"), str(pod)]
    result = CliRunner().invoke(cli, ["place", *paths])
    assert result.exit_code == 0, result.output
    assert "default/mig-user" in result.output and "mig-node-1" in result.output
    assert "1 pod(s) placed" in result.output


def _slice(total: str, per_device: str, capacity: str, attribute: int, generation: int) -> str:
    return f"""
apiVersion: v1
kind: Node
metadata: {{name: n1}}
status: {{allocatable: {{cpu: "8", memory: 32Gi, pods: "110"}}}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu.example.com}}
spec:
  selectors: [{{cel: {{expression: device.driver == "gpu.example.com"}}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: counters}}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {{name: n1, generation: {generation}, resourceSliceCount: 2}}
  sharedCounters:
  - name: gpu-0
    counters: {{memory: {{value: "{total}"}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: devices}}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {{name: n1, generation: {generation}, resourceSliceCount: 2}}
  devices:
  - name: part-0
    attributes: {{index: {{int: {attribute}}}}}
    capacity: {{memory: {{value: "{capacity}"}}}}
    consumesCounters: [{{counterSet: gpu-0, counters: {{memory: {{value: "{per_device}"}}}}}}]
  - name: part-1
    attributes: {{index: {{int: {-attribute}}}}}
    capacity: {{memory: {{value: "{capacity}"}}}}
    consumesCounters: [{{counterSet: gpu-0, counters: {{memory: {{value: "{per_device}"}}}}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one, namespace: default}}
spec:
  spec:
    devices:
      requests: [{{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}]
"""


def _pods(count: int) -> str:
    return "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, namespace: default}}
spec:
  containers: [{{name: c, image: x, resources: {{claims: [{{name: gpu}}]}}}}]
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: one}}]
"""
        for i in range(count)
    )


@settings(max_examples=examples(40))
@given(
    total=quantities,
    share=st.sampled_from([1, 2, 3]),
    capacity=quantities,
    attribute=st.sampled_from([0, 1, 2**31, INT64]),
    generation=st.sampled_from([1, 2**31, INT64]),
)
def test_shared_counters_and_capacities_at_their_limits_allocate_exactly(
    total: str, share: int, capacity: str, attribute: int, generation: int
) -> None:
    """Two partitions, each consuming total/share of a counter: both fit when share >= 2, one when 1."""
    amount = Quantity.parse(total)
    per_device = Quantity(-(-amount.nano // share))  # rounded up: share partitions never exceed the total
    text = _slice(total, str(per_device), capacity, attribute, generation) + _pods(2)
    with memory_ceiling():
        manifests = load_text(text)
        result = plan(manifests, check_invariants=True)
    placed = sorted(b.pod for b in result.bound)
    fits = 2 if share >= 2 and per_device.nano * 2 <= amount.nano else 1
    if amount.nano == 0:
        fits = 2 if per_device.nano == 0 else 0
    assert len(placed) == fits, (placed, result.waiting)
    assert result.violations == [] and check(result.state) == []


def _node_and_pod(allocatable: dict[str, str], requests: dict[str, str], priority: int) -> str:
    return yaml.safe_dump_all(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n1"},
                "status": {"allocatable": {"pods": "110", **allocatable}},
            },
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "big", "namespace": "default"},
                "spec": {
                    "priority": priority,
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}],
                },
            },
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "running", "namespace": "default"},
                "spec": {
                    "nodeName": "n1",
                    "priority": priority,
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}],
                },
            },
        ]
    )


@settings(max_examples=examples(60))
@given(
    resource=st.sampled_from(["cpu", "memory", "example.com/widget"]),
    allocatable=quantities,
    request=quantities,
    priority=st.sampled_from([-(2**31), 0, 10**9, 2**31 - 1]),
)
def test_node_and_pod_resources_at_their_limits_compare_exactly(
    resource: str, allocatable: str, request: str, priority: int
) -> None:
    """A pending pod fits beside a running twin exactly when twice its request fits the node."""
    text = _node_and_pod({resource: allocatable}, {resource: request}, priority)
    with memory_ceiling():
        try:
            manifests = load_text(text)
        except ManifestErrors:
            return  # not something the API server would accept either
        result = plan(manifests, queues=False, check_invariants=True)
    have, want = Quantity.parse(allocatable), Quantity.parse(request)
    unit = 1_000_000 if resource == "cpu" else 1_000_000_000
    # kube-scheduler's accounting: milli-CPU and whole units of everything else, rounded up.
    exact_want = -(-want.nano // unit)
    exact_have = -(-have.nano // unit)
    expected = 2 * exact_want <= exact_have
    placed = any(b.pod == "default/big" for b in result.bound)
    assert placed == expected, result.waiting
    # The running twin is given bound; only when it alone overcommits the node is that reported.
    assert bool(result.violations) == (exact_want > exact_have), result.violations


@pytest.mark.parametrize("value", ["1e400", "16Ei", "9223372036854775808"])
def test_quotas_at_their_limits_load_and_report(tmp_path: Path, value: str) -> None:
    queues: list[dict[str, Any]] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "f",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": value},
                                    {"name": "memory", "nominalQuota": value},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "default"},
            "spec": {"clusterQueue": "cq"},
        },
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(
        yaml.safe_dump_all(queues)
        + "---\n"
        + _node_and_pod({"cpu": value, "memory": value}, {"cpu": value, "memory": "1"}, 0).replace(
            "name: big", "name: big\n  labels: {kueue.x-k8s.io/queue-name: q}"
        )
    )
    for command in (["queues", str(path)], ["place", str(path)], ["queues", str(path), "-o", "json"]):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 0, (command, result.output)


POLICIES = ("FGD", "FGDPlus", "BestFit", "Packing", "DotProduct", "Clustering", "Random")


@settings(max_examples=examples(30))
@given(
    gpu_memory=st.sampled_from(["16Gi", "17Gi", "8Ei", "1e19", "1e30", "1e400"]),
    pod_memory_mib=st.sampled_from([1, 1024, 2**40, 10**15, 10**30]),
    cpu=st.sampled_from(["64", "1e30"]),
    policy=st.sampled_from(POLICIES),
)
def test_shared_gpus_at_their_limits_place_as_the_allocator_alone_does(
    gpu_memory: str, pod_memory_mib: int, cpu: str, policy: str
) -> None:
    """GpuPlacement's tables hold saturated amounts; where they do, the allocator decides, so every
    sharing policy places exactly the pods the plain DRA profile places."""

    def cluster() -> ClusterState:
        nodes = [node(f"n{i}", cpu=cpu, memory="1e30", labels={"name": f"n{i}"}) for i in range(2)]
        slices = [hami_slice(f"n{i}", 2, memory=gpu_memory) for i in range(2)]
        return ClusterState(nodes=nodes, slices=slices, classes=[gs.hami_device_class()])

    pods = [hami_pod(f"p{i}", memory_mib=pod_memory_mib, cpu="1e20" if i % 2 else "1") for i in range(5)]
    with memory_ceiling():
        sharing = scheduler(cluster(), sharing_profile(policy))
        placed = [type(o).__name__ for o in schedule_all(sharing, pods)]
        plain = scheduler(cluster(), Profile())
        expected = [type(o).__name__ for o in schedule_all(plain, pods)]
    assert placed == expected
    assert check(sharing.state) == []

"""The example manifests load, and hold together the way a real cluster's objects do."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from allot.model.core import Node, Pod
from allot.model.kueue import ClusterQueue, LocalQueue, ResourceFlavor, Topology
from allot.model.loader import load_paths
from allot.model.quantity import Quantity
from allot.model.resource import DeviceClass, ResourceClaimTemplate, ResourceSlice


def test_cluster_pairs_every_gpu_with_a_nic_under_the_same_pcie_root(examples: Path) -> None:
    manifests = load_paths([examples / "cluster"])
    nodes = {n.name for n in manifests.of_kind(Node)}
    roots: dict[tuple[str, str], Counter[str]] = {}
    for resource_slice in manifests.of_kind(ResourceSlice):
        spec = resource_slice.spec
        assert spec.node_name in nodes
        assert spec.pool.name == spec.node_name
        for device in spec.devices:
            root = device.attributes.get("resource.kubernetes.io/pcieRoot")
            if root is not None:
                roots.setdefault((spec.node_name or "", spec.driver), Counter())[str(root.value)] += 1
    for node in nodes:
        assert roots[(node, "gpu.nvidia.com")] == roots[(node, "dra.net")]
        assert sum(roots[(node, "gpu.nvidia.com")].values()) == 4


def test_cluster_pod_uses_the_template_and_classes(examples: Path) -> None:
    manifests = load_paths([examples / "cluster"])
    pod = manifests.of_kind(Pod)[0]
    template = manifests.of_kind(ResourceClaimTemplate)[0]
    classes = {c.name for c in manifests.of_kind(DeviceClass)}
    assert pod.spec.resource_claims[0].resource_claim_template_name == template.name
    assert pod.spec.scheduler_name == "allot" and pod.spec.node_name == ""
    devices = template.spec.spec.devices
    assert {r.exactly.device_class_name for r in devices.requests if r.exactly} <= classes
    assert devices.constraints[0].match_attribute == "resource.kubernetes.io/pcieRoot"
    gpus = next(s for s in manifests.of_kind(ResourceSlice) if s.spec.driver == "gpu.nvidia.com")
    gpu = gpus.spec.devices[0]
    assert gpu.capacity["memory"].value == Quantity.parse("81559Mi")
    assert gpu.attributes["cudaComputeCapability"].value == "9.0.0"


def test_mig_pool_has_a_counter_slice_and_a_device_slice(examples: Path) -> None:
    slices = load_paths([examples / "mig"]).of_kind(ResourceSlice)
    counters = [s for s in slices if s.spec.shared_counters]
    device_slices = [s for s in slices if s.spec.devices]
    assert len(counters) == len(device_slices) == 1
    assert all(s.spec.pool.resource_slice_count == 2 for s in slices)
    counter_set = counters[0].spec.shared_counters[0]
    assert counter_set.name == "gpu-0-counter-set"
    assert {f"memory-slice-{i}" for i in range(8)} <= set(counter_set.counters)
    devices = device_slices[0].spec.devices
    full = devices[0]
    assert full.name == "gpu-0"
    assert full.consumes_counters[0].counters == counter_set.counters


def test_mig_placements_share_memory_slices_as_the_geometry_says(examples: Path) -> None:
    devices = {
        d.name: d for s in load_paths([examples / "mig"]).of_kind(ResourceSlice) for d in s.spec.devices
    }

    def memory_slices(name: str) -> set[str]:
        counters = devices[name].consumes_counters[0].counters
        return {c for c in counters if c.startswith("memory-slice-")}

    assert memory_slices("gpu-0-mig-1g10gb-19-6") == {"memory-slice-6"}
    assert memory_slices("gpu-0-mig-3g40gb-9-4") == {f"memory-slice-{i}" for i in range(4, 8)}
    assert memory_slices("gpu-0-mig-7g80gb-0-0") == {f"memory-slice-{i}" for i in range(8)}
    # 4g at 0 and 3g at 4 fit together; every consumption stays within the counter set.
    assert not memory_slices("gpu-0-mig-4g40gb-5-0") & memory_slices("gpu-0-mig-3g40gb-9-4")
    counter_set = next(
        s for s in load_paths([examples / "mig"]).of_kind(ResourceSlice) if s.spec.shared_counters
    )
    limits = counter_set.spec.shared_counters[0].counters
    for device in devices.values():
        for name, used in device.consumes_counters[0].counters.items():
            assert used.value <= limits[name].value


def test_kueue_references_resolve(examples: Path) -> None:
    manifests = load_paths([examples / "kueue"])
    flavors = {f.name for f in manifests.of_kind(ResourceFlavor)}
    queues = {q.name: q for q in manifests.of_kind(ClusterQueue)}
    for queue in queues.values():
        for group in queue.spec.resource_groups:
            assert {f.name for f in group.flavors} <= flavors
    assert {lq.spec.cluster_queue for lq in manifests.of_kind(LocalQueue)} == set(queues)
    assert queues["team-infer"].cohort_ref == "production" and queues["team-nlp"].cohort_ref == "research"
    topology = manifests.of_kind(Topology)[0]
    assert topology.spec.levels[-1].node_label == "kubernetes.io/hostname"
    nodes = load_paths([examples / "cluster"]).of_kind(Node)
    for level in topology.spec.levels:
        assert all(level.node_label in n.metadata.labels for n in nodes)

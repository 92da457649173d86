"""Required and preferred alignment through the scheduler on preset nodes, against upstream's order."""

from __future__ import annotations

import dataclasses

import pytest

from allot.cluster.state import ClusterState
from allot.scheduling.plugins.dynamic_resources import DynamicResources
from allot.scheduling.profile import Profile
from allot.scheduling.topology.places import place_of
from builders import GPU_DRIVER, claim_spec, claim_template, device_class, gpu_slice, node, pod

from .helpers import (
    ALLOT,
    NUMA_NODE,
    PCIE_ROOT,
    UPSTREAM,
    claim_pod,
    cluster,
    devices_of,
    request,
    schedule_all,
    spec,
    template,
)

GPU_NIC = template("gpu-nic", spec(request("gpu"), request("nic")))
GPU_NIC_ROOT = template("gpu-nic-root", spec(request("gpu"), request("nic"), match=PCIE_ROOT))
NIC = template("nic", spec(request("nic")))
GPU = template("gpu", spec(request("gpu")))
PROFILES = {"upstream": UPSTREAM, "allot": ALLOT}


def roots(state: ClusterState, pod: str) -> dict[str, set[str]]:
    """The PCIe roots of the pod's devices, by kind."""
    devices = {(s.spec.driver, d.name): d for s in state.slices.slices for d in s.spec.devices}
    found: dict[str, set[str]] = {}
    for driver, name in devices_of(state, pod):
        place = place_of(driver, devices[(driver, name)])
        found.setdefault(place.kind, set()).update(place.roots)
    return found


def aligned(state: ClusterState, pod: str) -> bool:
    by_kind = roots(state, pod)
    return by_kind["gpu"] == by_kind["nic"]


@pytest.mark.parametrize("profile", PROFILES)
def test_eight_constrained_gpu_nic_pods_fill_one_dgx(profile: str) -> None:
    names = [f"p{i}" for i in range(8)]
    state = cluster(templates=[GPU_NIC_ROOT], pods=[claim_pod(n, "gpu-nic-root") for n in names])
    placed = schedule_all(state, PROFILES[profile], names)
    assert all(placed.values())
    assert all(aligned(state, n) for n in names)
    assert len({frozenset(roots(state, n)["gpu"]) for n in names}) == 8


def test_unconstrained_pairs_are_aligned_only_with_preferred_alignment() -> None:
    names = [f"p{i}" for i in range(8)]
    results = {}
    for label, profile in PROFILES.items():
        state = cluster(templates=[GPU_NIC], pods=[claim_pod(n, "gpu-nic") for n in names])
        assert all(schedule_all(state, profile, names).values())
        results[label] = sum(aligned(state, n) for n in names)
    assert results == {"upstream": 1, "allot": 8}


def test_gpu_sharing_profile_keeps_preferred_alignment_for_whole_gpus() -> None:
    # GpuPlacement takes DynamicResources' place; pods it has no shared GPU to pick for
    # (whole GPUs with NICs) must still get aligned devices, with isolation on.
    base = Profile()
    filters = tuple("GpuPlacement" if f == "DynamicResources" else f for f in base.filters)
    sharing = dataclasses.replace(
        base,
        filters=(*filters, "GpuIsolation"),
        score_weights={
            **{k: v for k, v in base.score_weights.items() if k != "DynamicResources"},
            "GpuPlacement": 10,
        },
        plugin_args={"GpuPlacement": {"policy": "FGD"}},
    )
    names = [f"p{i}" for i in range(8)]
    state = cluster(templates=[GPU_NIC], pods=[claim_pod(n, "gpu-nic") for n in names])
    assert all(schedule_all(state, sharing, names).values())
    assert all(aligned(state, n) for n in names)


def test_upstream_order_strands_a_constrained_pod_that_allot_places() -> None:
    # A pod asking for any RDMA NIC, then eight asking for a GPU with its NIC.
    names = ["nic-only"] + [f"pair-{i}" for i in range(8)]
    pods = [claim_pod("nic-only", "nic")] + [claim_pod(n, "gpu-nic-root") for n in names[1:]]
    outcome = {}
    for label, profile in PROFILES.items():
        state = cluster(templates=[NIC, GPU_NIC_ROOT], pods=pods)
        placed = schedule_all(state, profile, names)
        outcome[label] = [n for n in names if placed[n] is None]
        if label == "allot":
            # The storage NICs serve the NIC-only pod: no GPU loses its partner.
            assert devices_of(state, "nic-only")[0][1].startswith("pci-0000-29-00")
    assert outcome == {"upstream": ["pair-7"], "allot": []}


def test_a_gpu_alone_does_not_break_the_last_pair() -> None:
    holder = template(
        "nic-11", spec(request("nic", selector='device.attributes["dra.net"].rdmaDevice == "mlx5_11"'))
    )
    names = ["holder"] + [f"pair-{i}" for i in range(6)] + ["gpu-only", "last-pair"]
    pods = (
        [claim_pod("holder", "nic-11")]
        + [claim_pod(f"pair-{i}", "gpu-nic-root") for i in range(6)]
        + [claim_pod("gpu-only", "gpu"), claim_pod("last-pair", "gpu-nic-root")]
    )
    stranded = {}
    for label, profile in PROFILES.items():
        state = cluster(templates=[holder, GPU, GPU_NIC_ROOT], pods=pods)
        placed = schedule_all(state, profile, names)
        stranded[label] = [n for n in names if placed[n] is None]
        if label == "allot":
            assert devices_of(state, "gpu-only") == [("gpu.nvidia.com", "gpu-7")]  # its NIC is held
    assert stranded == {"upstream": ["last-pair"], "allot": []}


def test_gpu_nic_cpu_numa_constraint_end_to_end() -> None:
    t = template("numa", spec(request("gpu"), request("nic"), request("cpu", cpus="8"), match=NUMA_NODE))
    names = [f"p{i}" for i in range(9)]
    state = cluster(templates=[t], pods=[claim_pod(n, "numa") for n in names])
    placed = schedule_all(state, ALLOT, names)
    assert [n for n in names if placed[n] is None] == ["p8"]  # eight GPUs
    for name in names[:8]:
        by_kind = roots(state, name)
        assert by_kind["gpu"] == by_kind["nic"]  # preferred alignment on top of the required NUMA node
    claim = state.pod_claims(state.pods["default/p0"])[0]
    assert claim.status.allocation is not None
    (cpu,) = [r for r in claim.status.allocation.devices.results if r.driver == "dra.cpu"]
    assert cpu.consumed_capacity is not None and str(cpu.consumed_capacity["dra.cpu/cpu"]) == "8"


def test_eight_gpus_with_eight_nics_skip_the_storage_nics() -> None:
    t = template("node", spec(request("gpu", 8), request("nic", 8)))
    chosen = {}
    for label, profile in PROFILES.items():
        state = cluster(templates=[t], pods=[claim_pod("big", "node")])
        assert schedule_all(state, profile, ["big"])["big"] is not None
        chosen[label] = sum(
            name.startswith("pci-0000-29") or name.startswith("pci-0000-aa")
            for _, name in devices_of(state, "big")
        )
    assert chosen == {"upstream": 3, "allot": 0}


def test_p4d_two_gpus_share_their_efa_root() -> None:
    t = template("two", spec(request("gpu", 2), request("nic")))
    names = [f"p{i}" for i in range(4)]
    state = cluster("p4d-24xlarge", templates=[t], pods=[claim_pod(n, "two") for n in names])
    assert all(schedule_all(state, ALLOT, names).values())
    assert all(aligned(state, n) and len(roots(state, n)["gpu"]) == 1 for n in names)


def test_pcie_only_node_aligns_on_numa() -> None:
    names = ["a", "b"]
    sockets = {}
    for label, profile in PROFILES.items():
        state = cluster("pcie-l40s", templates=[GPU_NIC], pods=[claim_pod(n, "gpu-nic") for n in names])
        assert all(schedule_all(state, profile, names).values())
        devices = {(s.spec.driver, d.name): d for s in state.slices.slices for d in s.spec.devices}
        sockets[label] = [
            {place_of(drv, devices[(drv, name)]).numas for drv, name in devices_of(state, n)} for n in names
        ]
    assert all(len(numas) == 1 for numas in sockets["allot"])
    assert any(len(numas) == 2 for numas in sockets["upstream"])


def test_node_score_prefers_a_node_where_the_pair_survives() -> None:
    # Node 00's compute NICs are all held; a GPU there breaks no pair, on node 01 it would.
    holder = template(
        "nics", spec(request("nic", 8, selector='device.attributes["dra.net"].ifName.startsWith("ibp")'))
    )
    state = cluster(
        nodes=2, templates=[holder, GPU], pods=[claim_pod("holder", "nics"), claim_pod("g", "gpu")]
    )
    placed = schedule_all(state, ALLOT, ["holder", "g"])
    assert placed["holder"] is not None and placed["g"] is not None
    assert placed["g"].node == placed["holder"].node


def test_alignment_argument_is_checked() -> None:
    assert DynamicResources.from_args({}).chooser is not None
    assert DynamicResources.from_args({"alignment": "none"}).chooser is None
    with pytest.raises(ValueError, match=r"DynamicResources\.alignment: expected preferred or none"):
        DynamicResources.from_args({"alignment": "best"})


def test_devices_without_topology_keep_upstream_order() -> None:
    nodes = [node("n1"), node("n2")]
    slices = [gpu_slice("n1", 4), gpu_slice("n2", 4)]
    two = claim_template("two", claim_spec(("gpus", GPU_DRIVER, 2)))
    names = ["a", "b", "c"]
    chosen = {}
    for label, profile in PROFILES.items():
        state = ClusterState(
            nodes=nodes,
            slices=slices,
            classes=[device_class()],
            templates=[two],
            pods=[pod(n, claims={"devices": "two"}) for n in names],
        )
        placed = schedule_all(state, profile, names)
        chosen[label] = [(placed[n].node, devices_of(state, n)) for n in names]  # type: ignore[union-attr]
    assert chosen["allot"] == chosen["upstream"]


@pytest.mark.parametrize("gpus_first", [1, 2])
def test_p4d_gpu_only_pods_leave_every_efa_its_gpu(gpus_first: int) -> None:
    # p4d: four PCIe roots of two GPUs and one EFA. GPU-only pods take the GPU each root has to
    # spare before any root's last GPU beside a free EFA, so a GPU+EFA pod per root still fits.
    only = template("only", spec(request("gpu", gpus_first)))
    names = [f"gpu-{i}" for i in range(4 // gpus_first)] + [f"pair-{i}" for i in range(4)]
    pods = [claim_pod(n, "only") for n in names if n.startswith("gpu")]
    pods += [claim_pod(n, "gpu-nic-root") for n in names if n.startswith("pair")]
    stranded = {}
    for label, profile in PROFILES.items():
        state = cluster("p4d-24xlarge", templates=[only, GPU_NIC_ROOT], pods=pods)
        placed = schedule_all(state, profile, names)
        stranded[label] = [n for n in names if placed[n] is None]
        if label == "allot":
            assert all(aligned(state, f"pair-{i}") for i in range(4))
    assert stranded == {"upstream": ["pair-2", "pair-3"], "allot": []}


def test_cpus_alone_go_to_the_numa_node_without_free_gpus() -> None:
    # NUMA node 1's GPUs are all taken: CPU-only pods take its CPUs and leave NUMA node 0's to the
    # GPUs there (upstream's order takes node 0's first).
    numa_1 = 'device.attributes["resource.kubernetes.io"].numaNode == 1'
    four = template("four", spec(request("gpu", 4, selector=numa_1)))
    cpus = template("cpus", spec(request("cpu", cpus="16")))
    names = ["numa-1-gpus", "cpus-a", "cpus-b"]
    pods = [claim_pod("numa-1-gpus", "four"), claim_pod("cpus-a", "cpus"), claim_pod("cpus-b", "cpus")]
    chosen = {}
    for label, profile in PROFILES.items():
        state = cluster(templates=[four, cpus], pods=pods)
        assert all(schedule_all(state, profile, names).values())
        chosen[label] = [devices_of(state, n) for n in ("cpus-a", "cpus-b")]
    on_numa_1 = [("dra.cpu", "cpudevnuma001")]
    assert chosen == {"upstream": [[("dra.cpu", "cpudevnuma000")]] * 2, "allot": [on_numa_1] * 2}

"""GpuPacking: small GPU pods fill partly used nodes first, so a whole node stays whole."""

from __future__ import annotations

import pytest

from allot.cluster.state import ClusterState
from allot.model.core import Node, Pod
from allot.model.presets.classes import GPU_CLASS, MIG_CLASS
from allot.model.presets.expand import expand_preset
from allot.model.resource import DeviceClass, ResourceSlice
from allot.scheduling.hints import Hints
from allot.scheduling.packing.occupancy import GpuOccupancy
from allot.scheduling.plugins.gpu_packing import GpuPacking
from allot.scheduling.profile import Profile, allot_profile
from allot.scheduling.scheduler import Placement, Scheduler
from builders import claim_spec, claim_template, device_class, gpu_slice, node, pod

ONE = claim_template("one", claim_spec(("gpu", "gpu.example.com", 1)))
FOUR = claim_template("four", claim_spec(("gpu", "gpu.example.com", 4)))


def cluster(pods: list[Pod]) -> ClusterState:
    return ClusterState(
        nodes=[node("n1", cpu="64"), node("n2", cpu="64")],
        slices=[gpu_slice("n1", 4), gpu_slice("n2", 4)],
        classes=[device_class()],
        templates=[ONE, FOUR],
        pods=pods,
    )


def place_all(profile: Profile) -> tuple[dict[str, str | None], GpuOccupancy]:
    small = [pod(f"small-{i}", claims={"gpu": "one"}) for i in range(4)]
    state = cluster([*small, pod("big", claims={"gpu": "four"})])
    scheduler = Scheduler(state, {profile.scheduler_name: profile})
    placed: dict[str, str | None] = {}
    for name in [*(p.metadata.name for p in small), "big"]:
        outcome = scheduler.schedule(f"default/{name}")
        placed[name] = outcome.node if isinstance(outcome, Placement) else None
    return placed, GpuOccupancy(state)


def test_packing_leaves_a_whole_node_where_spreading_does_not() -> None:
    spread, _ = place_all(Profile())
    packed, occupancy = place_all(allot_profile())
    # kube-scheduler's default profile spreads the one-GPU pods: no node has four GPUs left.
    assert sorted(n for k, n in spread.items() if k != "big") == ["n1", "n1", "n2", "n2"]
    assert spread["big"] is None
    # GpuPacking piles them on one node: the four-GPU pod gets the other one whole.
    assert len({n for k, n in packed.items() if k != "big"}) == 1
    assert packed["big"] is not None and packed["big"] != packed["small-0"]
    assert [occupancy.untouched(i) for i in range(2)] == [0, 0]


def test_occupancy_counts_free_and_untouched_gpus_per_node() -> None:
    state = cluster([pod("a", claims={"gpu": "one"}), pod("b", claims={"gpu": "four"})])
    scheduler = Scheduler(state, {"default-scheduler": allot_profile()})
    occupancy = GpuOccupancy(state)
    assert [occupancy.free(i) for i in range(2)] == [4.0, 4.0]
    assert occupancy.whole_need(state.pods["default/b"]) == 4
    assert isinstance(scheduler.schedule("default/a"), Placement)
    assert sorted(occupancy.free(i) for i in range(2)) == [3.0, 4.0]  # recomputed after the allocation
    with state.journal.transaction():
        assert isinstance(scheduler.schedule("default/b"), Placement)
        assert sorted(occupancy.untouched(i) for i in range(2)) == [0, 3]
    assert sorted(occupancy.untouched(i) for i in range(2)) == [3, 4]  # rolled back with the state


def test_occupancy_reads_the_devices_again_after_slices_change() -> None:
    state = cluster([])
    occupancy = GpuOccupancy(state)
    assert [occupancy.untouched(i) for i in range(2)] == [4, 4]
    # The driver republishes n2 with 8 GPUs (and n1 unchanged): counts follow.
    state.replace_devices(slices=[gpu_slice("n1", 4), gpu_slice("n2", 8)])
    assert [occupancy.untouched(i) for i in range(2)] == [4, 8]
    assert list(occupancy.totals()) == [4, 8]


def test_whole_room_bounds_what_a_pod_could_get_or_says_it_cannot_tell() -> None:
    plugin = {"nvidia.com/gpu": "8"}
    state = ClusterState(
        nodes=[
            node("dra", cpu="64"),
            node("plugin", cpu="64", extended=plugin),
            node("both", extended=plugin),
        ],
        slices=[gpu_slice("dra", 4), gpu_slice("both", 2)],
        classes=[device_class()],
        templates=[ONE, FOUR],
        pods=[
            pod("claims", claims={"gpu": "four"}),
            pod("asks", extended={"nvidia.com/gpu": "2"}),
            pod("busy", extended={"nvidia.com/gpu": "3"}, node_name="plugin"),
        ],
    )
    occupancy = GpuOccupancy(state)
    index = state.nodes.index
    claims, asks = state.pods["default/claims"], state.pods["default/asks"]
    assert occupancy.whole_room(claims, index["dra"]) == 4
    assert occupancy.whole_room(claims, index["plugin"]) == 0  # its claim selects no GPU there
    assert occupancy.whole_room(asks, index["plugin"]) == 5  # allocatable 8, 3 requested
    # A node offering GPUs as devices and as allocatable: the count cannot tell.
    assert occupancy.whole_room(claims, index["both"]) is None
    assert occupancy.whole_room(asks, index["both"]) is None


def test_whole_room_counts_untouched_mig_gpus_for_full_gpu_requests_but_not_for_slices() -> None:
    # A DGX H100 whose GPUs are partitionable: each GPU is one full-GPU device and its MIG slices,
    # all taking from one counter set.
    objects = expand_preset("dgx-h100", 1, gpu_mode="mig")
    state = ClusterState(
        nodes=[o for o in objects if isinstance(o, Node)],
        slices=[o for o in objects if isinstance(o, ResourceSlice)],
        classes=[o for o in objects if isinstance(o, DeviceClass)],
        templates=[
            claim_template("eight", claim_spec(("gpu", GPU_CLASS, 8))),
            claim_template("slice", claim_spec(("mig", MIG_CLASS, 1))),
        ],
        pods=[pod("big", claims={"gpu": "eight"}), pod("small", claims={"mig": "slice"})],
    )
    scheduler = Scheduler(state, {"default-scheduler": allot_profile()})
    occupancy = GpuOccupancy(state)
    big, small = state.pods["default/big"], state.pods["default/small"]
    # A full-GPU device takes all of its GPU's multiprocessors: it needs an untouched GPU.
    assert occupancy.whole_room(big, 0) == 8 and scheduler.fits_on("default/big", 0)
    # A slice leaves room on its GPU for others: untouched GPUs bound nothing it can get.
    assert occupancy.whole_room(small, 0) is None
    assert isinstance(scheduler.schedule("default/small"), Placement)
    # One slice taken: seven untouched GPUs, and the filters agree that eight do not fit.
    assert occupancy.whole_room(big, 0) == 7
    assert not scheduler.fits_on("default/big", 0)
    hints = Hints(scheduler, lambda: occupancy)
    assert hints.short_of_gpus("default/big", 0)
    assert not hints.short_of_gpus("default/big", 0, ["default/small"])  # once the slice is freed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"resources": [{"name": "gpu", "weight": -1}]}, "weight of gpu"),
        ({"resources": [{"name": "disk", "weight": 1}]}, "unknown resource 'disk'"),
        ({"resources": "gpu"}, "expected a list"),
        (
            {
                "resources": [
                    {"name": "gpu", "weight": 0},
                    {"name": "cpu", "weight": 0},
                    {"name": "memory", "weight": 0},
                ]
            },
            "positive",
        ),
    ],
)
def test_bad_arguments_are_refused(args: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GpuPacking.from_args(args)


def test_a_count_of_whole_gpus_rules_a_node_out_only_where_the_pods_leaving_could_not_free_enough() -> None:
    # n1 has 6 GPUs, 4 held by `holder`; a pending pod wants 4.
    state = ClusterState(
        nodes=[node("n1", cpu="64")],
        slices=[gpu_slice("n1", 6)],
        classes=[device_class()],
        templates=[ONE, FOUR],
        pods=[pod("holder", claims={"gpu": "four"}), pod("wants", claims={"gpu": "four"})],
    )
    scheduler = Scheduler(state, {"default-scheduler": allot_profile()})
    assert isinstance(scheduler.schedule("default/holder"), Placement)
    occupancy = GpuOccupancy(state)
    hints = Hints(scheduler, lambda: occupancy)
    assert hints.short_of_gpus("default/wants", 0)  # 2 left now
    assert not hints.short_of_gpus("default/wants", 0, ["default/holder"])  # 6 once it is gone
    assert occupancy.held(state.pods["default/holder"]) == 4
    # What the count allows, the filters confirm once the holder is off the node.
    with state.journal.transaction():
        state.unbind("default/holder")
        assert not hints.short_of_gpus("default/wants", 0) and scheduler.fits_on("default/wants", 0)


@pytest.mark.parametrize("preempting", [False, True])
def test_counting_the_members_a_node_could_host_leaves_them_pending_and_the_node_as_it_was(
    preempting: bool,
) -> None:
    # n1 has 4 GPUs, 1 held by `holder` (same priority: not taken away, even when preempting); four
    # pods want one each and three fit. The count binds members to try them: it must not keep them
    # bound, though the what-if took no pod away and so opened nothing that would undo them.
    wanting = [pod(f"w-{i}", claims={"gpu": "one"}) for i in range(4)]
    state = ClusterState(
        nodes=[node("n1", cpu="64")],
        slices=[gpu_slice("n1", 4)],
        classes=[device_class()],
        templates=[ONE, FOUR],
        pods=[pod("holder", claims={"gpu": "one"}), *wanting],
    )
    scheduler = Scheduler(state, {"default-scheduler": allot_profile()})
    assert isinstance(scheduler.schedule("default/holder"), Placement)
    hints = Hints(scheduler, lambda: GpuOccupancy(state))
    keys = [f"default/w-{i}" for i in range(4)]
    assert hints.members_fitting(keys, 0, preempting=preempting, limit=4) == 3
    assert [state.pods[k].bound for k in keys] == [False] * 4
    assert [p.key for p in state.pods_on(0)] == ["default/holder"]
    assert hints.members_fitting(keys, 0, preempting=preempting, limit=2) == 2

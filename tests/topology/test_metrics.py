"""Alignment levels, scores, throughput factors and the cluster summary on hand-computed cases."""

from __future__ import annotations

import pytest

from allot.scheduling.topology.alignment import Level, alignment_value, unit_alignment
from allot.scheduling.topology.metrics import alignment_summary, claim_label, pod_throughput_factor
from allot.scheduling.topology.penalties import DDP_COMMUNICATION_SHARE, throughput_factor
from allot.scheduling.topology.places import Place, place_of, relation
from builders import device

from .helpers import UPSTREAM, claim_pod, cluster, request, schedule_all, spec, template


def gpu(root: str, numa: int) -> Place:
    return Place("gpu", frozenset({root}), frozenset({numa}))


def nic(root: str, numa: int) -> Place:
    return Place("nic", frozenset({root}), frozenset({numa}))


def cpu(numa: int) -> Place:
    return Place("cpu", frozenset(), frozenset({numa}))


@pytest.mark.parametrize(
    ("places", "level", "score"),
    [
        ([gpu("a", 0), nic("a", 0)], Level.PCIE, 1.0),
        ([gpu("a", 0), nic("b", 0)], Level.NUMA, 0.5),
        ([gpu("a", 0), nic("c", 1)], Level.NONE, 0.0),
        ([gpu("a", 0), cpu(0)], Level.NUMA, 1.0),  # GPU + CPU: the NUMA node is all they can share
        ([gpu("a", 0), nic("a", 0), cpu(0)], Level.PCIE, 1.0),
        ([gpu("a", 0), nic("a", 0), cpu(1)], Level.NONE, 4 / 12),
        ([gpu("a", 0), gpu("b", 0), nic("a", 0)], Level.NUMA, 5 / 6),
    ],
)
def test_unit_alignment(places: list[Place], level: Level, score: float) -> None:
    alignment = unit_alignment(places)
    assert alignment is not None
    assert alignment.level is level and alignment.score == pytest.approx(score)


def test_one_kind_has_nothing_to_align() -> None:
    assert unit_alignment([gpu("a", 0), gpu("b", 1)]) is None
    assert claim_label([gpu("a", 0), gpu("b", 1)]) is None


def test_levels_order_before_scores() -> None:
    # Root-aligned for one GPU but across sockets for another loses to NUMA-only alignment.
    across = unit_alignment([gpu("a", 0), gpu("z", 1), nic("a", 0)])
    numa = unit_alignment([gpu("b", 0), nic("c", 0)])
    assert across is not None and numa is not None
    assert across.score > numa.score
    assert alignment_value(numa.level, numa.score) > alignment_value(across.level, across.score)


def test_places_read_standard_and_legacy_attributes() -> None:
    standard = place_of(
        "gpu.nvidia.com",
        device("g", {"resource.kubernetes.io/pcieRoot": "pci0000:15", "resource.kubernetes.io/numaNode": 1}),
    )
    assert standard == Place("gpu", frozenset({"pci0000:15"}), frozenset({1}))
    legacy = place_of(
        "dra.net", device("n", {"numaNode": 1, "resource.kubernetes.io/pcieRoot": "pci0000:16"})
    )
    assert legacy.numas == frozenset({1}) and legacy.kind == "nic"
    assert relation(standard, legacy) == 1
    unknown = place_of("example.com", device("x"))
    assert not unknown.known and unknown.kind == "example.com"
    assert claim_label([standard, unknown]) == "unknown"


def test_throughput_factors() -> None:
    assert pod_throughput_factor([gpu("a", 0), nic("a", 0)]) == 1.0
    assert pod_throughput_factor([gpu("a", 0), nic("b", 0)]) == 0.63
    assert pod_throughput_factor([gpu("a", 0), nic("c", 1)]) == 0.53
    # The slowest GPU sets the pace.
    assert pod_throughput_factor([gpu("a", 0), gpu("d", 1), nic("a", 0)]) == 0.53
    assert pod_throughput_factor([gpu("a", 0), cpu(1)]) is None
    ddp = throughput_factor(Level.NONE, communication_share=DDP_COMMUNICATION_SHARE)
    assert ddp == pytest.approx(1 / (0.89 + 0.11 / 0.53))
    assert ddp == pytest.approx(324.7 / 356.6, abs=0.005)  # the Azure ND H100 v5 measurement
    with pytest.raises(ValueError):
        throughput_factor(Level.NUMA, communication_share=1.5)


def test_summary_of_upstream_order_on_one_dgx() -> None:
    names = [f"p{i}" for i in range(8)]
    t = template("gpu-nic", spec(request("gpu"), request("nic")))
    state = cluster(templates=[t], pods=[claim_pod(n, "gpu-nic") for n in names])
    assert all(schedule_all(state, UPSTREAM, names).values())
    summary = alignment_summary(state)
    # gpu-0 + mlx5_0 share a root; gpu-1..3 get storage or other roots' NICs on socket 0, gpu-6/7 on
    # socket 1; gpu-4 and gpu-5 get socket-0 NICs (mlx5_4, mlx5_5): across sockets.
    assert dict(summary.claims) == {"pcieRoot": 1, "numaNode": 5, "none": 2}
    assert summary.share("pcieRoot") == 1 / 8
    assert summary.mean_factor == pytest.approx((1 + 5 * 0.63 + 2 * 0.53) / 8)
    assert summary.as_dict()["pods"] == 8

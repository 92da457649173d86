"""Reservations: a large job waiting for a node to drain holds it; only jobs that end before may backfill."""

from __future__ import annotations

from allot.cluster.state import ClusterState
from allot.engine.decisions import Bound, CycleResult
from allot.engine.engine import Engine, EnginePolicy
from allot.model.core import Pod
from allot.model.kueue import MAX_EXEC_TIME_LABEL
from allot.scheduling.scheduler import HELD_REASON
from builders import node, pod

GPU = "nvidia.com/gpu"


def gpu_pod(name: str, gpus: int, estimate: int | None = None) -> Pod:
    labels = {MAX_EXEC_TIME_LABEL: str(estimate)} if estimate is not None else {}
    return pod(name, extended={GPU: str(gpus)}, labels=labels)


def bound(result: CycleResult) -> list[str]:
    return [d.pod.removeprefix("default/") for d in result.decisions if isinstance(d, Bound)]


def waiting(result: CycleResult) -> dict[str, str]:
    return {d.pod.removeprefix("default/"): d.reason for d in result.waiting}


def run(long_estimate: int | None) -> tuple[list[tuple[float, list[str]]], dict[str, str]]:
    """Four one-GPU pods start at 0 on an eight-GPU node; an eight-GPU job comes at 10, three small
    ones at 20; the first small one ends at 1,020 and the long ones at 3,600."""
    state = ClusterState(nodes=[node("n1", extended={GPU: "8"})])
    engine = Engine(state, policy=EnginePolicy(queues=False, preemption=False, reservation=True))
    starts: list[tuple[float, list[str]]] = []
    for i in range(4):
        state.add_pod(gpu_pod(f"long-{i}", 1, long_estimate))
    starts.append((0.0, bound(engine.cycle(0.0))))
    state.add_pod(gpu_pod("big", 8))
    starts.append((10.0, bound(engine.cycle(10.0))))
    for name, estimate in (("short", 1000), ("unknown", None), ("too-long", 5000)):
        state.add_pod(gpu_pod(name, 1, estimate))
    second = engine.cycle(20.0)
    starts.append((20.0, bound(second)))
    reasons = waiting(second)
    if state.pods["default/short"].bound:
        state.remove_pod("default/short")
        starts.append((1020.0, bound(engine.cycle(1020.0))))
    for i in range(4):
        state.remove_pod(f"default/long-{i}")
    starts.append((3600.0, bound(engine.cycle(3600.0))))
    return starts, reasons


def test_backfill_fills_the_gap_and_never_delays_the_big_job() -> None:
    starts, reasons = run(long_estimate=3600)
    assert starts[0] == (0.0, [f"long-{i}" for i in range(4)])
    # The node is held for big: of the small jobs only the one that ends before the node drains
    # (20 + 1,000 <= 3,600) uses the free GPUs.
    assert starts[2] == (20.0, ["short"])
    assert HELD_REASON in reasons["unknown"] and HELD_REASON in reasons["too-long"]
    # big starts when the long pods end, as it would have with no backfill at all.
    assert starts[-1][0] == 3600.0 and starts[-1][1][0] == "big"


def test_without_runtime_estimates_nothing_backfills() -> None:
    starts, reasons = run(long_estimate=None)
    # The node's drain time is unknown: even a job with an estimate could delay big.
    assert starts[2] == (20.0, [])
    assert HELD_REASON in reasons["short"]
    assert starts[-1][0] == 3600.0 and starts[-1][1][0] == "big"

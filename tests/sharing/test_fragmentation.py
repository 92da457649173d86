"""The vectorised measures against plain loops over the definitions, and the table under transactions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.dra import Allocator
from allot.scheduling.sharing.fragmentation import CpuAwareModel, FragmentationModel
from allot.scheduling.sharing.stranding import StrandingModel
from allot.scheduling.sharing.table import SharedGpuTable, table_for
from allot.scheduling.sharing.workload import TargetWorkload
from fuzzing import examples
from sharing.helpers import hami_cluster, hami_pod, scheduler, sharing_profile

HAMI = "hami-core-gpu.project-hami.io"
# (cpu cores, GPUs, cores per GPU or 0 for CPU-only, weight)
CLASSES = [(1, 1, 50, 3), (4, 1, 100, 2), (2, 2, 100, 1), (8, 0, 0, 1), (1, 1, 25, 2)]


def workload() -> TargetWorkload:
    raw = []
    for cpu, gpus, cores, weight in CLASSES:
        entry: dict[str, object] = {"cpu": str(cpu), "gpus": gpus, "weight": weight, "deviceClassName": HAMI}
        if gpus:
            # Memory too: without it a task takes all of a GPU's memory (HAMi's default).
            entry["capacity"] = {"cores": cores, "memory": "100Mi"}
        raw.append(entry)
    return TargetWorkload.from_args({"classes": raw, "popularityThreshold": 100})


def fgd_reference(free: list[int], cpu: int, tasks: TargetWorkload) -> float:
    """Section 1.4 of research/sharing.md, one node, loops only."""
    total = sum(free)
    value = 0.0
    for task in tasks.classes:
        if task.request is None:
            value += task.weight * total
            continue
        share = dict(task.request.capacity_key or ()).get("cores", 100 * 10**9) // 10**9 * 10
        fits = sum(1 for f in free if f >= share) >= task.request.count and cpu >= task.cpu
        value += task.weight * (sum(f for f in free if f < share) if fits else total)
    return value


def stranded_reference(free: list[int], cpu: int, tasks: TargetWorkload) -> float:
    total = sum(free)
    value = 0.0
    for task in tasks.classes:
        if task.request is None:
            value += task.weight * total
            continue
        share = dict(task.request.capacity_key or ()).get("cores", 100 * 10**9) // 10**9 * 10
        held = sum(f // share for f in free) // task.request.count
        fed = min(held, cpu // task.cpu)
        value += task.weight * max(total - fed * task.request.count * share, 0)
    return value


def cpu_reference(free: list[int], cpu: int, tasks: TargetWorkload) -> float:
    total = sum(free)
    value = 0.0
    for task in tasks.classes:
        base = fgd_reference(free, cpu, TargetWorkload((task,))) / task.weight if task.weight else 0.0
        if task.request is not None:
            share = dict(task.request.capacity_key or ()).get("cores", 100 * 10**9) // 10**9 * 10
            base = max(base, total - (cpu // task.cpu) * task.request.count * share)
        value += task.weight * base
    return value


def filled_table(seed: int) -> tuple[SharedGpuTable, object, object]:
    state = hami_cluster({"a": 2, "b": 4, "c": 1}, cpu="16")
    sched = scheduler(state, sharing_profile("Random", isolation=False, seed=seed))
    rng = np.random.default_rng(seed)
    for i in range(int(rng.integers(0, 10))):
        sched.schedule(
            state.add_pod(hami_pod(f"p{i}", cores=int(rng.integers(5, 100)), memory_mib=100, cpu="2")).key
        )
    table = table_for(state, Allocator(state.classes, state.slices, features=state.features))
    cpu = state.nodes.allocatable["cpu"] - state.nodes.requested["cpu"]
    # The state goes back too: the table holds it weakly.
    return table, lambda rows: cpu[rows], state


@settings(max_examples=examples(25))
@given(st.integers(0, 10_000))
def test_measures_and_their_deltas_match_the_definitions(seed: int) -> None:
    table, cpu_free, _state = filled_table(seed)
    tasks = workload()
    nodes = np.arange(table.size)
    for model_type, reference in (
        (FragmentationModel, fgd_reference),
        (StrandingModel, stranded_reference),
        (CpuAwareModel, cpu_reference),
    ):
        model = model_type(table, tasks, cpu_free)  # type: ignore[arg-type]
        values = model.fragmentation(nodes)
        cpus = cpu_free(nodes)  # type: ignore[operator]
        for n in nodes:
            free = [int(x) for x in table.milli_free[n][table.valid[n]]]
            assert abs(values[n] - reference(free, int(cpus[n]), tasks)) < 1e-6, (model_type, n)
        # A 30-core, 1-CPU pod tried on every GPU: after - before, by the reference.
        request = {"cores": 30 * 10**9, "memory": 100 * 2**20 * 10**9}
        needs = table.needs(tuple(sorted(request.items())), request)
        fit = table.usable(table.valid.copy(), needs)
        deltas = model.deltas(nodes, needs, fit, 1, 1000)
        for n in nodes:
            free = [int(x) for x in table.milli_free[n][table.valid[n]]]
            for g, f in enumerate(free):
                if not fit[n, g]:
                    assert np.isinf(deltas.delta[n, g])
                    continue
                after = free.copy()
                after[g] = f - 300
                expected = reference(after, int(cpus[n]) - 1000, tasks) - reference(free, int(cpus[n]), tasks)
                assert abs(deltas.delta[n, g] - expected) < 1e-6, (model_type, n, g)


def test_table_follows_placements_and_rollbacks() -> None:
    state = hami_cluster({"a": 2})
    sched = scheduler(state)
    table = table_for(state, Allocator(state.classes, state.slices, features=state.features))
    assert table.share_free.tolist() == [[100, 100]]
    version = int(table.version[0])
    with state.journal.transaction():
        sched.schedule(state.add_pod(hami_pod("p", cores=30, memory_mib=1024)).key)
        assert sorted(table.share_free[0].tolist()) == [70, 100]
        assert sorted(table.mem_free[0].tolist()) == [15 * 1024**3, 16 * 1024**3]
        assert sorted(table.milli_free[0].tolist()) == [700, 1000]
        assert table.version[0] > version
    # Rolled back: everything as before.
    assert table.share_free.tolist() == [[100, 100]]
    assert table.milli_free.tolist() == [[1000, 1000]]
    assert table.tag_kinds.tolist() == [0]

"""The simulator's rules: work starts at bind, gangs finish together, preempted work restarts,
failed nodes lose their pods, taints keep CPU pods off GPU nodes, the horizon ends the run."""

from __future__ import annotations

import pytest

from allot.sim.events import TraceKind

from .cases import run

ONE_GPU = """
name: one-gpu
cluster:
  nodes:
  - {{count: {nodes}, cpu: 16, memory: 64Gi, gpus: {gpus}, namePrefix: gpu}}
tenants:
- {{name: a}}
priorityClasses:
- {{name: low, value: 10}}
- {{name: high, value: 1000}}
jobs:
{jobs}
"""


def job(name: str, times: str, duration: str, *, gpus: int = 1, pods: int = 1, priority: str = "low") -> str:
    return f"""- name: {name}
  tenant: a
  priority: {priority}
  arrival: {{times: [{times}]}}
  pods: {pods}
  duration: {duration}
  resources: {{cpu: 1, memory: 1Gi, nvidia.com/gpu: {gpus}}}
"""


def scenario(*jobs: str, nodes: int = 1, gpus: int = 1, extra: str = "") -> str:
    return ONE_GPU.format(nodes=nodes, gpus=gpus, jobs="".join(jobs)) + extra


def by_key(result: object) -> dict[str, object]:
    return {j.key: j for j in result.jobs}  # type: ignore[attr-defined]


@pytest.mark.parametrize("policy", ["fifo-priority", "fair"])
def test_work_starts_when_bound_not_when_submitted(policy: str) -> None:
    result = run(scenario(job("first", "0", "10m"), job("second", "1m", "10m")), policy)
    jobs = by_key(result)
    first, second = jobs["a/first-0000"], jobs["a/second-0000"]
    assert (first.start, first.finish) == (0.0, 600.0)  # type: ignore[attr-defined]
    assert (second.start, second.finish) == (600.0, 1200.0)  # type: ignore[attr-defined]
    assert result.end == 1200.0


@pytest.mark.parametrize("policy", ["fifo-priority", "fair"])
def test_a_gang_starts_and_finishes_together(policy: str) -> None:
    result = run(
        scenario(job("blocker", "0", "5m"), job("gang", "1m", "10m", pods=2), nodes=2, gpus=1), policy
    )
    gang = by_key(result)["a/gang-0000"]
    assert gang.gang and gang.pods == 2  # type: ignore[attr-defined]
    # Only one GPU is free until the blocker finishes at 5 min; then both pods start at once.
    assert (gang.start, gang.finish) == (300.0, 900.0)  # type: ignore[attr-defined]
    starts = [e.time for e in result.trace if e.kind is TraceKind.START and "gang" in e.subject]
    assert starts == [300.0, 300.0]


@pytest.mark.parametrize(("checkpoint", "finish"), [(0.0, 100 * 60.0), (0.5, 85 * 60.0)])
def test_preempted_work_restarts_keeping_the_checkpointed_part(checkpoint: float, finish: float) -> None:
    jobs = (job("long", "0", "60m"), job("urgent", "30m", "10m", priority="high"))
    result = run(scenario(*jobs), "fifo-priority", checkpoint=checkpoint)
    long, urgent = by_key(result)["a/long-0000"], by_key(result)["a/urgent-0000"]
    assert (urgent.start, urgent.finish) == (1800.0, 2400.0)  # type: ignore[attr-defined]
    assert long.preemptions == 1  # type: ignore[attr-defined]
    # 30 min done, then back in line at 40 min with 60 min (or 45 with half kept) left.
    assert long.finish == finish  # type: ignore[attr-defined]
    [preemption] = result.preemptions
    assert preemption.pod == "a/long-0000-0" and preemption.preemptor == "a/urgent-0000-0"


def test_a_failed_node_loses_its_pods_until_it_comes_back() -> None:
    events = "  nodeEvents:\n  - {node: gpu-00, down: 10m, up: 30m}\n"
    text = scenario(job("work", "0", "60m")).replace("cluster:\n", "cluster:\n" + events)
    result = run(text, "fair")
    work = by_key(result)["a/work-0000"]
    assert work.finish == 90 * 60.0  # type: ignore[attr-defined]
    assert [p.reason for p in result.preemptions] == ["node failed"]
    kinds = [e.kind for e in result.trace if e.kind in (TraceKind.NODE_DOWN, TraceKind.NODE_UP)]
    assert kinds == [TraceKind.NODE_DOWN, TraceKind.NODE_UP]
    capacity = dict(zip(result.samples.time.tolist(), result.samples.capacity.tolist(), strict=True))
    assert capacity[600.0] == 0 and capacity[1800.0] == 1


def test_taints_keep_cpu_pods_off_gpu_nodes() -> None:
    text = """
name: taints
cluster:
  nodes:
  - {count: 1, cpu: 64, memory: 256Gi, gpus: 8, namePrefix: gpu, taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}
  - {count: 1, cpu: 8, memory: 32Gi, namePrefix: cpu}
tenants:
- {name: a}
jobs:
- {name: prep, tenant: a, arrival: {times: [0, 0, 0]}, duration: 10m, resources: {cpu: 4, memory: 4Gi}}
- {name: gpu, tenant: a, arrival: {times: [0]}, duration: 10m, resources: {cpu: 4, memory: 4Gi, nvidia.com/gpu: 1}}
"""
    result = run(text, "fair")
    nodes = {b.pod.rsplit("-", 2)[0].split("/")[1]: b.node for b in result.binds}
    assert {b.node for b in result.binds if "prep" in b.pod} == {"cpu-00"}
    assert nodes["gpu"] == "gpu-00"
    prep = [j for j in result.jobs if j.shape == "prep"]
    # Two fit on the 8-CPU node at once; the third waits for one of them.
    assert sorted(j.start for j in prep) == [0.0, 0.0, 600.0]  # type: ignore[misc]


def test_the_horizon_ends_the_run_and_censors_waits() -> None:
    text = scenario(job("first", "0", "2h"), job("second", "0", "10m")).replace(
        "name: one-gpu", "name: h\nhorizon: 1h"
    )
    result = run(text, "fair")
    assert result.end == 3600.0
    jobs = by_key(result)
    assert jobs["a/first-0000"].finish is None  # type: ignore[attr-defined]
    assert jobs["a/second-0000"].start is None  # type: ignore[attr-defined]


def test_kueue_quota_is_released_when_a_workload_completes() -> None:
    text = scenario(job("one", "0", "10m"), job("two", "0", "10m"), nodes=1, gpus=4).replace(
        "- {name: a}", "- {name: a, quota: {gpus: 1}}"
    )
    result = run(text, "fair")
    jobs = by_key(result)
    # Alone in its cohort with 1 GPU of quota: the second job waits for the first's quota.
    assert jobs["a/one-0000"].start == 0.0  # type: ignore[attr-defined]
    assert jobs["a/two-0000"].start == 600.0  # type: ignore[attr-defined]
    assert len(result.admissions) == 2

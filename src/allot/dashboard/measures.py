"""The cluster's GPU measures at one instant, by node pool and GPU model; the pending pods' ask.

`gpu_states(snapshot)` counts, per (pool, model), the GPUs in each state (the simulator's
definitions, so a live cluster and a simulation read the same):

* `total`: every GPU; `ready`: on a Ready node and healthy (no NoSchedule/NoExecute taint);
* `allocated`: GPU-equivalents held by allocated claims (a GPU counts max(compute, memory) of
  what was taken, `allot.sim.inventory`); `in_use`: the same for pods whose containers run;
* `stranded`: the free share of ready GPUs that are partly taken (usable only by fractional
  work); `unhealthy`: GPUs tainted by the node agent.

`pending_work(snapshot)` is what the pending pods ask for: their count, the GPU-equivalents
they want, the GPU-hours they have waited (GPUs asked x time since creation), the longest wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.dashboard.model import Snapshot

EPSILON = 1e-9
HOUR = 3600.0
STATES = ("total", "ready", "allocated", "in_use", "stranded", "unhealthy")

GpuStates = dict[tuple[str, str], dict[str, float]]


def gpu_states(snapshot: Snapshot) -> GpuStates:
    found: GpuStates = {}
    for node in snapshot.nodes:
        for gpu in node.gpus:
            row = found.setdefault((node.pool, gpu.model or gpu.mode), dict.fromkeys(STATES, 0.0))
            row["total"] += 1
            row["allocated"] += gpu.allocated
            row["in_use"] += gpu.in_use
            row["unhealthy"] += not gpu.healthy
            if node.ready and gpu.healthy:
                row["ready"] += 1
                if EPSILON < gpu.allocated < 1 - EPSILON:
                    row["stranded"] += 1 - gpu.allocated
    return found


def summed(states: GpuStates, by: int | None = None) -> dict[str, dict[str, float]]:
    """States summed per pool (`by`=0), per model (1), or over the cluster (None: key "")."""
    result: dict[str, dict[str, float]] = {}
    for key, row in states.items():
        total = result.setdefault("" if by is None else key[by], dict.fromkeys(STATES, 0.0))
        for state, value in row.items():
            total[state] += value
    return result


@dataclass(frozen=True, slots=True)
class PendingWork:
    pods: int
    gpus: float
    gpu_hours: float
    oldest: float


def pending_work(snapshot: Snapshot) -> PendingWork:
    now = snapshot.time
    pods = gpus = gpu_hours = oldest = 0.0
    for pod in snapshot.pods:
        if pod.node:
            continue
        wait = max(0.0, now - pod.created) if pod.created is not None else 0.0
        pods += 1
        gpus += pod.gpus
        gpu_hours += pod.gpus * wait / HOUR
        oldest = max(oldest, wait)
    return PendingWork(int(pods), gpus, gpu_hours, oldest)

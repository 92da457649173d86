"""Who is over or under its fair share of GPUs, at one instant.

The report's definition (`allot.sim.fairshare`), applied to a snapshot: the applications of one
kind (namespaces, or ClusterQueues) each demand the GPU-equivalents they hold plus those their
pending pods ask for; with C the GPUs on ready nodes, an application's fair share is the
weighted max-min (water-filling) allocation of C over those demands, and its fair-share ratio
is what it holds over that share (below 1: it gets less than it is entitled to, above 1:
more, borrowing what others leave). Weights: a ClusterQueue's fair-sharing weight, 1 for a
namespace.
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.dashboard.apps import CLUSTER_QUEUE
from allot.dashboard.model import Snapshot
from allot.sim.fairshare import weighted_max_min


@dataclass(frozen=True, slots=True)
class Share:
    name: str
    weight: float
    held: float
    pending: float
    pending_pods: int
    fair: float

    @property
    def ratio(self) -> float | None:
        return self.held / self.fair if self.fair > 1e-9 else None


def ready_gpus(snapshot: Snapshot) -> float:
    return float(sum(1 for n in snapshot.nodes if n.ready for g in n.gpus if g.healthy))


def shares(snapshot: Snapshot, kind: str) -> list[Share]:
    """Per application of `kind` (NAMESPACE or CLUSTER_QUEUE), sorted by name."""
    held: dict[str, float] = {}
    pending: dict[str, float] = {}
    pending_pods: dict[str, int] = {}
    weights: dict[str, float] = {}
    if kind == CLUSTER_QUEUE:
        weights = {q.name: q.weight for q in snapshot.cluster_queues}
    for pod in snapshot.pods:
        name = pod.cluster_queue if kind == CLUSTER_QUEUE else pod.namespace
        if not name:
            continue
        if pod.node:
            held[name] = held.get(name, 0.0) + pod.gpus
        else:
            pending[name] = pending.get(name, 0.0) + pod.gpus
            pending_pods[name] = pending_pods.get(name, 0) + 1
    names = sorted({*held, *pending, *(weights if kind == CLUSTER_QUEUE else ())})
    demand = [held.get(n, 0.0) + pending.get(n, 0.0) for n in names]
    weight = [weights.get(n, 1.0) if kind == CLUSTER_QUEUE else 1.0 for n in names]
    fair = weighted_max_min(ready_gpus(snapshot), demand, weight)
    return [
        Share(n, weight[i], held.get(n, 0.0), pending.get(n, 0.0), pending_pods.get(n, 0), fair[i])
        for i, n in enumerate(names)
    ]

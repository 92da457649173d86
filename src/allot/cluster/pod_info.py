"""PodInfo: a pod and what the scheduler derived from it once (the cluster state's record per pod)."""

from __future__ import annotations

from dataclasses import dataclass, field

from allot.cluster.resources import Amounts
from allot.model.core import Pod


@dataclass(slots=True)
class PodInfo:
    """A pod and what the scheduler derived from it once."""

    key: str
    pod: Pod
    requests: Amounts
    # CPU and memory as scores count them on a node (kube-scheduler's non-zero requests).
    nonzero: tuple[int, int]
    priority: int
    # (pod entry name, claim key) for each spec.resourceClaims entry, in spec order.
    claims: tuple[tuple[str, str], ...]
    node: int | None = None
    # Insertion order, the last tie-break for pods of equal priority and timestamp.
    sequence: int = 0
    # When the pod was last bound, as an increasing counter (for "most recently started" orderings).
    started: int = 0
    # Requested resources that claims serve on its node (extended resources through DRA): not node usage.
    served_by_claims: frozenset[str] = frozenset()
    missing: list[str] = field(default_factory=list)
    # The same as NodeResourcesFit scores the pod while it is being placed: without its pod-level
    # requests, as kube-scheduler v1.36 does.
    incoming_nonzero: tuple[int, int] = (0, 0)

    @property
    def bound(self) -> bool:
        return self.node is not None

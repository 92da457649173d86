"""What one engine cycle decided, as values a driver can apply, print or replay.

The engine has already applied each decision to the ClusterState it was
given (as kube-scheduler "assumes" a pod into its cache); drivers make it
real: the simulator schedules completions and requeues evicted work, the
live driver writes bindings and claim status to the API server, the
planner prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from allot.model.resource import AllocationResult


@dataclass(frozen=True, slots=True)
class Bound:
    """A pod placed on a node, with the claims allocated for it there."""

    pod: str
    node: str
    allocations: Mapping[str, AllocationResult]
    score: float
    workload: str = ""  # the Kueue workload (or gang) it belongs to, if any
    # A preemptor's: why it fit nowhere before its victims were chosen (see Placement.failure).
    failure: str = ""


@dataclass(frozen=True, slots=True)
class Evicted:
    """A running pod taken off its node to make room (preemption)."""

    pod: str
    reason: str
    preemptor: str


@dataclass(frozen=True, slots=True)
class Admitted:
    """A Kueue workload whose quota was reserved and whose pods were all placed."""

    workload: str
    cluster_queue: str
    flavors: Mapping[str, str] = field(default_factory=dict)
    borrowing: bool = False


@dataclass(frozen=True, slots=True)
class Waiting:
    """A pod (or workload) left pending, with the one-line reason."""

    pod: str
    reason: str
    workload: str = ""


@dataclass(frozen=True, slots=True)
class Deallocated:
    """A claim left allocated for a pod that cannot use it (its pod is pending and fits nowhere
    with it, e.g. a scheduler died between writing the claim and binding): the allocation is
    released so the pod can be placed afresh, as kube-scheduler's DynamicResources PostFilter does."""

    claim: str
    pod: str


Decision = Bound | Evicted | Admitted | Waiting | Deallocated


@dataclass(frozen=True, slots=True)
class CycleResult:
    decisions: tuple[Decision, ...]

    def of(self, kind: type[Decision]) -> list[Decision]:
        return [d for d in self.decisions if isinstance(d, kind)]

    @property
    def bound(self) -> list[Bound]:
        return [d for d in self.decisions if isinstance(d, Bound)]

    @property
    def evicted(self) -> list[Evicted]:
        return [d for d in self.decisions if isinstance(d, Evicted)]

    @property
    def waiting(self) -> list[Waiting]:
        return [d for d in self.decisions if isinstance(d, Waiting)]

    @property
    def admitted(self) -> list[Admitted]:
        return [d for d in self.decisions if isinstance(d, Admitted)]

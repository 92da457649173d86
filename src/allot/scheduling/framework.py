"""The extension points of a scheduling cycle, as small protocols.

A cycle places one pod. Plugins implement only the points they need:

* `PreFilter.pre_filter(cycle)` once per pod: resolve what the pod asks
  for and reject it outright if no node could ever fit it.
* `MaskFilter.filter_mask(cycle, candidates)` looks at every candidate node
  at once (array operations over the node table) and returns the nodes it
  rejects, grouped by reason. Cheap checks live here.
* `NodeFilter.filter_node(cycle, index)` checks one node; used for work
  that cannot be vectorised (running the DRA allocator). The framework
  calls it on nodes that passed every mask filter, in rotation order, until
  it has found enough feasible nodes.
* `ScorePlugin.score(cycle, nodes)` returns a 0-100 score for each
  feasible node; the profile weighs and sums them.
* `ReservePlugin.reserve(cycle, index)` commits the plugin's part of the
  decision for the chosen node (for DRA: the allocation; for VolumeBinding:
  the claims to bind) into the cycle.

A plugin may also declare `wake_on` (the cluster events that can undo its
rejection, `allot.scheduling.hints`), `wake_anywhere` (those of them that
can change its verdict on nodes other than the one the event happened on:
inter-pod affinity, spreading), and `equivalence_key` (what it reads of the
pod beyond its spec, `allot.scheduling.equivalence`).

Every plugin is one module in `allot.scheduling.plugins` and names itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.model.core import PodExtendedResourceClaimStatus
from allot.model.resource import AllocationResult, ResourceClaim
from allot.scheduling.status import Code, Status

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Rejection:
    """Nodes a mask filter rejected for one reason."""

    reason: str
    nodes: BoolArray
    code: Code = Code.UNSCHEDULABLE


@dataclass(slots=True)
class Cycle:
    """Scratch space for one attempt to place one pod."""

    state: ClusterState
    pod: PodInfo
    # Nodes the caller allows (a Kueue flavor's nodes, a topology domain); None = all.
    allowed: BoolArray | None = None
    data: dict[str, object] = field(default_factory=dict)
    # Claim allocations decided for the chosen node, by claim key.
    allocations: dict[str, AllocationResult] = field(default_factory=dict)
    # Claims the scheduler creates for the pod when it binds (extended resources served by DRA), by entry name.
    new_claims: dict[str, ResourceClaim] = field(default_factory=dict)
    # Resources of the pod's requests that claims serve on the chosen node (not counted against allocatable).
    served_by_claims: frozenset[str] = frozenset()
    # The pod's status.extendedResourceClaimStatus for the claim made for it (written before binding).
    extended: PodExtendedResourceClaimStatus | None = None
    # Per-node statuses from node filters, for diagnosis.
    node_statuses: dict[int, Status] = field(default_factory=dict)
    # Volume claims to bind on the chosen node: (claim key, volume name, or "" to provision there).
    volumes: list[tuple[str, str]] = field(default_factory=list)
    # Nodes pre-filters narrowed the pod to (kube-scheduler's PreFilterResult; None: all), and the
    # plugins that did: every other node is rejected before any filter runs.
    eligible: BoolArray | None = None
    narrowed_by: list[str] = field(default_factory=list)

    def narrow(self, plugin: str, nodes: BoolArray) -> None:
        """A pre-filter's PreFilterResult: only `nodes` can take the pod."""
        self.eligible = nodes if self.eligible is None else self.eligible & nodes
        self.narrowed_by.append(plugin)


class Plugin(Protocol):
    @property
    def name(self) -> str: ...


@runtime_checkable
class PreFilter(Plugin, Protocol):
    def pre_filter(self, cycle: Cycle) -> Status: ...


@runtime_checkable
class MaskFilter(Plugin, Protocol):
    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]: ...


@runtime_checkable
class NodeFilter(Plugin, Protocol):
    def needs_node_filter(self, cycle: Cycle) -> bool:
        """False when the mask filters already decided everything this plugin checks for this pod."""
        ...

    def filter_node(self, cycle: Cycle, index: int) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, cycle: Cycle, index: int) -> Status: ...

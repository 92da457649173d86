"""The per-pod scheduling cycle: pre-filter, filter, score, reserve.

`Scheduler.place` decides where one pod would go without changing the
state; `Scheduler.schedule` also binds it. Steps:

1. Pick the profile by the pod's `schedulerName`.
2. Pre-filter: plugins resolve the pod's needs; any rejection ends the cycle.
3. Mask filters remove nodes in array operations, recording reasons.
4. Node filters (expensive, per node) run on the survivors in rotation
   order until enough feasible nodes are found (percentageOfNodesToScore).
5. Score the feasible nodes; the highest weighted sum wins. Equal sums are
   ranked by the pod's seeded tie-break key per node (`tie_break`): the
   same input gives the same node, yet no node is favoured by its index.
6. Reserve: plugins commit their choice for that node (DRA allocations).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from allot.cluster.state import ClusterState
from allot.model.core import PodExtendedResourceClaimStatus
from allot.model.resource import AllocationResult, ResourceClaim
from allot.scheduling import registry
from allot.scheduling.diagnosis import Diagnosis
from allot.scheduling.equivalence import EquivalenceClasses, PodReader, VersionedReader, versioned
from allot.scheduling.framework import (
    BoolArray,
    Cycle,
    FloatArray,
    IntArray,
    MaskFilter,
    NodeFilter,
    Plugin,
    PreFilter,
    Rejection,
    ReservePlugin,
    ScorePlugin,
)
from allot.scheduling.node_statuses import NodeStatuses
from allot.scheduling.profile import DEFAULT_SCHEDULER_NAME, Profile
from allot.scheduling.status import Code, Status, unresolvable
from allot.scheduling.tie_break import KeyArray, node_hashes, pod_hash, tie_keys


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a pod goes, with the claim allocations made for it there."""

    pod_key: str
    node: str
    allocations: Mapping[str, AllocationResult]
    score: float
    # Pods evicted to make room, with the reason for each (preemption).
    victims: tuple[tuple[str, str], ...] = ()
    # Claims created for the pod at binding (extended resources served by DRA), by pod entry name.
    new_claims: Mapping[str, ResourceClaim] = field(default_factory=dict)
    served_by_claims: frozenset[str] = frozenset()
    # The pod's status.extendedResourceClaimStatus naming the new claim (kube-scheduler writes it).
    extended: PodExtendedResourceClaimStatus | None = None
    # Volume claims bound (to the named volume) or left to provisioning ("") on the node.
    volumes: tuple[tuple[str, str], ...] = ()
    # With victims: why the pod fit nowhere before them ("0/N nodes are available: ..."), which
    # kube-scheduler writes on the preemptor while the victims leave.
    failure: str = ""


@dataclass(frozen=True, slots=True)
class Unschedulable:
    pod_key: str
    diagnosis: Diagnosis

    @property
    def message(self) -> str:
        return self.diagnosis.message()


Outcome = Placement | Unschedulable

# Why a node held for a waiting job rejects other pods (see allot.engine.reserve).
HELD_REASON = "node(s) held for a larger job waiting for them to drain"


class Holds(Protocol):
    """Nodes held for waiting work: `held_from(pod)` marks the nodes the pod may not use (None: any)."""

    def held_from(self, pod_key: str) -> BoolArray | None: ...


@dataclass
class ProfilePlugins:
    profile: Profile
    pre_filters: list[PreFilter] = field(default_factory=list)
    mask_filters: list[MaskFilter] = field(default_factory=list)
    node_filters: list[NodeFilter] = field(default_factory=list)
    scorers: list[tuple[ScorePlugin, int]] = field(default_factory=list)
    reservers: list[ReservePlugin] = field(default_factory=list)
    # Filters that read more of the pod than its spec (for equivalence classes).
    readers: list[PodReader] = field(default_factory=list)
    versioned_readers: tuple[VersionedReader, ...] = ()


def _narrowed(cycle: Cycle, outside: BoolArray) -> Rejection:
    """kube-scheduler's status for nodes outside the pre-filters' PreFilterResult."""
    plugins = " ".join(sorted(set(cycle.narrowed_by)))
    return Rejection(f"node(s) didn't satisfy plugin(s) [{plugins}]", outside, Code.UNRESOLVABLE)


def _instantiate(profile: Profile) -> ProfilePlugins:
    built: dict[str, Plugin] = {}

    def get(name: str) -> Plugin:
        if name not in built:
            built[name] = registry.build(name, profile.plugin_args.get(name, {}))
        return built[name]

    plugins = ProfilePlugins(profile)
    for name in profile.pre_filter_only:
        plugin = get(name)
        if isinstance(plugin, PreFilter):
            plugins.pre_filters.append(plugin)
    for name in profile.filters:
        plugin = get(name)
        if isinstance(plugin, PreFilter):
            plugins.pre_filters.append(plugin)
        if isinstance(plugin, MaskFilter):
            plugins.mask_filters.append(plugin)
        if isinstance(plugin, NodeFilter):
            plugins.node_filters.append(plugin)
        if isinstance(plugin, ReservePlugin):
            plugins.reservers.append(plugin)
        if isinstance(plugin, PodReader):
            plugins.readers.append(plugin)
    for name, weight in sorted(profile.score_weights.items()):
        plugin = get(name)
        if weight > 0 and isinstance(plugin, ScorePlugin):
            plugins.scorers.append((plugin, weight))
    plugins.versioned_readers = versioned(plugins.readers)
    return plugins


class Scheduler:
    """Places pods on the nodes of a ClusterState with the profiles it was given."""

    def __init__(
        self,
        state: ClusterState,
        profiles: Mapping[str, Profile] | None = None,
        *,
        fallback: str | None = None,
        seed: int = 0,
    ) -> None:
        """`fallback` names the profile for pods whose schedulerName has none (None: such pods fail);
        `seed` varies the tie-breaks among equally scored nodes (see `allot.scheduling.tie_break`)."""
        self.state = state
        self.profiles = dict(profiles) if profiles else {DEFAULT_SCHEDULER_NAME: Profile()}
        self.fallback = fallback
        self.seed = seed
        self._plugins: dict[str, ProfilePlugins] = {}
        self._classes = EquivalenceClasses()
        self._next_start = 0
        self._node_hashes: tuple[int, KeyArray] | None = None
        # Nodes held for waiting work (allot.engine.reserve): the pods that may not use them now.
        self.holds: Holds | None = None

    def plugins(self, scheduler_name: str) -> ProfilePlugins | None:
        if scheduler_name not in self._plugins:
            profile = self.profiles.get(scheduler_name)
            if profile is None and self.fallback is not None:
                profile = self.profiles.get(self.fallback)
            if profile is None:
                return None
            self._plugins[scheduler_name] = _instantiate(profile)
        return self._plugins[scheduler_name]

    def profile_of(self, pod_key: str) -> Profile | None:
        """The profile that schedules the pod (None: no profile for its schedulerName)."""
        plugins = self.plugins(self.state.pods[pod_key].pod.spec.scheduler_name)
        return plugins.profile if plugins is not None else None

    def preemption_frees_devices(self, pod_key: str) -> bool:
        """Whether preempting for the pod may count its victims' devices as freed (allot's default);
        False where its profile's DynamicResources says `preemptForDevices: false`, as kube-scheduler."""
        profile = self.profile_of(pod_key)
        return profile is None or profile.preempts_for_devices

    def pre_filtered_before(self, pod_key: str, plugin: str, later: str) -> bool:
        """Whether the pod's profile runs `plugin`'s pre-filter before `later`'s (both enabled).
        kube-scheduler stops at the first pre-filter that rejects a pod as unresolvable, so the
        later plugin then never saw the pod."""
        plugins = self.plugins(self.state.pods[pod_key].pod.spec.scheduler_name)
        if plugins is None:
            return False
        names = [p.name for p in plugins.pre_filters]
        return plugin in names and later in names and names.index(plugin) < names.index(later)

    def runs_preemption(self, pod_key: str) -> bool:
        """Whether the pod's profile enables DefaultPreemption (at postFilter)."""
        profile = self.profile_of(pod_key)
        return profile is not None and profile.preemption

    def equivalence_class(self, pod_key: str) -> bytes | None:
        """Pods of one class succeed or fail alike (see `allot.scheduling.equivalence`); None: no class."""
        info = self.state.pods[pod_key]
        plugins = self.plugins(info.pod.spec.scheduler_name)
        if plugins is None:
            return None
        return self._classes.of(self.state, info, plugins.readers, plugins.versioned_readers)

    def place(self, pod_key: str, *, allowed: BoolArray | None = None, allowed_reason: str = "") -> Outcome:
        """Where the pod would go now; changes nothing."""
        filtered = self._filtered(pod_key, allowed, allowed_reason)
        if isinstance(filtered, Unschedulable):
            return filtered
        cycle, plugins, feasible = filtered
        state = self.state
        scores = self._scores(cycle, plugins, feasible)
        for position in self._ranked(pod_key, feasible, scores):
            index = int(feasible[position])
            refused = next(
                (s for s in (r.reserve(cycle, index) for r in plugins.reservers) if not s.ok), None
            )
            if refused is None:
                node = state.nodes.infos[index].name
                return Placement(
                    pod_key,
                    node,
                    dict(cycle.allocations),
                    float(scores[position]),
                    new_claims=dict(cycle.new_claims),
                    served_by_claims=cycle.served_by_claims,
                    extended=cycle.extended,
                    volumes=tuple(cycle.volumes),
                )
            cycle.allocations.clear()
            cycle.new_claims.clear()
            cycle.extended = None
            cycle.volumes.clear()
            # The node passed the filters but a plugin refused to reserve it: that is its reason.
            cycle.node_statuses[index] = refused
        names = {
            state.nodes.infos[int(i)].name: cycle.node_statuses.get(int(i), Status(Code.ERROR))
            for i in feasible
        }
        return Unschedulable(pod_key, Diagnosis(state.nodes.size, names))

    def _filtered(
        self, pod_key: str, allowed: BoolArray | None = None, allowed_reason: str = ""
    ) -> Unschedulable | tuple[Cycle, ProfilePlugins, IntArray]:
        """The pod's cycle after pre-filters and filters, with the nodes that passed them (or why
        none did)."""
        state = self.state
        info = state.pods[pod_key]
        total = state.nodes.size
        plugins = self.plugins(info.pod.spec.scheduler_name)
        if plugins is None:
            status = unresolvable("", f"no scheduler profile named {info.pod.spec.scheduler_name!r}")
            return Unschedulable(pod_key, Diagnosis(total, pre_filter=status))
        if total == 0 and not info.missing:
            # kube-scheduler looks for nodes before it runs a plugin; a pod whose claims are missing
            # never got that far (its PreEnqueue kept it out of the queue).
            return Unschedulable(pod_key, Diagnosis(0))
        cycle = Cycle(state, info)
        for pre in plugins.pre_filters:
            status = pre.pre_filter(cycle)
            if not status.ok:
                return Unschedulable(pod_key, Diagnosis(total, pre_filter=status))

        # Mask filters: every node at once.
        rejections: list[tuple[str, Rejection]] = []
        candidates = np.ones(total, dtype=np.bool_)
        if allowed is not None:
            outside = candidates & ~allowed
            if outside.any():
                rejections.append(
                    ("", Rejection(allowed_reason or "node(s) not allowed", outside, Code.UNRESOLVABLE))
                )
            candidates &= allowed
        if cycle.eligible is not None:
            outside = candidates & ~cycle.eligible
            if outside.any():
                rejections.append((cycle.narrowed_by[0], _narrowed(cycle, outside)))
            candidates &= cycle.eligible
        held = self.holds.held_from(pod_key) if self.holds is not None else None
        if held is not None and (candidates & held).any():
            rejections.append(("", Rejection(HELD_REASON, candidates & held, Code.UNRESOLVABLE)))
            candidates &= ~held
        for mask_filter in plugins.mask_filters:
            found = mask_filter.filter_mask(cycle, candidates)
            for rejection in found:
                rejections.append((mask_filter.name, rejection))
                candidates &= ~rejection.nodes
            if found and not candidates.any():
                break

        feasible = self._node_filter(cycle, plugins, np.flatnonzero(candidates).astype(np.int64))
        if feasible.size == 0:
            statuses = NodeStatuses(rejections, cycle.node_statuses, state.nodes.infos)
            return Unschedulable(pod_key, Diagnosis(total, statuses))

        return cycle, plugins, feasible

    @staticmethod
    def _scores(cycle: Cycle, plugins: ProfilePlugins, feasible: IntArray) -> FloatArray:
        scores = np.zeros(feasible.size, dtype=np.float64)
        for scorer, weight in plugins.scorers:
            scores += weight * scorer.score(cycle, feasible)
        return scores

    def node_scores(self, pod_key: str) -> dict[str, float]:
        """Every node the pod passes the filters on now, with its total score, as `place` ranks
        them (before reserve; empty where none passes). Changes nothing: it tells which nodes tie
        at the top, to explain a choice rather than make one."""
        filtered = self._filtered(pod_key)
        if isinstance(filtered, Unschedulable):
            return {}
        cycle, plugins, feasible = filtered
        scores = self._scores(cycle, plugins, feasible)
        infos = self.state.nodes.infos
        return {infos[int(i)].name: float(v) for i, v in zip(feasible, scores, strict=True)}

    def fits_on(self, pod_key: str, index: int) -> bool:
        """Whether the pod passes every filter on node `index` now (scores and reserve are not run,
        so this may say yes where reserving would fail, never the reverse); changes nothing."""
        info = self.state.pods[pod_key]
        plugins = self.plugins(info.pod.spec.scheduler_name)
        if plugins is None:
            return False
        held = self.holds.held_from(pod_key) if self.holds is not None else None
        if held is not None and held[index]:
            return False
        cycle = Cycle(self.state, info)
        if not all(pre.pre_filter(cycle).ok for pre in plugins.pre_filters):
            return False
        if cycle.eligible is not None and not cycle.eligible[index]:
            return False
        candidates = np.zeros(self.state.nodes.size, dtype=np.bool_)
        candidates[index] = True
        for mask_filter in plugins.mask_filters:
            for rejection in mask_filter.filter_mask(cycle, candidates):
                if rejection.nodes[index]:
                    return False
        return all(f.filter_node(cycle, index).ok for f in plugins.node_filters if f.needs_node_filter(cycle))

    def bind_on(self, pod_key: str, index: int) -> bool:
        """Bind the pod on node `index` if it fits there (journaled, for what-ifs; the rotation of
        node filtering is left as it was)."""
        mask = np.zeros(self.state.nodes.size, dtype=np.bool_)
        mask[index] = True
        with self.kept_rotation():
            outcome = self.place(pod_key, allowed=mask)
        if isinstance(outcome, Placement):
            self._bind(pod_key, outcome)
            return True
        return False

    @contextmanager
    def kept_rotation(self) -> Iterator[None]:
        """Placements tried inside leave the rotation of node filtering as it was (what-ifs)."""
        start = self._next_start
        try:
            yield
        finally:
            self._next_start = start

    def node_hashes(self) -> KeyArray:
        """Every node's name hash, by index (see `allot.scheduling.tie_break`)."""
        table = self.state.nodes
        cached = self._node_hashes
        if cached is None or cached[0] != table.size:
            cached = self._node_hashes = (table.size, node_hashes(info.name for info in table.infos))
        return cached[1]

    def tie_keys(self, pod_key: str, nodes: IntArray) -> KeyArray:
        """The pod's tie-break key on each of `nodes` (lower wins among equals)."""
        return tie_keys(pod_hash(self.seed, pod_key), self.node_hashes()[nodes])

    def _ranked(self, pod_key: str, feasible: IntArray, scores: FloatArray) -> Iterator[int]:
        """Positions in `feasible`, best score first, equal scores in the pod's tie-break order.

        The first answer needs keys only for the nodes tied at the top; the full order is built
        only if reserve refuses that node.
        """
        top = np.flatnonzero(scores == scores.max())
        first = int(top[0])
        if top.size > 1:
            first = int(top[np.argmin(self.tie_keys(pod_key, feasible[top]))])
        yield first
        if feasible.size == 1:
            return
        order = np.lexsort((feasible, self.tie_keys(pod_key, feasible), -scores))
        for position in order:
            if int(position) != first:
                yield int(position)

    def _node_filter(self, cycle: Cycle, plugins: ProfilePlugins, candidates: IntArray) -> IntArray:
        active = [f for f in plugins.node_filters if f.needs_node_filter(cycle)]
        if not active or candidates.size == 0:
            return candidates
        total = self.state.nodes.size
        wanted = plugins.profile.feasible_nodes_to_find(total)
        start = self._next_start % max(total, 1)
        rotated = np.concatenate((candidates[candidates >= start], candidates[candidates < start]))
        feasible: list[int] = []
        processed = 0
        for raw in rotated:
            index = int(raw)
            processed += 1
            for node_filter in active:
                status = node_filter.filter_node(cycle, index)
                if not status.ok:
                    cycle.node_statuses[index] = status
                    break
            else:
                feasible.append(index)
                if len(feasible) >= wanted:
                    break
        self._next_start = (start + processed) % max(total, 1)
        return np.array(sorted(feasible), dtype=np.int64)

    def schedule(
        self, pod_key: str, *, allowed: BoolArray | None = None, allowed_reason: str = ""
    ) -> Outcome:
        """Place the pod and bind it (journaled, so a surrounding transaction can undo it)."""
        outcome = self.place(pod_key, allowed=allowed, allowed_reason=allowed_reason)
        if isinstance(outcome, Placement):
            self._bind(pod_key, outcome)
        return outcome

    def _bind(self, pod_key: str, placement: Placement) -> None:
        for entry, claim in placement.new_claims.items():
            self.state.attach_claim(pod_key, entry, claim)
        self.state.bind(
            pod_key,
            placement.node,
            placement.allocations,
            served_by_claims=placement.served_by_claims,
            volumes=placement.volumes,
            extended=placement.extended,
        )

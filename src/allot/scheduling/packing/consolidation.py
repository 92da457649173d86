"""Consolidation: place a unit that fits nowhere by moving a few running pods to other nodes.

A gang or a large pod that fits no node as the cluster stands may fit one
if some pods there ran elsewhere: eight free GPUs spread over four nodes
become one free node when three one-GPU pods move. `Consolidator.place`
looks for such moves for the pods of one unit, inside the caller's
transaction (the caller commits or rolls back):

1. Each member is placed normally when it fits; otherwise:
2. candidate nodes are those the member failed on for resolvable reasons
   (room, devices) that hold a movable pod (the caller decides what is
   movable: pods of one-pod units, of no higher priority, not already moved
   or placed in this consolidation), most free GPUs first, at most
   `max_nodes` of them;
3. on each candidate, the fewest movable pods whose leaving lets the
   member fit (filters only; sets tried smallest first, then fewest GPUs,
   then the most recently started, since they lose the least work);
4. candidates are taken in order of fewest moves, then fewest GPUs moved,
   then the pod's tie-break order: the member is placed on the node and
   each pod taken off must be placed on another node, as the scheduler
   would place it; the first candidate where all of that works is kept.
   A set that holds a pod that could run on no other node as the cluster
   stands is not tried (it would fail), nor is a node whose movable pods
   are all such pods (`_Relocatable`, one placement per class of pods).

The unit is placed only if every member is, within `max_moves` moves in
all, and only if the GPUs placed grow strictly (moving work around to place
CPU-only pods is not worth a restart). Moved pods keep running elsewhere:
no tenant holds less than before, so a move never pushes one below its
fair share. Everything tried is rolled back, the scheduler's node rotation
included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.scheduling.framework import BoolArray
from allot.scheduling.hints import depends_on_other_nodes
from allot.scheduling.node_statuses import NodeStatuses
from allot.scheduling.packing.occupancy import PLUGIN_GPU_RESOURCE, GpuOccupancy
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from allot.scheduling.status import Code
from allot.scheduling.topology.places import KIND_BY_DRIVER

MOVE_REASON = "moved to node {node} to make room for {unit} (consolidation)"
# Victim sets tried per candidate node before falling back to largest first.
MAX_CHECKS = 24


@dataclass(frozen=True, slots=True)
class Move:
    """A running pod taken off `source` and placed again by `placement`."""

    pod: str
    source: str
    placement: Placement

    def reason(self, unit: str) -> str:
        return MOVE_REASON.format(node=self.placement.node, unit=unit)


@dataclass(frozen=True, slots=True)
class Consolidation:
    """The unit's pods placed, and the moves that made room for them, in the order they were made."""

    placements: tuple[Placement, ...]
    moves: tuple[Move, ...]


class Consolidator:
    """Finds and makes the moves (see the module docstring)."""

    def __init__(
        self,
        scheduler: Scheduler,
        occupancy: Callable[[], GpuOccupancy],
        *,
        max_moves: int = 8,
        max_nodes: int = 16,
    ) -> None:
        self.scheduler = scheduler
        self.occupancy = occupancy
        self.max_moves = max_moves
        self.max_nodes = max_nodes
        # Running pods' equivalence classes as pending pods: pod key -> (the pod record, its class).
        self._classes: dict[str, tuple[object, bytes | None]] = {}

    @property
    def state(self) -> ClusterState:
        return self.scheduler.state

    def place(
        self,
        members: Sequence[str],
        movable: Callable[[PodInfo], bool],
        *,
        budget: int | None = None,
        allowed: BoolArray | None = None,
    ) -> Consolidation | None:
        """Place every member, moving at most `budget` (default `max_moves`) pods; None if that cannot be
        done. Changes are made in the caller's transaction; on None the caller rolls back."""
        budget = self.max_moves if budget is None else min(budget, self.max_moves)
        occupancy = self.occupancy()
        size = self.state.nodes.size
        pods = self.state.pods
        # Moves do not make GPUs: fewer untouched GPUs than the unit needs, and nothing can be done.
        need = sum(occupancy.whole_need(pods[m]) for m in members)
        room = sum(max(occupancy.untouched_for(pods[m], i) for m in members) for i in range(size))
        if need and room < need:
            return None
        free_before = sum(occupancy.free(i) for i in range(size))
        placements: list[Placement] = []
        moves: list[Move] = []
        touched: set[str] = set(members)
        with self.scheduler.kept_rotation():
            for member in members:
                outcome = self.scheduler.schedule(member, allowed=allowed)
                if isinstance(outcome, Placement):
                    placements.append(outcome)
                    continue
                found = self._make_room(member, outcome, movable, touched, budget - len(moves), allowed)
                if found is None:
                    return None
                placement, made = found
                placements.append(placement)
                moves.extend(made)
                touched.update(m.pod for m in made)
        if not moves:
            return None  # everything fitted as it was: no consolidation needed
        if sum(occupancy.free(i) for i in range(size)) >= free_before - 1e-9:
            return None
        return Consolidation(tuple(placements), tuple(moves))

    def _candidates(
        self, outcome: Unschedulable, movable: Callable[[PodInfo], bool], touched: set[str]
    ) -> list[tuple[int, list[PodInfo]]]:
        state = self.state
        statuses = outcome.diagnosis.node_statuses
        if outcome.diagnosis.pre_filter is not None:
            return []
        if isinstance(statuses, NodeStatuses):
            indices = statuses.indices_with(Code.UNSCHEDULABLE)
        else:
            by_name = state.nodes.index
            indices = sorted(by_name[name] for name, s in statuses.items() if s.code == Code.UNSCHEDULABLE)
        occupancy = self.occupancy()
        need = occupancy.whole_need(state.pods[outcome.pod_key])
        found: list[tuple[float, int, list[PodInfo]]] = []
        for index in indices:
            victims = [p for p in state.pods_on(index) if p.key not in touched and movable(p)]
            # Each GPU device a victim holds frees at most one GPU.
            room = occupancy.untouched_for(state.pods[outcome.pod_key], index)
            if victims and room + sum(_gpus(state, v.key) for v in victims) >= need:
                found.append((-occupancy.free(index), index, victims))
        found.sort(key=lambda item: (item[0], item[1]))
        return [(index, victims) for _, index, victims in found[: self.max_nodes]]

    def _make_room(
        self,
        member: str,
        outcome: Unschedulable,
        movable: Callable[[PodInfo], bool],
        touched: set[str],
        budget: int,
        allowed: BoolArray | None,
    ) -> tuple[Placement, list[Move]] | None:
        if budget <= 0:
            return None
        candidates = self._candidates(outcome, movable, touched)
        if not candidates:
            return None
        nodes = np.array([index for index, _ in candidates], dtype=np.int64)
        ties = dict(zip(nodes.tolist(), self.scheduler.tie_keys(member, nodes).tolist(), strict=True))
        # A pod that could run on no other node as the cluster stands cannot be moved out: a node
        # where every victim is such a pod, or a set that holds one, would fail when moved.
        relocatable = _Relocatable(self.scheduler, allowed, self._classes)
        helped_only = self._only_helped_by_leaving(member)
        options: list[tuple[tuple[int, int, int], int, list[PodInfo]]] = []
        for index, victims in candidates:
            if not any(relocatable(v) for v in victims):
                continue
            chosen = self._fewest(member, index, victims, budget, helped_only=helped_only)
            if chosen is not None and all(relocatable(v) for v in chosen):
                gpus = sum(_gpus(self.state, v.key) for v in chosen)
                options.append(((len(chosen), gpus, ties[index]), index, chosen))
        options.sort(key=lambda option: option[0])
        journal = self.state.journal
        for _, index, chosen in options:
            with journal.transaction() as tx:
                made = self._move_out(member, index, chosen, allowed)
                if made is not None:
                    tx.commit()
                    return made
        return None

    def _fewest(
        self, member: str, index: int, victims: list[PodInfo], budget: int, *, helped_only: bool = False
    ) -> list[PodInfo] | None:
        """The fewest victims whose leaving lets `member` fit node `index` (then the fewest GPUs, then
        the most recently started); None when even all of them (or `budget` of them) are not enough.

        Sets are tried smallest first, at most `MAX_CHECKS` of them; past that, the largest victims
        are taken off one by one until the member fits."""
        state = self.state
        journal = state.journal
        scheduler = self.scheduler
        gpus = {v.key: _gpus(state, v.key) for v in victims}
        occupancy = self.occupancy()
        info = state.pods[member]
        # Each victim frees at most the GPUs it holds: a set that cannot free the untouched GPUs the
        # member lacks fails without asking the filters (counted as a check all the same).
        short = occupancy.whole_need(info) - occupancy.untouched_for(info, index)

        def too_few_gpus(removed: Sequence[PodInfo]) -> bool:
            return short > 0 and sum(gpus[v.key] for v in removed) < short

        def fits_without(removed: Sequence[PodInfo]) -> bool:
            with journal.transaction():
                for victim in removed:
                    state.unbind(victim.key)
                return scheduler.fits_on(member, index)

        # Whether the member fits with every victim gone decides first: None if not. Where taking
        # pods off the node can only help the member (`helped_only`, see `_only_helped_by_leaving`),
        # a smaller set that fits answers that question too, so it is put to the filters only once
        # they refuse a set (a node where nothing helps costs one check more, not every set).
        everyone = list(victims)
        everyone_fits: list[bool] = []

        def fits_without_everyone() -> bool:
            if not everyone_fits:
                everyone_fits.append(fits_without(everyone))
            return everyone_fits[0]

        if too_few_gpus(everyone) or (not helped_only and not fits_without_everyone()):
            return None

        def fits(removed: Sequence[PodInfo]) -> bool | None:
            """Whether it fits without `removed`; None when it cannot fit even without every victim."""
            if too_few_gpus(removed):
                return False
            if fits_without(removed):
                return True
            return False if fits_without_everyone() else None

        checks = 1
        limit = min(budget, len(victims))
        for size in range(1, limit + 1):
            sets = sorted(
                combinations(victims, size),
                key=lambda c: (sum(gpus[v.key] for v in c), [-v.started for v in c], [v.key for v in c]),
            )
            for chosen in sets:
                if size == len(victims):
                    return list(chosen) if fits_without_everyone() else None
                if checks >= MAX_CHECKS:
                    break
                checks += 1
                fitted = fits(chosen)
                if fitted is None:
                    return None
                if fitted:
                    return list(chosen)
            if checks >= MAX_CHECKS:
                break
        # Too many sets to try: the largest first until it fits.
        taken: list[PodInfo] = []
        for victim in sorted(victims, key=lambda v: (-gpus[v.key], -v.started, v.key)):
            taken.append(victim)
            if len(taken) > budget:
                return None
            fitted = fits(taken)
            if fitted is None:
                return None
            if fitted:
                return taken
        return None

    def _only_helped_by_leaving(self, member: str) -> bool:
        """Whether pods leaving a node can only help `member` fit there: it asks for no pod
        affinity, spreading or volumes, no bound pod has required anti-affinity, and none of its
        claims is allocated (a shared claim a victim holds would be released with it)."""
        state = self.state
        info = state.pods[member]
        if depends_on_other_nodes(self.scheduler, member):
            return False
        return all(claim.status.allocation is None for claim in state.pod_claims(info))

    def _move_out(
        self, member: str, index: int, chosen: list[PodInfo], allowed: BoolArray | None
    ) -> tuple[Placement, list[Move]] | None:
        """Take `chosen` off node `index`, place `member` there and `chosen` elsewhere (in the caller's
        transaction); None if any does not fit."""
        state = self.state
        scheduler = self.scheduler
        for victim in chosen:
            state.unbind(victim.key)
        here = np.zeros(state.nodes.size, dtype=np.bool_)
        here[index] = True
        placement = scheduler.schedule(member, allowed=here)
        if not isinstance(placement, Placement):
            return None
        source = state.nodes.infos[index].name
        elsewhere = ~here if allowed is None else allowed & ~here
        moves: list[Move] = []
        for victim in chosen:
            again = scheduler.schedule(victim.key, allowed=elsewhere)
            if not isinstance(again, Placement):
                return None
            moves.append(Move(victim.key, source, again))
        return placement, moves


def _gpus(state: ClusterState, pod_key: str) -> int:
    """GPUs the pod holds: devices of GPU drivers in its claims, and device-plugin GPUs (for ordering
    moves: the fewer, the cheaper)."""
    info = state.pods[pod_key]
    count = int(info.requests.get(PLUGIN_GPU_RESOURCE, 0))
    for claim in state.pod_claims(info):
        allocation = claim.status.allocation
        if allocation is None:
            continue
        count += sum(1 for r in allocation.devices.results if KIND_BY_DRIVER.get(r.driver) == "gpu")
    return count


class _Relocatable:
    """Whether a running pod could be placed on another node than its own as the cluster stands
    (and so, at best, after a member takes its node): moving out one that cannot fails. Each pod
    is judged once per search.

    Pods of one equivalence class fit the same nodes, so a node found for one is a node for the
    others on other nodes. That none was found but the one it was tried from answers for the
    others (only that node is left to check) where no pod on another node could change that:
    the class is kept from no node by pods elsewhere (affinity, spreading, anti-affinity), and
    neither pod holds devices other nodes could use. A pod is judged not relocatable only by a
    placement of its own or by that reasoning."""

    _LIMIT = 100_000

    def __init__(
        self, scheduler: Scheduler, allowed: BoolArray | None, classes: dict[str, tuple[object, bytes | None]]
    ) -> None:
        self.scheduler = scheduler
        self.allowed = allowed
        self._classes = classes
        # class -> (the node a placement found, or None; the node it was tried from; whether
        # pods elsewhere could not have changed that)
        self._found: dict[bytes, tuple[int | None, int, bool]] = {}
        self._judged: dict[str, bool] = {}

    def _class_of(self, info: PodInfo) -> bytes | None:
        """The pod's class were it pending (its claims released): found once per pod record."""
        known = self._classes.get(info.key)
        if known is not None and known[0] is info.pod:
            return known[1]
        state = self.scheduler.state
        with state.journal.transaction():  # rolled back: the pod stays where it is
            state.unbind(info.key)
            klass = self.scheduler.equivalence_class(info.key)
        if len(self._classes) >= self._LIMIT:
            self._classes.clear()
        self._classes[info.key] = (info.pod, klass)
        return klass

    def __call__(self, info: PodInfo) -> bool:
        judged = self._judged.get(info.key)
        if judged is None:
            judged = self._judged[info.key] = self._judge(info)
        return judged

    def _judge(self, info: PodInfo) -> bool:
        home = info.node
        if home is None:
            return False
        klass = self._class_of(info)
        known = self._found.get(klass) if klass is not None else None
        if known is not None and known[0] is not None and known[0] != home:
            return True
        scheduler = self.scheduler
        state = scheduler.state
        local = not state.frees_devices_beyond_node(info.key)
        with state.journal.transaction():  # rolled back: the pod stays where it is
            state.unbind(info.key)
            if known is not None and known[0] is None and known[1] != home and known[2] and local:
                # Every node but known[1] was tried (in the same state but for `home`, which this
                # pod leaves and may not use).
                tried_from = known[1]
                return self._allows(tried_from) and scheduler.fits_on(info.key, tried_from)
            local = local and not depends_on_other_nodes(scheduler, info.key)
            elsewhere = (
                np.ones(state.nodes.size, dtype=np.bool_) if self.allowed is None else self.allowed.copy()
            )
            elsewhere[home] = False
            with scheduler.kept_rotation():
                outcome = scheduler.place(info.key, allowed=elsewhere)
            found = state.nodes.index[outcome.node] if isinstance(outcome, Placement) else None
        if klass is not None:
            self._found[klass] = (found, home, local)
        return found is not None

    def _allows(self, index: int) -> bool:
        return self.allowed is None or bool(self.allowed[index])

"""Topology Aware Scheduling for gangs, as Kueue does it: one domain of a Topology level, BestFit.

Pods of a gang ask for a level with Kueue's annotations, the value being a
node label that is one of the Topology's levels:

* `kueue.x-k8s.io/podset-required-topology`: every pod in one domain of
  that level (one rack), or none is placed;
* `kueue.x-k8s.io/podset-preferred-topology`: one domain of that level if
  any fits, else one domain of the next level up, and so on; finally the
  pods may spread over the whole topology.

How many gang pods a domain can take is found by trial: the pods are
placed, restricted to the domain's nodes, inside a transaction that is
rolled back (then copies of the first pod, to see how much room is left).
This is the real scheduler deciding, DRA devices and all, not arithmetic.
Among the domains that fit, Kueue's BestFit takes the one with the least
room left (ties by name), so large domains stay free for large gangs;
below the chosen domain, pods go to the children with the most room first
and the last child is the one that leaves the least room (KEP example:
room 3, 3, 2, 1 and 7 pods -> 3 + 3 + 1). Pods are then placed for real,
domain by domain, in one transaction committed only if the whole gang
fits. When nothing fits, the reason says how far each domain got:
"no rack has room for 8 pods: rack-a 5, rack-b 3".

Entry point for the engine: `place_gang_in_topology(state, scheduler,
gang, topology)`; `topology_request(state, gang)` says whether a gang asks
for a level at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from msgspec.structs import replace

from allot.cluster.state import ClusterState
from allot.model.core import PodStatus
from allot.model.kueue import (
    PODSET_PREFERRED_TOPOLOGY_ANNOTATION,
    PODSET_REQUIRED_TOPOLOGY_ANNOTATION,
    Topology,
)
from allot.scheduling.framework import BoolArray
from allot.scheduling.gang import Gang, GangPlacement, GangUnschedulable
from allot.scheduling.scheduler import Outcome, Placement, Scheduler
from allot.scheduling.topology.domains import Domain, Domains, describe_counts, level_noun

# Places one pod, restricted to the nodes in the mask; `reason` explains the restriction.
ScheduleOne = Callable[[str, BoolArray, str], Outcome]


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """A gang's topology ask: a level (node label) and whether it is required or preferred."""

    level: str
    required: bool


@dataclass(frozen=True, slots=True)
class TopologyGangPlacement(GangPlacement):
    """A placed gang and the domain it went to (label values, outermost first; () = spread)."""

    level: str = ""
    domain: Domain = ()


def topology_request(state: ClusterState, gang: Gang) -> TopologyRequest | None:
    """The gang's topology ask from its pods' annotations (required wins); None if none asks."""
    preferred: str | None = None
    for key in gang.members:
        annotations = state.pods[key].pod.metadata.annotations
        required = annotations.get(PODSET_REQUIRED_TOPOLOGY_ANNOTATION)
        if required:
            return TopologyRequest(required, True)
        preferred = preferred or annotations.get(PODSET_PREFERRED_TOPOLOGY_ANNOTATION)
    return TopologyRequest(preferred, False) if preferred else None


def best_fit(room: Sequence[tuple[Domain, int]], count: int) -> list[tuple[Domain, int]] | None:
    """Kueue's BestFit split of `count` pods over domains with the given room; None if they hold fewer."""
    if sum(r for _, r in room) < count:
        return None
    left = sorted(room, key=lambda item: (-item[1], item[0]))
    split: list[tuple[Domain, int]] = []
    remaining = count
    while remaining > 0:
        fitting = [item for item in left if item[1] >= remaining]
        if fitting:
            domain, _ = min(fitting, key=lambda item: (item[1], item[0]))
            split.append((domain, remaining))
            break
        domain, capacity = left.pop(0)
        if capacity > 0:
            split.append((domain, capacity))
            remaining -= capacity
    return split


class _Placer:
    """One gang's placement attempt over one Topology."""

    def __init__(
        self,
        state: ClusterState,
        scheduler: Scheduler,
        gang: Gang,
        domains: Domains,
        schedule_one: ScheduleOne,
    ) -> None:
        self.state = state
        self.scheduler = scheduler
        self.gang = gang
        self.domains = domains
        self.schedule_one = schedule_one
        # Every pending member is placed (Kueue pod groups need all their pods).
        self.pending = [key for key in gang.members if not state.pods[key].bound]
        self.need = len(self.pending)
        self._probes = 0

    def _trial(self, key: str, mask: BoolArray) -> bool:
        outcome = self.scheduler.schedule(key, allowed=mask, allowed_reason="outside the topology domain")
        return isinstance(outcome, Placement)

    def room(self, domain: Domain, members: Sequence[str], extra: int = 0) -> int:
        """How many of `members` (then up to `extra` copies of the first) the domain takes; changes nothing."""
        mask = self.domains.mask(domain)
        placed = 0
        with self.state.journal.transaction():
            for key in members:
                if not self._trial(key, mask):
                    return placed
                placed += 1
            template = self.state.pods[members[0]].pod if members else None
            for _ in range(extra if template is not None else 0):
                assert template is not None
                self._probes += 1
                name = f"{template.name}-tas-probe-{self._probes}"
                # A fresh pod: no status, so template claims are generated anew, not shared.
                clone = replace(
                    template, metadata=replace(template.metadata, name=name, uid=""), status=PodStatus()
                )
                if not self._trial(self.state.add_pod(clone).key, mask):
                    break
                placed += 1
        return placed

    def place(self, domain: Domain, level: int, members: Sequence[str], placements: list[Placement]) -> bool:
        """Place `members` inside `domain` (at `level`), children by BestFit; False leaves partial work."""
        last = len(self.domains.levels) - 1
        if level < last:
            children = self.domains.at(level + 1, domain)
            room = [(child, self.room(child, members)) for child in children]
            split = best_fit(room, len(members))
            if split is not None:
                start = 0
                with self.state.journal.transaction() as tx:
                    done: list[Placement] = []
                    for child, count in split:
                        if not self.place(child, level + 1, members[start : start + count], done):
                            break
                        start += count
                    else:
                        tx.commit()
                        placements.extend(done)
                        return True
        # The leaf level, or the children's room did not add up: let the scheduler pick inside the domain.
        mask = self.domains.mask(domain)
        reason = f"outside {self.domains.describe(domain)}"
        for key in members:
            outcome = self.schedule_one(key, mask, reason)
            if not isinstance(outcome, Placement):
                return False
            placements.append(outcome)
        return True

    def attempt(
        self, level: int, candidates: Sequence[Domain]
    ) -> tuple[TopologyGangPlacement | None, dict[Domain, int]]:
        """The gang in one domain of `candidates` (BestFit), or how many pods each took."""
        room = {d: self.room(d, self.pending, extra=len(self.pending)) for d in candidates}
        fitting = sorted((d for d in candidates if room[d] >= self.need), key=lambda d: (room[d], d))
        for domain in fitting:
            placements: list[Placement] = []
            with self.state.journal.transaction() as tx:
                if self.place(domain, level, self.pending, placements):
                    tx.commit()
                    label = self.domains.levels[level] if level >= 0 else ""
                    return TopologyGangPlacement(self.gang.key, tuple(placements), label, domain), room
        return None, room


def place_gang_in_topology(
    state: ClusterState,
    scheduler: Scheduler,
    gang: Gang,
    topology: Topology,
    *,
    request: TopologyRequest | None = None,
    allowed: BoolArray | None = None,
    schedule_one: ScheduleOne | None = None,
) -> TopologyGangPlacement | GangUnschedulable:
    """Place every pending member of `gang` inside one domain of `topology`, or none of them.

    `request` defaults to the members' annotations (`topology_request`);
    without any, the gang may spread over the whole topology. `allowed`
    restricts the nodes further (a Kueue flavor's nodes). `schedule_one`
    places one pod inside a node mask for real (default: the scheduler's
    `schedule`; the engine may pass one that preempts); room is measured
    with the plain scheduler. Commits into any enclosing transaction on
    success; on failure nothing of it remains.
    """
    if not gang.complete:
        missing = gang.declared - len(gang.members)
        return GangUnschedulable(gang.key, f"waiting for {missing} more pod(s) of group {gang.key}")
    request = request if request is not None else topology_request(state, gang)
    domains = Domains(state, topology, allowed)

    def default_one(key: str, mask: BoolArray, reason: str) -> Outcome:
        return scheduler.schedule(key, allowed=mask, allowed_reason=reason)

    placer = _Placer(state, scheduler, gang, domains, schedule_one or default_one)
    if request is None:
        levels: list[int] = []
    else:
        index = domains.level_index(request.level)
        if index is None:
            known = ", ".join(domains.levels)
            return GangUnschedulable(
                gang.key,
                f"pod group {gang.key}: topology {topology.name} has no level {request.level} (levels: {known})",
            )
        levels = [index] if request.required else list(range(index, -1, -1))
    first_room: dict[Domain, int] | None = None
    with state.journal.transaction() as tx:
        for level in levels:
            result, room = placer.attempt(level, _candidates(state, placer, domains, level))
            if first_room is None:
                first_room = room
            if result is not None:
                tx.commit()
                return result
        if request is None or not request.required:
            placements: list[Placement] = []
            if placer.place((), -1, placer.pending, placements):
                tx.commit()
                return TopologyGangPlacement(gang.key, tuple(placements), "", ())
    return GangUnschedulable(gang.key, _reason(gang, topology, request, placer, first_room or {}))


def _candidates(state: ClusterState, placer: _Placer, domains: Domains, level: int) -> list[Domain]:
    """The domains at `level`; only the one already holding members, if some are bound."""
    held = {
        domains.of(info.node, level)
        for key in placer.gang.members
        if (info := state.pods[key]).node is not None
    }
    if held:
        return sorted(d for d in held if d is not None) if len(held) == 1 else []
    return domains.at(level)


def _reason(
    gang: Gang,
    topology: Topology,
    request: TopologyRequest | None,
    placer: _Placer,
    room: dict[Domain, int],
) -> str:
    need = placer.need
    if request is None or not request.required or not room:
        where = f"topology {topology.name}"
        if room and request is not None:
            noun = level_noun(request.level)
            counts = describe_counts([(placer.domains.describe(d), min(r, need)) for d, r in room.items()])
            return f"pod group {gang.key}: {need} pods do not fit in {where} (per {noun}: {counts})"
        return f"pod group {gang.key}: {need} pods do not fit in {where}"
    noun = level_noun(request.level)
    counts = describe_counts([(placer.domains.describe(d), min(r, need)) for d, r in room.items()])
    return f"pod group {gang.key}: no {noun} has room for {need} pods: {counts}"

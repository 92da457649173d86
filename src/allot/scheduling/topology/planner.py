"""Proposes aligned device sets for a pod's requests on one node, best first.

The allocator only checks and takes what it is offered first; the planner
works out what is worth offering. For a unit with devices of several kinds
(GPU + NIC, GPU + NIC + CPU) it tries, in order:

1. `pcieRoot`: pick a set of PCIe roots, each with at least one free
   device of every PCIe kind asked for (so every GPU has its NIC under the
   same root and the other way round), as few roots as the counts allow,
   preferring roots on one NUMA node; NUMA-scoped requests (CPUs) then take
   devices on the NUMA nodes of those roots;
2. `numaNode`: the same with NUMA nodes as the domains;
3. `compact`: every request on its own, on as few NUMA nodes as possible.

Within each, devices that would break a free aligned GPU/NIC pair come
last: a pod that asks for a GPU alone gets a GPU whose NIC is already taken
when there is one, or one under a root with more free GPUs than NICs
(p4d's roots of two GPUs and one EFA), so the node stays alignable for the
pods that need it. CPUs asked for alone go to the NUMA node with the
fewest free GPUs and NICs, for the same reason.

A proposal (`Target`) is a device set plus its estimated alignment and
the pairs it breaks. The chooser offers proposals to the allocator (by
excluding every other candidate) in order; the node score uses the best
one's estimate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from allot.dra import DeviceId
from allot.scheduling.topology.alignment import Level, alignment_value, unit_alignment
from allot.scheduling.topology.places import PAIRED_KINDS
from allot.scheduling.topology.view import Need, NodeView, Slot

Domain = str | int
# The alignment value of a set whose every pair is as close as it can be (or that has nothing to align).
PERFECT = 3.0


@dataclass(frozen=True, slots=True)
class Target:
    """A proposed device set for the planned requests, with what it is worth."""

    devices: frozenset[DeviceId]
    level: Level | None  # None: one kind only, nothing to align
    score: float  # alignment score in [0, 1]; 1 when there is nothing to align
    broken: int  # free aligned GPU/NIC pairs this set breaks
    strategy: str

    @property
    def value(self) -> float:
        """Level first, then score: a NUMA-aligned set beats a partly root-aligned one across sockets."""
        return alignment_value(self.level, self.score)


def _breaks(slot: Slot, free_partner_roots: set[str]) -> bool:
    """Taking `slot` leaves a paired-kind partner under its root without a partner."""
    return slot.place.kind in PAIRED_KINDS and bool(slot.place.roots & free_partner_roots)


class _Planner:
    def __init__(self, view: NodeView) -> None:
        self.view = view
        self.needs = view.needs
        self.pairs_before = view.pairs()
        # Per paired kind, the roots that hold a free device of the *other* paired kinds.
        self.partner_roots: dict[str, set[str]] = {}
        for kind in PAIRED_KINDS:
            roots: set[str] = set()
            for slot in view.paired:
                if slot.place.kind != kind:
                    roots |= slot.place.roots
            self.partner_roots[kind] = roots
        # Free GPUs and NICs per NUMA node: CPUs taken alone go where the fewest are.
        self._paired_on_numa: Counter[int] = Counter(
            numa for slot in view.paired for numa in slot.place.numas
        )

    def breaks(self, slot: Slot) -> bool:
        return _breaks(slot, self.partner_roots.get(slot.place.kind, set()))

    def target(self, picks: Sequence[Slot], strategy: str) -> Target:
        alignment = unit_alignment([slot.place for slot in picks])
        devices = frozenset(slot.id for slot in picks)
        broken = max(0, self.pairs_before - self.view.pairs(devices))
        if alignment is None:
            return Target(devices, None, 1.0, broken, strategy)
        return Target(devices, alignment.level, alignment.score, broken, strategy)

    # -- aligned proposals ---------------------------------------------------------------

    def aligned(self, level: Level) -> list[Target]:
        """Proposals whose devices share PCIe roots (level PCIE) or NUMA nodes (level NUMA)."""
        if level is Level.PCIE:
            members = [n for n in self.needs if not _numa_scoped(n)]
            followers = [n for n in self.needs if _numa_scoped(n)]

            def domains_of(slot: Slot) -> Iterable[Domain]:
                return slot.place.roots
        else:
            members, followers = list(self.needs), []

            def domains_of(slot: Slot) -> Iterable[Domain]:
                return slot.place.numas

        if not members:
            return []
        kinds = sorted({n.kind for n in members})
        wanted = {k: sum(n.count for n in members if n.kind == k) for k in kinds}
        # Free candidates per domain and kind (a device listed once even if several requests may take it).
        table: dict[Domain, dict[str, list[Slot]]] = {}
        numa_of: dict[Domain, int] = {}
        for need in members:
            for slot in need.candidates:
                for domain in domains_of(slot):
                    bucket = table.setdefault(domain, {k: [] for k in kinds})[need.kind]
                    if slot not in bucket:
                        bucket.append(slot)
                    numa_of.setdefault(domain, min(slot.place.numas, default=-1))
        eligible = [d for d, per_kind in table.items() if all(per_kind[k] for k in kinds)]
        if not eligible:
            return []

        def richness(domain: Domain) -> int:
            return sum(min(len(table[domain][k]), wanted[k]) for k in kinds)

        def breaks(domain: Domain) -> bool:
            # Paired devices of kinds not asked for, left without a partner by taking this domain.
            return any(
                self.breaks(slot) for k in kinds if k in PAIRED_KINDS for slot in table[domain][k][:1]
            ) and not all(k in kinds for k in PAIRED_KINDS)

        order = sorted(eligible, key=lambda d: (-richness(d), breaks(d), str(d)))
        groups: dict[int, list[Domain]] = {}
        for domain in order:
            groups.setdefault(numa_of[domain], []).append(domain)
        # Best fit: the NUMA node with the least room that still fits goes first, so the
        # other sockets stay whole for larger aligned requests.
        attempts = [groups[numa] for numa in sorted(groups, key=lambda u: (sum(map(richness, groups[u])), u))]
        attempts.append(order)
        proposals: list[Target] = []
        for domains in attempts:
            picks = self._fill(domains, kinds, wanted, table, members)
            if picks is None:
                continue
            picks += self._followers(followers, picks)
            if len(picks) == sum(n.count for n in self.needs):
                proposals.append(self.target(picks, level.label))
                if level is Level.NUMA or len(proposals) > 1:
                    break
        return proposals

    def _fill(
        self,
        domains: Sequence[Domain],
        kinds: Sequence[str],
        wanted: dict[str, int],
        table: dict[Domain, dict[str, list[Slot]]],
        members: Sequence[Need],
    ) -> list[Slot] | None:
        # Each chosen domain must receive one device of every kind, so at most min(wanted) domains.
        limit = min(wanted.values())
        chosen: list[Domain] = []
        have = dict.fromkeys(kinds, 0)
        for domain in domains:
            if len(chosen) >= limit or all(have[k] >= wanted[k] for k in kinds):
                break
            chosen.append(domain)
            for k in kinds:
                have[k] += len(table[domain][k])
        if any(have[k] < wanted[k] for k in kinds):
            return None
        picks: list[Slot] = []
        used: set[DeviceId] = set()
        picked_roots: set[str] = set()
        for kind in kinds:
            # Inside a NUMA domain, devices under the same root as devices already picked come
            # first, then devices whose root also holds another kind asked for: pairs on one root.
            partner_roots = {
                root
                for d in chosen
                for k in kinds
                if k != kind
                for s in table[d][k]
                for root in s.place.roots
            }

            def rank(slot: Slot, partners: set[str] = partner_roots) -> tuple[bool, bool, int]:
                roots = slot.place.roots
                return (not roots & picked_roots, not roots & partners, slot.position)

            # One per chosen domain first, then the rest, so every domain holds every kind.
            ordered = [sorted(table[d][kind], key=rank) for d in chosen]
            pool = [slots[0] for slots in ordered] + [s for slots in ordered for s in slots[1:]]
            pool = list(dict.fromkeys(pool))
            for need in (n for n in members if n.kind == kind):
                allowed = {slot.id for slot in need.candidates}
                taken = [s for s in pool if s.id in allowed and (s.shared or s.id not in used)][: need.count]
                if len(taken) < need.count:
                    return None
                used.update(s.id for s in taken if not s.shared)
                picked_roots.update(root for s in taken for root in s.place.roots)
                picks.extend(taken)
        return picks

    def _followers(self, followers: Sequence[Need], picks: Sequence[Slot]) -> list[Slot]:
        """NUMA-scoped requests (CPUs) on the NUMA nodes of the devices picked so far."""
        numas = sorted({numa for slot in picks for numa in slot.place.numas})
        chosen: list[Slot] = []
        used: set[DeviceId] = {slot.id for slot in picks if not slot.shared}
        for need in followers:
            ranked = sorted(
                need.candidates,
                key=lambda s: (
                    min((numas.index(u) for u in s.place.numas if u in numas), default=len(numas)),
                    s.position,
                ),
            )
            taken = [s for s in ranked if s.shared or s.id not in used][: need.count]
            used.update(s.id for s in taken if not s.shared)
            chosen.extend(taken)
        return chosen

    # -- every request on its own -----------------------------------------------------------

    def compact(self) -> list[Target]:
        """Each request on as few NUMA nodes as possible, sparing aligned pairs (empty if counts fail).

        A pod asking only for CPUs gets one proposal per CPU device, NUMA nodes with the fewest
        free GPUs and NICs first: if the first has no room left, the next is offered.
        """
        picks: list[Slot] = []
        used: set[DeviceId] = set()
        for need in sorted(self.needs, key=_numa_scoped):
            # CPUs follow the devices picked so far; everything else is picked on its own.
            taken = self._followers([need], picks) if _numa_scoped(need) and picks else self._one(need, used)
            if len(taken) < need.count:
                return []
            used.update(s.id for s in taken if not s.shared)
            picks.extend(taken)
        proposals = [self.target(picks, "compact")]
        if len(self.needs) == 1 and self.needs[0].count == 1 and _numa_scoped(self.needs[0]):
            ranked = sorted(self.needs[0].candidates, key=self._scoped_rank)
            proposals += [self.target([slot], "compact") for slot in ranked if slot not in picks]
        return proposals

    def _scoped_rank(self, slot: Slot) -> tuple[int, int]:
        """NUMA-scoped devices (CPUs) taken alone: NUMA nodes with the fewest free GPUs and NICs first,
        so the CPUs next to free accelerators stay for the pods that will use those."""
        return (self._paired_on_numa.get(min(slot.place.numas, default=-1), 0), slot.position)

    def _one(self, need: Need, used: set[DeviceId]) -> list[Slot]:
        free = [s for s in need.candidates if s.shared or s.id not in used]
        if _numa_scoped(need):
            return sorted(free, key=self._scoped_rank)[: need.count]
        if need.count <= 1:
            return self._spare_pairs(free, need.count, used)
        by_numa: dict[int, list[Slot]] = {}
        for slot in sorted(free, key=lambda s: s.position):
            by_numa.setdefault(min(slot.place.numas, default=-1), []).append(slot)
        fitting = [
            self._spare_pairs(group, need.count, used)
            for group in by_numa.values()
            if len(group) >= need.count
        ]
        if fitting:
            # Fewest broken pairs, then the earliest devices.
            return min(
                fitting, key=lambda group: (self._lost(group, used), sorted(s.position for s in group))
            )
        return self._spare_pairs(free, need.count, used)

    def _lost(self, picks: Sequence[Slot], used: set[DeviceId]) -> int:
        """Free aligned pairs that taking `picks` (on top of `used`) breaks."""
        return self.view.pairs(used) - self.view.pairs(used | {s.id for s in picks if not s.shared})

    def _spare_pairs(self, free: Sequence[Slot], count: int, used: set[DeviceId]) -> list[Slot]:
        """`count` of `free`, one at a time, each the one that breaks the fewest aligned pairs.

        Per PCIe root the pairs are min(free GPUs, free NICs): a GPU under a root without a free
        NIC breaks nothing, nor does one under a root with more free GPUs than NICs (p4d's roots
        of two GPUs and one NIC); only the last GPU beside a free NIC breaks a pair. Roots with no
        partner left go first, then roots with devices to spare, then the rest; then search order.
        """
        per_root: dict[str, Counter[str]] = {}
        for slot in self.view.paired:
            if slot.id not in used:
                for root in slot.place.roots:
                    per_root.setdefault(root, Counter())[slot.place.kind] += 1
        remaining = list(free)
        chosen: list[Slot] = []
        while remaining and len(chosen) < count:

            def key(slot: Slot) -> tuple[int, int, int]:
                kind = slot.place.kind
                if kind not in PAIRED_KINDS or slot.shared:
                    return (0, 0, slot.position)
                breaks = partnered = 0
                for root in slot.place.roots:
                    counts = per_root.get(root, Counter())
                    partners = min((counts[k] for k in PAIRED_KINDS if k != kind), default=0)
                    if partners:
                        partnered = 1
                        breaks += int(counts[kind] <= partners)
                return (breaks, partnered, slot.position)

            best = min(remaining, key=key)
            remaining.remove(best)
            chosen.append(best)
            if best.place.kind in PAIRED_KINDS and not best.shared:
                for root in best.place.roots:
                    per_root.setdefault(root, Counter())[best.place.kind] -= 1
        return chosen


def _numa_scoped(need: Need) -> bool:
    return all(slot.place.numa_scoped for slot in need.candidates)


def plan(view: NodeView) -> list[Target]:
    """Proposals for the view's requests, best first (empty when the view cannot be planned)."""
    if not view.plannable or not view.needs:
        return []
    planner = _Planner(view)
    proposals: list[Target] = []
    if len({need.kind for need in view.needs}) >= 2:
        proposals += planner.aligned(Level.PCIE)
        if proposals and max(p.value for p in proposals) >= PERFECT:
            # Nothing beats a perfectly aligned set; the rest would only be tried if the
            # allocator refused it, and then the chooser's own search takes over.
            return sorted(proposals, key=lambda t: (-t.value, t.broken))
        proposals += planner.aligned(Level.NUMA)
    proposals += planner.compact()
    unique: dict[frozenset[DeviceId], Target] = {}
    for proposal in proposals:
        unique.setdefault(proposal.devices, proposal)
    # Best alignment first, then fewest broken pairs; the order above breaks ties.
    return sorted(unique.values(), key=lambda t: (-t.value, t.broken))

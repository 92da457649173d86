"""A node as the alignment planner sees it: what each request may pick, and where it sits.

Built from the allocator's own per-node request binding (`Preparer`: class
and request selectors, cached per node), so the planner never proposes a
device the allocator would not consider. A device is free when no claim
holds it exclusively; shared devices (consumable capacity, e.g. CPU groups)
count as free, the allocator checks their capacity.

`pairs()` counts the node's free aligned GPU/NIC pairs (per PCIe root, the
smaller of free GPUs and free NICs): what a later pod asking for an aligned
GPU + NIC could still get. Picking devices that lower it without need is
what "breaking a pair" means.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from allot.dra import AllocatedState, AllocationError, Allocator, DeviceId
from allot.dra.requests import ClaimSpec, Preparer, claim_spec, still_valid
from allot.model.core import Node
from allot.model.resource import ResourceClaim
from allot.scheduling.topology.places import PAIRED_KINDS, Place, place_of


@dataclass(frozen=True, slots=True)
class Slot:
    """One device of the node: its id, where it sits, whether it is shared, its search position."""

    id: DeviceId
    place: Place
    shared: bool
    position: int


@dataclass(slots=True)
class Need:
    """One request to plan: how many devices, of which kind, from which free candidates."""

    claim: int
    request: str
    count: int
    kind: str
    candidates: list[Slot]
    shared: bool


@dataclass(slots=True)
class NodeView:
    needs: list[Need] = field(default_factory=list)
    # False when some request cannot be planned (All mode, admin access, prioritized alternatives
    # beyond the first, not enough free candidates): the allocator alone decides then.
    plannable: bool = True
    # Free devices of the paired kinds, for counting aligned pairs.
    paired: list[Slot] = field(default_factory=list)

    def candidate_ids(self) -> set[DeviceId]:
        return {slot.id for need in self.needs for slot in need.candidates}

    # Free paired devices per PCIe root, and the pairs they make (built on first use).
    _per_root: dict[str, Counter[str]] | None = field(default=None, init=False, repr=False)
    _by_id: dict[DeviceId, Slot] = field(default_factory=dict, init=False, repr=False)
    _pairs: int = field(default=0, init=False, repr=False)

    def pairs(self, without: Collection[DeviceId] = ()) -> int:
        """Free aligned GPU/NIC pairs left if the devices in `without` were taken."""
        per_root = self._per_root
        if per_root is None:
            per_root = self._per_root = {}
            for slot in self.paired:
                self._by_id[slot.id] = slot
                for root in slot.place.roots:
                    per_root.setdefault(root, Counter())[slot.place.kind] += 1
            self._pairs = sum(_pairs_of(counts) for counts in per_root.values())
        taken: dict[str, Counter[str]] = {}
        for device_id in without:
            found = self._by_id.get(device_id)
            if found is not None:
                for root in found.place.roots:
                    taken.setdefault(root, Counter())[found.place.kind] += 1
        lost = 0
        for root, removed in taken.items():
            counts = per_root[root]
            lost += _pairs_of(counts) - _pairs_of(counts - removed)
        return self._pairs - lost


def _pairs_of(counts: Counter[str]) -> int:
    return min(counts[kind] for kind in PAIRED_KINDS)


class ViewBuilder:
    """Builds NodeViews for one allocator; caches validated claim specs per claim object."""

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self._specs: dict[int, ClaimSpec] = {}

    def _spec(self, claim: ResourceClaim) -> ClaimSpec:
        allocator = self.allocator
        spec = self._specs.get(id(claim))
        if spec is None or spec.claim is not claim or not still_valid(spec, allocator.classes):
            if len(self._specs) > 4096:
                self._specs.clear()
            spec = self._specs[id(claim)] = claim_spec(claim, allocator.classes, allocator.features)
        return spec

    def view(self, node: Node | None, claims: Sequence[ResourceClaim], allocated: AllocatedState) -> NodeView:
        """The planner's view of `node` for allocating `claims`; raises AllocationError for bad input."""
        allocator = self.allocator
        pools = allocator.pools(node)
        plans = Preparer(allocator.features, pools, allocator.selectors, allocated).prepare(
            [self._spec(claim) for claim in claims]
        )
        view = NodeView()
        slots: dict[DeviceId, Slot] = {}
        for position, device in enumerate(pools.devices):
            info = device.info
            free = device.shared or not allocated.in_use(info.id)
            slot = Slot(info.id, place_of(info.id.driver, info.device), device.shared, position)
            if free:
                slots[info.id] = slot
                if slot.place.kind in PAIRED_KINDS and not device.shared:
                    view.paired.append(slot)
        for plan in plans:
            for request in plan.requests:
                data = request.subs[0] if request.subs is not None else request.data
                if (
                    data is None
                    or data.all_mode
                    or data.admin
                    or (request.subs is not None and len(request.subs) > 1)
                ):
                    view.plannable = False
                    continue
                found = data.candidates
                candidates = [
                    slots[d.info.id] for d in found.devices if d.info.id in slots and d not in found.errors
                ]
                kinds = Counter(slot.place.kind for slot in candidates)
                if len(candidates) < data.num or not kinds:
                    view.plannable = False
                    continue
                view.needs.append(
                    Need(
                        claim=plan.index,
                        request=data.full_name,
                        count=data.num,
                        kind=kinds.most_common(1)[0][0],
                        candidates=candidates,
                        shared=all(slot.shared for slot in candidates),
                    )
                )
        return view


def try_view(
    builder: ViewBuilder, node: Node | None, claims: Sequence[ResourceClaim], allocated: AllocatedState
) -> NodeView | None:
    """The view, or None when the claims are bad input (the allocator reports that itself)."""
    try:
        return builder.view(node, claims, allocated)
    except AllocationError:
        return None

"""The depth-first search with undo: upstream's `allocateOne`, step for step.

The search walks positions (claim, request, sub-request, device slot) in
order and, at each slot, tries the candidate devices in pool/slice/device
order; a device that fits is applied to the search state, the search
recurses, and on failure the device is undone and the next one tried. The
first complete assignment wins (unless a scorer asked for more, see
`max_solutions`). The structure, including the `MaxSizeExceeded` pruning
for firstAvailable (claims are limited to 32 devices) and the number of
recursive steps, is upstream's, so `steps` equals upstream's allocateOne
count when symmetry pruning is off.

Differences from upstream 1.35, all fixes that never make a feasible node
look infeasible or the reverse:

* counters are released on every rejection after they were reserved
  (taints, constraints, capacity) and on undo of shared devices
  (kubernetes #140431/#140436);
* a shared device's counters are charged once, by its first allocation,
  and not at all if other claims already use it (with the #139040 fix to
  availability, see `counters`);
* in All mode the next slot keeps the current sub-request (upstream drops
  the sub-request index there);
* a step budget stops an exploding search (#131730) with `BudgetExhausted`.

Symmetry pruning (optional) removes two kinds of repeated work without
changing which allocation is found first, only how many steps it takes:

* a request's devices form a set: every check (in use, selectors, counters,
  capacity, taints, constraints) depends on the set, not on the order it was
  picked in, and any subset of a feasible set passes every check. So the
  first solution in upstream's order picks each request's devices in
  candidate order, and the search only tries candidates at or after the
  previous slot's device (at, because a shared device can be picked again);
* at one slot, once a device failed (it could not be added, or nothing
  below it succeeded), a later candidate with the same `signature`
  (identical in every respect but its name) whose state is as pristine as
  the failed one's is skipped: swapping the two devices maps one subtree
  onto the other, so it fails too.
"""

from __future__ import annotations

import sys
from collections.abc import Container, Mapping

from allot.dra.capacity import fits
from allot.dra.errors import AllocationError
from allot.dra.features import Features
from allot.dra.ids import DeviceId
from allot.dra.pools import NodeDevice, Pool
from allot.dra.requests import ClaimPlan, RequestData, selector_error
from allot.dra.state import AllocatedState
from allot.dra.tolerations import all_tolerated
from allot.model.resource import MAX_DEVICES_PER_ALLOCATION

FAIL = 0
OK = 1
MAX_SIZE = 2


class BudgetExhausted(Exception):
    """The search used its whole step budget without finishing."""


class Pick:
    """One device picked for one request of one claim, with what must be undone."""

    __slots__ = ("amounts", "charged", "device", "request")

    def __init__(
        self, device: NodeDevice, request: RequestData, amounts: tuple[int, ...] | None, charged: bool
    ) -> None:
        self.device = device
        self.request = request
        # Consumed capacity of a shared device (None for exclusive devices).
        self.amounts = amounts
        self.charged = charged

    def __repr__(self) -> str:
        return f"Pick({self.request.full_name} -> {self.device.info.id})"


class Solution:
    """A complete assignment: the picks per claim and the chosen sub-request per request."""

    __slots__ = ("chosen", "picks", "steps")

    def __init__(
        self, picks: tuple[tuple[Pick, ...], ...], chosen: tuple[tuple[int, ...], ...], steps: int
    ) -> None:
        self.picks = picks
        self.chosen = chosen
        self.steps = steps


class Search:
    """State of one search; create one per call."""

    def __init__(
        self,
        plans: list[ClaimPlan],
        state: AllocatedState,
        features: Features,
        *,
        budget: int,
        pruning: bool,
        max_solutions: int = 1,
        excluded: Container[DeviceId] | None = None,
    ) -> None:
        self.plans = plans
        self.nclaims = len(plans)
        self.state = state
        self.cc = features.consumable_capacity
        self.budget = budget
        self.pruning = pruning
        self.max_solutions = max_solutions
        self.steps = 0
        self.pruned = 0
        self.solutions: list[Solution] = []
        self.results: list[list[Pick]] = [[] for _ in plans]
        self.chosen: list[list[int]] = [[0] * len(p.requests) for p in plans]
        # Devices other claims hold exclusively. Without ConsumableCapacity upstream
        # counts shared allocations as exclusive ones too.
        self.taken: Mapping[DeviceId, int] = state.exclusive
        if not self.cc and state.shared:
            self.taken = {**state.exclusive, **dict.fromkeys(state.shared, 1)}
        # Devices the caller's policy keeps out of this search; treated like taken ones.
        self.excluded = excluded
        self.picked: dict[DeviceId, int] = {}
        self.picked_claim: set[tuple[DeviceId, int]] = set()
        self.share_count: dict[DeviceId, int] = {}
        self.in_flight: dict[DeviceId, list[int]] = {}
        self.counters_used: dict[Pool, list[int]] = {}
        self.existing: dict[DeviceId, list[int] | None] = {}

    # -- driver -----------------------------------------------------------------------

    def run(self) -> bool:
        """True if at least one solution was found; raises BudgetExhausted or AllocationError."""
        if self.nclaims > 2:
            # Each device slot takes two frames, each request and claim one or two more,
            # and a claim has at most 32 devices; leave room for the caller's frames.
            # Python 3.11+ does not use the C stack for these calls.
            depth = 300 + sum(4 * len(p.requests) + 70 for p in self.plans)
            if sys.getrecursionlimit() < depth:
                sys.setrecursionlimit(depth)
        self._one(0, 0, 0, 0, False)
        return bool(self.solutions)

    def _found(self) -> int:
        self.solutions.append(
            Solution(tuple(map(tuple, self.results)), tuple(map(tuple, self.chosen)), self.steps)
        )
        return OK if len(self.solutions) >= self.max_solutions else FAIL

    # -- the recursion ----------------------------------------------------------------

    def _one(self, c: int, r: int, s: int, k: int, in_sub: bool, start: int = 0) -> int:
        self.steps += 1
        if self.steps > self.budget:
            raise BudgetExhausted
        if c == self.nclaims:
            return self._found()
        plan = self.plans[c]
        if r == len(plan.requests):
            result = self._one(c + 1, 0, 0, 0, False)
            # Exceeding the size of a *later* claim says nothing about this one.
            return FAIL if result == MAX_SIZE else result
        request_plan = plan.requests[r]
        subs = request_plan.subs
        if subs is not None and not in_sub:
            all_exceeded = True
            chosen = self.chosen[c]
            for index in range(len(subs)):
                chosen[r] = index
                result = self._one(c, r, index, k, True)
                if result == MAX_SIZE:
                    continue
                all_exceeded = False
                if result == OK:
                    return OK
            return MAX_SIZE if all_exceeded else FAIL
        data = subs[s] if subs is not None else request_plan.data
        assert data is not None
        if data.all_mode and not data.all_devices:
            return FAIL  # "All" means at least one device
        num = data.num
        if k >= num:
            return self._one(c, r + 1, 0, 0, False)
        if len(self.results[c]) + num - k > MAX_DEVICES_PER_ALLOCATION:
            return MAX_SIZE
        if data.all_mode:
            device = data.all_devices[k]
            pick = self._add(c, data, device, None, must=True)
            if pick is None:
                return FAIL  # every device is required; there is no alternative
            result = self._one(c, r, s, k + 1, in_sub)
            if result != OK:
                self._undo(c, pick)
            return result
        return self._try_candidates(c, r, s, k, in_sub, data, start)

    def _try_candidates(
        self, c: int, r: int, s: int, k: int, in_sub: bool, data: RequestData, start: int
    ) -> int:
        found = data.candidates
        errors = found.errors
        admin = data.admin
        taken = self.taken
        picked = self.picked
        picked_claim = self.picked_claim
        check_capacity = self.cc
        pruning = self.pruning
        excluded = self.excluded
        failed: set[bytes] | None = None
        devices = found.devices
        for position in range(start, len(devices)):
            device = devices[position]
            info = device.info
            device_id = info.id
            # "In use" is cheap, so it comes first, as upstream does.
            if admin:
                if (device_id, c) in picked_claim:
                    continue
            elif device_id in taken or device_id in picked:
                continue
            if excluded is not None and device_id in excluded:
                continue
            if errors:
                failure = errors.get(device)
                if failure is not None:
                    raise selector_error(self.plans[c], data, failure)
            amounts: tuple[int, ...] | None = ()
            if check_capacity and (data.capacity is not None or info.has_capacity):
                amounts = self._capacity(data, device)
                if amounts is None:
                    continue
            if failed is not None and self._pristine(device_id) and info.signature in failed:
                self.pruned += 1
                continue
            before = len(self.solutions)
            pick = self._add(c, data, device, amounts, must=False)
            if pick is not None:
                # With pruning, the devices of one request are picked in candidate order
                # (sets, not sequences); a shared device may be picked again.
                result = self._one(c, r, s, k + 1, in_sub, position if pruning else 0)
                if result == OK:
                    return OK
                self._undo(c, pick)
                if result == MAX_SIZE:
                    return MAX_SIZE
            # Undo restored the state this device was tried in; if that state was
            # pristine, every identical pristine device fails the same way.
            if pruning and len(self.solutions) == before and self._pristine(device_id):
                if failed is None:
                    failed = set()
                failed.add(info.signature)
        return FAIL

    # -- applying and undoing one device -------------------------------------------------

    def _pristine(self, device_id: DeviceId) -> bool:
        return (
            device_id not in self.picked
            and device_id not in self.share_count
            and not self.state.in_use(device_id)
        )

    def _capacity(self, data: RequestData, device: NodeDevice) -> tuple[int, ...] | None:
        """What the device would consume for the request, or None if it cannot take it now."""
        info = device.info
        amounts, alone = info.consumed(data.capacity_key, data.capacity)
        if amounts is None:
            return None
        device_id = info.id
        if device_id in self.existing:
            existing = self.existing[device_id]
        else:
            held = self.state.capacity.get(device_id)
            existing = self.existing[device_id] = info.capacities.vector(held) if held else None
        in_flight = self.in_flight.get(device_id)
        if existing is None and in_flight is None:
            return amounts if alone else None
        if not fits(info.capacities, amounts, existing, in_flight):
            return None
        return amounts

    def _charge(self, device: NodeDevice) -> bool:
        pool = device.pool
        counters = pool.counters
        assert counters is not None
        available, overcommitted = counters.available(self.state)
        if overcommitted:
            return False
        used = self.counters_used.get(pool)
        if used is None:
            used = self.counters_used[pool] = [0] * len(available)
        ok = True
        for index, amount in device.counters:
            used[index] += amount
            if used[index] > available[index]:
                ok = False
        if not ok:
            for index, amount in device.counters:
                used[index] -= amount
        return ok

    def _uncharge(self, device: NodeDevice) -> None:
        used = self.counters_used[device.pool]
        for index, amount in device.counters:
            used[index] -= amount

    def _add(
        self, c: int, data: RequestData, device: NodeDevice, amounts: tuple[int, ...] | None, *, must: bool
    ) -> Pick | None:
        """Upstream's allocateDevice: apply `device` for `data` or refuse; `must` is All mode."""
        info = device.info
        device_id = info.id
        if must:
            if data.admin:
                if not device.shared and (device_id, c) in self.picked_claim:
                    return None
            elif device_id in self.taken or device_id in self.picked:
                return None
            if self.excluded is not None and device_id in self.excluded:
                return None
        if device.blocked:
            return None
        charged = False
        if device.counters and not (
            device.shared and (device_id in self.share_count or self.state.in_use(device_id))
        ):
            if not self._charge(device):
                return None
            charged = True
        if device.taints and not all_tolerated(device.taints, data.tolerations):
            if charged:
                self._uncharge(device)
            return None
        constraints = self.plans[c].constraints
        if constraints:
            base, full = data.base, data.full_name
            for position, constraint in enumerate(constraints):
                if not constraint.add(base, full, info):
                    if must:
                        raise AllocationError(
                            f"claim {self.plans[c].key}, request {data.name}: cannot add device {device_id} "
                            "because a claim constraint would not be satisfied"
                        )
                    for earlier in constraints[:position]:
                        earlier.remove(base, full, info)
                    if charged:
                        self._uncharge(device)
                    return None
        if must and self.cc:
            amounts = self._capacity(data, device)
            if amounts is None:
                if constraints:
                    for constraint in constraints:
                        constraint.remove(data.base, data.full_name, info)
                if charged:
                    self._uncharge(device)
                return None
        if device.shared:
            self.share_count[device_id] = self.share_count.get(device_id, 0) + 1
            if amounts:
                flight = self.in_flight.get(device_id)
                if flight is None:
                    self.in_flight[device_id] = list(amounts)
                else:
                    for index, amount in enumerate(amounts):
                        flight[index] += amount
        else:
            self.picked[device_id] = self.picked.get(device_id, 0) + 1
            self.picked_claim.add((device_id, c))
        pick = Pick(device, data, amounts if device.shared and self.cc else None, charged)
        self.results[c].append(pick)
        return pick

    def _undo(self, c: int, pick: Pick) -> None:
        self.results[c].pop()
        device = pick.device
        device_id = device.info.id
        if device.shared:
            count = self.share_count[device_id] - 1
            if count:
                self.share_count[device_id] = count
            else:
                del self.share_count[device_id]
            if pick.amounts:
                flight = self.in_flight[device_id]
                for index, amount in enumerate(pick.amounts):
                    flight[index] -= amount
                if not count:
                    del self.in_flight[device_id]
        else:
            count = self.picked[device_id] - 1
            if count:
                self.picked[device_id] = count
            else:
                del self.picked[device_id]
            self.picked_claim.discard((device_id, c))
        constraints = self.plans[c].constraints
        if constraints:
            data = pick.request
            for constraint in constraints:
                constraint.remove(data.base, data.full_name, device.info)
        if pick.charged:
            self._uncharge(device)

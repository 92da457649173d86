"""Why nothing fits: a structured reason per claim and request, and a one-line summary.

Computed only after a search failed, so it costs nothing on the success
path. For every request (every alternative of a firstAvailable request) it
counts the devices the node offers and how many each check rejects, in the
order the allocator applies them; a device is counted once, under the first
check that rejects it. The checks look at one device at a time against the
existing allocations (AllocatedState), not at combinations: when every
request on its own has enough usable devices, the failure comes from
combining them (constraints across devices, shared counters or capacity,
several requests competing for the same devices), and the summary says so.

The summary is the scheduler's one-line reason, e.g.
`cannot allocate all claims: claim default/c1 request gpu: 8 devices considered, 8 already allocated`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from allot.dra.capacity import consumed_amounts, fits
from allot.dra.features import Features
from allot.dra.ids import DeviceId
from allot.dra.pools import NodeDevice, NodePools
from allot.dra.requests import ClaimPlan, RequestData
from allot.dra.state import AllocatedState
from allot.dra.tolerations import all_tolerated

# Rejection reasons, in the order checks apply; the labels read after a count.
INCOMPLETE_POOL = "in incomplete pools"
INVALID_POOL = "in invalid pools"
BINDING = "with binding conditions (feature off)"
CLASS_SELECTOR = "rejected by the class selectors"
REQUEST_SELECTOR = "rejected by the request selectors"
NODE_SELECTION = "not on this node"
ALLOCATED = "already allocated"
CAPACITY = "without enough capacity"
PARTITIONABLE = "consuming counters (feature off)"
COUNTERS = "without enough shared counters"
TAINT = "tainted"
CONSTRAINT = "lacking a constrained attribute"

REASONS = (
    INCOMPLETE_POOL,
    INVALID_POOL,
    BINDING,
    CLASS_SELECTOR,
    REQUEST_SELECTOR,
    NODE_SELECTION,
    ALLOCATED,
    CAPACITY,
    PARTITIONABLE,
    COUNTERS,
    TAINT,
    CONSTRAINT,
)

PREFIX = "cannot allocate all claims"


@dataclass(frozen=True, slots=True)
class RequestDiagnosis:
    """Device counts for one request (or one alternative of a firstAvailable request)."""

    claim: str
    request: str
    wanted: int  # devices needed; for All mode the number of devices it must get
    all_mode: bool
    considered: int
    rejected: Mapping[str, int]  # reason -> devices, non-zero only, in check order
    usable: int

    @property
    def blocking(self) -> bool:
        """Too few usable devices for this request alone (All: any device unusable or none at all)."""
        if self.all_mode:
            return self.usable == 0 or self.usable < self.wanted
        return self.usable < self.wanted

    def describe(self) -> str:
        parts = [f"{self.considered} devices considered"]
        parts.extend(f"{count} {reason}" for reason, count in self.rejected.items())
        text = ", ".join(parts)
        if self.all_mode:
            return f"{text}; all of them wanted"
        return f"{text}; {self.usable} usable, {self.wanted} wanted"


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why the claims could not be allocated on one node."""

    node: str | None
    summary: str
    requests: tuple[RequestDiagnosis, ...] = ()
    pools: tuple[str, ...] = ()
    budget_exhausted: bool = False
    steps: int = 0
    notes: tuple[str, ...] = field(default=())

    def text(self) -> str:
        lines = [self.summary]
        for pool in self.pools:
            lines.append(f"  pool {pool}")
        for request in self.requests:
            lines.append(f"  claim {request.claim} request {request.request}: {request.describe()}")
        lines.extend(f"  {note}" for note in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary


def _check(
    device: NodeDevice,
    data: RequestData,
    plan: ClaimPlan,
    state: AllocatedState,
    features: Features,
    taken: Mapping[DeviceId, int],
) -> str | None:
    info = device.info
    if not data.admin and info.id in taken:
        return ALLOCATED
    if features.consumable_capacity and (data.capacity is not None or info.has_capacity):
        caps = info.capacities
        amounts = consumed_amounts(caps, data.capacity)
        held = state.capacity.get(info.id)
        if amounts is None or not fits(caps, amounts, caps.vector(held) if held else None, None):
            return CAPACITY
    if device.blocked:
        return PARTITIONABLE
    counters = device.pool.counters
    if device.counters and counters is not None and not (device.shared and state.in_use(info.id)):
        available, overcommitted = counters.available(state)
        if overcommitted or any(amount > available[index] for index, amount in device.counters):
            return COUNTERS
    if device.taints and not all_tolerated(device.taints, data.tolerations):
        return TAINT
    for constraint in plan.constraints:
        if constraint.applies(data.base, data.full_name) and constraint.attribute not in info.attributes:
            return CONSTRAINT
    return None


def _request(
    plan: ClaimPlan,
    data: RequestData,
    pools: NodePools,
    state: AllocatedState,
    features: Features,
    taken: Mapping[DeviceId, int],
) -> RequestDiagnosis:
    counts = dict.fromkeys(REASONS, 0)
    for pool in pools.pools:
        if pool.incomplete:
            counts[INCOMPLETE_POOL] += pool.unusable_devices
        elif pool.invalid is not None:
            counts[INVALID_POOL] += pool.unusable_devices
    found = data.candidates
    counts[BINDING] = found.binding_disabled
    counts[CLASS_SELECTOR] = found.class_rejected
    counts[REQUEST_SELECTOR] = found.request_rejected
    counts[NODE_SELECTION] = found.node_rejected
    usable = 0
    devices = data.all_devices if data.all_mode else found.devices
    for device in devices:
        reason = _check(device, data, plan, state, features, taken)
        if reason is None:
            usable += 1
        else:
            counts[reason] += 1
    considered = found.considered + counts[INCOMPLETE_POOL] + counts[INVALID_POOL]
    if data.all_mode:
        # Devices left out of "all" for lack of capacity are counted as such.
        counts[CAPACITY] += len(found.devices) - len(data.all_devices)
    return RequestDiagnosis(
        claim=plan.key,
        request=data.full_name,
        wanted=data.num,
        all_mode=data.all_mode,
        considered=considered,
        rejected={reason: n for reason, n in counts.items() if n},
        usable=usable,
    )


def diagnose(
    plans: list[ClaimPlan],
    pools: NodePools,
    state: AllocatedState,
    features: Features,
    *,
    steps: int,
    budget_exhausted: bool,
    budget: int,
    cause: str | None = None,
) -> Diagnosis:
    """The diagnosis of a failed search over `plans` on `pools`; `cause`, when the allocator found
    the reason before searching, is the summary's reason."""
    taken: dict[DeviceId, int] = dict(state.exclusive)
    if not features.consumable_capacity:
        taken.update(dict.fromkeys(state.shared, 1))
    requests: list[RequestDiagnosis] = []
    blocking: RequestDiagnosis | None = None
    for plan in plans:
        for request_plan in plan.requests:
            alternatives = [
                _request(plan, d, pools, state, features, taken) for d in request_plan.alternatives()
            ]
            requests.extend(alternatives)
            if blocking is None and alternatives and all(a.blocking for a in alternatives):
                blocking = alternatives[0]
    pool_notes = tuple(
        f"{pool}: {'incomplete (not all slices of its generation are published)' if pool.incomplete else 'invalid: ' + str(pool.invalid)}"
        for pool in pools.pools
        if not pool.usable
    )
    node = pools.node_name
    if cause is not None:
        summary = f"{PREFIX}: {cause}"
    elif budget_exhausted:
        summary = (
            f"{PREFIX}: search stopped after {steps} steps (the step budget is {budget}) "
            "without finding an allocation"
        )
    elif blocking is not None:
        summary = f"{PREFIX}: claim {blocking.claim} request {blocking.request}: {blocking.describe()}"
    else:
        constrained = next((p for p in plans if p.constraints), None)
        if constrained is not None:
            described = ", ".join(c.describe() for c in constrained.constraints)
            summary = f"{PREFIX}: claim {constrained.key}: no combination of devices satisfies its constraints ({described})"
        else:
            summary = (
                f"{PREFIX}: enough devices for each request alone, but not for all together "
                "(they compete for devices, shared counters or capacity)"
            )
    return Diagnosis(
        node=node,
        summary=summary,
        requests=tuple(requests),
        pools=pool_notes,
        budget_exhausted=budget_exhausted,
        steps=steps,
    )

"""Per-call preparation of the claims to allocate: validation, classes, device counts.

Everything that can be decided before the search is decided here, for every
claim, before any device is tried, exactly as upstream does, and with
upstream's error texts (they are short identifiers the scheduler and the
conformance suite match on):

* firstAvailable without PrioritizedList; capacity requests without
  ConsumableCapacity (experimental variant only);
* per request or sub-request: selectors without CEL, adminAccess without
  the feature, missing class name, unknown class, and the count: ExactCount
  -> `count`, All -> every selectable device of every pool on the node
  (refused if a pool is incomplete or invalid; with ConsumableCapacity only
  devices with room for the request), anything else -> unsupported mode;
* the smallest possible number of devices per claim (firstAvailable: its
  smallest alternative) must not exceed 32;
* constraints: matchAttribute, distinctAttribute (experimental variant),
  anything else is an unsupported constraint type.

The node-independent part of this (`ClaimSpec`) is computed once per claim
object and cached by the allocator, because a scheduler asks for the same
claims on many nodes; errors found there are recorded and raised in
upstream's order when the per-call pass reaches them. The per-call pass
binds each request to the node's candidate devices (`RequestData`).

Hand-built records may leave allocationMode and count unset; they get the
API server's defaults (ExactCount, 1) here rather than an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allot.cel import SelectorEnvironment
from allot.dra.capacity import CapacityKey, capacity_key, fits
from allot.dra.constraints import Constraint, DistinctAttribute, MatchAttribute
from allot.dra.errors import AllocationError
from allot.dra.features import Features
from allot.dra.ids import claim_key
from allot.dra.pools import NodeDevice, NodePools
from allot.dra.selection import Candidates, SelectorFailure, candidates
from allot.dra.state import AllocatedState
from allot.model.resource import (
    MAX_DEVICES_PER_ALLOCATION,
    DeviceClass,
    DeviceRequest,
    DeviceSelector,
    DeviceSubRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
)

MODE_EXACT = "ExactCount"
MODE_ALL = "All"
_MAX_INT = 2**63 - 1
_NO_CANDIDATES = Candidates()


class RequestSpec:
    """The node-independent facts of one request or sub-request (cached per claim)."""

    __slots__ = (
        "admin",
        "all_mode",
        "base",
        "capacity",
        "capacity_key",
        "class_name",
        "class_selectors",
        "count",
        "device_class",
        "error",
        "full_name",
        "name",
        "request_selectors",
        "tolerations",
    )

    def __init__(self, base: str, spec: ExactDeviceRequest | DeviceSubRequest, sub: bool) -> None:
        self.base = base  # the top-level request's name
        self.name = spec.name if isinstance(spec, DeviceSubRequest) else base  # upstream's request.name()
        self.full_name = f"{base}/{self.name}" if sub else base
        self.class_name = spec.device_class_name
        self.device_class: DeviceClass | None = None
        self.admin = bool(spec.admin_access) if isinstance(spec, ExactDeviceRequest) else False
        self.tolerations: tuple[DeviceToleration, ...] = spec.tolerations
        self.capacity: dict[str, int] | None = None
        if spec.capacity is not None:
            self.capacity = {name: q.nano for name, q in spec.capacity.requests.items()}
        self.capacity_key: CapacityKey = capacity_key(self.capacity)
        self.all_mode = False
        self.count = 0
        self.class_selectors: tuple[str, ...] = ()
        self.request_selectors: tuple[str, ...] = ()
        # A validation error met before any node-dependent check of this request.
        self.error: str | None = None


class RequestGroup:
    """A top-level request as validated: one alternative, or the sub-requests of firstAvailable."""

    __slots__ = ("alternatives", "error", "name", "sub")

    def __init__(self, name: str, sub: bool) -> None:
        self.name = name
        self.sub = sub
        self.error: str | None = None
        # Stops at the first alternative with an error: upstream never gets further.
        self.alternatives: list[RequestSpec] = []


class ClaimSpec:
    """The node-independent facts of one claim, cached by the allocator per claim object."""

    __slots__ = ("claim", "classes", "constraint_error", "constraints", "key", "requests")

    def __init__(self, claim: ResourceClaim) -> None:
        self.claim = claim
        # The classes looked up (name -> object or None); a cached spec is stale once one changes.
        self.classes: dict[str, DeviceClass | None] = {}
        self.key = claim_key(claim.metadata.namespace, claim.metadata.name)
        self.requests: list[RequestGroup] = []
        self.constraints: list[tuple[type[Constraint], int, tuple[str, ...], str]] = []
        self.constraint_error: str | None = None


def still_valid(spec: ClaimSpec, classes: Mapping[str, DeviceClass]) -> bool:
    """Whether a cached spec still describes the claim under `classes` (same class objects)."""
    return all(classes.get(name) is device_class for name, device_class in spec.classes.items())


class RequestData:
    """One request or sub-request bound to one node's devices, for one call."""

    __slots__ = (
        "admin",
        "all_devices",
        "all_mode",
        "base",
        "candidates",
        "capacity",
        "capacity_key",
        "class_name",
        "device_class",
        "full_name",
        "name",
        "num",
        "tolerations",
    )

    def __init__(self, spec: RequestSpec, found: Candidates) -> None:
        self.base = spec.base
        self.name = spec.name
        self.full_name = spec.full_name
        self.class_name = spec.class_name
        self.device_class = spec.device_class
        self.admin = spec.admin
        self.tolerations = spec.tolerations
        self.capacity = spec.capacity
        self.capacity_key = spec.capacity_key
        self.all_mode = spec.all_mode
        self.num = spec.count
        self.candidates = found
        self.all_devices: list[NodeDevice] = []

    def __repr__(self) -> str:
        return f"RequestData({self.full_name})"


class RequestPlan:
    """A top-level request: either `data`, or alternatives `subs` tried in order."""

    __slots__ = ("data", "name", "subs")

    def __init__(self, name: str, data: RequestData | None, subs: list[RequestData] | None) -> None:
        self.name = name
        self.data = data
        self.subs = subs

    def alternatives(self) -> list[RequestData]:
        if self.subs is not None:
            return self.subs
        assert self.data is not None
        return [self.data]


class ClaimPlan:
    """One claim ready for the search: its requests bound to the node, fresh constraint state."""

    __slots__ = ("claim", "constraints", "index", "key", "min_devices", "requests")

    def __init__(self, index: int, spec: ClaimSpec) -> None:
        self.index = index
        self.claim = spec.claim
        self.key = spec.key
        self.requests: list[RequestPlan] = []
        self.constraints: list[Constraint] = []
        self.min_devices = 0


def selector_error(plan: ClaimPlan, request: RequestData, failure: SelectorFailure) -> AllocationError:
    """Upstream's message for a CEL error met on a device."""
    where = f"class {request.class_name}" if failure.source == "class" else f"claim {plan.key}"
    return AllocationError(
        f"{where}: selector #{failure.position}: CEL {failure.kind} error: {failure.message}"
    )


def _expressions(selectors: Sequence[DeviceSelector], problem: str) -> tuple[str, ...] | str:
    """The CEL texts, or the error for a selector without CEL."""
    expressions: list[str] = []
    for index, selector in enumerate(selectors):
        if selector.cel is None:
            return f"{problem}, selector #{index}: CEL expression empty (unsupported selector type?)"
        expressions.append(selector.cel.expression)
    return tuple(expressions)


def claim_spec(claim: ResourceClaim, classes: Mapping[str, DeviceClass], features: Features) -> ClaimSpec:
    """Validate everything about `claim` that does not depend on the node."""
    spec = ClaimSpec(claim)
    for request in claim.spec.devices.requests:
        spec.requests.append(_group(spec, request, classes, features))
        if spec.requests[-1].error is not None or (
            spec.requests[-1].alternatives and spec.requests[-1].alternatives[-1].error is not None
        ):
            return spec  # upstream stops at the first error
    for position, constraint in enumerate(claim.spec.devices.constraints):
        if constraint.match_attribute is not None:
            spec.constraints.append(
                (MatchAttribute, position, constraint.requests, constraint.match_attribute)
            )
        elif constraint.distinct_attribute is not None and features.experimental:
            spec.constraints.append(
                (DistinctAttribute, position, constraint.requests, constraint.distinct_attribute)
            )
        else:
            spec.constraint_error = (
                f"claim {spec.key}, constraint #{position}: empty constraint (unsupported constraint type?)"
            )
            break
    return spec


def _group(
    claim: ClaimSpec, request: DeviceRequest, classes: Mapping[str, DeviceClass], features: Features
) -> RequestGroup:
    group = RequestGroup(request.name, bool(request.first_available))
    if request.first_available:
        if not features.prioritized_list:
            group.error = (
                f"claim {claim.key}, request {request.name}: has subrequests, but the DRAPrioritizedList "
                "feature is disabled"
            )
            return group
        for sub in request.first_available:
            spec = RequestSpec(request.name, sub, True)
            group.alternatives.append(spec)
            if features.experimental and not features.consumable_capacity and sub.capacity is not None:
                spec.error = (
                    f"claim {claim.key}, subrequest {sub.name}: has capacity requests, but the "
                    "DRAConsumableCapacity feature is disabled"
                )
                return group
            spec.error = _validate(claim, spec, sub, classes, features)
            if spec.error is not None:
                return group
        return group
    exact = request.exactly if request.exactly is not None else ExactDeviceRequest()
    if features.experimental and not features.consumable_capacity and exact.capacity is not None:
        group.error = (
            f"claim {claim.key}, request {request.name}: has capacity requests, but the DRAConsumableCapacity "
            "feature is disabled"
        )
        return group
    spec = RequestSpec(request.name, exact, False)
    group.alternatives.append(spec)
    spec.error = _validate(claim, spec, exact, classes, features)
    return group


def _validate(
    claim: ClaimSpec,
    spec: RequestSpec,
    request: ExactDeviceRequest | DeviceSubRequest,
    classes: Mapping[str, DeviceClass],
    features: Features,
) -> str | None:
    where = f"claim {claim.key}, request {spec.name}"
    selectors = _expressions(request.selectors, where)
    if isinstance(selectors, str):
        return selectors
    spec.request_selectors = selectors
    if (
        isinstance(request, ExactDeviceRequest)
        and request.admin_access is not None
        and not features.admin_access
    ):
        return f"{where}: admin access is requested, but the feature is disabled"
    if not spec.class_name:
        return f"{where}: missing device class name (unsupported request type?)"
    device_class = classes.get(spec.class_name)
    claim.classes[spec.class_name] = device_class
    if device_class is None:
        return (
            f"{where}: could not retrieve device class {spec.class_name}: "
            f'deviceclass.resource.k8s.io "{spec.class_name}" not found'
        )
    spec.device_class = device_class
    class_selectors = _expressions(device_class.spec.selectors, f"class {spec.class_name}")
    if isinstance(class_selectors, str):
        return class_selectors
    spec.class_selectors = class_selectors
    mode = request.allocation_mode or MODE_EXACT
    if mode == MODE_EXACT:
        count = 1 if request.count is None else request.count
        if count > _MAX_INT:
            return f"{where}: exact count {count} is too large"
        spec.count = count
    elif mode == MODE_ALL:
        spec.all_mode = True
    else:
        return f"{where}: unsupported count mode {mode}"
    return None


class Preparer:
    """Binds claims (validated once, cached) to one node for one call."""

    def __init__(
        self,
        features: Features,
        pools: NodePools,
        env: SelectorEnvironment,
        state: AllocatedState,
    ) -> None:
        self.features = features
        self.pools = pools
        self.env = env
        self.state = state

    def prepare(self, specs: Sequence[ClaimSpec]) -> list[ClaimPlan]:
        return [self._claim(index, spec) for index, spec in enumerate(specs)]

    def _claim(self, index: int, spec: ClaimSpec) -> ClaimPlan:
        plan = ClaimPlan(index, spec)
        minimum = 0
        for group in spec.requests:
            if group.error is not None:
                raise AllocationError(group.error)
            alternatives: list[RequestData] = []
            for request in group.alternatives:
                if request.error is not None:
                    raise AllocationError(request.error)
                alternatives.append(self._bind(plan, request))
            minimum += min((data.num for data in alternatives), default=0)
            if group.sub:
                plan.requests.append(RequestPlan(group.name, None, alternatives))
            else:
                plan.requests.append(RequestPlan(group.name, alternatives[0], None))
        if minimum > MAX_DEVICES_PER_ALLOCATION:
            raise AllocationError(
                f"claim {plan.key}: number of requested devices {minimum} exceeds the claim limit of "
                f"{MAX_DEVICES_PER_ALLOCATION}"
            )
        plan.min_devices = minimum
        if spec.constraint_error is not None:
            raise AllocationError(spec.constraint_error)
        if spec.constraints:
            plan.constraints = [
                kind(position, requests, name) for kind, position, requests, name in spec.constraints
            ]
        return plan

    def _bind(self, plan: ClaimPlan, spec: RequestSpec) -> RequestData:
        found = candidates(self.pools, self.env, spec.class_selectors, spec.request_selectors)
        data = RequestData(spec, found)
        if spec.all_mode:
            data.all_devices = self._all_devices(plan, data)
            data.num = len(data.all_devices)
        return data

    def _all_devices(self, plan: ClaimPlan, data: RequestData) -> list[NodeDevice]:
        where = f"claim {plan.key}, request {data.name}"
        for pool in self.pools.pools:
            if pool.incomplete:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool} is currently being updated"
                )
            if pool.invalid is not None:
                raise AllocationError(
                    f"{where}: asks for all devices, but resource pool {pool} is currently invalid"
                )
        found = data.candidates
        result: list[NodeDevice] = []
        for device in found.devices:
            failure = found.errors.get(device) if found.errors else None
            if failure is not None:
                raise selector_error(plan, data, failure)
            info = device.info
            if self.features.consumable_capacity and (data.capacity is not None or info.has_capacity):
                amounts, alone = info.consumed(data.capacity_key, data.capacity)
                if amounts is None:
                    continue
                existing = self.state.capacity.get(info.id)
                if existing:
                    alone = fits(info.capacities, amounts, info.capacities.vector(existing), None)
                if not alone:
                    continue
            result.append(device)
        return result

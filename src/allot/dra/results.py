"""Turning a found solution into `status.allocation` records, in upstream form.

Per claim, in the order devices were picked:

* `devices.results`: request (`req` or `req/sub`), driver, pool, device;
  `adminAccess: true` only when requested; the request's tolerations; with
  DeviceBindingAndStatus the device's binding (failure) conditions; for a
  shared device (ConsumableCapacity) a shareID and the consumed amount of
  every capacity of the device (omitted when the device has none).
* `devices.config`: the class configs, once per class, naming the requests
  (the chosen sub-request for firstAvailable) that used the class; then the
  claim's own configs: those without requests, and those naming a request
  or the chosen sub-request of one - each copied once. Upstream 1.35 copied
  an entry once per request it named (fixed in the 1.37 line); configs that
  name only sub-requests that were not chosen are dropped.
* `nodeSelector`: a node-local device (nodeName, or bindsToNode with binding
  conditions enabled) pins the claim to the node; otherwise the devices'
  one-term node selectors are merged into one term (exact duplicates
  skipped); allNodes contributes nothing; nothing at all -> None.

ShareIDs are deterministic: by default a UUIDv5 of the claim's identity (uid,
else namespace/name), the request, the device and how many times this
request already got a share of this device. Callers may pass their own
factory.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from msgspec.structs import replace

from allot.dra.errors import AllocationError
from allot.dra.features import Features
from allot.dra.ids import DeviceId
from allot.dra.requests import ClaimPlan
from allot.dra.search import Pick, Solution
from allot.model.core import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from allot.model.quantity import Quantity
from allot.model.resource import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
)

ShareIdFactory = Callable[[ResourceClaim, str, DeviceId, int], str]

_SHARE_NAMESPACE = uuid.UUID("5f0c6a55-8d0e-4f43-9a47-3c1a9e0b6d21")

SOURCE_CLASS = "FromClass"
SOURCE_CLAIM = "FromClaim"


def default_share_id(claim: ResourceClaim, request: str, device: DeviceId, ordinal: int) -> str:
    """A stable shareID for the `ordinal`-th share of `device` that `request` of `claim` gets."""
    meta = claim.metadata
    identity = meta.uid or f"{meta.namespace}/{meta.name}"
    return str(uuid.uuid5(_SHARE_NAMESPACE, f"{identity}\x00{request}\x00{device}\x00{ordinal}"))


def _next_share_id(
    claim: ResourceClaim,
    request: str,
    device: DeviceId,
    share_id: ShareIdFactory,
    ordinals: dict[tuple[str, DeviceId], int],
) -> str:
    """The shareID of the next share `request` of `claim` takes of `device` (ordinals count per claim)."""
    key = (request, device)
    ordinal = ordinals.get(key, 0)
    ordinals[key] = ordinal + 1
    return share_id(claim, request, device, ordinal)


def for_other_claims(
    results: Sequence[AllocationResult], claims: Sequence[ResourceClaim], share_id: ShareIdFactory
) -> tuple[AllocationResult, ...]:
    """Results made for claims with the same specs, given to `claims` (one per result, in order):
    the same devices, each share named after its new claim as `build_results` would have named it."""
    given: list[AllocationResult] = []
    for result, claim in zip(results, claims, strict=True):
        if all(r.share_id is None for r in result.devices.results):
            given.append(result)
            continue
        ordinals: dict[tuple[str, DeviceId], int] = {}
        devices = tuple(
            r
            if r.share_id is None
            else replace(
                r,
                share_id=_next_share_id(
                    claim, r.request, DeviceId(r.driver, r.pool, r.device), share_id, ordinals
                ),
            )
            for r in result.devices.results
        )
        given.append(replace(result, devices=replace(result.devices, results=devices)))
    return tuple(given)


def _device_result(
    claim: ResourceClaim,
    pick: Pick,
    features: Features,
    share_id: ShareIdFactory,
    ordinals: dict[tuple[str, DeviceId], int],
) -> DeviceRequestAllocationResult:
    info = pick.device.info
    data = pick.request
    device = info.device
    share: str | None = None
    consumed: dict[str, Quantity] | None = None
    if pick.device.shared:
        share = _next_share_id(claim, data.full_name, info.id, share_id, ordinals)
        if pick.amounts:
            caps = info.capacities
            consumed = {
                name: Quantity(amount, device.capacity[name].value.format)
                for name, amount in zip(caps.names, pick.amounts, strict=True)
            }
    binding = features.device_binding
    return DeviceRequestAllocationResult(
        request=data.full_name,
        driver=info.id.driver,
        pool=info.id.pool,
        device=info.id.device,
        admin_access=True if data.admin else None,
        tolerations=data.tolerations,
        binding_conditions=device.binding_conditions if binding else (),
        binding_failure_conditions=device.binding_failure_conditions if binding else (),
        share_id=share,
        consumed_capacity=consumed,
    )


def _configs(plan: ClaimPlan, chosen: tuple[int, ...]) -> tuple[DeviceAllocationConfiguration, ...]:
    if not plan.claim.spec.devices.config and not any(
        request.device_class is not None and request.device_class.spec.config
        for request_plan in plan.requests
        for request in request_plan.alternatives()
    ):
        return ()
    configs: list[DeviceAllocationConfiguration] = []
    class_entries: dict[str, list[int]] = {}
    chosen_names: set[str] = set()
    for request_plan, index in zip(plan.requests, chosen, strict=True):
        data = request_plan.subs[index] if request_plan.subs is not None else request_plan.data
        assert data is not None
        chosen_names.add(request_plan.name)
        if request_plan.subs is not None:
            chosen_names.add(data.full_name)
        device_class = data.device_class
        if device_class is None:
            continue
        positions = class_entries.get(device_class.metadata.name)
        if positions is not None:
            for position in positions:
                entry = configs[position]
                configs[position] = DeviceAllocationConfiguration(
                    source=entry.source, requests=(*entry.requests, data.full_name), opaque=entry.opaque
                )
            continue
        positions = class_entries[device_class.metadata.name] = []
        for class_config in device_class.spec.config:
            positions.append(len(configs))
            configs.append(
                DeviceAllocationConfiguration(
                    source=SOURCE_CLASS, requests=(data.full_name,), opaque=class_config.opaque
                )
            )
    for claim_config in plan.claim.spec.devices.config:
        if not claim_config.requests or any(name in chosen_names for name in claim_config.requests):
            configs.append(
                DeviceAllocationConfiguration(
                    source=SOURCE_CLAIM, requests=claim_config.requests, opaque=claim_config.opaque
                )
            )
    return tuple(configs)


def _contains(requirements: list[NodeSelectorRequirement], requirement: NodeSelectorRequirement) -> bool:
    values = set(requirement.values)
    return any(
        r.key == requirement.key and r.operator == requirement.operator and set(r.values) == values
        for r in requirements
    )


_PINNED: dict[str, NodeSelector] = {}


def pinned_to(node_name: str) -> NodeSelector:
    """`matchFields metadata.name In [node_name]`; immutable, so one record per node is shared."""
    selector = _PINNED.get(node_name)
    if selector is None:
        if len(_PINNED) >= 65_536:
            _PINNED.clear()
        requirement = NodeSelectorRequirement(key="metadata.name", operator="In", values=(node_name,))
        selector = _PINNED[node_name] = NodeSelector(
            node_selector_terms=(NodeSelectorTerm(match_fields=(requirement,)),)
        )
    return selector


def _node_selector(
    plan: ClaimPlan, picks: tuple[Pick, ...], node: Node | None, features: Features
) -> NodeSelector | None:
    fields: list[NodeSelectorRequirement] = []
    expressions: list[NodeSelectorRequirement] = []
    for pick in picks:
        info = pick.device.info
        spec = info.slice.spec
        if info.per_device:
            node_name, selector = info.device.node_name, info.device.node_selector
        else:
            node_name, selector = spec.node_name, spec.node_selector
        if node_name or (features.device_binding and info.binds_to_node):
            return pinned_to(node.metadata.name if node is not None else node_name or "")
        if selector is None:
            continue
        terms = selector.node_selector_terms
        if len(terms) == 1:
            for requirement in terms[0].match_fields:
                if not _contains(fields, requirement):
                    fields.append(requirement)
            for requirement in terms[0].match_expressions:
                if not _contains(expressions, requirement):
                    expressions.append(requirement)
        elif len(terms) > 1:
            raise AllocationError(
                f"create NodeSelector for claim {plan.claim.metadata.name}: "
                f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms"
            )
    if not fields and not expressions:
        return None
    return NodeSelector(
        node_selector_terms=(
            NodeSelectorTerm(match_expressions=tuple(expressions), match_fields=tuple(fields)),
        )
    )


def build_results(
    plans: list[ClaimPlan],
    solution: Solution,
    node: Node | None,
    features: Features,
    share_id: ShareIdFactory,
) -> tuple[AllocationResult, ...]:
    """One AllocationResult per claim, in claim order."""
    results: list[AllocationResult] = []
    for plan, picks, chosen in zip(plans, solution.picks, solution.chosen, strict=True):
        ordinals: dict[tuple[str, DeviceId], int] = {}
        devices = tuple(_device_result(plan.claim, pick, features, share_id, ordinals) for pick in picks)
        results.append(
            AllocationResult(
                devices=DeviceAllocationResult(results=devices, config=_configs(plan, chosen)),
                node_selector=_node_selector(plan, picks, node, features),
            )
        )
    return tuple(results)

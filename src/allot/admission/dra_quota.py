"""What a pod's DRA claims charge to quota, through `deviceClassMappings`.

Kueue charges DRA devices to logical quota resources named in its
configuration (`resources.deviceClassMappings[] = {name, deviceClassNames}`).
allot reads the same mapping and applies it as follows:

* Every ExactCount request of a claim the pod uses (a ResourceClaimTemplate,
  one claim per pod; or a named ResourceClaim, shared, so charged once per
  workload) charges its `count` to the first mapping that lists its
  DeviceClass (Kueue allows one mapping per class; this is that one).
* Consumable capacity (shared GPUs: `capacity.requests` such as
  `gpu.nvidia.com/cores: 25`) is charged through any further mapping that
  lists the same class: such a mapping's `name` is a capacity name, and a
  request charges `count × requested amount` of that capacity to it (nothing
  if it requests none). So `{name: nvidia.com/gpu, deviceClassNames:
  [gpu.nvidia.com]}` followed by `{name: gpu.nvidia.com/cores,
  deviceClassNames: [gpu.nvidia.com]}` charges devices and cores. (Kueue's
  capacity accounting is alpha and charges the device's rounded amount;
  allot charges what the claim asks for, the only amount known before a
  device is chosen.)
* A request for an unmapped DeviceClass, a FirstAvailable request, or
  allocationMode All makes the workload inadmissible, with a reason, as in
  Kueue (which supports ExactCount only).

Amounts use the admission units of `allot.admission.resources`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from allot.cluster.resources import amount
from allot.model.core import Pod
from allot.model.resource import ResourceClaim, ResourceClaimSpec, ResourceClaimTemplate

ALLOCATION_MODE_ALL = "All"

Mapper = Callable[[str], tuple[str, ...]]


class DraQuotaError(ValueError):
    """A claim admission cannot charge to quota; the message says why."""


def _charge_spec(spec: ResourceClaimSpec, owner: str, mapped: Mapper, into: dict[str, int]) -> None:
    for request in spec.devices.requests:
        if request.exactly is None:
            raise DraQuotaError(
                f"{owner}: request {request.name!r} uses firstAvailable; admission supports "
                "only ExactCount requests"
            )
        exact = request.exactly
        if exact.allocation_mode == ALLOCATION_MODE_ALL:
            raise DraQuotaError(
                f"{owner}: request {request.name!r} uses allocationMode All; admission supports "
                "only ExactCount requests"
            )
        names = mapped(exact.device_class_name)
        if not names:
            raise DraQuotaError(
                f"{owner}: DeviceClass {exact.device_class_name!r} of request {request.name!r} "
                "is not in any resources.deviceClassMappings entry"
            )
        count = exact.count if exact.count is not None else 1
        into[names[0]] = into.get(names[0], 0) + count
        capacity = exact.capacity.requests if exact.capacity is not None else {}
        for name in names[1:]:
            if name in capacity:
                value = count * amount(name, capacity[name])
                if value:
                    into[name] = into.get(name, 0) + value


def claim_charges(
    pod: Pod,
    *,
    claims: Mapping[str, ResourceClaim],
    templates: Mapping[tuple[str, str], ResourceClaimTemplate],
    mapped: Mapper,
    shared_seen: set[tuple[str, str]],
) -> dict[str, int]:
    """Quota a pod's claims charge, per resource name; raises DraQuotaError.

    `claims` are keyed `namespace/name`; a cluster's own table can be
    passed, so claims created when the pod entered it (HAMi's) are found.
    `shared_seen` collects named (shared) claims across the pods of one
    workload so each is charged once.
    """
    charges: dict[str, int] = {}
    namespace = pod.namespace
    for entry in pod.spec.resource_claims:
        if entry.resource_claim_template_name:
            key = (namespace, entry.resource_claim_template_name)
            template = templates.get(key)
            if template is None:
                raise DraQuotaError(
                    f"ResourceClaimTemplate {namespace}/{entry.resource_claim_template_name} "
                    f"(pod claim {entry.name!r}) does not exist"
                )
            _charge_spec(template.spec.spec, f"ResourceClaimTemplate {key[0]}/{key[1]}", mapped, charges)
        elif entry.resource_claim_name:
            key = (namespace, entry.resource_claim_name)
            if key in shared_seen:
                continue
            claim = claims.get(f"{namespace}/{entry.resource_claim_name}")
            if claim is None:
                raise DraQuotaError(
                    f"ResourceClaim {namespace}/{entry.resource_claim_name} "
                    f"(pod claim {entry.name!r}) does not exist"
                )
            shared_seen.add(key)
            _charge_spec(claim.spec, f"ResourceClaim {key[0]}/{key[1]}", mapped, charges)
    return charges

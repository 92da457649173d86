"""Defaults the API server (and kubelet) would have filled in.

Manifests written by hand omit what `kubectl get -o yaml` would show:
a request's allocation mode and count, a pod's scheduler name, a node's
allocatable. The scheduler code may then rely on these being set.
"""

from __future__ import annotations

from typing import TypeVar

from msgspec.structs import replace

from allot.model.base import Object
from allot.model.core import Container, Node, Pod, PodSpec
from allot.model.resource import (
    DeviceRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimTemplate,
)
from allot.model.scheduling import PriorityClass

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"

_O = TypeVar("_O", bound=Object)


def _tolerations(tolerations: tuple[DeviceToleration, ...]) -> tuple[DeviceToleration, ...]:
    return tuple(t if t.operator else replace(t, operator="Equal") for t in tolerations)


def _count_and_mode(mode: str, count: int | None) -> tuple[str, int | None]:
    mode = mode or ALLOCATION_MODE_EXACT_COUNT
    if mode == ALLOCATION_MODE_EXACT_COUNT and count is None:
        count = 1
    return mode, count


def _exact(request: ExactDeviceRequest) -> ExactDeviceRequest:
    mode, count = _count_and_mode(request.allocation_mode, request.count)
    return replace(request, allocation_mode=mode, count=count, tolerations=_tolerations(request.tolerations))


def _request(request: DeviceRequest) -> DeviceRequest:
    if request.exactly is not None:
        return replace(request, exactly=_exact(request.exactly))
    subrequests = []
    for sub in request.first_available:
        mode, count = _count_and_mode(sub.allocation_mode, sub.count)
        subrequests.append(
            replace(sub, allocation_mode=mode, count=count, tolerations=_tolerations(sub.tolerations))
        )
    return replace(request, first_available=tuple(subrequests))


def _container_requests(container: Container) -> Container:
    """A limit without a request means the request equals the limit (API server defaulting)."""
    resources = container.resources
    missing = {name: value for name, value in resources.limits.items() if name not in resources.requests}
    if not missing:
        return container
    requests = {**resources.requests, **missing}
    return replace(container, resources=replace(resources, requests=requests))


def _pod_spec(spec: PodSpec) -> PodSpec:
    if not spec.scheduler_name:
        spec = replace(spec, scheduler_name=DEFAULT_SCHEDULER_NAME)
    if spec.preemption_policy is None:
        spec = replace(spec, preemption_policy=PREEMPT_LOWER_PRIORITY)
    containers = tuple(_container_requests(c) for c in spec.containers)
    init_containers = tuple(_container_requests(c) for c in spec.init_containers)
    return replace(spec, containers=containers, init_containers=init_containers)


def default_claim_spec(spec: ResourceClaimSpec) -> ResourceClaimSpec:
    requests = tuple(_request(r) for r in spec.devices.requests)
    return replace(spec, devices=replace(spec.devices, requests=requests))


def apply_defaults(obj: _O) -> _O:
    """The object as the API server would store it."""
    result: Object = obj
    if obj.NAMESPACED and not obj.metadata.namespace:
        result = replace(result, metadata=replace(result.metadata, namespace="default"))
    if isinstance(result, ResourceClaim):
        result = replace(result, spec=default_claim_spec(result.spec))
    elif isinstance(result, ResourceClaimTemplate):
        result = replace(result, spec=replace(result.spec, spec=default_claim_spec(result.spec.spec)))
    elif isinstance(result, Pod):
        result = replace(result, spec=_pod_spec(result.spec))
    elif isinstance(result, Node):
        # The kubelet always reports allocatable; hand-written nodes often give only capacity.
        if result.status.capacity and not result.status.allocatable:
            status = replace(result.status, allocatable=dict(result.status.capacity))
            result = replace(result, status=status)
    elif isinstance(result, PriorityClass) and result.preemption_policy is None:
        result = replace(result, preemption_policy=PREEMPT_LOWER_PRIORITY)
    return result  # type: ignore[return-value]

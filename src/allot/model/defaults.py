"""Defaults the API server (and kubelet) would have filled in.

Manifests written by hand omit what `kubectl get -o yaml` would show:
a request's allocation mode and count, a pod's scheduler name, a node's
allocatable. The scheduler code may then rely on these being set.
"""

from __future__ import annotations

from typing import TypeVar

from msgspec.structs import replace

from allot.model.base import LabelSelector, LabelSelectorRequirement, Object
from allot.model.core import (
    Affinity,
    Container,
    ContainerPort,
    Namespace,
    Node,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodSpec,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from allot.model.resource import (
    DeviceRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimTemplate,
)
from allot.model.scheduling import PriorityClass
from allot.model.storage import IMMEDIATE, StorageClass

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
# The label the API server puts on every Namespace (namespace selectors rely on it).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

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


def _port(port: ContainerPort, host_network: bool) -> ContainerPort:
    if not port.protocol:
        port = replace(port, protocol="TCP")
    if host_network and port.host_port == 0:
        port = replace(port, host_port=port.container_port)
    return port


def _container(container: Container, host_network: bool) -> Container:
    """A limit without a request means the request equals the limit; ports default to TCP, and
    to the container port on the host with hostNetwork (API server defaulting)."""
    if container.ports:
        container = replace(container, ports=tuple(_port(p, host_network) for p in container.ports))
    resources = container.resources
    missing = {name: value for name, value in resources.limits.items() if name not in resources.requests}
    if not missing:
        return container
    requests = {**resources.requests, **missing}
    return replace(container, resources=replace(resources, requests=requests))


def _with_label_keys(
    selector: LabelSelector | None, labels: dict[str, str], keys: tuple[str, ...], operator: str
) -> LabelSelector | None:
    """The selector with `key <operator> [the pod's value]` added for each key the pod has a label
    for: what the API server does with matchLabelKeys (In) and mismatchLabelKeys (NotIn) when a
    pod is created. A requirement already there (a pod read back from the API) is not added again."""
    if selector is None or not keys:
        return selector
    expressions = list(selector.match_expressions)
    for key in keys:
        if key in labels:
            requirement = LabelSelectorRequirement(key=key, operator=operator, values=(labels[key],))
            if requirement not in expressions:
                expressions.append(requirement)
    if len(expressions) == len(selector.match_expressions):
        return selector
    return replace(selector, match_expressions=tuple(expressions))


def _affinity_term(term: PodAffinityTerm, labels: dict[str, str]) -> PodAffinityTerm:
    selector = _with_label_keys(term.label_selector, labels, term.match_label_keys, "In")
    selector = _with_label_keys(selector, labels, term.mismatch_label_keys, "NotIn")
    return term if selector is term.label_selector else replace(term, label_selector=selector)


def _pod_affinity(affinity: PodAffinity | None, labels: dict[str, str]) -> PodAffinity | None:
    if affinity is None:
        return None
    required = tuple(
        _affinity_term(t, labels) for t in affinity.required_during_scheduling_ignored_during_execution
    )
    preferred = tuple(
        WeightedPodAffinityTerm(
            weight=w.weight, pod_affinity_term=_affinity_term(w.pod_affinity_term, labels)
        )
        for w in affinity.preferred_during_scheduling_ignored_during_execution
    )
    return replace(
        affinity,
        required_during_scheduling_ignored_during_execution=required,
        preferred_during_scheduling_ignored_during_execution=preferred,
    )


def _affinity(affinity: Affinity | None, labels: dict[str, str]) -> Affinity | None:
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return affinity
    return replace(
        affinity,
        pod_affinity=_pod_affinity(affinity.pod_affinity, labels),
        pod_anti_affinity=_pod_affinity(affinity.pod_anti_affinity, labels),
    )


def _spread(constraint: TopologySpreadConstraint, labels: dict[str, str]) -> TopologySpreadConstraint:
    selector = _with_label_keys(constraint.label_selector, labels, constraint.match_label_keys, "In")
    return (
        constraint if selector is constraint.label_selector else replace(constraint, label_selector=selector)
    )


def _pod_spec(spec: PodSpec, labels: dict[str, str]) -> PodSpec:
    if not spec.scheduler_name:
        spec = replace(spec, scheduler_name=DEFAULT_SCHEDULER_NAME)
    if spec.preemption_policy is None:
        spec = replace(spec, preemption_policy=PREEMPT_LOWER_PRIORITY)
    containers = tuple(_container(c, spec.host_network) for c in spec.containers)
    init_containers = tuple(_container(c, spec.host_network) for c in spec.init_containers)
    spread = tuple(_spread(c, labels) for c in spec.topology_spread_constraints)
    return replace(
        spec,
        containers=containers,
        init_containers=init_containers,
        affinity=_affinity(spec.affinity, labels),
        topology_spread_constraints=spread,
    )


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
        result = replace(result, spec=_pod_spec(result.spec, result.metadata.labels))
    elif isinstance(result, Node):
        # The kubelet always reports allocatable; hand-written nodes often give only capacity.
        if result.status.capacity and not result.status.allocatable:
            status = replace(result.status, allocatable=dict(result.status.capacity))
            result = replace(result, status=status)
    elif isinstance(result, PriorityClass) and result.preemption_policy is None:
        result = replace(result, preemption_policy=PREEMPT_LOWER_PRIORITY)
    elif isinstance(result, StorageClass):
        if result.volume_binding_mode is None:
            result = replace(result, volume_binding_mode=IMMEDIATE)
        if result.reclaim_policy is None:
            result = replace(result, reclaim_policy="Delete")
    elif isinstance(result, Namespace) and result.metadata.labels.get(NAMESPACE_NAME_LABEL) != result.name:
        labels = {**result.metadata.labels, NAMESPACE_NAME_LABEL: result.name}
        result = replace(result, metadata=replace(result.metadata, labels=labels))
    return result  # type: ignore[return-value]

"""Fluent builders for test objects, in the spirit of kube-scheduler's testing wrappers.

Tests describe clusters in a few lines: `node("n1", cpu="4", gpus=2)`,
`pod("p", cpu="1", claims={"gpu": "one-gpu"})`, `gpu_slice("n1", 8)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from allot.model.base import LabelSelector, ObjectMeta
from allot.model.core import (
    Affinity,
    Condition,
    Container,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    NodeSpec,
    NodeStatus,
    Pod,
    PodResourceClaim,
    PodSpec,
    PreferredSchedulingTerm,
    ResourceRequirements,
    Taint,
    Toleration,
)
from allot.model.defaults import apply_defaults
from allot.model.quantity import Quantity
from allot.model.resource import (
    CELDeviceSelector,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClass,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceRequest,
    DeviceSelector,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceClaimTemplate,
    ResourceClaimTemplateSpec,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from allot.model.scheduling import PodDisruptionBudget, PodDisruptionBudgetSpec, PriorityClass

GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"


def q(value: str | int) -> Quantity:
    return Quantity.coerce(value)


def node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    unschedulable: bool = False,
    ready: bool = True,
    extended: Mapping[str, str] | None = None,
) -> Node:
    capacity = {"cpu": q(cpu), "memory": q(memory), "pods": q(pods)}
    capacity.update({k: q(v) for k, v in (extended or {}).items()})
    return Node(
        api_version="v1",
        kind="Node",
        metadata=ObjectMeta(name=name, labels=dict(labels or {})),
        spec=NodeSpec(unschedulable=unschedulable, taints=tuple(taints)),
        status=NodeStatus(
            capacity=capacity,
            allocatable=dict(capacity),
            conditions=(Condition(type="Ready", status="True" if ready else "False"),),
        ),
    )


def pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "100m",
    memory: str | None = None,
    extended: Mapping[str, str] | None = None,
    claims: Mapping[str, str] | None = None,
    claim_names: Mapping[str, str] | None = None,
    node_name: str = "",
    priority: int | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Toleration] = (),
    required_affinity: Sequence[NodeSelectorRequirement] = (),
    preferred_affinity: Sequence[tuple[int, Sequence[NodeSelectorRequirement]]] = (),
    scheduler_name: str = "",
    preemption_policy: str | None = None,
) -> Pod:
    requests: dict[str, Quantity] = {}
    if cpu is not None:
        requests["cpu"] = q(cpu)
    if memory is not None:
        requests["memory"] = q(memory)
    requests.update({k: q(v) for k, v in (extended or {}).items()})
    entries = [PodResourceClaim(name=n, resource_claim_template_name=t) for n, t in (claims or {}).items()]
    entries += [PodResourceClaim(name=n, resource_claim_name=c) for n, c in (claim_names or {}).items()]
    affinity = None
    if required_affinity or preferred_affinity:
        required = (
            NodeSelector(node_selector_terms=(NodeSelectorTerm(match_expressions=tuple(required_affinity)),))
            if required_affinity
            else None
        )
        preferred = tuple(
            PreferredSchedulingTerm(weight=w, preference=NodeSelectorTerm(match_expressions=tuple(reqs)))
            for w, reqs in preferred_affinity
        )
        affinity = Affinity(
            node_affinity=NodeAffinity(
                required_during_scheduling_ignored_during_execution=required,
                preferred_during_scheduling_ignored_during_execution=preferred,
            )
        )
    return apply_defaults(
        Pod(
            api_version="v1",
            kind="Pod",
            metadata=ObjectMeta(
                name=name, namespace=namespace, labels=dict(labels or {}), annotations=dict(annotations or {})
            ),
            spec=PodSpec(
                containers=(Container(name="main", resources=ResourceRequirements(requests=requests)),),
                resource_claims=tuple(entries),
                node_name=node_name,
                priority=priority,
                node_selector=dict(node_selector or {}),
                tolerations=tuple(tolerations),
                affinity=affinity,
                scheduler_name=scheduler_name,
                preemption_policy=preemption_policy,
            ),
        )
    )


def requirement(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key=key, operator=operator, values=tuple(values))


def device(
    name: str, attributes: Mapping[str, Any] | None = None, capacity: Mapping[str, str] | None = None
) -> Device:
    attrs: dict[str, DeviceAttribute] = {}
    for key, value in (attributes or {}).items():
        if isinstance(value, bool):
            attrs[key] = DeviceAttribute(bool_value=value)
        elif isinstance(value, int):
            attrs[key] = DeviceAttribute(int_value=value)
        else:
            attrs[key] = DeviceAttribute(string_value=str(value))
    return Device(
        name=name,
        attributes=attrs,
        capacity={k: DeviceCapacity(value=q(v)) for k, v in (capacity or {}).items()},
    )


def device_slice(node_name: str, devices: Sequence[Device], *, driver: str = GPU_DRIVER) -> ResourceSlice:
    return ResourceSlice(
        api_version="resource.k8s.io/v1",
        kind="ResourceSlice",
        metadata=ObjectMeta(name=f"{node_name}-{driver}"),
        spec=ResourceSliceSpec(
            driver=driver,
            node_name=node_name,
            pool=ResourcePool(name=node_name, generation=1, resource_slice_count=1),
            devices=tuple(devices),
        ),
    )


def gpu_slice(node_name: str, count: int, *, model: str = "A100") -> ResourceSlice:
    return device_slice(node_name, [device(f"gpu-{i}", {"model": model, "index": i}) for i in range(count)])


def device_class(
    name: str = GPU_DRIVER, *, driver: str = GPU_DRIVER, extended_resource: str | None = None
) -> DeviceClass:
    selector = DeviceSelector(cel=CELDeviceSelector(expression=f'device.driver == "{driver}"'))
    return DeviceClass(
        api_version="resource.k8s.io/v1",
        kind="DeviceClass",
        metadata=ObjectMeta(name=name),
        spec=DeviceClassSpec(selectors=(selector,), extended_resource_name=extended_resource),
    )


def claim_spec(*requests: tuple[str, str, int], match_attribute: str | None = None) -> ResourceClaimSpec:
    """Requests as (name, device class, count)."""
    return ResourceClaimSpec(
        devices=DeviceClaim(
            requests=tuple(
                DeviceRequest(name=n, exactly=ExactDeviceRequest(device_class_name=c, count=k))
                for n, c, k in requests
            ),
            constraints=(DeviceConstraint(match_attribute=match_attribute),) if match_attribute else (),
        )
    )


def claim_template(
    name: str, spec: ResourceClaimSpec, *, namespace: str = "default"
) -> ResourceClaimTemplate:
    return apply_defaults(
        ResourceClaimTemplate(
            api_version="resource.k8s.io/v1",
            kind="ResourceClaimTemplate",
            metadata=ObjectMeta(name=name, namespace=namespace),
            spec=ResourceClaimTemplateSpec(spec=spec),
        )
    )


def claim(name: str, spec: ResourceClaimSpec, *, namespace: str = "default") -> ResourceClaim:
    return apply_defaults(
        ResourceClaim(
            api_version="resource.k8s.io/v1",
            kind="ResourceClaim",
            metadata=ObjectMeta(name=name, namespace=namespace),
            spec=spec,
        )
    )


def priority_class(name: str, value: int, *, default: bool = False) -> PriorityClass:
    return apply_defaults(
        PriorityClass(
            api_version="scheduling.k8s.io/v1",
            kind="PriorityClass",
            metadata=ObjectMeta(name=name),
            value=value,
            global_default=default,
        )
    )


def disruption_budget(
    name: str, labels: Mapping[str, str], *, min_available: int | str | None = None
) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        api_version="policy/v1",
        kind="PodDisruptionBudget",
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodDisruptionBudgetSpec(
            min_available=min_available, selector=LabelSelector(match_labels=dict(labels))
        ),
    )

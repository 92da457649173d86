"""Building blocks for jobs, shared by scenario templates and traces.

A tenant from its scenario entry, the prototype pod a job template stamps
its pods from, the ResourceClaimTemplate its devices come from, and how
many whole GPUs a cluster offers (for sizing trace jobs).
"""

from __future__ import annotations

import math

from allot.model.base import ObjectMeta
from allot.model.core import (
    Container,
    Node,
    Pod,
    PodResourceClaim,
    PodSpec,
    ResourceClaimReference,
    ResourceRequirements,
    Toleration,
)
from allot.model.defaults import apply_defaults
from allot.model.kueue import MAX_EXEC_TIME_LABEL, PRIORITY_CLASS_LABEL
from allot.model.loader import Manifests
from allot.model.quantity import Quantity
from allot.model.resource import (
    ResourceClaimSpec,
    ResourceClaimTemplate,
    ResourceClaimTemplateSpec,
    ResourceSlice,
)
from allot.sim.inventory import PLUGIN_GPU_RESOURCE
from allot.sim.scenario import devices as shorthand
from allot.sim.scenario.schema import JobTemplate, TenantSpec
from allot.sim.workload import Tenant

DEFAULT_REQUESTS = {"cpu": "1", "memory": "2Gi"}
CLAIM_ENTRY = "devices"


def tenant_of(spec: TenantSpec) -> Tenant:
    """The workload's view of a tenant from its scenario entry."""
    return Tenant(
        name=spec.name,
        namespace=spec.namespace,
        local_queue=spec.local_queue,
        weight=spec.weight,
        trust=spec.trust,
        cluster_queue=spec.cluster_queue,
    )


def whole_gpus(manifests: Manifests) -> int:
    """GPUs that whole-GPU requests can get: devices of type gpu on the NVIDIA driver, or plugin GPUs."""
    count = 0
    for s in manifests.of_kind(ResourceSlice):
        if s.spec.driver != "gpu.nvidia.com":
            continue
        for device in s.spec.devices:
            kind = device.attributes.get("type")
            if kind is not None and kind.value == "gpu":
                count += 1
    if count:
        return count
    return sum(
        n.status.allocatable[PLUGIN_GPU_RESOURCE].value()
        for n in manifests.of_kind(Node)
        if PLUGIN_GPU_RESOURCE in n.status.allocatable
    )


def prototype_pod(template: JobTemplate, tenant: Tenant, claim: ResourceClaimSpec | None) -> Pod:
    """The pod every job of the template starts from (names and labels are added per job)."""
    requests = {k: Quantity.coerce(v) for k, v in DEFAULT_REQUESTS.items()} if not template.resources else {}
    requests.update(template.resources)
    tolerations: tuple[Toleration, ...] = template.tolerations
    uses_gpu = PLUGIN_GPU_RESOURCE in requests or (
        claim is not None
        and any(
            r.exactly is not None and r.exactly.device_class_name != shorthand.RDMA_CLASS
            for r in claim.devices.requests
        )
    )
    if uses_gpu and shorthand.GPU_TOLERATION not in tolerations:
        tolerations = (*tolerations, shorthand.GPU_TOLERATION)
    labels = {PRIORITY_CLASS_LABEL: template.workload_priority} if template.workload_priority else {}
    if template.runtime_estimate is not None:
        labels[MAX_EXEC_TIME_LABEL] = str(math.ceil(template.runtime_estimate))
    return apply_defaults(
        Pod(
            api_version="v1",
            kind="Pod",
            metadata=ObjectMeta(namespace=tenant.namespace, labels=labels),
            spec=PodSpec(
                containers=(
                    Container(
                        name="main",
                        resources=ResourceRequirements(
                            requests=requests,
                            claims=(ResourceClaimReference(name=CLAIM_ENTRY),) if claim is not None else (),
                        ),
                    ),
                ),
                resource_claims=(
                    (PodResourceClaim(name=CLAIM_ENTRY, resource_claim_template_name=template.name),)
                    if claim is not None
                    else ()
                ),
                priority_class_name=template.priority_class or "",
                tolerations=tolerations,
                node_selector=dict(template.node_selector),
                restart_policy="Never",
            ),
        )
    )


def claim_template(name: str, namespace: str, spec: ResourceClaimSpec) -> ResourceClaimTemplate:
    return ResourceClaimTemplate(
        api_version="resource.k8s.io/v1",
        kind="ResourceClaimTemplate",
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=ResourceClaimTemplateSpec(spec=spec),
    )

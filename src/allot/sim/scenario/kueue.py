"""The Kueue objects a scenario implies: one ClusterQueue per tenant in a cohort, and the rest.

For every tenant whose ClusterQueue is not among the scenario's manifests,
allot generates (as plain manifests, validated like any input):

* a ClusterQueue in the scenario's cohort (`kueue.cohort`, default `all`)
  with `fairSharing.weight` = the tenant's weight, preemption
  `{withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}`, a
  namespaceSelector for the tenant's namespace, and one resource group
  covering every resource the workload's pods ask for, in flavor
  `default`. Nominal quotas come from the tenant's `quota`; GPUs
  (`nvidia.com/gpu`, or `gpus:` for short) not given there are the
  cluster's whole GPUs split by weight; everything else is unlimited;
* the tenant's Namespace and LocalQueue, when missing;
* a ResourceFlavor `default`, when missing;
* a Kueue Configuration, when the manifests have none, mapping each
  DeviceClass the pods use to a quota resource: the class's
  `extendedResourceName` (`nvidia.com/gpu` for NVIDIA's GPUs) or
  `<class>/devices`, plus `cores` for classes asked for GPU shares.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from allot.cluster.resources import pod_requests
from allot.model.core import Namespace, Pod
from allot.model.kueue import ClusterQueue, LocalQueue, ResourceFlavor
from allot.model.kueue_config import Configuration
from allot.model.loader import Manifests
from allot.model.quantity import Quantity
from allot.model.resource import DeviceClass, ResourceClaimSpec
from allot.sim.scenario.devices import SHARE_CAPACITY_CORES
from allot.sim.workload import Tenant

GPU_RESOURCE = "nvidia.com/gpu"
FLAVOR = "default"
ALIASES = {"gpus": GPU_RESOURCE}
UNLIMITED = {"cpu": "100000", "memory": "1000Ti"}
UNLIMITED_COUNT = "1000000"


def quota_name(device_class: str, classes: Mapping[str, DeviceClass]) -> str:
    found = classes.get(device_class)
    if found is not None and found.spec.extended_resource_name:
        return found.spec.extended_resource_name
    return f"{device_class}/devices"


def device_mappings(
    claims: Iterable[ResourceClaimSpec], classes: Mapping[str, DeviceClass]
) -> dict[str, list[str]]:
    """DeviceClass -> quota resource names (count first, then capacity names) for these claims."""
    mappings: dict[str, list[str]] = {}
    for spec in claims:
        for request in spec.devices.requests:
            if request.exactly is None:
                continue
            name = request.exactly.device_class_name
            names = mappings.setdefault(name, [quota_name(name, classes)])
            capacity = request.exactly.capacity
            if (
                capacity is not None
                and SHARE_CAPACITY_CORES in capacity.requests
                and SHARE_CAPACITY_CORES not in names
            ):
                names.append(SHARE_CAPACITY_CORES)
    return mappings


def requested_resources(pods: Iterable[Pod], mappings: Mapping[str, list[str]]) -> set[str]:
    resources = {"cpu", "memory"}
    for pod in pods:
        resources.update(pod_requests(pod))
    for names in mappings.values():
        resources.update(names)
    return resources


def _split(total: int, weights: list[float]) -> list[int]:
    """Integers proportional to weights summing to `total` (largest remainders)."""
    whole = sum(weights)
    if whole <= 0 or total <= 0:
        return [0] * len(weights)
    exact = [total * w / whole for w in weights]
    shares = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in order[: total - sum(shares)]:
        shares[i] += 1
    return shares


def kueue_manifests(
    *,
    tenants: list[Tenant],
    quotas: Mapping[str, Mapping[str, Quantity] | None],
    existing: Manifests,
    resources: set[str],
    mappings: Mapping[str, list[str]],
    whole_gpus: int,
    cohort: str,
) -> list[dict[str, Any]]:
    """Manifests (plain data) for what `existing` lacks; see the module docstring."""
    queues = {cq.name for cq in existing.of_kind(ClusterQueue)}
    local = {lq.key for lq in existing.of_kind(LocalQueue)}
    namespaces = {ns.name for ns in existing.of_kind(Namespace)}
    flavors = {f.name for f in existing.of_kind(ResourceFlavor)}
    generated = [t for t in tenants if t.cluster_queue not in queues]
    gpu_split = dict(
        zip((t.name for t in generated), _split(whole_gpus, [t.weight for t in generated]), strict=True)
    )
    docs: list[dict[str, Any]] = []
    if not existing.of_kind(Configuration) and (generated or mappings):
        docs.append(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "fairSharing": {
                    "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
                },
                "resources": {
                    "deviceClassMappings": [
                        {"name": name, "deviceClassNames": [device_class]}
                        for device_class, names in sorted(mappings.items())
                        for name in names
                    ]
                },
            }
        )
    if generated and FLAVOR not in flavors:
        docs.append(
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}
        )
    for tenant in tenants:
        if tenant.namespace not in namespaces:
            namespaces.add(tenant.namespace)
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {
                        "name": tenant.namespace,
                        "labels": {"kubernetes.io/metadata.name": tenant.namespace},
                    },
                }
            )
        if tenant.local_queue and f"{tenant.namespace}/{tenant.local_queue}" not in local:
            docs.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": tenant.local_queue, "namespace": tenant.namespace},
                    "spec": {"clusterQueue": tenant.cluster_queue},
                }
            )
    for tenant in generated:
        given = {ALIASES.get(k, k): v for k, v in (quotas.get(tenant.name) or {}).items()}
        quota = []
        for resource in sorted(resources | set(given)):
            if resource in given:
                nominal = given[resource].canonical()
            elif resource == GPU_RESOURCE:
                nominal = str(gpu_split[tenant.name])
            else:
                nominal = UNLIMITED.get(resource, UNLIMITED_COUNT)
            quota.append({"name": resource, "nominalQuota": nominal})
        docs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": tenant.cluster_queue},
                "spec": {
                    "cohortName": cohort,
                    "fairSharing": {"weight": str(tenant.weight)},
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant.namespace}},
                    "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                    "queueingStrategy": "BestEffortFIFO",
                    "resourceGroups": [
                        {
                            "coveredResources": [q["name"] for q in quota],
                            "flavors": [{"name": FLAVOR, "resources": quota}],
                        }
                    ],
                },
            }
        )
    return docs

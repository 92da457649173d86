"""Extended resources served by DRA (DeviceClass `extendedResourceName`, Kubernetes' DRAExtendedResource).

A pod may still ask the device-plugin way, `nvidia.com/gpu: 2`. On a node
whose allocatable lists that resource, the device plugin serves it and
NodeResourcesFit counts it. On a node that does not, a DeviceClass naming
the resource (explicitly with `extendedResourceName`, or implicitly as
`deviceclass.resource.kubernetes.io/<class>`) can serve it: the scheduler
builds a claim with one ExactCount request per (container, resource),
named `container-<i>-request-<j>`, allocates it with the pod's other
claims, and creates it when the pod is bound, as kube-scheduler does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from allot.cluster.claims import EXTENDED_CLAIM_ANNOTATION, EXTENDED_CLAIM_ENTRY, object_uid, pod_owner
from allot.model.base import ObjectMeta
from allot.model.core import ContainerExtendedResourceRequest, Pod
from allot.model.resource import (
    DeviceClaim,
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"


def resource_classes(classes: Iterable[DeviceClass]) -> dict[str, str]:
    """Extended resource name -> the DeviceClass that serves it.

    When two classes claim one name, the newer wins, then the name that
    sorts first (upstream's rule); implicit names always map to their class.
    """
    mapping: dict[str, str] = {}
    chosen: dict[str, tuple[str, str]] = {}
    for device_class in classes:
        mapping[IMPLICIT_PREFIX + device_class.name] = device_class.name
        name = device_class.spec.extended_resource_name
        if not name:
            continue
        created = device_class.metadata.creation_timestamp or ""
        current = chosen.get(name)
        # Newer creation timestamp wins; on a tie the lexicographically first class name.
        if current is None or (created, _reverse(device_class.name)) > (current[0], _reverse(current[1])):
            chosen[name] = (created, device_class.name)
    mapping.update({name: class_name for name, (_, class_name) in chosen.items()})
    return mapping


def _reverse(text: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in text)


def requested(pod: Pod, served: Mapping[str, str]) -> list[tuple[int, str, str, int]]:
    """(container index, container name, resource, count) for each DRA-servable extended request."""
    wanted: list[tuple[int, str, str, int]] = []
    for index, container in enumerate(pod.spec.containers):
        for resource, quantity in sorted(container.resources.requests.items()):
            if resource in served and quantity.value() > 0:
                wanted.append((index, container.name, resource, quantity.value()))
    return wanted


def extended_claim(
    pod: Pod, wanted: list[tuple[int, str, str, int]], served: Mapping[str, str], resources: frozenset[str]
) -> tuple[ResourceClaim, tuple[ContainerExtendedResourceRequest, ...]] | None:
    """The claim for the pod's requests of `resources` (those the node's device plugins do not serve)."""
    requests: list[DeviceRequest] = []
    mappings: list[ContainerExtendedResourceRequest] = []
    per_container: dict[int, int] = {}
    for index, container_name, resource, count in wanted:
        if resource not in resources:
            continue
        ordinal = per_container.get(index, 0)
        per_container[index] = ordinal + 1
        name = f"container-{index}-request-{ordinal}"
        requests.append(
            DeviceRequest(
                name=name,
                exactly=ExactDeviceRequest(
                    device_class_name=served[resource], allocation_mode="ExactCount", count=count
                ),
            )
        )
        mappings.append(
            ContainerExtendedResourceRequest(
                container_name=container_name, resource_name=resource, request_name=name
            )
        )
    if not requests:
        return None
    claim_name = (
        f"{pod.name}-{EXTENDED_CLAIM_ENTRY}"[:57] + "-" + object_uid("ext", pod.namespace, pod.name)[:5]
    )
    owner = pod_owner(pod)
    claim = ResourceClaim(
        api_version="resource.k8s.io/v1",
        kind="ResourceClaim",
        metadata=ObjectMeta(
            name=claim_name,
            namespace=pod.namespace,
            uid=object_uid("ResourceClaim", pod.namespace, claim_name),
            annotations={EXTENDED_CLAIM_ANNOTATION: "true"},
            owner_references=(owner,),
        ),
        spec=ResourceClaimSpec(devices=DeviceClaim(requests=tuple(requests))),
    )
    return claim, tuple(mappings)

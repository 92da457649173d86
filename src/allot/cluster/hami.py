"""HAMi-style GPU requests turned into ResourceClaims, as HAMi-DRA's mutating webhook does.

Users of HAMi ask for shared GPUs with extended resources in a container's
limits: `nvidia.com/gpu` (how many physical GPUs), `nvidia.com/gpucores`
(percent of each GPU's SMs), `nvidia.com/gpumem` (MiB of each GPU's
memory) or `nvidia.com/gpumem-percentage`, and pick GPU models or UUIDs
with the annotations `nvidia.com/use-gputype` / `nouse-gputype` /
`use-gpuuuid` / `nouse-gpuuuid`. HAMi-DRA (Project-HAMi/HAMi-DRA,
`pkg/webhook/dra/mutating.go`) rewrites such a pod at admission:

* per container with `nvidia.com/gpu`, one ResourceClaim named
  `<namespace>-<pod>-<container>-nvidia` (DNS-label truncated with a hash)
  holding one request `gpu` of class `hami-core-gpu.project-hami.io`,
  `count` = the GPU number, a selector on `type == "hami-gpu"`, and
  capacity requests per GPU: `cores` = gpucores, `memory` = gpumem MiB in
  bytes; what is not given is left to the device's request policy (HAMi's
  driver defaults both to the whole GPU);
* the annotations become CEL selectors on `productName` / `uuid`;
* the `nvidia.com/*` resources leave the container, which now names the
  claim in `resources.claims`; the pod lists it in `spec.resourceClaims`
  and gets the label `hami.io/dra: "true"`.

Differences:

* a request for several GPUs gets a `distinctAttribute` constraint on the
  GPU's `uuid`: under DRA's rules a shared device may serve one request
  more than once, and HAMi means several physical GPUs;
* `gpumem-percentage` (which HAMi-DRA does not map) becomes a prioritized
  list with one alternative per distinct memory size of HAMi GPUs in the
  cluster, each selecting GPUs of that size and asking for the percentage
  of it (rounded up to MiB);
* the claim is owned by the pod, so it goes away with the pod.

The mapping is applied by `ClusterState.add_pod` (it is the state's default
pod mutator) and only when HAMi's DeviceClass exists: installing that class,
as HAMi-DRA's chart does, is how a user enables it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from msgspec.structs import replace

from allot.cluster.claims import object_uid, pod_uid
from allot.dra import SliceIndex
from allot.model.base import ObjectMeta, OwnerReference
from allot.model.core import Container, Pod, PodResourceClaim, ResourceClaimReference
from allot.model.presets.gpu_sharing import CORES, HAMI_DEVICE_TYPE, HAMI_DRIVER, MEMORY, MIB
from allot.model.quantity import Quantity
from allot.model.resource import (
    CapacityRequirements,
    CELDeviceSelector,
    DeviceClaim,
    DeviceClass,
    DeviceConstraint,
    DeviceRequest,
    DeviceSelector,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourceSlice,
)


class DeviceCatalog(Protocol):
    """What the conversion reads of the cluster (ClusterState is one)."""

    @property
    def classes(self) -> Mapping[str, DeviceClass]: ...

    @property
    def slices(self) -> SliceIndex: ...


GPU = "nvidia.com/gpu"
GPU_CORES = "nvidia.com/gpucores"
GPU_MEMORY = "nvidia.com/gpumem"
GPU_MEMORY_PERCENTAGE = "nvidia.com/gpumem-percentage"
HAMI_RESOURCES = (GPU, GPU_CORES, GPU_MEMORY, GPU_MEMORY_PERCENTAGE)
USE_TYPE = "nvidia.com/use-gputype"
NOUSE_TYPE = "nvidia.com/nouse-gputype"
USE_UUID = "nvidia.com/use-gpuuuid"
NOUSE_UUID = "nvidia.com/nouse-gpuuuid"
DRA_LABEL = "hami.io/dra"
REQUEST_NAME = "gpu"
UUID_ATTRIBUTE = f"{HAMI_DRIVER}/uuid"
CLAIM_SUFFIX = "nvidia"
_MAX_NAME = 63
# HAMi's sentinel for "no percentage given".
_UNSET_PERCENTAGE = 101


def type_selector() -> DeviceSelector:
    return cel(f'device.attributes["{HAMI_DRIVER}"].type == "{HAMI_DEVICE_TYPE}"')


def cel(expression: str) -> DeviceSelector:
    return DeviceSelector(cel=CELDeviceSelector(expression=expression))


def attribute_selector(attribute: str, values: Sequence[str], *, negate: bool = False) -> DeviceSelector:
    """`device.attributes[<hami>].<attribute> in [...]`, negated for the nouse-* annotations."""
    literals = ",".join(f'"{v}"' for v in values)
    expression = f'device.attributes["{HAMI_DRIVER}"].{attribute} in [{literals}]'
    return cel(f"!({expression})" if negate else expression)


def capacity(cores: int | None, memory_bytes: int | None) -> CapacityRequirements:
    """Per-GPU capacity requests; None leaves the amount to the device's request policy."""
    requests: dict[str, Quantity] = {}
    if cores is not None:
        requests[CORES] = Quantity.from_int(cores)
    if memory_bytes is not None:
        requests[MEMORY] = Quantity.from_int(memory_bytes)
    return CapacityRequirements(requests=requests)


def gpu_request(
    count: int,
    *,
    cores: int | None,
    memory_bytes: int | None,
    selectors: Sequence[DeviceSelector] = (),
    name: str = REQUEST_NAME,
) -> DeviceRequest:
    """The request HAMi-DRA writes: `count` fractional GPUs, each with the given share."""
    return DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(
            device_class_name=HAMI_DRIVER,
            allocation_mode="ExactCount",
            count=count,
            selectors=(type_selector(), *selectors),
            capacity=capacity(cores, memory_bytes),
        ),
    )


def claim_name(pod: Pod, container: str) -> str:
    """HAMi-DRA's claim name: `<ns>-<pod>-<container>-nvidia`, hashed down to a DNS label."""
    name = f"{pod.namespace}-{pod.name}-{container}-{CLAIM_SUFFIX}"
    if len(name) <= _MAX_NAME:
        return name
    suffix = "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    prefix = name[: _MAX_NAME - len(suffix)].rstrip("-")
    return prefix + suffix if prefix else suffix.lstrip("-")


def _whole(quantity: Quantity | None) -> int | None:
    return None if quantity is None else quantity.value()


def _annotation_selectors(annotations: Mapping[str, str]) -> list[DeviceSelector]:
    selectors: list[DeviceSelector] = []
    for annotation, attribute, negate in (
        (USE_UUID, "uuid", False),
        (NOUSE_UUID, "uuid", True),
        (USE_TYPE, "productName", False),
        (NOUSE_TYPE, "productName", True),
    ):
        raw = annotations.get(annotation)
        if raw is None:
            continue
        values = [v.strip() for v in raw.split(",") if v.strip()]
        if not values:
            # HAMi-DRA fails closed on an empty allow-list; a selector nothing matches does the same.
            selectors.append(cel("false"))
            continue
        selectors.append(attribute_selector(attribute, values, negate=negate))
    return selectors


def hami_memory_sizes(slices: Iterable[ResourceSlice]) -> list[int]:
    """Distinct memory capacities (bytes) of HAMi GPUs, ascending."""
    sizes: set[int] = set()
    for resource_slice in slices:
        if resource_slice.spec.driver != HAMI_DRIVER:
            continue
        for device in resource_slice.spec.devices:
            memory = device.capacity.get(MEMORY)
            if memory is not None:
                sizes.add(memory.value.value())
    return sorted(sizes)


def _percentage_request(
    count: int, cores: int | None, percentage: int, selectors: list[DeviceSelector], sizes: Sequence[int]
) -> DeviceRequest:
    if not sizes:
        return gpu_request(count, cores=cores, memory_bytes=None, selectors=selectors)
    subs: list[DeviceSubRequest] = []
    for index, size in enumerate(sizes):
        wanted = -(-size * percentage // 100)
        wanted = -(-wanted // MIB) * MIB
        same_size = cel(f'device.capacity["{HAMI_DRIVER}"].memory == quantity("{size}")')
        subs.append(
            DeviceSubRequest(
                name=f"memory-{index}",
                device_class_name=HAMI_DRIVER,
                allocation_mode="ExactCount",
                count=count,
                selectors=(type_selector(), same_size, *selectors),
                capacity=capacity(cores, min(wanted, size)),
            )
        )
    return DeviceRequest(name=REQUEST_NAME, first_available=tuple(subs))


def _limits(container: Container) -> dict[str, Quantity]:
    # HAMi reads limits; a request without a limit counts the same (defaulting copies limits over).
    return {**container.resources.requests, **container.resources.limits}


def convert(pod: Pod, *, memory_sizes: Callable[[], Sequence[int]] = list) -> tuple[Pod, list[ResourceClaim]]:
    """The pod as HAMi-DRA leaves it, and the claims it creates (none if no container asks for GPUs).

    `memory_sizes` lists the memory sizes of the cluster's HAMi GPUs; it is
    only called for `gpumem-percentage`.
    """
    containers = list(pod.spec.containers)
    entries = list(pod.spec.resource_claims)
    claims: list[ResourceClaim] = []
    selectors = _annotation_selectors(pod.metadata.annotations)
    sizes: Sequence[int] | None = None
    for index, container in enumerate(containers):
        limits = _limits(container)
        if GPU not in limits:
            continue
        count = limits[GPU].value()
        cores = _whole(limits.get(GPU_CORES))
        memory_mib = _whole(limits.get(GPU_MEMORY))
        percentage = _whole(limits.get(GPU_MEMORY_PERCENTAGE))
        if memory_mib is None and percentage is not None and 0 < percentage < _UNSET_PERCENTAGE:
            if sizes is None:
                sizes = memory_sizes()
            request = _percentage_request(count, cores, percentage, selectors, sizes)
        else:
            memory = memory_mib * MIB if memory_mib is not None else None
            request = gpu_request(count, cores=cores, memory_bytes=memory, selectors=selectors)
        name = claim_name(pod, container.name)
        claims.append(_claim(pod, name, request, distinct=count > 1))
        kept = {k: v for k, v in container.resources.requests.items() if k not in HAMI_RESOURCES}
        kept_limits = {k: v for k, v in container.resources.limits.items() if k not in HAMI_RESOURCES}
        resources = replace(
            container.resources,
            requests=kept,
            limits=kept_limits,
            claims=(*container.resources.claims, ResourceClaimReference(name=name)),
        )
        containers[index] = replace(container, resources=resources)
        entries.append(PodResourceClaim(name=name, resource_claim_name=name))
    if not claims:
        return pod, []
    metadata = replace(pod.metadata, labels={**pod.metadata.labels, DRA_LABEL: "true"})
    spec = replace(pod.spec, containers=tuple(containers), resource_claims=tuple(entries))
    return replace(pod, metadata=metadata, spec=spec), claims


def _claim(pod: Pod, name: str, request: DeviceRequest, *, distinct: bool) -> ResourceClaim:
    owner = OwnerReference(
        api_version="v1",
        kind="Pod",
        name=pod.name,
        uid=pod_uid(pod),
        controller=True,
        block_owner_deletion=True,
    )
    constraints = (DeviceConstraint(distinct_attribute=UUID_ATTRIBUTE),) if distinct else ()
    return ResourceClaim(
        api_version="resource.k8s.io/v1",
        kind="ResourceClaim",
        metadata=ObjectMeta(
            name=name,
            namespace=pod.namespace,
            uid=object_uid("ResourceClaim", pod.namespace, name),
            owner_references=(owner,),
        ),
        spec=ResourceClaimSpec(devices=DeviceClaim(requests=(request,), constraints=constraints)),
    )


def enabled(state: DeviceCatalog) -> bool:
    """Whether the cluster has HAMi's DeviceClass, i.e. HAMi-DRA is installed."""
    return HAMI_DRIVER in state.classes


def mutate_pod(state: DeviceCatalog, pod: Pod) -> tuple[Pod, list[ResourceClaim]]:
    """The state's pod mutator: HAMi-DRA's conversion when HAMi's DeviceClass exists."""
    if not enabled(state):
        return pod, []
    if not any(GPU in c.resources.limits or GPU in c.resources.requests for c in pod.spec.containers):
        return pod, []
    return convert(pod, memory_sizes=lambda: hami_memory_sizes(state.slices.slices))

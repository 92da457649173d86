"""openb rows as Kubernetes objects: Nodes, ResourceSlices of fractional GPUs, Pods with claim templates.

* A node gets its CPU and memory as allocatable, 1001 pod slots (as the
  authors' node YAML has it) and one ResourceSlice of HAMi-style fractional
  GPUs `hami-gpu-<i>` (`allot.model.presets.gpu_sharing.shared_gpu_device`),
  with attributes `minor`, `model` (the openb code: G2, T4, V100M16 ...)
  and `productName`.
* A GPU pod asks, through a ResourceClaimTemplate per distinct shape, for
  `num_gpu` GPUs with `cores` = gpu_milli / 10 (percent, the trace's 1 %
  steps) each, the request HAMi-DRA writes for `nvidia.com/gpucores`
  (`allot.cluster.hami.gpu_request`); several GPUs must be distinct
  (`distinctAttribute` on `minor`: HAMi's "n physical GPUs"). `gpu_spec`
  becomes a selector on `model`.
* The trace has no GPU memory. Pods ask for memory in proportion to their
  cores, `MEMORY_PER_CORE` MiB per percent, sized on the smallest GPU of
  the trace so that memory never binds before compute on any model and
  the experiment measures compute, as the paper does.
* CPU-only pods have no claim.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from allot.cluster.hami import attribute_selector, gpu_request
from allot.model.base import ObjectMeta
from allot.model.core import Container, Node, NodeStatus, Pod, PodResourceClaim, PodSpec, ResourceRequirements
from allot.model.presets.gpu_sharing import (
    HAMI_DRIVER,
    MIB,
    device_slice,
    hami_device_class,
    shared_gpu_device,
)
from allot.model.quantity import Quantity, QuantityFormat
from allot.model.resource import (
    DeviceAttribute,
    DeviceClaim,
    DeviceClass,
    DeviceConstraint,
    ResourceClaimSpec,
    ResourceClaimTemplate,
    ResourceClaimTemplateSpec,
    ResourceSlice,
)
from allot.sim.openb.trace import OpenbNode, OpenbPod

NAMESPACE = "openb"
MODEL_LABEL = "alibabacloud.com/gpu-card-model"
PODS_PER_NODE = 1001
# GPU memory per model in MiB (the authors' simulator, `MapGpuTypeMemoryMiB`); G2 and G3 are
# undisclosed models, taken as 16 GiB.
GPU_MEMORY_MIB = {
    "P100": 16280,
    "T4": 15109,
    "V100M16": 16160,
    "V100M32": 32510,
    "A10": 22731,
    "G2": 16384,
    "G3": 16384,
}
PRODUCT_NAMES = {
    "P100": "Tesla-P100-PCIE-16GB",
    "T4": "Tesla-T4",
    "V100M16": "Tesla-V100-SXM2-16GB",
    "V100M32": "Tesla-V100-SXM2-32GB",
    "A10": "NVIDIA-A10",
}
# 1 % of the smallest GPU of the trace (T4), in MiB.
MEMORY_PER_CORE = min(GPU_MEMORY_MIB.values()) // 100
_BINARY = QuantityFormat.BINARY_SI


def _string(value: str) -> DeviceAttribute:
    return DeviceAttribute(string_value=value)


def gpu_slice(node: OpenbNode, name: str) -> ResourceSlice:
    memory = Quantity.from_int(GPU_MEMORY_MIB.get(node.model, 16384) * MIB, _BINARY)
    product = PRODUCT_NAMES.get(node.model, node.model)
    devices = [
        shared_gpu_device(
            f"hami-gpu-{i}",
            attributes={
                "minor": DeviceAttribute(int_value=i),
                "model": _string(node.model),
                "productName": _string(product),
            },
            memory=memory,
        )
        for i in range(node.gpus)
    ]
    return device_slice(name, devices)


def to_node(node: OpenbNode, name: str | None = None) -> Node:
    name = name or node.name
    allocatable = {
        "cpu": Quantity.from_milli(node.cpu_milli),
        "memory": Quantity.from_int(node.memory_mib * MIB, _BINARY),
        "pods": Quantity.from_int(PODS_PER_NODE),
    }
    labels = {"kubernetes.io/hostname": name}
    if node.model:
        labels[MODEL_LABEL] = node.model
    return Node(
        api_version="v1",
        kind="Node",
        metadata=ObjectMeta(name=name, labels=labels),
        status=NodeStatus(capacity=dict(allocatable), allocatable=allocatable),
    )


def to_cluster(
    nodes: Sequence[OpenbNode], names: Sequence[str] | None = None
) -> tuple[list[Node], list[ResourceSlice], list[DeviceClass]]:
    """Nodes (optionally renamed), one GPU slice per GPU node, and HAMi's DeviceClass."""
    chosen = list(names) if names is not None else [n.name for n in nodes]
    k8s_nodes = [to_node(n, name) for n, name in zip(nodes, chosen, strict=True)]
    slices = [gpu_slice(n, name) for n, name in zip(nodes, chosen, strict=True) if n.gpus > 0]
    return k8s_nodes, slices, [hami_device_class()]


def cores_of(pod: OpenbPod) -> int:
    """Per-GPU share in percent (1 % steps, rounded up, at most 100)."""
    return min(100, -(-pod.gpu_milli // 10))


def template_name(pod: OpenbPod) -> str:
    spec = "-".join(m.lower() for m in pod.gpu_spec)
    return f"gpu-{pod.num_gpu}x{cores_of(pod)}" + (f"-{spec}" if spec else "")


def claim_template(pod: OpenbPod, namespace: str = NAMESPACE) -> ResourceClaimTemplate:
    cores = cores_of(pod)
    selectors = [attribute_selector("model", pod.gpu_spec)] if pod.gpu_spec else []
    request = gpu_request(
        pod.num_gpu, cores=cores, memory_bytes=cores * MEMORY_PER_CORE * MIB, selectors=selectors
    )
    constraints = (DeviceConstraint(distinct_attribute=f"{HAMI_DRIVER}/minor"),) if pod.num_gpu > 1 else ()
    return ResourceClaimTemplate(
        api_version="resource.k8s.io/v1",
        kind="ResourceClaimTemplate",
        metadata=ObjectMeta(name=template_name(pod), namespace=namespace),
        spec=ResourceClaimTemplateSpec(
            spec=ResourceClaimSpec(devices=DeviceClaim(requests=(request,), constraints=constraints))
        ),
    )


def templates(pods: Iterable[OpenbPod], namespace: str = NAMESPACE) -> list[ResourceClaimTemplate]:
    """One template per distinct GPU shape among `pods`."""
    seen: dict[str, ResourceClaimTemplate] = {}
    for pod in pods:
        if pod.num_gpu > 0 and pod.gpu_milli > 0:
            name = template_name(pod)
            if name not in seen:
                seen[name] = claim_template(pod, namespace)
    return list(seen.values())


def to_pod(pod: OpenbPod, *, name: str | None = None, namespace: str = NAMESPACE, scheduler: str = "") -> Pod:
    requests = {
        "cpu": Quantity.from_milli(pod.cpu_milli),
        "memory": Quantity.from_int(pod.memory_mib * MIB, _BINARY),
    }
    claims: tuple[PodResourceClaim, ...] = ()
    if pod.num_gpu > 0 and pod.gpu_milli > 0:
        claims = (PodResourceClaim(name="gpu", resource_claim_template_name=template_name(pod)),)
    return Pod(
        api_version="v1",
        kind="Pod",
        metadata=ObjectMeta(name=name or pod.name, namespace=namespace),
        spec=PodSpec(
            containers=(Container(name="main", resources=ResourceRequirements(requests=requests)),),
            resource_claims=claims,
            scheduler_name=scheduler,
        ),
    )

"""The device shorthand of job templates, expanded into ResourceClaim specs.

    devices: {gpus: 8, nics: 8, alignment: pcieRoot}   # 8 GPU+NIC pairs, each pair on one PCIe root
    devices: {gpus: 2}                                 # two whole GPUs
    devices: {gpuShare: {cores: 30, memory: 10Gi}}     # 30 % of one GPU's compute, 10 GiB of its memory
    devices: {mig: 1g.10gb}                            # one MIG partition of that profile
    devices: {gpus: 1, deviceClass: my-gpus}           # another DeviceClass for the GPUs

* `gpus: N, nics: M`: requests `gpu` (N) and `nic` (M RDMA NICs). With
  `alignment` (M must divide N): M groups instead, each with N/M GPUs
  (request `gpu-<g>`) and one NIC (`nic-<g>`) under a `matchAttribute`
  constraint on that attribute (`pcieRoot`, `numaNode`, or
  any qualified attribute name). Without NICs, `alignment` makes all GPUs
  share the attribute. `alignment: preferred` (or none) adds no constraint:
  allot's placement still prefers aligned sets (docs/topology.md), and a
  search that fails costs far less than with one constraint per pair,
  which upstream's allocator explores pair by pair.
* `gpuShare`: one device of the fractional-GPU class with capacity
  requests `cores` (percent) and `memory`.
* `mig`: one device of `mig.nvidia.com` whose `profile` attribute is the
  profile (`gpus: N` asks N of them).

Pods asking for GPU devices also tolerate the `nvidia.com/gpu` NoSchedule
taint, as Kubernetes' ExtendedResourceToleration admission plugin does for
`nvidia.com/gpu` requests. `gpu_equivalents` estimates what a pod takes of
GPUs (whole GPUs 1 each; a share max(cores/100, memory/GPU memory); a MIG
profile max(compute slices/7, memory slices/8)) for demand accounting.
"""

from __future__ import annotations

from allot.model.core import Toleration
from allot.model.presets.classes import GPU_CLASS, MIG_CLASS, RDMA_CLASS
from allot.model.presets.devices import NUMA_NODE, PCIE_ROOT
from allot.model.presets.gpu_sharing import HAMI_DRIVER, mig_profiles
from allot.model.quantity import Quantity
from allot.model.resource import (
    CapacityRequirements,
    CELDeviceSelector,
    DeviceClaim,
    DeviceConstraint,
    DeviceRequest,
    DeviceSelector,
    ExactDeviceRequest,
    ResourceClaimSpec,
)
from allot.sim.scenario.schema import DeviceSpec

__all__ = [
    "GPU_CLASS",
    "GPU_TOLERATION",
    "MIG_CLASS",
    "RDMA_CLASS",
    "alignment_attribute",
    "claim_spec",
    "gpu_equivalents",
    "kind_of",
    "share_class",
]

ALIGNMENTS = {"pcieRoot": PCIE_ROOT, "numaNode": NUMA_NODE, "numa": NUMA_NODE}
GPU_TOLERATION = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
SHARE_CAPACITY_CORES = "cores"
SHARE_CAPACITY_MEMORY = "memory"
DEFAULT_GPU_MEMORY = 80 * 1024**3


PREFERRED = "preferred"


def alignment_attribute(name: str) -> str | None:
    """The attribute a `matchAttribute` constraint names; None for `preferred` (no constraint)."""
    if name == PREFERRED:
        return None
    return ALIGNMENTS.get(name, name)


def share_class(classes: set[str]) -> str:
    """The DeviceClass for fractional GPUs: HAMi's when the cluster has it, else NVIDIA's."""
    return HAMI_DRIVER if HAMI_DRIVER in classes else GPU_CLASS


def _request(
    name: str,
    device_class: str,
    count: int,
    *,
    selector: str | None = None,
    capacity: dict[str, Quantity] | None = None,
) -> DeviceRequest:
    return DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(
            device_class_name=device_class,
            allocation_mode="ExactCount",
            count=count,
            selectors=(DeviceSelector(cel=CELDeviceSelector(expression=selector)),) if selector else (),
            capacity=CapacityRequirements(requests=capacity) if capacity else None,
        ),
    )


def claim_spec(spec: DeviceSpec, classes: set[str]) -> ResourceClaimSpec | None:
    """The claim the shorthand stands for; None when it asks for no devices."""
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    attribute = alignment_attribute(spec.alignment) if spec.alignment else None
    if spec.share is not None:
        capacity: dict[str, Quantity] = {}
        if spec.share.cores is not None:
            capacity[SHARE_CAPACITY_CORES] = Quantity.from_int(spec.share.cores)
        if spec.share.memory is not None:
            capacity[SHARE_CAPACITY_MEMORY] = spec.share.memory
        device_class = spec.device_class or share_class(classes)
        requests.append(_request("gpu", device_class, max(spec.gpus, 1), capacity=capacity))
    elif spec.mig is not None:
        selector = f"device.attributes['gpu.nvidia.com'].profile == '{spec.mig}'"
        requests.append(_request("mig", spec.device_class or MIG_CLASS, max(spec.gpus, 1), selector=selector))
    elif spec.gpus and spec.nics and attribute:
        per_nic = spec.gpus // spec.nics
        for group in range(spec.nics):
            gpu, nic = f"gpu-{group}", f"nic-{group}"
            requests.append(_request(gpu, spec.device_class or GPU_CLASS, per_nic))
            requests.append(_request(nic, RDMA_CLASS, 1))
            constraints.append(DeviceConstraint(requests=(gpu, nic), match_attribute=attribute))
    elif spec.gpus:
        requests.append(_request("gpu", spec.device_class or GPU_CLASS, spec.gpus))
        if attribute and not spec.nics:
            constraints.append(DeviceConstraint(requests=("gpu",), match_attribute=attribute))
    if spec.nics and not (spec.gpus and attribute) and spec.share is None and spec.mig is None:
        requests.append(_request("nic", RDMA_CLASS, spec.nics))
    if not requests:
        return None
    return ResourceClaimSpec(devices=DeviceClaim(requests=tuple(requests), constraints=tuple(constraints)))


def mig_fraction(profile: str) -> float | None:
    """max(compute slices / 7, memory slices / 8) of a MIG profile of any GPU model; None if unknown."""
    for rows in mig_profiles().values():
        for row in rows:
            if row.profile == profile:
                return max(row.compute_slices / 7, row.memory_slices / 8)
    return None


def gpu_equivalents(spec: DeviceSpec, gpu_memory: int = DEFAULT_GPU_MEMORY) -> float:
    """What one pod takes of GPUs, in GPU-equivalents (see the module docstring)."""
    count = max(spec.gpus, 1)
    if spec.share is not None:
        cores = (spec.share.cores or 0) / 100
        memory = spec.share.memory.value() / gpu_memory if spec.share.memory is not None else 0.0
        if spec.share.cores is None and spec.share.memory is None:
            return float(count)
        return count * min(1.0, max(cores, memory))
    if spec.mig is not None:
        return count * (mig_fraction(spec.mig) or 1 / 7)
    return float(spec.gpus)


def kind_of(spec: DeviceSpec | None, pods: float, gang: bool) -> str:
    """A label for reports: training (GPU gangs), inference (GPU shares), mig, gpu, cpu."""
    if spec is None:
        return "cpu"
    if spec.share is not None:
        return "inference"
    if spec.mig is not None:
        return "mig"
    if spec.gpus:
        return "training" if gang or pods > 1 or spec.nics else "gpu"
    return "cpu"

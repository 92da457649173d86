"""Where a device sits: its kind, PCIe roots and NUMA nodes, read from its published attributes.

Attributes read (research/sharing.md 3.5-3.7):

* PCIe root: `resource.kubernetes.io/pcieRoot`, a string or (1.36+ list
  attributes) a list of strings; CPUs publish the list of roots local to
  their socket when asked to.
* NUMA node: `resource.kubernetes.io/numaNode` (int or list), else the
  legacy driver attributes `dra.net/numaNode`, `dra.cpu/numaNodeID` and the
  VFIO GPU's `gpu.nvidia.com/numa`.

Kinds: `gpu` (drivers gpu.nvidia.com: whole GPUs and MIG devices, and
HAMi's hami-core-gpu.project-hami.io: fractional GPUs), `nic`
(dra.net), `cpu` (dra.cpu); any other driver is its own kind. A device
without a PCIe root (CPUs, memory) is *NUMA-scoped*: the finest locality it
has is its NUMA node.

`relation(a, b)`: 2 when two devices are as close as they can be (same
PCIe root; for a NUMA-scoped device, same NUMA node), 1 when two
PCIe devices share only the NUMA node, 0 otherwise (other socket, or
nothing published to tell).
"""

from __future__ import annotations

from dataclasses import dataclass

from allot.model.resource import Device, DeviceAttribute

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_NODE = "resource.kubernetes.io/numaNode"
_LEGACY_NUMA = ("dra.net/numaNode", "dra.cpu/numaNodeID", "gpu.nvidia.com/numa")
KIND_BY_DRIVER = {
    "gpu.nvidia.com": "gpu",
    "hami-core-gpu.project-hami.io": "gpu",
    "dra.net": "nic",
    "dra.cpu": "cpu",
}
# Kinds whose devices pair up under one PCIe root (GPUDirect RDMA): taking one breaks a pair.
PAIRED_KINDS = frozenset({"gpu", "nic"})

CLOSEST = 2
SAME_NUMA = 1
APART = 0


@dataclass(frozen=True, slots=True)
class Place:
    kind: str
    roots: frozenset[str]
    numas: frozenset[int]

    @property
    def numa_scoped(self) -> bool:
        return not self.roots or self.kind == "cpu"

    @property
    def known(self) -> bool:
        return bool(self.roots or self.numas)


def _lookup(device: Device, driver: str, name: str) -> DeviceAttribute | None:
    found = device.attributes.get(name)
    if found is None:
        domain, _, short = name.rpartition("/")
        # An unqualified attribute belongs to the driver's own domain.
        if domain == driver:
            found = device.attributes.get(short)
    return found


def _strings(attribute: DeviceAttribute | None) -> frozenset[str]:
    if attribute is None:
        return frozenset()
    if attribute.string_value is not None:
        return frozenset((attribute.string_value,))
    return frozenset(attribute.strings or ())


def _ints(attribute: DeviceAttribute | None) -> frozenset[int]:
    if attribute is None:
        return frozenset()
    if attribute.int_value is not None:
        return frozenset((attribute.int_value,))
    return frozenset(attribute.ints or ())


_CACHE: dict[tuple[str, int], tuple[Device, Place]] = {}


def place_of(driver: str, device: Device) -> Place:
    """The device's kind and locality (cached per device record)."""
    key = (driver, id(device))
    cached = _CACHE.get(key)
    if cached is not None and cached[0] is device:
        return cached[1]
    numas = _ints(_lookup(device, driver, NUMA_NODE))
    for legacy in _LEGACY_NUMA:
        if numas:
            break
        numas = _ints(_lookup(device, driver, legacy))
    place = Place(KIND_BY_DRIVER.get(driver, driver), _strings(_lookup(device, driver, PCIE_ROOT)), numas)
    if len(_CACHE) > 200_000:
        _CACHE.clear()
    _CACHE[key] = (device, place)
    return place


def relation(a: Place, b: Place) -> int:
    """How close two devices are: CLOSEST, SAME_NUMA or APART (see the module docstring)."""
    if a.roots and b.roots and a.roots & b.roots:
        return CLOSEST
    same_numa = bool(a.numas & b.numas)
    if a.numa_scoped or b.numa_scoped:
        return CLOSEST if same_numa else APART
    return SAME_NUMA if same_numa else APART

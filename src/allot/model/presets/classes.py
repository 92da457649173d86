"""Cluster-wide objects that go with the presets: DeviceClasses and a Kueue Topology.

DeviceClasses are the ones the drivers install: NVIDIA's Helm chart
(`gpu.nvidia.com` for whole GPUs, with extended resource `nvidia.com/gpu`,
and `mig.nvidia.com` for MIG devices), DRANET's documented RDMA class
(`dranet.net`: RDMA-capable `dra.net` devices) and dra-driver-cpu's
`dra.cpu`.
"""

from __future__ import annotations

from collections.abc import Sequence

from allot.model.base import ObjectMeta
from allot.model.kueue import Topology, TopologyLevel, TopologySpec
from allot.model.resource import CELDeviceSelector, DeviceClass, DeviceClassSpec, DeviceSelector

GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
RDMA_CLASS = "dranet.net"
CPU_CLASS = "dra.cpu"


def _device_class(name: str, expression: str, extended_resource: str | None = None) -> DeviceClass:
    return DeviceClass(
        api_version="resource.k8s.io/v1",
        kind="DeviceClass",
        metadata=ObjectMeta(name=name),
        spec=DeviceClassSpec(
            selectors=(DeviceSelector(cel=CELDeviceSelector(expression=expression)),),
            extended_resource_name=extended_resource,
        ),
    )


def device_classes() -> list[DeviceClass]:
    """The DeviceClasses of the NVIDIA GPU driver, DRANET (RDMA NICs) and dra-driver-cpu."""
    return [
        _device_class(
            GPU_CLASS,
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
            "nvidia.com/gpu",
        ),
        _device_class(
            MIG_CLASS,
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
        ),
        _device_class(RDMA_CLASS, 'device.driver == "dra.net" && device.attributes["dra.net"].rdma == true'),
        _device_class(CPU_CLASS, 'device.driver == "dra.cpu"'),
    ]


def topology(name: str, levels: Sequence[str]) -> Topology:
    """A Kueue Topology whose levels are the given node labels, outermost first."""
    return Topology(
        api_version="kueue.x-k8s.io/v1beta2",
        kind="Topology",
        metadata=ObjectMeta(name=name),
        spec=TopologySpec(levels=tuple(TopologyLevel(node_label=label) for label in levels)),
    )

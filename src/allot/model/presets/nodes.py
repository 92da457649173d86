"""Node objects for preset machines, as `kubectl get node -o yaml` prints them.

Labels are what a kubelet, the cloud provider and NVIDIA's GPU feature
discovery set (hostname, os/arch, instance type, `nvidia.com/gpu.*`), plus
the data-centre topology labels (block, rack) that Kueue's Topology levels
name. Capacity is the machine's; allocatable subtracts what kubelet reserves.
Devices are not node resources: with DRA they live in ResourceSlices.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from allot.model.base import Condition, ObjectMeta
from allot.model.core import Node, NodeSpec, NodeStatus, Taint
from allot.model.presets.catalog import NodeShape
from allot.model.quantity import Quantity

HOSTNAME_LABEL = "kubernetes.io/hostname"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# The label keys Kueue's documentation uses for blocks and racks (examples/kueue/topology.yaml).
BLOCK_LABEL = "cloud.provider.com/topology-block"
RACK_LABEL = "cloud.provider.com/topology-rack"
GPU_TAINT = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")

_NODE_UIDS = uuid.UUID("0b6f3e52-6a1d-4d8e-b7c9-1f2a3b4c5d6e")


def node_uid(name: str) -> str:
    return str(uuid.uuid5(_NODE_UIDS, name))


def node_labels(shape: NodeShape, name: str) -> dict[str, str]:
    """What kubelet, the cloud provider and GPU feature discovery label the node with."""
    model = shape.gpu
    return {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        HOSTNAME_LABEL: name,
        INSTANCE_TYPE_LABEL: shape.instance_type,
        "nvidia.com/gpu.count": str(len(shape.gpus)),
        "nvidia.com/gpu.memory": str(Quantity.parse(model.memory).value() // 2**20),
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": model.product_label,
    }


def preset_node(shape: NodeShape, name: str, *, labels: Mapping[str, str], taints: Sequence[Taint]) -> Node:
    """The Node a kubelet on `shape` registers, with extra `labels` (topology, user) and `taints`."""
    cpus = Quantity.from_int(shape.cpus)
    memory = Quantity.parse(shape.memory)
    capacity = {
        "cpu": cpus,
        "ephemeral-storage": Quantity.parse(shape.ephemeral_storage),
        "hugepages-1Gi": Quantity.parse("0"),
        "hugepages-2Mi": Quantity.parse("0"),
        "memory": memory,
        "pods": Quantity.from_int(shape.pods),
    }
    allocatable = dict(capacity)
    allocatable["cpu"] = cpus - Quantity.parse(shape.cpu_reserved)
    allocatable["memory"] = memory - Quantity.parse(shape.memory_reserved)
    return Node(
        api_version="v1",
        kind="Node",
        metadata=ObjectMeta(name=name, uid=node_uid(name), labels={**node_labels(shape, name), **labels}),
        spec=NodeSpec(taints=tuple(taints)),
        status=NodeStatus(
            capacity=capacity,
            allocatable=allocatable,
            conditions=(
                Condition(
                    type="Ready",
                    status="True",
                    reason="KubeletReady",
                    message="kubelet is posting ready status",
                ),
            ),
        ),
    )

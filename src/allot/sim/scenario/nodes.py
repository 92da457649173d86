"""Plain nodes for scenario files (`cluster.nodes`), next to the hardware presets.

    nodes:
    - {count: 4, cpu: 64, memory: 256Gi, namePrefix: cpu, labels: {pool: batch}}
    - {count: 8, cpu: 96, memory: 1Ti, gpus: 8, namePrefix: gpu, taints: [{key: nvidia.com/gpu, effect: NoSchedule}]}

Nodes are `<namePrefix>-<index>` (two digits at least), Ready, with 110
pod slots unless `pods` says otherwise, and carry the usual
`kubernetes.io/hostname` label. `gpus` gives them device-plugin GPUs
(allocatable `nvidia.com/gpu`), the fast way to model GPUs when device
identity and topology do not matter.
"""

from __future__ import annotations

from allot.model.base import Condition, ObjectMeta
from allot.model.core import Node, NodeSpec, NodeStatus, Taint
from allot.model.quantity import Quantity
from allot.sim.limits import MAX_GPUS_PER_NODE, MAX_PODS_PER_NODE, too_many
from allot.sim.scenario.reader import Field

KEYS = ("count", "cpu", "memory", "pods", "gpus", "namePrefix", "labels", "taints")
PLUGIN_GPUS = "nvidia.com/gpu"


def plain_node(
    name: str,
    *,
    cpu: Quantity,
    memory: Quantity,
    pods: int,
    gpus: int,
    labels: dict[str, str],
    taints: tuple[Taint, ...],
) -> Node:
    capacity = {"cpu": cpu, "memory": memory, "pods": Quantity.from_int(pods)}
    if gpus:
        capacity[PLUGIN_GPUS] = Quantity.from_int(gpus)
    return Node(
        api_version="v1",
        kind="Node",
        metadata=ObjectMeta(name=name, labels={"kubernetes.io/hostname": name, **labels}),
        spec=NodeSpec(taints=taints),
        status=NodeStatus(
            capacity=capacity,
            allocatable=dict(capacity),
            conditions=(Condition(type="Ready", status="True"),),
        ),
    )


def plain_nodes(field: Field, room: int) -> list[Node]:
    """The nodes `cluster.nodes` describes; a located error once they would be more than `room`."""
    nodes: list[Node] = []
    for item in field.items():
        if not item.mapping(KEYS):
            item.error("expected {count, cpu, memory, pods?, gpus?, namePrefix?, labels?, taints?}")
            continue
        count = item.get("count").as_int(1, minimum=1) or 1
        if len(nodes) + count > room:
            item.get("count").error(too_many("nodes", len(nodes) + count, room, "--max-nodes"))
            break
        cpu = item.require("cpu", "CPUs per node, e.g. 64").as_quantity()
        memory = item.require("memory", "memory per node, e.g. 256Gi").as_quantity()
        pods = item.get("pods").as_int(110, minimum=1, maximum=MAX_PODS_PER_NODE) or 110
        gpus = item.get("gpus").as_int(0, minimum=0, maximum=MAX_GPUS_PER_NODE) or 0
        prefix = item.get("namePrefix").as_str("gpu" if gpus else "cpu") or "node"
        labels = item.get("labels").as_string_map()
        taints: list[Taint] = []
        for t in item.get("taints").items():
            if not t.mapping(("key", "value", "effect")):
                t.error("expected {key, value?, effect}")
                continue
            key = t.require("key", "the taint key").as_str()
            effect = t.require("effect", "NoSchedule, PreferNoSchedule or NoExecute").as_str()
            if effect is not None and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                t.get("effect").error(f"expected NoSchedule, PreferNoSchedule or NoExecute, got {effect!r}")
                continue
            if key and effect:
                taints.append(Taint(key=key, value=t.get("value").as_str("") or "", effect=effect))
        if cpu is None or memory is None:
            continue
        width = max(2, len(str(count - 1)))
        for index in range(count):
            nodes.append(
                plain_node(
                    f"{prefix}-{index:0{width}d}",
                    cpu=cpu,
                    memory=memory,
                    pods=pods,
                    gpus=gpus,
                    labels=labels,
                    taints=tuple(taints),
                )
            )
    return nodes

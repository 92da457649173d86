"""Builders for GPU-sharing tests: HAMi GPUs and pods, sharing profiles, what a placement took."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from allot.cluster.state import ClusterState
from allot.model.core import Node
from allot.model.presets import gpu_sharing as gs
from allot.model.quantity import Quantity
from allot.model.resource import DeviceAttribute, ResourceSlice
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Outcome, Placement, Scheduler
from builders import node, pod

SHARING_FILTERS = (
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "GpuPlacement",
    "GpuIsolation",
)


def hami_slice(node_name: str, gpus: int, *, memory: str = "16Gi", model: str = "T4") -> ResourceSlice:
    devices = [
        gs.shared_gpu_device(
            f"hami-gpu-{i}",
            attributes={
                "minor": DeviceAttribute(int_value=i),
                "productName": DeviceAttribute(string_value=model),
                "uuid": DeviceAttribute(string_value=f"GPU-{node_name}-{i}"),
            },
            memory=Quantity.parse(memory),
        )
        for i in range(gpus)
    ]
    return gs.device_slice(node_name, devices)


def hami_cluster(
    gpus: Mapping[str, int], *, cpu: str = "64", memory: str = "256Gi", model: str = "T4", **state: Any
) -> ClusterState:
    nodes: list[Node] = [node(name, cpu=cpu, memory=memory, labels={"name": name}) for name in gpus]
    slices = [hami_slice(name, count, model=model) for name, count in gpus.items()]
    return ClusterState(nodes=nodes, slices=slices, classes=[gs.hami_device_class()], **state)


def hami_pod(
    name: str,
    *,
    cores: int | None = None,
    memory_mib: int | None = None,
    gpus: int = 1,
    namespace: str = "default",
    cpu: str = "1",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    percentage: int | None = None,
    on: str | None = None,
) -> Any:
    extended = {"nvidia.com/gpu": str(gpus)}
    if cores is not None:
        extended["nvidia.com/gpucores"] = str(cores)
    if memory_mib is not None:
        extended["nvidia.com/gpumem"] = str(memory_mib)
    if percentage is not None:
        extended["nvidia.com/gpumem-percentage"] = str(percentage)
    return pod(
        name,
        namespace=namespace,
        cpu=cpu,
        extended=extended,
        labels=labels,
        annotations=annotations,
        node_selector={"name": on} if on else None,
    )


def sharing_profile(
    policy: str | None = None, *, trust: str = "namespace", isolation: bool = True, **args: Any
) -> Profile:
    filters = SHARING_FILTERS if isolation else SHARING_FILTERS[:-1]
    placement = {"tieBreak": "name", **args}
    if policy is not None:
        placement["policy"] = policy
    return Profile(
        filters=filters,
        score_weights={"GpuPlacement": 1},
        percentage_of_nodes_to_score=100,
        plugin_args={"GpuPlacement": placement, "GpuIsolation": {"trustDomain": trust}},
    )


def scheduler(state: ClusterState, profile: Profile | None = None) -> Scheduler:
    profile = profile or sharing_profile()
    return Scheduler(state, {profile.scheduler_name: profile})


def devices_of(outcome: Outcome) -> list[tuple[str, str]]:
    """(node, device) pairs a placement took."""
    assert isinstance(outcome, Placement), getattr(outcome, "message", outcome)
    return [
        (outcome.node, result.device)
        for allocation in outcome.allocations.values()
        for result in allocation.devices.results
    ]


def schedule_all(sched: Scheduler, pods: Sequence[Any]) -> list[Outcome]:
    return [sched.schedule(sched.state.add_pod(p).key) for p in pods]

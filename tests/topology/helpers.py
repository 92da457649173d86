"""Builders for topology tests: preset clusters, claim templates over GPU/NIC/CPU, profiles."""

from __future__ import annotations

from collections.abc import Sequence

from allot.cluster.state import ClusterState
from allot.model.core import Node, Pod
from allot.model.presets.classes import CPU_CLASS, GPU_CLASS, RDMA_CLASS
from allot.model.presets.expand import expand_preset
from allot.model.quantity import Quantity
from allot.model.resource import (
    CapacityRequirements,
    CELDeviceSelector,
    DeviceClaim,
    DeviceClass,
    DeviceConstraint,
    DeviceRequest,
    DeviceSelector,
    ExactDeviceRequest,
    ResourceClaimSpec,
    ResourceClaimTemplate,
    ResourceSlice,
)
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Placement, Scheduler
from builders import claim_template, pod

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_NODE = "resource.kubernetes.io/numaNode"
CLASSES = {"gpu": GPU_CLASS, "nic": RDMA_CLASS, "cpu": CPU_CLASS}

# The upstream-order baseline: first-found devices, no topology node score.
UPSTREAM = Profile(
    score_weights={k: v for k, v in Profile().score_weights.items() if k != "TopologyAlignment"},
    plugin_args={"DynamicResources": {"alignment": "none"}},
)
ALLOT = Profile()


def request(
    name: str, count: int = 1, *, selector: str | None = None, cpus: str | None = None
) -> DeviceRequest:
    kind = name.rstrip("0123456789-")
    selectors = (DeviceSelector(cel=CELDeviceSelector(expression=selector)),) if selector else ()
    capacity = CapacityRequirements(requests={"dra.cpu/cpu": Quantity.parse(cpus)}) if cpus else None
    return DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(
            device_class_name=CLASSES[kind], count=count, selectors=selectors, capacity=capacity
        ),
    )


def spec(*requests: DeviceRequest, match: str | None = None, among: Sequence[str] = ()) -> ResourceClaimSpec:
    constraints = (DeviceConstraint(requests=tuple(among), match_attribute=match),) if match else ()
    return ResourceClaimSpec(devices=DeviceClaim(requests=tuple(requests), constraints=constraints))


def template(name: str, claim_spec: ResourceClaimSpec) -> ResourceClaimTemplate:
    return claim_template(name, claim_spec)


def cluster(
    preset: str = "dgx-h100",
    nodes: int = 1,
    *,
    templates: Sequence[ResourceClaimTemplate] = (),
    pods: Sequence[Pod] = (),
    racks: int = 0,
    blocks: int = 0,
) -> ClusterState:
    objects = expand_preset(preset, nodes, racks=racks, blocks=blocks)
    return ClusterState(
        nodes=[o for o in objects if isinstance(o, Node)],
        slices=[o for o in objects if isinstance(o, ResourceSlice)],
        classes=[o for o in objects if isinstance(o, DeviceClass)],
        templates=templates,
        pods=pods,
    )


def claim_pod(name: str, template_name: str, **extra: object) -> Pod:
    return pod(name, claims={"devices": template_name}, **extra)  # type: ignore[arg-type]


def schedule_all(state: ClusterState, profile: Profile, names: Sequence[str]) -> dict[str, Placement | None]:
    scheduler = Scheduler(state, {profile.scheduler_name: profile})
    placed: dict[str, Placement | None] = {}
    for name in names:
        outcome = scheduler.schedule(f"default/{name}")
        placed[name] = outcome if isinstance(outcome, Placement) else None
    return placed


def devices_of(state: ClusterState, name: str) -> list[tuple[str, str]]:
    """(driver, device) of every device the pod's claims hold."""
    info = state.pods[f"default/{name}"]
    found: list[tuple[str, str]] = []
    for claim in state.pod_claims(info):
        allocation = claim.status.allocation
        if allocation is not None:
            found.extend((r.driver, r.device) for r in allocation.devices.results)
    return found

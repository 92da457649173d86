"""Topology alignment on 256 DGX H100 nodes: allot's preferred alignment against upstream's first-found order.

Workload (shuffled with a fixed seed, about 86 % of the GPUs):

* 300 pods with 1 GPU;
* 300 pods with 1 GPU + 1 RDMA NIC, no constraint;
* 150 pods with 1 GPU + 1 NIC, `matchAttribute: resource.kubernetes.io/pcieRoot`;
* 50 pods with 1 GPU + 1 NIC + 8 CPUs, `matchAttribute: resource.kubernetes.io/numaNode`;
* 40 pods with 8 GPUs + 8 NICs, no constraint;
* 40 two-node gangs (Kueue pod groups) of 8 GPUs + 8 NICs per pod that
  require one rack (`kueue.x-k8s.io/podset-required-topology`; racks of
  16 nodes), placed with `place_gang_in_topology`.

For each profile prints, one figure per line: pods placed (all, and those
with a matchAttribute constraint), placement rate (pods/s, gangs included,
in process CPU time, which shared machines disturb less than wall time;
the fastest of --repeat runs, the first one also warming caches), the time
the rack-required gangs took, the share of placed multi-device claims
aligned on a PCIe root / on a NUMA node / neither, and the mean modeled
throughput factor of pods using GPUs with NICs
(allot.scheduling.topology.metrics).

Run: PYTHONPATH=src python benchmarks/bench_topology.py [--nodes N] [--seed S] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import time

from allot.cluster.state import ClusterState
from allot.model.base import ObjectMeta
from allot.model.core import Container, Node, Pod, PodResourceClaim, PodSpec, ResourceRequirements
from allot.model.defaults import apply_defaults
from allot.model.kueue import (
    POD_GROUP_NAME_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
)
from allot.model.kueue import PODSET_REQUIRED_TOPOLOGY_ANNOTATION as REQUIRED_TOPOLOGY
from allot.model.presets.classes import CPU_CLASS, GPU_CLASS, RDMA_CLASS, topology
from allot.model.presets.expand import expand_preset
from allot.model.presets.nodes import HOSTNAME_LABEL, RACK_LABEL
from allot.model.quantity import Quantity
from allot.model.resource import (
    CapacityRequirements,
    DeviceClaim,
    DeviceClass,
    DeviceConstraint,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaimSpec,
    ResourceClaimTemplate,
    ResourceClaimTemplateSpec,
    ResourceSlice,
)
from allot.scheduling.gang import GangPlacement, gangs
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Placement, Scheduler
from allot.scheduling.topology.metrics import alignment_summary
from allot.scheduling.topology.tas import place_gang_in_topology

PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_NODE = "resource.kubernetes.io/numaNode"
RACK_SIZE = 16
TOPOLOGY = topology("racks", [RACK_LABEL, HOSTNAME_LABEL])

UPSTREAM = Profile(
    score_weights={k: v for k, v in Profile().score_weights.items() if k != "TopologyAlignment"},
    plugin_args={"DynamicResources": {"alignment": "none"}},
)
PROFILES = {"upstream order": UPSTREAM, "allot preferred": Profile()}


def _request(name: str, device_class: str, count: int, cpus: int = 0) -> DeviceRequest:
    capacity = CapacityRequirements(requests={"dra.cpu/cpu": Quantity.from_int(cpus)}) if cpus else None
    return DeviceRequest(
        name=name, exactly=ExactDeviceRequest(device_class_name=device_class, count=count, capacity=capacity)
    )


def _template(name: str, requests: list[DeviceRequest], match: str | None = None) -> ResourceClaimTemplate:
    constraints = (DeviceConstraint(match_attribute=match),) if match else ()
    spec = ResourceClaimSpec(devices=DeviceClaim(requests=tuple(requests), constraints=constraints))
    return apply_defaults(
        ResourceClaimTemplate(
            api_version="resource.k8s.io/v1",
            kind="ResourceClaimTemplate",
            metadata=ObjectMeta(name=name, namespace="default"),
            spec=ResourceClaimTemplateSpec(spec=spec),
        )
    )


TEMPLATES = [
    _template("gpu", [_request("gpu", GPU_CLASS, 1)]),
    _template("gpu-nic", [_request("gpu", GPU_CLASS, 1), _request("nic", RDMA_CLASS, 1)]),
    _template("gpu-nic-root", [_request("gpu", GPU_CLASS, 1), _request("nic", RDMA_CLASS, 1)], PCIE_ROOT),
    _template(
        "gpu-nic-cpu-numa",
        [_request("gpu", GPU_CLASS, 1), _request("nic", RDMA_CLASS, 1), _request("cpu", CPU_CLASS, 1, 8)],
        NUMA_NODE,
    ),
    _template("node", [_request("gpu", GPU_CLASS, 8), _request("nic", RDMA_CLASS, 8)]),
]


def _pod(name: str, template: str, group: str | None = None) -> Pod:
    labels = {POD_GROUP_NAME_LABEL: group} if group else {}
    annotations = {POD_GROUP_TOTAL_COUNT_ANNOTATION: "2", REQUIRED_TOPOLOGY: RACK_LABEL} if group else {}
    container = Container(name="main", resources=ResourceRequirements(requests={"cpu": Quantity.parse("1")}))
    return apply_defaults(
        Pod(
            api_version="v1",
            kind="Pod",
            metadata=ObjectMeta(name=name, namespace="default", labels=labels, annotations=annotations),
            spec=PodSpec(
                containers=(container,),
                resource_claims=(PodResourceClaim(name="devices", resource_claim_template_name=template),),
            ),
        )
    )


def workload(seed: int, scale: float) -> list[list[Pod]]:
    """Scheduling units (a pod, or the pods of a gang) in submission order."""
    units: list[list[Pod]] = []
    mix = [("gpu", 300), ("gpu-nic", 300), ("gpu-nic-root", 150), ("gpu-nic-cpu-numa", 50), ("node", 40)]
    for template, count in mix:
        units += [[_pod(f"{template}-{i}", template)] for i in range(round(count * scale))]
    for i in range(round(40 * scale)):
        units.append([_pod(f"gang-{i}-{m}", "node", group=f"gang-{i}") for m in range(2)])
    random.Random(seed).shuffle(units)
    return units


def cluster(nodes: int) -> ClusterState:
    objects = expand_preset("dgx-h100", nodes, racks=max(1, nodes // RACK_SIZE))
    return ClusterState(
        nodes=[o for o in objects if isinstance(o, Node)],
        slices=[o for o in objects if isinstance(o, ResourceSlice)],
        classes=[o for o in objects if isinstance(o, DeviceClass)],
        templates=TEMPLATES,
    )


def run(profile: Profile, nodes: int, units: list[list[Pod]]) -> tuple[ClusterState, float, float, int]:
    """(final state, seconds for everything, seconds for the gangs, pods placed)."""
    state = cluster(nodes)
    scheduler = Scheduler(state, {profile.scheduler_name: profile})
    for unit in units:
        for pod in unit:
            state.add_pod(pod)
    groups = gangs(state.pods.values())
    placed = 0
    in_gangs = 0.0
    start = time.process_time()
    for unit in units:
        if len(unit) == 1:
            placed += isinstance(scheduler.schedule(unit[0].key), Placement)
            continue
        began = time.process_time()
        gang = groups[f"default/{unit[0].metadata.labels[POD_GROUP_NAME_LABEL]}"]
        result = place_gang_in_topology(state, scheduler, gang, TOPOLOGY)
        if isinstance(result, GangPlacement):
            placed += len(result.placements)
        in_gangs += time.process_time() - began
    return state, time.process_time() - start, in_gangs, placed


def report(label: str, profile: Profile, nodes: int, units: list[list[Pod]], repeat: int) -> None:
    # The first run in a process also warms the CEL caches: report the fastest of `repeat`.
    runs = [run(profile, nodes, units) for _ in range(repeat)]
    state, _, _, placed = runs[-1]
    elapsed = min(r[1] for r in runs)
    in_gangs = min(r[2] for r in runs)
    total = sum(len(unit) for unit in units)
    gang_count = sum(1 for unit in units if len(unit) > 1)
    constrained = [
        key
        for key, info in state.pods.items()
        if key.startswith(("default/gpu-nic-root-", "default/gpu-nic-cpu-numa-"))
    ]
    summary = alignment_summary(state)
    print(f"{label}: pods placed {placed}/{total}")
    print(
        f"{label}: constrained pods placed {sum(state.pods[k].bound for k in constrained)}/{len(constrained)}"
    )
    print(f"{label}: placement rate {total / elapsed:.0f} pods/s ({elapsed:.2f} s CPU)")
    print(
        f"{label}: rack-required gangs {gang_count / in_gangs:.1f} gangs/s ({in_gangs:.2f} s CPU of the total)"
    )
    print(f"{label}: multi-device claims aligned on a PCIe root {summary.share('pcieRoot'):.1%}")
    print(f"{label}: multi-device claims aligned on a NUMA node only {summary.share('numaNode'):.1%}")
    print(f"{label}: multi-device claims not aligned {summary.share('none'):.1%}")
    print(f"{label}: mean modeled throughput factor (GPU+NIC pods) {summary.mean_factor:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    units = workload(args.seed, args.nodes / 256)
    for label, profile in PROFILES.items():
        report(label, profile, args.nodes, units, args.repeat)


if __name__ == "__main__":
    main()

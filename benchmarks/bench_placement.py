"""Placement throughput on the shape of kube-scheduler's SchedulingWithResourceClaimTemplate benchmark.

500 nodes with 8 devices each (one ResourceSlice per node, as the DRA test
driver publishes), one DeviceClass, one ResourceClaimTemplate asking for one
device, and 5,000 pods that each reference the template. Prints pods/s for:

* the empty cluster,
* the cluster half full (2,000 devices already allocated to bound pods),
* a template with a matchAttribute constraint over two devices,
* 1,000 nodes with device-plugin GPUs only (`nvidia.com/gpu: 8`),
* the same pods as Deployments of 10 replicas each: required anti-affinity
  per hostname among a Deployment's pods, and a DoNotSchedule spread over
  10 zones (inter-pod affinity and spreading counted per domain).

Run: PYTHONPATH=src python benchmarks/bench_placement.py [--pods N] [--nodes N]
"""

from __future__ import annotations

import argparse
import resource
import time

from allot.cluster.state import ClusterState
from allot.model.base import LabelSelector, ObjectMeta
from allot.model.core import (
    Affinity,
    Container,
    Node,
    NodeStatus,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodResourceClaim,
    PodSpec,
    ResourceRequirements,
    TopologySpreadConstraint,
)
from allot.model.defaults import apply_defaults
from allot.model.quantity import Quantity
from allot.model.resource import (
    CELDeviceSelector,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClass,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceRequest,
    DeviceSelector,
    ExactDeviceRequest,
    ResourceClaimSpec,
    ResourceClaimTemplate,
    ResourceClaimTemplateSpec,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from allot.scheduling.scheduler import Placement, Scheduler

DRIVER = "test-driver.cdi.k8s.io"


def node(name: str, extra: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Node:
    capacity = {"cpu": Quantity.parse("64"), "memory": Quantity.parse("256Gi"), "pods": Quantity.parse("110")}
    for key, value in (extra or {}).items():
        capacity[key] = Quantity.parse(value)
    meta = ObjectMeta(name=name, labels=labels or {})
    return Node(metadata=meta, status=NodeStatus(capacity=capacity, allocatable=capacity))


def node_slice(node_name: str, devices: int) -> ResourceSlice:
    return ResourceSlice(
        metadata=ObjectMeta(name=f"{node_name}-{DRIVER}"),
        spec=ResourceSliceSpec(
            driver=DRIVER,
            node_name=node_name,
            pool=ResourcePool(name=node_name, generation=1, resource_slice_count=1),
            devices=tuple(
                Device(
                    name=f"instance-{i}",
                    attributes={
                        "model": DeviceAttribute(string_value="A100"),
                        "family": DeviceAttribute(string_value="GPU"),
                        "driverVersion": DeviceAttribute(version_value="1.2.3"),
                        "dra.example.com/numa": DeviceAttribute(int_value=i // 4),
                    },
                    capacity={"memory": DeviceCapacity(value=Quantity.parse("1Gi"))},
                )
                for i in range(devices)
            ),
        ),
    )


def device_class() -> DeviceClass:
    selector = DeviceSelector(cel=CELDeviceSelector(expression=f'device.driver == "{DRIVER}"'))
    return DeviceClass(metadata=ObjectMeta(name="test-class"), spec=DeviceClassSpec(selectors=(selector,)))


def template(count: int, constraint: bool) -> ResourceClaimTemplate:
    request = DeviceRequest(
        name="req-0", exactly=ExactDeviceRequest(device_class_name="test-class", count=count)
    )
    constraints = (DeviceConstraint(match_attribute="dra.example.com/numa"),) if constraint else ()
    spec = ResourceClaimSpec(devices=DeviceClaim(requests=(request,), constraints=constraints))
    return apply_defaults(
        ResourceClaimTemplate(
            metadata=ObjectMeta(name="test-claim-template", namespace="default"),
            spec=ResourceClaimTemplateSpec(spec=spec),
        )
    )


def pod(name: str, *, claim: bool, gpus: int = 0) -> Pod:
    requests = {"cpu": Quantity.parse("100m")}
    if gpus:
        requests["nvidia.com/gpu"] = Quantity.from_int(gpus)
    container = Container(name="c", resources=ResourceRequirements(requests=requests))
    claims = (
        (PodResourceClaim(name="resource", resource_claim_template_name="test-claim-template"),)
        if claim
        else ()
    )
    return apply_defaults(
        Pod(
            metadata=ObjectMeta(name=name, namespace="default"),
            spec=PodSpec(containers=(container,), resource_claims=claims),
        )
    )


def replica(name: str, deployment: str, gpus: int) -> Pod:
    """A pod of a Deployment whose replicas avoid each other's nodes and spread over zones."""
    base = pod(name, claim=False, gpus=gpus)
    peers = LabelSelector(match_labels={"app": deployment})
    anti = PodAffinityTerm(label_selector=peers, topology_key="kubernetes.io/hostname")
    spread = TopologySpreadConstraint(
        max_skew=1,
        topology_key="topology.kubernetes.io/zone",
        when_unsatisfiable="DoNotSchedule",
        label_selector=peers,
    )
    spec = PodSpec(
        containers=base.spec.containers,
        affinity=Affinity(
            pod_anti_affinity=PodAffinity(required_during_scheduling_ignored_during_execution=(anti,))
        ),
        topology_spread_constraints=(spread,),
    )
    meta = ObjectMeta(name=name, namespace="default", labels={"app": deployment})
    return apply_defaults(Pod(metadata=meta, spec=spec))


def run(label: str, state: ClusterState, pods: list[Pod]) -> None:
    scheduler = Scheduler(state)
    keys = [state.add_pod(p).key for p in pods]
    start, cpu = time.perf_counter(), time.process_time()
    placed = 0
    for key in keys:
        if isinstance(scheduler.schedule(key), Placement):
            placed += 1
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"placement {label:<40} {len(keys) / elapsed:8.0f} pods/s  "
        f"({placed}/{len(keys)} placed in {elapsed:.2f} s, {len(keys) / cpu:.0f} pods per CPU second, "
        f"process peak RSS {peak:.0f} MiB)"
    )


def dra_cluster(nodes: int, devices: int, *, count: int = 1, constraint: bool = False) -> ClusterState:
    names = [f"node-{i:04d}" for i in range(nodes)]
    return ClusterState(
        nodes=[node(n) for n in names],
        slices=[node_slice(n, devices) for n in names],
        classes=[device_class()],
        templates=[template(count, constraint)],
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=5000)
    args = parser.parse_args()
    nodes, pods = args.nodes, args.pods

    state = dra_cluster(nodes, 8)
    run(f"{pods} pods {nodes} nodes x 8 devices", state, [pod(f"p-{i}", claim=True) for i in range(pods)])

    state = dra_cluster(nodes, 8)
    scheduler = Scheduler(state)
    for i in range(nodes * 4):
        scheduler.schedule(state.add_pod(pod(f"fill-{i}", claim=True)).key)
    run(
        f"{pods // 2} pods {nodes} nodes half full",
        state,
        [pod(f"p-{i}", claim=True) for i in range(pods // 2)],
    )

    state = dra_cluster(nodes, 8, count=2, constraint=True)
    run(
        f"{pods // 2} pods x 2 devices matchAttribute",
        state,
        [pod(f"p-{i}", claim=True) for i in range(pods // 2)],
    )

    gpu_nodes = [node(f"node-{i:04d}", {"nvidia.com/gpu": "8"}) for i in range(nodes * 2)]
    state = ClusterState(nodes=gpu_nodes)
    run(
        f"{pods} pods {nodes * 2} nodes device-plugin",
        state,
        [pod(f"p-{i}", claim=False, gpus=1) for i in range(pods)],
    )

    zones = [
        node(
            f"node-{i:04d}",
            {"nvidia.com/gpu": "8"},
            {"kubernetes.io/hostname": f"node-{i:04d}", "topology.kubernetes.io/zone": f"zone-{i % 10}"},
        )
        for i in range(nodes * 2)
    ]
    state = ClusterState(nodes=zones)
    run(
        f"{pods} pods anti-affinity + zone spread",
        state,
        [replica(f"p-{i}", f"deploy-{i // 10}", gpus=1) for i in range(pods)],
    )


if __name__ == "__main__":
    main()

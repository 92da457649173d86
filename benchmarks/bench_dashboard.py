"""The dashboard at scale: 1,000 nodes and 10,000 pods, snapshots and every view, timed and sized.

The cluster: 1,000 DGX H100 presets (8 GPUs, 8 NICs and CPU groups each, with PCIe roots and NUMA
nodes), 10,000 pods in 20 namespaces each with a one-GPU claim: 8,000 running on every GPU
(their claims allocated), 2,000 pending from a ResourceClaimTemplate with the reasons an engine
cycle gave them. It prints, per step, the median of
`--repeat` runs in milliseconds of CPU time (steadier than wall time on a shared machine) and the
JSON size of the answer:

* the first snapshot (it builds the device catalog), one of the same state (records reused), and
  one after 1 % of the pods left their GPUs;
* the cluster view, a page of the node list (sorted by allocation), one node's map, a page of
  namespaces, one namespace with its pending pods, and the MessagePack size of a frame.

Run: PYTHONPATH=src python benchmarks/bench_dashboard.py [--nodes 1000] [--pods 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

from allot.cluster.state import ClusterState
from allot.dashboard.app_view import app_list, app_view
from allot.dashboard.cluster_view import cluster_view
from allot.dashboard.decisions import DecisionLog
from allot.dashboard.history import totals
from allot.dashboard.node_view import node_list, node_view
from allot.dashboard.query import Page
from allot.dashboard.snapshot import Snapshotter, always_running
from allot.engine.engine import Engine, EnginePolicy
from allot.model.base import Object, ObjectMeta
from allot.model.core import Container, Node, Pod, PodResourceClaim, PodSpec, PodStatus, ResourceRequirements
from allot.model.presets.expand import expand_preset
from allot.model.quantity import Quantity
from allot.model.resource import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceClaim,
    DeviceClass,
    DeviceRequest,
    DeviceRequestAllocationResult,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimSpec,
    ResourceClaimStatus,
    ResourceClaimTemplate,
    ResourceClaimTemplateSpec,
    ResourceSlice,
)
from allot.scheduling.profile import Profile


def _pod(name: str, namespace: str, node: str = "", claim: str = "") -> Pod:
    container = Container(
        name="main",
        resources=ResourceRequirements(
            requests={"cpu": Quantity.parse("4"), "memory": Quantity.parse("16Gi")}
        ),
    )
    entry = (
        PodResourceClaim(name="gpu", resource_claim_name=claim)
        if claim
        else PodResourceClaim(name="gpu", resource_claim_template_name="one-gpu")
    )
    return Pod(
        metadata=ObjectMeta(
            name=name,
            namespace=namespace,
            uid=f"uid-{namespace}-{name}",
            creation_timestamp="2026-01-01T00:00:00Z",
        ),
        spec=PodSpec(
            containers=(container,), resource_claims=(entry,), node_name=node, scheduler_name="allot"
        ),
        status=PodStatus(phase="Running" if node else "Pending"),
    )


def cluster(nodes: int, pods: int) -> tuple[Engine, float]:
    """Every GPU held by a running pod through an allocated claim; the other pods pending."""
    objects: list[Object] = expand_preset("dgx-h100", nodes, name_prefix="gpu")
    names = [o.metadata.name for o in objects if isinstance(o, Node)]
    request = DeviceRequest(name="gpu", exactly=ExactDeviceRequest(device_class_name="gpu.nvidia.com"))
    spec = ResourceClaimSpec(devices=DeviceClaim(requests=(request,)))
    workload: list[Pod] = []
    claims: list[ResourceClaim] = []
    templates: list[ResourceClaimTemplate] = []
    for i in range(pods):
        namespace = f"team-{i % 20:02d}"
        name = f"job-{i:05d}"
        if i < 20:
            templates.append(
                ResourceClaimTemplate(
                    metadata=ObjectMeta(name="one-gpu", namespace=namespace),
                    spec=ResourceClaimTemplateSpec(spec=spec),
                )
            )
        node, gpu = divmod(i, 8)
        if node >= len(names):
            workload.append(_pod(name, namespace))
            continue
        result = DeviceRequestAllocationResult(
            request="gpu", driver="gpu.nvidia.com", pool=names[node], device=f"gpu-{gpu}"
        )
        pod = _pod(name, namespace, names[node], f"{name}-gpu")
        reserved = ResourceClaimConsumerReference(resource="pods", name=name, uid=pod.metadata.uid)
        claims.append(
            ResourceClaim(
                metadata=ObjectMeta(name=f"{name}-gpu", namespace=namespace),
                spec=spec,
                status=ResourceClaimStatus(
                    allocation=AllocationResult(devices=DeviceAllocationResult(results=(result,))),
                    reserved_for=(reserved,),
                ),
            )
        )
        workload.append(pod)
    state = ClusterState(
        nodes=[o for o in objects if isinstance(o, Node)],
        slices=[o for o in objects if isinstance(o, ResourceSlice)],
        classes=[o for o in objects if isinstance(o, DeviceClass)],
        claims=claims,
        templates=templates,
        pods=workload,
    )
    engine = Engine(
        state, policy=EnginePolicy(preemption=False), profiles={"allot": Profile(scheduler_name="allot")}
    )
    started = time.process_time()
    engine.cycle(1_767_225_600.0)
    return engine, time.process_time() - started


def timed(step: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    values = []
    result = None
    for _ in range(repeat):
        started = time.process_time()
        result = step()
        values.append(time.process_time() - started)
    return statistics.median(values) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    engine, placing = cluster(args.nodes, args.pods)
    state = engine.state
    bound = sum(1 for _ in state.bound())
    print(
        f"{args.nodes} nodes, {args.pods} pods: {bound} bound, {len(state.pending())} pending (a cycle over the pending: {placing:.1f} s CPU)"
    )
    log = DecisionLog()
    result = engine.cycle(1_767_225_700.0)
    log.observe(result, 1_767_225_700.0, state, lambda _key: "")
    reasons = engine.pending_reasons(log.reasons)
    snapper = Snapshotter()
    now = 1_767_229_200.0

    def take() -> Any:
        return snapper.take_engine(
            engine, time=now, source="bench", reasons=reasons, log=log, running=always_running
        )

    first, snapshot = timed(take, 1)
    again, snapshot = timed(take, args.repeat)
    print(f"{'snapshot, first (device catalog built)':<40} {first:8.1f} ms CPU")
    print(f"{'snapshot, nothing changed':<40} {again:8.1f} ms CPU")
    leaving = [info.key for info in state.bound()][: args.pods // 100]
    started = time.process_time()
    for key in leaving:
        state.unbind(key)
    snapshot = take()
    changed = (time.process_time() - started) * 1000
    print(f"{f'snapshot, {len(leaving)} pods left their GPUs':<40} {changed:8.1f} ms CPU")
    history = [totals(snapshot)]
    namespace = "team-03"
    node = snapshot.nodes[len(snapshot.nodes) // 2].name
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("cluster view", lambda: cluster_view(snapshot, history)),
        ("node list, 50 by allocation", lambda: node_list(snapshot, text="", pool="", sort="allocated", descending=True, page=Page(0, 50))),
        ("one node's map", lambda: node_view(snapshot, node)),
        ("namespaces, a page of 50", lambda: app_list(snapshot, "namespace", text="", page=Page(0, 50))),
        ("one namespace, 100 pending", lambda: app_view(snapshot, "namespace", namespace, pending_page=Page(0, 100), running_page=Page(0, 100))),
    ]  # fmt: skip
    for name, step in steps:
        elapsed, document = timed(step, args.repeat)
        size = len(json.dumps(document, separators=(",", ":")))
        print(f"{name:<40} {elapsed:8.1f} ms CPU {size / 1024:8.1f} KiB of JSON")
    frame = msgspec.msgpack.encode(snapshot)
    print(f"{'a frame (MessagePack)':<40} {'':>15} {len(frame) / 2**20:8.1f} MiB")


if __name__ == "__main__":
    main()

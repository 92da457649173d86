"""Alibaba's openb GPU-sharing trace (ATC'23), read by `allot.sim.openb`.

`openb:default` (or another shipped trace name, or a CSV path) replays the
trace's pods on its own cluster: the 1,213 nodes of the node list with
HAMi-style fractional GPUs (`allot.sim.openb.to_cluster`), replacing the
scenario's cluster (option `cluster: scenario` keeps the scenario's). Each
pod is a one-pod job: it arrives at its creation time (shifted to start at
0) and runs for deletion − scheduled (or creation) time. The trace has no
tenants; its QoS class (LS, BE, Burstable, Guaranteed) is the tenant
unless `tenant: single`. Options: `limit` (the first N pods), `timeScale`
(multiplies arrival gaps and durations), `cluster`, `tenant`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec.structs import replace

from allot.model.base import Object
from allot.model.loader import Manifests
from allot.sim import openb
from allot.sim.limits import DEFAULT_LIMITS, MAX_FACTOR, MAX_SECONDS, RunLimits, too_many
from allot.sim.scenario import devices as shorthand
from allot.sim.scenario.schema import Scenario
from allot.sim.traces.common import TraceBuilder, dns_name
from allot.sim.traces.options import TraceOptionError, TraceOptions, check_jobs
from allot.sim.workload import Job, PodShape, Workload

MIN_DURATION = 1.0
OPTIONS = ("limit", "timeScale", "tenant", "cluster")


def openb_workload(
    name: str,
    options: Mapping[str, Any],
    scenario: Scenario,
    manifests: Manifests,
    *,
    seed: int,
    limits: RunLimits = DEFAULT_LIMITS,
) -> Workload:
    read = TraceOptions(options, OPTIONS)
    limit = read.integer("limit", None)
    scale = read.number("timeScale", 1.0, maximum=MAX_FACTOR)
    single = read.choice("tenant", "qos", ("qos", "single")) == "single"
    own_cluster = read.choice("cluster", "trace", ("trace", "scenario")) == "trace"
    try:
        pods = openb.read_pods(name)
        nodes = openb.read_nodes() if own_cluster else None
    except (OSError, ValueError) as err:
        raise TraceOptionError(f"openb: {err}") from None
    if limit is not None:
        pods = pods[:limit]
    check_jobs(len(pods), limits)
    if nodes is not None and len(nodes) > limits.nodes:
        raise TraceOptionError(too_many("nodes", len(nodes), limits.nodes, "--max-nodes"))
    timed = [p.creation_time for p in pods if p.creation_time is not None]
    start = min(timed) if timed else 0
    end = max([p.deletion_time for p in pods if p.deletion_time is not None] + timed + [0])
    builder = TraceBuilder(scenario, manifests)
    shapes: dict[str, PodShape] = {}
    jobs: list[Job] = []
    by_tenant: dict[str, list[Any]] = {}
    for pod in pods:
        tenant = builder.tenant("openb" if single else dns_name(pod.qos or "none"))
        by_tenant.setdefault(tenant.namespace, []).append(pod)
        prototype = openb.to_pod(pod, name="", namespace=tenant.namespace)
        gpus = pod.num_gpu * pod.gpu_milli / 1000 if pod.gpu_milli > 0 else 0.0
        if gpus:
            tolerations = (*prototype.spec.tolerations, shorthand.GPU_TOLERATION)
            prototype = replace(prototype, spec=replace(prototype.spec, tolerations=tolerations))
        shape = f"{tenant.name}/{pod.name}"
        shapes[shape] = PodShape(
            shape, tenant.name, prototype, gpus, "inference" if 0 < gpus < 1 else "gpu" if gpus else "cpu"
        )
        created = pod.creation_time if pod.creation_time is not None else start
        began = pod.scheduled_time if pod.scheduled_time is not None else created
        stopped = pod.deletion_time if pod.deletion_time is not None else end
        jobs.append(
            Job(
                key=f"{tenant.namespace}/{dns_name(pod.name, 'pod')}",
                tenant=tenant.name,
                shape=shape,
                arrival=min((created - start) * scale, MAX_SECONDS),
                duration=min(max(MIN_DURATION, (stopped - began) * scale), MAX_SECONDS),
            )
        )
    objects: list[Object] = []
    for namespace, members in by_tenant.items():
        objects.extend(openb.templates(members, namespace=namespace))
    cluster: list[Object] | None = None
    if nodes is not None:
        k8s_nodes, slices, classes = openb.to_cluster(nodes)
        cluster = [*classes, *k8s_nodes, *slices]
    return Workload(dict(sorted(builder.tenants.items())), shapes, jobs, objects, cluster=cluster)

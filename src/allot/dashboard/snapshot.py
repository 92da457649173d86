"""`Snapshotter.take(...)`: the dashboard's `Snapshot` of the engine's state at one instant.

A pure function of what it is given: the ClusterState (nodes, pods, claims, devices), the
AdmissionState (quota, usage, fair sharing) when Kueue's queues exist, the pending reasons
(`Engine.pending_reasons` over the latest decisions, or the pods' own PodScheduled messages for
a read-only mirror) and the `DecisionLog`'s tallies. The same code serves the live scheduler
and the simulator. The `Snapshotter` only memoises: what depends on nodes and devices alone
(`DeviceCatalog`, `DemandEstimator`, rebuilt when the state replaces them), and each pod's and
node's record with what it was built from, reused while that has not changed.

Node pools: the first of `pool_labels` a node carries (cloud providers' node pool labels by
default), else its name without a trailing `-<number>` (`train-7` is in pool `train`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from msgspec.structs import replace

from allot.admission.state import AdmissionState
from allot.cluster.pod_info import PodInfo
from allot.cluster.resources import CPU, MEMORY
from allot.cluster.state import ClusterState
from allot.dashboard.apps import group_of, local_queue_of
from allot.dashboard.decisions import DecisionLog
from allot.dashboard.demand import DemandEstimator
from allot.dashboard.devices import DeviceCatalog, DomainOf, Holdings, NodeDevices, Running, taint_text
from allot.dashboard.model import (
    ClusterQueueRecord,
    CohortRecord,
    DeviceRecord,
    GpuRecord,
    Holder,
    LocalQueueRecord,
    NodeRecord,
    PodRecord,
    Quota,
    Snapshot,
)
from allot.engine.engine import Engine
from allot.model.timestamps import parse_timestamp
from allot.scheduling.plugins.gpu_isolation import GpuIsolation
from allot.scheduling.sharing.domains import TrustDomain

POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
)
_TRAILING_NUMBER = re.compile(r"-\d+$")


def pool_of(name: str, labels: Mapping[str, str], pool_labels: Sequence[str] = POOL_LABELS) -> str:
    for label in pool_labels:
        value = labels.get(label)
        if value:
            return value
    return _TRAILING_NUMBER.sub("", name) or name


def running_phase(info: PodInfo) -> bool:
    """A pod whose containers run (the API's phase): what 'in use' counts on a live cluster."""
    return info.node is not None and info.pod.status.phase == "Running"


def always_running(info: PodInfo) -> bool:
    """In a simulation every bound pod runs."""
    return info.node is not None


class Snapshotter:
    """Takes snapshots of one state; see the module docstring."""

    def __init__(self, *, pool_labels: Sequence[str] = ()) -> None:
        """`pool_labels`: the node labels naming a node's pool, in order (empty: `POOL_LABELS`)."""
        self.pool_labels = tuple(pool_labels) or POOL_LABELS
        self._catalog: DeviceCatalog | None = None
        self._demand: DemandEstimator | None = None
        # The last records and what they were built from, reused while that has not changed.
        self._pod_cache: dict[str, tuple[tuple[object, ...], PodRecord]] = {}
        self._node_cache: dict[str, tuple[tuple[object, ...], NodeRecord]] = {}

    def catalog(self, state: ClusterState) -> DeviceCatalog:
        if self._catalog is None or not self._catalog.valid_for(state):
            self._catalog = DeviceCatalog(state)
            self._demand = None
        return self._catalog

    def demand(self, state: ClusterState) -> DemandEstimator:
        catalog = self.catalog(state)
        if self._demand is None or not self._demand.valid_for(state):
            self._demand = DemandEstimator(state, catalog)
        return self._demand

    def take_engine(
        self,
        engine: Engine,
        *,
        time: float,
        source: str,
        title: str = "",
        reasons: Mapping[str, str],
        log: DecisionLog | None,
        running: Running,
        admission: AdmissionState | None = None,
    ) -> Snapshot:
        """A snapshot of an engine's state: its ClusterState, AdmissionState (or `admission`) and
        profiles."""
        return self.take(
            engine.state,
            time=time,
            source=source,
            title=title,
            admission=admission if admission is not None else engine.admission,
            reasons=reasons,
            log=log,
            running=running,
            domain_of=trust_domains(engine),
        )

    def take(
        self,
        state: ClusterState,
        *,
        time: float,
        source: str,
        title: str = "",
        admission: AdmissionState | None = None,
        reasons: Mapping[str, str] | None = None,
        log: DecisionLog | None = None,
        running: Running = running_phase,
        domain_of: DomainOf | None = None,
    ) -> Snapshot:
        catalog = self.catalog(state)
        held = catalog.holdings(state, domain_of if domain_of is not None else _namespace_domain, running)
        nodes = tuple(self._node(state, catalog, name, held) for name in state.nodes.index)
        pods = self._pods(state, held, admission, reasons or {}, running)
        queues, local, cohorts = _queues(admission)
        return Snapshot(
            time=time,
            source=source,
            title=title,
            nodes=nodes,
            pods=pods,
            cluster_queues=queues,
            local_queues=local,
            cohorts=cohorts,
            tallies=log.tallies() if log is not None else {},
            decisions_seen=log is not None,
        )

    def _pods(
        self,
        state: ClusterState,
        held: Holdings,
        admission: AdmissionState | None,
        reasons: Mapping[str, str],
        running: Running,
    ) -> tuple[PodRecord, ...]:
        """Pod records, each rebuilt only when what it shows changed (pod, node, claims, reason...)."""
        demand = self.demand(state)
        queue_of = _queue_lookup(admission)
        cache = self._pod_cache
        fresh: dict[str, tuple[tuple[object, ...], PodRecord]] = {}
        records = []
        for key, info in sorted(state.pods.items()):
            bound = info.node is not None
            reason = reasons.get(key, "")
            runs = running(info)
            # What the record shows depends on: the pod, its node and priority, what it holds or
            # (pending) its claims, its reason, whether it runs, the devices (demand), the queues.
            mark = (
                info.pod,
                info.node,
                info.priority,
                held.pods.get(key, 0.0) if bound else tuple(state.claims.get(k) for _, k in info.claims),
                reason,
                runs,
                demand,
                admission,
            )
            cached = cache.get(key)
            if cached is not None and _same(cached[0], mark):
                record = cached[1]
            else:
                local = local_queue_of(info.pod.namespace, info.pod.metadata.labels)
                record = _pod(
                    state,
                    info,
                    queue_of(local) if local else "",
                    running=runs,
                    gpus=held.pods.get(key, 0.0) if bound else demand.wanted(state, info),
                    reason=reason,
                )
            fresh[key] = (mark, record)
            records.append(record)
        self._pod_cache = fresh
        return tuple(records)

    def _node(self, state: ClusterState, catalog: DeviceCatalog, name: str, held: Holdings) -> NodeRecord:
        """A node's record, rebuilt only when its devices' holders, its pods or its state changed."""
        table = state.nodes
        index = table.index[name]
        info = table.infos[index]
        entry = catalog.nodes[name]
        sums = tuple(tuple(held.gpus.get(entry.first_gpu + local, ())) for local in range(len(entry.gpus)))
        holders = tuple(held.devices.get((d.driver, d.pool, d.name)) for d in entry.devices)
        plugin = tuple(held.plugin.get((name, local)) for local in entry.plugin)
        mark = (
            entry,
            info.node,
            bool(table.ready[index]),
            bool(table.schedulable[index]),
            table.requested_total(CPU, index),
            table.requested_total(MEMORY, index),
            frozenset(info.pods),
            sums,
            holders,
            plugin,
        )
        cached = self._node_cache.get(name)
        if cached is not None and _same(cached[0], mark):
            return cached[1]
        record = self._build_node(state, name, entry, sums, holders, plugin)
        self._node_cache[name] = (mark, record)
        return record

    def _build_node(
        self,
        state: ClusterState,
        name: str,
        entry: NodeDevices,
        sums: tuple[tuple[float, ...], ...],
        holders: tuple[list[Holder] | None, ...],
        plugin: tuple[str | None, ...],
    ) -> NodeRecord:
        table = state.nodes
        index = table.index[name]
        info = table.infos[index]
        gpus: list[GpuRecord] = []
        for gpu, taken in zip(entry.gpus, sums, strict=True):
            if taken:
                allocated = round(min(1.0, max(taken[0], taken[1])), 4)
                gpu = replace(gpu, allocated=allocated, in_use=round(min(1.0, max(taken[2], taken[3])), 4))
            gpus.append(gpu)
        devices: list[DeviceRecord] = [
            replace(device, holders=tuple(found)) if found else device
            for device, found in zip(entry.devices, holders, strict=True)
        ]
        for local, pod in zip(entry.plugin, plugin, strict=True):
            gpu = entry.gpus[local]
            devices.append(
                DeviceRecord(
                    name=gpu.label,
                    driver="device-plugin",
                    pool=name,
                    kind="gpu",
                    role=gpu.mode,
                    model=gpu.model,
                    gpu=local,
                    holders=(Holder(pod),) if pod else (),
                )
            )
        return NodeRecord(
            name=name,
            pool=pool_of(name, info.labels, self.pool_labels),
            ready=bool(table.ready[index]),
            schedulable=bool(table.schedulable[index]),
            taints=tuple(taint_text(t) for t in info.taints),
            gpus=tuple(gpus),
            devices=tuple(devices),
            pods=tuple(sorted(info.pods)),
            cpu=(info.allocatable.get(CPU, 0), table.requested_total(CPU, index)),
            memory=(info.allocatable.get(MEMORY, 0), table.requested_total(MEMORY, index)),
        )


def _namespace_domain(info: PodInfo) -> str:
    return f"namespace={info.pod.namespace}"


def trust_domains(engine: Engine) -> DomainOf:
    """A pod's trust domain as its profile's GpuIsolation plugin groups pods (by namespace when
    the profile has none)."""
    default = TrustDomain()

    def domain_of(info: PodInfo) -> str:
        plugins = engine.scheduler.plugins(info.pod.spec.scheduler_name)
        for plugin in plugins.pre_filters if plugins is not None else ():
            if isinstance(plugin, GpuIsolation):
                return plugin.trust_domain.domain_of(engine.state, info)
        return default.domain_of(engine.state, info)

    return domain_of


def _queue_lookup(admission: AdmissionState | None) -> Callable[[str], str]:
    if admission is None:
        return lambda _key: ""
    local = admission.local_queues

    def lookup(key: str) -> str:
        queue = local.get(key)
        return queue.spec.cluster_queue if queue is not None else ""

    return lookup


def _same(old: tuple[object, ...], new: tuple[object, ...]) -> bool:
    """Whether two marks are equal: records and objects by identity (they are immutable), the rest by value."""
    return all(a is b or a == b for a, b in zip(old, new, strict=True))


def _pod(
    state: ClusterState,
    info: PodInfo,
    cluster_queue: str,
    *,
    running: bool,
    gpus: float,
    reason: str,
) -> PodRecord:
    pod = info.pod
    namespace = pod.namespace
    labels = pod.metadata.labels
    local_queue = local_queue_of(namespace, labels)
    bound = info.node is not None
    return PodRecord(
        key=info.key,
        node=state.nodes.infos[info.node].name if info.node is not None else "",
        # A simulated pod has no phase of its own: bound, it runs.
        phase=pod.status.phase or ("Running" if running else ""),
        priority=info.priority,
        scheduler=pod.spec.scheduler_name,
        local_queue=local_queue,
        cluster_queue=cluster_queue,
        group=group_of(namespace, labels),
        gpus=round(gpus, 4),
        created=parse_timestamp(pod.metadata.creation_timestamp),
        reason="" if bound else (reason or "not tried yet"),
    )


def _queues(
    admission: AdmissionState | None,
) -> tuple[tuple[ClusterQueueRecord, ...], tuple[LocalQueueRecord, ...], tuple[CohortRecord, ...]]:
    if admission is None:
        return (), (), ()
    status = admission.status()
    queues: list[ClusterQueueRecord] = []
    for cq in status.cluster_queues:
        node = admission.tree.cqs[cq.name]
        quota = tuple(
            Quota(
                flavor=flavor.name,
                resource=resource.name,
                nominal=node.nominal.get((flavor.name, resource.name), 0),
                usage=resource.total,
                borrowed=resource.borrowed,
                borrowing_limit=node.borrowing_limit.get((flavor.name, resource.name)),
                lending_limit=node.lending_limit.get((flavor.name, resource.name)),
            )
            for flavor in cq.flavors
            for resource in flavor.resources
        )
        queues.append(
            ClusterQueueRecord(
                name=cq.name,
                cohort=cq.cohort,
                weight=node.weight,
                weighted_share=cq.weighted_share,
                dominant_resource=cq.dominant_resource,
                quota=quota,
                pending_workloads=cq.pending,
                admitted_workloads=cq.admitted,
                inactive=cq.inactive or "",
            )
        )
    local = tuple(
        LocalQueueRecord(
            key=lq.key,
            cluster_queue=lq.cluster_queue,
            pending_workloads=lq.pending,
            admitted_workloads=lq.admitted,
            usage=tuple((f.name, r.name, r.total) for f in lq.flavors for r in f.resources),
        )
        for lq in status.local_queues
    )
    cohorts = tuple(CohortRecord(c.name, c.parent, c.weighted_share) for c in status.cohorts)
    return tuple(queues), local, cohorts

"""`AdmissionState`: the admission side of the engine's cycle, as one object.

The engine holds one AdmissionState beside its ClusterState and shares one
`Journal` with it, so a single transaction covers placement and quota. The
cycle (see docs/admission.md):

1. `candidates(now)` yields pending workloads in admission order, one
   ClusterQueue head at a time (`allot.admission.cycle`). Heads whose
   flavor assignment is NoFit are parked there and never yielded.
2. For each candidate the engine calls `assign(workload)`: Fit, Preempt or
   NoFit against the current quota. For Preempt, `preemption_targets`
   names the victims (or None); the engine evicts them with `evict`.
3. The engine places all pods on nodes of the assigned flavors
   (`node_filter`) inside a transaction; only if placement succeeds does
   it call `admit` (quota usage and the AFS entry penalty, journaled) and
   commit. Otherwise it calls `park(workload, reason)` and the workload
   waits for a relevant `notify(event)`.
4. `finish` / `evict` / `remove` release quota and wake parked workloads
   of the same cohort tree.

A ClusterQueue whose yielded head is neither admitted nor parked nor removed
by the time the generator resumes is done for this cycle (Kueue considers
one head per queue per cycle); a queue whose head was admitted or parked
offers its next head in the same cycle. No I/O and no clock: `now` is
always the caller's number.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from allot.admission.afs import AdmissionFairSharing
from allot.admission.config import EVICTION_TIMESTAMP, AdmissionConfig
from allot.admission.cycle import PENDING, Candidate, run_cycle
from allot.admission.entry import QueueEntry
from allot.admission.errors import AdmissionError
from allot.admission.events import Event, EventKind, ParkKind, ParkReason
from allot.admission.fair_sharing import ShareCalculator
from allot.admission.flavor_match import label_selector_matches
from allot.admission.flavors import (
    Assignment,
    FlavorAssigner,
    FlavorNodeFilter,
    Mode,
    Possibility,
    flavor_node_filter,
    no_fit,
)
from allot.admission.jobs import restore_admitted_jobs
from allot.admission.ordering import Admitted
from allot.admission.preemption import assignment_targets, oracle_for
from allot.admission.queues import PendingQueue, ReasonKey, SortKey, exact_reason
from allot.admission.quota import QueuePolicy, build_quota
from allot.admission.resources import FlavorResource, Usage, format_amount
from allot.admission.running import restore_running, restore_running_pods
from allot.admission.status import AdmissionStatus, admission_status
from allot.admission.targets import Preemptor, Target, World, timestamp_matters
from allot.admission.tree import Node, available
from allot.admission.workload import Workload, WorkloadBuilder
from allot.cluster.journal import Journal
from allot.cluster.state import ClusterState
from allot.model.batch import Job
from allot.model.core import Namespace, Pod
from allot.model.core import Node as KubeNode
from allot.model.kueue import ClusterQueue, Cohort, LocalQueue, ResourceFlavor, WorkloadPriorityClass
from allot.model.kueue_config import Configuration
from allot.model.loader import Manifests
from allot.model.resource import ResourceClaim, ResourceClaimTemplate
from allot.model.runtime import RuntimeClass, admitted_pods
from allot.model.scheduling import PriorityClass

ADMITTED = "Admitted"

EVICTED_BY_PREEMPTION = "Preempted"
EVICTED_BY_PODS_READY_TIMEOUT = "PodsReadyTimeout"
EVICTED_BY_DEACTIVATION = "InactiveWorkload"

_MISSING: Any = object()
_QUOTA_EVENTS = (
    EventKind.WORKLOAD_FINISHED,
    EventKind.WORKLOAD_EVICTED,
    EventKind.WORKLOAD_REMOVED,
    EventKind.QUOTA_CHANGED,
)

_QUOTA_KIND = frozenset({ParkKind.QUOTA})
_PLACEMENT_KIND = frozenset({ParkKind.PLACEMENT})
_WAITING_KIND = frozenset({ParkKind.WAITING})
_QUOTA_AND_PLACEMENT = _QUOTA_KIND | _PLACEMENT_KIND


class AdmissionState:
    """Quota, queues, fair sharing and preemption for one cluster. See module docs."""

    def __init__(
        self,
        *,
        cluster_queues: Iterable[ClusterQueue],
        cohorts: Iterable[Cohort] = (),
        local_queues: Iterable[LocalQueue] = (),
        flavors: Iterable[ResourceFlavor] = (),
        namespaces: Iterable[Namespace] = (),
        config: AdmissionConfig | None = None,
        journal: Journal | None = None,
        start_time: float = 0.0,
    ) -> None:
        self.config = config if config is not None else AdmissionConfig()
        self.journal = journal if journal is not None else Journal()
        self.tree, self.policies = build_quota(cluster_queues, cohorts, self.journal)
        self.flavors: dict[str, ResourceFlavor] = {f.name: f for f in flavors}
        self.local_queues: dict[str, LocalQueue] = {lq.key: lq for lq in local_queues}
        self.namespace_labels: dict[str, dict[str, str]] = {
            ns.name: dict(ns.metadata.labels) for ns in namespaces
        }
        self.shares = ShareCalculator(cache=True)
        self.afs: AdmissionFairSharing | None = None
        if self.config.afs is not None:
            self.afs = AdmissionFairSharing(self.config.afs, self.journal, start=start_time)
            for key, lq in sorted(self.local_queues.items()):
                self.afs.ensure(key, lq.spec.weight)
        # What a reason told again is compared by (see `compare_reasons_by`).
        self.reason_key: ReasonKey = exact_reason
        self.queues: dict[str, PendingQueue] = {
            name: PendingQueue(
                name,
                strict=policy.strict_fifo,
                by_local_queue=policy.admission_fair_sharing and self.afs is not None,
                journal=self.journal,
            )
            for name, policy in sorted(self.policies.items())
        }
        self.admitted: dict[str, dict[str, Admitted]] = {name: {} for name in self.policies}
        self.entries: dict[str, QueueEntry] = {}
        self.builder: WorkloadBuilder | None = None
        self._touched: set[str] = set(self.queues)
        # Workloads the cycle parked without offering them (NoFit, or equivalent to an inadmissible
        # one): the engine reports why they wait, as it does for the ones it tried.
        self.parked_in_cycle: list[str] = []
        self._assign_cache: dict[str, tuple[int, Workload, Assignment]] = {}
        # Assignments found without the preemption oracle that did not fit (see `fitting`).
        self._no_preemption_cache: dict[str, tuple[int, Workload, Assignment]] = {}
        # The same for equivalent workloads (see `_assignment`).
        self._assign_by_shape: dict[tuple[object, ...], tuple[int, Assignment]] = {}
        self._backoff: list[tuple[float, str]] = []
        # Whether releases and capacity events wake workloads parked for placement here; an engine
        # that judges those itself with queueing hints turns it off and calls `requeue`.
        self.wake_placement = True
        self._root_of = {name: node.root().name for name, node in self.tree.cqs.items()}
        # BestEffortFIFO: equivalence classes found inadmissible, per queue, until a waking event.
        self._inadmissible: dict[str, dict[tuple[object, ...], ParkReason]] = {
            name: {} for name in self.queues
        }
        self.world = World(
            tree=self.tree,
            policies=self.policies,
            admitted=self.admitted,
            shares=self.shares,
            config=self.config,
            lq_usage=self._lq_usage,
            ordered_by_time=frozenset(
                name for name, policy in self.policies.items() if policy.admission_fair_sharing
            )
            if self.afs is not None
            else frozenset(),
        )

    @classmethod
    def from_manifests(
        cls,
        manifests: Manifests,
        *,
        config: AdmissionConfig | None = None,
        journal: Journal | None = None,
        start_time: float = 0.0,
        claims: Mapping[str, ResourceClaim] | None = None,
    ) -> AdmissionState:
        """A state for the Kueue objects in `manifests` (the first Configuration, if any, sets `config`).

        Workloads whose pods already run are admitted at `start_time`, even past
        their quota (`allot.admission.running`). `claims` (keyed `namespace/name`)
        replaces the manifests' ResourceClaims as the table workloads are charged
        from; it is read live.
        """
        if config is None:
            configurations = manifests.of_kind(Configuration)
            config = AdmissionConfig.from_configuration(configurations[0] if configurations else None)
        state = cls(
            cluster_queues=manifests.of_kind(ClusterQueue),
            cohorts=manifests.of_kind(Cohort),
            local_queues=manifests.of_kind(LocalQueue),
            flavors=manifests.of_kind(ResourceFlavor),
            namespaces=manifests.of_kind(Namespace),
            config=config,
            journal=journal,
            start_time=start_time,
        )
        state.builder = WorkloadBuilder(
            workload_priority_classes=manifests.of_kind(WorkloadPriorityClass),
            priority_classes=manifests.of_kind(PriorityClass),
            claims=claims if claims is not None else manifests.of_kind(ResourceClaim),
            claim_templates=manifests.of_kind(ResourceClaimTemplate),
            device_class_mappings=config.mapped_resources,
            default_time=start_time,
        )
        labels = {node.name: dict(node.metadata.labels) for node in manifests.of_kind(KubeNode)}
        pods = admitted_pods(manifests.of_kind(Pod), manifests.of_kind(RuntimeClass))
        restore_running_pods(state, pods, labels, start_time)
        restore_admitted_jobs(state, manifests.of_kind(Job), start_time)
        return state

    @classmethod
    def from_cluster(
        cls,
        manifests: Manifests,
        cluster: ClusterState,
        *,
        config: AdmissionConfig | None = None,
        start_time: float = 0.0,
    ) -> AdmissionState:
        """The admission state an engine over `cluster` needs: its journal, its live claims, and
        the workloads that already run in it (see `from_manifests`)."""
        return cls.from_manifests(
            manifests, config=config, journal=cluster.journal, start_time=start_time, claims=cluster.claims
        )

    def workloads_from_pods(self, pods: Iterable[Pod]) -> list[Workload]:
        """Workloads for the queued pods among `pods` (see `allot.admission.workload`)."""
        builder = self.builder or WorkloadBuilder(device_class_mappings=self.config.mapped_resources)
        return builder.from_pods(pods)

    # --- journaled attribute changes ---------------------------------------------

    def _setattr(self, obj: Any, name: str, value: Any) -> None:
        old = getattr(obj, name)
        setattr(obj, name, value)
        if self.journal.recording:
            self.journal.record(lambda: setattr(obj, name, old))

    def _setattr_map(self, name: str, value: dict[tuple[object, ...], ParkReason]) -> None:
        old = self._inadmissible[name]
        self._inadmissible[name] = value
        if self.journal.recording:
            self.journal.record(lambda: self._inadmissible.__setitem__(name, old))

    def _put(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        old = table.get(key, _MISSING)
        table[key] = value
        if self.journal.recording:
            self.journal.record(lambda: _restore(table, key, old))

    def _pop(self, table: dict[Any, Any], key: Any) -> None:
        old = table.pop(key, _MISSING)
        if old is not _MISSING and self.journal.recording:
            self.journal.record(lambda: _restore(table, key, old))

    # --- lookups ------------------------------------------------------------------

    def _lq_usage(self, candidate: Admitted) -> float | None:
        if self.afs is None or not self.policies[candidate.cluster_queue].admission_fair_sharing:
            return None
        return self.afs.score(candidate.local_queue)

    def _score(self, local_queue: str) -> float:
        return self.afs.score(local_queue) if self.afs is not None else 0.0

    def policy(self, cluster_queue: str) -> QueuePolicy:
        return self.policies[cluster_queue]

    def cluster_queue_of(self, workload: Workload) -> tuple[str | None, str | None]:
        """(ClusterQueue, why the workload cannot be queued) for a workload's LocalQueue."""
        lq = self.local_queues.get(workload.local_queue)
        if lq is None:
            return None, f"LocalQueue {workload.local_queue} doesn't exist"
        cq = lq.spec.cluster_queue
        if cq not in self.policies:
            return None, f"ClusterQueue {cq} doesn't exist"
        return cq, None

    def _root_names(self, cluster_queue: str) -> list[str]:
        root = self.tree.cqs[cluster_queue].root()
        return [n.name for n in root.subtree_cqs()]

    # --- submit / remove ----------------------------------------------------------

    def submit(self, workload: Workload, now: float | None = None) -> None:
        """Queue a workload (or replace a pending one, e.g. a pod group that gained pods)."""
        existing = self.entries.get(workload.key)
        if existing is not None:
            if existing.state == ADMITTED:
                raise AdmissionError(f"workload {workload.key} is admitted; finish or evict it first")
            self._drop_pending(existing)
        cq, problem = self.cluster_queue_of(workload)
        waiting = None
        if workload.invalid:
            waiting = ParkReason.waiting(workload.invalid)
        elif problem:
            waiting = ParkReason.waiting(problem)
        elif workload.incomplete:
            waiting = ParkReason.waiting(workload.incomplete)
        elif cq is not None:
            waiting = self._queue_problem(workload, cq)
        entry = QueueEntry(
            workload=workload,
            cluster_queue=cq,
            local_queue=workload.local_queue,
            state=PENDING,
            order_time=workload.created,
            waiting=waiting,
        )
        self._put(self.entries, workload.key, entry)
        if cq is not None and waiting is None:
            self._enqueue(entry)

    def _queue_problem(self, workload: Workload, cq: str) -> ParkReason | None:
        policy = self.policies[cq]
        lq = self.local_queues.get(workload.local_queue)
        if lq is not None and lq.spec.stop_policy not in (None, "", "None"):
            return ParkReason.waiting(f"LocalQueue {workload.local_queue} is stopped")
        labels = dict(self.namespace_labels.get(workload.namespace, {}))
        labels.setdefault("kubernetes.io/metadata.name", workload.namespace)
        if not label_selector_matches(policy.namespace_selector, labels):
            return ParkReason.waiting(
                f"namespace {workload.namespace} doesn't match the namespaceSelector of ClusterQueue {cq}"
            )
        return None

    def _enqueue(self, entry: QueueEntry) -> None:
        assert entry.cluster_queue is not None
        w = entry.workload
        queue = self.queues[entry.cluster_queue]
        queue.push(
            w.key,
            entry.local_queue,
            (-w.priority, entry.order_time, w.key),
            self.group_of(entry),
            self._chain(queue, entry),
        )
        self._touched.add(entry.cluster_queue)

    def _drop_pending(self, entry: QueueEntry) -> None:
        if entry.cluster_queue is not None:
            self.queues[entry.cluster_queue].remove(entry.workload.key)
            self._touched.add(entry.cluster_queue)

    def remove(self, key: str, now: float | None = None) -> None:
        """The workload was deleted: release its quota if admitted and forget it."""
        entry = self.entries.get(key)
        if entry is None:
            return
        if entry.state == ADMITTED:
            self._release(entry, now if now is not None else entry.order_time)
        else:
            self._drop_pending(entry)
        self._pop(self.entries, key)

    # --- the cycle ----------------------------------------------------------------

    def advance(self, now: float) -> None:
        """Let time pass: AFS sampling ticks, and backoffs that expired."""
        if self.afs is not None and self.afs.advance(now):
            self.tree.touch()  # victim order depends on LocalQueue usage
            for name, policy in self.policies.items():
                if policy.admission_fair_sharing:
                    self._touched.add(name)
        while self._backoff and self._backoff[0][0] <= now:
            until, key = heapq.heappop(self._backoff)
            entry = self.entries.get(key)
            if entry is None or entry.cluster_queue is None:
                continue
            queue = self.queues[entry.cluster_queue]
            reason = queue.parked.get(key)
            if reason is not None and reason.kind is ParkKind.BACKOFF and reason.until == until:
                queue.unpark(key)
                self._touched.add(entry.cluster_queue)

    def candidates(self, now: float) -> Iterator[Candidate]:
        """Pending workloads in admission order (see the module docs and `allot.admission.cycle`)."""
        self.advance(now)
        yield from run_cycle(self)

    # --- assignment ---------------------------------------------------------------

    def assign(self, workload: Workload) -> Assignment:
        """Flavors and fit of `workload` against the current quota (Fit / Preempt / NoFit)."""
        entry = self.entries.get(workload.key)
        if entry is None:
            cq, problem = self.cluster_queue_of(workload)
            if cq is None:
                return no_fit("", problem or "")
            entry = QueueEntry(workload, cq, workload.local_queue, PENDING, workload.created)
        return self._assignment(entry)

    def fitting(self, workload: Workload) -> Assignment | None:
        """`workload`'s assignment if it fits unused quota now (mode Fit), else None.

        The same answer as `assign(workload).mode is Mode.FIT`, found without simulating
        preemption where the ClusterQueue leaves no choice of flavor (one flavor per resource
        group): a flavor fits only if every resource fits without preemption, and which of
        Preempt or NoFit the rest would be does not matter here.
        """
        entry = self.entries.get(workload.key)
        cq = entry.cluster_queue if entry is not None else None
        if entry is None or cq is None or any(len(g.flavors) != 1 for g in self.policies[cq].resource_groups):
            assignment = self.assign(workload)
            return assignment if assignment.mode is Mode.FIT else None
        assignment = self._assignment(entry, preemption=False)
        return assignment if assignment.mode is Mode.FIT else None

    def _assignment(self, entry: QueueEntry, *, preemption: bool = True) -> Assignment:
        """The flavor assignment, cached until usage changes. Without `preemption` the oracle is
        not consulted: a flavor that needs preemption counts as NoFit, and only a Fit (which the
        oracle never decides) is kept in the cache."""
        cq = entry.cluster_queue
        if cq is None:
            return no_fit("", entry.waiting.message if entry.waiting else "no ClusterQueue")
        if entry.waiting is not None:
            return no_fit(cq, entry.waiting.message)
        policy = self.policies[cq]
        if policy.inactive:
            return no_fit(cq, policy.inactive)
        key = entry.workload.key
        generation = self.tree.generation
        caches = [self._assign_cache] if preemption else [self._assign_cache, self._no_preemption_cache]
        for cache in caches:
            cached = cache.get(key)
            if (
                cached is not None
                and cached[0] == generation
                and cached[2].cluster_queue == cq
                and (cached[1] is entry.workload or cached[1] == entry.workload)
            ):
                return cached[2]
        shape_key: tuple[object, ...] | None = None
        if preemption:
            # Equivalent workloads (Kueue's equivalence, pod-set names, and the timestamp where the
            # victims depend on it) get one assignment per generation: a deep line of them offered
            # in turn costs one assignment, not one each.
            workload = entry.workload
            shape_key = (
                cq,
                entry.equivalence(),
                tuple(ps.name for ps in workload.pod_sets),
                entry.order_time if timestamp_matters(policy) else None,
            )
            shared = self._assign_by_shape.get(shape_key)
            if shared is not None and shared[0] == generation:
                self._remember_assignment(self._assign_cache, key, generation, workload, shared[1])
                return shared[1]
        oracle = (
            oracle_for(
                self.world,
                key=key,
                cluster_queue=cq,
                priority=entry.workload.priority,
                order_time=entry.order_time,
            )
            if preemption
            else _no_preemption
        )
        assigner = FlavorAssigner(
            policy=policy,
            node=self.tree.cqs[cq],
            flavors=self.flavors,
            oracle=oracle,
            fair_sharing=self.config.fair_sharing,
        )
        assignment = assigner.assign(entry.workload)
        cache = self._assign_cache if preemption or assignment.mode is Mode.FIT else self._no_preemption_cache
        self._remember_assignment(cache, key, generation, entry.workload, assignment)
        if shape_key is not None:
            if len(self._assign_by_shape) > 4096:
                self._assign_by_shape.clear()
            self._assign_by_shape[shape_key] = (generation, assignment)
        return assignment

    @staticmethod
    def _remember_assignment(
        cache: dict[str, tuple[int, Workload, Assignment]],
        key: str,
        generation: int,
        workload: Workload,
        assignment: Assignment,
    ) -> None:
        if len(cache) > 4096:
            cache.clear()
        cache[key] = (generation, workload, assignment)

    def preemption_targets(self, workload: Workload, assignment: Assignment) -> list[Target] | None:
        """Victims that make room for `workload` in its Preempt-mode flavors; None if none can."""
        entry = self.entries.get(workload.key)
        order_time = entry.order_time if entry is not None else workload.created
        preemptor = Preemptor(
            key=workload.key,
            cluster_queue=assignment.cluster_queue,
            priority=workload.priority,
            order_time=order_time,
            usage=assignment.usage,
            frs=assignment.needs_preemption(),
        )
        return assignment_targets(self.world, preemptor)

    def flavor_node_filter(self, flavor: str) -> FlavorNodeFilter:
        """Node labels, taints and tolerations of one ResourceFlavor."""
        found = self.flavors.get(flavor)
        return flavor_node_filter(found) if found is not None else FlavorNodeFilter()

    def node_filter(self, assignment: Assignment, pod_set: str) -> FlavorNodeFilter:
        """What the nodes of a pod set must satisfy: the union of its assigned flavors."""
        ps = assignment.pod_set(pod_set)
        if ps is None:
            return FlavorNodeFilter()
        return flavor_node_filter(self.flavors[f] for f in ps.flavor_names() if f in self.flavors)

    # --- admit / finish / evict ---------------------------------------------------

    def admit(
        self, workload: Workload, assignment: Assignment, now: float, *, protected: bool = False
    ) -> None:
        """Reserve quota for a placed workload (journaled, with the AFS entry penalty). A
        `protected` one is taken back by other queues' fair-sharing preemption only to keep
        within their nominal quota (`Admitted.protected`)."""
        entry = self.entries.get(workload.key)
        if entry is None or entry.state != PENDING or entry.cluster_queue is None:
            raise AdmissionError(f"workload {workload.key} is not pending in a ClusterQueue")
        cq = entry.cluster_queue
        if assignment.cluster_queue != cq or assignment.mode is Mode.NO_FIT:
            raise AdmissionError(f"assignment is not for ClusterQueue {cq} or does not fit")
        node = self.tree.cqs[cq]
        for fr, value in sorted(assignment.usage.items()):
            free = max(0, available(node, fr))
            if value > free:
                raise AdmissionError(
                    f"workload {workload.key} does not fit ClusterQueue {cq}: {fr[1]} in flavor {fr[0]} "
                    f"needs {format_amount(fr[1], value)}, {format_amount(fr[1], free)} available"
                )
        self._record_admission(entry, assignment.usage, now, protected=protected)

    def _record_admission(
        self,
        entry: QueueEntry,
        usage: Mapping[FlavorResource, int],
        now: float,
        *,
        admitted_at: float | None = None,
        protected: bool = False,
    ) -> None:
        """Charge quota and move the workload from its queue to the admitted set (journaled)."""
        cq = entry.cluster_queue
        assert cq is not None
        key = entry.workload.key
        frozen = MappingProxyType(dict(usage))
        self.queues[cq].remove(key)
        self.tree.add_usage(self.tree.cqs[cq], frozen)
        record = Admitted(
            key=key,
            cluster_queue=cq,
            local_queue=entry.local_queue,
            priority=entry.workload.priority,
            order_time=entry.order_time,
            admitted_at=now if admitted_at is None else admitted_at,
            usage=frozen,
            protected=protected,
        )
        self._put(self.admitted[cq], key, record)
        self._setattr(entry, "state", ADMITTED)
        self._setattr(entry, "flavors", frozenset(f for f, _ in frozen))
        if self.afs is not None and self.policies[cq].admission_fair_sharing:
            self.afs.admitted(entry.local_queue, _by_resource(frozen), now)
        self._touched.add(cq)

    def restore(
        self, workload: Workload, now: float, *, node_labels: Mapping[str, str] | None = None
    ) -> Assignment:
        """Record a workload that is already running, even past its quota (see `allot.admission.running`)."""
        return restore_running(self, workload, now, node_labels=node_labels)

    def _release(self, entry: QueueEntry, now: float) -> None:
        cq = entry.cluster_queue
        assert cq is not None
        record = self.admitted[cq][entry.workload.key]
        self.tree.remove_usage(self.tree.cqs[cq], record.usage)
        self._pop(self.admitted[cq], entry.workload.key)
        if self.afs is not None and self.policies[cq].admission_fair_sharing:
            self.afs.released(entry.local_queue, _by_resource(record.usage), now)
        self._setattr(entry, "state", PENDING)
        self._touched.add(cq)
        self._wake_after_release(cq, entry.flavors)

    def finish(self, key: str, now: float) -> None:
        """The workload completed: release its quota and forget it."""
        self.remove(key, now)

    def evict(self, key: str, reason: str, now: float) -> None:
        """Release an admitted workload's quota and requeue it (Kueue's requeue rules).

        Preempted workloads go back in line at once, keeping their creation
        time. A PodsReadyTimeout eviction counts a requeue: the workload
        waits base·2^(n−1) seconds (capped), is ordered by the eviction time
        when the requeuing timestamp is Eviction, and is deactivated once the
        backoff limit is reached.
        """
        entry = self.entries.get(key)
        if entry is None or entry.state != ADMITTED:
            raise AdmissionError(f"workload {key} is not admitted")
        self._release(entry, now)
        self._setattr(entry, "evicted", reason)
        requeue = self.config.requeue
        if reason == EVICTED_BY_PODS_READY_TIMEOUT:
            count = entry.requeues + 1
            self._setattr(entry, "requeues", count)
            if requeue.timestamp == EVICTION_TIMESTAMP:
                self._setattr(entry, "order_time", now)
            if requeue.backoff_limit is not None and count > requeue.backoff_limit:
                self._setattr(
                    entry,
                    "waiting",
                    ParkReason.waiting(f"deactivated after {count - 1} requeues (backoffLimitCount)"),
                )
                return
            until = now + requeue.backoff(count)
            self._enqueue(entry)
            assert entry.cluster_queue is not None
            self.queues[entry.cluster_queue].park(
                key, ParkReason(ParkKind.BACKOFF, f"requeued after backoff at {until:g}", until)
            )
            heapq.heappush(self._backoff, (until, key))
            return
        if reason == EVICTED_BY_DEACTIVATION:
            self._setattr(entry, "waiting", ParkReason.waiting("deactivated"))
            self._setattr(entry, "deactivated", True)
            return
        self._enqueue(entry)

    def mark_evicting(self, key: str) -> None:
        """The workload was told to stop but still holds quota (preempted, terminating)."""
        entry = self.entries.get(key)
        if entry is None or entry.state != ADMITTED or entry.cluster_queue is None:
            return
        self._setattr(self.admitted[entry.cluster_queue][key], "evicting", True)
        self.tree.touch()

    # --- parking and events -------------------------------------------------------

    def compare_reasons_by(self, reason_key: ReasonKey) -> None:
        """Tell a waiting workload a new reason only when its key differs from the one it was told
        (the text itself by default). A driver that shows reasons without their numbers (the
        simulator's report) gives a key without them, and a deep backlog is not told every new
        count of what its quota lacks."""
        self.reason_key = reason_key
        for queue in self.queues.values():
            queue.compare_reasons_by(reason_key)

    def park(self, workload: Workload, reason: ParkReason | str) -> None:
        """The engine could not admit `workload` now; wait for a relevant event (or requeue at once)."""
        if isinstance(reason, str):
            reason = ParkReason.quota(reason)
        entry = self.entries.get(workload.key)
        if entry is None or entry.state != PENDING or entry.cluster_queue is None:
            return
        cached = self._assign_cache.get(workload.key)
        if cached is not None and not entry.flavors:
            flavors = {c.flavor for ps in cached[2].pod_sets for c in ps.flavors.values()}
            self._setattr(entry, "flavors", frozenset(flavors))
        if reason.kind.immediate:
            return
        self._park_entry(entry, reason)

    def _park_entry(self, entry: QueueEntry, reason: ParkReason) -> None:
        cq = entry.cluster_queue
        assert cq is not None
        queue = self.queues[cq]
        chain = queue.park(entry.workload.key, reason)
        if reason.kind is ParkKind.QUOTA and not queue.strict:
            # Equivalent workloads (same priority and shape) cannot fit either until
            # something wakes this queue: park them without another assignment.
            marks = self._inadmissible[cq]
            shape = entry.equivalence()
            if shape not in marks:
                self._put(marks, shape, reason)
            if chain is not None:
                self._tell_deferred(queue, chain, marks[shape])
        self._touched.add(cq)

    def _tell_deferred(self, queue: PendingQueue, chain: Hashable, reason: ParkReason) -> None:
        """The workloads deferred behind one that parked for quota again: in line, each would be
        parked with the shape's mark as it came to the head; give them that reason now, unless
        it is the one they have (compared by the queue's reason key: nothing to walk when every
        workload of the chain carries it)."""
        self.parked_in_cycle.extend(queue.retell(chain, reason))

    @staticmethod
    def _chain(queue: PendingQueue, entry: QueueEntry) -> Hashable:
        """Workloads parked alike: one shape, in one LocalQueue's line where each has its own."""
        return (entry.local_queue if queue.by_local_queue else "", entry.equivalence())

    def notify(self, event: Event) -> None:
        """React to something the caller observed (see `allot.admission.events`)."""
        kind = event.kind
        if event.now is not None:
            self.advance(event.now)
        if kind is EventKind.TIME:
            return
        scope = self._scope(event)
        if kind in _QUOTA_EVENTS:
            self._wake(scope, lambda _k, r: r.kind is ParkKind.QUOTA, _QUOTA_KIND, quota=True)
        elif kind in (EventKind.CAPACITY_FREED, EventKind.NODES_CHANGED):
            if not self.wake_placement:
                return
            flavor = event.flavor

            def placement(key: str, reason: ParkReason) -> bool:
                if reason.kind is not ParkKind.PLACEMENT:
                    return False
                return not flavor or flavor in self.entries[key].flavors

            self._wake(scope, placement, _PLACEMENT_KIND)
        elif kind is EventKind.QUEUES_CHANGED:
            self._wake(scope, lambda _k, r: r.kind is ParkKind.WAITING, _WAITING_KIND)
            for entry in list(self.entries.values()):
                if entry.waiting is not None and entry.state == PENDING and not entry.deactivated:
                    self.submit(entry.workload)

    def _scope(self, event: Event) -> list[str]:
        if event.cluster_queue and event.cluster_queue in self.tree.cqs:
            return self._root_names(event.cluster_queue)
        if event.cohort and event.cohort in self.tree.cohorts:
            return [n.name for n in self.tree.cohorts[event.cohort].root().subtree_cqs()]
        return sorted(self.queues)

    def _wake(
        self, cluster_queues: Iterable[str], wanted: Any, kinds: frozenset[ParkKind], *, quota: bool = False
    ) -> None:
        """Requeue parked workloads: with `quota` (quota was freed) every one parked for quota, and
        of the others those `wanted(key, reason)` selects (`wanted` selects only these `kinds`:
        a queue parking none of them otherwise is not walked)."""
        for name in cluster_queues:
            queue = self.queues[name]
            if quota and self._inadmissible[name]:
                self._setattr_map(name, {})
            # Any order: the heap orders by sort key (unique per workload), not by arrival.
            if queue.parks_otherwise(kinds):
                for key, reason in queue.parked_otherwise():
                    if wanted(key, reason):
                        self._touched.add(name)
                        queue.unpark(key)
            if quota and queue.wake_chains():
                self._touched.add(name)
            if queue.blocked is not None and wanted(*queue.blocked):
                queue.unblock()
                self._touched.add(name)

    def requeue(self, key: str) -> None:
        """Put a workload parked for placement back in line (its engine judged that it may fit now)."""
        entry = self.entries.get(key)
        if entry is None or entry.state != PENDING or entry.cluster_queue is None:
            return
        queue = self.queues[entry.cluster_queue]
        reason = queue.parked.get(key)
        if reason is not None and reason.kind is ParkKind.PLACEMENT:
            queue.unpark(key)
            self._touched.add(entry.cluster_queue)
        elif (
            queue.blocked is not None
            and queue.blocked[0] == key
            and queue.blocked[1].kind is ParkKind.PLACEMENT
        ):
            queue.unblock()
            self._touched.add(entry.cluster_queue)

    def _wake_after_release(self, cluster_queue: str, flavors: frozenset[str]) -> None:
        def relevant(key: str, reason: ParkReason) -> bool:
            if reason.kind is ParkKind.QUOTA:
                return True  # a StrictFIFO queue blocked for quota
            if reason.kind is not ParkKind.PLACEMENT or not self.wake_placement:
                return False
            return bool(self.entries[key].flavors & flavors)

        kinds = _QUOTA_AND_PLACEMENT if self.wake_placement else _QUOTA_KIND
        self._wake(self._root_names(cluster_queue), relevant, kinds, quota=True)

    # --- reading ------------------------------------------------------------------

    def pending_reason(self, key: str) -> str | None:
        """Why a pending workload is not admitted yet (None if it is admitted or simply queued)."""
        entry = self.entries.get(key)
        if entry is None or entry.state != PENDING:
            return None
        if entry.waiting is not None:
            return entry.waiting.message
        if entry.cluster_queue is None:
            return None
        inactive = self.policies[entry.cluster_queue].inactive
        if inactive:
            return inactive
        queue = self.queues[entry.cluster_queue]
        if key in queue.parked:
            return queue.parked[key].message
        if queue.blocked is not None and queue.blocked[0] == key:
            return queue.blocked[1].message
        return None

    def status(self) -> AdmissionStatus:
        """Per ClusterQueue, LocalQueue and Cohort, what Kueue would report (see `status`)."""
        return admission_status(self)

    def is_admitted(self, key: str) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry.state == ADMITTED

    def usage(self, cluster_queue: str) -> Usage:
        return dict(self.tree.cqs[cluster_queue].usage)

    def node(self, name: str) -> Node:
        """The tree node of a ClusterQueue or Cohort."""
        return self.tree.cqs.get(name) or self.tree.cohorts[name]

    def pending_groups(self, cluster_queue: str) -> dict[tuple[str, tuple[object, ...]], PendingGroup]:
        """Every pending workload of a queue, parked or not, by group (`group_of`): the group's
        LocalQueue score (admission fair sharing; else 0) and its sort keys in order (a copy).
        Admission order is (score, sort key) across the groups: every pending workload, parked
        or not, in the order the queue would offer it."""
        queue = self.queues[cluster_queue]
        found: dict[tuple[str, tuple[object, ...]], PendingGroup] = {}
        for group, members in queue.groups().items():
            assert isinstance(group, tuple)
            score = self._score(group[0]) if queue.by_local_queue else 0.0
            found[group] = PendingGroup(score, list(members))
        return found

    def pending_version(self, cluster_queue: str) -> int | None:
        """A number that changes whenever `pending_groups(cluster_queue)` could (None where it
        changes with time too: LocalQueue scores under admission fair sharing)."""
        queue = self.queues[cluster_queue]
        return None if queue.by_local_queue else queue.changes

    @staticmethod
    def group_of(entry: QueueEntry) -> tuple[str, tuple[object, ...]]:
        """The group a pending workload is listed under: its LocalQueue and its shape (Kueue's
        equivalence); workloads of one group get the same flavor assignment."""
        return (entry.local_queue, entry.equivalence())

    def pending_order(self, cluster_queue: str) -> list[str]:
        """Active (not parked) pending workloads of a queue, in admission order."""
        queue = self.queues[cluster_queue]
        return queue.ordered(self._score if queue.by_local_queue else None)


class PendingGroup(NamedTuple):
    """A group of pending workloads of one queue: its LocalQueue score and sort keys in order."""

    score: float
    members: list[SortKey]


def _no_preemption(_fr: FlavorResource, _quantity: int) -> tuple[Possibility, int]:
    """An oracle that finds no preemption possible (for `AdmissionState.fitting`)."""
    return Possibility.NO_CANDIDATES, 0


def _restore(table: dict[str, Any], key: str, old: Any) -> None:
    if old is _MISSING:
        table.pop(key, None)
    else:
        table[key] = old


def _by_resource(usage: Mapping[FlavorResource, int]) -> dict[str, int]:
    total: dict[str, int] = {}
    for (_, resource), value in usage.items():
        total[resource] = total.get(resource, 0) + value
    return total

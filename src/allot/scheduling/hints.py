"""Queueing hints: which cluster events could let a pod that failed fit, and whether one did.

kube-scheduler keeps a pod that failed out of its active queue until an
event arrives that one of the plugins that rejected it registered for
(EventsToRegister), and asks that plugin's hint whether this particular
event could help. Here the same, as data:

* every filter plugin declares `wake_on`, the `ClusterEventKind`s that can
  turn its rejection into a fit (a plugin that declares nothing is woken by
  every event: safe, only slower). The kinds a failed pod waits for are the
  union over the plugins that rejected it, plus, when it may preempt and
  some node rejected it for resources or devices, pods bound (a new
  victim) and pods leaving;
* the hint for an event on one node re-checks the pod on that node alone
  (`Scheduler.fits_on`), with every lower-priority pod of the node removed
  when the pod may preempt (exactly the test default preemption starts
  with). All other nodes are as they were when the pod failed, so if it
  does not fit the changed node it still fits nowhere. Events without a
  node (claims, slices, device classes, devices freed in pools shared by
  several nodes) wake the pod.

* a plugin whose verdict on a node depends on pods and labels of other
  nodes (InterPodAffinity, PodTopologySpread: a whole topology domain)
  declares `wake_anywhere`: events of those kinds wake a pod it rejected
  whatever node they happened on, without the one-node re-check.

The hints never skip a pod that would now fit: with them the engine makes
the decisions it makes when it retries every pod every cycle, only faster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from allot.cluster.events import ALL_KINDS, NODE_EVENTS, POD_EVENTS, ClusterEvent, ClusterEventKind
from allot.cluster.pod_index import TermKind, has_pod_affinity
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.scheduling.diagnosis import Diagnosis
from allot.scheduling.node_statuses import NodeStatuses
from allot.scheduling.packing.occupancy import GpuOccupancy
from allot.scheduling.scheduler import Scheduler
from allot.scheduling.status import Code

# What a preempting pod also waits for: a lower-priority pod bound somewhere is a new victim.
PREEMPTION_EVENTS = NODE_EVENTS | {ClusterEventKind.POD_BOUND, ClusterEventKind.POD_LEFT}
# Nodes the caller did not allow (a Kueue flavor, a topology domain): only node changes help.
NOT_ALLOWED = ""
# What can change a verdict anywhere for a pod placed by other pods (affinity, spreading).
ANYWHERE = NODE_EVENTS | POD_EVENTS


def rejecting_plugins(diagnosis: Diagnosis) -> frozenset[str]:
    """Names of the plugins that rejected the pod somewhere ("" for nodes not allowed)."""
    if diagnosis.pre_filter is not None:
        return frozenset({diagnosis.pre_filter.plugin})
    statuses = diagnosis.node_statuses
    if isinstance(statuses, NodeStatuses):
        return statuses.plugins()
    return frozenset(status.plugin for status in statuses.values())


def _preemption_could_help(diagnosis: Diagnosis) -> bool:
    """Whether some node rejected the pod for a reason removing pods can fix (resources, devices);
    labels, taints and pre-filter rejections are no preemption candidates."""
    if diagnosis.pre_filter is not None:
        return False
    statuses = diagnosis.node_statuses
    if isinstance(statuses, NodeStatuses):
        return bool(statuses.indices_with(Code.UNSCHEDULABLE))
    return any(status.code is Code.UNSCHEDULABLE for status in statuses.values())


class Hints:
    """The scheduler's plugins' declarations, and the per-node re-check behind every hint."""

    def __init__(self, scheduler: Scheduler, occupancy: Callable[[], GpuOccupancy] | None = None) -> None:
        """`occupancy` gives the GPU counts that rule a node out before its filters run (None: the
        filters alone)."""
        self.scheduler = scheduler
        self.state: ClusterState = scheduler.state
        self._declared: dict[tuple[str, str], frozenset[ClusterEventKind]] = {}
        self._occupancy = occupancy

    def _declaration(
        self, scheduler_name: str, plugin: str, attribute: str, default: frozenset[ClusterEventKind]
    ) -> frozenset[ClusterEventKind]:
        key = (scheduler_name, f"{plugin}/{attribute}")
        found = self._declared.get(key)
        if found is None:
            found = default
            if plugin == NOT_ALLOWED:
                found = NODE_EVENTS if attribute == "wake_on" else frozenset()
            else:
                plugins = self.scheduler.plugins(scheduler_name)
                named = [
                    p
                    for group in (
                        (plugins.pre_filters, plugins.mask_filters, plugins.node_filters, plugins.reservers)
                        if plugins is not None
                        else ()
                    )
                    for p in group
                    if p.name == plugin
                ]
                if named:
                    found = getattr(named[0], attribute, default)
            self._declared[key] = found
        return found

    def _wake_on(self, scheduler_name: str, plugin: str) -> frozenset[ClusterEventKind]:
        return self._declaration(scheduler_name, plugin, "wake_on", ALL_KINDS)

    def anywhere_kinds(self, pod_key: str, diagnosis: Diagnosis) -> frozenset[ClusterEventKind]:
        """The kinds whose events could let this failed pod fit on nodes other than their own."""
        name = self.state.pods[pod_key].pod.spec.scheduler_name
        kinds: frozenset[ClusterEventKind] = frozenset()
        for plugin in rejecting_plugins(diagnosis):
            kinds |= self._declaration(name, plugin, "wake_anywhere", frozenset())
        return kinds

    def depends_on_other_nodes(self, pod_key: str) -> bool:
        """Whether a pod could be kept from a node by pods on other nodes (see the function)."""
        return depends_on_other_nodes(self.scheduler, pod_key)

    def wake_kinds(
        self, pod_key: str, diagnosis: Diagnosis, *, preempting: bool
    ) -> frozenset[ClusterEventKind]:
        """The event kinds that could change this failed pod's verdict."""
        info = self.state.pods[pod_key]
        name = info.pod.spec.scheduler_name
        rejecting = rejecting_plugins(diagnosis)
        if not rejecting:
            # Rejected by no plugin (a cluster without nodes): any event may help, as kube-scheduler
            # requeues a pod no plugin rejected on every event.
            return ALL_KINDS
        kinds: frozenset[ClusterEventKind] = frozenset()
        for plugin in rejecting:
            kinds |= self._wake_on(name, plugin)
        if preempting and info.pod.spec.preemption_policy != "Never" and _preemption_could_help(diagnosis):
            kinds |= PREEMPTION_EVENTS
        return kinds

    def could_help(self, pod_key: str, events: Iterable[ClusterEvent], *, preempting: bool) -> bool:
        """Whether any of these events (of kinds the pod waits for) could let it fit now."""
        nodes: set[int] = set()
        for event in events:
            if not event.local or event.node is None:
                return True
            nodes.add(event.node)
        return any(self.fits_on(pod_key, node, preempting=preempting) for node in sorted(nodes))

    def members_fitting(self, pod_keys: list[str], index: int, *, preempting: bool, limit: int) -> int:
        """How many of these pending pods node `index` could host together (at most `limit`), once its
        pods of lower priority than all of them are gone if they may preempt; changes nothing."""
        state = self.state
        pending = [k for k in pod_keys if k in state.pods and not state.pods[k].bound]
        if not pending or index >= state.nodes.size:
            return 0
        lowest = min(state.pods[k].priority for k in pending)
        count = 0
        with state.journal.transaction(), self._lower_priority_gone(index, lowest if preempting else None):
            # Filters alone say no more cheaply than a placement attempt, and most changed nodes
            # have no room for any member: members are bound one by one only where one could fit.
            if not self._any_fits(pending, index):
                return 0
            for key in pending:
                if count >= limit:
                    break
                if self.scheduler.bind_on(key, index):
                    count += 1
        return count

    def _any_fits(self, pod_keys: list[str], index: int) -> bool:
        """Whether any of the pods passes the filters on node `index` (each class asked once)."""
        asked: set[bytes] = set()
        for key in pod_keys:
            klass = self.scheduler.equivalence_class(key)
            if klass is not None:
                if klass in asked:
                    continue
                asked.add(klass)
            if self.scheduler.fits_on(key, index):
                return True
        return False

    def fits_on(self, pod_key: str, index: int, *, preempting: bool) -> bool:
        """Whether the pending pod fits node `index`, once its lower-priority pods are gone if it may preempt."""
        state = self.state
        info = state.pods.get(pod_key)
        if info is None or info.bound:
            return False
        if index >= state.nodes.size:
            return True
        may_preempt = preempting and info.pod.spec.preemption_policy != "Never"
        with self._lower_priority_gone(index, info.priority if may_preempt else None):
            return not self._short_of_gpus(info, index) and self.scheduler.fits_on(pod_key, index)

    @contextmanager
    def _lower_priority_gone(self, index: int, below: int | None) -> Iterator[None]:
        """A what-if: within the block, node `index` without its pods of priority lower than `below`
        (all of them stay when `below` is None), what a pod that may preempt could have. The pods
        taken away are back after the block; what the block itself changes is the caller's to undo."""
        state = self.state
        leaving = [] if below is None else [p.key for p in state.pods_on(index) if p.priority < below]
        if not leaving:
            # Nothing to take away: no transaction to open (this runs for every hint of every event).
            yield
            return
        with state.journal.transaction():
            for key in leaving:
                state.unbind(key)
            yield

    def whole_requests(self, pods: list[PodInfo]) -> list[tuple[int, frozenset[int] | None]]:
        """Each pod's whole-GPU requests (`GpuOccupancy.whole_requests`), for `room_bound`."""
        if self._occupancy is None:
            return [(0, None) for _ in pods]
        occupancy = self._occupancy()
        return [occupancy.whole_requests(info) for info in pods]

    def room_bound(
        self,
        pending: list[PodInfo],
        requests: list[tuple[int, frozenset[int] | None]],
        index: int,
        *,
        preempting: bool,
        limit: int,
    ) -> int | None:
        """At most how many of these pending pods node `index` could host (at most `limit`), as
        `members_fitting` counts them, from whole-GPU counts alone (`GpuOccupancy.whole_room`), the
        smallest needs first; None where a pod asks for no whole GPU or the count cannot tell.
        `requests`: each pod's `whole_requests`."""
        if not pending or index >= self.state.nodes.size:
            return 0
        needs = sorted(need for need, _ in requests)
        if self._occupancy is None or needs[0] == 0:
            return None
        occupancy = self._occupancy()
        lowest = min(info.priority for info in pending)
        with self._lower_priority_gone(index, lowest if preempting else None):
            rooms = [
                occupancy.whole_room(info, index, asked)
                for info, asked in zip(pending, requests, strict=True)
            ]
        if any(room is None for room in rooms):
            return None
        free = max(room for room in rooms if room is not None)
        count = 0
        for need in needs:
            if count >= limit or need > free:
                break
            free -= need
            count += 1
        return count

    def short_of_gpus(self, pod_key: str, index: int, leaving: Iterable[str] = ()) -> bool:
        """Whether node `index` has fewer whole GPUs left than the pending pod asks for, even with
        every GPU of the bound pods `leaving` freed (False when the count cannot tell): then the pod
        does not fit there, now or once they are gone."""
        state = self.state
        info = state.pods.get(pod_key)
        if info is None or index >= state.nodes.size:
            return False
        return self._short_of_gpus(info, index, [p for p in map(state.pods.get, leaving) if p is not None])

    def _short_of_gpus(self, info: PodInfo, index: int, leaving: Iterable[PodInfo] = ()) -> bool:
        """Whether the node has fewer whole GPUs left than the pod asks for, with those of `leaving`
        freed (False when unknown): a count, cheaper than the filters that would say the same."""
        if self._occupancy is None:
            return False
        occupancy = self._occupancy()
        requests = occupancy.whole_requests(info)
        if not requests[0]:
            return False
        room = occupancy.whole_room(info, index, requests)
        if room is None:
            return False
        return room + sum(occupancy.held(bound) for bound in leaving) < requests[0]


def depends_on_other_nodes(scheduler: Scheduler, pod_key: str) -> bool:
    """Whether a pod could be kept from a node by pods on other nodes (for failures without a
    diagnosis): it has inter-pod affinity, spreading or volumes, or some bound pod has required
    anti-affinity."""
    state = scheduler.state
    info = state.pods.get(pod_key)
    if info is None:
        return False
    spec = info.pod.spec
    if has_pod_affinity(info.pod) or spec.topology_spread_constraints or spec.volumes:
        return True
    if state.pod_index.has_terms(TermKind.REQUIRED_ANTI_AFFINITY):
        return True
    plugins = scheduler.plugins(spec.scheduler_name)
    return plugins is not None and any(getattr(p, "hard_defaults", False) for p in plugins.mask_filters)

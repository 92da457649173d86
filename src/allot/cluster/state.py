"""ClusterState: nodes, pods, claims and device use, kept consistent under transactions.

The state is built once from manifests and then changed only through its
methods (`add_pod`, `bind`, `unbind`, `remove_pod`, `set_node_ready` ...),
each of which records its own undo in the journal. Any what-if therefore
runs as::

    with state.journal.transaction() as tx:
        state.bind(...)
        if good:
            tx.commit()

and leaves no trace when not committed. The state does no scheduling: it
answers questions (what is free, who uses what) and applies decisions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from msgspec.structs import replace

from allot.cluster import claims as claimlib
from allot.cluster import hami
from allot.cluster.events import ClusterEvent, ClusterEventKind
from allot.cluster.journal import Journal
from allot.cluster.nodes import NodeTable
from allot.cluster.pod_index import PodIndex
from allot.cluster.pod_info import PodInfo
from allot.cluster.resources import PODS, nonzero_cpu_memory, pod_requests
from allot.cluster.volumes import VolumeState
from allot.dra import AllocatedState, Features, SliceIndex
from allot.model.core import Namespace, Node, Pod, PodExtendedResourceClaimStatus
from allot.model.defaults import NAMESPACE_NAME_LABEL
from allot.model.loader import Manifests
from allot.model.resource import (
    AllocationResult,
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from allot.model.runtime import RuntimeClass, admitted_pods
from allot.model.scheduling import PodDisruptionBudget, PriorityClass
from allot.model.storage import CSINode, PersistentVolume, PersistentVolumeClaim, StorageClass
from allot.model.workloads import ReplicaSet, ReplicationController, Service, StatefulSet

# Pods in these phases hold no resources.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
# A template entry whose claim the resourceclaim controller has not created yet (live clusters).
WAITING_FOR_CLAIM = "waiting for the resourceclaim of entry {entry!r} to be created"
CLAIM_NOT_FOUND = "resourceclaim {key!r} not found"
TEMPLATE_NOT_FOUND = "resourceclaimtemplate {namespace}/{name!r} not found"


# A claim placement matched to a volume (its name), or left to dynamic provisioning ("").
VolumeDecision = tuple[str, str]

# Mutating admission for pods entering the state: returns the pod to keep and the
# ResourceClaims to create with it (HAMi's webhook, allot.cluster.hami).
PodMutator = Callable[["ClusterState", Pod], tuple[Pod, Sequence[ResourceClaim]]]


class StateError(ValueError):
    """A decision that contradicts the state (a bug in the caller, not an expected outcome)."""


def resolve_priority(pod: Pod, classes: Mapping[str, PriorityClass]) -> int:
    """The pod's priority as the Priority admission plugin would set it."""
    if pod.spec.priority is not None:
        return pod.spec.priority
    if pod.spec.priority_class_name:
        cls = classes.get(pod.spec.priority_class_name)
        return cls.value if cls is not None else 0
    for cls in classes.values():
        if cls.global_default:
            return cls.value
    return 0


class ClusterState:
    """Everything placement and admission read, with incremental indexes."""

    def __init__(
        self,
        *,
        nodes: Iterable[Node] = (),
        pods: Iterable[Pod] = (),
        claims: Iterable[ResourceClaim] = (),
        templates: Iterable[ResourceClaimTemplate] = (),
        classes: Iterable[DeviceClass] = (),
        slices: Iterable[ResourceSlice] = (),
        taint_rules: Iterable[DeviceTaintRule] = (),
        priority_classes: Iterable[PriorityClass] = (),
        disruption_budgets: Iterable[PodDisruptionBudget] = (),
        namespaces: Iterable[Namespace] = (),
        volume_claims: Iterable[PersistentVolumeClaim] = (),
        volumes: Iterable[PersistentVolume] = (),
        storage_classes: Iterable[StorageClass] = (),
        csi_nodes: Iterable[CSINode] = (),
        services: Iterable[Service] = (),
        replica_sets: Iterable[ReplicaSet] = (),
        stateful_sets: Iterable[StatefulSet] = (),
        replication_controllers: Iterable[ReplicationController] = (),
        features: Features | None = None,
        pod_mutators: Iterable[PodMutator] | None = None,
        generate_claims: bool = True,
    ) -> None:
        self.journal = Journal()
        self.features = features if features is not None else Features.all()
        self.nodes = NodeTable(nodes, self.journal)
        self.classes: dict[str, DeviceClass] = {c.name: c for c in classes}
        self.templates: dict[str, ResourceClaimTemplate] = {t.key: t for t in templates}
        self.priority_classes: dict[str, PriorityClass] = {c.name: c for c in priority_classes}
        self.disruption_budgets: list[PodDisruptionBudget] = sorted(disruption_budgets, key=lambda b: b.key)
        self.namespaces: dict[str, Namespace] = {n.name: n for n in namespaces}
        # Namespaces pods are in (hand-written input often has no Namespace objects).
        self._pod_namespaces: set[str] = set()
        self.storage = VolumeState(
            self.journal,
            claims=volume_claims,
            volumes=volumes,
            classes=storage_classes,
            csi_nodes=csi_nodes,
            as_controllers=generate_claims,
        )
        # What PodTopologySpread's default constraints build a pod's selector from.
        self.services: dict[str, Service] = {s.key: s for s in services}
        self.replica_sets: dict[str, ReplicaSet] = {r.key: r for r in replica_sets}
        self.stateful_sets: dict[str, StatefulSet] = {s.key: s for s in stateful_sets}
        self.replication_controllers: dict[str, ReplicationController] = {
            r.key: r for r in replication_controllers
        }
        self._slice_objects = list(slices)
        self._taint_rules = list(taint_rules)
        self.slices = SliceIndex(self._slice_objects, self._taint_rules)
        # True: claims of template entries are made here, as the resourceclaim controller would
        # (simulator, planner). False: they come from the API with the pod's status (live).
        self.generate_claims = generate_claims
        self.claims: dict[str, ResourceClaim] = {c.key: c for c in claims}
        self.allocated = AllocatedState.from_claims(self.claims.values())
        # Called with (allocation, +1 or -1) whenever device use changes, including on rollback.
        self.allocation_listeners: list[Callable[[AllocationResult, int], None]] = []
        # Called with (pod, +1 or -1) when a pod takes or leaves a node (its claims are
        # allocated at both moments), including on rollback.
        self.pod_listeners: list[Callable[[PodInfo, int], None]] = []
        # Applied to every new pod, in order. By default HAMi's request mapping, which does
        # nothing unless HAMi's DeviceClass exists (see allot.cluster.hami).
        self.pod_mutators: list[PodMutator] = (
            list(pod_mutators) if pod_mutators is not None else [hami.mutate_pod]
        )
        self.pods: dict[str, PodInfo] = {}
        # Pending pods by the claims they name, where claims come from the API (not generated
        # here): a claim deleted under a pending pod makes it wait for the claim again. Entries
        # are checked when used, so a pod bound or gone since costs nothing but the entry.
        self._claim_users: dict[str, set[str]] = {}
        # Bound pods by labels and topology, host ports and claims (inter-pod affinity, spreading).
        self.pod_index = PodIndex(self, self.namespace_labels)
        # How many bound pods have each priority (preemption asks whether anything lower runs).
        self._bound_priorities: Counter[int] = Counter()
        self._sequence = 0
        self._binds = 0
        # Counts changes that may let waiting pods fit (a pod leaving a node, a node coming back).
        self.releases = 0
        # Events for queueing hints, kept only once someone listens (`listen_for_events`).
        self._events: list[ClusterEvent] | None = None
        self._global_pools = {
            (s.spec.driver, s.spec.pool.name) for s in self.slices.slices if not s.spec.node_name
        }
        for pod in pods:
            self._add_pod(pod, bind_existing=True)
        # Building the initial state is not a what-if: nothing to undo.

    @classmethod
    def from_manifests(cls, manifests: Manifests, *, features: Features | None = None) -> ClusterState:
        return cls(
            nodes=manifests.of_kind(Node),
            # Pods that ended are not the scheduler's (kube-scheduler's pod informer leaves out
            # Succeeded and Failed ones): they hold nothing on their node and are not scheduled.
            pods=[
                p
                for p in admitted_pods(manifests.of_kind(Pod), manifests.of_kind(RuntimeClass))
                if p.status.phase not in TERMINAL_PHASES
            ],
            claims=manifests.of_kind(ResourceClaim),
            templates=manifests.of_kind(ResourceClaimTemplate),
            classes=manifests.of_kind(DeviceClass),
            slices=manifests.of_kind(ResourceSlice),
            taint_rules=manifests.of_kind(DeviceTaintRule),
            priority_classes=manifests.of_kind(PriorityClass),
            disruption_budgets=manifests.of_kind(PodDisruptionBudget),
            namespaces=manifests.of_kind(Namespace),
            volume_claims=manifests.of_kind(PersistentVolumeClaim),
            volumes=manifests.of_kind(PersistentVolume),
            storage_classes=manifests.of_kind(StorageClass),
            csi_nodes=manifests.of_kind(CSINode),
            services=manifests.of_kind(Service),
            replica_sets=manifests.of_kind(ReplicaSet),
            stateful_sets=manifests.of_kind(StatefulSet),
            replication_controllers=manifests.of_kind(ReplicationController),
            features=features,
        )

    # -- queries ----------------------------------------------------------------------

    def pending(self) -> list[PodInfo]:
        """Pods without a node, in arrival order."""
        return [info for info in self.pods.values() if info.node is None]

    def bound(self) -> Iterator[PodInfo]:
        return (info for info in self.pods.values() if info.node is not None)

    def lowest_bound_priority(self) -> int | None:
        """The lowest priority among bound pods; None when no pod is bound."""
        present = [priority for priority, count in self._bound_priorities.items() if count > 0]
        return min(present) if present else None

    def pods_on(self, node_index: int) -> list[PodInfo]:
        return [self.pods[key] for key in sorted(self.nodes.infos[node_index].pods)]

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """The namespace's labels; one without a Namespace object has only the name label the API
        server gives every namespace."""
        found = self.namespaces.get(namespace)
        if found is not None:
            return found.metadata.labels
        return {NAMESPACE_NAME_LABEL: namespace}

    def namespace_names(self) -> set[str]:
        """Every namespace there is: those with a Namespace object and those pods are in."""
        return set(self.namespaces) | self._pod_namespaces

    def pod_claims(self, info: PodInfo) -> list[ResourceClaim]:
        """The pod's claims that exist, in spec order."""
        return [self.claims[key] for _, key in info.claims if key in self.claims]

    # -- events ---------------------------------------------------------------------------

    def listen_for_events(self) -> None:
        """Start keeping the events this state emits (pods added, bound, leaving; nodes changing)."""
        if self._events is None:
            self._events = []

    def take_events(self) -> list[ClusterEvent]:
        """The events committed since the last call (none while a transaction is open)."""
        events = self._events
        if not events or self.journal.recording:
            return []
        self._events = []
        return events

    def _emit(self, event: ClusterEvent) -> None:
        events = self._events
        if events is None:
            return
        events.append(event)
        # A what-if that is rolled back leaves no event behind.
        self.journal.record(events.pop)

    # -- changes (each journaled) ---------------------------------------------------------

    def add_pod(self, pod: Pod) -> PodInfo:
        """A new pod; if it names claim templates, their claims are created as the controller would."""
        return self._add_pod(pod, bind_existing=False)

    def _add_pod(self, pod: Pod, *, bind_existing: bool) -> PodInfo:
        key = pod.key
        if key in self.pods:
            raise StateError(f"pod {key} already exists")
        if not (bind_existing and pod.spec.node_name):
            # A bound pod went through admission before it was bound.
            for mutate in self.pod_mutators:
                pod, created = mutate(self, pod)
                for claim in created:
                    self._put_claim(claim)
        entries, missing = self._claim_entries(pod)
        if self.generate_claims and not (bind_existing and pod.spec.node_name) and pod.spec.volumes:
            self.storage.add_ephemeral_claims(pod)
        self._pod_namespaces.add(pod.namespace)
        self._sequence += 1
        info = PodInfo(
            key=key,
            pod=pod,
            requests=pod_requests(pod),
            nonzero=nonzero_cpu_memory(pod),
            incoming_nonzero=nonzero_cpu_memory(pod, pod_level=False),
            priority=resolve_priority(pod, self.priority_classes),
            claims=tuple(entries),
            sequence=self._sequence,
            missing=missing,
            served_by_claims=_served_by_extended_claim(pod, entries),
        )
        self.pods[key] = info
        self.journal.record(lambda: self.pods.pop(key, None))
        self._note_claim_users(info)
        self._emit(ClusterEvent(ClusterEventKind.POD_ADDED, priority=info.priority, pod=key))
        if bind_existing and pod.spec.node_name and pod.status.phase not in TERMINAL_PHASES:
            index = self.nodes.index.get(pod.spec.node_name)
            if index is not None:
                self._occupy(info, index)
        return info

    def _claim_entries(self, pod: Pod) -> tuple[list[tuple[str, str]], list[str]]:
        """(entry name, claim key) per spec.resourceClaims entry, and what is missing."""
        entries: list[tuple[str, str]] = []
        missing: list[str] = []
        statuses = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
        for entry in pod.spec.resource_claims:
            if entry.resource_claim_name:
                claim_key = f"{pod.namespace}/{entry.resource_claim_name}"
                if claim_key not in self.claims:
                    missing.append(CLAIM_NOT_FOUND.format(key=claim_key))
                entries.append((entry.name, claim_key))
            elif entry.resource_claim_template_name:
                existing = statuses.get(entry.name)
                if existing:
                    claim_key = f"{pod.namespace}/{existing}"
                    if claim_key in self.claims or not self.generate_claims:
                        if claim_key not in self.claims:
                            missing.append(CLAIM_NOT_FOUND.format(key=claim_key))
                        entries.append((entry.name, claim_key))
                        continue
                if not self.generate_claims:
                    missing.append(WAITING_FOR_CLAIM.format(entry=entry.name))
                    entries.append((entry.name, ""))
                    continue
                template = self.templates.get(f"{pod.namespace}/{entry.resource_claim_template_name}")
                if template is None:
                    missing.append(
                        TEMPLATE_NOT_FOUND.format(
                            namespace=pod.namespace, name=entry.resource_claim_template_name
                        )
                    )
                    entries.append((entry.name, ""))
                    continue
                claim = claimlib.claim_from_template(pod, entry.name, template)
                self._put_claim(claim)
                entries.append((entry.name, claim.key))
        extended = self._extended_claim(pod)
        if extended is not None:
            entries.append((claimlib.EXTENDED_CLAIM_ENTRY, extended))
        return entries, missing

    def _extended_claim(self, pod: Pod) -> str | None:
        """The claim serving a bound pod's extended resources through DRA, as its status names it
        (`extendedResourceClaimStatus`, which the scheduler that bound it wrote), if it exists."""
        status = pod.status.extended_resource_claim_status
        if not pod.spec.node_name or status is None or not status.resource_claim_name:
            return None
        key = f"{pod.namespace}/{status.resource_claim_name}"
        return key if key in self.claims else None

    def _put_claim(self, claim: ResourceClaim) -> None:
        self.journal.put(self.claims, claim.key, claim)

    def _delete_claim(self, key: str) -> None:
        self.journal.pop(self.claims, key)

    @staticmethod
    def node_usage(info: PodInfo) -> dict[str, int]:
        """What the pod takes from its node's allocatable: its requests, one pod slot, minus claim-served resources."""
        usage = {k: v for k, v in info.requests.items() if k not in info.served_by_claims}
        usage[PODS] = usage.get(PODS, 0) + 1
        return usage

    def _occupy(self, info: PodInfo, index: int) -> None:
        usage = self.node_usage(info)
        self.nodes.add_usage(index, usage, info.nonzero, +1)
        node_pods = self.nodes.infos[index].pods
        node_pods.add(info.key)
        info.node = index
        previous_start = info.started
        self._binds += 1
        info.started = self._binds
        key = info.key
        self._notify_pod(info, +1)
        self._emit(ClusterEvent(ClusterEventKind.POD_BOUND, index, info.priority, key))

        def undo() -> None:
            self._notify_pod(info, -1)
            node_pods.discard(key)
            info.node = None
            # A tried-and-undone bind must not make the pod look recently started (preemption order).
            info.started = previous_start
            self._binds -= 1

        self.journal.record(undo)

    def _notify_pod(self, info: PodInfo, sign: int) -> None:
        self._bound_priorities[info.priority] += sign
        for listener in self.pod_listeners:
            listener(info, sign)

    def _vacate(self, info: PodInfo) -> None:
        index = info.node
        if index is None:
            return
        usage = self.node_usage(info)
        self.nodes.add_usage(index, usage, info.nonzero, -1)
        self._notify_pod(info, -1)
        node_pods = self.nodes.infos[index].pods
        node_pods.discard(info.key)
        info.node = None
        key = info.key

        def undo() -> None:
            node_pods.add(key)
            info.node = index
            self._notify_pod(info, +1)

        self.journal.record(undo)

    def allocate_claim(self, claim_key: str, allocation: AllocationResult) -> None:
        claim = self.claims[claim_key]
        if claim.status.allocation is not None:
            raise StateError(f"claim {claim_key} is already allocated")
        self._put_claim(replace(claim, status=replace(claim.status, allocation=allocation)))
        self._apply_allocation(allocation, +1)

    def deallocate_claim(self, claim_key: str) -> None:
        claim = self.claims[claim_key]
        allocation = claim.status.allocation
        if allocation is None:
            return
        status = replace(claim.status, allocation=None, reserved_for=(), devices=())
        self._put_claim(replace(claim, status=status))
        self._apply_allocation(allocation, -1)

    def _apply_allocation(self, allocation: AllocationResult, sign: int) -> None:
        if sign > 0:
            self.allocated.add_allocation(allocation)
        else:
            self.allocated.remove_allocation(allocation)
        for listener in self.allocation_listeners:
            listener(allocation, sign)
        self.journal.record(lambda: self._apply_allocation(allocation, -sign))

    def bind(
        self,
        pod_key: str,
        node_name: str,
        allocations: Mapping[str, AllocationResult],
        *,
        served_by_claims: frozenset[str] = frozenset(),
        volumes: Iterable[VolumeDecision] = (),
        extended: PodExtendedResourceClaimStatus | None = None,
    ) -> None:
        """Place a pending pod: allocate its unallocated claims, reserve them, take node resources;
        bind or annotate the volume claims placement decided for (`volumes`). `extended`: the pod's
        new `status.extendedResourceClaimStatus` (the claim made for its extended resources)."""
        info = self.pods[pod_key]
        if info.node is not None:
            raise StateError(f"pod {pod_key} is already bound")
        if extended is not None:
            before = info.pod
            info.pod = replace(before, status=replace(before.status, extended_resource_claim_status=extended))
            self.journal.record(lambda: setattr(info, "pod", before))
        if served_by_claims != info.served_by_claims:
            previous = info.served_by_claims
            info.served_by_claims = served_by_claims
            self.journal.record(lambda: setattr(info, "served_by_claims", previous))
        index = self.nodes.index[node_name]
        for claim_key, allocation in allocations.items():
            self.allocate_claim(claim_key, allocation)
        for _, claim_key in info.claims:
            claim = self.claims.get(claim_key)
            if claim is None or claim.status.allocation is None:
                raise StateError(f"pod {pod_key} bound with claim {claim_key} unallocated")
            self._put_claim(claimlib.with_reservation(claim, info.pod))
        for claim_key, volume_name in volumes:
            if volume_name:
                self.storage.bind(claim_key, volume_name)
            else:
                self.storage.select_node(claim_key, node_name)
        self._occupy(info, index)

    def release_claim(self, claim_key: str, pod_key: str) -> None:
        """Take a pending pod's reservation off a claim and deallocate it when nobody else reserves it."""
        info = self.pods[pod_key]
        if info.node is not None:
            raise StateError(f"pod {pod_key} is bound; its claims are in use")
        claim = claimlib.without_reservation(self.claims[claim_key], info.pod)
        self._put_claim(claim)
        if not claim.status.reserved_for:
            self.deallocate_claim(claim_key)
            self._emit(ClusterEvent(ClusterEventKind.CLAIM_CHANGED, pod=pod_key))

    def _count_release(self) -> None:
        # Journaled: a rolled-back release (a preemption that was only tried) must not wake parked pods.
        self.releases += 1
        self.journal.record(self._uncount_release)

    def _uncount_release(self) -> None:
        self.releases -= 1

    def unbind(self, pod_key: str, *, keep_claims: bool = False) -> None:
        """Take a pod off its node (preempted, evicted, finished): release resources and claims.

        A claim that no pod reserves any more is deallocated, as the
        resourceclaim controller does, so its devices become free. With
        `keep_claims` the claims stay as they are (allocated and reserved):
        kube-scheduler's view of a preemption victim in its dry run.
        """
        info = self.pods[pod_key]
        if info.node is None:
            return
        index = info.node
        self._vacate(info)
        self._count_release()
        shared = False
        for _, claim_key in () if keep_claims else info.claims:
            claim = self.claims.get(claim_key)
            if claim is None:
                continue
            claim = claimlib.without_reservation(claim, info.pod)
            self._put_claim(claim)
            if not claim.status.reserved_for:
                shared = shared or self._frees_shared_devices(claim_key)
                self.deallocate_claim(claim_key)
        # Devices of pools not tied to this node become free for other nodes too: a cluster-wide event.
        node = None if shared else index
        self._emit(ClusterEvent(ClusterEventKind.POD_LEFT, node, info.priority, pod_key))

    def frees_devices_beyond_node(self, pod_key: str) -> bool:
        """Whether the pod holds devices of pools not tied to its node (were it gone, other nodes
        could use them)."""
        return any(
            self._frees_shared_devices(key) for _, key in self.pods[pod_key].claims if key in self.claims
        )

    def _frees_shared_devices(self, claim_key: str) -> bool:
        allocation = self.claims[claim_key].status.allocation
        if allocation is None or not self._global_pools:
            return False
        return any((r.driver, r.pool) in self._global_pools for r in allocation.devices.results)

    def remove_pod(self, pod_key: str) -> None:
        """Delete a pod: unbind it and delete the claims generated for it."""
        info = self.pods.get(pod_key)
        if info is None:
            return
        self.unbind(pod_key)
        for _, claim_key in info.claims:
            claim = self.claims.get(claim_key)
            if claim is not None and claimlib.is_owned_by(claim, info.pod):
                self._delete_claim(claim_key)
        self.storage.remove_owned_claims(info.pod)
        self.pods.pop(pod_key)
        self.journal.record(lambda: self.pods.__setitem__(pod_key, info))

    def attach_claim(self, pod_key: str, entry: str, claim: ResourceClaim) -> None:
        """Create a claim the scheduler made for the pod (extended resources) and list it among the pod's claims."""
        info = self.pods[pod_key]
        self._put_claim(claim)
        previous = info.claims
        info.claims = (*previous, (entry, claim.key))
        self.journal.record(lambda: setattr(info, "claims", previous))

    def replace_pod(self, pod_key: str, pod: Pod) -> None:
        """Swap a pending pod's record for an edited one (Kueue injecting a flavor's selector and tolerations)."""
        info = self.pods[pod_key]
        if info.node is not None:
            raise StateError(f"pod {pod_key} is bound; its spec cannot change")
        previous = info.pod
        info.pod = pod
        self.journal.record(lambda: setattr(info, "pod", previous))

    def set_node_ready(self, node_name: str, ready: bool) -> None:
        index = self.nodes.index[node_name]
        self.nodes.set_ready(index, ready)
        if ready:
            self._count_release()
        self._emit(ClusterEvent(ClusterEventKind.NODE_CHANGED, index))

    # -- what the API says (live clusters) ---------------------------------------------------
    #
    # A live driver mirrors the API server into the state with the operations below. They are
    # not what-ifs: they refuse to run inside a transaction, so an undo journal never holds them.

    def _outside_transaction(self, what: str) -> None:
        if self.journal.recording:
            raise StateError(f"{what} is a change from the API, not a what-if: not inside a transaction")

    def replace_nodes(self, nodes: Iterable[Node]) -> None:
        """The cluster's nodes changed (added, removed, relabelled, tainted, resized, readiness).

        The node table is rebuilt in name order and bound pods are placed again by node name, so
        every cache keyed by the old table is dropped with it. Pods bound to a node that is no
        longer given must have been removed first.
        """
        self._outside_transaction("replace_nodes")
        old = self.nodes
        table = NodeTable(nodes, self.journal)
        for info in self.pods.values():
            if info.node is None:
                continue
            name = old.infos[info.node].name
            index = table.index.get(name)
            if index is None:
                raise StateError(f"pod {info.key} is bound to node {name}, which is no longer given")
            table.add_usage(index, self.node_usage(info), info.nonzero, +1)
            table.infos[index].pods.add(info.key)
            info.node = index
        self.nodes = table
        # Caches built over node positions (device indexes, sharing tables) key on the slice index.
        self.slices = SliceIndex(self._slice_objects, self._taint_rules)
        self.releases += 1
        # Node positions changed: an event for the whole cluster.
        self._emit(ClusterEvent(ClusterEventKind.NODE_CHANGED))

    def replace_devices(
        self,
        *,
        slices: Iterable[ResourceSlice] | None = None,
        taint_rules: Iterable[DeviceTaintRule] | None = None,
        classes: Iterable[DeviceClass] | None = None,
    ) -> None:
        """ResourceSlices, DeviceTaintRules or DeviceClasses changed: what devices exist and match."""
        self._outside_transaction("replace_devices")
        if slices is not None:
            self._slice_objects = list(slices)
        if taint_rules is not None:
            self._taint_rules = list(taint_rules)
        if classes is not None:
            self.classes = {c.name: c for c in classes}
        self.slices = SliceIndex(self._slice_objects, self._taint_rules)
        self.releases += 1
        self._global_pools = {
            (s.spec.driver, s.spec.pool.name) for s in self._slice_objects if not s.spec.node_name
        }
        self._emit(ClusterEvent(ClusterEventKind.SLICE_CHANGED))
        if classes is not None:
            self._emit(ClusterEvent(ClusterEventKind.CLASS_CHANGED))

    def replace_storage(
        self,
        *,
        claims: Iterable[PersistentVolumeClaim] | None = None,
        volumes: Iterable[PersistentVolume] | None = None,
        classes: Iterable[StorageClass] | None = None,
        csi_nodes: Iterable[CSINode] | None = None,
    ) -> None:
        """PersistentVolumeClaims, PersistentVolumes, StorageClasses or CSINodes changed."""
        self._outside_transaction("replace_storage")
        self.storage.replace_all(claims=claims, volumes=volumes, classes=classes, csi_nodes=csi_nodes)
        self.releases += 1
        self._emit(ClusterEvent(ClusterEventKind.VOLUME_CHANGED))

    def replace_workloads(
        self,
        *,
        services: Iterable[Service] | None = None,
        replica_sets: Iterable[ReplicaSet] | None = None,
        stateful_sets: Iterable[StatefulSet] | None = None,
        replication_controllers: Iterable[ReplicationController] | None = None,
    ) -> None:
        """Services or pod controllers changed (default topology spreading reads their selectors)."""
        self._outside_transaction("replace_workloads")
        if services is not None:
            self.services = {s.key: s for s in services}
        if replica_sets is not None:
            self.replica_sets = {r.key: r for r in replica_sets}
        if stateful_sets is not None:
            self.stateful_sets = {s.key: s for s in stateful_sets}
        if replication_controllers is not None:
            self.replication_controllers = {r.key: r for r in replication_controllers}
        self._emit(ClusterEvent(ClusterEventKind.WORKLOADS_CHANGED))

    def apply_claim(self, claim: ResourceClaim) -> None:
        """A claim as the API server holds it now (created, allocated, reserved, deallocated)."""
        self._outside_transaction("apply_claim")
        previous = self.claims.get(claim.key)
        before = previous.status.allocation if previous is not None else None
        after = claim.status.allocation
        self.claims[claim.key] = claim
        self._emit(ClusterEvent(ClusterEventKind.CLAIM_CHANGED))
        if before == after:
            return
        if before is not None:
            self._apply_allocation(before, -1)
            self.releases += 1
        if after is not None:
            self._apply_allocation(after, +1)

    def drop_claim(self, claim_key: str) -> list[str]:
        """A claim deleted from the API: its devices are free, and the pending pods that name it
        wait for it again (their claims are missing). Returns those pods' keys."""
        self._outside_transaction("drop_claim")
        claim = self.claims.pop(claim_key, None)
        if claim is not None and claim.status.allocation is not None:
            self._apply_allocation(claim.status.allocation, -1)
            self.releases += 1
        if claim is not None:
            self._emit(ClusterEvent(ClusterEventKind.CLAIM_CHANGED))
        waiting: list[str] = []
        for pod_key in sorted(self._claim_users.pop(claim_key, ())):
            info = self.pods.get(pod_key)
            if info is None or info.node is not None or all(key != claim_key for _, key in info.claims):
                continue
            entries, missing = self._claim_entries(info.pod)
            info.claims, info.missing = tuple(entries), missing
            self._note_claim_users(info)
            waiting.append(pod_key)
            self._emit(ClusterEvent(ClusterEventKind.POD_UPDATED, None, info.priority, pod_key))
        return waiting

    def _note_claim_users(self, info: PodInfo) -> None:
        if self.generate_claims:
            return
        for _, claim_key in info.claims:
            if claim_key:
                self._claim_users.setdefault(claim_key, set()).add(info.key)

    def _forget_claim_users(self, info: PodInfo) -> None:
        for _, claim_key in info.claims:
            users = self._claim_users.get(claim_key)
            if users is not None:
                users.discard(info.key)
                if not users:
                    del self._claim_users[claim_key]

    def add_bound_pod(self, pod: Pod) -> PodInfo:
        """A pod the API shows bound to a node of this state (`spec.nodeName`): it takes its
        node's resources at once; its claims are as the API holds them."""
        self._outside_transaction("add_bound_pod")
        if pod.spec.node_name not in self.nodes.index:
            raise StateError(f"pod {pod.key} is bound to unknown node {pod.spec.node_name}")
        return self._add_pod(pod, bind_existing=True)

    def place_existing(self, pod_key: str, node_name: str) -> None:
        """A pending pod was bound by someone else (another scheduler, or the API confirming a bind
        this state forgot): it takes its node's resources; its claims follow from the API."""
        self._outside_transaction("place_existing")
        info = self.pods[pod_key]
        if info.node is not None:
            raise StateError(f"pod {pod_key} is already bound")
        self._occupy(info, self.nodes.index[node_name])

    def vacate(self, pod_key: str) -> None:
        """A bound pod stopped holding its node (finished, failed): node resources only; its
        claims stay as the API says until the resourceclaim controller releases them."""
        self._outside_transaction("vacate")
        info = self.pods[pod_key]
        if info.node is not None:
            index = info.node
            self._vacate(info)
            self.releases += 1
            self._emit(ClusterEvent(ClusterEventKind.POD_LEFT, index, info.priority, pod_key))

    def update_pod(self, pod: Pod) -> PodInfo:
        """A newer version of a pod the state holds (labels, gates, claim statuses, priority).

        The pod's node is not changed here (see `place_existing` and `vacate`); a pending pod's
        claims are looked up again, since the controller may have created them since.
        """
        self._outside_transaction("update_pod")
        info = self.pods[pod.key]
        old = info.pod
        info.pod = pod
        if info.node is not None:
            self.pod_index.relabel(info, old)
        else:
            entries, missing = self._claim_entries(pod)
            info.claims, info.missing = tuple(entries), missing
            self._note_claim_users(info)
            info.requests = pod_requests(pod)
            info.nonzero = nonzero_cpu_memory(pod)
            info.incoming_nonzero = nonzero_cpu_memory(pod, pod_level=False)
            info.priority = resolve_priority(pod, self.priority_classes)
        self._emit(ClusterEvent(ClusterEventKind.POD_UPDATED, info.node, info.priority, pod.key))
        return info

    def drop_pod(self, pod_key: str) -> None:
        """A pod deleted from the API: it leaves its node; its claims follow from the API."""
        self._outside_transaction("drop_pod")
        info = self.pods.pop(pod_key, None)
        if info is not None:
            self._forget_claim_users(info)
        if info is not None and info.node is not None:
            index = info.node
            self._vacate(info)
            self.releases += 1
            self._emit(ClusterEvent(ClusterEventKind.POD_LEFT, index, info.priority, pod_key))

    def forget(self, pod_key: str) -> list[str]:
        """Undo what this state assumed for a pod whose binding failed: it leaves its node and
        the claims it held are released here. Returns the keys of those claims, which the caller
        must set back to what the API holds (`apply_claim`)."""
        self._outside_transaction("forget")
        info = self.pods.get(pod_key)
        if info is None or info.node is None:
            return []
        keys = [key for _, key in info.claims if key in self.claims]
        self.unbind(pod_key)
        return keys


def _served_by_extended_claim(pod: Pod, entries: Sequence[tuple[str, str]]) -> frozenset[str]:
    """The extended resources a bound pod's linked extended-resource claim serves (not node usage)."""
    status = pod.status.extended_resource_claim_status
    if status is None or not any(entry == claimlib.EXTENDED_CLAIM_ENTRY for entry, _ in entries):
        return frozenset()
    return frozenset(m.resource_name for m in status.request_mappings)

"""The live scheduler's picture of the cluster: the API's objects in the engine's ClusterState,
plus what allot decided and has not yet seen confirmed.

Three kinds of decision are in flight at any time, and each holds back the API's view of
the objects it touches until the API catches up, the way kube-scheduler's cache *assumes*
a pod and its claims' allocations before the writes land:

* a **binding** (`Flight`): the pod is bound in the state and its claims allocated there;
  the claims' API versions are not applied while allot writes them (`ClaimGuard`), and the
  pod's own updates change only its record, never its placement, until the watch shows it
  on its node. A failed write `abort`s the flight: the pod leaves its node, its claims go
  back to what the API holds, and it is pending again.
* a **nomination** (a flight with victims): a preemptor keeps the room its victims left in
  the state, and its writes wait until every victim is gone and no claim in the API still
  holds a device it was given.
* an **eviction**: a victim is out of the state at once; its updates are ignored until it is
  deleted, and its claims' API versions are held back while they still name it, so the devices
  it held stay with the preemptor.

Pods of other schedulers enter the state only once bound (they use nodes); pods bound to a
node the state does not know wait outside it (`orphans`) until the node appears.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from allot.cluster.pod_index import claim_names
from allot.cluster.state import TERMINAL_PHASES, ClusterState
from allot.dra import DeviceId
from allot.live.kinds import (
    CSI_NODES,
    DEVICE_CLASSES,
    DEVICE_TAINT_RULES,
    DISRUPTION_BUDGETS,
    JOBS,
    KUEUE_KINDS,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    PRIORITY_CLASSES,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    STORAGE_KINDS,
    WORKLOAD_KINDS,
    Kind,
)
from allot.live.reflector import EventType, WatchEvent
from allot.model.base import Object
from allot.model.core import Namespace, Node, Pod
from allot.model.resource import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice
from allot.model.scheduling import PodDisruptionBudget, PriorityClass
from allot.model.storage import (
    ANN_SELECTED_NODE,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from allot.model.workloads import ReplicaSet, ReplicationController, Service, StatefulSet

log = logging.getLogger("allot.live.cache")

Stores = Mapping[Kind, Mapping[str, Object]]
_O = TypeVar("_O", bound=Object)


@dataclass(slots=True)
class Flight:
    """A binding allot decided and is writing (or, with victims, waiting to write)."""

    pod: str
    node: str
    # Claims this binding writes (allocation and/or reservation), by key.
    claims: tuple[str, ...]
    victims: frozenset[str] = frozenset()
    started: float = 0.0
    # The Binding was created; the watch has not shown the pod on its node yet.
    bound_written: bool = False
    # Set when the flight is aborted, so the writer stops at its next step.
    aborted: bool = False
    # Volume claims to write: (claim key, the volume it was matched to, or "" to provision on the node).
    volumes: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class ClaimGuard:
    """A claim whose API versions are held back: being written, or written and not yet seen."""

    # The resourceVersion our write produced; "" while the write is under way.
    expected: str = ""


@dataclass
class BatchSummary:
    """What a batch of events changed, for the scheduler's bookkeeping and metrics."""

    pods_removed: list[str] = field(default_factory=list)
    # Pods that entered the state (pending ones of allot's, and bound ones of anyone's).
    pods_added: list[str] = field(default_factory=list)
    # Pending pods whose record or claims changed: they may fit now.
    pods_changed: set[str] = field(default_factory=set)
    bindings_confirmed: list[str] = field(default_factory=list)
    flights_aborted: list[str] = field(default_factory=list)
    kueue_changed: bool = False
    # Jobs that changed, by key (a claim template change rebuilds admission, which syncs every Job).
    jobs_changed: set[str] = field(default_factory=set)
    changed: bool = False


def is_terminal(pod: Pod) -> bool:
    return pod.status.phase in TERMINAL_PHASES


def _node_shape(node: Node) -> tuple[object, ...]:
    """What of a node the state uses: an update that changes none of it is ignored."""
    return (
        node.metadata.labels,
        node.spec.taints,
        node.spec.unschedulable,
        node.status.allocatable,
        node.ready,
        node.status.images,
    )


def _same_spec(old: Object | None, new: Object) -> bool:
    if old is None:
        return False
    return bool(
        getattr(old, "spec", None) == getattr(new, "spec", None)
        and old.metadata.labels == new.metadata.labels
        and old.metadata.deletion_timestamp == new.metadata.deletion_timestamp
    )


class LiveCache:
    """See the module docstring. All methods run on the scheduler's one event loop thread."""

    def __init__(self, stores: Stores, *, is_ours: Callable[[Pod], bool]) -> None:
        self.stores = stores
        self.is_ours = is_ours
        self.state: ClusterState | None = None
        self.flights: dict[str, Flight] = {}
        self.guards: dict[str, ClaimGuard] = {}
        self.evicting: set[str] = set()
        self.orphans: set[str] = set()
        # Claims whose API version was held back because it still names an evicting pod.
        self._held_for_victims: dict[str, set[str]] = {}
        # Pending pods waiting for a claim to appear, by claim key.
        self._waiting_for_claim: dict[str, set[str]] = {}
        self._nodes_dirty = False
        self._devices_dirty = False
        self._storage_dirty = False
        self._workloads_dirty = False
        # Pods kept out of the state for a back-off after a failed binding: key -> (until, attempts).
        self.held: dict[str, tuple[float, int]] = {}
        self._attempts: dict[str, int] = {}

    # -- building --------------------------------------------------------------------------

    def _store(self, kind: Kind) -> Mapping[str, Object]:
        return self.stores.get(kind, {})

    def _all(self, kind: Kind) -> list[Object]:
        store = self._store(kind)
        return [store[key] for key in sorted(store)]

    def _of(self, kind: Kind, model: type[_O]) -> list[_O]:
        return [obj for obj in self._all(kind) if isinstance(obj, model)]

    def build(self) -> ClusterState:
        """The state from the stores as they are (after every reflector's first list)."""
        nodes = [n for n in self._all(NODES) if isinstance(n, Node)]
        known = {n.name for n in nodes}
        pods: list[Pod] = []
        for obj in self._all(PODS):
            assert isinstance(obj, Pod)
            if is_terminal(obj):
                continue
            if obj.spec.node_name:
                if obj.spec.node_name in known:
                    pods.append(obj)
                else:
                    self.orphans.add(obj.key)
            elif self.is_ours(obj):
                pods.append(obj)
        state = ClusterState(
            nodes=nodes,
            claims=[c for c in self._all(RESOURCE_CLAIMS) if isinstance(c, ResourceClaim)],
            classes=[c for c in self._all(DEVICE_CLASSES) if isinstance(c, DeviceClass)],
            slices=[s for s in self._all(RESOURCE_SLICES) if isinstance(s, ResourceSlice)],
            taint_rules=[r for r in self._all(DEVICE_TAINT_RULES) if isinstance(r, DeviceTaintRule)],
            priority_classes=[c for c in self._all(PRIORITY_CLASSES) if isinstance(c, PriorityClass)],
            disruption_budgets=[
                b for b in self._all(DISRUPTION_BUDGETS) if isinstance(b, PodDisruptionBudget)
            ],
            namespaces=[n for n in self._all(NAMESPACES) if isinstance(n, Namespace)],
            volume_claims=self._of(PERSISTENT_VOLUME_CLAIMS, PersistentVolumeClaim),
            volumes=self._of(PERSISTENT_VOLUMES, PersistentVolume),
            storage_classes=self._of(STORAGE_CLASSES, StorageClass),
            csi_nodes=self._of(CSI_NODES, CSINode),
            services=self._of(SERVICES, Service),
            replica_sets=self._of(REPLICA_SETS, ReplicaSet),
            stateful_sets=self._of(STATEFUL_SETS, StatefulSet),
            replication_controllers=self._of(REPLICATION_CONTROLLERS, ReplicationController),
            pods=pods,
            # The resourceclaim controller makes template claims; a webhook (if any) mutated pods.
            generate_claims=False,
            pod_mutators=(),
        )
        self.state = state
        for info in state.pending():
            self._index_missing(info.key)
        return state

    # -- events ----------------------------------------------------------------------------

    def apply(self, events: Iterable[WatchEvent]) -> BatchSummary:
        """Apply a batch of watch events, in order; nodes and devices are rebuilt once at the end."""
        summary = BatchSummary()
        for event in events:
            summary.changed = True
            kind = event.kind
            if kind is PODS:
                self._on_pod(event, summary)
            elif kind is RESOURCE_CLAIMS:
                self._on_claim(event, summary)
            elif kind is NODES:
                old = event.old
                if not (
                    event.type is EventType.MODIFIED
                    and isinstance(old, Node)
                    and isinstance(event.obj, Node)
                    and _node_shape(old) == _node_shape(event.obj)
                ):
                    self._nodes_dirty = True
            elif kind in (RESOURCE_SLICES, DEVICE_CLASSES, DEVICE_TAINT_RULES):
                self._devices_dirty = True
            elif kind in STORAGE_KINDS:
                self._storage_dirty = True
            elif kind in WORKLOAD_KINDS:
                self._workloads_dirty = True
            elif kind is PRIORITY_CLASSES:
                self.state_or_fail().priority_classes = {
                    c.name: c for c in self._all(PRIORITY_CLASSES) if isinstance(c, PriorityClass)
                }
            elif kind is DISRUPTION_BUDGETS:
                self.state_or_fail().disruption_budgets = [
                    b for b in self._all(DISRUPTION_BUDGETS) if isinstance(b, PodDisruptionBudget)
                ]
            elif kind is NAMESPACES:
                self.state_or_fail().namespaces = {
                    n.name: n for n in self._all(NAMESPACES) if isinstance(n, Namespace)
                }
            elif kind is JOBS:
                summary.jobs_changed.add(event.obj.key)
            elif kind is RESOURCE_CLAIM_TEMPLATES:
                # What queued pods' claims charge, and what Job placeholders' claims are made of.
                summary.kueue_changed = True
            elif kind in KUEUE_KINDS and not (
                # Status writes (allot's own, for queues) change nothing admission reads.
                event.type is EventType.MODIFIED and _same_spec(event.old, event.obj)
            ):
                summary.kueue_changed = True
        if self._nodes_dirty:
            self._rebuild_nodes(summary)
        if self._devices_dirty:
            self._rebuild_devices()
        if self._storage_dirty:
            self._storage_dirty = False
            self.state_or_fail().replace_storage(
                claims=self._of(PERSISTENT_VOLUME_CLAIMS, PersistentVolumeClaim),
                volumes=self._of(PERSISTENT_VOLUMES, PersistentVolume),
                classes=self._of(STORAGE_CLASSES, StorageClass),
                csi_nodes=self._of(CSI_NODES, CSINode),
            )
        if self._workloads_dirty:
            self._workloads_dirty = False
            self.state_or_fail().replace_workloads(
                services=self._of(SERVICES, Service),
                replica_sets=self._of(REPLICA_SETS, ReplicaSet),
                stateful_sets=self._of(STATEFUL_SETS, StatefulSet),
                replication_controllers=self._of(REPLICATION_CONTROLLERS, ReplicationController),
            )
        return summary

    def state_or_fail(self) -> ClusterState:
        if self.state is None:
            raise RuntimeError("the live cache has no state before its first build")
        return self.state

    def _on_pod(self, event: WatchEvent, summary: BatchSummary) -> None:
        state = self.state_or_fail()
        pod = event.obj
        assert isinstance(pod, Pod)
        key = pod.key
        if event.type is EventType.DELETED or is_terminal(pod):
            self._pod_gone(key, summary)
            return
        if key in self.evicting or key in self.held:
            return
        self.orphans.discard(key)
        node = pod.spec.node_name
        flight = self.flights.get(key)
        if flight is not None:
            if node and node != flight.node:
                log.warning("pod %s was bound to %s by someone else while allot bound it to %s",
                            key, node, flight.node)  # fmt: skip
                self.abort(key, summary)
            else:
                state.update_pod(pod)
                if node == flight.node:
                    del self.flights[key]
                    summary.bindings_confirmed.append(key)
                return
        info = state.pods.get(key)
        if node:
            if node not in state.nodes.index:
                if info is not None:
                    self._drop(key)
                self.orphans.add(key)
                return
            if info is None:
                state.add_bound_pod(pod)
                summary.pods_added.append(key)
            elif info.node is None:
                state.update_pod(pod)
                state.place_existing(key, node)
            elif state.nodes.infos[info.node].name != node:
                self._restore_claims(state.forget(key))
                state.update_pod(pod)
                state.place_existing(key, node)
            else:
                state.update_pod(pod)
            return
        if not self.is_ours(pod):
            if info is not None:
                self._drop(key)
            return
        if info is None:
            state.add_pod(pod)
            summary.pods_added.append(key)
        else:
            if info.node is not None:
                # The state holds a placement the API never had and nothing is writing: stale.
                self._restore_claims(state.forget(key))
            state.update_pod(pod)
            summary.pods_changed.add(key)
        self._index_missing(key)

    def offer(self, key: str) -> bool:
        """A pending pod of the API that was not ours and now is (its Job was admitted): into the
        state. False when there is nothing to add."""
        state = self.state_or_fail()
        pod = self._store(PODS).get(key)
        if not isinstance(pod, Pod) or key in state.pods or pod.spec.node_name or is_terminal(pod):
            return False
        if key in self.evicting or key in self.held or not self.is_ours(pod):
            return False
        state.add_pod(pod)
        self._index_missing(key)
        return True

    def add_placeholders(self, pods: Iterable[Pod], claims: Iterable[ResourceClaim]) -> None:
        """Pods that exist only in allot's state (a suspended Job's placeholders), with the
        claims their template entries would get."""
        state = self.state_or_fail()
        for claim in claims:
            state.apply_claim(claim)
        for pod in pods:
            state.add_pod(pod)

    def drop_placeholder(self, key: str) -> None:
        """A placeholder leaves the state with its claims and whatever they were given there."""
        state = self.state_or_fail()
        info = state.pods.get(key)
        if info is None:
            return
        claim_keys = [claim_key for _, claim_key in info.claims if claim_key]
        state.forget(key)
        state.drop_pod(key)
        for claim_key in claim_keys:
            state.drop_claim(claim_key)

    def _pod_gone(self, key: str, summary: BatchSummary) -> None:
        self.orphans.discard(key)
        self.held.pop(key, None)
        self._attempts.pop(key, None)
        if key in self.flights:
            self.abort(key, summary)
        if key in self.evicting:
            self.evicting.discard(key)
            for claim_key in sorted(self._held_for_victims.pop(key, set())):
                claim = self._store(RESOURCE_CLAIMS).get(claim_key)
                if claim is None:
                    self._drop_claim(claim_key)
                else:
                    assert isinstance(claim, ResourceClaim)
                    self._apply_claim(claim)
        state = self.state_or_fail()
        if key in state.pods:
            self._drop(key)
            summary.pods_removed.append(key)

    def _drop(self, key: str) -> None:
        state = self.state_or_fail()
        state.drop_pod(key)
        for waiting in self._waiting_for_claim.values():
            waiting.discard(key)

    def _index_missing(self, key: str) -> None:
        info = self.state_or_fail().pods.get(key)
        if info is None or not info.missing:
            return
        for _, claim_key in info.claims:
            if claim_key:
                self._waiting_for_claim.setdefault(claim_key, set()).add(key)

    # -- claims ----------------------------------------------------------------------------

    def _on_claim(self, event: WatchEvent, summary: BatchSummary) -> None:
        claim = event.obj
        assert isinstance(claim, ResourceClaim)
        key = claim.key
        guard = self.guards.get(key)
        if guard is not None:
            if not guard.expected or claim.metadata.resource_version != guard.expected:
                return
            del self.guards[key]
        if event.type is EventType.DELETED:
            self._drop_claim(key)
        else:
            summary.pods_changed.update(self._apply_claim(claim))

    def _apply_claim(self, claim: ResourceClaim) -> list[str]:
        """Apply the API's version of a claim; the pending pods that were waiting for it."""
        state = self.state_or_fail()
        victims = {ref.name for ref in claim.status.reserved_for if ref.resource == "pods"}
        held = [v for v in victims if f"{claim.namespace}/{v}" in self.evicting]
        if held:
            for victim in held:
                self._held_for_victims.setdefault(f"{claim.namespace}/{victim}", set()).add(claim.key)
            return []
        state.apply_claim(claim)
        woken: list[str] = []
        for pod_key in sorted(self._waiting_for_claim.pop(claim.key, set())):
            info = state.pods.get(pod_key)
            if info is not None and info.node is None:
                state.update_pod(info.pod)
                self._index_missing(pod_key)
                woken.append(pod_key)
        return woken

    def _drop_claim(self, key: str) -> None:
        # Pending pods that name the claim wait for it again (`_apply_claim` wakes them).
        for pod_key in self.state_or_fail().drop_claim(key):
            self._index_missing(pod_key)

    def _restore_claims(self, keys: Iterable[str]) -> None:
        """Set claims back to what the API holds (after a forgotten assumption)."""
        store = self._store(RESOURCE_CLAIMS)
        for key in keys:
            if key in self.guards:
                continue
            claim = store.get(key)
            if claim is None:
                self._drop_claim(key)
            else:
                assert isinstance(claim, ResourceClaim)
                self._apply_claim(claim)

    # -- nodes and devices -----------------------------------------------------------------

    def _rebuild_nodes(self, summary: BatchSummary) -> None:
        state = self.state_or_fail()
        self._nodes_dirty = False
        nodes = [n for n in self._all(NODES) if isinstance(n, Node)]
        names = {n.name for n in nodes}
        for info in list(state.bound()):
            node = state.nodes.infos[info.node].name if info.node is not None else ""
            if node not in names:
                if info.key in self.flights:
                    self.abort(info.key, summary)
                    continue
                self._drop(info.key)
                self.orphans.add(info.key)
        state.replace_nodes(nodes)
        store = self._store(PODS)
        for key in sorted(self.orphans):
            pod = store.get(key)
            if isinstance(pod, Pod) and pod.spec.node_name in names and key not in state.pods:
                state.add_bound_pod(pod)
                self.orphans.discard(key)

    def _rebuild_devices(self) -> None:
        self._devices_dirty = False
        self.state_or_fail().replace_devices(
            slices=[s for s in self._all(RESOURCE_SLICES) if isinstance(s, ResourceSlice)],
            taint_rules=[r for r in self._all(DEVICE_TAINT_RULES) if isinstance(r, DeviceTaintRule)],
            classes=[c for c in self._all(DEVICE_CLASSES) if isinstance(c, DeviceClass)],
        )

    # -- decisions in flight ---------------------------------------------------------------

    def begin_flight(
        self, pod_key: str, node: str, *, victims: Iterable[str] = (), now: float = 0.0
    ) -> Flight:
        """The engine bound `pod_key` in the state; allot now writes it (after its victims are gone)."""
        state = self.state_or_fail()
        info = state.pods[pod_key]
        claims = tuple(key for _, key in info.claims if key)
        flight = Flight(
            pod_key, node, claims, frozenset(victims), now, volumes=self._volume_writes(info.pod, node)
        )
        self.flights[pod_key] = flight
        for key in claims:
            self.guards[key] = ClaimGuard()
        return flight

    def _volume_writes(self, pod: Pod, node: str) -> tuple[tuple[str, str], ...]:
        """The pod's volume claims that placement bound or sent to provisioning in the state and
        the API does not show so yet."""
        state = self.state_or_fail()
        store = self._store(PERSISTENT_VOLUME_CLAIMS)
        writes: list[tuple[str, str]] = []
        for key in claim_names(pod):
            decided = state.storage.claims.get(key)
            current = store.get(key)
            if decided is None or not isinstance(current, PersistentVolumeClaim) or current.spec.volume_name:
                continue
            if decided.spec.volume_name:
                writes.append((key, decided.spec.volume_name))
            elif (
                decided.metadata.annotations.get(ANN_SELECTED_NODE) == node
                and current.metadata.annotations.get(ANN_SELECTED_NODE) != node
            ):
                writes.append((key, ""))
        return tuple(writes)

    def guard(self, key: str) -> None:
        """Hold a claim's API versions back while allot writes it."""
        self.guards[key] = ClaimGuard()

    def claim_written(self, key: str, resource_version: str) -> None:
        """Our write of a claim produced `resource_version`: apply the API's version once seen."""
        guard = self.guards.get(key)
        if guard is None:
            return
        guard.expected = resource_version
        current = self._store(RESOURCE_CLAIMS).get(key)
        if current is not None and current.metadata.resource_version == resource_version:
            del self.guards[key]
            assert isinstance(current, ResourceClaim)
            self._apply_claim(current)

    def release_guard(self, key: str) -> None:
        """Stop holding a claim back and take the API's current version."""
        self.guards.pop(key, None)
        self._restore_claims([key])

    def binding_written(self, pod_key: str) -> None:
        flight = self.flights.get(pod_key)
        if flight is None:
            return
        flight.bound_written = True
        pod = self._store(PODS).get(pod_key)
        if isinstance(pod, Pod) and pod.spec.node_name == flight.node:
            del self.flights[pod_key]

    def abort(
        self, pod_key: str, summary: BatchSummary | None = None, *, expected: Mapping[str, str] | None = None
    ) -> None:
        """Forget a binding allot could not (or must not) complete: the pod is pending again.

        `expected` gives, for claims whose writes were undone, the resourceVersion of the undo:
        older API versions of them (our own allocation) are not applied on the way.
        """
        flight = self.flights.pop(pod_key, None)
        if flight is None:
            return
        flight.aborted = True
        state = self.state_or_fail()
        claims = state.forget(pod_key) if pod_key in state.pods else []
        for key in flight.claims:
            self.guards.pop(key, None)
        for key, version in (expected or {}).items():
            current = self._store(RESOURCE_CLAIMS).get(key)
            if current is None or current.metadata.resource_version != version:
                # Our undo is not seen yet: the state already holds its result (forget released it).
                self.guards[key] = ClaimGuard(version)
        self._restore_claims(sorted({*claims, *flight.claims}))
        if summary is not None:
            summary.flights_aborted.append(pod_key)

    def evict(self, pod_key: str) -> None:
        """A victim the engine took off its node: out of the state until the API deletes it."""
        self.evicting.add(pod_key)
        state = self.state_or_fail()
        if pod_key in state.pods:
            self._drop(pod_key)

    def victims_gone(self, flight: Flight) -> bool:
        """Whether a nominated preemptor may write: its victims deleted, its devices free in the API."""
        if any(v in self.evicting for v in flight.victims):
            return False
        state = self.state_or_fail()
        wanted: set[DeviceId] = set()
        mine = set(flight.claims)
        for key in flight.claims:
            claim = state.claims.get(key)
            if claim is None or claim.status.allocation is None:
                continue
            for result in claim.status.allocation.devices.results:
                if not result.share_id:
                    wanted.add(DeviceId(result.driver, result.pool, result.device))
        if not wanted:
            return True
        for key, obj in self._store(RESOURCE_CLAIMS).items():
            if key in mine or not isinstance(obj, ResourceClaim) or obj.status.allocation is None:
                continue
            for result in obj.status.allocation.devices.results:
                if DeviceId(result.driver, result.pool, result.device) in wanted:
                    return False
        return True

    def unevict(self, pod_key: str) -> None:
        """A victim that could not be deleted keeps running: back into the state as the API has it."""
        self.evicting.discard(pod_key)
        self._readd(pod_key)
        for claim_key in sorted(self._held_for_victims.pop(pod_key, set())):
            self._restore_claims([claim_key])

    def _readd(self, pod_key: str) -> None:
        pod = self._store(PODS).get(pod_key)
        state = self.state_or_fail()
        if not isinstance(pod, Pod) or is_terminal(pod) or pod_key in state.pods:
            return
        if pod.spec.node_name:
            if pod.spec.node_name in state.nodes.index:
                state.add_bound_pod(pod)
            else:
                self.orphans.add(pod_key)
        elif self.is_ours(pod):
            state.add_pod(pod)
            self._index_missing(pod_key)

    # -- back-off after a failed binding ----------------------------------------------------

    def hold(self, pod_key: str, now: float, *, initial: float = 1.0, maximum: float = 10.0) -> float:
        """Keep a pod whose binding failed out of the state for a while (1 s, doubling, at most
        10 s: kube-scheduler's pod back-off); returns when it comes back."""
        attempts = self._attempts.get(pod_key, 0) + 1
        self._attempts[pod_key] = attempts
        until = now + min(initial * 2.0 ** (attempts - 1), maximum)
        self.held[pod_key] = (until, attempts)
        state = self.state_or_fail()
        info = state.pods.get(pod_key)
        if info is not None and info.node is None:
            self._drop(pod_key)
        return until

    def succeeded(self, pod_key: str) -> None:
        self._attempts.pop(pod_key, None)

    def release_held(self, now: float) -> list[str]:
        """Pods whose back-off is over, back into the state; their keys."""
        due = sorted(key for key, (until, _) in self.held.items() if until <= now)
        for key in due:
            del self.held[key]
            self._readd(key)
        return due

    def next_release(self) -> float | None:
        return min((until for until, _ in self.held.values()), default=None)

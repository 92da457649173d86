"""Writing a binding, as kube-scheduler's PreBind and Bind do, off the scheduling loop.

For each claim of the pod: add the delete-protection finalizer if it is missing, then write
`status.allocation` (when allot allocated it) and `status.reservedFor` with the version the
write was based on as its precondition. A claim allot made for the pod's extended resources
(served by DRA) is created first, and the pod's `status.extendedResourceClaimStatus` then names
it, with the request serving each container's resource, as kube-scheduler writes it. For each PersistentVolumeClaim that waited for its
first consumer (VolumeBinding's PreBind): one matched to an available volume gets that
volume's `spec.claimRef` set (the PV controller completes the binding), one left to dynamic
provisioning gets the `volume.kubernetes.io/selected-node` annotation (the provisioner
creates the volume there). Unlike kube-scheduler, allot does not wait for those bindings
to complete before it binds the pod (the kubelet waits for the volume anyway). Then create
the pod's Binding (with the pod's UID, so a pod re-created under the same name is never
bound by mistake). A nominated preemptor
first waits until its victims are gone and the API no longer gives its devices to anyone.

At most `parallelism` bindings write at once (the others wait their turn in the order they
were decided): with a whole backlog decided in one cycle, writing every pod's requests at once
would interleave them all, so that through the client's rate limit (or a busy API server) the
first pod would be bound only when the last one is; in turns, pods are bound as they are decided.

Any failure undoes what was written (the reservation is removed, and an allocation allot
made is cleared when no other pod reserves the claim), then the cache forgets the
assumption and the pod is pending again: a claim is never left allocated for a pod that was
not bound. Conflicts are expected (another writer changed a claim) and only requeue the pod.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from allot.cluster.claims import DELETE_PROTECTION_FINALIZER, pod_uid
from allot.live.cache import Flight, LiveCache
from allot.live.client import ApiClient, ApiError, Conflict, NotFound
from allot.live.kinds import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    RESOURCE_CLAIMS,
    decode_object,
)
from allot.model.codec import to_data
from allot.model.core import Pod
from allot.model.resource import ResourceClaim
from allot.model.storage import ANN_SELECTED_NODE, PersistentVolume, PersistentVolumeClaim

log = logging.getLogger("allot.live.binder")

VICTIM_POLL_SECONDS = 0.1
# Bindings writing at once, by default.
DEFAULT_PARALLELISM = 32
CONFLICT_RETRIES = 3


@dataclass(frozen=True, slots=True)
class BindResult:
    pod: str
    node: str
    ok: bool
    reason: str = ""
    seconds: float = 0.0


class BindError(Exception):
    """The binding cannot be completed; the message says why (it becomes the pod's waiting reason)."""


Done = Callable[[BindResult], Awaitable[None] | None]


class Binder:
    """Runs one task per binding; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        cache: LiveCache,
        *,
        on_done: Done,
        victim_timeout: float = 300.0,
        parallelism: int = DEFAULT_PARALLELISM,
    ) -> None:
        self.client = client
        self.cache = cache
        self.on_done = on_done
        self.victim_timeout = victim_timeout
        self.tasks: set[asyncio.Task[None]] = set()
        self._turns = asyncio.Semaphore(parallelism)

    def start(self, flight: Flight) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(self._run(flight), name=f"bind {flight.pod}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def drain(self) -> None:
        """Wait for every write under way (graceful shutdown)."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    async def _run(self, flight: Flight) -> None:
        started = time.monotonic()
        written: list[tuple[str, bool]] = []
        try:
            if flight.victims:
                await self._wait_for_victims(flight)
            async with self._turns:
                result = await self._write(flight, started, written)
        except (BindError, ApiError) as error:
            reason = str(error) if isinstance(error, BindError) else f"binding failed: {error}"
            log.info("binding %s to %s failed: %s", flight.pod, flight.node, reason)
            undone = await self._undo(flight, written)
            self.cache.abort(flight.pod, expected=undone)
            result = BindResult(flight.pod, flight.node, False, reason, time.monotonic() - started)
        outcome = self.on_done(result)
        if outcome is not None:
            await outcome

    async def _write(self, flight: Flight, started: float, written: list[tuple[str, bool]]) -> BindResult:
        """The claims' writes, the volume claims', then the Binding; `written` collects what an undo must take back."""
        for key in flight.claims:
            self._check(flight)
            allocated = await self._write_claim(flight, key)
            written.append((key, allocated))
        await self._write_extended_status(flight)
        for claim_key, volume in flight.volumes:
            self._check(flight)
            await self._write_volume(flight, claim_key, volume)
        self._check(flight)
        await self._bind(flight)
        self.cache.binding_written(flight.pod)
        return BindResult(flight.pod, flight.node, True, seconds=time.monotonic() - started)

    def _check(self, flight: Flight) -> None:
        if flight.aborted:
            raise BindError("the binding was abandoned (the pod or its node changed)")

    async def _wait_for_victims(self, flight: Flight) -> None:
        deadline = time.monotonic() + self.victim_timeout
        while not self.cache.victims_gone(flight):
            self._check(flight)
            if time.monotonic() > deadline:
                raise BindError(f"preempted pods did not terminate within {self.victim_timeout:.0f} s")
            await asyncio.sleep(VICTIM_POLL_SECONDS)

    # -- claims ----------------------------------------------------------------------------

    def _pod(self, flight: Flight) -> Pod:
        state = self.cache.state_or_fail()
        info = state.pods.get(flight.pod)
        if info is None:
            raise BindError("the pod was deleted")
        return info.pod

    async def _write_claim(self, flight: Flight, key: str) -> bool:
        """Write one claim's allocation and reservation; True when allot allocated it."""
        state = self.cache.state_or_fail()
        wanted = state.claims.get(key)
        if wanted is None or wanted.status.allocation is None:
            raise BindError(f"claim {key} is not allocated in the scheduler's state")
        pod = self._pod(flight)
        reference = {"resource": "pods", "name": pod.name, "uid": pod_uid(pod)}
        current = self.cache.stores[RESOURCE_CLAIMS].get(key)
        if current is None:
            current = await self._create(wanted)
        assert isinstance(current, ResourceClaim)
        allocate = current.status.allocation is None
        if not allocate and current.status.allocation != wanted.status.allocation:
            raise BindError(f"claim {key} was allocated by someone else meanwhile")
        version = current.metadata.resource_version
        path = RESOURCE_CLAIMS.path("v1", namespace=current.namespace, name=current.name)
        if DELETE_PROTECTION_FINALIZER not in current.metadata.finalizers:
            patched = await self.client.patch(path, {
                "metadata": {
                    "resourceVersion": version,
                    "finalizers": [*current.metadata.finalizers, DELETE_PROTECTION_FINALIZER],
                }
            })  # fmt: skip
            version = patched["metadata"]["resourceVersion"]
        reserved = [to_data(r) for r in current.status.reserved_for]
        if not any(r.get("uid") == reference["uid"] for r in reserved):
            reserved.append(reference)
        status: dict[str, Any] = {"reservedFor": reserved}
        if allocate:
            status["allocation"] = to_data(wanted.status.allocation)
        patched = await self.client.patch(
            path + "/status", {"metadata": {"resourceVersion": version}, "status": status}
        )
        self.cache.claim_written(key, patched["metadata"]["resourceVersion"])
        return allocate

    async def _write_extended_status(self, flight: Flight) -> None:
        """Name the claim made for the pod's extended resources in its `status.extendedResourceClaimStatus`
        (which claim request serves which container's resource), as kube-scheduler does before it binds:
        the kubelet reads it to prepare the devices for those containers."""
        pod = self._pod(flight)
        wanted = pod.status.extended_resource_claim_status
        if wanted is None:
            return
        current = self.cache.stores[PODS].get(flight.pod)
        if isinstance(current, Pod) and current.status.extended_resource_claim_status == wanted:
            return
        self._check(flight)
        await self.client.patch(
            PODS.path("v1", namespace=pod.namespace, name=pod.name, subresource="status"),
            {"status": {"extendedResourceClaimStatus": to_data(wanted)}},
        )

    async def _write_volume(self, flight: Flight, claim_key: str, volume: str) -> None:
        """VolumeBinding's PreBind for one claim (see the module docstring)."""
        namespace, name = claim_key.split("/", 1)
        if not volume:
            path = PERSISTENT_VOLUME_CLAIMS.path("v1", namespace=namespace, name=name)
            await self.client.patch(path, {"metadata": {"annotations": {ANN_SELECTED_NODE: flight.node}}})
            return
        claim = self.cache.stores[PERSISTENT_VOLUME_CLAIMS].get(claim_key)
        current = self.cache.stores[PERSISTENT_VOLUMES].get(volume)
        if not isinstance(claim, PersistentVolumeClaim) or not isinstance(current, PersistentVolume):
            raise BindError(f"volume {volume} or its claim {claim_key} is gone")
        if current.spec.claim_ref is not None:
            if current.spec.claim_ref.name == name and current.spec.claim_ref.namespace == namespace:
                return
            raise BindError(f"volume {volume} was bound to another claim meanwhile")
        reference = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": name,
            "uid": claim.metadata.uid,
            "resourceVersion": claim.metadata.resource_version,
        }
        path = PERSISTENT_VOLUMES.path("v1", name=volume)
        await self.client.patch(
            path,
            {
                "metadata": {"resourceVersion": current.metadata.resource_version},
                "spec": {"claimRef": reference},
            },
        )

    async def _create(self, claim: ResourceClaim) -> ResourceClaim:
        """A claim the scheduler makes for the pod (extended resources served by DRA)."""
        body = to_data(claim)
        body["metadata"] = {
            k: v for k, v in body.get("metadata", {}).items() if k not in ("uid", "resourceVersion")
        }
        body.pop("status", None)
        created = await self.client.post(RESOURCE_CLAIMS.path("v1", namespace=claim.namespace), body)
        return decode_object(created, ResourceClaim, "resource.k8s.io/v1")

    async def _bind(self, flight: Flight) -> None:
        pod = self._pod(flight)
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod_uid(pod)},
            "target": {"apiVersion": "v1", "kind": "Node", "name": flight.node},
        }
        await self.client.post(
            PODS.path("v1", namespace=pod.namespace, name=pod.name, subresource="binding"), body
        )

    # -- claims released for pods that cannot use them -----------------------------------

    def release(self, claim_key: str, pod_uid_: str) -> asyncio.Task[None]:
        """Write a deallocation the engine decided (`Deallocated`): allocation cleared, the pod's
        reservation removed, based on the version the API holds (a conflict restores it)."""
        self.cache.guard(claim_key)
        task = asyncio.get_running_loop().create_task(
            self._release(claim_key, pod_uid_), name=f"release {claim_key}"
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _release(self, key: str, uid: str) -> None:
        current = self.cache.stores[RESOURCE_CLAIMS].get(key)
        if not isinstance(current, ResourceClaim):
            self.cache.release_guard(key)
            return
        reserved = [to_data(r) for r in current.status.reserved_for if r.uid != uid]
        status: dict[str, Any] = {"reservedFor": reserved}
        if not reserved:
            status["allocation"] = None
        path = RESOURCE_CLAIMS.path("v1", namespace=current.namespace, name=current.name) + "/status"
        try:
            patched = await self.client.patch(
                path, {"metadata": {"resourceVersion": current.metadata.resource_version}, "status": status}
            )
        except ApiError as error:
            log.info("could not release claim %s: %s", key, error)
            self.cache.release_guard(key)
            return
        self.cache.claim_written(key, patched["metadata"]["resourceVersion"])

    # -- undo ------------------------------------------------------------------------------

    async def _undo(self, flight: Flight, written: list[tuple[str, bool]]) -> dict[str, str]:
        """Remove our reservation from each claim written; clear an allocation we made that no one
        else reserves. Retried on conflicts; a claim already gone needs nothing. Returns the
        resourceVersion each undo produced, by claim key."""
        undone: dict[str, str] = {}
        try:
            pod = self._pod(flight)
            uid = pod_uid(pod)
        except BindError:
            uid = ""
        for key, allocated in written:
            namespace, name = key.split("/", 1)
            path = RESOURCE_CLAIMS.path("v1", namespace=namespace, name=name)
            for _ in range(CONFLICT_RETRIES):
                try:
                    raw = await self.client.get(path)
                    reserved = [
                        r for r in (raw.get("status") or {}).get("reservedFor") or [] if r.get("uid") != uid
                    ]
                    status: dict[str, Any] = {"reservedFor": reserved}
                    if allocated and not reserved:
                        status["allocation"] = None
                    version = raw["metadata"]["resourceVersion"]
                    patched = await self.client.patch(
                        path + "/status", {"metadata": {"resourceVersion": version}, "status": status}
                    )
                    undone[key] = patched["metadata"]["resourceVersion"]
                    break
                except Conflict:
                    continue
                except NotFound:
                    break
                except ApiError as error:
                    log.error("could not release claim %s after a failed binding: %s", key, error)
                    break
        return undone

"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

A candidate takes the Lease when nobody holds it or the holder has not renewed it for
`lease_duration` seconds *as observed locally* (the renew time written in the Lease is not
compared with our clock, so clock skew between replicas does not matter). The leader renews
every `retry_period`; if it cannot renew for `renew_deadline` it stops leading (the caller
must stop writing at once). Every write names the version it read, so two candidates never
both win. On a graceful stop the leader gives the Lease up, so a standby takes over without
waiting for it to expire.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from allot.live.client import ApiClient, ApiError, Conflict, NotFound
from allot.live.status import now_rfc3339

log = logging.getLogger("allot.live.leader")

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    namespace: str = "kube-system"
    name: str = "allot-scheduler"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
    """See the module docstring."""

    def __init__(self, client: ApiClient, identity: str, settings: LeaseSettings | None = None) -> None:
        self.client = client
        self.identity = identity
        self.settings = settings or LeaseSettings()
        self.leading = asyncio.Event()
        self.lost = asyncio.Event()
        # What we last saw of the lease: (holder, renewTime, resourceVersion) and when we saw it change.
        self._observed: tuple[str, str, str] | None = None
        self._observed_at = 0.0
        self.transitions = 0

    @property
    def _collection(self) -> str:
        return LEASES.format(namespace=self.settings.namespace)

    @property
    def _path(self) -> str:
        return f"{self._collection}/{self.settings.name}"

    def _body(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        stamp = now_rfc3339(micro=True)
        spec = (previous or {}).get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        transitions = int(spec.get("leaseTransitions") or 0)
        acquire = spec.get("acquireTime") or stamp
        if holder != self.identity:
            transitions += 1 if previous is not None else 0
            acquire = stamp
        body: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.settings.name, "namespace": self.settings.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.settings.lease_duration),
                "acquireTime": acquire,
                "renewTime": stamp,
                "leaseTransitions": transitions,
            },
        }
        if previous is not None:
            body["metadata"]["resourceVersion"] = previous["metadata"]["resourceVersion"]
        return body

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the Lease afterwards."""
        try:
            current = await self.client.get(self._path)
        except NotFound:
            try:
                await self.client.post(self._collection, self._body(None))
            except (Conflict, ApiError):
                return False
            return True
        spec = current.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        observed = (holder, str(spec.get("renewTime") or ""), current["metadata"]["resourceVersion"])
        now = time.monotonic()
        if observed != self._observed:
            self._observed, self._observed_at = observed, now
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        if holder and holder != self.identity and now - self._observed_at < duration:
            return False
        try:
            await self.client.request("PUT", self._path, body=self._body(current))
        except (Conflict, ApiError):
            return False
        return True

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Wait until we lead (True) or `stop` is set (False)."""
        while not stop.is_set():
            if await self.try_acquire_or_renew():
                self.leading.set()
                self.transitions += 1
                log.info("became leader (%s)", self.identity)
                return True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.settings.retry_period)
        return False

    async def keep(self, stop: asyncio.Event) -> None:
        """Renew until `stop`; sets `lost` (and clears `leading`) if renewing fails for too long."""
        last_renewed = time.monotonic()
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.settings.retry_period)
                return
            except TimeoutError:
                pass
            if await self.try_acquire_or_renew():
                last_renewed = time.monotonic()
            elif time.monotonic() - last_renewed > self.settings.renew_deadline:
                log.error("lost the lease %s/%s", self.settings.namespace, self.settings.name)
                self.leading.clear()
                self.lost.set()
                return

    async def release(self) -> None:
        """Give the Lease up (graceful stop) so a standby need not wait for it to expire."""
        if not self.leading.is_set():
            return
        try:
            current = await self.client.get(self._path)
            if (current.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            body = self._body(current)
            body["spec"]["holderIdentity"] = ""
            body["spec"]["leaseDurationSeconds"] = 1
            await self.client.request("PUT", self._path, body=body)
        except ApiError as error:
            log.warning("could not release the lease: %s", error)
        self.leading.clear()

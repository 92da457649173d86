"""ClusterQueue and LocalQueue status kept current, so `kubectl get clusterqueues` tells the truth.

allot admits the workloads of the queues it serves, so it writes what Kueue's controller would:
pending, reserving and admitted workload counts, flavor usage and reservation (with borrowing),
the fair-sharing weighted share, and the Active condition. Each queue's status is written only
when it changed, at most once per `interval` seconds for all queues together, as a merge patch
of `status` (nothing else of the object is touched). A merge patch keeps what it leaves out, so
the counts are always written, zero included, and a field written before but absent now is
written as null: a queue that drained shows 0 pending, not its last non-zero count.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from allot.admission.state import AdmissionState
from allot.admission.status import cluster_queue_record, local_queue_record
from allot.live.client import ApiClient, ApiError
from allot.live.kinds import CLUSTER_QUEUES, LOCAL_QUEUES
from allot.live.status import now_rfc3339
from allot.model.codec import to_data

log = logging.getLogger("allot.live.queues")

# Written even when zero (the record leaves defaults out): a merge patch would keep the old count.
COUNTS = ("pendingWorkloads", "reservingWorkloads", "admittedWorkloads")


def _active_condition(previous: dict[str, Any] | None) -> dict[str, Any]:
    stamp = (previous or {}).get("lastTransitionTime") or now_rfc3339()
    return {
        "type": "Active",
        "status": "True",
        "reason": "Ready",
        "message": "Can admit new workloads (admitted by allot)",
        "lastTransitionTime": stamp,
    }


class QueueStatusWriter:
    """See the module docstring. `versions` names the served version of each queue kind."""

    def __init__(self, client: ApiClient, *, interval: float = 1.0) -> None:
        self.client = client
        self.interval = interval
        self._written: dict[str, dict[str, Any]] = {}
        self._last = 0.0
        self._task: asyncio.Task[None] | None = None
        self._deferred: asyncio.TimerHandle | None = None
        self.writes = 0

    def _retry(self, admission: AdmissionState, versions: dict[str, str]) -> None:
        self._deferred = None
        self.update(admission, versions)

    def update(self, admission: AdmissionState, versions: dict[str, str]) -> None:
        """Schedule writes for the queues whose status changed (called after each cycle); a call
        within `interval` of the last writes is deferred to the end of the interval, not dropped."""
        now = time.monotonic()
        if now - self._last < self.interval or (self._task is not None and not self._task.done()):
            if self._deferred is None:
                delay = max(self.interval - (now - self._last), 0.05)
                self._deferred = asyncio.get_running_loop().call_later(
                    delay, self._retry, admission, versions
                )
            return
        self._last = now
        status = admission.status()
        pending: list[tuple[str, dict[str, Any]]] = []
        cq_version = versions.get(CLUSTER_QUEUES.plural)
        lq_version = versions.get(LOCAL_QUEUES.plural)
        if cq_version is not None:
            for cq in status.cluster_queues:
                key = f"cq/{cq.name}"
                body = self._complete(to_data(cluster_queue_record(cq)), key)
                if self._written.get(key) != body:
                    path = CLUSTER_QUEUES.path(cq_version, name=cq.name, subresource="status")
                    pending.append((key, {"path": path, "status": body}))
        if lq_version is not None:
            for lq in status.local_queues:
                key = f"lq/{lq.key}"
                record = to_data(local_queue_record(lq))
                if lq_version == "v1beta1" and "flavorsUsage" in record:
                    record["flavorUsage"] = record.pop("flavorsUsage")  # v1beta1's spelling
                body = self._complete(record, key)
                if self._written.get(key) != body:
                    namespace, name = lq.key.split("/", 1)
                    path = LOCAL_QUEUES.path(lq_version, namespace=namespace, name=name, subresource="status")
                    pending.append((key, {"path": path, "status": body}))
        if pending:
            self._task = asyncio.get_running_loop().create_task(self._write(pending), name="queue status")

    def _complete(self, body: dict[str, Any], key: str) -> dict[str, Any]:
        """The record as a merge patch that leaves nothing stale: counts always, nulls for the rest."""
        for count in COUNTS:
            body.setdefault(count, 0)
        for field in self._written.get(key, {}):
            if field not in body:
                body[field] = None
        return body

    async def _write(self, pending: list[tuple[str, dict[str, Any]]]) -> None:
        for key, item in pending:
            status = dict(item["status"])
            status["conditions"] = [_active_condition(None)]
            try:
                await self.client.patch(item["path"], {"status": status})
            except ApiError as error:
                log.debug("queue status %s: %s", key, error)
                continue
            self._written[key] = item["status"]
            self.writes += 1

    async def stop(self) -> None:
        if self._deferred is not None:
            self._deferred.cancel()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

"""What users see of allot's decisions on their pods: conditions and events, as kube-scheduler writes them.

* A pod that waits gets `PodScheduled=False`, reason `Unschedulable`, with the engine's
  one-line reason ("0/12 nodes are available: ..." plus allot's quota or fair-share reason),
  and a `FailedScheduling` event (events.k8s.io/v1).
* A pod kube-scheduler would keep out of its queue (PreEnqueue) gets neither: one with
  scheduling gates (the API server wrote its `SchedulingGated` condition), one whose claim the
  resourceclaim controller has not made yet, one naming a claim or claim template that does not
  exist. allot's log and `allot place` still say why it waits.
* A bound pod gets a `Scheduled` event; a preemptor its `status.nominatedNodeName`; a victim
  the `DisruptionTarget` condition before it is deleted.

Writes go through one queue and one worker, so a burst of decisions never opens a burst of
connections: per pod only the newest waiting reason is written, a reason already written is
not written again, and events are rate-limited (a token bucket) and deduplicated (the same
reason for the same pod at most once per `event_interval`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from allot.live.client import STRATEGIC_PATCH, ApiClient, ApiError, RateLimiter
from allot.live.kinds import PODS
from allot.model.base import Object
from allot.model.core import Pod

log = logging.getLogger("allot.live.status")

EVENTS_PATH = "/apis/events.k8s.io/v1/namespaces/{namespace}/events"
GATED_PREFIX = "SchedulingGated"
# Reasons for which kube-scheduler keeps a pod out of its queue (PreEnqueue) without writing a
# condition or an event: scheduling gates, a claim not created yet, a claim or template missing.
NOT_QUEUED = re.compile(
    rf"^{GATED_PREFIX}"
    r"|waiting for the resourceclaim of entry \S+ to be created"
    r"|resourceclaim '[^']+' not found"
    r"|resourceclaimtemplate \S+ not found"
)
# How many pods' last written reasons are remembered (oldest forgotten first).
MEMORY = 100_000


def now_rfc3339(micro: bool = False) -> str:
    stamp = datetime.now(UTC)
    if micro:
        return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class _Write:
    key: str
    run: Callable[[], Any]


class StatusWriter:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        *,
        events_client: ApiClient | None = None,
        reporting_controller: str = "allot",
        instance: str | None = None,
        event_qps: float = 10.0,
        event_burst: int = 50,
        event_interval: float = 600.0,
    ) -> None:
        self.client = client
        self.events_client = events_client or client
        self.controller = reporting_controller
        self.instance = instance or socket.gethostname()
        self.event_limiter = RateLimiter(event_qps, event_burst)
        self.event_interval = event_interval
        self._written: OrderedDict[str, str] = OrderedDict()
        self._events: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._queue: OrderedDict[str, _Write] = OrderedDict()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.writes = 0

    # -- producers (called from the scheduling loop; never block) ---------------------------

    def waiting(self, pod: Pod, reason: str, *, nominated: str | None = None) -> None:
        """Why the pod waits; with `nominated`, the node it preempted on, set in the same write
        (as kube-scheduler writes a preemptor's condition and nomination together)."""
        if self._written.get(pod.key) == reason and nominated is None:
            return
        if NOT_QUEUED.search(reason):
            log.debug("pod %s is not queued: %s", pod.key, reason)
            if nominated is not None:
                self.nominated(pod, nominated)
            return
        self._remember(pod.key, reason)
        status: dict[str, Any] = {
            "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": reason, "lastTransitionTime": now_rfc3339(),
            }]
        }  # fmt: skip
        if nominated is not None:
            status["nominatedNodeName"] = nominated

        async def write() -> None:
            await self._patch_status(pod, status)
            await self._event(pod, "Warning", "FailedScheduling", reason)

        self._enqueue(_Write(f"status/{pod.key}", write))

    def scheduled(self, pod: Pod, node: str) -> None:
        self._written.pop(pod.key, None)
        # A waiting condition not written yet (a preemptor's) must not land after the binding.
        self._queue.pop(f"status/{pod.key}", None)
        message = f"Successfully assigned {pod.key} to {node}"

        async def write() -> None:
            await self._event(pod, "Normal", "Scheduled", message)

        self._enqueue(_Write(f"scheduled/{pod.key}", write))

    def nominated(self, pod: Pod, node: str) -> None:
        async def write() -> None:
            await self._patch_status(pod, {"nominatedNodeName": node})

        self._enqueue(_Write(f"nominated/{pod.key}", write))

    def job_event(self, job: Object, kind: str, reason: str, note: str) -> None:
        """An event on a queued Job (Pending with why it waits, Started, Stopped): what `kubectl
        describe job` shows of its admission, as Kueue reports it. A Job told the same Pending
        reason is not told again."""
        key = f"job/{job.key}"
        if reason == "Pending":
            if self._written.get(key) == note:
                return
            self._remember(key, note)
        else:
            self._written.pop(key, None)

        async def write() -> None:
            await self._event(job, kind, reason, note, api_version="batch/v1", action="Admission")

        self._enqueue(_Write(f"{reason}/{key}", write))

    def forget(self, pod_key: str) -> None:
        self._written.pop(pod_key, None)

    def _remember(self, key: str, reason: str) -> None:
        self._written[key] = reason
        self._written.move_to_end(key)
        while len(self._written) > MEMORY:
            self._written.popitem(last=False)

    def _enqueue(self, write: _Write) -> None:
        self._queue[write.key] = write
        self._queue.move_to_end(write.key)
        self._wake.set()

    # -- the worker ------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._work(), name="status writer")

    async def stop(self, *, flush: bool = True) -> None:
        if flush:
            await self.flush()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def flush(self) -> None:
        while self._queue:
            _, write = self._queue.popitem(last=False)
            await self._do(write)

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                _, write = self._queue.popitem(last=False)
                await self._do(write)

    async def _do(self, write: _Write) -> None:
        try:
            await write.run()
            self.writes += 1
        except ApiError as error:
            # A pod deleted meanwhile (404) or a conflict: the next decision writes again.
            log.debug("status write %s: %s", write.key, error)

    async def _patch_status(self, pod: Pod, status: dict[str, Any]) -> None:
        path = PODS.path("v1", namespace=pod.namespace, name=pod.name, subresource="status")
        body = {"metadata": {"uid": pod.metadata.uid}, "status": status}
        await self.client.patch(path, body, content_type=STRATEGIC_PATCH)

    async def _event(
        self, regarding: Object, kind: str, reason: str, note: str, *, api_version: str = "v1",
        action: str = "Scheduling",
    ) -> None:  # fmt: skip
        stamp = time.monotonic()
        key = (f"{regarding.KIND}/{regarding.key}", f"{reason}/{note}")
        last = self._events.get(key)
        if last is not None and stamp - last < self.event_interval:
            return
        self._events[key] = stamp
        self._events.move_to_end(key)
        while len(self._events) > MEMORY:
            self._events.popitem(last=False)
        await self.event_limiter.acquire()
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            # client-go's naming: the object's name and the time in hex nanoseconds.
            "metadata": {"name": f"{regarding.name}.{time.time_ns():x}", "namespace": regarding.namespace},
            "eventTime": now_rfc3339(micro=True),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "type": kind,
            "note": note[:1024],
            "regarding": {
                "apiVersion": api_version,
                "kind": regarding.KIND,
                "namespace": regarding.namespace,
                "name": regarding.name,
                "uid": regarding.metadata.uid,
            },
        }
        await self.events_client.post(EVENTS_PATH.format(namespace=regarding.namespace), body)

    def pending_writes(self) -> int:
        return len(self._queue)

    @staticmethod
    def is_gated(reason: str) -> bool:
        return reason.startswith(GATED_PREFIX)

"""Deleting preemption victims the way kube-scheduler does.

Each victim first gets the `DisruptionTarget` condition (reason `PreemptionByScheduler`, so
its controller and its users can tell a preemption from a crash), then is deleted with its
own grace period. PodDisruptionBudgets were weighed when the victims were chosen (as
upstream, the scheduler deletes rather than evicts). A victim already gone needs nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from allot.live.client import STRATEGIC_PATCH, ApiClient, ApiError, NotFound
from allot.live.kinds import PODS
from allot.live.status import now_rfc3339
from allot.model.core import Pod

log = logging.getLogger("allot.live.eviction")

PREEMPTION_REASON = "PreemptionByScheduler"


class Evictor:
    """`on_failed(pod_key)` is called for a victim that could not be deleted (it keeps running)."""

    def __init__(
        self, client: ApiClient, *, scheduler_name: str, on_failed: Callable[[str], None] = lambda key: None
    ) -> None:
        self.client = client
        self.scheduler_name = scheduler_name
        self.on_failed = on_failed
        self.tasks: set[asyncio.Task[None]] = set()
        self.deleted = 0

    def evict(self, pod: Pod, message: str) -> None:
        task = asyncio.get_running_loop().create_task(self._evict(pod, message), name=f"evict {pod.key}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def drain(self) -> None:
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    async def _evict(self, pod: Pod, message: str) -> None:
        path = PODS.path("v1", namespace=pod.namespace, name=pod.name)
        condition = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": PREEMPTION_REASON,
            "message": f"{self.scheduler_name}: {message}",
            "lastTransitionTime": now_rfc3339(),
        }
        try:
            await self.client.patch(
                path + "/status",
                {"metadata": {"uid": pod.metadata.uid}, "status": {"conditions": [condition]}},
                content_type=STRATEGIC_PATCH,
            )
            # The UID precondition: never delete a pod re-created under the victim's name.
            await self.client.delete(path, {"preconditions": {"uid": pod.metadata.uid}})
            self.deleted += 1
        except NotFound:
            pass
        except ApiError as error:
            log.error("could not delete preemption victim %s: %s", pod.key, error)
            self.on_failed(pod.key)

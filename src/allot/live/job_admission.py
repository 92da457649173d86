"""Kueue's Job integration in `allot run`: suspended Jobs admitted, started, followed, stopped.

For each Job sent to a Kueue queue (`allot.live.jobs` holds the pure part):

* **suspended, not admitted**: its placeholder pods stand in the state as one pending Kueue pod
  group, so the engine admits the Job the way it admits any workload (quota, fair sharing,
  preemption) and only where all its pods fit now;
* **admitted**: the engine placed the placeholders; allot un-suspends the Job with the flavors'
  node labels and tolerations (one merge patch, the Job's resourceVersion as precondition). Until
  the patch lands the placeholders hold the room; a patch that fails withdraws the admission and
  the Job queues again. The Job controller then makes its pods; each pod joins the admitted
  workload (`Engine.adopt`) and takes a placeholder's place, so the room the engine found is
  what the pod is placed into. The workload's quota is held until the Job finishes or is deleted
  (`Engine.hold_until_finished`), though its pods come and go;
* **preempted**: the engine evicted the workload; allot suspends the Job (its controller deletes
  the pods; allot deletes those it evicted, as for any victim) and it queues again;
* **started by someone else** (the webhook was not registered, or a user cleared `suspend`):
  suspended again, as Kueue does. Pods of a queued Job that is not admitted are never scheduled.

On a restart the admission recorded on running Jobs (`allot.dev/job-admission`) is restored
with the flavors it names (`allot.admission.jobs.restore_admitted_jobs`), so no Job is admitted
twice.

Only Jobs whose pod template names one of allot's profiles are handled (the webhook sets it);
others are left to whichever scheduler they name.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from allot.admission.jobs import (
    admission_of,
    controller_job,
    is_admitted_job,
    is_placeholder,
    is_queued_job,
    placeholders,
    workload_key,
)
from allot.engine.decisions import Admitted
from allot.engine.engine import Engine
from allot.live.cache import LiveCache
from allot.live.client import ApiClient, ApiError, Conflict, NotFound
from allot.live.jobs import suspend_patch, unsuspend_patch
from allot.live.kinds import JOBS, PODS, RESOURCE_CLAIM_TEMPLATES, DecodeError, decode_object
from allot.model.batch import Job
from allot.model.core import Pod
from allot.model.resource import ResourceClaimTemplate

log = logging.getLogger("allot.live.jobs")


# Where a tracked Job stands: "queued" (its placeholders wait), "starting" (the un-suspend is
# being written), "admitted" (it runs), "stopping" (the suspend is being written).
Phase = Literal["queued", "starting", "admitted", "stopping"]


@dataclass
class _Tracked:
    uid: str
    workload: str
    # Placeholder pod keys still in the state.
    placeholders: list[str] = field(default_factory=list)
    phase: Phase = "queued"
    # What of the Job its placeholders were made from (`_queue_version`).
    version: str = ""


class JobAdmission:
    """See the module docstring. `on_change()` asks the scheduler for a cycle soon."""

    def __init__(
        self,
        client: ApiClient,
        cache: LiveCache,
        *,
        scheduler_names: Collection[str],
        on_change: Callable[[], None] = lambda: None,
        report: Callable[[Job, str, str, str], None] = lambda job, kind, reason, note: None,
        current_engine: Callable[[], Engine | None] = lambda: None,
        job_version: str = "v1",
    ) -> None:
        """`report(job, type, reason, note)` writes an event on a Job (the StatusWriter's);
        `current_engine()` is the scheduler's engine now (writes that end later use it)."""
        self.client = client
        self.cache = cache
        self.scheduler_names = frozenset(scheduler_names)
        self.on_change = on_change
        self.report = report
        self._current_engine = current_engine
        self.job_version = job_version
        self.enabled = False
        # Jobs whose state allot's own writes changed (a write's end): synced at the next `sync`.
        self._dirty_keys: set[str] = set()
        # The claim templates, read once per `sync` (None outside one).
        self._templates: dict[str, ResourceClaimTemplate] | None = None
        # Pods held back because their Job was unknown or not admitted, by Job key.
        self._held_pods: dict[str, set[str]] = {}
        self.closing = False
        # Seconds a started Job waits for the victims its admission preempted to be gone.
        self.victim_timeout = 300.0
        self.jobs: dict[str, _Tracked] = {}
        self._by_workload: dict[str, str] = {}
        self._placeholder_job: dict[str, str] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.started = 0
        self.stopped = 0

    # -- what the rest of the scheduler asks ----------------------------------------------

    def _store(self) -> Mapping[str, object]:
        return self.cache.stores.get(JOBS, {})

    def _job(self, key: str) -> Job | None:
        job = self._store().get(key)
        return job if isinstance(job, Job) else None

    def handles(self, job: Job) -> bool:
        return (
            self.enabled
            and is_queued_job(job)
            and job.spec.template.spec.scheduler_name in self.scheduler_names
        )

    def holds_back(self, pod: Pod) -> bool:
        """Whether `pod` belongs to a queued Job allot has not admitted (it must not be placed)."""
        owner = controller_job(pod)
        if owner is None or not self.enabled:
            return False
        key, uid = owner
        job = self._job(key)
        if job is None or job.metadata.uid != uid or not self.handles(job):
            # A Job allot does not know yet (its watch lags its pods'): wait for it.
            held = job is None
        else:
            tracked = self.jobs.get(key)
            held = tracked is None or tracked.uid != uid or tracked.phase != "admitted"
        if held:
            self._held_pods.setdefault(key, set()).add(pod.key)
        return held

    def _release_held_pods(self, keys: Iterable[str], engine: Engine) -> None:
        """Pods held back for Jobs that changed are offered again (a Job now known to be none of
        allot's, or admitted: then they join its workload)."""
        pods = self.cache.stores.get(PODS, {})
        for key in sorted(keys):
            held = self._held_pods.pop(key, None)
            for pod_key in sorted(held or ()):
                pod = pods.get(pod_key)
                if isinstance(pod, Pod) and not self.holds_back(pod):
                    self._offer(pod_key, engine)

    def _offer(self, pod_key: str, engine: Engine) -> None:
        self.cache.offer(pod_key)
        if pod_key in self.cache.state_or_fail().pods:
            self.pod_arrived(pod_key, engine)

    @property
    def dirty(self) -> bool:
        """Whether allot's own writes changed a Job since the last `sync`."""
        return bool(self._dirty_keys)

    def phases(self) -> dict[str, int]:
        """How many Jobs stand in each phase (for metrics)."""
        counts: dict[str, int] = {}
        for tracked in self.jobs.values():
            counts[tracked.phase] = counts.get(tracked.phase, 0) + 1
        return counts

    def job_of_placeholder(self, pod_key: str) -> str | None:
        return self._placeholder_job.get(pod_key)

    def is_placeholder(self, pod_key: str) -> bool:
        return pod_key in self._placeholder_job

    def handled_jobs(self) -> list[Job]:
        """The Jobs allot admits (their recorded admissions are restored when admission is rebuilt)."""
        if not self.enabled:
            return []
        return [
            job for key in sorted(self._store()) if (job := self._job(key)) is not None and self.handles(job)
        ]

    def is_job_pod(self, pod: Pod) -> bool:
        """Whether admission must not see `pod` as a workload of its own: a pod of a Job allot
        handles, or a placeholder of a Job whose recorded admission stands for it. (Placeholders of
        a Job being started count as a running pod group: its admission is not recorded yet.)"""
        owner = controller_job(pod)
        if owner is None or not self.enabled:
            return False
        job = self._job(owner[0])
        if job is None or job.metadata.uid != owner[1] or not self.handles(job):
            return False
        return not is_placeholder(pod) or is_admitted_job(job)

    def templates(self) -> dict[str, ResourceClaimTemplate]:
        store = self.cache.stores.get(RESOURCE_CLAIM_TEMPLATES, {})
        return {k: t for k, t in store.items() if isinstance(t, ResourceClaimTemplate)}

    # -- following the Jobs --------------------------------------------------------------

    def sync(self, engine: Engine, now: float, keys: Iterable[str] | None = None) -> None:
        """Bring placeholders and admissions in line with the Jobs as the API shows them: those
        named by `keys` (Jobs whose watch events arrived) and those allot's own writes changed,
        or every Job when `keys` is None."""
        if not self.enabled:
            self._dirty_keys.clear()
            return
        store = self._store()
        wanted = set(store) | set(self.jobs) if keys is None else set(keys)
        wanted |= self._dirty_keys
        self._dirty_keys.clear()
        try:
            for key in sorted(wanted):
                self._sync_one(key, engine, now)
        finally:
            self._templates = None
        self._release_held_pods(wanted, engine)

    def _sync_one(self, key: str, engine: Engine, now: float) -> None:
        job = self._job(key)
        if job is None:
            self._finish(key, engine, now, "deleted")
            return
        if not self.handles(job):
            if key in self.jobs:
                self._finish(key, engine, now, "no longer queued")
            return
        tracked = self.jobs.get(key)
        if tracked is not None and tracked.uid != job.metadata.uid:
            self._finish(key, engine, now, "replaced")
            tracked = None
        if job.finished:
            if tracked is not None:
                self._finish(key, engine, now, "finished")
            return
        if tracked is not None and tracked.phase in ("starting", "stopping"):
            return
        if job.suspended:
            if tracked is not None and tracked.phase == "admitted":
                # Suspended by someone else while it ran: its quota goes, it queues again.
                self._finish(key, engine, now, "suspended")
                tracked = None
            self._queue(job, tracked, engine)
        elif tracked is None or tracked.phase != "admitted":
            if (
                admission_of(job) is not None
                and engine.admission is not None
                and (engine.admission.is_admitted(workload_key(job)))
            ):
                self._adopt_admitted(job, engine)
            else:
                log.info("job %s runs without an admission: suspending it until it is admitted", key)
                self.report(
                    job,
                    "Normal",
                    "Suspended",
                    "Started without an admission: suspended until allot admits it",
                )
                if tracked is not None:
                    self._drop_placeholders(tracked, engine)
                self._stop(job, engine, now)

    def _queue(self, job: Job, tracked: _Tracked | None, engine: Engine) -> None:
        key = job.key
        version = _queue_version(job)
        if tracked is not None and tracked.phase == "queued" and tracked.version == version:
            return
        if tracked is not None:
            self._drop_placeholders(tracked, engine)
        if self._templates is None:
            self._templates = self.templates()
        pods, claims, missing = placeholders(job, self._templates)
        tracked = _Tracked(job.metadata.uid, workload_key(job), version=version)
        self.jobs[key] = tracked
        self._by_workload[tracked.workload] = key
        if missing:
            log.info("job %s waits for %s", key, ", ".join(missing))
            return
        for claim in claims:
            if claim.key in self.cache.state_or_fail().claims:
                log.warning("job %s: claim %s already exists; placeholders not made", key, claim.key)
                return
        self.cache.add_placeholders(pods, claims)
        tracked.placeholders = [pod.key for pod in pods]
        for pod in tracked.placeholders:
            self._placeholder_job[pod] = key
        self.on_change()

    def _adopt_admitted(self, job: Job, engine: Engine) -> None:
        """A running Job whose admission was restored (a restart): follow it."""
        key = job.key
        tracked = self.jobs.get(key)
        if tracked is not None:
            self._drop_placeholders(tracked, engine)
        tracked = _Tracked(job.metadata.uid, workload_key(job), phase="admitted")
        self.jobs[key] = tracked
        self._by_workload[tracked.workload] = key
        engine.hold_until_finished(tracked.workload)
        self._take_pods(key, engine, self._pods_by_job().get((key, job.metadata.uid), []))

    def after_build(self, engine: Engine) -> None:
        """A new engine (admission rebuilt): admitted Jobs hold their quota, and their pods and
        placeholders belong to their workloads again."""
        by_job: dict[tuple[str, str], list[str]] | None = None
        for key, tracked in sorted(self.jobs.items()):
            if tracked.phase not in ("starting", "admitted"):
                continue
            # Its placeholders still in the state are the restored workload's pods already.
            engine.hold_until_finished(tracked.workload)
            if tracked.phase == "admitted":
                if by_job is None:
                    by_job = self._pods_by_job()
                self._take_pods(key, engine, by_job.get((key, tracked.uid), []))

    def _pods_by_job(self) -> dict[tuple[str, str], list[str]]:
        """The API's pods by controlling Job (key, uid), listed once."""
        found: dict[tuple[str, str], list[str]] = {}
        for pod_key, pod in self.cache.stores.get(PODS, {}).items():
            owner = controller_job(pod) if isinstance(pod, Pod) else None
            if owner is not None:
                found.setdefault(owner, []).append(pod_key)
        return found

    def _take_pods(self, key: str, engine: Engine, pods: Iterable[str]) -> None:
        """Pods of an admitted Job join its workload, each in place of a placeholder."""
        for pod_key in sorted(pods):
            self._offer(pod_key, engine)

    def pod_arrived(self, pod_key: str, engine: Engine) -> None:
        """A pod entered the state: if an admitted Job owns it, it joins the Job's workload."""
        state = self.cache.state_or_fail()
        info = state.pods.get(pod_key)
        if info is None or pod_key in self._placeholder_job:
            return
        owner = controller_job(info.pod)
        tracked = self.jobs.get(owner[0]) if owner is not None else None
        if owner is None or tracked is None or tracked.uid != owner[1] or tracked.phase != "admitted":
            return
        if engine.workload_of(pod_key) == tracked.workload:
            return
        engine.adopt(pod_key, tracked.workload)
        if tracked.placeholders and not info.bound:
            # The pod takes the room its placeholder held (the last one first: any will do).
            self._drop_placeholder(tracked, tracked.placeholders[-1], engine)

    # -- decisions -----------------------------------------------------------------------

    def admitted(self, decision: Admitted, engine: Engine, now: float, victims: Collection[str] = ()) -> bool:
        """The engine admitted a workload; True when it is a Job's (allot starts the Job once the
        `victims` its admission preempted are gone, as a nominated pod waits for its victims)."""
        key = self._by_workload.get(decision.workload)
        tracked = self.jobs.get(key) if key is not None else None
        job = self._job(key) if key is not None else None
        if key is None or tracked is None or tracked.phase != "queued":
            return False
        if job is None or job.metadata.uid != tracked.uid:
            return True
        engine.hold_until_finished(tracked.workload)
        tracked.phase = "starting"
        log.info("job %s admitted to %s (%s)%s", key, decision.cluster_queue,
                 ", ".join(f"{k}={v}" for k, v in sorted(decision.flavors.items())),
                 f"; starts once {len(victims)} preempted pods are gone" if victims else "")  # fmt: skip
        known = engine.admission.flavors if engine.admission is not None else {}
        patch = unsuspend_patch(
            job, workload=tracked.workload, cluster_queue=decision.cluster_queue,
            flavors=decision.flavors, known_flavors=known, admitted_at=now,
        )  # fmt: skip
        flavors = ", ".join(f"{k}={v}" for k, v in sorted(decision.flavors.items()))
        note = f"Admitted by ClusterQueue {decision.cluster_queue} ({flavors}); started"
        self._spawn(self._start(key, tracked, job, patch, tuple(victims), note), f"start job {key}")
        return True

    def waiting(self, pod_key: str, reason: str) -> None:
        """A placeholder was told why it waits: the Job is told (once per reason)."""
        key = self._placeholder_job.get(pod_key)
        job = self._job(key) if key is not None else None
        if job is not None:
            self.report(job, "Warning", "Pending", reason)

    def evicted(self, pod_key: str, engine: Engine, now: float, reason: str = "") -> None:
        """The engine evicted a pod: a Job whose workload loses its admission is suspended (its
        placeholders leave the state; its pods are deleted by the caller, as any victim)."""
        key = self._placeholder_job.get(pod_key)
        if key is None:
            info = self.cache.state_or_fail().pods.get(pod_key)
            owner = controller_job(info.pod) if info is not None else None
            key = owner[0] if owner is not None else None
        tracked = self.jobs.get(key) if key is not None else None
        if key is None or tracked is None:
            return
        if tracked.phase in ("starting", "admitted"):
            job = self._job(key)
            log.info("job %s preempted: suspending it", key)
            if job is not None:
                self.report(
                    job,
                    "Normal",
                    "Stopped",
                    f"Preempted: {reason or 'its admission was taken back'}; suspended until admitted again",
                )
            self._drop_placeholders(tracked, engine)
            # Kueue requeued it; it queues again from its suspended version, as a new workload.
            engine.workload_withdrawn(tracked.workload, now)
            if job is not None:
                self._stop(job, engine, now)
        elif pod_key in self._placeholder_job:
            self._drop_placeholder(tracked, pod_key, engine)

    # -- writes --------------------------------------------------------------------------

    def current_engine(self) -> Engine:
        engine = self._current_engine()
        if engine is None:
            raise RuntimeError("job admission used before the scheduler built its engine")
        return engine

    def _spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coroutine, name=name)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def drain(self) -> None:
        """Let the writes under way end; a Job still waiting for its victims is not started."""
        self.closing = True
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)

    def _path(self, job: Job) -> str:
        return JOBS.path(self.job_version, namespace=job.namespace, name=job.name)

    async def _start(
        self,
        key: str,
        tracked: _Tracked,
        job: Job,
        patch: dict[str, object],
        victims: tuple[str, ...],
        note: str,
    ) -> None:
        waited = 0.0
        while any(v in self.cache.evicting for v in victims) and waited < self.victim_timeout:
            await asyncio.sleep(0.2)
            waited += 0.2
            if self.closing or self.jobs.get(key) is not tracked or tracked.phase != "starting":
                return
        try:
            for attempt in range(3):
                try:
                    await self.client.patch(self._path(job), patch)
                    break
                except Conflict:
                    # The Job changed since allot read it: its status (the controller's), or what
                    # it asks for. Only the first may be written over.
                    fresh = await self._fetch(job)
                    if attempt == 2 or fresh is None or not _same_request(fresh, job, tracked):
                        raise
                    patch = {**patch, "metadata": {**patch["metadata"],  # type: ignore[dict-item]
                                                   "resourceVersion": fresh.metadata.resource_version}}  # fmt: skip
                    job = fresh
        except ApiError as error:
            log.info("could not start job %s (%s): it queues again", key, error)
            if self.jobs.get(key) is tracked and tracked.phase == "starting":
                self._withdraw(key, tracked, self.current_engine())
            return
        if self.jobs.get(key) is not tracked or tracked.phase != "starting":
            return
        tracked.phase = "admitted"
        self.started += 1
        self.report(job, "Normal", "Started", note)
        log.info("job %s admitted: started", key)
        # Pods its controller made while the start was written waited; they join it now (with
        # the engine of now: a change to Kueue's objects may have rebuilt it meanwhile).
        self._release_held_pods([key], self.current_engine())
        self.on_change()

    async def _fetch(self, job: Job) -> Job | None:
        try:
            raw = await self.client.get(self._path(job))
        except ApiError:
            return None
        try:
            return decode_object(raw, Job, f"batch/{self.job_version}")
        except DecodeError:
            return None

    def _withdraw(self, key: str, tracked: _Tracked, engine: Engine) -> None:
        """An admission that could not be written: its quota and room go back; it queues again."""
        self._drop_placeholders(tracked, engine)
        engine.workload_withdrawn(tracked.workload, time.time())
        self._forget(key)
        self._dirty_keys.add(key)
        self.on_change()

    def _stop(self, job: Job, engine: Engine, now: float) -> None:
        key = job.key
        tracked = self.jobs.get(key)
        if tracked is None:
            tracked = _Tracked(job.metadata.uid, workload_key(job))
            self.jobs[key] = tracked
            self._by_workload[tracked.workload] = key
        tracked.phase = "stopping"
        self._spawn(self._suspend(key, tracked, job), f"suspend job {key}")

    async def _suspend(self, key: str, tracked: _Tracked, job: Job) -> None:
        try:
            await self.client.patch(self._path(job), suspend_patch(job))
            self.stopped += 1
        except NotFound:
            pass
        except ApiError as error:
            log.error("could not suspend job %s: %s", key, error)
        if self.jobs.get(key) is tracked:
            # Queued again from the Job's next version (suspended), or stopped again if it still runs.
            self._forget(key)
            self._dirty_keys.add(key)
            self.on_change()

    # -- bookkeeping ---------------------------------------------------------------------

    def _finish(self, key: str, engine: Engine, now: float, why: str) -> None:
        tracked = self.jobs.get(key)
        if tracked is None:
            return
        log.info("job %s %s: its quota is released", key, why)
        self._drop_placeholders(tracked, engine)
        engine.workload_withdrawn(tracked.workload, now)
        self._forget(key)
        self.on_change()

    def _forget(self, key: str) -> None:
        tracked = self.jobs.pop(key, None)
        if tracked is None:
            return
        if self._by_workload.get(tracked.workload) == key:
            del self._by_workload[tracked.workload]
        for pod in tracked.placeholders:
            self._placeholder_job.pop(pod, None)

    def _drop_placeholders(self, tracked: _Tracked, engine: Engine) -> None:
        for pod in list(tracked.placeholders):
            self._drop_placeholder(tracked, pod, engine)

    def _drop_placeholder(self, tracked: _Tracked, pod_key: str, engine: Engine) -> None:
        tracked.placeholders.remove(pod_key)
        self._placeholder_job.pop(pod_key, None)
        self.cache.drop_placeholder(pod_key)
        engine.pod_deleted(pod_key)


def _same_request(fresh: Job, job: Job, tracked: _Tracked) -> bool:
    """Whether a Job read again still asks for what its placeholders were made from."""
    return (
        fresh.metadata.uid == job.metadata.uid
        and fresh.suspended
        and _queue_version(fresh) == tracked.version
    )


def _queue_version(job: Job) -> str:
    """What of a suspended Job its placeholders are made from (status writes do not count)."""
    return repr((job.metadata.labels, job.metadata.annotations, job.spec))

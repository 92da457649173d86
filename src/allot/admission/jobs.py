"""Kueue's Job integration, the workload side: a queued `batch/v1` Job as the pods it would run.

A Job labelled `kueue.x-k8s.io/queue-name` is one Kueue workload. While it is suspended it has
no pods, so allot stands *placeholder* pods in for them: `pod_count` copies of its pod template,
made a Kueue pod group (`job-<name>`), so admission and placement take them all or none, exactly
as they take plain pods. The live scheduler keeps placeholders in its own state only and starts
the Job once they are admitted (`allot.live.job_admission`); `allot place` places them as they
would be placed.

What allot records on a Job it admitted (`allot.dev/job-admission`: workload, ClusterQueue,
flavor by pod set and resource) lets any driver count a running Job as admitted on those
flavors (`restore_admitted_jobs`), as Kueue counts its admitted Workloads.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

from msgspec.structs import replace

from allot.admission.errors import AdmissionError
from allot.admission.running import RunningHost, restore_running
from allot.cluster.claims import claim_from_template
from allot.model.base import ObjectMeta, OwnerReference
from allot.model.batch import Job
from allot.model.codec import decode
from allot.model.core import Pod, PodResourceClaimStatus, PodStatus, Toleration
from allot.model.defaults import apply_defaults
from allot.model.errors import Location
from allot.model.kueue import (
    POD_GROUP_NAME_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
)
from allot.model.loader import LoadedObject, Manifests
from allot.model.resource import ResourceClaim, ResourceClaimTemplate

ADMISSION_ANNOTATION = "allot.dev/job-admission"
ORIGINAL_ANNOTATION = "allot.dev/job-original"
# Marks a placeholder pod (the value is its Job's name).
PLACEHOLDER_ANNOTATION = "allot.dev/placeholder-for-job"
PLACEHOLDER_INFIX = ".allot-"


def is_queued_job(job: Job) -> bool:
    return bool(job.metadata.labels.get(QUEUE_NAME_LABEL))


def group_name(job: Job) -> str:
    return f"job-{job.name}"


def workload_key(job: Job) -> str:
    """The key the engine knows the Job's workload by (its placeholders' pod group)."""
    return f"{job.namespace}/{group_name(job)}"


def controller_job(pod: Pod) -> tuple[str, str] | None:
    """(Job key, Job uid) of the Job that controls `pod`, if one does."""
    for ref in pod.metadata.owner_references:
        if ref.controller and ref.kind == "Job" and ref.api_version.startswith("batch/"):
            return f"{pod.namespace}/{ref.name}", ref.uid
    return None


def is_placeholder(pod: Pod) -> bool:
    return PLACEHOLDER_ANNOTATION in pod.metadata.annotations


def admission_of(job: Job) -> dict[str, Any] | None:
    """The admission allot recorded on the Job, or None (absent or unreadable)."""
    text = job.metadata.annotations.get(ADMISSION_ANNOTATION)
    if not text:
        return None
    try:
        recorded = json.loads(text)
    except ValueError:
        return None
    if not isinstance(recorded, dict) or not isinstance(recorded.get("flavors"), dict):
        return None
    return recorded


def original_placement(job: Job) -> tuple[dict[str, str], tuple[Toleration, ...]]:
    """The template's node selector and tolerations before any admission changed them."""
    spec = job.spec.template.spec
    text = job.metadata.annotations.get(ORIGINAL_ANNOTATION)
    if text:
        try:
            recorded = json.loads(text)
            selector = decode(recorded.get("nodeSelector") or {}, dict[str, str])
            tolerations = decode(recorded.get("tolerations") or [], tuple[Toleration, ...])
            return selector, tolerations
        except (ValueError, AttributeError, TypeError):
            pass
    return dict(spec.node_selector), spec.tolerations


def placeholders(
    job: Job, templates: Mapping[str, ResourceClaimTemplate] | None = None
) -> tuple[list[Pod], list[ResourceClaim], list[str]]:
    """The Job's placeholder pods, the claims their template entries get, and what is missing
    (a claim template that does not exist yet: its pods cannot be placed). Without `templates`
    no claims are made (a ClusterState that makes template claims itself makes them)."""
    template = job.spec.template
    selector, tolerations = original_placement(job)
    labels = {**template.metadata.labels, QUEUE_NAME_LABEL: job.metadata.labels[QUEUE_NAME_LABEL],
              POD_GROUP_NAME_LABEL: group_name(job)}  # fmt: skip
    priority = job.metadata.labels.get(PRIORITY_CLASS_LABEL)
    if priority:
        labels[PRIORITY_CLASS_LABEL] = priority
    count = job.pod_count
    annotations = {
        **template.metadata.annotations,
        POD_GROUP_TOTAL_COUNT_ANNOTATION: str(count),
        PLACEHOLDER_ANNOTATION: job.name,
    }
    owner = OwnerReference(api_version="batch/v1", kind="Job", name=job.name, uid=job.metadata.uid,
                           controller=True, block_owner_deletion=True)  # fmt: skip
    spec = replace(template.spec, node_selector=selector, tolerations=tolerations, node_name="")
    pods: list[Pod] = []
    claims: list[ResourceClaim] = []
    missing: list[str] = []
    for index in range(count):
        name = f"{job.name}{PLACEHOLDER_INFIX}{index}"
        metadata = ObjectMeta(
            name=name,
            namespace=job.namespace,
            uid=f"{job.metadata.uid}{PLACEHOLDER_INFIX}{index}",
            labels=labels,
            annotations=annotations,
            owner_references=(owner,),
            creation_timestamp=job.metadata.creation_timestamp,
        )
        pod = apply_defaults(Pod(api_version="v1", kind="Pod", metadata=metadata, spec=spec))
        statuses: list[PodResourceClaimStatus] = []
        for entry in spec.resource_claims:
            if templates is None or not entry.resource_claim_template_name:
                continue
            claim_template = templates.get(f"{job.namespace}/{entry.resource_claim_template_name}")
            if claim_template is None:
                missing.append(f"resourceclaimtemplate {job.namespace}/{entry.resource_claim_template_name}")
                continue
            claim = claim_from_template(pod, entry.name, claim_template)
            claims.append(claim)
            statuses.append(PodResourceClaimStatus(name=entry.name, resource_claim_name=claim.name))
        pods.append(replace(pod, status=PodStatus(phase="Pending", resource_claim_statuses=tuple(statuses))))
    return pods, claims, sorted(set(missing))


def resource_flavors(flavors: Mapping[str, str]) -> dict[str, str]:
    """Resource -> flavor from an admission's `pod set/resource -> flavor` (a Job has one pod set)."""
    return {key.split("/", 1)[1]: name for key, name in sorted(flavors.items()) if "/" in key}


def is_admitted_job(job: Job) -> bool:
    """A queued Job running on an admission allot recorded."""
    return is_queued_job(job) and not job.suspended and not job.finished and admission_of(job) is not None


def waiting_job_pods(jobs: Iterable[Job]) -> list[Pod]:
    """Placeholder pods for every queued Job that waits (suspended, not finished)."""
    pods: list[Pod] = []
    for job in jobs:
        if is_queued_job(job) and job.suspended and not job.finished:
            pods.extend(placeholders(job)[0])
    return pods


def with_waiting_jobs(manifests: Manifests) -> Manifests:
    """`manifests` plus the placeholder pods of every queued Job that waits (the same manifests
    when there is none), as `allot run` stands them in."""
    waiting = waiting_job_pods(manifests.of_kind(Job))
    if not waiting:
        return manifests
    where = Location(file="jobs")
    return Manifests(
        entries=[*manifests.entries, *(LoadedObject(pod, where) for pod in waiting)],
        skipped=list(manifests.skipped),
    )


def restore_admitted_jobs(
    state: RunningHost,
    jobs: Iterable[Job],
    now: float,
    *,
    templates: Mapping[str, ResourceClaimTemplate] | None = None,
) -> list[str]:
    """Count each Job running on an admission allot recorded as admitted on the flavors it names;
    the workload keys restored. A Job whose queue is gone stays out (its pods run regardless)."""
    restored: list[str] = []
    for job in jobs:
        if not is_admitted_job(job):
            continue
        recorded = admission_of(job)
        assert recorded is not None
        admitted_at = recorded.get("admittedAt")
        when = float(admitted_at) if isinstance(admitted_at, (int, float)) else now
        pods, _, _ = placeholders(job, templates)
        for workload in state.workloads_from_pods(pods):
            try:
                restore_running(
                    state,
                    dataclasses.replace(workload, incomplete=None),
                    when,
                    flavors=resource_flavors(recorded["flavors"]),
                    admitted_at=when,
                )
            except AdmissionError:
                continue
            restored.append(workload.key)
    return restored

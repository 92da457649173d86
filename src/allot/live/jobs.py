"""Kueue's Job integration, the pure part: a queued Job as pods, and the patches that admit it.

A `batch/v1` Job labelled `kueue.x-k8s.io/queue-name` is one Kueue workload. While it is
suspended it has no pods, so allot stands *placeholder* pods in for them: `pod_count` copies of
its pod template, made a Kueue pod group (`job-<name>`) so the engine admits and places them all
or none, exactly as it does plain pods. Placeholders live only in allot's state, never in the
API. When the engine admits the group, the Job is un-suspended with the admitted flavors' node
labels and tolerations in its pod template (what Kueue injects), and its own pods then take the
placeholders' places one by one (`allot.live.job_admission`).

Two annotations on the Job carry what must survive a restart:

* `allot.dev/job-admission`: the admission (workload, ClusterQueue, flavor by pod set and
  resource) while the Job runs admitted; removed when allot suspends it again;
* `allot.dev/job-original`: the template's node selector and tolerations before allot first
  changed them, so a Job suspended again and re-admitted on another flavor loses the first
  flavor's labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from msgspec.structs import replace

from allot.cluster.claims import claim_from_template
from allot.model.base import ObjectMeta, OwnerReference
from allot.model.batch import Job
from allot.model.codec import decode, to_data
from allot.model.core import Pod, PodResourceClaimStatus, PodStatus, Toleration
from allot.model.defaults import apply_defaults
from allot.model.kueue import (
    POD_GROUP_NAME_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    ResourceFlavor,
)
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
    job: Job, templates: Mapping[str, ResourceClaimTemplate]
) -> tuple[list[Pod], list[ResourceClaim], list[str]]:
    """The Job's placeholder pods, the claims their template entries get, and what is missing
    (a claim template that does not exist yet: its pods cannot be placed)."""
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
            if not entry.resource_claim_template_name:
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


def _flavor_placement(
    flavors: Iterable[str], known: Mapping[str, ResourceFlavor]
) -> tuple[dict[str, str], list[Toleration]]:
    labels: dict[str, str] = {}
    tolerations: list[Toleration] = []
    for name in sorted(set(flavors)):
        flavor = known.get(name)
        if flavor is None:
            continue
        labels.update(flavor.spec.node_labels)
        tolerations.extend(t for t in flavor.spec.tolerations if t not in tolerations)
    return labels, tolerations


def unsuspend_patch(
    job: Job,
    *,
    workload: str,
    cluster_queue: str,
    flavors: Mapping[str, str],
    known_flavors: Mapping[str, ResourceFlavor],
    admitted_at: float,
) -> dict[str, Any]:
    """The merge patch that starts an admitted Job: `suspend: false`, the flavors' node labels
    and tolerations added to the original template's, the admission recorded; the Job's
    resourceVersion is the precondition (a Job changed since allot read it is not started)."""
    selector, tolerations = original_placement(job)
    labels, flavor_tolerations = _flavor_placement(flavors.values(), known_flavors)
    wanted = {**selector, **labels}
    current = job.spec.template.spec.node_selector
    node_selector: dict[str, str | None] = {key: None for key in current if key not in wanted}
    node_selector.update(wanted)
    all_tolerations = list(tolerations) + [t for t in flavor_tolerations if t not in tolerations]
    annotations = {
        ADMISSION_ANNOTATION: json.dumps(
            {
                "workload": workload,
                "clusterQueue": cluster_queue,
                "flavors": dict(sorted(flavors.items())),
                "admittedAt": admitted_at,
            },
            sort_keys=True,
        )
    }
    if ORIGINAL_ANNOTATION not in job.metadata.annotations:
        annotations[ORIGINAL_ANNOTATION] = json.dumps(
            {"nodeSelector": selector, "tolerations": [to_data(t) for t in tolerations]}, sort_keys=True
        )
    return {
        "metadata": {"resourceVersion": job.metadata.resource_version, "annotations": annotations},
        "spec": {
            "suspend": False,
            "template": {
                "spec": {"nodeSelector": node_selector, "tolerations": [to_data(t) for t in all_tolerations]}
            },
        },
    }


def suspend_patch(job: Job) -> dict[str, Any]:
    """The merge patch that stops a Job allot no longer admits (its controller deletes its pods);
    the template keeps the flavor's labels until the next admission rewrites them. The Job's uid
    is the precondition: a Job re-created under the same name is not touched."""
    return {
        "metadata": {"uid": job.metadata.uid, "annotations": {ADMISSION_ANNOTATION: None}},
        "spec": {"suspend": True},
    }


def resource_flavors(flavors: Mapping[str, str]) -> dict[str, str]:
    """Resource -> flavor from an admission's `pod set/resource -> flavor` (a Job has one pod set)."""
    return {key.split("/", 1)[1]: name for key, name in sorted(flavors.items()) if "/" in key}

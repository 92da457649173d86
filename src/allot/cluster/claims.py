"""ResourceClaims as the cluster holds them: generated from templates, reserved for pods.

A pod entry that names a ResourceClaimTemplate gets its own claim, created
the way Kubernetes' resourceclaim controller does: named after the pod and
the entry (truncated proportionally when too long) with a five-character
suffix, annotated with the entry name, and owned by the pod. allot derives
the suffix from the pod's identity instead of drawing it at random, so the
same input always gives the same claim names.
"""

from __future__ import annotations

import hashlib
import uuid

from msgspec.structs import replace

from allot.model.base import ObjectMeta, OwnerReference
from allot.model.core import Pod
from allot.model.resource import (
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimTemplate,
)

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"
# The claim a scheduler makes for a pod's extended resources served by DRA: its annotation, and the
# entry name allot lists it under among the pod's claims (the pod names it in
# status.extendedResourceClaimStatus, not in spec.resourceClaims).
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
EXTENDED_CLAIM_ENTRY = "extended-resources"
# The API server's generateName alphabet (no vowels, no easily confused characters).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# 63-character names leave room for '-' and the five-character suffix.
_MAX_BASE_LENGTH = 57
_UID_NAMESPACE = uuid.UUID("6d2a3c1e-4b0f-4f43-9a7e-2f1f0d6a1c55")


def object_uid(kind: str, namespace: str, name: str) -> str:
    """A stable UID for objects whose manifest has none (hand-written input)."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))


def pod_uid(pod: Pod) -> str:
    return pod.metadata.uid or object_uid("Pod", pod.namespace, pod.name)


def _suffix(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def generated_claim_name(pod: Pod, entry: str) -> str:
    """The claim name the resourceclaim controller would give pod entry `entry`."""
    base = f"{pod.name}-{entry}-"
    if len(base) > _MAX_BASE_LENGTH:
        # Truncating only at the end would lose the entry name for long pod names.
        pod_part = pod.name[: len(pod.name) * _MAX_BASE_LENGTH // len(base)]
        entry_part = entry[: len(entry) * _MAX_BASE_LENGTH // len(base)]
        base = f"{pod_part}-{entry_part}-"
    return base + _suffix(f"{pod.namespace}/{pod.name}/{pod_uid(pod)}/{entry}")


def pod_owner(pod: Pod) -> OwnerReference:
    """The owner reference of claims created for `pod`: deleted with it."""
    return OwnerReference(
        api_version="v1",
        kind="Pod",
        name=pod.name,
        uid=pod_uid(pod),
        controller=True,
        block_owner_deletion=True,
    )


def claim_from_template(pod: Pod, entry: str, template: ResourceClaimTemplate) -> ResourceClaim:
    """A new, unallocated claim for `pod`'s entry, with the template's spec, labels and annotations."""
    name = generated_claim_name(pod, entry)
    owner = pod_owner(pod)
    annotations = {**template.spec.metadata.annotations, POD_CLAIM_NAME_ANNOTATION: entry}
    metadata = ObjectMeta(
        name=name,
        namespace=pod.namespace,
        uid=object_uid("ResourceClaim", pod.namespace, name),
        labels=dict(template.spec.metadata.labels),
        annotations=annotations,
        owner_references=(owner,),
    )
    return ResourceClaim(
        api_version="resource.k8s.io/v1",
        kind="ResourceClaim",
        metadata=metadata,
        spec=template.spec.spec,
    )


def pod_reference(pod: Pod) -> ResourceClaimConsumerReference:
    """How `status.reservedFor` names a pod."""
    return ResourceClaimConsumerReference(resource="pods", name=pod.name, uid=pod_uid(pod))


def is_owned_by(claim: ResourceClaim, pod: Pod) -> bool:
    uid = pod_uid(pod)
    return any(
        ref.kind == "Pod" and ref.uid == uid and ref.controller for ref in claim.metadata.owner_references
    )


def with_reservation(claim: ResourceClaim, pod: Pod) -> ResourceClaim:
    reference = pod_reference(pod)
    if reference in claim.status.reserved_for:
        return claim
    status = replace(claim.status, reserved_for=(*claim.status.reserved_for, reference))
    finalizers = claim.metadata.finalizers
    if DELETE_PROTECTION_FINALIZER not in finalizers:
        finalizers = (*finalizers, DELETE_PROTECTION_FINALIZER)
    return replace(claim, status=status, metadata=replace(claim.metadata, finalizers=finalizers))


def without_reservation(claim: ResourceClaim, pod: Pod) -> ResourceClaim:
    uid = pod_uid(pod)
    reserved = tuple(r for r in claim.status.reserved_for if r.uid != uid)
    return replace(claim, status=replace(claim.status, reserved_for=reserved))

"""Equivalence classes of pending pods: pods the scheduler cannot tell apart.

Pods stamped from one template (a Job's, a Deployment's) ask for the same
thing in the same way. When one of them fits nowhere, even after
preemption, the next one fails the same way until something leaves a node,
so the engine skips it instead of searching every node again. (Early
kube-scheduler kept an equivalence cache for the same reason.)

Two pods are equivalent when their namespace, priority, spec (bar the node
name and the names of their claims), annotations and claims' specs are equal, none of their claims is
allocated yet, and every plugin that reads more of the pod (a label, say)
reads the same from both. Pods of gangs and of Kueue workloads are never
compared: they are placed as groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import msgspec
from msgspec.structs import replace

from allot.cluster.state import ClusterState, PodInfo
from allot.model.core import Container, PodSpec
from allot.model.quantity import Quantity


def _encode_other(value: object) -> object:
    if isinstance(value, Quantity):
        return str(value.nano)
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


_encoder = msgspec.msgpack.Encoder(enc_hook=_encode_other)


@runtime_checkable
class PodReader(Protocol):
    """A plugin that reads something of the pod besides its spec, namespace and annotations."""

    def equivalence_key(self, state: ClusterState, info: PodInfo) -> str:
        """What this plugin reads from the pod (equal keys: the plugin treats both pods alike)."""
        ...


def equivalence_class(state: ClusterState, info: PodInfo, readers: Sequence[PodReader]) -> bytes | None:
    """The pod's class, or None when it has no peers (its claims are pinned or missing)."""
    if info.missing or info.pod.spec.node_name:
        return None
    claim_specs = []
    for _, key in info.claims:
        claim = state.claims.get(key)
        if claim is None or claim.status.allocation is not None or claim.status.reserved_for:
            return None
        claim_specs.append(claim.spec)
    extra = [reader.equivalence_key(state, info) for reader in readers]
    pod = info.pod
    return _encoder.encode(
        (pod.namespace, info.priority, _unnamed(pod.spec), pod.metadata.annotations, claim_specs, extra)
    )


def _unnamed(spec: PodSpec) -> PodSpec:
    """The spec without claim names, which differ per pod (generated claims); their specs count instead."""
    if not spec.resource_claims:
        return spec
    return replace(
        spec,
        resource_claims=(),
        containers=tuple(_without_claim_refs(c) for c in spec.containers),
        init_containers=tuple(_without_claim_refs(c) for c in spec.init_containers),
    )


def _without_claim_refs(container: Container) -> Container:
    if not container.resources.claims:
        return container
    return replace(container, resources=replace(container.resources, claims=()))

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

from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.model.core import Container, Pod, PodSpec
from allot.model.quantity import Quantity
from allot.model.resource import ResourceClaim


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


@runtime_checkable
class VersionedReader(Protocol):
    """A reader whose keys depend on the cluster too: keys are made again when the version changes."""

    def equivalence_version(self, state: ClusterState) -> object: ...


def versioned(readers: Sequence[PodReader]) -> tuple[VersionedReader, ...]:
    """The readers whose keys depend on the cluster (found once per profile: a runtime protocol
    check costs more than the key itself)."""
    return tuple(r for r in readers if isinstance(r, VersionedReader))


def _open_claims(state: ClusterState, info: PodInfo) -> list[ResourceClaim] | None:
    """The pod's claims if none is missing or already allocated (else the pod has no peers)."""
    if info.missing or info.pod.spec.node_name:
        return None
    claims = []
    for _, key in info.claims:
        claim = state.claims.get(key)
        if claim is None or claim.status.allocation is not None or claim.status.reserved_for:
            return None
        claims.append(claim)
    return claims


def _encode(
    state: ClusterState, info: PodInfo, claims: Sequence[ResourceClaim], readers: Sequence[PodReader]
) -> bytes:
    extra = [reader.equivalence_key(state, info) for reader in readers]
    pod = info.pod
    specs = [claim.spec for claim in claims]
    return _encoder.encode(
        (pod.namespace, info.priority, _unnamed(pod.spec), pod.metadata.annotations, specs, extra)
    )


class EquivalenceClasses:
    """Each pod's equivalence class, encoded again only when the pod's record or its claims change."""

    _LIMIT = 100_000

    def __init__(self) -> None:
        self._known: dict[str, tuple[Pod, tuple[ResourceClaim, ...], tuple[object, ...], bytes]] = {}

    def of(
        self,
        state: ClusterState,
        info: PodInfo,
        readers: Sequence[PodReader],
        versioned_readers: Sequence[VersionedReader],
    ) -> bytes | None:
        """`versioned_readers` are the `readers` that are also `VersionedReader`s."""
        claims = _open_claims(state, info)
        if claims is None:
            return None
        versions = tuple(r.equivalence_version(state) for r in versioned_readers)
        known = self._known.get(info.key)
        if (
            known is not None
            and known[0] is info.pod
            and known[2] == versions
            and len(known[1]) == len(claims)
            and all(a is b for a, b in zip(known[1], claims, strict=True))
        ):
            return known[3]
        encoded = _encode(state, info, claims, readers)
        if len(self._known) >= self._LIMIT:
            self._known.clear()
        self._known[info.key] = (info.pod, tuple(claims), versions, encoded)
        return encoded


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

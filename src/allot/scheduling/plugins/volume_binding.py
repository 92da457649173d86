"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable, on the node.

Pre-filter (unresolvable, in kube-scheduler's words): a claim that does not exist
(`persistentvolumeclaim "x" not found`; for a generic ephemeral volume, `waiting for
ephemeral volume controller to create ...`), is being deleted, was lost, or was not created
for the pod; and any claim not bound yet whose class binds immediately (or that names a
volume the PV controller has not bound it to yet): `pod has unbound immediate
PersistentVolumeClaims` (the PV controller binds those, not the scheduler).

Filter, per node (unresolvable):

* a bound claim's volume must exist (`node(s) unavailable due to one or more pvc(s) bound to
  non-existent pv(s)`) and its node affinity must admit the node (`node(s) had volume node
  affinity conflict`);
* claims of `WaitForFirstConsumer` classes, smallest request first: each takes the smallest
  available volume of its class that fits it (capacity, access modes, volume mode, label
  selector, node affinity on this node; a volume pre-bound to the claim wins), none taken
  twice; a claim left without one must be provisionable (its class has a provisioner other
  than `kubernetes.io/no-provisioner` and `allowedTopologies` admit the node), else
  `node(s) didn't find available persistent volumes to bind`. A claim already annotated
  `volume.kubernetes.io/selected-node` fits that node only.

Reserve: the chosen node's matches and provisions become the placement's volume decisions;
binding the pod binds each matched claim to its volume and annotates each claim left to
provisioning with the selected node (`allot.cluster.volumes`). Not done: CSIStorageCapacity
checks (capacity is assumed sufficient) and the StorageCapacityScoring score (alpha, off).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from allot.cluster.events import NODE_EVENTS, ClusterEventKind
from allot.cluster.selectors import label_selector_matches
from allot.cluster.state import ClusterState
from allot.model.storage import (
    ANN_SELECTED_NODE,
    NO_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolume,
    PersistentVolumeClaim,
)
from allot.scheduling import plugin_args
from allot.scheduling.framework import BoolArray, Cycle, Rejection
from allot.scheduling.status import SUCCESS, Code, Status, unresolvable
from allot.scheduling.volume_claims import (
    claim_refs,
    fully_bound,
    lookup,
    not_found,
    not_owned,
    volume_fits_node,
)

NAME = "VolumeBinding"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NODE_CONFLICT = "node(s) had volume node affinity conflict"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
AVAILABLE = "Available"
FILESYSTEM = "Filesystem"


@dataclass(slots=True)
class _Claims:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    # Claims of WaitForFirstConsumer classes not bound yet, smallest request first.
    delayed: list[PersistentVolumeClaim] = field(default_factory=list)
    # Per node index: (claim key, volume name or "" to provision) for the chosen node.
    decisions: dict[int, list[tuple[str, str]]] = field(default_factory=dict)


def _storage_request(claim: PersistentVolumeClaim) -> int:
    request = claim.spec.resources.requests.get("storage")
    return request.nano if request is not None else 0


def _bound_to(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    ref = volume.spec.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
        return False
    return not ref.uid or not claim.metadata.uid or ref.uid == claim.metadata.uid


def _matching_volume(
    state: ClusterState, claim: PersistentVolumeClaim, labels: dict[str, str], taken: set[str]
) -> PersistentVolume | None:
    """kube-scheduler's FindMatchingVolume on one node: the pre-bound volume, else the smallest fit."""
    requested = _storage_request(claim)
    class_name = claim.storage_class
    claim_mode = claim.spec.volume_mode or FILESYSTEM
    claim_attributes = claim.spec.volume_attributes_class_name or ""
    best: PersistentVolume | None = None
    best_size = 0
    for name in sorted(state.storage.volumes):
        volume = state.storage.volumes[name]
        if name in taken or volume.storage_class != class_name:
            continue
        if volume.spec.claim_ref is not None and not _bound_to(volume, claim):
            continue
        capacity = volume.spec.capacity.get("storage")
        size = capacity.nano if capacity is not None else 0
        if size < requested:
            continue
        if (volume.spec.volume_mode or FILESYSTEM) != claim_mode:
            continue
        if (volume.spec.volume_attributes_class_name or "") != claim_attributes:
            continue
        if volume.metadata.deletion_timestamp is not None:
            continue
        fits = volume_fits_node(volume, labels)
        if _bound_to(volume, claim):
            return volume if fits else None
        if volume.status.phase != AVAILABLE:
            continue
        if claim.spec.selector is not None and not label_selector_matches(
            claim.spec.selector, volume.metadata.labels
        ):
            continue
        if not fits or not set(claim.spec.access_modes) <= set(volume.spec.access_modes):
            continue
        if best is None or size < best_size:
            best, best_size = volume, size
    return best


class VolumeBinding:
    name = NAME
    # Volumes, claims and classes change what binds; node labels change node affinity.
    wake_on = NODE_EVENTS | {ClusterEventKind.VOLUME_CHANGED}

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> VolumeBinding:
        # bindTimeoutSeconds bounds how long kube-scheduler's PreBind waits for the PV
        # controller; allot's binder does not wait (docs/placement.md), so it is only checked.
        plugin_args.volume_binding(args)
        return cls()

    def _data(self, cycle: Cycle) -> _Claims:
        data = cycle.data.get(NAME)
        if not isinstance(data, _Claims):
            data = cycle.data[NAME] = _Claims()
        return data

    def pre_filter(self, cycle: Cycle) -> Status:
        state = cycle.state
        pod = cycle.pod.pod
        data = self._data(cycle)
        unbound_immediate = False
        for ref in claim_refs(pod):
            claim = lookup(state, pod, ref)
            if claim is None:
                if ref.ephemeral:
                    return unresolvable(
                        NAME,
                        f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{ref.claim_name}"',
                    )
                return unresolvable(NAME, not_found(ref.claim_name))
            if claim.status.phase == "Lost":
                return unresolvable(
                    NAME,
                    f'persistentvolumeclaim "{claim.name}" bound to non-existent persistentvolume "{claim.spec.volume_name}"',
                )
            if claim.metadata.deletion_timestamp is not None:
                return unresolvable(NAME, f'persistentvolumeclaim "{claim.name}" is being deleted')
            if ref.ephemeral:
                problem = not_owned(pod, claim)
                if problem is not None:
                    return unresolvable(NAME, problem)
            if fully_bound(claim):
                data.bound.append(claim)
                continue
            storage_class = state.storage.classes.get(claim.storage_class) if claim.storage_class else None
            delayed = (
                storage_class is not None and storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER
            )
            if delayed and not claim.spec.volume_name:
                data.delayed.append(claim)
            else:
                unbound_immediate = True
        if unbound_immediate:
            return unresolvable(NAME, UNBOUND_IMMEDIATE)
        data.delayed.sort(key=_storage_request)
        return SUCCESS

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        data = self._data(cycle)
        if not data.bound and not data.delayed:
            return []
        state = cycle.state
        by_reasons: dict[tuple[str, ...], BoolArray] = {}
        for raw in np.flatnonzero(candidates):
            index = int(raw)
            reasons = self._check(state, data, index)
            if reasons:
                mask = by_reasons.setdefault(reasons, np.zeros_like(candidates))
                mask[index] = True
        rejections: list[Rejection] = []
        for reasons, mask in sorted(by_reasons.items()):
            for reason in reasons:
                rejections.append(Rejection(reason, mask, Code.UNRESOLVABLE))
        return rejections

    def _check(self, state: ClusterState, data: _Claims, index: int) -> tuple[str, ...]:
        info = state.nodes.infos[index]
        labels = info.labels
        node_conflict = missing_volume = bind_conflict = False
        for claim in data.bound:
            volume = state.storage.volumes.get(claim.spec.volume_name)
            if volume is None:
                missing_volume = True
                break
            if not volume_fits_node(volume, labels):
                node_conflict = True
                break
        decisions: list[tuple[str, str]] = []
        if data.delayed:
            bind_conflict = not self._bindable(state, data.delayed, info.name, labels, decisions)
        if not (node_conflict or missing_volume or bind_conflict):
            data.decisions[index] = decisions
        reasons = []
        if node_conflict:
            reasons.append(NODE_CONFLICT)
        if bind_conflict:
            reasons.append(BIND_CONFLICT)
        if missing_volume:
            reasons.append(PV_NOT_EXIST)
        return tuple(reasons)

    def _bindable(
        self,
        state: ClusterState,
        claims: list[PersistentVolumeClaim],
        node: str,
        labels: dict[str, str],
        decisions: list[tuple[str, str]],
    ) -> bool:
        to_match: list[PersistentVolumeClaim] = []
        to_provision: list[PersistentVolumeClaim] = []
        for claim in claims:
            selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is not None:
                if selected != node:
                    return False
                to_provision.append(claim)
            else:
                to_match.append(claim)
        taken: set[str] = set()
        for claim in to_match:
            volume = _matching_volume(state, claim, labels, taken)
            if volume is None:
                to_provision.append(claim)
                continue
            taken.add(volume.name)
            decisions.append((claim.key, volume.name))
        for claim in to_provision:
            storage_class = state.storage.classes.get(claim.storage_class)
            if storage_class is None or storage_class.provisioner in ("", NO_PROVISIONER):
                return False
            terms = storage_class.allowed_topologies
            if terms and not any(
                all(labels.get(r.key) in r.values for r in term.match_label_expressions) for term in terms
            ):
                return False
            decisions.append((claim.key, ""))
        return True

    def reserve(self, cycle: Cycle, index: int) -> Status:
        data = self._data(cycle)
        cycle.volumes = list(data.decisions.get(index, ()))
        return SUCCESS

"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable, on the node.

Pre-filter (unresolvable, in kube-scheduler's words): a claim that does not exist
(`persistentvolumeclaim "x" not found`; for a generic ephemeral volume, `waiting for
ephemeral volume controller to create ...`), is being deleted, was lost, or was not created
for the pod; and any claim not bound yet whose class binds immediately (or that names a
volume the PV controller has not bound it to yet): `pod has unbound immediate
PersistentVolumeClaims` (the PV controller binds those, not the scheduler).

Filter, per node (unresolvable):

* a bound claim's volume must exist (`node(s) unavailable due to one or more pvc(s) bound to
  non-existent pv(s)`) and its node affinity must admit the node (`node(s) didn't match
  PersistentVolume's node affinity`);
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
from allot.cluster.state import ClusterState
from allot.cluster.volumes import fully_bound, matching_volume, storage_request, volume_fits_node
from allot.model.storage import (
    ANN_SELECTED_NODE,
    NO_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolumeClaim,
)
from allot.scheduling import plugin_args
from allot.scheduling.framework import BoolArray, Cycle, Rejection
from allot.scheduling.status import SUCCESS, Code, Status, unresolvable
from allot.scheduling.volume_claims import claim_refs, lookup, not_found, not_owned

NAME = "VolumeBinding"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


@dataclass(slots=True)
class _Claims:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    # Claims of WaitForFirstConsumer classes not bound yet, smallest request first.
    delayed: list[PersistentVolumeClaim] = field(default_factory=list)
    # Per node index: (claim key, volume name or "" to provision) for the chosen node.
    decisions: dict[int, list[tuple[str, str]]] = field(default_factory=dict)


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
        if not pod.spec.volumes:
            return SUCCESS
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
        data.delayed.sort(key=storage_request)
        return SUCCESS

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        data = cycle.data.get(NAME)
        if not isinstance(data, _Claims) or (not data.bound and not data.delayed):
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
            volume = matching_volume(state.storage.volumes, claim, labels, taken)
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
        data = cycle.data.get(NAME)
        cycle.volumes = list(data.decisions.get(index, ())) if isinstance(data, _Claims) else []
        return SUCCESS

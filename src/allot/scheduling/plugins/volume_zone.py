"""VolumeZone: a pod's bound volumes keep it in their zone and region.

A PersistentVolume labelled `topology.kubernetes.io/zone` or `/region` (or the beta
`failure-domain.beta.kubernetes.io/` labels) takes only nodes whose label of the same key
(or its GA form) has one of the volume's values (several joined by `__`). Nodes with none of
those labels are not restricted (single-zone clusters). Claims waiting for their first
consumer are skipped; an unbound claim of any other class, or a claim or volume that does not
exist, is unresolvable.
"""

from __future__ import annotations

import numpy as np

from allot.cluster.events import NODE_EVENTS, ClusterEventKind
from allot.model.storage import WAIT_FOR_FIRST_CONSUMER
from allot.scheduling.framework import BoolArray, Cycle, Rejection
from allot.scheduling.status import SUCCESS, Code, Status, unresolvable
from allot.scheduling.volume_claims import claim_refs, lookup, not_found

NAME = "VolumeZone"
REASON = "node(s) had no available volume zone"
_BETA_TO_GA = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
TOPOLOGY_LABELS = (*_BETA_TO_GA, *_BETA_TO_GA.values())
_STATE = "VolumeZone/topologies"


class VolumeZone:
    name = NAME
    wake_on = NODE_EVENTS | {ClusterEventKind.VOLUME_CHANGED}

    def pre_filter(self, cycle: Cycle) -> Status:
        state = cycle.state
        pod = cycle.pod.pod
        if not pod.spec.volumes:
            return SUCCESS
        topologies: list[tuple[str, frozenset[str]]] = []
        cycle.data[_STATE] = topologies
        for ref in claim_refs(pod):
            claim = lookup(state, pod, ref)
            if claim is None:
                return unresolvable(NAME, not_found(ref.claim_name))
            volume_name = claim.spec.volume_name
            if not volume_name:
                class_name = claim.storage_class
                if not class_name:
                    return unresolvable(NAME, "PersistentVolumeClaim had no pv name and storageClass name")
                storage_class = state.storage.classes.get(class_name)
                if storage_class is None:
                    return unresolvable(NAME, f'storageclass.storage.k8s.io "{class_name}" not found')
                if storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return unresolvable(NAME, "PersistentVolume had no name")
            volume = state.storage.volumes.get(volume_name)
            if volume is None:
                return unresolvable(NAME, f'persistentvolume "{volume_name}" not found')
            for key in TOPOLOGY_LABELS:
                value = volume.metadata.labels.get(key)
                if value is not None:
                    topologies.append((key, frozenset(value.split("__"))))
        return SUCCESS

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        topologies = cycle.data.get(_STATE)
        if not topologies:
            return []
        assert isinstance(topologies, list)
        rejected = np.zeros_like(candidates)
        for index in np.flatnonzero(candidates):
            labels = cycle.state.nodes.infos[int(index)].labels
            if not any(key in labels for key in TOPOLOGY_LABELS):
                continue
            for key, values in topologies:
                value = labels.get(key)
                if value is None:
                    value = labels.get(_BETA_TO_GA.get(key, key))
                if value is None or value not in values:
                    rejected[index] = True
                    break
        return [Rejection(REASON, rejected, Code.UNRESOLVABLE)] if rejected.any() else []

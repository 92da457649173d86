"""The selector PodTopologySpread's default constraints count a pod's peers with.

A pod without `topologySpreadConstraints` of its own is spread by the profile's default
constraints (kube-scheduler's system defaults unless configured), but only if it has peers
to spread from: the selector is built, as kube-scheduler's `DefaultSelector` does, from

* every Service in the pod's namespace whose selector matches the pod (their label maps
  merged, in name order);
* the pod's controller (the owner reference marked `controller`): a ReplicationController's
  selector map is merged in; a ReplicaSet's or StatefulSet's (`apps/v1`) label selector is
  added as requirements.

No Service and no such controller (or none of them in the input): no selector, and the
default constraints do not apply.
"""

from __future__ import annotations

from allot.cluster.state import ClusterState
from allot.model.base import LabelSelector, LabelSelectorRequirement
from allot.model.core import Pod

# The system default constraints (PodTopologySpreadArgs defaultingType: System).
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULTS = ((HOSTNAME, 3), (ZONE, 5))


def _requirements(selector: LabelSelector) -> list[LabelSelectorRequirement]:
    found = [
        LabelSelectorRequirement(key=key, operator="In", values=(value,))
        for key, value in sorted(selector.match_labels.items())
    ]
    found.extend(selector.match_expressions)
    return found


def default_selector(state: ClusterState, pod: Pod) -> LabelSelector | None:
    """The pod's peers as kube-scheduler's DefaultSelector finds them; None when it finds none."""
    labels = pod.metadata.labels
    merged: dict[str, str] = {}
    for key in sorted(state.services):
        service = state.services[key]
        selector = service.spec.selector
        if service.namespace != pod.namespace or selector is None:
            continue
        if all(labels.get(k) == v for k, v in selector.items()):
            merged.update(selector)
    expressions: list[LabelSelectorRequirement] = []
    owner = next((ref for ref in pod.metadata.owner_references if ref.controller), None)
    if owner is not None:
        key = f"{pod.namespace}/{owner.name}"
        if owner.api_version == "v1" and owner.kind == "ReplicationController":
            controller = state.replication_controllers.get(key)
            if controller is not None and controller.spec.selector:
                merged.update(controller.spec.selector)
        elif owner.api_version == "apps/v1" and owner.kind in ("ReplicaSet", "StatefulSet"):
            found = (state.replica_sets if owner.kind == "ReplicaSet" else state.stateful_sets).get(key)
            if found is not None and found.spec.selector is not None:
                expressions = _requirements(found.spec.selector)
    if not merged and not expressions:
        return None
    return LabelSelector(match_labels=merged, match_expressions=tuple(expressions))

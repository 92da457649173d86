"""Storage as placement sees it: claims, volumes, classes and CSI nodes, and the bindings made.

`VolumeState` holds PersistentVolumeClaims (by `namespace/name`), PersistentVolumes,
StorageClasses and CSINodes (by name). Where allot plays the cluster's controllers
(simulator, planner) it also does what they would do with a new object:

* a claim without a class gets the default StorageClass (the DefaultStorageClass admission
  plugin; the newest default class when several are marked, then the first by name);
* a pod's generic ephemeral volume gets its claim `<pod>-<volume>`, owned by the pod (the
  ephemeral volume controller);
* a volume without a status phase is `Available` (the PV controller's first step), and a
  claim the PV controller would bind before any pod uses it is bound: one that names its
  volume (`spec.volumeName`), and one of a class that binds immediately, to the smallest
  available volume that fits it (dynamic provisioning of immediate claims is not emulated:
  such a claim stays unbound, and pods using it wait).

Placement's decisions for claims that wait for their first consumer are applied here,
journaled like every change of the state: a claim matched to an available volume is bound
to it (claim `volumeName` and `pv.kubernetes.io/bind-completed`, volume `claimRef`, both
`Bound`: what the scheduler's PreBind and the PV controller do together), and a claim left to
dynamic provisioning is annotated `volume.kubernetes.io/selected-node`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from msgspec.structs import replace

from allot.cluster.claims import object_uid, pod_owner
from allot.cluster.journal import Journal
from allot.cluster.selectors import label_selector_matches
from allot.dra.errors import AllocationError
from allot.dra.nodes import selector_matches
from allot.model.base import ObjectMeta
from allot.model.core import Node, Pod
from allot.model.storage import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    WAIT_FOR_FIRST_CONSUMER,
    CSINode,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)

AVAILABLE = "Available"
BOUND = "Bound"
FILESYSTEM = "Filesystem"


def storage_request(claim: PersistentVolumeClaim) -> int:
    request = claim.spec.resources.requests.get("storage")
    return request.nano if request is not None else 0


def fully_bound(claim: PersistentVolumeClaim) -> bool:
    """Bound to a volume and the binding completed (the PV controller's annotation; a claim a
    hand-written manifest shows `Bound` counts too)."""
    if not claim.spec.volume_name:
        return False
    return ANN_BIND_COMPLETED in claim.metadata.annotations or claim.status.phase == BOUND


def volume_fits_node(volume: PersistentVolume, labels: Mapping[str, str]) -> bool:
    """A volume's required node affinity against a node's labels (matchFields see no name, as
    upstream's CheckNodeAffinity builds the node from labels alone)."""
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return True
    try:
        return selector_matches(affinity.required, Node(metadata=ObjectMeta(labels=dict(labels))))
    except AllocationError:
        return False


def bound_to(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """Whether the volume's claimRef names this claim."""
    ref = volume.spec.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
        return False
    return not ref.uid or not claim.metadata.uid or ref.uid == claim.metadata.uid


def matching_volume(
    volumes: Mapping[str, PersistentVolume],
    claim: PersistentVolumeClaim,
    labels: Mapping[str, str] | None,
    taken: set[str],
) -> PersistentVolume | None:
    """Upstream's FindMatchingVolume: the volume pre-bound to the claim, else the smallest
    available one of its class that fits it (capacity, volume mode and attributes class, label
    selector; on a node, given by `labels`, also node affinity and access modes)."""
    requested = storage_request(claim)
    class_name = claim.storage_class
    claim_mode = claim.spec.volume_mode or FILESYSTEM
    claim_attributes = claim.spec.volume_attributes_class_name or ""
    best: PersistentVolume | None = None
    best_size = 0
    for name in sorted(volumes):
        volume = volumes[name]
        if name in taken or volume.storage_class != class_name:
            continue
        if volume.spec.claim_ref is not None and not bound_to(volume, claim):
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
        fits = labels is None or volume_fits_node(volume, labels)
        if bound_to(volume, claim):
            return volume if fits else None
        if volume.status.phase != AVAILABLE:
            continue
        if claim.spec.selector is not None and not label_selector_matches(
            claim.spec.selector, volume.metadata.labels
        ):
            continue
        if not fits or (
            labels is not None and not set(claim.spec.access_modes) <= set(volume.spec.access_modes)
        ):
            continue
        if best is None or size < best_size:
            best, best_size = volume, size
    return best


def default_class(classes: Iterable[StorageClass]) -> str | None:
    """The class the DefaultStorageClass admission plugin gives a claim that names none."""
    defaults = [c for c in classes if c.is_default]
    if not defaults:
        return None
    newest = max(c.metadata.creation_timestamp or "" for c in defaults)
    return min(c.name for c in defaults if (c.metadata.creation_timestamp or "") == newest)


def ephemeral_claim(pod: Pod, volume_name: str, claim: PersistentVolumeClaim) -> PersistentVolumeClaim:
    """The claim the ephemeral volume controller creates for a pod's generic ephemeral volume."""
    name = f"{pod.name}-{volume_name}"
    metadata = replace(
        claim.metadata,
        name=name,
        namespace=pod.namespace,
        uid=object_uid("PersistentVolumeClaim", pod.namespace, name),
        owner_references=(pod_owner(pod),),
    )
    return replace(claim, api_version="v1", kind="PersistentVolumeClaim", metadata=metadata)


class VolumeState:
    """See the module docstring."""

    def __init__(
        self,
        journal: Journal,
        *,
        claims: Iterable[PersistentVolumeClaim] = (),
        volumes: Iterable[PersistentVolume] = (),
        classes: Iterable[StorageClass] = (),
        csi_nodes: Iterable[CSINode] = (),
        as_controllers: bool = True,
    ) -> None:
        self.journal = journal
        self.as_controllers = as_controllers
        self.classes: dict[str, StorageClass] = {c.name: c for c in classes}
        self.csi_nodes: dict[str, CSINode] = {n.name: n for n in csi_nodes}
        self.volumes: dict[str, PersistentVolume] = {}
        for volume in volumes:
            if as_controllers and not volume.status.phase:
                volume = replace(volume, status=replace(volume.status, phase=AVAILABLE))
            self.volumes[volume.name] = volume
        self.claims: dict[str, PersistentVolumeClaim] = {}
        for claim in claims:
            self.claims[claim.key] = self._admitted(claim)
        if as_controllers:
            self._bind_ahead_of_pods()

    def _bind_ahead_of_pods(self) -> None:
        """What the PV controller binds without a pod: pre-bound claims, and immediate ones to a match."""
        for key in sorted(self.claims):
            claim = self.claims[key]
            if fully_bound(claim):
                continue
            name = claim.spec.volume_name
            if name:
                volume = self.volumes.get(name)
                if volume is not None and (volume.spec.claim_ref is None or bound_to(volume, claim)):
                    self.bind(key, name)
                continue
            storage_class = self.classes.get(claim.storage_class)
            if storage_class is not None and storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue
            volume = matching_volume(self.volumes, claim, None, set())
            if volume is not None:
                self.bind(key, volume.name)

    def _admitted(self, claim: PersistentVolumeClaim) -> PersistentVolumeClaim:
        if not self.as_controllers or claim.spec.storage_class_name is not None or claim.storage_class:
            return claim
        name = default_class(self.classes.values())
        if name is None:
            return claim
        return replace(claim, spec=replace(claim.spec, storage_class_name=name))

    def add_ephemeral_claims(self, pod: Pod) -> None:
        """Create the claims of the pod's generic ephemeral volumes that do not exist yet (journaled)."""
        for volume in pod.spec.volumes:
            template = volume.ephemeral.volume_claim_template if volume.ephemeral is not None else None
            if template is None:
                continue
            key = f"{pod.namespace}/{pod.name}-{volume.name}"
            if key in self.claims:
                continue
            base = PersistentVolumeClaim(
                metadata=ObjectMeta(
                    labels=dict(template.metadata.labels), annotations=dict(template.metadata.annotations)
                ),
                spec=template.spec,
            )
            self._put_claim(self._admitted(ephemeral_claim(pod, volume.name, base)))

    def remove_owned_claims(self, pod: Pod) -> None:
        """Delete the ephemeral volume claims the pod owns (journaled): they go with the pod."""
        for volume in pod.spec.volumes:
            if volume.ephemeral is None:
                continue
            key = f"{pod.namespace}/{pod.name}-{volume.name}"
            claim = self.claims.get(key)
            owner = pod_owner(pod)
            if claim is not None and any(
                ref.uid == owner.uid and ref.controller for ref in claim.metadata.owner_references
            ):
                self._delete_claim(key)

    # -- decisions (journaled) ---------------------------------------------------------------

    def _put_claim(self, claim: PersistentVolumeClaim) -> None:
        self.journal.put(self.claims, claim.key, claim)

    def _delete_claim(self, key: str) -> None:
        self.journal.pop(self.claims, key)

    def _put_volume(self, volume: PersistentVolume) -> None:
        self.journal.put(self.volumes, volume.name, volume)

    def select_node(self, claim_key: str, node: str) -> None:
        """A claim left to dynamic provisioning on `node`: annotate it as kube-scheduler does."""
        claim = self.claims[claim_key]
        annotations = {**claim.metadata.annotations, ANN_SELECTED_NODE: node}
        self._put_claim(replace(claim, metadata=replace(claim.metadata, annotations=annotations)))

    def bind(self, claim_key: str, volume_name: str) -> None:
        """A claim matched to an available volume: both bound, as the PV controller completes it."""
        claim = self.claims[claim_key]
        volume = self.volumes[volume_name]
        reference = ObjectReference(
            api_version="v1",
            kind="PersistentVolumeClaim",
            namespace=claim.namespace,
            name=claim.name,
            uid=claim.metadata.uid or object_uid("PersistentVolumeClaim", claim.namespace, claim.name),
        )
        self._put_volume(
            replace(
                volume,
                spec=replace(volume.spec, claim_ref=reference),
                status=replace(volume.status, phase=BOUND),
            )
        )
        annotations = {**claim.metadata.annotations, ANN_BIND_COMPLETED: "yes"}
        self._put_claim(
            replace(
                claim,
                metadata=replace(claim.metadata, annotations=annotations),
                spec=replace(claim.spec, volume_name=volume_name),
                status=replace(
                    claim.status,
                    phase=BOUND,
                    access_modes=volume.spec.access_modes,
                    capacity=dict(volume.spec.capacity),
                ),
            )
        )

    # -- what the API says (live clusters) ----------------------------------------------------

    def replace_all(
        self,
        *,
        claims: Iterable[PersistentVolumeClaim] | None = None,
        volumes: Iterable[PersistentVolume] | None = None,
        classes: Iterable[StorageClass] | None = None,
        csi_nodes: Iterable[CSINode] | None = None,
    ) -> None:
        if classes is not None:
            self.classes = {c.name: c for c in classes}
        if csi_nodes is not None:
            self.csi_nodes = {n.name: n for n in csi_nodes}
        if volumes is not None:
            self.volumes = {v.name: v for v in volumes}
        if claims is not None:
            self.claims = {c.key: c for c in claims}

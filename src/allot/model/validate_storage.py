"""PersistentVolumeClaim, PersistentVolume, StorageClass and CSINode validation.

The rules the API server applies to the fields placement reads, in its wording
(pkg/apis/core/validation and pkg/apis/storage/validation). Nothing here raises.
"""

from __future__ import annotations

from allot.model.core import PersistentVolumeClaimSpec
from allot.model.errors import Location, ManifestError
from allot.model.storage import (
    IMMEDIATE,
    WAIT_FOR_FIRST_CONSUMER,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from allot.model.validate_common import Problems, qualified_name
from allot.model.validate_core import check_node_selector, check_resource_list
from allot.model.validate_pod_placement import ACCESS_MODES
from allot.model.validate_registry import register

VOLUME_MODES = ("Block", "Filesystem")
BINDING_MODES = (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER)
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")


def _access_modes(problems: Problems, path: str, modes: tuple[str, ...]) -> None:
    if not modes:
        problems.required(path, "at least 1 access mode is required")
    for i, mode in enumerate(modes):
        problems.enum(f"{path}[{i}]", mode, ACCESS_MODES)
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        problems.forbidden(path, "may not use ReadWriteOncePod with other access modes")


def check_claim_spec(problems: Problems, path: str, spec: PersistentVolumeClaimSpec) -> None:
    _access_modes(problems, f"{path}.accessModes", spec.access_modes)
    problems.label_selector(f"{path}.selector", spec.selector)
    if "storage" not in spec.resources.requests:
        problems.required(f"{path}.resources[storage]")
    check_resource_list(problems, f"{path}.resources.requests", spec.resources.requests)
    if spec.volume_mode is not None:
        problems.enum(f"{path}.volumeMode", spec.volume_mode, VOLUME_MODES)


@register(PersistentVolumeClaim)
def validate_claim(claim: PersistentVolumeClaim, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    check_claim_spec(problems, "spec", claim.spec)
    return problems.errors


@register(PersistentVolume)
def validate_volume(volume: PersistentVolume, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    spec = volume.spec
    _access_modes(problems, "spec.accessModes", spec.access_modes)
    if "storage" not in spec.capacity:
        problems.required("spec.capacity", "must specify storage")
    check_resource_list(problems, "spec.capacity", spec.capacity)
    if spec.volume_mode is not None:
        problems.enum("spec.volumeMode", spec.volume_mode, VOLUME_MODES)
    if spec.persistent_volume_reclaim_policy:
        problems.enum(
            "spec.persistentVolumeReclaimPolicy", spec.persistent_volume_reclaim_policy, RECLAIM_POLICIES
        )
    affinity = spec.node_affinity
    if affinity is not None:
        if affinity.required is None:
            problems.required("spec.nodeAffinity.required", "must specify required node constraints")
        else:
            check_node_selector(problems, "spec.nodeAffinity.required", affinity.required)
    if spec.csi is not None:
        if not spec.csi.driver:
            problems.required("spec.csi.driver")
        if not spec.csi.volume_handle:
            problems.required("spec.csi.volumeHandle")
    return problems.errors


@register(StorageClass)
def validate_storage_class(storage_class: StorageClass, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    if not storage_class.provisioner:
        problems.required("provisioner")
    else:
        problems.each("provisioner", storage_class.provisioner, qualified_name(storage_class.provisioner))
    if storage_class.volume_binding_mode is not None:
        problems.enum("volumeBindingMode", storage_class.volume_binding_mode, BINDING_MODES)
    if storage_class.reclaim_policy is not None:
        problems.enum("reclaimPolicy", storage_class.reclaim_policy, ("Delete", "Retain"))
    for t, term in enumerate(storage_class.allowed_topologies):
        at = f"allowedTopologies[{t}]"
        if not term.match_label_expressions:
            problems.required(f"{at}.matchLabelExpressions", "must have at least one label value requirement")
        for r, requirement in enumerate(term.match_label_expressions):
            problems.label_name(f"{at}.matchLabelExpressions[{r}].key", requirement.key)
            if not requirement.values:
                problems.required(
                    f"{at}.matchLabelExpressions[{r}].values", "must specify as least one value"
                )
    return problems.errors


@register(CSINode)
def validate_csinode(node: CSINode, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    seen: set[str] = set()
    for i, driver in enumerate(node.spec.drivers):
        at = f"spec.drivers[{i}]"
        if not driver.name:
            problems.required(f"{at}.name")
        elif driver.name in seen:
            problems.duplicate(f"{at}.name", driver.name)
        seen.add(driver.name)
        if (
            driver.allocatable is not None
            and driver.allocatable.count is not None
            and driver.allocatable.count < 0
        ):
            problems.invalid(
                f"{at}.allocatable.count", driver.allocatable.count, "must be greater than or equal to 0"
            )
    return problems.errors

"""core/v1 validation: Node and Pod, plus the taint, toleration, node-selector
and resource-list rules that Kueue's ResourceFlavor and DRA's ResourceSlice reuse.

Follows k8s.io/kubernetes pkg/apis/core/validation for the fields allot
models; wording is upstream's. Nothing here raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from allot.model.core import (
    Container,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorTerm,
    Pod,
    PodSpec,
    ResourceRequirements,
    Taint,
    Toleration,
)
from allot.model.errors import Location, ManifestError
from allot.model.quantity import Quantity
from allot.model.validate_common import INT64, Problems, dns_label, dns_subdomain, label_value
from allot.model.validate_registry import register

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


# --- taints and tolerations ----------------------------------------------------------


def check_taints(problems: Problems, path: str, taints: Sequence[Taint]) -> None:
    """Node taints: key, value, a required effect, unique by (key, effect)."""
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        at = f"{path}[{i}]"
        problems.label_name(f"{at}.key", taint.key)
        problems.label_value(f"{at}.value", taint.value)
        if not taint.effect:
            problems.required(f"{at}.effect")
        else:
            problems.enum(f"{at}.effect", taint.effect, TAINT_EFFECTS)
        if (taint.key, taint.effect) in seen:
            problems.duplicate(
                at, f"{taint.key}:{taint.effect}", "taints must be unique by key and effect pair"
            )
        seen.add((taint.key, taint.effect))


def check_tolerations(problems: Problems, path: str, tolerations: Sequence[Toleration]) -> None:
    for i, toleration in enumerate(tolerations):
        at = f"{path}[{i}]"
        if toleration.key:
            problems.label_name(f"{at}.key", toleration.key)
        elif toleration.operator != "Exists":
            problems.invalid(
                f"{at}.operator",
                toleration.operator,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"',
            )
        if toleration.toleration_seconds is not None and toleration.effect != "NoExecute":
            problems.invalid(
                f"{at}.effect",
                toleration.effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            )
        if toleration.operator in ("Equal", ""):
            problems.label_value(f"{at}.value", toleration.value)
        elif toleration.operator == "Exists":
            if toleration.value:
                problems.invalid(
                    f"{at}.value", toleration.value, "value must be empty when `operator` is 'Exists'"
                )
        else:
            problems.unsupported(f"{at}.operator", toleration.operator, TOLERATION_OPERATORS)
        if toleration.effect:
            problems.enum(f"{at}.effect", toleration.effect, TAINT_EFFECTS)


# --- node selectors --------------------------------------------------------------------


def check_node_selector_term(problems: Problems, path: str, term: NodeSelectorTerm) -> None:
    for i, requirement in enumerate(term.match_expressions):
        at = f"{path}.matchExpressions[{i}]"
        operator, values = requirement.operator, requirement.values
        if operator in ("In", "NotIn"):
            if not values:
                problems.required(f"{at}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                problems.forbidden(
                    f"{at}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                )
        elif operator in ("Gt", "Lt"):
            if len(values) != 1:
                problems.required(
                    f"{at}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"
                )
        else:
            problems.invalid(f"{at}.operator", operator, "not a valid selector operator")
        problems.label_name(f"{at}.key", requirement.key)
        for v, value in enumerate(values):
            problems.each(f"{at}.values[{v}]", value, label_value(value))
    for i, requirement in enumerate(term.match_fields):
        at = f"{path}.matchFields[{i}]"
        if requirement.key != "metadata.name":
            problems.invalid(f"{at}.key", requirement.key, "not a valid field selector key")
        if requirement.operator not in ("In", "NotIn"):
            problems.invalid(f"{at}.operator", requirement.operator, "not a valid selector operator")
        elif len(requirement.values) != 1:
            problems.required(
                f"{at}.values",
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )


def check_node_selector(problems: Problems, path: str, selector: NodeSelector) -> None:
    if not selector.node_selector_terms:
        problems.required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")
    for i, term in enumerate(selector.node_selector_terms):
        check_node_selector_term(problems, f"{path}.nodeSelectorTerms[{i}]", term)


def check_node_affinity(problems: Problems, path: str, affinity: NodeAffinity) -> None:
    """Required terms as a node selector; preferred terms weighted 1-100."""
    required = affinity.required_during_scheduling_ignored_during_execution
    if required is not None:
        check_node_selector(problems, f"{path}.requiredDuringSchedulingIgnoredDuringExecution", required)
    for i, preferred in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        at = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not 1 <= preferred.weight <= 100:
            problems.invalid(f"{at}.weight", preferred.weight, "must be in the range 1-100")
        check_node_selector_term(problems, f"{at}.preference", preferred.preference)


def check_node_name(problems: Problems, path: str, name: str) -> None:
    problems.each(path, name, dns_subdomain(name))


# --- resource lists ----------------------------------------------------------------------


def is_native_resource(name: str) -> bool:
    """cpu, memory, ... and anything in the kubernetes.io domain; the rest are extended resources."""
    return "/" not in name or "kubernetes.io/" in name


def _overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not name.startswith("hugepages-")


def check_quantity(problems: Problems, path: str, name: str, value: Quantity) -> None:
    """ValidateResourceQuantityValue: never negative; whole numbers for extended resources."""
    problems.nonnegative(path, value)
    if not is_native_resource(name) and not value.is_integer():
        problems.invalid(path, value, "must be an integer")


def check_resource_list(problems: Problems, path: str, resources: Mapping[str, Quantity]) -> None:
    for name, value in resources.items():
        check_quantity(problems, f"{path}[{name}]", name, value)


def check_requirements(problems: Problems, path: str, resources: ResourceRequirements) -> None:
    limits, requests = resources.limits, resources.requests
    check_resource_list(problems, f"{path}.limits", limits)
    for name, value in requests.items():
        at = f"{path}.requests[{name}]"
        limit = limits.get(name)
        if value is not limit:  # a request defaulted from its limit was checked as the limit
            check_quantity(problems, at, name, value)
        if limit is not None:
            if value != limit and not _overcommit_allowed(name):
                problems.invalid(at, value, f"must be equal to {name} limit of {limit.canonical()}")
            elif value > limit:
                problems.invalid(
                    at, value, f"must be less than or equal to {name} limit of {limit.canonical()}"
                )
        elif not _overcommit_allowed(name):
            problems.required(f"{path}.limits[{name}]", "Limit must be set for non overcommitable resources")


# --- Node -------------------------------------------------------------------------------------


@register(Node)
def validate_node(node: Node, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    check_taints(problems, "spec.taints", node.spec.taints)
    status = node.status
    check_resource_list(problems, "status.capacity", status.capacity)
    if status.allocatable != status.capacity:  # allocatable defaulted from capacity was checked already
        check_resource_list(problems, "status.allocatable", status.allocatable)
    return problems.errors


# --- Pod ----------------------------------------------------------------------------------------


def _pod_claims(problems: Problems, spec: PodSpec) -> set[str]:
    names: set[str] = set()
    for i, claim in enumerate(spec.resource_claims):
        at = f"spec.resourceClaims[{i}]"
        if not claim.name:
            problems.required(f"{at}.name")
        elif claim.name in names:
            problems.duplicate(f"{at}.name", claim.name)
        else:
            problems.each(f"{at}.name", claim.name, dns_label(claim.name))
            names.add(claim.name)
        by_name, by_template = claim.resource_claim_name, claim.resource_claim_template_name
        if by_name is None and by_template is None:
            problems.invalid(at, "", "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
        elif by_name is not None and by_template is not None:
            problems.invalid(
                at, "", "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
            )
        elif by_name is not None:
            problems.each(f"{at}.resourceClaimName", by_name, dns_subdomain(by_name))
        elif by_template is not None:
            problems.each(f"{at}.resourceClaimTemplateName", by_template, dns_subdomain(by_template))
    return names


def _container(problems: Problems, path: str, container: Container, claims: set[str]) -> None:
    if not container.name:
        problems.required(f"{path}.name")
    else:
        problems.each(f"{path}.name", container.name, dns_label(container.name))
    check_requirements(problems, f"{path}.resources", container.resources)
    seen: set[tuple[str, str]] = set()
    for i, ref in enumerate(container.resources.claims):
        at = f"{path}.resources.claims[{i}]"
        if not ref.name:
            problems.required(at)
            continue
        if (ref.name, ref.request) in seen:
            problems.duplicate(at, ref.name)
        seen.add((ref.name, ref.request))
        if ref.name not in claims:
            known = ", ".join(sorted(claims))
            detail = "must be one of the names in pod.spec.resourceClaims"
            problems.not_found(at, ref.name, f"{detail}: {known}" if known else f"{detail} which is empty")


@register(Pod)
def validate_pod(pod: Pod, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    spec = pod.spec
    claims = _pod_claims(problems, spec)
    names: set[str] = set()
    for group, containers in (("containers", spec.containers), ("initContainers", spec.init_containers)):
        for i, container in enumerate(containers):
            _container(problems, f"spec.{group}[{i}]", container, claims)
            if container.name and container.name in names:
                problems.duplicate(f"spec.{group}[{i}].name", container.name)
            names.add(container.name)
    if not spec.containers:
        problems.required("spec.containers")
    if spec.resources is not None:
        check_requirements(problems, "spec.resources", spec.resources)
    check_resource_list(problems, "spec.overhead", spec.overhead)
    check_tolerations(problems, "spec.tolerations", spec.tolerations)
    problems.labels("spec.nodeSelector", spec.node_selector)
    affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    if affinity is not None:
        check_node_affinity(problems, "spec.affinity.nodeAffinity", affinity)
    if spec.node_name:
        check_node_name(problems, "spec.nodeName", spec.node_name)
    if spec.priority_class_name:
        problems.each(
            "spec.priorityClassName", spec.priority_class_name, dns_subdomain(spec.priority_class_name)
        )
    if spec.runtime_class_name:
        problems.each(
            "spec.runtimeClassName", spec.runtime_class_name, dns_subdomain(spec.runtime_class_name)
        )
    if spec.preemption_policy is not None:
        problems.enum("spec.preemptionPolicy", spec.preemption_policy, PREEMPTION_POLICIES)
    for i, toleration in enumerate(spec.tolerations):
        if toleration.toleration_seconds is not None:
            problems.int_range(
                f"spec.tolerations[{i}].tolerationSeconds", toleration.toleration_seconds, INT64
            )
    return problems.errors

"""Pod fields that other pods, ports and volumes constrain: inter-pod affinity, topology spread
constraints, container ports and volumes.

Rules and wording follow k8s.io/kubernetes pkg/apis/core/validation for these fields;
they run beside `validate_core.validate_pod` (both registered for Pod). Nothing here raises.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from allot.model.base import LabelSelector
from allot.model.core import Container, Pod, PodAffinity, PodAffinityTerm, TopologySpreadConstraint, Volume
from allot.model.errors import Location, ManifestError
from allot.model.validate_common import Problems, dns_label
from allot.model.validate_registry import register

WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")
PROTOCOLS = ("SCTP", "TCP", "UDP")
MAX_PORT = 65535
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


def _selector_keys(selector: LabelSelector | None) -> set[str]:
    if selector is None:
        return set()
    return set(selector.match_labels) | {r.key for r in selector.match_expressions}


def _label_keys(problems: Problems, path: str, keys: Sequence[str]) -> None:
    for i, key in enumerate(keys):
        problems.label_name(f"{path}[{i}]", key)


def check_affinity_term(problems: Problems, path: str, term: PodAffinityTerm) -> None:
    problems.label_selector(f"{path}.labelSelector", term.label_selector)
    problems.label_selector(f"{path}.namespaceSelector", term.namespace_selector)
    for name in term.namespaces:
        problems.each(f"{path}.namespace", name, dns_label(name))
    _label_keys(problems, f"{path}.matchLabelKeys", term.match_label_keys)
    _label_keys(problems, f"{path}.mismatchLabelKeys", term.mismatch_label_keys)
    both = set(term.match_label_keys) & set(term.mismatch_label_keys)
    for i, key in enumerate(term.match_label_keys):
        if key in both:
            problems.invalid(
                f"{path}.matchLabelKeys[{i}]", key, "exists in both matchLabelKeys and mismatchLabelKeys"
            )
    if (term.match_label_keys or term.mismatch_label_keys) and term.label_selector is None:
        problems.forbidden(
            f"{path}.labelSelector", "must be specified when matchLabelKeys or mismatchLabelKeys is set"
        )
    if not term.topology_key:
        problems.required(f"{path}.topologyKey", "can not be empty")
    else:
        problems.label_name(f"{path}.topologyKey", term.topology_key)


def _pod_affinity(problems: Problems, path: str, affinity: PodAffinity | None) -> None:
    if affinity is None:
        return
    required = affinity.required_during_scheduling_ignored_during_execution
    for i, term in enumerate(required):
        check_affinity_term(problems, f"{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", term)
    for i, weighted in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        at = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not 1 <= weighted.weight <= 100:
            problems.invalid(f"{at}.weight", weighted.weight, "must be in the range 1-100")
        check_affinity_term(problems, f"{at}.podAffinityTerm", weighted.pod_affinity_term)


def check_spread_constraints(
    problems: Problems, path: str, constraints: Sequence[TopologySpreadConstraint]
) -> None:
    seen: set[tuple[str, str]] = set()
    for i, constraint in enumerate(constraints):
        at = f"{path}[{i}]"
        if constraint.max_skew <= 0:
            problems.invalid(f"{at}.maxSkew", constraint.max_skew, "must be greater than zero")
        if not constraint.topology_key:
            problems.required(f"{at}.topologyKey", "can not be empty")
        else:
            problems.label_name(f"{at}.topologyKey", constraint.topology_key)
        problems.enum(f"{at}.whenUnsatisfiable", constraint.when_unsatisfiable, WHEN_UNSATISFIABLE)
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if pair in seen:
            problems.duplicate(f"{at}.{{topologyKey, whenUnsatisfiable}}", f"{pair[0]}, {pair[1]}")
        seen.add(pair)
        if constraint.min_domains is not None:
            if constraint.min_domains <= 0:
                problems.invalid(f"{at}.minDomains", constraint.min_domains, "must be greater than 0")
            if constraint.when_unsatisfiable != "DoNotSchedule":
                problems.invalid(
                    f"{at}.minDomains",
                    constraint.min_domains,
                    f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {constraint.when_unsatisfiable}",
                )
        for name, policy in (
            ("nodeAffinityPolicy", constraint.node_affinity_policy),
            ("nodeTaintsPolicy", constraint.node_taints_policy),
        ):
            if policy is not None:
                problems.enum(f"{at}.{name}", policy, NODE_INCLUSION_POLICIES)
        _label_keys(problems, f"{at}.matchLabelKeys", constraint.match_label_keys)
        if constraint.match_label_keys and constraint.label_selector is None:
            problems.required(f"{at}.labelSelector", "must be specified when matchLabelKeys is set")
        problems.label_selector(f"{at}.labelSelector", constraint.label_selector)


def _ports(problems: Problems, path: str, container: Container, host_network: bool) -> None:
    names: set[str] = set()
    for i, port in enumerate(container.ports):
        at = f"{path}.ports[{i}]"
        if port.name:
            if port.name in names:
                problems.duplicate(f"{at}.name", port.name)
            names.add(port.name)
        if port.container_port == 0:
            problems.required(f"{at}.containerPort")
        elif not 1 <= port.container_port <= MAX_PORT:
            problems.invalid(
                f"{at}.containerPort", port.container_port, f"must be between 1 and {MAX_PORT}, inclusive"
            )
        if port.host_port != 0 and not 1 <= port.host_port <= MAX_PORT:
            problems.invalid(f"{at}.hostPort", port.host_port, f"must be between 1 and {MAX_PORT}, inclusive")
        if not port.protocol:
            problems.required(f"{at}.protocol")
        else:
            problems.enum(f"{at}.protocol", port.protocol, PROTOCOLS)
        if port.host_ip:
            try:
                ipaddress.ip_address(port.host_ip)
            except ValueError:
                problems.invalid(f"{at}.hostIP", port.host_ip, "must be a valid IP address")
        if host_network and port.host_port != port.container_port:
            problems.invalid(
                f"{at}.hostPort", port.host_port, "must match `containerPort` when `hostNetwork` is true"
            )


def _unique_host_ports(problems: Problems, pod: Pod) -> None:
    seen: set[str] = set()
    for group, containers in (
        ("containers", pod.spec.containers),
        ("initContainers", pod.spec.init_containers),
    ):
        for c, container in enumerate(containers):
            for p, port in enumerate(container.ports):
                if port.host_port == 0:
                    continue
                key = f"{port.protocol}/{port.host_ip}/{port.host_port}"
                if key in seen:
                    problems.duplicate(f"spec.{group}[{c}].ports[{p}].hostPort", key)
                seen.add(key)


_SOURCES = (
    "persistent_volume_claim",
    "ephemeral",
    "csi",
    "gce_persistent_disk",
    "aws_elastic_block_store",
    "rbd",
    "iscsi",
    "image",
)


def _volume(problems: Problems, path: str, volume: Volume) -> None:
    given = [name for name in _SOURCES if getattr(volume, name) is not None]
    if len(given) > 1:
        problems.forbidden(path, "may not specify more than 1 volume type")
    claim = volume.persistent_volume_claim
    if claim is not None and not claim.claim_name:
        problems.required(f"{path}.persistentVolumeClaim.claimName")
    ephemeral = volume.ephemeral
    if ephemeral is not None:
        template = ephemeral.volume_claim_template
        if template is None:
            problems.required(f"{path}.ephemeral.volumeClaimTemplate")
        else:
            spec_path = f"{path}.ephemeral.volumeClaimTemplate.spec"
            if not template.spec.access_modes:
                problems.required(f"{spec_path}.accessModes", "at least 1 access mode is required")
            for i, mode in enumerate(template.spec.access_modes):
                problems.enum(f"{spec_path}.accessModes[{i}]", mode, ACCESS_MODES)
    if volume.csi is not None and not volume.csi.driver:
        problems.required(f"{path}.csi.driver")
    if volume.image is not None and not volume.image.reference:
        problems.required(f"{path}.image.reference")


@register(Pod)
def validate_pod_placement(pod: Pod, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    spec = pod.spec
    affinity = spec.affinity
    if affinity is not None:
        _pod_affinity(problems, "spec.affinity.podAffinity", affinity.pod_affinity)
        _pod_affinity(problems, "spec.affinity.podAntiAffinity", affinity.pod_anti_affinity)
    check_spread_constraints(problems, "spec.topologySpreadConstraints", spec.topology_spread_constraints)
    for group, containers in (("containers", spec.containers), ("initContainers", spec.init_containers)):
        for i, container in enumerate(containers):
            _ports(problems, f"spec.{group}[{i}]", container, spec.host_network)
    _unique_host_ports(problems, pod)
    names: set[str] = set()
    for i, volume in enumerate(spec.volumes):
        at = f"spec.volumes[{i}]"
        if not volume.name:
            problems.required(f"{at}.name")
        elif volume.name in names:
            problems.duplicate(f"{at}.name", volume.name)
        else:
            problems.each(f"{at}.name", volume.name, dns_label(volume.name))
        names.add(volume.name)
        _volume(problems, at, volume)
    return problems.errors

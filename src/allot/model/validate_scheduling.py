"""scheduling.k8s.io/v1 PriorityClass and policy/v1 PodDisruptionBudget validation.

Two small API groups that the scheduler reads for priorities and eviction
budgets; rules and wording follow pkg/apis/scheduling/validation and
pkg/apis/policy/validation. Nothing here raises.
"""

from __future__ import annotations

from allot.model.errors import Location, ManifestError
from allot.model.scheduling import PodDisruptionBudget, PriorityClass
from allot.model.validate_common import INT32, Problems, percent
from allot.model.validate_core import PREEMPTION_POLICIES
from allot.model.validate_registry import register

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
# The only names allowed with the reserved prefix, and the value each must have.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
UNHEALTHY_POD_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")


@register(PriorityClass)
def validate_priority_class(pc: PriorityClass, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    problems.int_range("value", pc.value, INT32)
    if pc.name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        expected = SYSTEM_PRIORITY_CLASSES.get(pc.name)
        if expected is None:
            reason = f"{pc.name} is not a known system priority class"
        elif pc.value != expected:
            reason = f"value of {pc.name} PriorityClass must be {expected}"
        else:
            reason = ""
        if reason:
            problems.forbidden(
                "metadata.name",
                f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system "
                f"use only. error: {reason}",
            )
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        problems.forbidden(
            "value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        )
    if pc.preemption_policy is not None:
        problems.enum("preemptionPolicy", pc.preemption_policy, PREEMPTION_POLICIES)
    return problems.errors


def _int_or_percent(problems: Problems, path: str, value: int | str) -> None:
    if isinstance(value, str):
        problems.each(path, value, percent(value))
        if not percent(value) and int(value[:-1]) > 100:
            problems.invalid(path, value, "must not be greater than 100%")
    elif value < 0:
        problems.invalid(path, value, "must be greater than or equal to 0")
    else:
        problems.int_range(path, value, INT32)


@register(PodDisruptionBudget)
def validate_pdb(pdb: PodDisruptionBudget, where: Location) -> list[ManifestError]:
    problems = Problems(where)
    spec = pdb.spec
    if spec.min_available is not None and spec.max_unavailable is not None:
        problems.invalid(
            "spec",
            f"minAvailable: {spec.min_available}, maxUnavailable: {spec.max_unavailable}",
            "minAvailable and maxUnavailable cannot be both set",
        )
    if spec.min_available is not None:
        _int_or_percent(problems, "spec.minAvailable", spec.min_available)
    if spec.max_unavailable is not None:
        _int_or_percent(problems, "spec.maxUnavailable", spec.max_unavailable)
    problems.label_selector("spec.selector", spec.selector)
    if spec.unhealthy_pod_eviction_policy is not None:
        problems.enum(
            "spec.unhealthyPodEvictionPolicy",
            spec.unhealthy_pod_eviction_policy,
            UNHEALTHY_POD_EVICTION_POLICIES,
        )
    return problems.errors

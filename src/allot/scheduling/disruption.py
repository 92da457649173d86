"""PodDisruptionBudgets: how many more pods each budget lets preemption take.

Budgets are evaluated from the state, not from the manifest's status, so
hand-written budgets work and what-ifs see their own evictions: healthy =
bound pods the selector matches, expected = all pods it matches, and the
allowance follows minAvailable / maxUnavailable (integers or percentages,
rounded up as the disruption controller does).
"""

from __future__ import annotations

import math

from allot.cluster.pod_info import PodInfo
from allot.cluster.selectors import label_selector_matches
from allot.cluster.state import ClusterState
from allot.model.scheduling import PodDisruptionBudget


def _scaled(value: int | str, expected: int) -> int:
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * expected / 100)
    return int(text)


def matches(budget: PodDisruptionBudget, info: PodInfo) -> bool:
    pod = info.pod
    return pod.namespace == budget.namespace and label_selector_matches(
        budget.spec.selector, pod.metadata.labels
    )


def disruptions_allowed(state: ClusterState, budget: PodDisruptionBudget) -> int:
    matching = [info for info in state.pods.values() if matches(budget, info)]
    expected = len(matching)
    healthy = sum(1 for info in matching if info.bound)
    spec = budget.spec
    if spec.min_available is not None:
        desired = _scaled(spec.min_available, expected)
    elif spec.max_unavailable is not None:
        desired = expected - _scaled(spec.max_unavailable, expected)
    else:
        return healthy
    return max(0, healthy - desired)


def allowances(state: ClusterState) -> dict[str, int]:
    """Disruptions each budget still allows, by budget key."""
    return {budget.key: disruptions_allowed(state, budget) for budget in state.disruption_budgets}

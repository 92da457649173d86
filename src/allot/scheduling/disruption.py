"""PodDisruptionBudgets: how many more pods each budget lets preemption take.

What kube-scheduler's preemption reads: a budget's `status.disruptionsAllowed`
as the disruption controller wrote it, taken down by one for each victim it
covers, where it covers a pod of its namespace with labels that its selector
(neither nil nor empty: such a budget covers nothing here) matches, unless
the pod is among the budget's `status.disruptedPods` (already counted).

allot also works the allowance out from the state: healthy = bound pods the
budget covers, expected = all pods it covers, and the allowance follows
minAvailable / maxUnavailable (integers or percentages, rounded up as the
disruption controller does). A budget the controller never counted (a
hand-written file) gets that; one it counted gets the smaller of the two,
so that a plan's own evictions count before the controller has seen them,
and pods that are bound but not Ready (which the controller does not count
healthy) keep their budget as kube-scheduler keeps it.
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
    """Whether the budget covers the pod (see the module docstring)."""
    pod = info.pod
    selector = budget.spec.selector
    if selector is None or not (selector.match_labels or selector.match_expressions):
        return False
    return (
        pod.namespace == budget.namespace
        and bool(pod.metadata.labels)
        and label_selector_matches(selector, pod.metadata.labels)
    )


def counts_against(budget: PodDisruptionBudget, info: PodInfo) -> bool:
    """Whether evicting the pod takes one off the budget's allowance (covered, and not one of the
    disruptions the budget has counted already)."""
    return matches(budget, info) and info.pod.metadata.name not in budget.status.disrupted_pods


def disruptions_allowed(state: ClusterState, budget: PodDisruptionBudget) -> int:
    matching = [info for info in state.pods.values() if matches(budget, info)]
    expected = len(matching)
    healthy = sum(1 for info in matching if info.bound)
    spec = budget.spec
    if spec.min_available is not None:
        computed = max(0, healthy - _scaled(spec.min_available, expected))
    elif spec.max_unavailable is not None:
        computed = max(0, healthy - (expected - _scaled(spec.max_unavailable, expected)))
    else:
        computed = healthy
    if budget.status.observed_generation > 0:
        return min(computed, budget.status.disruptions_allowed)
    return computed


def allowances(state: ClusterState) -> dict[str, int]:
    """Disruptions each budget still allows, by budget key."""
    return {budget.key: disruptions_allowed(state, budget) for budget in state.disruption_budgets}

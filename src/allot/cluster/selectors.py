"""metav1.LabelSelector matching (PodDisruptionBudgets, pod affinity, namespace selectors)."""

from __future__ import annotations

from collections.abc import Mapping

from allot.model.base import LabelSelector


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """matchLabels AND matchExpressions; a nil selector matches nothing, an empty one everything."""
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for requirement in selector.match_expressions:
        present = requirement.key in labels
        value = labels.get(requirement.key, "")
        operator = requirement.operator
        if operator == "In" and not (present and value in requirement.values):
            return False
        if operator == "NotIn" and present and value in requirement.values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True

"""Whether a pod set may use a ResourceFlavor at all, before any quota is counted.

Kueue rejects a flavor for a pod set when the flavor's `nodeTaints` (only
NoSchedule and NoExecute) are not tolerated by the pod's tolerations plus the
flavor's own `tolerations`, or when the pod's node selector / required node
affinity, restricted to the label keys the flavor sets, does not match the
flavor's `nodeLabels` (pkg/scheduler/flavorassigner: checkFlavorForPodSets,
flavorSelector). Messages are Kueue's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from allot.model.base import LabelSelector
from allot.model.core import NodeSelector, NodeSelectorRequirement, Taint, Toleration

_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def taint_string(taint: Taint) -> str:
    """As Go's Taint.ToString prints it: `key=value:effect`, or `key:effect`."""
    if not taint.value:
        return f"{taint.key}:{taint.effect}"
    return f"{taint.key}={taint.value}:{taint.effect}"


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """core/v1 Toleration.ToleratesTaint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return toleration.value == taint.value
    return False


def untolerated_taint(taints: Iterable[Taint], tolerations: Iterable[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration covers, if any."""
    held = tuple(tolerations)
    for taint in taints:
        if taint.effect not in _BLOCKING_EFFECTS:
            continue
        if not any(tolerates(t, taint) for t in held):
            return taint
    return None


def expression_matches(key: str, operator: str, values: tuple[str, ...], labels: Mapping[str, str]) -> bool:
    """One selector expression against a label set (k8s labels.Selector semantics)."""
    present = key in labels
    value = labels.get(key, "")
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def label_selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector; None selects nothing (Kueue's namespaceSelector default), {} everything."""
    if selector is None:
        return False
    if any(labels.get(key) != value for key, value in selector.match_labels.items()):
        return False
    return all(expression_matches(r.key, r.operator, r.values, labels) for r in selector.match_expressions)


def requirement_matches(requirement: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    return expression_matches(requirement.key, requirement.operator, requirement.values, labels)


def selector_matches(
    node_selector: Mapping[str, str],
    required: NodeSelector | None,
    labels: Mapping[str, str],
) -> bool:
    """Pod node selection against a flavor's labels, only on the keys the flavor sets.

    Terms of the required affinity are ORed; a term left empty after dropping
    other keys matches anything, so the whole affinity is then ignored.
    """
    keys = labels.keys()
    for key, value in node_selector.items():
        if key in keys and labels[key] != value:
            return False
    if required is None:
        return True
    terms: list[list[NodeSelectorRequirement]] = []
    for term in required.node_selector_terms:
        kept = [r for r in term.match_expressions if r.key in keys]
        if not kept:
            return True
        terms.append(kept)
    if not terms:
        return True
    return any(all(requirement_matches(r, labels) for r in term) for term in terms)

"""Node selection: does a slice or device (nodeName, allNodes, nodeSelector) reach a node?

Mirrors upstream's `NodeMatches` and the node-affinity selector semantics it
relies on: terms are ORed, requirements in a term ANDed, an empty term
matches nothing, `matchFields` can only see `metadata.name`, and a selector
that does not parse is a fatal error. Parsed selectors are cached by value
(records are immutable and hashable), so each distinct selector is parsed once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from allot.dra.errors import AllocationError
from allot.model.core import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm

# A parsed term: requirement predicates over (labels, node name).
_Predicate = Callable[[Mapping[str, str], str], bool]
_Term = tuple[_Predicate, ...]

_PARSED: dict[NodeSelector, tuple[_Term, ...] | str] = {}


def _label_predicate(req: NodeSelectorRequirement) -> _Predicate:
    key, op, values = req.key, req.operator, req.values
    if op in ("In", "NotIn"):
        if not values:
            raise ValueError(f"{key}: values set must be non-empty for operator {op}")
        wanted = frozenset(values)
        if op == "In":
            return lambda labels, _name: key in labels and labels[key] in wanted
        return lambda labels, _name: key not in labels or labels[key] not in wanted
    if op in ("Exists", "DoesNotExist"):
        if values:
            raise ValueError(f"{key}: values set must be empty for operator {op}")
        if op == "Exists":
            return lambda labels, _name: key in labels
        return lambda labels, _name: key not in labels
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise ValueError(f"{key}: for operator {op} values must have exactly one element")
        try:
            bound = int(values[0])
        except ValueError:
            raise ValueError(f"{key}: for operator {op} the value must be an integer") from None

        def compare(labels: Mapping[str, str], _name: str) -> bool:
            raw = labels.get(key)
            if raw is None:
                return False
            try:
                have = int(raw)
            except ValueError:
                return False
            return have > bound if op == "Gt" else have < bound

        return compare
    raise ValueError(f"{op!r} is not a valid label selector operator")


def _field_predicate(req: NodeSelectorRequirement) -> _Predicate:
    if req.operator not in ("In", "NotIn"):
        raise ValueError(f"{req.operator!r} is not a valid node field selector operator")
    if len(req.values) != 1:
        raise ValueError(
            f"unexpected number of value ({len(req.values)}) for node field selector operator {req.operator!r}"
        )
    key, value, positive = req.key, req.values[0], req.operator == "In"

    def match(_labels: Mapping[str, str], name: str) -> bool:
        # Nodes expose only metadata.name as a selectable field.
        have = name if key == "metadata.name" else ""
        return (have == value) == positive

    return match


def _parse_term(term: NodeSelectorTerm) -> _Term:
    return tuple(_label_predicate(r) for r in term.match_expressions) + tuple(
        _field_predicate(r) for r in term.match_fields
    )


def _parse(selector: NodeSelector) -> tuple[_Term, ...] | str:
    parsed = _PARSED.get(selector)
    if parsed is not None:
        return parsed
    terms: list[_Term] = []
    problems: list[str] = []
    for term in selector.node_selector_terms:
        if not term.match_expressions and not term.match_fields:
            continue  # an empty term selects nothing
        try:
            terms.append(_parse_term(term))
        except ValueError as err:
            problems.append(str(err))
    result: tuple[_Term, ...] | str = "; ".join(problems) if problems else tuple(terms)
    _PARSED[selector] = result
    return result


def selector_matches(selector: NodeSelector, node: Node | None) -> bool:
    """Whether `node` satisfies `selector`; raises AllocationError if the selector does not parse."""
    parsed = _parse(selector)
    if isinstance(parsed, str):
        raise AllocationError(f"failed to parse node selector: {parsed}")
    if node is None:
        return False
    labels = node.metadata.labels
    name = node.metadata.name
    return any(all(predicate(labels, name) for predicate in term) for term in parsed)


def node_matches(
    node: Node | None, node_name: str | None, all_nodes: bool | None, selector: NodeSelector | None
) -> bool:
    """Upstream's NodeMatches: nodeName, then allNodes, then nodeSelector; nothing set matches nothing."""
    if node_name:
        return node is not None and node.metadata.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(selector, node)
    return False

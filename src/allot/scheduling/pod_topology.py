"""Counting pods per topology domain, for InterPodAffinity and PodTopologySpread.

A topology domain is the set of nodes sharing a value of a label (the term's or constraint's
`topologyKey`). `allot.cluster.pod_index` counts matching pods per node; these helpers fold
those counts into per-domain sums with one array operation, and resolve the namespaces an
incoming pod's affinity term selects, as kube-scheduler does before matching.
"""

from __future__ import annotations

import numpy as np

from allot.cluster.nodes import NodeTable
from allot.cluster.pod_index import Condition
from allot.cluster.selectors import label_selector_matches
from allot.cluster.state import ClusterState
from allot.model.base import LabelSelector
from allot.model.core import Pod, PodAffinityTerm
from allot.scheduling.framework import BoolArray, FloatArray, IntArray


def domain_sums(table: NodeTable, key: str, per_node: IntArray, nodes: BoolArray | None = None) -> FloatArray:
    """Per domain of label `key` (ids of `NodeTable.domains`), the sum of `per_node` over its
    nodes (only those in `nodes` when given)."""
    ids, values = table.domains(key)
    take = ids >= 0 if nodes is None else (ids >= 0) & nodes
    sums: FloatArray = np.bincount(
        ids[take], weights=per_node[take].astype(np.float64), minlength=len(values)
    ).astype(np.float64)
    return sums


def per_node(table: NodeTable, key: str, domain_values: FloatArray, missing: float = 0.0) -> FloatArray:
    """Each node's value of its domain (`missing` for nodes without the label)."""
    ids, _ = table.domains(key)
    if domain_values.size == 0:
        return np.full(table.size, missing)
    result: FloatArray = np.where(ids >= 0, domain_values[np.maximum(ids, 0)], missing)
    return result


def is_empty(selector: LabelSelector | None) -> bool:
    """A label selector with no requirement (selects everything; None selects nothing)."""
    return selector is not None and not selector.match_labels and not selector.match_expressions


def incoming_condition(state: ClusterState, pod: Pod, term: PodAffinityTerm) -> Condition:
    """The (namespaces, selector) an incoming pod's term selects pods by: its namespaces (the pod's
    own when it names none and has no namespace selector) plus every namespace its namespace
    selector picks; None for all namespaces when that selector is empty."""
    if term.namespace_selector is not None and is_empty(term.namespace_selector):
        return (None, term.label_selector)
    if not term.namespaces and term.namespace_selector is None:
        return (frozenset({pod.namespace}), term.label_selector)
    names = set(term.namespaces)
    if term.namespace_selector is not None:
        names.update(
            ns
            for ns in state.namespace_names()
            if label_selector_matches(term.namespace_selector, state.namespace_labels(ns))
        )
    return (frozenset(names), term.label_selector)


def condition_matches(condition: Condition, pod: Pod) -> bool:
    namespaces, selector = condition
    if namespaces is not None and pod.namespace not in namespaces:
        return False
    return label_selector_matches(selector, pod.metadata.labels)

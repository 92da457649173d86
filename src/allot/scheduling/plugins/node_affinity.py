"""NodeAffinity: spec.nodeSelector and required node affinity filter; preferred affinity scores.

Both depend only on the pod's selector and the nodes' labels, so results
are cached per distinct (nodeSelector, affinity) pair.

Pre-filter: when every required term names nodes by `matchFields` `metadata.name In`
(DaemonSet pods), the pod is narrowed to those nodes before any filter runs, and other
nodes read `node(s) didn't satisfy plugin(s) [NodeAffinity]` (kube-scheduler's
PreFilterResult); terms that name no common node: `pod affinity terms conflict`.

Arg `addedAffinity` (NodeAffinityArgs): node affinity the profile adds to every pod; its
required terms reject a node first (`node(s) didn't match scheduler-enforced node
affinity`), its preferred terms add to every pod's preferred weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import numpy as np

from allot.cluster.events import NODE_EVENTS
from allot.cluster.nodes import NodeInfo, NodeTable
from allot.dra.errors import AllocationError
from allot.dra.nodes import selector_matches
from allot.model.codec import decode
from allot.model.core import Node, NodeSelector, NodeSelectorTerm, PodSpec
from allot.model.core import NodeAffinity as NodeAffinityRecord
from allot.model.errors import Location
from allot.model.validate_common import Problems
from allot.model.validate_core import check_node_affinity
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray, Rejection
from allot.scheduling.plugin_args import ArgumentError
from allot.scheduling.status import SUCCESS, Code, Status, unresolvable

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"
CONFLICT = "pod affinity terms conflict"
ENFORCED_REASON = "node(s) didn't match scheduler-enforced node affinity"


def _term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    try:
        return selector_matches(NodeSelector(node_selector_terms=(term,)), node)
    except AllocationError:
        return False


def _required_matches(spec: PodSpec, required: NodeSelector | None, info: NodeInfo) -> bool:
    if not all(info.labels.get(k) == v for k, v in spec.node_selector.items()):
        return False
    if required is None:
        return True
    try:
        return selector_matches(required, info.node)
    except AllocationError:
        return False


def node_affinity_signature(spec: PodSpec) -> bytes:
    """What node affinity reads of a pod: its nodeSelector and node affinity (not its pod affinity)."""
    affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    return msgspec.json.encode((sorted(spec.node_selector.items()), affinity))


def required_node_affinity(table: NodeTable, spec: PodSpec) -> BoolArray:
    """Nodes matching the pod's nodeSelector and required node affinity (kube-scheduler's
    RequiredNodeAffinity, which PodTopologySpread's nodeAffinityPolicy also uses)."""
    affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    return np.array([_required_matches(spec, required, info) for info in table.infos], dtype=np.bool_)


def parse_added_affinity(args: Mapping[str, Any]) -> NodeAffinityRecord | None:
    """NodeAffinityArgs' addedAffinity, checked with the API's node selector rules."""
    raw = args.get("addedAffinity")
    if raw is None:
        return None
    try:
        added = decode(raw, NodeAffinityRecord)
    except msgspec.ValidationError as err:
        raise ArgumentError(f"addedAffinity: {err}") from None
    problems = Problems(Location())
    check_node_affinity(problems, "addedAffinity", added)
    if problems.errors:
        error = problems.errors[0]
        raise ArgumentError(f"{error.location.field}: {error.message}")
    return added


class NodeAffinity:
    name = NAME
    # Labels change only with the node.
    wake_on = NODE_EVENTS

    def __init__(self, *, added: NodeAffinityRecord | None = None) -> None:
        self.added = added
        self._cache: dict[tuple[object, bytes], tuple[BoolArray, IntArray]] = {}
        self._enforced: tuple[object, BoolArray] | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> NodeAffinity:
        return cls(added=parse_added_affinity(args))

    def pre_filter(self, cycle: Cycle) -> Status:
        spec = cycle.pod.pod.spec
        affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
        if required is None or not required.node_selector_terms:
            return SUCCESS
        names: set[str] = set()
        for term in required.node_selector_terms:
            in_term: set[str] | None = None
            for requirement in term.match_fields:
                if requirement.key == "metadata.name" and requirement.operator == "In":
                    values = set(requirement.values)
                    in_term = values if in_term is None else in_term & values
            if in_term is None:
                # A term without a name: every node may match it (terms are ORed).
                return SUCCESS
            names |= in_term
        if not names:
            return unresolvable(NAME, CONFLICT)
        table = cycle.state.nodes
        mask = np.zeros(table.size, dtype=np.bool_)
        for name in names:
            index = table.index.get(name)
            if index is not None:
                mask[index] = True
        cycle.narrow(NAME, mask)
        return SUCCESS

    def _enforced_mask(self, table: NodeTable) -> BoolArray | None:
        required = self.added.required_during_scheduling_ignored_during_execution if self.added else None
        if required is None:
            return None
        if self._enforced is None or self._enforced[0] is not table:
            mask = np.array(
                [_required_matches(PodSpec(), required, info) for info in table.infos], dtype=np.bool_
            )
            self._enforced = (table, mask)
        return self._enforced[1]

    def _for(self, cycle: Cycle) -> tuple[BoolArray, IntArray]:
        spec = cycle.pod.pod.spec
        table = cycle.state.nodes
        signature = node_affinity_signature(spec)
        key = (table, signature)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
        preferred = affinity.preferred_during_scheduling_ignored_during_execution if affinity else ()
        if self.added is not None:
            preferred = (*preferred, *self.added.preferred_during_scheduling_ignored_during_execution)
        matches = np.ones(table.size, dtype=np.bool_)
        weights = np.zeros(table.size, dtype=np.int64)
        for info in table.infos:
            matches[info.index] = _required_matches(spec, required, info)
            weights[info.index] = sum(p.weight for p in preferred if _term_matches(p.preference, info.node))
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[key] = (matches, weights)
        return matches, weights

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        matches, _ = self._for(cycle)
        rejections = []
        enforced = self._enforced_mask(cycle.state.nodes)
        if enforced is not None:
            outside = candidates & ~enforced
            if outside.any():
                rejections.append(Rejection(ENFORCED_REASON, outside, Code.UNRESOLVABLE))
                candidates = candidates & enforced
        rejected = candidates & ~matches
        if rejected.any():
            rejections.append(Rejection(REASON, rejected, Code.UNRESOLVABLE))
        return rejections

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        _, weights = self._for(cycle)
        values = weights[nodes]
        highest = values.max() if values.size else 0
        if highest <= 0:
            return np.zeros(nodes.size)
        return (values * 100 // highest).astype(np.float64)

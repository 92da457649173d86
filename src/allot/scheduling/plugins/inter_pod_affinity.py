"""InterPodAffinity: pods placed by the pods around them, as kube-scheduler v1.36 does it.

Filter, per node, the first failing rule wins:

1. the pod's required affinity: every term's topology label must be on the node, and the
   node's domain must hold a pod that matches *all* the pod's affinity terms (unresolvable
   otherwise). Exception: when no pod anywhere matches them all and the pod matches its
   own terms, any node with the labels will do (the first pod of a group that attracts
   itself);
2. the pod's required anti-affinity: no pod its term selects in the node's domain of the
   term's key;
3. existing pods' required anti-affinity: no bound pod whose term selects this pod sits in
   the node's domain of that term's key (the rule is symmetric).

A term selects pods in the namespaces it names, else in its owner's; `namespaceSelector`
adds the namespaces whose labels it matches (empty: all). Terms' `matchLabelKeys` and
`mismatchLabelKeys` were merged into their selectors when the pod was read, as the API
server does on creation.

Score (weight 2): for the incoming pod's preferred terms, +weight (affinity) or -weight
(anti-affinity) for each matching pod in the domain; for bound pods' terms that select the
incoming pod, +`hardPodAffinityWeight` per required affinity term (default 1), +weight per
preferred affinity term and -weight per preferred anti-affinity term, in the bound pod's
domain. A node's raw score is the sum over the topology keys it has; scores are normalised
over the feasible nodes to 100 × (s − min) / (max − min), truncated (0 when all are equal).
Args: `hardPodAffinityWeight` (0-100), `ignorePreferredTermsOfExistingPods`.

Counting uses `allot.cluster.pod_index`: per-node counts per selector and per distinct term,
kept current through binds and unbinds (and their undo), so a cycle does not walk the pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from allot.cluster.events import NODE_EVENTS, POD_EVENTS
from allot.cluster.pod_index import Condition, Matcher, TermKind, selector_label_keys
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.model.core import PodAffinity, PodAffinityTerm
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray, Rejection
from allot.scheduling.pod_topology import condition_matches, domain_sums, incoming_condition, per_node
from allot.scheduling.status import Code

NAME = "InterPodAffinity"
AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"
MAX_HARD_WEIGHT = 100


@dataclass(frozen=True, slots=True)
class _Term:
    condition: Condition
    topology_key: str
    weight: int = 1


def _required(group: PodAffinity | None) -> tuple[PodAffinityTerm, ...]:
    return group.required_during_scheduling_ignored_during_execution if group is not None else ()


def _terms(
    cycle: Cycle, terms: Sequence[PodAffinityTerm], weights: Sequence[int] | None = None
) -> list[_Term]:
    pod = cycle.pod.pod
    return [
        _Term(incoming_condition(cycle.state, pod, t), t.topology_key, weights[i] if weights else 1)
        for i, t in enumerate(terms)
    ]


class InterPodAffinity:
    name = NAME
    # Pods bound, leaving or relabelled anywhere, and node labels, change domains' counts: the
    # verdict can change on every node of the domain, not only the node the event was on.
    wake_on = NODE_EVENTS | POD_EVENTS
    wake_anywhere = NODE_EVENTS | POD_EVENTS

    def __init__(
        self, *, hard_pod_affinity_weight: int = 1, ignore_preferred_terms_of_existing_pods: bool = False
    ) -> None:
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> InterPodAffinity:
        weight = args.get("hardPodAffinityWeight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= MAX_HARD_WEIGHT:
            raise ValueError(
                f"hardPodAffinityWeight: Invalid value: {weight!r}: not in valid range [0, {MAX_HARD_WEIGHT}]"
            )
        ignore = args.get("ignorePreferredTermsOfExistingPods", False)
        if not isinstance(ignore, bool):
            raise ValueError(f"ignorePreferredTermsOfExistingPods: expected true or false, got {ignore!r}")
        return cls(hard_pod_affinity_weight=weight, ignore_preferred_terms_of_existing_pods=ignore)

    def equivalence_key(self, state: ClusterState, info: PodInfo) -> str:
        # Feasibility reads the pod's labels twice: bound pods' required anti-affinity terms
        # select it by them, and its own required affinity terms may select itself. Labels no
        # such selector reads cannot tell two pods apart (job names, pod hashes).
        pod = info.pod
        keys = set(state.pod_index.anti_affinity_keys())
        affinity = pod.spec.affinity
        if affinity is not None:
            for term in _required(affinity.pod_affinity):
                keys |= selector_label_keys(term.label_selector)
        labels = pod.metadata.labels
        read = sorted((k, labels[k]) for k in keys if k in labels)
        return msgspec.json.encode(read).decode()

    def equivalence_version(self, state: ClusterState) -> object:
        return state.pod_index.anti_version

    # -- filter ------------------------------------------------------------------------------

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        pod = cycle.pod.pod
        index = cycle.state.pod_index
        affinity = pod.spec.affinity
        required = _required(affinity.pod_affinity) if affinity is not None else ()
        anti = _required(affinity.pod_anti_affinity) if affinity is not None else ()
        if not required and not anti and not index.has_terms(TermKind.REQUIRED_ANTI_AFFINITY):
            return []
        rejections: list[Rejection] = []
        remaining = candidates.copy()
        # kube-scheduler checks, per node, affinity, then anti-affinity, then existing pods'.
        for rule in range(3):
            if not remaining.any():
                break
            if rule == 0:
                allowed, reason, code = self._affinity_ok(cycle, required), AFFINITY_REASON, Code.UNRESOLVABLE
            elif rule == 1:
                allowed, reason, code = (
                    self._anti_affinity_ok(cycle, anti),
                    ANTI_AFFINITY_REASON,
                    Code.UNSCHEDULABLE,
                )
            else:
                allowed, reason, code = (
                    self._existing_ok(cycle),
                    EXISTING_ANTI_AFFINITY_REASON,
                    Code.UNSCHEDULABLE,
                )
            if allowed is None:
                continue
            rejected = remaining & ~allowed
            if rejected.any():
                rejections.append(Rejection(reason, rejected, code))
                remaining &= allowed
        return rejections

    def _affinity_ok(self, cycle: Cycle, required: Sequence[PodAffinityTerm]) -> BoolArray | None:
        if not required:
            return None
        table = cycle.state.nodes
        terms = _terms(cycle, required)
        counts = cycle.state.pod_index.count(Matcher.of([t.condition for t in terms]))
        labelled = np.ones(table.size, dtype=np.bool_)
        found = np.ones(table.size, dtype=np.bool_)
        anywhere = False
        for term in terms:
            ids, _ = table.domains(term.topology_key)
            sums = domain_sums(table, term.topology_key, counts)
            anywhere = anywhere or bool((sums > 0).any())
            labelled &= ids >= 0
            found &= per_node(table, term.topology_key, sums) > 0
        if not anywhere and all(condition_matches(t.condition, cycle.pod.pod) for t in terms):
            return labelled
        return labelled & found

    def _anti_affinity_ok(self, cycle: Cycle, anti: Sequence[PodAffinityTerm]) -> BoolArray | None:
        if not anti:
            return None
        table = cycle.state.nodes
        index = cycle.state.pod_index
        allowed = np.ones(table.size, dtype=np.bool_)
        for term in _terms(cycle, anti):
            counts = index.count(Matcher.of([term.condition]))
            sums = domain_sums(table, term.topology_key, counts)
            allowed &= per_node(table, term.topology_key, sums) <= 0
        return allowed

    def _existing_ok(self, cycle: Cycle) -> BoolArray | None:
        state = cycle.state
        pod = cycle.pod.pod
        labels = state.namespace_labels(pod.namespace)
        table = state.nodes
        allowed: BoolArray | None = None
        for term, carriers in state.pod_index.terms(TermKind.REQUIRED_ANTI_AFFINITY, pod):
            if not term.matches(pod, labels):
                continue
            sums = domain_sums(table, term.topology_key, carriers)
            blocked = per_node(table, term.topology_key, sums) > 0
            allowed = ~blocked if allowed is None else allowed & ~blocked
        return allowed

    # -- score -------------------------------------------------------------------------------

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        raw = self.raw_scores(cycle)
        if raw is None:
            return np.zeros(nodes.size)
        values = raw[nodes]
        low, high = values.min(), values.max()
        if high - low <= 0:
            return np.zeros(nodes.size)
        # float64(MaxNodeScore) * (float64(s - min) / float64(max - min)), truncated.
        result: FloatArray = np.trunc(100.0 * ((values - low) / (high - low)))
        return result

    def raw_scores(self, cycle: Cycle) -> FloatArray | None:
        """Every node's score before normalisation (kube-scheduler's Score), or None to skip."""
        state = cycle.state
        pod = cycle.pod.pod
        table = state.nodes
        index = state.pod_index
        affinity = pod.spec.affinity
        preferred = affinity.pod_affinity if affinity is not None else None
        avoided = affinity.pod_anti_affinity if affinity is not None else None
        preferred_terms = preferred.preferred_during_scheduling_ignored_during_execution if preferred else ()
        avoided_terms = avoided.preferred_during_scheduling_ignored_during_execution if avoided else ()
        if (
            not preferred_terms
            and not avoided_terms
            and (self.ignore_preferred_terms_of_existing_pods or not index.has_terms())
        ):
            return None
        by_key: dict[str, FloatArray] = {}

        def add(key: str, carriers: IntArray, factor: int) -> None:
            sums = domain_sums(table, key, carriers) * factor
            known = by_key.get(key)
            by_key[key] = sums if known is None else known + sums

        for sign, weighted in ((1, preferred_terms), (-1, avoided_terms)):
            for w in weighted:
                condition = incoming_condition(state, pod, w.pod_affinity_term)
                add(w.pod_affinity_term.topology_key, index.count(Matcher.of([condition])), sign * w.weight)
        labels = state.namespace_labels(pod.namespace)
        existing: list[tuple[TermKind, int]] = [
            (TermKind.PREFERRED_AFFINITY, 1),
            (TermKind.PREFERRED_ANTI_AFFINITY, -1),
        ]
        if self.hard_pod_affinity_weight > 0:
            existing.insert(0, (TermKind.REQUIRED_AFFINITY, self.hard_pod_affinity_weight))
        for kind, factor in existing:
            for term, carriers in index.terms(kind, pod):
                if term.matches(pod, labels):
                    add(term.topology_key, carriers, factor)
        if not by_key:
            return None
        total = np.zeros(table.size)
        for key, sums in by_key.items():
            total += per_node(table, key, sums)
        return total

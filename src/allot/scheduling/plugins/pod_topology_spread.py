"""PodTopologySpread: keep matching pods evenly spread over topology domains, as kube-scheduler v1.36.

A constraint counts the bound pods of the pod's namespace that its selector matches (pods
being deleted do not count) per domain of its `topologyKey`, over the *eligible* nodes:
those carrying every constraint's key and passing its inclusion policies
(`nodeAffinityPolicy`, default Honor: the pod's nodeSelector and required node affinity;
`nodeTaintsPolicy`, default Ignore: Honor skips nodes with taints the pod does not tolerate).

Filter (`whenUnsatisfiable: DoNotSchedule`), per constraint in order: a node without the key
is unresolvable; otherwise pods in its domain + 1 if the pod matches its own selector −
the smallest domain count must not exceed `maxSkew`. With fewer eligible domains than
`minDomains` (default 1) the smallest count is taken as 0.

Score (`ScheduleAnyway`, weight 2): on each feasible node, for each constraint whose key it
has, count × ln(domains + 2) + (maxSkew − 1), where domains are those of the feasible nodes
(the feasible nodes themselves for `kubernetes.io/hostname`) and count is over eligible
nodes in those domains; rounded, then normalised to 100 × (max + min − s) / max (100 for
all when max is 0). Feasible nodes missing a key score 0 and take no part.

A pod without constraints of its own gets the profile's default constraints
(`defaultingType: System`: maxSkew 3 over hostname, 5 over zone, both ScheduleAnyway; or
`List` with `defaultConstraints`), counting its peers by the selector of its Services and
controller (`allot.scheduling.default_spread`); under System defaults, nodes without a
zone label are still spread by hostname. `matchLabelKeys` were merged into the selectors
when the pod was read, as the API server does on creation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from allot.cluster.events import NODE_EVENTS, POD_EVENTS, ClusterEventKind
from allot.cluster.pod_index import Matcher, selector_label_keys
from allot.cluster.pod_info import PodInfo
from allot.cluster.selectors import label_selector_matches
from allot.cluster.state import ClusterState
from allot.model.base import LabelSelector
from allot.model.codec import decode
from allot.model.core import Pod, TopologySpreadConstraint
from allot.scheduling.default_spread import HOSTNAME, SYSTEM_DEFAULTS, default_selector
from allot.scheduling.framework import BoolArray, Cycle, FloatArray, IntArray, Rejection
from allot.scheduling.plugins.node_affinity import node_affinity_signature, required_node_affinity
from allot.scheduling.plugins.taint_toleration import tolerates
from allot.scheduling.status import Code

NAME = "PodTopologySpread"
SKEW_REASON = "node(s) didn't match pod topology spread constraints"
LABEL_REASON = "node(s) didn't match pod topology spread constraints (missing required label)"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM = "System"
LIST = "List"
# No domain at all: the smallest count kube-scheduler starts from (math.MaxInt32).
_NO_DOMAIN = 2**31 - 1


@dataclass(frozen=True, slots=True)
class _Constraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


def _constraint(c: TopologySpreadConstraint, selector: LabelSelector | None) -> _Constraint:
    return _Constraint(
        max_skew=c.max_skew,
        topology_key=c.topology_key,
        selector=selector,
        min_domains=c.min_domains if c.min_domains is not None else 1,
        honor_affinity=(c.node_affinity_policy or HONOR) == HONOR,
        honor_taints=(c.node_taints_policy or IGNORE) == HONOR,
    )


def parse_default_constraints(args: Mapping[str, Any]) -> tuple[str, tuple[TopologySpreadConstraint, ...]]:
    """`defaultingType` and `defaultConstraints` of PodTopologySpreadArgs, checked as kube-scheduler does."""
    defaulting = args.get("defaultingType", SYSTEM)
    if defaulting not in (SYSTEM, LIST):
        raise ValueError(
            f'defaultingType: Unsupported value: {defaulting!r}: supported values: "List", "System"'
        )
    raw = args.get("defaultConstraints") or []
    if not isinstance(raw, list):
        raise ValueError("defaultConstraints: expected a list")
    if defaulting == SYSTEM and raw:
        raise ValueError(
            'defaultConstraints: Invalid value: when .defaultingType is "System", .defaultConstraints must be empty'
        )
    constraints: list[TopologySpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ValueError(f"defaultConstraints[{i}]: expected a mapping")
        try:
            constraint = decode(item, TopologySpreadConstraint)
        except msgspec.ValidationError as err:
            raise ValueError(f"defaultConstraints[{i}]: {err}") from None
        where = f"defaultConstraints[{i}]"
        if constraint.max_skew <= 0:
            raise ValueError(
                f"{where}.maxSkew: Invalid value: {constraint.max_skew}: not in valid range [1, inf)"
            )
        if not constraint.topology_key:
            raise ValueError(f"{where}.topologyKey: Required value: can not be empty")
        if constraint.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ValueError(
                f"{where}.whenUnsatisfiable: Unsupported value: {constraint.when_unsatisfiable!r}: "
                'supported values: "DoNotSchedule", "ScheduleAnyway"'
            )
        if constraint.label_selector is not None:
            raise ValueError(
                f"{where}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            )
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if pair in seen:
            raise ValueError(f"{where}: Duplicate value: {{{pair[0]}, {pair[1]}}}")
        seen.add(pair)
        constraints.append(constraint)
    if defaulting == SYSTEM:
        constraints = [
            TopologySpreadConstraint(topology_key=key, max_skew=skew, when_unsatisfiable=SCHEDULE_ANYWAY)
            for key, skew in SYSTEM_DEFAULTS
        ]
    return defaulting, tuple(constraints)


class PodTopologySpread:
    name = NAME
    # Pods and node labels anywhere in a domain change its count, seen from every node of it.
    wake_on = NODE_EVENTS | POD_EVENTS | {ClusterEventKind.WORKLOADS_CHANGED}
    wake_anywhere = NODE_EVENTS | POD_EVENTS

    def __init__(
        self, *, defaults: Sequence[TopologySpreadConstraint] | None = None, system_defaulted: bool = True
    ) -> None:
        if defaults is None:
            _, defaults = parse_default_constraints({})
        self.defaults = tuple(defaults)
        self.system_defaulted = system_defaulted
        # Whether pods without constraints of their own can be rejected (List defaults).
        self.hard_defaults = any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in self.defaults)
        self._affinity_cache: dict[tuple[object, bytes], BoolArray] = {}

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> PodTopologySpread:
        defaulting, constraints = parse_default_constraints(args)
        return cls(defaults=constraints, system_defaulted=defaulting == SYSTEM)

    def equivalence_key(self, state: ClusterState, info: PodInfo) -> str:
        # Feasibility reads the pod's labels only through DoNotSchedule constraints: its own
        # (whose selectors may match itself), or default ones, found by its labels and owners.
        meta = info.pod.metadata
        own = info.pod.spec.topology_spread_constraints
        if own:
            keys: set[str] = set()
            for c in own:
                if c.when_unsatisfiable == DO_NOT_SCHEDULE:
                    keys |= selector_label_keys(c.label_selector)
            return msgspec.json.encode(sorted((k, meta.labels[k]) for k in keys if k in meta.labels)).decode()
        if not self.hard_defaults:
            return ""
        owners = sorted((r.api_version, r.kind, r.name, bool(r.controller)) for r in meta.owner_references)
        return msgspec.json.encode((sorted(meta.labels.items()), owners)).decode()

    # -- constraints -------------------------------------------------------------------------

    def constraints(self, state: ClusterState, pod: Pod, action: str) -> list[_Constraint]:
        own = pod.spec.topology_spread_constraints
        if own:
            return [_constraint(c, c.label_selector) for c in own if c.when_unsatisfiable == action]
        defaults = [c for c in self.defaults if c.when_unsatisfiable == action]
        if not defaults:
            return []
        selector = default_selector(state, pod)
        if selector is None:
            return []
        return [_constraint(c, selector) for c in defaults]

    def _counts(self, state: ClusterState, pod: Pod, constraint: _Constraint) -> IntArray:
        matcher = Matcher.of([(frozenset({pod.namespace}), constraint.selector)], skip_terminating=True)
        return state.pod_index.count(matcher)

    def _has_keys(self, state: ClusterState, constraints: Sequence[_Constraint]) -> BoolArray:
        table = state.nodes
        has = np.ones(table.size, dtype=np.bool_)
        for c in constraints:
            has &= table.domains(c.topology_key)[0] >= 0
        return has

    def _included(self, cycle: Cycle, constraint: _Constraint) -> BoolArray:
        """Nodes the constraint's inclusion policies count pods on."""
        state = cycle.state
        table = state.nodes
        included = np.ones(table.size, dtype=np.bool_)
        if constraint.honor_affinity:
            spec = cycle.pod.pod.spec
            key = (table, node_affinity_signature(spec))
            mask = self._affinity_cache.get(key)
            if mask is None:
                if len(self._affinity_cache) > 1024:
                    self._affinity_cache.clear()
                mask = self._affinity_cache[key] = required_node_affinity(table, spec)
            included &= mask
        if constraint.honor_taints:
            tolerations = cycle.pod.pod.spec.tolerations
            for info in table.infos:
                if any(
                    t.effect in ("NoSchedule", "NoExecute") and not tolerates(tolerations, t)
                    for t in info.taints
                ):
                    included[info.index] = False
        return included

    # -- filter ------------------------------------------------------------------------------

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        state = cycle.state
        pod = cycle.pod.pod
        constraints = self.constraints(state, pod, DO_NOT_SCHEDULE)
        if not constraints:
            return []
        table = state.nodes
        has_keys = self._has_keys(state, constraints)
        missing = np.zeros(table.size, dtype=np.bool_)
        skewed = np.zeros(table.size, dtype=np.bool_)
        decided = ~candidates
        for c in constraints:
            ids, values = table.domains(c.topology_key)
            eligible = has_keys & self._included(cycle, c)
            counts = self._counts(state, pod, c)
            sums = np.bincount(
                ids[eligible], weights=counts[eligible].astype(np.float64), minlength=len(values)
            )
            present = np.zeros(len(values), dtype=np.bool_)
            present[ids[eligible]] = True
            domains = int(present.sum())
            smallest = int(sums[present].min()) if domains else _NO_DOMAIN
            if domains < c.min_domains:
                smallest = 0
            self_match = 1 if label_selector_matches(c.selector, pod.metadata.labels) else 0
            no_label = ~decided & (ids < 0)
            missing |= no_label
            decided |= no_label
            in_domain = np.where(ids >= 0, sums[np.maximum(ids, 0)] if len(values) else 0.0, 0.0)
            too_skewed = ~decided & (in_domain + self_match - smallest > c.max_skew)
            skewed |= too_skewed
            decided |= too_skewed
        rejections = []
        if missing.any():
            rejections.append(Rejection(LABEL_REASON, missing, Code.UNRESOLVABLE))
        if skewed.any():
            rejections.append(Rejection(SKEW_REASON, skewed, Code.UNSCHEDULABLE))
        return rejections

    # -- score -------------------------------------------------------------------------------

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        state = cycle.state
        pod = cycle.pod.pod
        constraints = self.constraints(state, pod, SCHEDULE_ANYWAY)
        if not constraints or nodes.size == 0:
            return np.zeros(nodes.size)
        table = state.nodes
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        feasible = np.zeros(table.size, dtype=np.bool_)
        feasible[nodes] = True
        has_keys = self._has_keys(state, constraints)
        scored = feasible & has_keys if require_all else feasible
        counted = has_keys if require_all else np.ones(table.size, dtype=np.bool_)
        raw = np.zeros(table.size)
        for c in constraints:
            ids, values = table.domains(c.topology_key)
            counts = self._counts(state, pod, c)
            # Nodes without the key form the domain "" when not every key is required.
            domain = np.where(ids >= 0, ids, len(values))
            if c.topology_key == HOSTNAME:
                weight = math.log(int(scored.sum()) + 2)
                per_node = counts.astype(np.float64)
            else:
                present = np.zeros(len(values) + 1, dtype=np.bool_)
                present[domain[scored]] = True
                weight = math.log(int(present.sum()) + 2)
                eligible = counted & self._included(cycle, c) & present[domain]
                sums = np.bincount(
                    domain[eligible], weights=counts[eligible].astype(np.float64), minlength=len(values) + 1
                )
                per_node = sums[domain].astype(np.float64)
            has = ids >= 0
            raw = np.where(has, raw + (per_node * weight + float(c.max_skew - 1)), raw)
        rounded = np.floor(raw + 0.5)
        values_ = rounded[nodes]
        taking = scored[nodes]
        if not taking.any():
            return np.zeros(nodes.size)
        low = values_[taking].min()
        high = values_[taking].max()
        if high == 0:
            return np.where(taking, 100.0, 0.0)
        result: FloatArray = np.where(taking, (100 * (high + low - values_)) // high, 0.0)
        return result

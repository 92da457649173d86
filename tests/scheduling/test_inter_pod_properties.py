"""Whatever the cluster and the order, placement never breaks a required (anti-)affinity or a
DoNotSchedule spread constraint; and rolling a what-if back leaves the pod index as it was.

The checker below is written from the API's definitions, independently of the plugins: it
looks at the bound pods as they end up, not at how the scheduler counted them.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.cluster.invariants import check
from allot.cluster.pod_index import Matcher, TermKind
from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.model.base import LabelSelector, ObjectMeta
from allot.model.core import (
    Affinity,
    Container,
    Node,
    NodeStatus,
    Pod,
    PodAffinity,
    PodAffinityTerm,
    PodSpec,
    TopologySpreadConstraint,
)
from allot.model.defaults import apply_defaults
from allot.model.quantity import Quantity
from allot.scheduling.scheduler import Scheduler
from fuzzing import examples

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
APPS = ("web", "db", "cache")


def make_node(name: str, zone: str | None) -> Node:
    labels = {HOST: name, **({ZONE: zone} if zone else {})}
    capacity = {"cpu": Quantity.parse("4"), "memory": Quantity.parse("8Gi"), "pods": Quantity.parse("110")}
    return Node(
        metadata=ObjectMeta(name=name, labels=labels),
        status=NodeStatus(capacity=capacity, allocatable=capacity),
    )


def make_pod(index: int, app: str, rule: str, key: str, target: str) -> Pod:
    selector = LabelSelector(match_labels={"app": target})
    spec = PodSpec(containers=(Container(name="c", image="x"),))
    term = PodAffinityTerm(label_selector=selector, topology_key=key)
    if rule == "anti":
        spec = PodSpec(
            containers=spec.containers,
            affinity=Affinity(
                pod_anti_affinity=PodAffinity(required_during_scheduling_ignored_during_execution=(term,))
            ),
        )
    elif rule == "affinity":
        spec = PodSpec(
            containers=spec.containers,
            affinity=Affinity(
                pod_affinity=PodAffinity(required_during_scheduling_ignored_during_execution=(term,))
            ),
        )
    elif rule == "spread":
        constraint = TopologySpreadConstraint(
            max_skew=1,
            topology_key=key,
            when_unsatisfiable="DoNotSchedule",
            label_selector=LabelSelector(match_labels={"app": app}),
        )
        spec = PodSpec(containers=spec.containers, topology_spread_constraints=(constraint,))
    meta = ObjectMeta(name=f"p{index}", namespace="default", labels={"app": app})
    return apply_defaults(Pod(metadata=meta, spec=spec))


pods_strategy = st.lists(
    st.tuples(
        st.sampled_from(APPS),
        st.sampled_from(("none", "anti", "affinity", "spread")),
        st.sampled_from((HOST, ZONE)),
        st.sampled_from(APPS),
    ),
    min_size=1,
    max_size=14,
)
nodes_strategy = st.lists(st.sampled_from(("a", "b", "c", None)), min_size=1, max_size=6)


def domain(state: ClusterState, info: PodInfo, key: str) -> str | None:
    assert info.node is not None
    return state.nodes.infos[info.node].labels.get(key)


def target_of(term: PodAffinityTerm) -> str:
    assert term.label_selector is not None
    return term.label_selector.match_labels["app"]


def required_terms(group: PodAffinity | None) -> tuple[PodAffinityTerm, ...]:
    return group.required_during_scheduling_ignored_during_execution if group is not None else ()


def violations(state: ClusterState) -> list[str]:
    """Required (anti-)affinity and DoNotSchedule spreading among the bound pods, checked from scratch."""
    found: list[str] = []
    bound = [info for info in state.pods.values() if info.node is not None]

    def near(info: PodInfo, term: PodAffinityTerm) -> list[PodInfo]:
        """Other bound pods the term selects in the pod's domain of the term's key."""
        mine = domain(state, info, term.topology_key)
        return [
            other
            for other in bound
            if other is not info
            and mine is not None
            and other.pod.metadata.labels.get("app") == target_of(term)
            and domain(state, other, term.topology_key) == mine
        ]

    for info in bound:
        spec = info.pod.spec
        affinity = spec.affinity
        for term in required_terms(affinity.pod_anti_affinity if affinity else None):
            found.extend(f"{info.key} shares its {term.topology_key} with {o.key}" for o in near(info, term))
        for term in required_terms(affinity.pod_affinity if affinity else None):
            if domain(state, info, term.topology_key) is None:
                found.append(f"{info.key} on a node without {term.topology_key}")
            # The first of a group that attracts itself may start alone.
            elif not near(info, term) and info.pod.metadata.labels.get("app") != target_of(term):
                found.append(f"{info.key} has no {target_of(term)} pod near it")
        for constraint in spec.topology_spread_constraints:
            key = constraint.topology_key
            assert constraint.label_selector is not None
            app = constraint.label_selector.match_labels["app"]
            domains = {i.labels[key] for i in state.nodes.infos if key in i.labels}
            counts = Counter(domain(state, p, key) for p in bound if p.pod.metadata.labels.get("app") == app)
            values = [counts.get(d, 0) for d in domains]
            if domain(state, info, key) is None:
                found.append(f"{info.key} spread onto a node without {key}")
            elif max(values) - min(values) > constraint.max_skew:
                found.append(f"{info.key}: {app} over {key} spread {sorted(values)}")
    return found


@settings(max_examples=examples(40), deadline=None)
@given(zones=nodes_strategy, specs=pods_strategy)
def test_placement_never_breaks_required_inter_pod_rules(
    zones: list[str | None], specs: list[tuple[str, str, str, str]]
) -> None:
    state = ClusterState(nodes=[make_node(f"n{i}", z) for i, z in enumerate(zones)])
    scheduler = Scheduler(state)
    # Every pod of an app with spreading spreads (a pod of it placed without the constraint
    # could unbalance the app legitimately), so all pods of a spread app carry the constraint.
    spread_apps = {app for app, rule, _, _ in specs if rule == "spread"}
    spread_key = {app: key for app, rule, key, _ in specs if rule == "spread"}
    for index, (app, rule, key, target) in enumerate(specs):
        if app in spread_apps:
            rule, key = "spread", spread_key[app]
        scheduler.schedule(state.add_pod(make_pod(index, app, rule, key, target)).key)
    assert violations(state) == []
    assert check(state) == []


@settings(max_examples=examples(25), deadline=None)
@given(zones=nodes_strategy, specs=pods_strategy)
def test_a_rolled_back_what_if_leaves_the_pod_index_as_it_was(
    zones: list[str | None], specs: list[tuple[str, str, str, str]]
) -> None:
    state = ClusterState(nodes=[make_node(f"n{i}", z) for i, z in enumerate(zones)])
    scheduler = Scheduler(state)
    keys = [state.add_pod(make_pod(i, *spec)).key for i, spec in enumerate(specs)]
    half = len(keys) // 2
    for key in keys[:half]:
        scheduler.schedule(key)
    matchers = [Matcher.of([(None, LabelSelector(match_labels={"app": app}))]) for app in APPS]

    def snapshot() -> tuple[object, ...]:
        index = state.pod_index
        counts = tuple(tuple(index.count(m).tolist()) for m in matchers)
        terms = tuple(
            sorted(
                (term.key, tuple(per_node.tolist()))
                for term, per_node in index.terms(TermKind.REQUIRED_ANTI_AFFINITY)
            )
        )
        return counts, terms

    before = snapshot()
    with state.journal.transaction():
        for key in keys[half:]:
            scheduler.schedule(key)
        for key in keys[:half]:
            state.unbind(key)
    assert snapshot() == before


def test_the_invariant_checker_names_an_anti_affinity_allot_broke() -> None:
    state = ClusterState(nodes=[make_node("n0", "a")])
    state.bind(state.add_pod(make_pod(0, "web", "none", HOST, "web")).key, "n0", {})
    # Bound by hand next to the pod its required anti-affinity selects (no scheduler would).
    state.bind(state.add_pod(make_pod(1, "db", "anti", HOST, "web")).key, "n0", {})
    assert check(state) == [
        f"pod default/p1's required anti-affinity selects pod default/p0 in its {HOST} n0"
    ]

"""InterPodAffinity: required and preferred, affinity and anti-affinity, both directions.

Expected nodes and scores are worked out by hand from kube-scheduler's rules (see the
plugin's docstring); the same rules were checked against kube-scheduler v1.36 itself.
"""

from __future__ import annotations

from allot.scheduling.plugins.inter_pod_affinity import (
    AFFINITY_REASON,
    ANTI_AFFINITY_REASON,
    EXISTING_ANTI_AFFINITY_REASON,
)
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from scheduling.manifests import add, cluster, feasible, place, pod_doc, scores, zoned

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
NODES = zoned(("a1", "a"), ("a2", "a"), ("b1", "b"))


def term(app: str, key: str, **extra: object) -> dict[str, object]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}, **extra}


def required(kind: str, *terms: dict[str, object]) -> dict[str, object]:
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


def preferred(kind: str, *weighted: tuple[int, dict[str, object]]) -> dict[str, object]:
    entries = [{"weight": w, "podAffinityTerm": t} for w, t in weighted]
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": entries}}


def test_required_anti_affinity_keeps_a_pod_off_its_targets_node_and_zone() -> None:
    state = cluster(NODES, pod_doc("web-0", labels={"app": "web"}, node="a1"))
    by_host = add(
        state, pod_doc("web-1", labels={"app": "web"}, **required("podAntiAffinity", term("web", HOST)))
    )
    assert feasible(state, by_host) == {"a2", "b1"}
    by_zone = add(
        state, pod_doc("web-2", labels={"app": "web"}, **required("podAntiAffinity", term("web", ZONE)))
    )
    assert feasible(state, by_zone) == {"b1"}


def test_an_existing_pods_anti_affinity_rejects_the_incoming_pod() -> None:
    guard = pod_doc(
        "guard", labels={"app": "db"}, node="b1", **required("podAntiAffinity", term("web", ZONE))
    )
    state = cluster(NODES, guard)
    web = add(state, pod_doc("web", labels={"app": "web"}))
    assert feasible(state, web) == {"a1", "a2"}
    other = add(state, pod_doc("cache", labels={"app": "cache"}))
    assert feasible(state, other) == {"a1", "a2", "b1"}


def test_pods_differing_only_in_labels_no_term_reads_share_a_class() -> None:
    state = cluster(NODES)
    scheduler = Scheduler(state)
    web_1 = add(state, pod_doc("web-1", labels={"app": "web", "job": "1"}))
    web_2 = add(state, pod_doc("web-2", labels={"app": "web", "job": "2"}))
    db = add(state, pod_doc("db", labels={"app": "db", "job": "3"}))
    # No term reads a label: one class.
    assert scheduler.equivalence_class(web_1) == scheduler.equivalence_class(db)
    guard = add(
        state, pod_doc("guard", labels={"app": "x"}, **required("podAntiAffinity", term("web", ZONE)))
    )
    state.bind(guard, "b1", {})
    # The guard's term reads `app`: web pods are rejected where db is not.
    assert scheduler.equivalence_class(web_1) == scheduler.equivalence_class(web_2)
    assert scheduler.equivalence_class(web_1) != scheduler.equivalence_class(db)
    state.unbind(guard)
    assert scheduler.equivalence_class(web_1) == scheduler.equivalence_class(db)


def test_each_node_reports_the_first_rule_it_fails() -> None:
    guard = pod_doc(
        "guard", labels={"app": "db"}, node="b1", **required("podAntiAffinity", term("web", ZONE))
    )
    state = cluster(NODES, guard, pod_doc("web-0", labels={"app": "web"}, node="a1"))
    spec = required("podAntiAffinity", term("web", ZONE))
    key = add(state, pod_doc("web-1", labels={"app": "web"}, **spec))
    outcome = place(state, key)
    assert isinstance(outcome, Unschedulable)
    # a1, a2: the pod's own anti-affinity (zone a holds web-0); b1: the guard's (checked last).
    assert outcome.diagnosis.histogram() == {ANTI_AFFINITY_REASON: 2, EXISTING_ANTI_AFFINITY_REASON: 1}
    assert outcome.message == (
        "0/3 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules, "
        "2 node(s) didn't match pod anti-affinity rules."
    )


def test_required_affinity_follows_its_target_and_lets_the_first_of_a_group_start() -> None:
    state = cluster(NODES)
    spec = required("podAffinity", term("cache", ZONE))
    first = add(state, pod_doc("cache-0", labels={"app": "cache"}, **spec))
    # No pod matches yet and the pod matches its own term: any node with the zone label.
    assert feasible(state, first) == {"a1", "a2", "b1"}
    state.bind(first, "b1", {})
    second = add(state, pod_doc("cache-1", labels={"app": "cache"}, **spec))
    assert feasible(state, second) == {"b1"}
    # A pod that does not match its own term has nowhere to go without a target.
    lonely = add(state, pod_doc("api", labels={"app": "api"}, **required("podAffinity", term("db", ZONE))))
    outcome = place(state, lonely)
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == f"0/3 nodes are available: 3 {AFFINITY_REASON}."


def test_required_affinity_needs_one_pod_matching_all_terms() -> None:
    pods = [
        pod_doc("cache", labels={"app": "cache"}, node="a1"),
        pod_doc("gold", labels={"tier": "gold"}, node="b1"),
    ]
    state = cluster(NODES, *pods)
    spec = required(
        "podAffinity",
        term("cache", ZONE),
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"tier": "gold"}}},
    )
    key = add(state, pod_doc("api", **spec))
    # Zone a has a cache pod and zone b a gold pod, but no pod is both.
    assert feasible(state, key) == set()
    state.bind(add(state, pod_doc("both", labels={"app": "cache", "tier": "gold"})), "b1", {})
    assert feasible(state, key) == {"b1"}


def test_namespaces_and_namespace_selectors_choose_whose_pods_count() -> None:
    namespaces = "\n---\n".join(
        f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}, labels: {{team: {team}}}}}"
        for name, team in (("blue", "b"), ("red", "r"))
    )
    red_web = pod_doc("web", labels={"app": "web"}, node="a1").replace(
        "name: web", "name: web\n  namespace: red"
    )
    state = cluster(NODES, namespaces, red_web)
    # Terms select the pod's own namespace by default: the red pod does not count.
    own = add(state, pod_doc("mine", **required("podAntiAffinity", term("web", HOST))))
    assert feasible(state, own) == {"a1", "a2", "b1"}
    named = add(state, pod_doc("named", **required("podAntiAffinity", term("web", HOST, namespaces=["red"]))))
    assert feasible(state, named) == {"a2", "b1"}
    by_label = term("web", HOST, namespaceSelector={"matchLabels": {"team": "r"}})
    selected = add(state, pod_doc("selected", **required("podAntiAffinity", by_label)))
    assert feasible(state, selected) == {"a2", "b1"}
    everywhere = add(
        state, pod_doc("everywhere", **required("podAntiAffinity", term("web", HOST, namespaceSelector={})))
    )
    assert feasible(state, everywhere) == {"a2", "b1"}
    elsewhere = term("web", HOST, namespaceSelector={"matchLabels": {"team": "b"}})
    blue_only = add(state, pod_doc("blue-only", **required("podAntiAffinity", elsewhere)))
    assert feasible(state, blue_only) == {"a1", "a2", "b1"}


def test_match_label_keys_narrow_the_selector_to_the_pods_revision() -> None:
    state = cluster(NODES, pod_doc("old", labels={"app": "web", "rev": "1"}, node="a1"))
    spec = required("podAntiAffinity", term("web", HOST, matchLabelKeys=["rev"]))
    same = add(state, pod_doc("same", labels={"app": "web", "rev": "1"}, **spec))
    assert feasible(state, same) == {"a2", "b1"}
    newer = add(state, pod_doc("newer", labels={"app": "web", "rev": "2"}, **spec))
    assert feasible(state, newer) == {"a1", "a2", "b1"}


def test_preferred_terms_score_by_domain_and_normalise_over_feasible_nodes() -> None:
    state = cluster(NODES, pod_doc("cache-0", labels={"app": "cache"}, node="a1"))
    affinity = {
        **preferred("podAffinity", (80, term("cache", ZONE))),
        **preferred("podAntiAffinity", (20, term("cache", HOST))),
    }
    key = add(state, pod_doc("api", affinity=affinity))
    # Raw: a1 = +80 (zone a) - 20 (its own host) = 60, a2 = +80, b1 = 0; normalised over [0, 80].
    assert scores(state, key, "InterPodAffinity") == {"a1": 75.0, "a2": 100.0, "b1": 0.0}


def test_bound_pods_terms_score_the_incoming_pod() -> None:
    shy = pod_doc("shy", node="b1", affinity=preferred("podAntiAffinity", (50, term("web", ZONE))))
    friend = pod_doc("friend", node="a1", **required("podAffinity", term("web", ZONE)))
    state = cluster(NODES, shy, friend)
    key = add(state, pod_doc("web", labels={"app": "web"}))
    # friend's required term adds hardPodAffinityWeight (1) in zone a; shy's subtracts 50 in zone b.
    assert scores(state, key, "InterPodAffinity") == {"a1": 100.0, "a2": 100.0, "b1": 0.0}
    neutral = add(state, pod_doc("cache", labels={"app": "cache"}))
    assert scores(state, neutral, "InterPodAffinity") == {"a1": 0.0, "a2": 0.0, "b1": 0.0}


def test_preemption_can_free_a_node_from_an_anti_affinity_target() -> None:
    low = pod_doc("low", labels={"app": "web"}, node="a1")
    state = cluster(zoned(("a1", "a")), low)
    spec = required("podAntiAffinity", term("web", HOST))
    key = add(state, pod_doc("high", **spec, priority=100))
    outcome = place(state, key)
    assert isinstance(outcome, Unschedulable)
    from allot.scheduling.preemption import Preemptor
    from allot.scheduling.scheduler import Scheduler

    candidate = Preemptor(Scheduler(state)).preempt(key, outcome)
    assert candidate is not None and candidate.victims == ("default/low",)
    state.unbind("default/low")
    assert isinstance(place(state, key), Placement)

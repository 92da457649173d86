"""PodTopologySpread: maxSkew, minDomains, whenUnsatisfiable, inclusion policies, defaults.

Expected nodes and scores are worked out by hand from kube-scheduler's rules (see the
plugin's docstring).
"""

from __future__ import annotations

import math

import yaml

from allot.scheduling.plugins.pod_topology_spread import LABEL_REASON, SKEW_REASON
from allot.scheduling.scheduler import Unschedulable
from scheduling.manifests import add, cluster, feasible, node_doc, place, pod_doc, scores, zoned

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def spread(key: str, skew: int = 1, when: str = "DoNotSchedule", **extra: object) -> dict[str, object]:
    constraint = {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": "web"}},
        **extra,
    }
    return {"topologySpreadConstraints": [constraint]}


def web(name: str, node: str = "", **spec: object) -> str:
    return pod_doc(name, labels={"app": "web"}, node=node, **spec)


def test_max_skew_keeps_zones_within_one_pod_of_each_other() -> None:
    state = cluster(zoned(("a1", "a"), ("a2", "a"), ("b1", "b")), web("w0", "a1"), web("w1", "a2"))
    key = add(state, web("w2", **spread(ZONE)))
    # Zone a would hold 3 against zone b's 0: skew 3 > 1.
    assert feasible(state, key) == {"b1"}
    outcome_key = add(state, web("w3", **spread(ZONE, skew=2)))
    assert feasible(state, outcome_key) == {"b1"}
    loose = add(state, web("w4", **spread(ZONE, skew=3)))
    assert feasible(state, loose) == {"a1", "a2", "b1"}


def test_pods_the_selector_does_not_match_do_not_count_nor_does_the_pod_itself() -> None:
    state = cluster(zoned(("a1", "a"), ("b1", "b")), web("w0", "a1"))
    other = add(state, pod_doc("api", labels={"app": "api"}, **spread(ZONE)))
    # The api pod does not match its own selector: zone a holds 1, zone b 0, skew 1 is allowed.
    assert feasible(state, other) == {"a1", "b1"}
    own = add(state, web("w1", **spread(ZONE)))
    assert feasible(state, own) == {"b1"}


def test_min_domains_counts_missing_domains_as_empty() -> None:
    state = cluster(zoned(("a1", "a"), ("a2", "a")), web("w0", "a1"))
    key = add(state, web("w1", **spread(ZONE, minDomains=2)))
    outcome = place(state, key)
    # One zone only, fewer than minDomains: the minimum is taken as 0, and 1 + 1 - 0 > 1.
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == f"0/2 nodes are available: 2 {SKEW_REASON}."
    enough = add(state, web("w2", **spread(ZONE, minDomains=1)))
    assert feasible(state, enough) == {"a1", "a2"}


def test_nodes_without_the_key_are_unresolvable_and_not_counted() -> None:
    state = cluster(zoned(("a1", "a"), ("x", None)), web("w0", "x"), web("w1", "x"))
    key = add(state, web("w2", **spread(ZONE)))
    # x has no zone: it is not a domain (its two pods do not count) and cannot take the pod.
    assert feasible(state, key) == {"a1"}
    state.bind(key, "a1", {})
    blocked = add(state, web("w3", **spread(ZONE), nodeSelector={HOST: "x"}))
    outcome = place(state, blocked)
    assert isinstance(outcome, Unschedulable)
    assert LABEL_REASON in outcome.message


def test_node_taints_policy_honor_leaves_untolerated_nodes_out() -> None:
    tainted = yaml.safe_load(node_doc("b1", {ZONE: "b"}))
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}
    state = cluster(zoned(("a1", "a"), ("a2", "a")), yaml.safe_dump(tainted), web("w0", "a1"))
    ignore = add(state, web("w1", **spread(ZONE)))
    # Ignore (default): zone b counts with 0 pods, so zone a (1 + 1 - 0) is too full; b1 is tainted.
    assert feasible(state, ignore) == set()
    honor = add(state, web("w2", **spread(ZONE, nodeTaintsPolicy="Honor")))
    # Honor: zone b is not counted, zone a is the only domain and the minimum.
    assert feasible(state, honor) == {"a1", "a2"}


def test_node_affinity_policy_decides_which_domains_count() -> None:
    labelled = [
        node_doc(n, {ZONE: z, "disk": "ssd" if z == "a" else "hdd"}) for n, z in (("a1", "a"), ("b1", "b"))
    ]
    state = cluster(*labelled, web("w0", "a1"))
    honor = add(state, web("w1", nodeSelector={"disk": "ssd"}, **spread(ZONE)))
    # Honor (default): zone b fails the nodeSelector and does not count; zone a is alone.
    assert feasible(state, honor) == {"a1"}
    ignore = add(state, web("w2", nodeSelector={"disk": "ssd"}, **spread(ZONE, nodeAffinityPolicy="Ignore")))
    assert feasible(state, ignore) == set()


def test_schedule_anyway_scores_emptier_domains_higher() -> None:
    state = cluster(zoned(("a1", "a"), ("a2", "a"), ("b1", "b")), web("w0", "a1"), web("w1", "a1"))
    key = add(state, web("w2", **spread(ZONE, when="ScheduleAnyway")))
    # Two zones among the feasible nodes: weight ln(4); zone a: 2 pods -> 2 ln 4 ~ 2.77 -> 3, zone b: 0.
    assert round(2 * math.log(4)) == 3
    # Normalised 100 * (max + min - s) / max: zone a 0, zone b 100.
    assert scores(state, key, "PodTopologySpread") == {"a1": 0.0, "a2": 0.0, "b1": 100.0}


def test_system_defaults_spread_pods_a_service_selects() -> None:
    service = yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}},
        }
    )
    state = cluster(zoned(("a1", "a"), ("b1", "b")), service, web("w0", "a1"))
    key = add(state, web("w1"))
    # Hostname (maxSkew 3, weight ln 4) and zone (maxSkew 5, weight ln 4) both count w0:
    # a1 = 1 ln4 + 2 + 1 ln4 + 4 ~ 8.77 -> 9, b1 = 2 + 4 = 6; normalised 100 (9 + 6 - s) / 9.
    assert scores(state, key, "PodTopologySpread") == {"a1": 66.0, "b1": 100.0}
    loner = add(state, pod_doc("api", labels={"app": "api"}))
    # No Service or controller selects it: no default constraint, no score.
    assert scores(state, loner, "PodTopologySpread") == {"a1": 0.0, "b1": 0.0}


def test_a_replica_set_controller_gives_default_spreading_its_selector() -> None:
    replica_set = yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web-7d"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        }
    )
    owned = yaml.safe_load(web("w1"))
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d", "uid": "u1", "controller": True}
    ]
    state = cluster(zoned(("a1", "a"), ("b1", "b")), replica_set, web("w0", "a1"))
    key = add(state, yaml.safe_dump(owned))
    assert scores(state, key, "PodTopologySpread") == {"a1": 66.0, "b1": 100.0}

"""The scenario generator: the same seed gives the same objects, objects allot accepts, pods in the
order kube-scheduler and allot both take them, and the features each seed drew."""

from __future__ import annotations

import json

from allot.model.loader import load_text
from differential.features import POD_GROUPS, features_of
from differential.generate import PRIORITIES, ZONE, generate

SEEDS = range(16)


def test_a_seed_always_gives_the_same_scenario() -> None:
    first, again, other = generate(7), generate(7), generate(8)
    assert json.dumps(first.objects()) == json.dumps(again.objects())
    assert json.dumps(first.objects()) != json.dumps(other.objects())


def test_objects_load_without_errors_and_pods_come_in_the_order_both_schedulers_take_them() -> None:
    for seed in SEEDS:
        scenario = generate(seed)
        manifests = load_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": scenario.objects()}))
        assert not manifests.skipped
        names = [p["metadata"]["name"] for p in scenario.pending]
        assert names == sorted(names), "pod names must sort in creation order"
        values = [PRIORITIES.get(p["spec"].get("priorityClassName", ""), 0) for p in scenario.pending]
        assert values == sorted(values, reverse=True), "pending pods are created by priority"


def test_the_tags_follow_the_families_a_seed_drew() -> None:
    drawn: set[str] = set()
    for seed in range(40):
        scenario = generate(seed)
        tags = features_of(scenario.objects())
        assert ("counters" in tags) == ("mig" in scenario.families), seed
        assert ("volumes" in tags) == ("volumes" in scenario.families), seed
        assert ("budgets" in tags) == ("budgets" in scenario.families), seed
        assert "budgets" not in scenario.families or "priorities" in scenario.families, seed
        # A group that the feature decides is always made when its family is drawn.
        for feature in POD_GROUPS & scenario.families:
            assert feature in tags, (seed, feature)
            drawn.add(feature)
    assert drawn == POD_GROUPS


def test_volumes_are_pinned_to_nodes_or_zones_and_every_volume_claim_is_used() -> None:
    drew = 0
    for seed in range(40):
        scenario = generate(seed)
        claims = {
            (o["metadata"]["namespace"], o["metadata"]["name"]): o
            for o in scenario.cluster
            if o["kind"] == "PersistentVolumeClaim"
        }
        volumes = [o for o in scenario.cluster if o["kind"] == "PersistentVolume"]
        nodes = {o["metadata"]["name"] for o in scenario.cluster if o["kind"] == "Node"}
        zones = {o["metadata"]["labels"][ZONE] for o in scenario.cluster if o["kind"] == "Node"}
        for volume in volumes:
            if "nodeAffinity" in volume["spec"]:
                (term,) = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
                assert set(term["matchExpressions"][0]["values"]) <= nodes, (seed, volume["metadata"]["name"])
            else:
                assert volume["metadata"]["labels"][ZONE] in zones, (seed, volume["metadata"]["name"])
        used = set()
        for pod in [*scenario.running, *scenario.pending]:
            for entry in pod["spec"].get("volumes") or []:
                claim = (pod["metadata"]["namespace"], entry["persistentVolumeClaim"]["claimName"])
                assert claim in claims, (seed, claim)
                used.add(claim)
        assert used == set(claims), seed
        drew += bool(claims)
    assert drew >= 5

"""Validation of Kueue objects (allot.model.validate_kueue): CRD schema rules and webhook rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Problems = Callable[..., list[str]]


def cluster_queue(version: str = "v1beta2", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": spec,
    }


def group(covered: list[str], *flavors: dict[str, Any]) -> dict[str, Any]:
    return {"coveredResources": covered, "flavors": list(flavors)}


def flavor(name: str, **quotas: Any) -> dict[str, Any]:
    return {"name": name, "resources": [{"name": r, **q} for r, q in quotas.items()]}


G = "spec.resourceGroups"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {
                "cohortName": "research",
                "resourceGroups": [
                    group(
                        ["cpu", "memory"],
                        flavor("default", cpu={"nominalQuota": 8}, memory={"nominalQuota": "32Gi"}),
                    ),
                    group(
                        ["nvidia.com/gpu"],
                        flavor(
                            "h100",
                            **{"nvidia.com/gpu": {"nominalQuota": 4, "borrowingLimit": 0, "lendingLimit": 4}},
                        ),
                    ),
                ],
            },
            [],
        ),
        (
            {"resourceGroups": [{"flavors": [], "coveredResources": []}]},
            [f"{G}[0].coveredResources: Required value", f"{G}[0].flavors: Required value"],
        ),
        (
            {"resourceGroups": [group(["cpu"], flavor("f", cpu={"nominalQuota": 1}))] * 17},
            [f"{G}: Too many: 17: must have at most 16 items"],
        ),
        (
            {
                "resourceGroups": [
                    group(["cpu"], flavor("a", cpu={"nominalQuota": 1})),
                    group(["cpu", "gpu"], flavor("a", cpu={"nominalQuota": 1}, gpu={"nominalQuota": 1})),
                ]
            },
            [
                f'{G}[1].coveredResources[0]: Duplicate value: "cpu"',
                f'{G}[1].flavors[0].name: Duplicate value: "a"',
            ],
        ),
        (
            {
                "resourceGroups": [
                    group(["cpu"], flavor("a", cpu={}), flavor("b", cpu={"nominalQuota": "-1"}))
                ]
            },
            [
                f"{G}[0].flavors[0].resources[0].nominalQuota: Required value",
                f'{G}[0].flavors[1].resources[0].nominalQuota: Invalid value: "-1": must be greater than or equal to 0',
            ],
        ),
        (
            {"resourceGroups": [group(["cpu"], flavor("a", cpu={"nominalQuota": 4, "lendingLimit": 2}))]},
            [
                f'{G}[0].flavors[0].resources[0].lendingLimit: Invalid value: "2": must be nil when cohort is empty'
            ],
        ),
        (
            {
                "cohortName": "c",
                "resourceGroups": [
                    group(
                        ["cpu"],
                        flavor("a", cpu={"nominalQuota": 4, "lendingLimit": 5, "borrowingLimit": "-1"}),
                    )
                ],
            },
            [
                f'{G}[0].flavors[0].resources[0].borrowingLimit: Invalid value: "-1": must be greater than or equal to 0',
                f'{G}[0].flavors[0].resources[0].lendingLimit: Invalid value: "5": must be less than or equal to the nominalQuota',
            ],
        ),
        (
            {"queueingStrategy": "FIFO", "stopPolicy": "Stop"},
            [
                'spec.queueingStrategy: Unsupported value: "FIFO": supported values: "StrictFIFO", "BestEffortFIFO"',
                'spec.stopPolicy: Unsupported value: "Stop": supported values: "None", "Hold", "HoldAndDrain"',
            ],
        ),
        (
            {
                "preemption": {
                    "reclaimWithinCohort": "Never",
                    "withinClusterQueue": "Any",
                    "borrowWithinCohort": {"policy": "LowerPriority"},
                }
            },
            [
                'spec.preemption.withinClusterQueue: Unsupported value: "Any": supported values: "Never", "LowerPriority", "LowerOrNewerEqualPriority"',
                "spec.preemption: Invalid value: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
            ],
        ),
        (
            {
                "flavorFungibility": {
                    "whenCanBorrow": "Borrow",
                    "whenCanPreempt": "MayStopSearch",
                    "preference": "PreemptionOverBorrowing",
                }
            },
            [
                'spec.flavorFungibility.whenCanBorrow: Unsupported value: "Borrow": supported values: "MayStopSearch", "TryNextFlavor"',
                'spec.flavorFungibility.preference: Invalid value: "PreemptionOverBorrowing": preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor',
            ],
        ),
        (
            {"fairSharing": {"weight": "-1"}, "admissionScope": {"admissionMode": "Fair"}},
            [
                'spec.fairSharing.weight: Invalid value: "-1": must be greater than or equal to 0',
                'spec.admissionScope.admissionMode: Unsupported value: "Fair": supported values: "UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"',
            ],
        ),
        (
            {"cohortName": "Research"},
            [
                "spec.cohortName: Invalid value: \"Research\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ],
        ),
        (
            {"namespaceSelector": {"matchLabels": {"team": "a/b"}}},
            [
                "spec.namespaceSelector.matchLabels[team]: Invalid value: \"a/b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ],
        ),
    ],
)
def test_cluster_queue_v1beta2(problems: Problems, spec: dict[str, Any], expected: list[str]) -> None:
    assert problems(cluster_queue(**spec)) == expected


def test_flavor_resources_must_match_covered_resources(problems: Problems) -> None:
    doc = cluster_queue(
        resourceGroups=[
            group(["cpu", "memory"], flavor("a", memory={"nominalQuota": 1}, cpu={"nominalQuota": 1}))
        ]
    )
    assert problems(doc) == [
        f'{G}[0].flavors[0].resources[0].name: Invalid value: "memory": must match the name in coveredResources',
        f'{G}[0].flavors[0].resources[1].name: Invalid value: "cpu": must match the name in coveredResources',
    ]


def test_v1beta1_spelling_and_enums(problems: Problems) -> None:
    ok = cluster_queue(
        "v1beta1",
        cohort="research",
        flavorFungibility={"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
    )
    assert problems(ok) == []
    bad = cluster_queue(
        "v1beta1", cohortName="research", flavorFungibility={"whenCanBorrow": "MayStopSearch"}
    )
    assert problems(bad) == [
        "spec.cohortName: Forbidden: not a field in v1beta1; use spec.cohort",
        'spec.flavorFungibility.whenCanBorrow: Unsupported value: "MayStopSearch": supported values: "Borrow", "TryNextFlavor"',
    ]


def test_local_queue(problems: Problems) -> None:
    doc = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "main", "namespace": "team-a"},
        "spec": {"clusterQueue": "team_a", "stopPolicy": "Pause", "fairSharing": {"weight": "-2"}},
    }
    errors = problems(doc)
    assert [e.split(": ", 1)[0] for e in errors] == [
        "spec.clusterQueue",
        "spec.stopPolicy",
        "spec.fairSharing.weight",
    ]


def cohort(version: str = "v1beta2", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Cohort",
        "metadata": {"name": "research"},
        "spec": spec,
    }


def test_cohort(problems: Problems) -> None:
    assert problems(cohort("v1alpha1", parent="org")) == []
    assert problems(cohort(parent="org")) == [
        "spec.parent: Forbidden: not a field in v1beta2; use spec.parentName"
    ]
    # A cohort may lend more than its own nominal quota (its children's quota counts too).
    lending = [group(["cpu"], flavor("a", cpu={"nominalQuota": 0, "lendingLimit": 8}))]
    assert problems(cohort(parentName="org", resourceGroups=lending)) == []
    assert problems(cohort(resourceGroups=lending)) == [
        f'{G}[0].flavors[0].resources[0].lendingLimit: Invalid value: "8": must be nil when cohort is empty'
    ]


def test_workload_priority_class(problems: Problems) -> None:
    doc = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "p"},
        "value": 2**31,
    }
    assert problems(doc) == [
        "value: Invalid value: 2147483648: must be between -2147483648 and 2147483647, inclusive"
    ]


def topology(*labels: str, version: str = "v1beta2") -> dict[str, Any]:
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Topology",
        "metadata": {"name": "dc"},
        "spec": {"levels": [{"nodeLabel": label} for label in labels]},
    }


def test_topology(problems: Problems) -> None:
    assert problems(topology("example.com/block", "kubernetes.io/hostname")) == []
    assert problems(topology()) == ["spec.levels: Required value: a topology needs at least one level"]
    assert problems(topology(*(f"example.com/l{i}" for i in range(16)))) == []
    assert problems(topology(*(f"example.com/l{i}" for i in range(17)))) == [
        "spec.levels: Too many: 17: must have at most 16 items"
    ]
    assert problems(topology(*(f"example.com/l{i}" for i in range(9)), version="v1alpha1")) == [
        "spec.levels: Too many: 9: must have at most 8 items"
    ]
    assert problems(topology("")) == ["spec.levels[0].nodeLabel: Required value"]


def resource_flavor(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "f"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"nodeLabels": {f"l{i}": "x" for i in range(9)}},
            ["spec.nodeLabels: Too many: 9: must have at most 8 items"],
        ),
        (
            {"nodeTaints": [{"key": "k", "effect": "Evict"}]},
            [
                'spec.nodeTaints[0].effect: Unsupported value: "Evict": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'
            ],
        ),
        (
            {"nodeTaints": [{"key": "k", "effect": "NoSchedule"}] * 9},
            ["spec.nodeTaints: Too many: 9: must have at most 8 items"],
        ),
        (
            {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
            [
                "spec.tolerations[0].value: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"
            ],
        ),
        (
            {"topologyName": "dc"},
            ["spec.nodeLabels: Required value: at least one nodeLabel is required when topology is set"],
        ),
        ({"topologyName": "dc", "nodeLabels": {"pool": "gpu"}}, []),
    ],
)
def test_resource_flavor(problems: Problems, spec: dict[str, Any], expected: list[str]) -> None:
    assert problems(resource_flavor(**spec)) == expected

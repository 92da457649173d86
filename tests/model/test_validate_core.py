"""Validation of metadata, Nodes, Pods, PriorityClasses and PodDisruptionBudgets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Problems = Callable[..., list[str]]

QUALIFIED_NAME_RULE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def node(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}, **fields}


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    containers = containers or ({"name": "main"},)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a"},
        "spec": {"containers": list(containers), **spec},
    }


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({}, ["metadata.name: Required value: name or generateName is required"]),
        (
            {"generateName": "node-"},
            ["metadata.name: Required value: allot needs a name: only the API server expands generateName"],
        ),
        (
            {"name": "n", "labels": {"-zone": "a", "rack": "a b"}},
            [
                f'metadata.labels[-zone]: Invalid value: "-zone": {QUALIFIED_NAME_RULE}',
                f'metadata.labels[rack]: Invalid value: "a b": {LABEL_VALUE_RULE}',
            ],
        ),
        (
            {"name": "n", "labels": {"/zone": "a"}},
            ['metadata.labels[/zone]: Invalid value: "/zone": prefix part must be non-empty'],
        ),
        (
            {"name": "n", "annotations": {"a/b/c": "x"}},
            [
                'metadata.annotations[a/b/c]: Invalid value: "a/b/c": a qualified name must consist of '
                "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"
            ],
        ),
        (
            {"name": "n", "annotations": {"big": "x" * 262145}},
            ["metadata.annotations: Too long: may not be more than 262144 bytes"],
        ),
        (
            {"name": "x" * 254},
            [f'metadata.name: Invalid value: "{"x" * 254}": must be no more than 253 characters'],
        ),
    ],
)
def test_metadata(problems: Problems, metadata: dict[str, Any], expected: list[str]) -> None:
    assert problems(node(metadata=metadata)) == expected


def test_namespace_of_namespaced_objects(problems: Problems) -> None:
    doc = pod()
    doc["metadata"]["namespace"] = "Team-A"
    errors = problems(doc)
    assert len(errors) == 1
    assert errors[0].startswith('metadata.namespace: Invalid value: "Team-A": a lowercase RFC 1123 label')


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        (
            {
                "taints": [
                    {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                    {"key": "nvidia.com/gpu", "value": "x", "effect": "NoSchedule"},
                    {"key": "nvidia.com/gpu", "effect": "NoExecute"},
                    {"key": "k"},
                ]
            },
            {},
            [
                'spec.taints[1]: Duplicate value: "nvidia.com/gpu:NoSchedule": taints must be unique by key and effect pair',
                "spec.taints[3].effect: Required value",
            ],
        ),
        (
            {},
            {"capacity": {"cpu": "-1", "nvidia.com/gpu": "500m"}},
            [
                'status.capacity[cpu]: Invalid value: "-1": must be greater than or equal to 0',
                'status.capacity[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
            ],
        ),
        (
            {},
            {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "-4"}},
            ['status.allocatable[cpu]: Invalid value: "-4": must be greater than or equal to 0'],
        ),
    ],
)
def test_node(problems: Problems, spec: dict[str, Any], status: dict[str, Any], expected: list[str]) -> None:
    assert problems(node(spec=spec, status=status)) == expected


C = "spec.containers[0]"


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (
            pod(resourceClaims=[{"name": "gpu"}]),
            [
                'spec.resourceClaims[0]: Invalid value: "": must specify one of: `resourceClaimName`, `resourceClaimTemplateName`'
            ],
        ),
        (
            pod(resourceClaims=[{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]),
            [
                'spec.resourceClaims[0]: Invalid value: "": at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified'
            ],
        ),
        (
            pod(
                resourceClaims=[
                    {"name": "gpu", "resourceClaimName": "a"},
                    {"name": "gpu", "resourceClaimName": "b"},
                ]
            ),
            ['spec.resourceClaims[1].name: Duplicate value: "gpu"'],
        ),
        (
            pod(
                {"name": "main", "resources": {"claims": [{"name": "gpu"}, {"name": "gpu"}]}},
                resourceClaims=[{"name": "gpu", "resourceClaimName": "a"}],
            ),
            [f'{C}.resources.claims[1]: Duplicate value: "gpu"'],
        ),
        (
            pod({"name": "main", "resources": {"claims": [{"name": "gpu"}]}}),
            [
                f'{C}.resources.claims[0]: Not found: "gpu": must be one of the names in pod.spec.resourceClaims which is empty'
            ],
        ),
        ({**pod(), "spec": {}}, ["spec.containers: Required value"]),
        (
            pod({"name": "main", "resources": {"requests": {"nvidia.com/gpu": "1"}}}),
            [
                f"{C}.resources.limits[nvidia.com/gpu]: Required value: Limit must be set for non overcommitable resources"
            ],
        ),
        (
            pod(
                {
                    "name": "main",
                    "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}},
                }
            ),
            [
                f'{C}.resources.requests[nvidia.com/gpu]: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'
            ],
        ),
        (
            pod({"name": "main", "resources": {"limits": {"memory": "-1Gi"}}}),
            [f'{C}.resources.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0'],
        ),
        (
            pod({"name": "main"}, initContainers=[{"name": "main"}]),
            ['spec.initContainers[0].name: Duplicate value: "main"'],
        ),
        (
            pod(
                tolerations=[
                    {"operator": "Equal", "value": "x"},
                    {"key": "k", "tolerationSeconds": 30, "effect": "NoSchedule"},
                ]
            ),
            [
                'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
                'which means "match all values and all keys"',
                "spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
                "`tolerationSeconds` is set",
            ],
        ),
        (
            pod(
                tolerations=[
                    {"key": "k", "operator": "In"},
                    {"key": "k", "operator": "Exists", "effect": "None"},
                ]
            ),
            [
                'spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"',
                'spec.tolerations[1].effect: Unsupported value: "None": supported values: "NoSchedule", '
                '"PreferNoSchedule", "NoExecute"',
            ],
        ),
        (
            pod(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "Exists", "values": ["a"]}
                                    ]
                                },
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": ["a", "b"]}
                                    ]
                                },
                            ]
                        },
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 0,
                                "preference": {"matchExpressions": [{"key": "gpu", "operator": "Gt"}]},
                            }
                        ],
                    }
                }
            ),
            [
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
                ".matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1]"
                ".matchFields[0].values: Required value: must be only one value when `operator` is 'In' or 'NotIn' "
                "for node field selector",
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
                "Invalid value: 0: must be in the range 1-100",
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference"
                ".matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
            ],
        ),
        (
            pod(preemptionPolicy="Sometimes"),
            [
                'spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"'
            ],
        ),
    ],
)
def test_pod(problems: Problems, doc: dict[str, Any], expected: list[str]) -> None:
    assert problems(doc) == expected


def test_a_limit_copied_into_requests_is_reported_once(problems: Problems) -> None:
    doc = pod({"name": "main", "resources": {"limits": {"cpu": "-2"}}})
    assert problems(doc) == [
        f'{C}.resources.limits[cpu]: Invalid value: "-2": must be greater than or equal to 0'
    ]


def priority_class(name: str, value: int, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (priority_class("batch", 1_000_000_000), []),
        (priority_class("system-node-critical", 2_000_001_000), []),
        (
            priority_class("system-node-critical", 5),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use "
                "only. error: value of system-node-critical PriorityClass must be 2000001000"
            ],
        ),
        (
            priority_class("system-gpu", 5),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use "
                "only. error: system-gpu is not a known system priority class"
            ],
        ),
        (
            priority_class("batch", -(2**31) - 1),
            ["value: Invalid value: -2147483649: must be between -2147483648 and 2147483647, inclusive"],
        ),
        (
            priority_class("batch", 1, preemptionPolicy="Always"),
            [
                'preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"'
            ],
        ),
    ],
)
def test_priority_class(problems: Problems, doc: dict[str, Any], expected: list[str]) -> None:
    assert problems(doc) == expected


def pdb(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b", "namespace": "a"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (pdb(minAvailable=2), []),
        (pdb(maxUnavailable="25%"), []),
        (pdb(), []),
        (pdb(minAvailable=-1), ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]),
        (
            pdb(maxUnavailable="25"),
            [
                'spec.maxUnavailable: Invalid value: "25": a valid percent string must be a numeric string followed '
                "by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
            ],
        ),
        (
            pdb(
                minAvailable=1,
                unhealthyPodEvictionPolicy="Never",
                selector={"matchExpressions": [{"key": "app", "operator": "Is"}]},
            ),
            [
                'spec.selector.matchExpressions[0].operator: Invalid value: "Is": not a valid selector operator',
                'spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "IfHealthyBudget", "AlwaysAllow"',
            ],
        ),
    ],
)
def test_pod_disruption_budget(problems: Problems, doc: dict[str, Any], expected: list[str]) -> None:
    assert problems(doc) == expected

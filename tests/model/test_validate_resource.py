"""Validation of DeviceClass, ResourceClaim(Template) and DeviceTaintRule (allot.model.validate_resource)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Problems = Callable[..., list[str]]


def claim(*requests: dict[str, Any], **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "team-a"},
        "spec": {"devices": {"requests": list(requests), **devices}},
    }


def exact(name: str = "gpu", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu.example.com", **fields}}


def sub(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "deviceClassName": "gpu.example.com", **fields}


def cel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
C_IDENTIFIER_RULE = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)
REF_RULE = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)
R = "spec.devices.requests"


def test_a_full_valid_claim_loads(problems: Problems) -> None:
    doc = claim(
        exact("gpu", selectors=[cel('device.driver == "gpu.example.com"')], count=2),
        {"name": "nic", "firstAvailable": [sub("fast"), sub("slow", allocationMode="All")]},
        exact(
            "shared", tolerations=[{"key": "example.com/maintenance", "operator": "Exists", "effect": "None"}]
        ),
        constraints=[
            {"requests": ["gpu", "nic"], "matchAttribute": "resource.kubernetes.io/pcieRoot"},
            {"requests": ["nic/fast"], "distinctAttribute": "example.com/port"},
        ],
        config=[{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"mps": True}}}],
    )
    assert problems(doc) == []


@pytest.mark.parametrize(
    ("requests", "devices", "expected"),
    [
        pytest.param(
            [exact(f"r{i}") for i in range(33)],
            {},
            [f"{R}: Too many: 33: must have at most 32 items"],
            id="requests",
        ),
        pytest.param(
            [{"name": "r", "firstAvailable": [sub(f"s{i}") for i in range(9)]}],
            {},
            [f"{R}[0].firstAvailable: Too many: 9: must have at most 8 items"],
            id="subrequests",
        ),
        pytest.param(
            [{"name": "r", "firstAvailable": [sub("a"), sub("a")]}],
            {},
            [f'{R}[0].firstAvailable[1].name: Duplicate value: "a"'],
            id="duplicate-subrequest",
        ),
        pytest.param(
            [{**exact("r"), "firstAvailable": [sub("a")]}],
            {},
            [
                f"{R}[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
            ],
            id="exactly-and-first-available",
        ),
        pytest.param(
            [exact("GPU")], {}, [f'{R}[0].name: Invalid value: "GPU": {LABEL_RULE}'], id="request-name"
        ),
        pytest.param(
            [{"exactly": {"deviceClassName": "c"}}], {}, [f"{R}[0].name: Required value"], id="no-name"
        ),
        pytest.param(
            [exact(count=-2)],
            {},
            [f"{R}[0].exactly.count: Invalid value: -2: must be greater than zero"],
            id="count",
        ),
        pytest.param(
            [{"name": "r", "firstAvailable": [sub("a", allocationMode="All", count=1)]}],
            {},
            [
                f"{R}[0].firstAvailable[0].count: Invalid value: 1: must not be specified when allocationMode is 'All'"
            ],
            id="subrequest-all-with-count",
        ),
        pytest.param(
            [exact(selectors=[cel("true")] * 33)],
            {},
            [f"{R}[0].exactly.selectors: Too many: 33: must have at most 32 items"],
            id="selectors",
        ),
        pytest.param(
            [exact(selectors=[cel("")])],
            {},
            [f"{R}[0].exactly.selectors[0].cel.expression: Required value"],
            id="empty-cel",
        ),
        pytest.param(
            [exact(selectors=[cel("true && " * 1280 + "true")])],
            {},
            [f"{R}[0].exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"],
            id="cel-too-long",
        ),
        pytest.param(
            [exact(tolerations=[{"key": "k", "operator": "Exists"}] * 17)],
            {},
            [f"{R}[0].exactly.tolerations: Too many: 17: must have at most 16 items"],
            id="tolerations",
        ),
        pytest.param(
            [
                exact(
                    tolerations=[
                        {"key": "k", "operator": "Exists", "value": "v"},
                        {"key": "k", "operator": "Lt", "value": "1"},
                        {"key": "k", "effect": "PreferNoSchedule"},
                        {"key": "-bad", "operator": "Exists"},
                    ]
                )
            ],
            {},
            [
                f'{R}[0].exactly.tolerations[0].value: Invalid value: "v": must be empty for operator `Exists`',
                f'{R}[0].exactly.tolerations[1].operator: Unsupported value: "Lt": supported values: "Equal", "Exists"',
                f'{R}[0].exactly.tolerations[2].effect: Unsupported value: "PreferNoSchedule": supported values: '
                '"NoExecute", "NoSchedule", "None"',
                f'{R}[0].exactly.tolerations[3].key: Invalid value: "-bad": name part must consist of alphanumeric '
                "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
                "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ],
            id="toleration-fields",
        ),
        pytest.param(
            [exact(capacity={"requests": {"memory-gib": "10Gi", "example.com/cores": "-1"}})],
            {},
            [
                f'{R}[0].exactly.capacity.requests[memory-gib]: Invalid value: "memory-gib": {C_IDENTIFIER_RULE}',
                f'{R}[0].exactly.capacity.requests[example.com/cores]: Invalid value: "-1": must be greater than or equal to 0',
            ],
            id="capacity-requests",
        ),
    ],
)
def test_request_rules(
    problems: Problems, requests: list[dict[str, Any]], devices: dict[str, Any], expected: list[str]
) -> None:
    assert problems(claim(*requests, **devices)) == expected


C = "spec.devices.constraints"


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        (
            {"requests": ["gpu/x"], "matchAttribute": "a.com/b"},
            [f'{C}[0].requests[0]: Invalid value: "gpu/x": {REF_RULE}'],
        ),
        ({"requests": ["nic/fast"], "matchAttribute": "a.com/b"}, []),
        (
            {"requests": ["nic/nope"], "matchAttribute": "a.com/b"},
            [f'{C}[0].requests[0]: Invalid value: "nic/nope": {REF_RULE}'],
        ),
        (
            {"requests": ["a/b/c"], "matchAttribute": "a.com/b"},
            [f'{C}[0].requests[0]: Invalid value: "a/b/c": {REF_RULE}'],
        ),
        (
            {"requests": ["gpu", "gpu"], "matchAttribute": "a.com/b"},
            [f'{C}[0].requests[1]: Duplicate value: "gpu"'],
        ),
        (
            {"matchAttribute": "a.com/b", "distinctAttribute": "a.com/c"},
            [
                f'{C}[0]: Invalid value: exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set'
            ],
        ),
        (
            {"distinctAttribute": "example.com/" + "x" * 33},
            [f"{C}[0].distinctAttribute: Too long: may not be more than 32 bytes"],
        ),
        (
            {"matchAttribute": "/model"},
            [f'{C}[0].matchAttribute: Invalid value: "": the domain must not be empty'],
        ),
    ],
)
def test_constraint_rules(problems: Problems, constraint: dict[str, Any], expected: list[str]) -> None:
    doc = claim(exact("gpu"), {"name": "nic", "firstAvailable": [sub("fast")]}, constraints=[constraint])
    assert problems(doc) == expected


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"requests": ["gpu"]}, ["spec.devices.config[0].opaque: Required value"]),
        (
            {"requests": ["tpu"], "opaque": {"driver": "gpu.example.com", "parameters": {}}},
            [f'spec.devices.config[0].requests[0]: Invalid value: "tpu": {REF_RULE}'],
        ),
        (
            {"opaque": {"driver": "gpu.example.com", "parameters": ["mps"]}},
            [
                'spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object'
            ],
        ),
        (
            {"opaque": {"driver": "", "parameters": {"a": 1}}},
            ["spec.devices.config[0].opaque.driver: Required value"],
        ),
        (
            {"opaque": {"driver": "gpu.example.com"}},
            ["spec.devices.config[0].opaque.parameters: Required value"],
        ),
    ],
)
def test_config_rules(problems: Problems, config: dict[str, Any], expected: list[str]) -> None:
    assert problems(claim(exact("gpu"), config=[config])) == expected


def test_template_checks_its_claim_spec_and_labels(problems: Problems) -> None:
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "team-a"},
        "spec": {
            "metadata": {"labels": {"team": "a b"}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "Bad_Class"}}]}},
        },
    }
    errors = problems(doc)
    assert [e.split(": Invalid value")[0] for e in errors] == [
        "spec.metadata.labels[team]",
        "spec.spec.devices.requests[0].exactly.deviceClassName",
    ]


def test_cel_at_the_length_limit_is_accepted(problems: Problems) -> None:
    expression = "true && " * 1279 + "true" + " " * 4
    assert len(expression) == 10240
    assert problems(claim(exact(selectors=[cel(expression)]))) == []


def namespace(labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": labels}}


def test_admin_access_needs_the_namespace_label(problems: Problems) -> None:
    doc = claim(exact("gpus", allocationMode="All", adminAccess=True))
    message = (
        f"{R}[0].exactly.adminAccess: Forbidden: admin access to devices requires the "
        "`resource.kubernetes.io/admin-access: true` label on the containing namespace"
    )
    assert problems(namespace({}), doc) == [message]
    assert problems(namespace({"resource.kubernetes.io/admin-access": "true"}), doc) == []
    # Without the Namespace object allot cannot tell, so it does not complain.
    assert problems(doc) == []
    assert problems(namespace({}), doc, validate=False) == []


DC = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"selectors": [cel("true")] * 33}, ["spec.selectors: Too many: 33: must have at most 32 items"]),
        (
            {"config": [{"opaque": {"driver": "d.example.com", "parameters": {}}}] * 33},
            ["spec.config: Too many: 33: must have at most 32 items"],
        ),
        ({"config": [{}]}, ["spec.config[0].opaque: Required value"]),
        (
            {"config": [{"opaque": {"driver": "x" * 64, "parameters": {}}}]},
            ["spec.config[0].opaque.driver: Too long: may not be more than 63 bytes"],
        ),
        ({"extendedResourceName": "nvidia.com/gpu"}, []),
        (
            {"extendedResourceName": "gpu"},
            ['spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource name'],
        ),
        (
            {"extendedResourceName": "kubernetes.io/gpu"},
            [
                'spec.extendedResourceName: Invalid value: "kubernetes.io/gpu": must be a valid extended resource name'
            ],
        ),
    ],
)
def test_device_class_rules(problems: Problems, spec: dict[str, Any], expected: list[str]) -> None:
    assert problems({**DC, "spec": spec}) == expected


def test_device_taint_rule(problems: Problems) -> None:
    rule = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "drain-gpu-3"},
        "spec": {
            "deviceSelector": {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-3"},
            "taint": {"key": "example.com/drain", "value": "true", "effect": "NoExecute"},
        },
    }
    assert problems(rule) == []
    rule["spec"] = {"deviceSelector": {"pool": "a//b", "device": "GPU"}, "taint": {"key": ""}}
    assert [e.split(":")[0] for e in problems(rule)] == [
        "spec.deviceSelector.pool",
        "spec.deviceSelector.device",
        "spec.taint.key",
        "spec.taint.effect",
    ]

"""Validation of ResourceSlices (allot.model.validate_slice)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Problems = Callable[..., list[str]]

C_IDENTIFIER_RULE = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)
SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def resource_slice(*devices: dict[str, Any], **spec: Any) -> dict[str, Any]:
    spec = {"driver": "gpu.example.com", "pool": {"name": "node-1", "resourceSliceCount": 1}, **spec}
    if "allNodes" not in spec and "nodeSelector" not in spec and "perDeviceNodeSelection" not in spec:
        spec.setdefault("nodeName", "node-1")
    if devices:
        spec["devices"] = list(devices)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": spec,
    }


def device(name: str = "gpu-0", **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


D = "spec.devices[0]"
SELECTOR = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"allNodes": True}, []),
        ({"nodeSelector": SELECTOR}, []),
        ({"perDeviceNodeSelection": True}, []),
        (
            {"nodeSelector": {"nodeSelectorTerms": SELECTOR["nodeSelectorTerms"] * 2}},
            [
                'spec.nodeSelector.nodeSelectorTerms: Invalid value: "2 terms": must have exactly one node selector term'
            ],
        ),
        (
            {"nodeName": "", "allNodes": False},
            [
                'spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string',
                "spec.allNodes: Invalid value: false: must be either unset or set to true",
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                "`perDeviceNodeSelection` is required",
            ],
        ),
        (
            {"nodeName": "node-1", "allNodes": True},
            [
                'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, '
                "`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"
            ],
        ),
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Near"}]}]
                }
            },
            [
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "
                '"Near": not a valid selector operator'
            ],
        ),
        ({"driver": "GPU.Example.com"}, []),
        ({"driver": "x" * 64 + ".com"}, ["spec.driver: Too long: may not be more than 63 bytes"]),
        ({"driver": "gpu_example"}, [f'spec.driver: Invalid value: "gpu_example": {SUBDOMAIN_RULE}']),
        ({"pool": {"name": "rack-1/node-1", "resourceSliceCount": 1}}, []),
        (
            {"pool": {"name": "rack-1/Node", "generation": -1, "resourceSliceCount": 1}},
            [
                f'spec.pool.name: Invalid value: "Node": {SUBDOMAIN_RULE}',
                "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
            ],
        ),
        ({"pool": {"name": "", "resourceSliceCount": 1}}, ["spec.pool.name: Required value"]),
    ],
)
def test_driver_pool_and_node_selection(
    problems: Problems, spec: dict[str, Any], expected: list[str]
) -> None:
    assert problems(resource_slice(**spec)) == expected


def test_per_device_node_selection(problems: Problems) -> None:
    doc = resource_slice(
        device("a", nodeName="node-1"),
        device("b"),
        device("c", nodeName="node-1", allNodes=True),
        device("d", allNodes=True),
        perDeviceNodeSelection=True,
    )
    rule = (
        "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
        "is set to true in the ResourceSlice spec"
    )
    assert problems(doc) == [
        f"spec.devices[1]: Required value: {rule}",
        f'spec.devices[2]: Invalid value: "{{`nodeName`, `allNodes`}}": {rule}',
    ]
    assert problems(resource_slice(device("a", allNodes=True))) == [
        "spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
    ]


def test_device_count_limits(problems: Problems) -> None:
    assert problems(resource_slice(*(device(f"d{i}") for i in range(128)))) == []
    assert problems(resource_slice(*(device(f"d{i}") for i in range(129)))) == [
        "spec.devices: Too many: 129: must have at most 128 items"
    ]
    taint = {"key": "example.com/t", "effect": "NoSchedule"}
    devices = [device(f"d{i}") for i in range(65)]
    devices[10]["taints"] = [taint]
    assert problems(resource_slice(*devices)) == ["spec.devices: Too many: 65: must have at most 64 items"]
    assert problems(resource_slice(*devices[:64])) == []


def test_device_names(problems: Problems) -> None:
    assert problems(resource_slice(device("gpu-0"), device("gpu-0"), device("GPU_1"), device(""))) == [
        'spec.devices[2].name: Invalid value: "GPU_1": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
        "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        "spec.devices[3].name: Required value",
        'spec.devices[1].name: Duplicate value: "gpu-0"',
    ]


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [
        ({"model": {"string": "A100"}, "example.com/cc": {"version": "8.0.0-rc.1+build.5"}}, []),
        ({"m": {}}, [f'{D}.attributes[m]: Invalid value: "": exactly one value must be specified']),
        (
            {"m": {"int": 1, "bool": True}},
            [f"{D}.attributes[m]: Invalid value: exactly one value must be specified"],
        ),
        (
            {"v": {"version": "1.02.3"}},
            [
                f'{D}.attributes[v].version: Invalid value: "1.02.3": must be a string compatible with semver.org spec 2.0.0'
            ],
        ),
        (
            {"v": {"version": "1.0.0-" + "a" * 60}},
            [f"{D}.attributes[v].version: Too long: may not be more than 64 bytes"],
        ),
        ({"s": {"string": "é" * 33}}, [f"{D}.attributes[s].string: Too long: may not be more than 64 bytes"]),
        (
            {"s": {"strings": []}},
            [f'{D}.attributes[s].strings: Invalid value: "[]": must not be empty if specified'],
        ),
        ({"a" * 33: {"int": 1}}, [f"{D}.attributes[{'a' * 33}]: Too long: may not be more than 32 bytes"]),
        ({"1st": {"int": 1}}, [f'{D}.attributes[1st]: Invalid value: "1st": {C_IDENTIFIER_RULE}']),
        (
            {"a/b/c": {"int": 1}},
            [f'{D}.attributes[a/b/c]: Invalid value: "a/b/c": must not contain more than one slash'],
        ),
        (
            {"example.com/": {"int": 1}},
            [f'{D}.attributes[example.com/]: Invalid value: "": the name must not be empty'],
        ),
        (
            {"Example_Com/x": {"int": 1}},
            [f'{D}.attributes[Example_Com/x]: Invalid value: "Example_Com": {SUBDOMAIN_RULE}'],
        ),
        (
            {"big": {"int": 2**63}},
            [
                f"{D}.attributes[big].int: Invalid value: {2**63}: must be between -{2**63} and {2**63 - 1}, inclusive"
            ],
        ),
    ],
)
def test_attributes(problems: Problems, attributes: dict[str, Any], expected: list[str]) -> None:
    assert problems(resource_slice(device(attributes=attributes))) == expected


def test_attributes_and_capacities_are_limited_together(problems: Problems) -> None:
    attributes = {f"a{i}": {"int": i} for i in range(20)}
    capacity = {f"c{i}": {"value": "1"} for i in range(13)}
    assert problems(resource_slice(device(attributes=attributes, capacity=capacity))) == [
        f"{D}: Invalid value: 33: the total number of attributes and capacities must not exceed 32"
    ]


def shared(policy: dict[str, Any], value: str = "80Gi") -> dict[str, Any]:
    return device(
        allowMultipleAllocations=True, capacity={"memory": {"value": value, "requestPolicy": policy}}
    )


P = f"{D}.capacity[memory].requestPolicy"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}, []),
        ({"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}, []),
        ({"default": "1Gi"}, []),
        (
            {"default": "1Gi", "validValues": ["1Gi"], "validRange": {"min": "1Gi"}},
            [
                f'{P}: Forbidden: exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time'
            ],
        ),
        ({"validValues": ["1Gi"]}, [f"{P}.default: Required value: required when validValues is defined"]),
        (
            {"validRange": {"min": "1Gi"}},
            [f"{P}.default: Required value: required when validRange is defined"],
        ),
        (
            {"default": "1", "validValues": [str(i) for i in range(1, 12)]},
            [f"{P}.validValues: Too many: 11: must have at most 10 items"],
        ),
        (
            {"default": "10Gi", "validValues": ["10Gi", "10Gi", "100Gi"]},
            [
                f'{P}.validValues[2]: Invalid value: "100Gi": option is larger than capacity value: 80Gi',
                f'{P}.validValues[1]: Duplicate value: "10Gi"',
            ],
        ),
        (
            {"default": "1Gi", "validRange": {"max": "2Gi"}},
            [f"{P}.validRange.min: Required value: required when validRange is defined"],
        ),
        (
            {"default": "8Gi", "validRange": {"min": "4Gi", "max": "2Gi", "step": "0"}},
            [
                f'{P}.validRange.max: Invalid value: "4Gi": min is larger than max: 2Gi',
                f'{P}.validRange.default: Invalid value: "8Gi": default is more than max: 2Gi',
                f'{P}.validRange.step: Invalid value: "0": must be greater than zero',
            ],
        ),
        (
            {"default": "3Gi", "validRange": {"min": "2Gi", "max": "9Gi", "step": "2Gi"}},
            [
                f'{P}.validRange.step: Invalid value: "3Gi": value is not a multiple of a given step (2Gi) from (2Gi)',
                f'{P}.validRange.step: Invalid value: "9Gi": value is not a multiple of a given step (2Gi) from (2Gi)',
            ],
        ),
        (
            {"default": "60Gi", "validRange": {"min": "60Gi", "step": "30Gi"}},
            [
                f'{P}.validRange.step: Invalid value: "30Gi": one step 90Gi is larger than capacity value: 80Gi'
            ],
        ),
    ],
)
def test_request_policy(problems: Problems, policy: dict[str, Any], expected: list[str]) -> None:
    assert problems(resource_slice(shared(policy))) == expected


def test_counters(problems: Problems) -> None:
    counters = {f"c{i}": {"value": "1"} for i in range(33)}
    doc = resource_slice(
        sharedCounters=[{"name": f"set-{i}", "counters": {"memory": {"value": "1"}}} for i in range(9)]
    )
    assert problems(doc) == ["spec.sharedCounters: Too many: 9: must have at most 8 items"]
    doc = resource_slice(
        sharedCounters=[
            {"name": "set", "counters": counters},
            {"name": "set", "counters": {}},
            {"name": "Set_2", "counters": {"Memory": {"value": "1"}}},
        ]
    )
    errors = problems(doc)
    assert [e.split(": ", 1)[0] for e in errors] == [
        "spec.sharedCounters[0].counters",
        "spec.sharedCounters[1].counters",
        "spec.sharedCounters[2].name",
        "spec.sharedCounters[2].counters[Memory]",
        "spec.sharedCounters[1].name",
    ]
    assert errors[0].endswith("Too many: 33: must have at most 32 items")
    assert errors[1].endswith("Required value")
    assert errors[4].endswith('Duplicate value: "set"')


def test_counter_consumption(problems: Problems) -> None:
    use = {"counterSet": "gpu-0", "counters": {"memory": {"value": "1Gi"}}}
    assert problems(resource_slice(device(consumesCounters=[use, {**use, "counterSet": "gpu-1"}]))) == []
    assert problems(resource_slice(device(consumesCounters=[use] * 3))) == [
        f"{D}.consumesCounters: Too many: 3: must have at most 2 items"
    ]
    assert problems(resource_slice(device(consumesCounters=[use, use]))) == [
        f'{D}.consumesCounters[1].counterSet: Duplicate value: "gpu-0"'
    ]
    assert problems(resource_slice(device(consumesCounters=[{"counterSet": ""}]))) == [
        f"{D}.consumesCounters[0].counterSet: Required value",
        f"{D}.consumesCounters[0].counters: Required value",
    ]


def test_taints(problems: Problems) -> None:
    taint = {"key": "example.com/unhealthy", "effect": "None"}
    assert problems(resource_slice(device(taints=[taint] * 16))) == []
    assert problems(resource_slice(device(taints=[taint] * 17))) == [
        f"{D}.taints: Too many: 17: must have at most 16 items"
    ]
    assert problems(resource_slice(device(taints=[{"value": "x y"}]))) == [
        f"{D}.taints[0].key: Required value",
        f'{D}.taints[0].value: Invalid value: "x y": a valid label must be an empty string or consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        f"{D}.taints[0].effect: Required value",
    ]


def test_binding_conditions(problems: Problems) -> None:
    ok = device(bindingConditions=["example.com/attached"], bindingFailureConditions=["example.com/failed"])
    assert problems(resource_slice(ok)) == []
    bad = device(
        bindingConditions=["a", "a", "b", "c", "d"],
        bindingFailureConditions=["b"],
    )
    assert problems(resource_slice(bad)) == [
        f"{D}.bindingConditions: Too many: 5: must have at most 4 items",
        f'{D}.bindingConditions[1]: Duplicate value: "a"',
        f'{D}.bindingFailureConditions[0]: Invalid value: "b": bindingFailureConditions must not overlap with bindingConditions',
    ]
    assert problems(resource_slice(device(bindingFailureConditions=["f"]))) == [
        f'{D}.bindingConditions: Invalid value: "[]": bindingConditions are required to use bindingFailureConditions'
    ]

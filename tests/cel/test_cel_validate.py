"""check_selectors: the API server's selector checks, located at the offending field."""

from __future__ import annotations

from allot.cel import SelectorEnvironment
from allot.cel.validate import check_selectors
from allot.model.base import ObjectMeta
from allot.model.errors import Location
from allot.model.loader import LoadedObject, Manifests, load_text
from allot.model.resource import CELDeviceSelector, DeviceClass, DeviceClassSpec, DeviceSelector

MANIFESTS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
  - cel:
      expression: noSuchVar
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: claim
  namespace: team-a
spec:
  devices:
    requests:
    - name: exact
      exactly:
        deviceClassName: gpu
        selectors:
        - cel:
            expression: device.capacity["gpu.example.com"].memory > 5
    - name: prioritized
      firstAvailable:
      - name: big
        deviceClassName: gpu
        selectors:
        - cel:
            expression: "true"
      - name: small
        deviceClassName: gpu
        selectors:
        - cel:
            expression: device.attributes["gpu.example.com"].model == "a"
        - cel:
            expression: "1 +"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: template
  namespace: team-a
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu
          selectors:
          - cel:
              expression: device.driver
"""

NESTED_TEN = (
    "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, "
    "[1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, "
    "[1,2,3,4,5,6,7,8,9,10].all(g, true)))))))"
)


def class_with(expression: str) -> str:
    return f"""\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu
spec:
  selectors:
  - cel:
      expression: '{expression}'
"""


def test_every_selector_field_is_checked_and_located() -> None:
    manifests = load_text(MANIFESTS, "selectors.yaml")
    errors = check_selectors(manifests, SelectorEnvironment())
    fields = [(e.location.kind, e.location.name, e.location.field) for e in errors]
    assert fields == [
        ("DeviceClass", "gpu", "spec.selectors[1].cel.expression"),
        ("ResourceClaim", "claim", "spec.devices.requests[0].exactly.selectors[0].cel.expression"),
        ("ResourceClaim", "claim", "spec.devices.requests[1].firstAvailable[1].selectors[1].cel.expression"),
        (
            "ResourceClaimTemplate",
            "template",
            "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression",
        ),
    ]
    assert errors[0].location == Location(
        file="selectors.yaml",
        document=1,
        kind="DeviceClass",
        name="gpu",
        field="spec.selectors[1].cel.expression",
    )
    assert errors[0].message == (
        "invalid CEL expression: compilation failed: ERROR: <input>:1:1: "
        "undeclared reference to 'noSuchVar' (in container '')\n"
        " | noSuchVar\n"
        " | ^"
    )
    assert errors[1].message.startswith(
        "invalid CEL expression: compilation failed: ERROR: <input>:1:43: "
        "found no matching overload for '_>_' applied to '(kubernetes.Quantity, int)'"
    )
    assert errors[2].message.startswith(
        "invalid CEL expression: compilation failed: ERROR: <input>:1:4: Syntax error:"
    )
    assert (
        errors[3].message == "invalid CEL expression: must evaluate to bool or the unknown type, not string"
    )
    assert str(errors[3]).startswith(
        "selectors.yaml document 3: ResourceClaimTemplate team-a/template: "
        "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: invalid CEL expression:"
    )


def test_valid_selectors_give_no_errors() -> None:
    manifests = load_text(class_with('device.driver == "gpu.example.com"'))
    assert check_selectors(manifests, SelectorEnvironment()) == []


def test_length_limit_is_in_bytes_and_stops_compilation() -> None:
    # The loader rejects this already, so build the manifests in code.
    too_long = "true && " * 1275 + "'" + "é" * 20 + "'.size() == 20"  # 10235 characters, 10255 bytes
    assert len(too_long) <= 10240 < len(too_long.encode("utf-8"))
    device_class = DeviceClass(
        metadata=ObjectMeta(name="gpu"),
        spec=DeviceClassSpec(selectors=(DeviceSelector(cel=CELDeviceSelector(expression=too_long)),)),
    )
    where = Location(file="built.yaml", document=1, kind="DeviceClass", name="gpu")
    env = SelectorEnvironment()
    errors = check_selectors(Manifests(entries=[LoadedObject(device_class, where)]), env)
    assert [(e.location.field, e.message) for e in errors] == [
        ("spec.selectors[0].cel.expression", "Too long: may not be more than 10240 bytes")
    ]
    assert env.stats.compilations == 0


def test_at_the_length_limit_is_accepted() -> None:
    expression = "true && " * 1279 + "true" + " " * 4  # exactly 10240 bytes
    assert len(expression) == 10240
    assert check_selectors(load_text(class_with(expression)), SelectorEnvironment()) == []


def test_cost_limit() -> None:
    errors = check_selectors(load_text(class_with(NESTED_TEN)), SelectorEnvironment())
    assert len(errors) == 1
    assert errors[0].message.startswith("too complex, exceeds cost limit (estimated worst-case cost ")


def test_other_kinds_are_ignored() -> None:
    manifests = load_text(
        """\
apiVersion: v1
kind: Node
metadata:
  name: node-1
"""
    )
    assert check_selectors(manifests) == []

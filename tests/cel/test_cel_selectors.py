"""Device selectors against the Kubernetes DRA CEL environment, case by case.

Expected values are Kubernetes' (k8s.io/dynamic-resource-allocation/cel,
k8s.io/apiserver/pkg/cel/library quantity and semver, cel-go's strings
extension and CEL's own semantics), not what allot happens to return.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from allot.cel import CelCompileError, CelRuntimeError, DeviceInput, SelectorEnvironment
from allot.model.quantity import Quantity
from allot.model.resource import DeviceAttribute, DeviceCapacity

DRIVER = "gpu.example.com"


def gpu(key: str = "gpu-0", **extra_attributes: DeviceAttribute) -> DeviceInput:
    attributes = {
        "productName": DeviceAttribute(string_value="H100"),
        "index": DeviceAttribute(int_value=3),
        "healthy": DeviceAttribute(bool_value=True),
        "driverVersion": DeviceAttribute(version_value="1.2.3"),
        "cudaVersion": DeviceAttribute(version_value="12.4.0-rc.1+build.5"),
        "gpu.example.com/family": DeviceAttribute(string_value="hopper"),
        "pcie.example.org/root": DeviceAttribute(string_value="pci0000:00"),
        **extra_attributes,
    }
    capacity = {
        "memory": DeviceCapacity(value=Quantity.parse("80Gi")),
        "cores": DeviceCapacity(value=Quantity.parse("132")),
        "other.example.org/bandwidth": DeviceCapacity(value=Quantity.parse("100G")),
    }
    return DeviceInput(key=key, driver=DRIVER, attributes=attributes, capacity=capacity)


@dataclass(frozen=True)
class Fails:
    """Evaluation raises `error` with `text` in its message."""

    error: type[Exception]
    text: str


def compile_error(text: str) -> Fails:
    return Fails(CelCompileError, text)


def runtime_error(text: str) -> Fails:
    return Fails(CelRuntimeError, text)


A = f'device.attributes["{DRIVER}"]'
C = f'device.capacity["{DRIVER}"]'

CASES: dict[str, tuple[str, bool | Fails]] = {
    # --- the device variable ---------------------------------------------------------
    "driver-match": (f'device.driver == "{DRIVER}"', True),
    "driver-mismatch": ('device.driver == "other.example.org"', False),
    "unqualified-attribute": (f"{A}.productName == 'H100'", True),
    "index-syntax-equals-field-syntax": (f'{A}["productName"] == {A}.productName', True),
    "qualified-name-in-driver-domain": (f'{A}.family == "hopper"', True),
    "other-domain-attribute": ('device.attributes["pcie.example.org"].root == "pci0000:00"', True),
    "qualified-capacity-other-domain": (
        'device.capacity["other.example.org"].bandwidth == quantity("100G")',
        True,
    ),
    "int-attribute": (f"{A}.index == 3 && {A}.index > 2", True),
    "bool-attribute-as-result": (f"{A}.healthy", True),
    "int-attribute-against-double": (f"{A}.index < 3.5", True),
    "string-equals-int-is-false": (f"{A}.productName == 1", False),
    "string-greater-than-int": (f"{A}.productName > 1", runtime_error("no such overload")),
    # --- unknown domains and missing identifiers -------------------------------------
    "unknown-domain-has": ('has(device.attributes["x.example.com"].foo)', False),
    "unknown-domain-in": ('"x.example.com" in device.attributes', False),
    "known-domain-in": ('"pcie.example.org" in device.attributes', True),
    "unknown-domain-is-empty-map": ('device.attributes["x.example.com"].size() == 0', True),
    "unknown-capacity-domain-is-empty-map": ('device.capacity["x.example.com"].size() == 0', True),
    "unknown-capacity-domain-has": ('has(device.capacity["x.example.com"].memory)', False),
    "id-in-unknown-domain": ('"foo" in device.attributes["x.example.com"]', False),
    "lookup-in-unknown-domain": (
        'device.attributes["x.example.com"].foo',
        runtime_error("no such key: foo"),
    ),
    "lookup-in-unknown-domain-by-index": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        runtime_error("no such key: noSuchAttr"),
    ),
    "missing-id-in-known-domain": (f"{A}.missing == 1", runtime_error("no such key: missing")),
    "has-present": (f"has({A}.productName)", True),
    "has-missing": (f"has({A}.missing)", False),
    "in-present": (f'"productName" in {A}', True),
    "in-missing": (f'"missing" in {A}', False),
    "iterate-domains": (f'device.attributes.exists_one(d, d == "{DRIVER}")', True),
    "iterate-ids": (f'{A}.exists_one(x, x == "productName")', True),
    "bind-unknown-domain": ('cel.bind(a, device.attributes["x.example.com"], !has(a.foo))', True),
    "computed-domain": (
        f'["x.example.com", "{DRIVER}"].exists(d, has(device.attributes[d].productName))',
        True,
    ),
    "computed-domain-all": (
        '["x.example.com", "y.example.com"].all(d, device.attributes[d].size() == 0)',
        True,
    ),
    # --- versions ----------------------------------------------------------------------
    "version-attribute-is-semver": (f'{A}.driverVersion.isGreaterThan(semver("1.2.2"))', True),
    "version-attribute-major": (f"{A}.driverVersion.major() == 1", True),
    "version-attribute-equality": (f'{A}.driverVersion == semver("1.2.3")', True),
    "version-attribute-ignores-build": (f'{A}.cudaVersion == semver("12.4.0-rc.1")', True),
    "version-attribute-prerelease-below-release": (f'{A}.cudaVersion.isLessThan(semver("12.4.0"))', True),
    "version-attribute-normalized-literal": (
        f'{A}.driverVersion.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        True,
    ),
    # --- capacity and the quantity library ---------------------------------------------
    "capacity-compare-to": (f'{C}.memory.compareTo(quantity("80Gi")) == 0', True),
    "capacity-numeric-equality": (f'{C}.memory == quantity("81920Mi")', True),
    "capacity-is-greater-than": (f'{C}.memory.isGreaterThan(quantity("40Gi"))', True),
    "capacity-is-less-than": (f'{C}.cores.isLessThan(quantity("133"))', True),
    "capacity-in-check": (f'"memory" in {C} && {C}.memory.isGreaterThan(quantity("1Ki"))', True),
    "capacity-against-int-does-not-compile": (f"{C}.memory > 5", compile_error("found no matching overload")),
    "quantity-equality-numeric": ('quantity("1Gi") == quantity("1024Mi")', True),
    "quantity-inequality": ('quantity("1Gi") != quantity("1G")', True),
    "is-quantity": ('isQuantity("1.5G") && isQuantity("1.3Gi") && isQuantity("10000k")', True),
    "is-quantity-bad-suffix": ('isQuantity("200K")', False),
    "is-quantity-comma": ('isQuantity("1,3G")', False),
    "is-quantity-words": ('isQuantity("Three") || isQuantity("Mi")', False),
    "quantity-unparsable": (
        'quantity("200K") == quantity("1")',
        runtime_error("unable to parse quantity's suffix"),
    ),
    "sign-negative": ('sign(quantity("-50k")) == -1', True),
    "sign-zero": ('sign(quantity("0")) == 0', True),
    "sign-positive": ('sign(quantity("50k")) == 1', True),
    "sign-is-not-a-member": ('quantity("1").sign() == 1', compile_error("sign")),
    "compare-to-equal": ('quantity("200M").compareTo(quantity("0.2G")) == 0', True),
    "compare-to-less": ('quantity("50M").compareTo(quantity("50Mi")) == -1', True),
    "compare-to-greater": ('quantity("50Mi").compareTo(quantity("50M")) == 1', True),
    "is-greater-than": ('quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    "is-greater-than-false": ('quantity("50Mi").isGreaterThan(quantity("100Mi"))', False),
    "is-less-than": ('quantity("50M").isLessThan(quantity("100M"))', True),
    "is-less-than-false": ('quantity("100M").isLessThan(quantity("50M"))', False),
    "as-approximate-float": ('quantity("50k").asApproximateFloat() == 50000.0', True),
    "as-approximate-float-fraction": ('quantity("1.5").asApproximateFloat() == 1.5', True),
    "as-integer": ('quantity("50k").asInteger() == 50000', True),
    "as-integer-int64-max": ('quantity("9223372036854775807").asInteger() == 9223372036854775807', True),
    "as-integer-fraction": (
        'quantity("1.5").asInteger() == 1',
        runtime_error("cannot convert value to integer"),
    ),
    "as-integer-overflow": (
        'quantity("9999999999999999999999999999999999999G").asInteger() == 0',
        runtime_error("cannot convert value to integer"),
    ),
    "as-integer-overflow-after-add": (
        'quantity("9223372036854775807").add(1).asInteger() == 0',
        runtime_error("cannot convert value to integer"),
    ),
    "is-integer": ('quantity("50000000G").isInteger() && quantity("50k").isInteger()', True),
    "is-integer-overflow": ('quantity("9999999999999999999999999999999999999G").isInteger()', False),
    "is-integer-fraction": ('quantity("1.5").isInteger()', False),
    "add-quantity": ('quantity("50k").add(quantity("20k")) == quantity("70k")', True),
    "add-int": ('quantity("50k").add(20) == quantity("50020")', True),
    "sub-quantity": ('quantity("50k").sub(quantity("20k")) == quantity("30k")', True),
    "sub-int": ('quantity("50k").sub(20000) == quantity("30k")', True),
    "arithmetic-chain": ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")', True),
    "sub-below-zero": ('sign(quantity("1").sub(2)) == -1', True),
    "capacity-arithmetic": (f'{C}.memory.sub(quantity("16Gi")).isGreaterThan(quantity("64Gi"))', False),
    # --- the semver library ------------------------------------------------------------
    "semver-parts": (
        'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
        True,
    ),
    "is-semver": ('isSemver("1.0.0") && isSemver("0.1.0-alpha.1") && isSemver("1.0.0+build.1")', True),
    "is-semver-v-prefix": ('isSemver("v1.0.0")', False),
    "is-semver-short": ('isSemver("1.0")', False),
    "is-semver-words": ('isSemver("hello") || isSemver("200K")', False),
    "is-semver-leading-zero": ('isSemver("01.0.0") || isSemver("1.0.0-01")', False),
    "is-semver-empty-identifier": ('isSemver("1.0.0-alpha..1") || isSemver("1.0.0+")', False),
    "is-semver-normalize": (
        'isSemver("v1.0", true) && isSemver("1.0", true) && isSemver("01.01.01", true)',
        True,
    ),
    "is-semver-normalize-off": ('isSemver("v1.0", false)', False),
    "is-semver-normalize-short-prerelease": ('isSemver("1.0-alpha", true)', False),
    "semver-normalize-v": ('semver("v1.0.0", true) == semver("1.0.0")', True),
    "semver-normalize-pad": (
        'semver("1.0", true) == semver("1.0.0") && semver("2", true) == semver("2.0.0")',
        True,
    ),
    "semver-normalize-zeros": ('semver("01.01.01", true) == semver("1.1.1")', True),
    "semver-compare-equal": ('semver("1.2.3").compareTo(semver("1.2.3")) == 0', True),
    "semver-compare-less": ('semver("1.2.3").compareTo(semver("2.0.0")) == -1', True),
    "semver-compare-greater": ('semver("1.2.3").compareTo(semver("0.1.2")) == 1', True),
    "semver-equality-ignores-build": ('semver("1.0.0+build.1") == semver("1.0.0+build.2")', True),
    "semver-equality-sees-prerelease": ('semver("1.0.0-alpha") == semver("1.0.0")', False),
    "semver-precedence-chain": (
        'semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))'
        ' && semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))'
        ' && semver("1.0.0-alpha.beta").isLessThan(semver("1.0.0-beta"))'
        ' && semver("1.0.0-beta.2").isLessThan(semver("1.0.0-beta.11"))'
        ' && semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))',
        True,
    ),
    "semver-is-greater-than": ('semver("2.0.0").isGreaterThan(semver("1.99.99"))', True),
    "semver-unparsable": (
        'semver("1.0") == semver("1.0.0")',
        runtime_error("No Major.Minor.Patch elements found"),
    ),
    "semver-against-quantity": (
        'semver("1.0.0").isGreaterThan(quantity("1"))',
        compile_error("no matching overload"),
    ),
    # --- cel.bind, strings extension, standard library and macros -----------------------
    "bind": (f'cel.bind(gpu, {A}, gpu.productName == "H100" && gpu.index == 3)', True),
    "bind-nested": ("cel.bind(a, 1, cel.bind(b, 2, a + b == 3))", True),
    "strings-char-at": (f'{A}.productName.charAt(1) == "1"', True),
    "strings-index-of": (f'{A}.productName.indexOf("1") == 1 && "abcb".lastIndexOf("b") == 3', True),
    "strings-case": (f'{A}.productName.lowerAscii() == "h100" && "h100".upperAscii() == "H100"', True),
    "strings-replace": ('"pci0000:00".replace("0", "1") == "pci1111:11"', True),
    "strings-split": ('"a,b,c".split(",") == ["a", "b", "c"]', True),
    "strings-substring": (
        f'{A}.productName.substring(1) == "100" && "hopper".substring(0, 3) == "hop"',
        True,
    ),
    "strings-trim": ('"  h100 ".trim() == "h100"', True),
    "strings-join": ('["a", "b"].join("-") == "a-b"', True),
    "strings-quote": ('strings.quote("a\\"b") == "\\"a\\\\\\"b\\""', True),
    "strings-format": ('"%s-%d".format(["gpu", 3]) == "gpu-3"', True),
    "std-starts-ends-contains": (
        f'{A}.family.startsWith("hop") && {A}.family.endsWith("per") && {A}.family.contains("pp")',
        True,
    ),
    "std-matches": (f'{A}.productName.matches("^H[0-9]+$")', True),
    "std-size": (f"size({A}.productName) == 4 && {A}.productName.size() == 4", True),
    "macro-all": ("[1, 2, 3].all(x, x > 0)", True),
    "macro-exists": ("[1, 2, 3].exists(x, x == 2)", True),
    "macro-exists-one": ("[1, 2, 2].exists_one(x, x == 2)", False),
    "macro-map-filter": ("[1, 2, 3].map(x, x * 2).filter(x, x > 2) == [4, 6]", True),
    "optional-select": (f'{A}.?missing.orValue("none") == "none"', True),
    # --- logical operators absorb errors -------------------------------------------------
    "false-and-error": (f"false && {A}.missing == 1", False),
    "error-and-false": (f"{A}.missing == 1 && false", False),
    "true-or-error": (f"true || {A}.missing == 1", True),
    "error-or-true": (f"{A}.missing == 1 || true", True),
    "error-and-true": (f"{A}.missing == 1 && true", runtime_error("no such key: missing")),
    "guarded-other-driver": (
        'device.driver == "other.example.org" && device.attributes["other.example.org"].model == "x"',
        False,
    ),
    # --- results that are not bool -----------------------------------------------------
    "dyn-string-result": (
        f"{A}.productName",
        runtime_error("CEL result of type string could not be converted to bool"),
    ),
    "dyn-int-result": (f"{A}.index", runtime_error("CEL result of type int could not be converted to bool")),
    "string-result-does-not-compile": (
        "device.driver",
        compile_error("must evaluate to bool or the unknown type, not string"),
    ),
    "int-result-does-not-compile": ("1", compile_error("must evaluate to bool or the unknown type, not int")),
    # --- compile errors ------------------------------------------------------------------
    "undeclared-reference": ("noSuchVar", compile_error("undeclared reference to 'noSuchVar'")),
    "syntax-error": ("?!", compile_error("Syntax error")),
    "unbalanced": ("device.driver == (", compile_error("Syntax error")),
    "undefined-field-of-device": ("device.noSuchField == 1", compile_error("undeclared reference")),
    # --- the runtime cost limit -----------------------------------------------------------
    "cost-limit": (
        "[1,2,3,4,5,6,7,8,9,10].all(x, [1,2,3,4,5,6,7,8,9,10].all(y, [1,2,3,4,5,6,7,8,9,10].all(z, "
        "[1,2,3,4,5,6,7,8,9,10].all(z2, [1,2,3,4,5,6,7,8,9,10].all(z3, [1,2,3,4,5,6,7,8,9,10].all(z4, "
        "[1,2,3,4,5,6,7,8,9,10].all(z5, int('1') < 100)))))))",
        runtime_error("actual cost limit exceeded"),
    ),
}


@pytest.fixture(scope="module")
def env() -> SelectorEnvironment:
    return SelectorEnvironment()


@pytest.mark.parametrize(("expression", "expected"), CASES.values(), ids=CASES.keys())
def test_selector(env: SelectorEnvironment, expression: str, expected: bool | Fails) -> None:
    if isinstance(expected, Fails):
        with pytest.raises(expected.error) as raised:
            env.evaluate(expression, gpu())
        assert expected.text in str(raised.value)
        assert raised.value.args[0] == raised.value.message  # type: ignore[attr-defined]
    else:
        assert env.evaluate(expression, gpu()) is expected


# --- device contents that break every evaluation ---------------------------------------


def test_attribute_without_value_fails_every_evaluation(env: SelectorEnvironment) -> None:
    device = gpu("broken", broken=DeviceAttribute())
    for expression in ("true", f'device.driver == "{DRIVER}"'):
        with pytest.raises(CelRuntimeError, match=r"^attribute broken: unsupported attribute value$"):
            env.evaluate(expression, device)


def test_list_attribute_is_unsupported_in_1_35(env: SelectorEnvironment) -> None:
    device = gpu("listy", names=DeviceAttribute(strings=("fish", "bird")))
    with pytest.raises(CelRuntimeError, match=r"^attribute names: unsupported attribute value$"):
        env.evaluate(f"{A}.productName == 'H100'", device)


def test_unparsable_version_attribute(env: SelectorEnvironment) -> None:
    device = gpu("bad-version", firmware=DeviceAttribute(version_value="1.0"))
    with pytest.raises(CelRuntimeError) as raised:
        env.evaluate("true", device)
    assert (
        raised.value.message
        == "attribute firmware: parse semantic version: No Major.Minor.Patch elements found"
    )


def test_qualified_attribute_wins_over_unqualified(env: SelectorEnvironment) -> None:
    device = gpu(
        "both-spellings",
        model=DeviceAttribute(string_value="plain"),
        **{"gpu.example.com/model": DeviceAttribute(string_value="qualified")},
    )
    assert env.evaluate(f'{A}.model == "qualified"', device) is True


def test_device_without_driver_domain(env: SelectorEnvironment) -> None:
    bare = DeviceInput(key="bare", driver=DRIVER, attributes={}, capacity={})
    assert env.evaluate(f"{A}.size() == 0 && {C}.size() == 0", bare) is True
    assert env.evaluate(f'"{DRIVER}" in device.attributes', bare) is False
    assert env.evaluate("device.attributes[device.driver].size() == 0", bare) is True


# --- allowMultipleAllocations ---------------------------------------------------------------


def test_allow_multiple_allocations_defaults_to_false(env: SelectorEnvironment) -> None:
    assert env.evaluate("device.allowMultipleAllocations == false", gpu()) is True


def test_allow_multiple_allocations_set() -> None:
    env = SelectorEnvironment(consumable_capacity=True)
    shared = DeviceInput(
        key="shared", driver=DRIVER, attributes={}, capacity={}, allow_multiple_allocations=True
    )
    assert env.evaluate("device.allowMultipleAllocations", shared) is True
    assert env.evaluate("device.allowMultipleAllocations == false", shared) is False


def test_allow_multiple_allocations_undeclared_without_consumable_capacity() -> None:
    env = SelectorEnvironment(consumable_capacity=False)
    message = env.compile_error("device.allowMultipleAllocations == false")
    assert message is not None
    assert "undeclared reference to 'device.allowMultipleAllocations'" in message
    assert env.evaluate(f'device.driver == "{DRIVER}"', gpu()) is True


# --- known gaps, pinned so that a change is noticed ------------------------------------------


def test_has_on_device_field_is_refused(env: SelectorEnvironment) -> None:
    # Upstream: true. The engine would return the field's value; allot refuses.
    message = env.compile_error("has(device.driver)")
    assert message is not None
    assert "has(device.driver) is not supported" in message


def test_compile_error_text_has_cel_go_layout(env: SelectorEnvironment) -> None:
    message = env.compile_error("noSuchVar")
    assert message == (
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in container '')\n"
        " | noSuchVar\n"
        " | ^"
    )


def test_quantity_named_in_type_errors(env: SelectorEnvironment) -> None:
    message = env.compile_error(f"{C}.memory > 5")
    assert message is not None
    assert "applied to '(kubernetes.Quantity, int)'" in message

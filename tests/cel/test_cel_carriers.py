"""How Quantity and Semver travel through the engine: exact, canonical, order-preserving."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allot.cel import quantity_lib, semver_lib
from allot.cel.semver import Semver
from allot.model.quantity import Quantity

big_ints = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=-(2**2000), max_value=2**2000),
)


@given(big_ints)
def test_quantity_round_trip(nano: int) -> None:
    assert quantity_lib.decode(quantity_lib.encode_nano(nano)) == nano


@given(big_ints, big_ints)
def test_quantity_encoding_preserves_order_and_equality(a: int, b: int) -> None:
    left, right = bytes(quantity_lib.encode_nano(a)), bytes(quantity_lib.encode_nano(b))
    assert (left < right) == (a < b)
    assert (left == right) == (a == b)


def test_equal_quantities_share_a_carrier() -> None:
    assert quantity_lib.encode(Quantity.parse("1Gi")) == quantity_lib.encode(Quantity.parse("1024Mi"))
    assert quantity_lib.encode(Quantity.parse("0.5")) == quantity_lib.encode(Quantity.parse("500m"))


@pytest.mark.parametrize("junk", [b"", b"\x02", b"\x02\x00\x02\x01", b"\x03\x00\x00", b"abc"])
def test_foreign_bytes_are_not_quantities(junk: bytes) -> None:
    with pytest.raises(ValueError, match="no such overload"):
        quantity_lib.decode(junk)


def test_semver_carrier_drops_build_metadata() -> None:
    assert semver_lib.encode(Semver.parse("1.2.3-rc.1+b5")) == ["kubernetes.Semver", "1", "2", "3", "rc", "1"]
    assert semver_lib.decode(semver_lib.encode(Semver.parse("1.2.3-rc.1"))) == Semver.parse("1.2.3-rc.1")


@pytest.mark.parametrize("junk", [[], ["1", "2", "3"], ["kubernetes.Semver", "1", "2"], ["x", "1", "2", "3"]])
def test_foreign_lists_are_not_versions(junk: list[str]) -> None:
    with pytest.raises(ValueError, match="no such overload"):
        semver_lib.decode(junk)

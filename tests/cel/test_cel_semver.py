"""allot's SemVer 2.0.0 parser and precedence, against the spec and blang/semver's messages."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from allot.cel.semver import Semver, SemverError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.2.3", Semver(1, 2, 3)),
        ("0.0.0", Semver(0, 0, 0)),
        ("1.0.0-alpha", Semver(1, 0, 0, ("alpha",))),
        ("1.0.0-alpha.1", Semver(1, 0, 0, ("alpha", 1))),
        ("1.0.0-0.3.7", Semver(1, 0, 0, (0, 3, 7))),
        ("1.0.0-x.7.z.92", Semver(1, 0, 0, ("x", 7, "z", 92))),
        ("1.0.0-x-y-z.--", Semver(1, 0, 0, ("x-y-z", "--"))),
        ("1.0.0+20130313144700", Semver(1, 0, 0, (), ("20130313144700",))),
        ("1.0.0-beta+exp.sha.5114f85", Semver(1, 0, 0, ("beta",), ("exp", "sha", "5114f85"))),
        ("1.0.0+21AF26D3----117B344092BD", Semver(1, 0, 0, (), ("21AF26D3----117B344092BD",))),
        ("1.0.0-0A", Semver(1, 0, 0, ("0A",))),
        ("18446744073709551615.0.0", Semver(18446744073709551615, 0, 0)),
    ],
)
def test_parse_valid(text: str, expected: Semver) -> None:
    parsed = Semver.parse(text)
    assert (parsed.major, parsed.minor, parsed.patch) == (expected.major, expected.minor, expected.patch)
    assert parsed.prerelease == expected.prerelease
    assert parsed.build == expected.build
    assert str(parsed) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Version string empty"),
        ("1", "No Major.Minor.Patch elements found"),
        ("1.2", "No Major.Minor.Patch elements found"),
        ("v1.2.3", 'Invalid character(s) found in major number "v1"'),
        ("01.2.3", 'Major number must not contain leading zeroes "01"'),
        ("1.02.3", 'Minor number must not contain leading zeroes "02"'),
        ("1.2.03", 'Patch number must not contain leading zeroes "03"'),
        ("1.x.3", 'Invalid character(s) found in minor number "x"'),
        ("1.2.x", 'Invalid character(s) found in patch number "x"'),
        ("1..3", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("1.2.3-", "Prerelease is empty"),
        ("1.2.3-a..b", "Prerelease is empty"),
        ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.2.3-a_b", 'Invalid character(s) found in prerelease "a_b"'),
        ("1.2.3+", "Build meta data is empty"),
        ("1.2.3+a..b", "Build meta data is empty"),
        ("1.2.3+a_b", 'Invalid character(s) found in build meta data "a_b"'),
        (" 1.2.3", 'Invalid character(s) found in major number " 1"'),
        ("18446744073709551616.0.0", 'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
    ],
)
def test_parse_invalid(text: str, message: str) -> None:
    with pytest.raises(SemverError) as raised:
        Semver.parse(text)
    assert str(raised.value) == message
    assert not Semver.is_valid(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v1.2.3", "1.2.3"),
        ("1.2", "1.2.0"),
        ("1", "1.0.0"),
        ("v2", "2.0.0"),
        ("01.01.01", "1.1.1"),
        ("00.0.000", "0.0.0"),
        ("1.2.03-alpha", "1.2.3-alpha"),
        ("1.2.3+build", "1.2.3+build"),
    ],
)
def test_parse_normalized(text: str, expected: str) -> None:
    assert str(Semver.parse_normalized(text)) == expected
    assert Semver.is_valid(text, normalize=True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.2-alpha", "short version cannot contain PreRelease/Build meta data"),
        ("1+build", "short version cannot contain PreRelease/Build meta data"),
        ("vv1.2.3", 'Invalid character(s) found in major number "0v1"'),
        ("hello", 'Invalid character(s) found in major number "0hello"'),
    ],
)
def test_parse_normalized_invalid(text: str, message: str) -> None:
    with pytest.raises(SemverError) as raised:
        Semver.parse_normalized(text)
    assert str(raised.value) == message


def test_precedence_follows_the_spec_example() -> None:
    # SemVer 2.0.0, item 11: each is lower than the next.
    chain = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.1.0",
        "2.0.0",
    ]
    versions = [Semver.parse(text) for text in chain]
    for lower, higher in itertools.pairwise(versions):
        assert lower.compare(higher) == -1
        assert higher.compare(lower) == 1
        assert lower < higher


def test_equality_ignores_build_metadata() -> None:
    assert Semver.parse("1.0.0+a") == Semver.parse("1.0.0+b")
    assert hash(Semver.parse("1.0.0+a")) == hash(Semver.parse("1.0.0"))
    assert Semver.parse("1.0.0-a") != Semver.parse("1.0.0")


identifiers = st.one_of(
    st.integers(min_value=0, max_value=10**6),
    st.from_regex(r"[a-zA-Z-][0-9a-zA-Z-]{0,5}", fullmatch=True),
)
versions = st.builds(
    Semver,
    st.integers(0, 20),
    st.integers(0, 20),
    st.integers(0, 20),
    st.lists(identifiers, max_size=3).map(tuple),
)


@given(versions, versions)
def test_compare_is_antisymmetric_and_round_trips(left: Semver, right: Semver) -> None:
    assert left.compare(right) == -right.compare(left)
    assert Semver.parse(str(left)) == left

"""Kubernetes' CEL semver library (`semver()`, `isSemver()`, `major()`, `compareTo` ...).

A Semver crosses into CEL as a `list(string)`: a tag, then major, minor and
patch, then the prerelease identifiers, all as decimal or identifier text.
Build metadata is left out, so CEL's `==` on two carriers is SemVer equality
(build metadata ignored), exactly as Kubernetes' Semver type compares.

Functions and messages follow `k8s.io/apiserver/pkg/cel/library/semverlib.go`
(library version 1, which adds the `normalize` overloads).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from allot.cel.functions import Kind, Overload
from allot.cel.semver import Semver, SemverError

__all__ = ["OVERLOADS", "TAG", "decode", "encode"]

TAG: Final = "kubernetes.Semver"
_INT64_MAX: Final = (1 << 63) - 1
_NO_SUCH_OVERLOAD: Final = "no such overload"

# Version attributes and literals repeat across devices and evaluations.
_DECODED: dict[tuple[str, ...], Semver] = {}
_LITERALS: dict[tuple[str, bool], list[str] | str] = {}  # carrier, or the parse error
_CACHE_SIZE: Final = 4096


def encode(version: Semver) -> list[str]:
    """The CEL carrier of `version`."""
    return [
        TAG,
        str(version.major),
        str(version.minor),
        str(version.patch),
        *(str(p) for p in version.prerelease),
    ]


def decode(carrier: Sequence[object]) -> Semver:
    """The version a carrier holds; any other list is a "no such overload" error."""
    if len(carrier) < 4 or carrier[0] != TAG or not all(isinstance(p, str) for p in carrier):
        raise ValueError(_NO_SUCH_OVERLOAD)
    parts = tuple(str(p) for p in carrier)
    version = _DECODED.get(parts)
    if version is None:
        try:
            prerelease = tuple(int(p) if p.isdigit() else p for p in parts[4:])
            version = Semver(int(parts[1]), int(parts[2]), int(parts[3]), prerelease)
        except ValueError:
            raise ValueError(_NO_SUCH_OVERLOAD) from None
        if len(_DECODED) >= _CACHE_SIZE:
            _DECODED.clear()
        _DECODED[parts] = version
    return version


def _as_int64(value: int) -> int:
    # Go converts the uint64 fields with types.Int(v.Major), which wraps.
    return value - (1 << 64) if value > _INT64_MAX else value


def _semver_normalize(text: str, normalize: bool) -> list[str]:
    key = (text, normalize)
    carrier = _LITERALS.get(key)
    if carrier is None:
        try:
            carrier = encode(Semver.parse_normalized(text) if normalize else Semver.parse(text))
        except SemverError as err:
            carrier = str(err)
        if len(_LITERALS) >= _CACHE_SIZE:
            _LITERALS.clear()
        _LITERALS[key] = carrier
    if isinstance(carrier, str):
        raise ValueError(carrier)
    return list(carrier)


def _semver(text: str) -> list[str]:
    return _semver_normalize(text, False)


def _is_semver(text: str) -> bool:
    return Semver.is_valid(text)


def _is_semver_normalize(text: str, normalize: bool) -> bool:
    return Semver.is_valid(text, normalize=normalize)


def _compare(left: list[str], right: list[str]) -> int:
    return decode(left).compare(decode(right))


def _is_greater_than(left: list[str], right: list[str]) -> bool:
    return _compare(left, right) > 0


def _is_less_than(left: list[str], right: list[str]) -> bool:
    return _compare(left, right) < 0


def _major(carrier: list[str]) -> int:
    return _as_int64(decode(carrier).major)


def _minor(carrier: list[str]) -> int:
    return _as_int64(decode(carrier).minor)


def _patch(carrier: list[str]) -> int:
    return _as_int64(decode(carrier).patch)


_S = Kind.SEMVER

OVERLOADS: Final[tuple[Overload, ...]] = (
    Overload("semver", "string_to_semver", (Kind.STRING,), _S, _semver),
    Overload("semver", "string_bool_to_semver", (Kind.STRING, Kind.BOOL), _S, _semver_normalize),
    Overload("isSemver", "is_semver_string", (Kind.STRING,), Kind.BOOL, _is_semver),
    Overload("isSemver", "is_semver_string_bool", (Kind.STRING, Kind.BOOL), Kind.BOOL, _is_semver_normalize),
    Overload("isGreaterThan", "semver_is_greater_than", (_S, _S), Kind.BOOL, _is_greater_than, member=True),
    Overload("isLessThan", "semver_is_less_than", (_S, _S), Kind.BOOL, _is_less_than, member=True),
    Overload("compareTo", "semver_compare_to", (_S, _S), Kind.INT, _compare, member=True),
    Overload("major", "semver_major", (_S,), Kind.INT, _major, member=True),
    Overload("minor", "semver_minor", (_S,), Kind.INT, _minor, member=True),
    Overload("patch", "semver_patch", (_S,), Kind.INT, _patch, member=True),
)

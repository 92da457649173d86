"""Semantic versions as Kubernetes' CEL semver library and DRA version attributes read them.

`Semver.parse` is strict SemVer 2.0.0 exactly as `github.com/blang/semver/v4`
`Parse` implements it (the parser Kubernetes uses for `semver()` and for
version attributes), including its error texts, so a bad version attribute
fails with the same message upstream prints. `Semver.parse_normalized` is the
CEL library's `normalizeAndParse` (`semver(s, true)`): strip one leading `v`,
strip leading zeros, pad `1` and `1.2` to three parts.

Comparison follows SemVer precedence and ignores build metadata; equality
does too, as CEL's `==` on Kubernetes Semver values does.

This module knows nothing about CEL; `allot.cel.semver_lib` does the glue.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

__all__ = ["Semver", "SemverError"]

_UINT64_MAX: Final = (1 << 64) - 1
_DIGITS: Final = frozenset("0123456789")
_ALPHANUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")


class SemverError(ValueError):
    """A string that is not a semantic version; the message is blang/semver's."""


def _quote(text: str) -> str:
    # Go's %q; JSON string syntax agrees with it for everything a version holds.
    return json.dumps(text, ensure_ascii=False)


def _contains_only(text: str, allowed: frozenset[str]) -> bool:
    return all(ch in allowed for ch in text)


def _has_leading_zeroes(text: str) -> bool:
    return len(text) > 1 and text[0] == "0"


def _parse_uint(text: str) -> int:
    # strconv.ParseUint(text, 10, 64); callers have checked for digits only.
    if not text:
        raise SemverError(f"strconv.ParseUint: parsing {_quote(text)}: invalid syntax")
    value = int(text)
    if value > _UINT64_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {_quote(text)}: value out of range")
    return value


def _number(text: str, what: str) -> int:
    if not _contains_only(text, _DIGITS):
        raise SemverError(f"Invalid character(s) found in {what.lower()} number {_quote(text)}")
    if _has_leading_zeroes(text):
        raise SemverError(f"{what} number must not contain leading zeroes {_quote(text)}")
    return _parse_uint(text)


def _prerelease_identifier(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if _contains_only(text, _DIGITS):
        if _has_leading_zeroes(text):
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {_quote(text)}")
        return _parse_uint(text)
    if _contains_only(text, _ALPHANUM):
        return text
    raise SemverError(f"Invalid character(s) found in prerelease {_quote(text)}")


def _compare_identifiers(mine: int | str, theirs: int | str) -> int:
    # Numeric identifiers sort below alphanumeric ones (SemVer 2.0.0 item 11.4.3).
    if isinstance(mine, int) and isinstance(theirs, int):
        return (mine > theirs) - (mine < theirs)
    if isinstance(mine, int):
        return -1
    if isinstance(theirs, int):
        return 1
    # Go compares strings bytewise; identifiers are ASCII, so code points agree.
    return (mine > theirs) - (mine < theirs)


@dataclass(frozen=True, slots=True, eq=False)
class Semver:
    """A parsed semantic version; `==`, ordering and hashing ignore build metadata."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[int | str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Semver:
        """Strict SemVer 2.0.0, as blang/semver v4 `Parse`; raises `SemverError`."""
        if not text:
            raise SemverError("Version string empty")
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise SemverError("No Major.Minor.Patch elements found")
        major = _number(parts[0], "Major")
        minor = _number(parts[1], "Minor")
        patch_text = parts[2]
        build_texts: list[str] = []
        prerelease_texts: list[str] = []
        plus = patch_text.find("+")
        if plus != -1:
            build_texts = patch_text[plus + 1 :].split(".")
            patch_text = patch_text[:plus]
        dash = patch_text.find("-")
        if dash != -1:
            prerelease_texts = patch_text[dash + 1 :].split(".")
            patch_text = patch_text[:dash]
        patch = _number(patch_text, "Patch")
        prerelease = tuple(_prerelease_identifier(p) for p in prerelease_texts)
        for item in build_texts:
            if not item:
                raise SemverError("Build meta data is empty")
            if not _contains_only(item, _ALPHANUM):
                raise SemverError(f"Invalid character(s) found in build meta data {_quote(item)}")
        return cls(major, minor, patch, prerelease, tuple(build_texts))

    @classmethod
    def parse_normalized(cls, text: str) -> Semver:
        """The CEL library's tolerant form: `v1.02` reads as `1.2.0`; raises `SemverError`."""
        text = text.removeprefix("v")
        parts = text.split(".", 2)
        for index, part in enumerate(parts):
            if len(part) > 1:
                part = part.lstrip("0")
                if not part or part[0] not in _DIGITS:
                    part = "0" + part
                parts[index] = part
        if len(parts) < 3:
            if "+" in parts[-1] or "-" in parts[-1]:
                raise SemverError("short version cannot contain PreRelease/Build meta data")
            parts.extend("0" for _ in range(3 - len(parts)))
        return cls.parse(".".join(parts))

    @classmethod
    def is_valid(cls, text: str, *, normalize: bool = False) -> bool:
        """Whether `parse` (or `parse_normalized`) accepts `text`."""
        try:
            if normalize:
                cls.parse_normalized(text)
            else:
                cls.parse(text)
        except SemverError:
            return False
        return True

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 by SemVer precedence; build metadata does not count."""
        for mine, theirs in (
            (self.major, other.major),
            (self.minor, other.minor),
            (self.patch, other.patch),
        ):
            if mine != theirs:
                return 1 if mine > theirs else -1
        if not self.prerelease or not other.prerelease:
            # A release outranks any prerelease of the same core version.
            return (not self.prerelease) - (not other.prerelease)
        for mine_id, theirs_id in zip(self.prerelease, other.prerelease, strict=False):
            order = _compare_identifiers(mine_id, theirs_id)
            if order:
                return order
        mine_len, theirs_len = len(self.prerelease), len(other.prerelease)
        return (mine_len > theirs_len) - (mine_len < theirs_len)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.prerelease))

    def __lt__(self, other: Semver) -> bool:
        return self.compare(other) < 0

    def __le__(self, other: Semver) -> bool:
        return self.compare(other) <= 0

    def __gt__(self, other: Semver) -> bool:
        return self.compare(other) > 0

    def __ge__(self, other: Semver) -> bool:
        return self.compare(other) >= 0

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(str(p) for p in self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

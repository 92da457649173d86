"""Validated query parameters: every view reads its inputs through here, so a bad request is a
`QueryError` (the server answers 4xx with its one-line message), never a traceback.

Bounds keep every answer small whatever the cluster's size: a page holds at most `MAX_LIMIT`
rows, a filter at most `MAX_TEXT` characters, a query string at most `MAX_QUERY` characters.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass

MAX_LIMIT = 500
MAX_OFFSET = 10_000_000
MAX_TEXT = 200
MAX_QUERY = 2_000
DEFAULT_LIMIT = 50


class QueryError(ValueError):
    """A request the dashboard refuses: `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Page:
    offset: int = 0
    limit: int = DEFAULT_LIMIT

    def cut(self, total: int) -> slice:
        return slice(min(self.offset, total), min(self.offset + self.limit, total))


class Params:
    """The query parameters of one request, read once each and checked against `allowed`."""

    def __init__(self, raw: Mapping[str, str], allowed: Collection[str]) -> None:
        unknown = sorted(set(raw) - set(allowed))
        if unknown:
            raise QueryError(
                f"unknown query parameter {unknown[0]!r}; expected one of {', '.join(sorted(allowed))}"
            )
        for name, value in raw.items():
            if len(value) > MAX_QUERY:
                raise QueryError(f"query parameter {name!r} is longer than {MAX_QUERY} characters", 414)
        self.raw = raw

    def integer(self, name: str, default: int, low: int, high: int) -> int:
        text = self.raw.get(name)
        if text is None or text == "":
            return default
        try:
            value = int(text, 10)
        except ValueError:
            raise QueryError(f"{name}: expected an integer, got {text[:40]!r}") from None
        if not low <= value <= high:
            raise QueryError(f"{name}: expected {low} to {high}, got {value}")
        return value

    def number(self, name: str) -> float | None:
        text = self.raw.get(name)
        if text is None or text == "":
            return None
        try:
            value = float(text)
        except ValueError:
            raise QueryError(f"{name}: expected a number, got {text[:40]!r}") from None
        if not math.isfinite(value):
            raise QueryError(f"{name}: expected a finite number, got {text[:40]!r}")
        return value

    def text(self, name: str, default: str = "") -> str:
        value = self.raw.get(name, default)
        if len(value) > MAX_TEXT:
            raise QueryError(f"{name}: at most {MAX_TEXT} characters, got {len(value)}")
        return value

    def choice(self, name: str, choices: tuple[str, ...], default: str) -> str:
        value = self.raw.get(name) or default
        if value not in choices:
            raise QueryError(f"{name}: expected one of {', '.join(choices)}, got {value[:40]!r}")
        return value

    def page(self, default_limit: int = DEFAULT_LIMIT) -> Page:
        return Page(
            offset=self.integer("offset", 0, 0, MAX_OFFSET),
            limit=self.integer("limit", default_limit, 1, MAX_LIMIT),
        )


PAGE = ("offset", "limit")

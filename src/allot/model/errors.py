"""Located errors for bad input.

Every problem found in user input is a `ManifestError` that says where it is
(file, document number, item within a `kind: List`, the object's kind,
namespace and name, and the field path) and what was expected. A load
collects all of them and raises `ManifestErrors` once, so the user sees
every problem in one run instead of fixing them one at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class Location:
    """Where an object (or a field of it) came from."""

    file: str = ""
    document: int | None = None  # 1-based document number within the file
    item: int | None = None  # 0-based index within a `kind: List`
    kind: str = ""
    namespace: str = ""
    name: str = ""
    field: str = ""

    def at(self, field: str) -> Location:
        """The same object, pointing at `field` (appended to any field already set)."""
        if self.field and field:
            joined = f"{self.field}{field}" if field.startswith("[") else f"{self.field}.{field}"
        else:
            joined = self.field or field
        return replace(self, field=joined)

    def describe_object(self) -> str:
        if not self.kind and not self.name:
            return ""
        ident = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {ident}".strip() if ident else self.kind

    def __str__(self) -> str:
        parts: list[str] = []
        where = self.file or "<input>"
        if self.document is not None:
            where += f" document {self.document}"
        if self.item is not None:
            where += f" item {self.item}"
        parts.append(where)
        described = self.describe_object()
        if described:
            parts.append(described)
        if self.field:
            parts.append(self.field)
        return ": ".join(parts)


@dataclass(frozen=True, slots=True)
class ManifestError:
    """One problem in the input, with its location and what was expected."""

    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


class ManifestErrors(Exception):
    """All problems of one load; raised only when there is at least one."""

    def __init__(self, errors: Iterable[ManifestError]) -> None:
        self.errors: Sequence[ManifestError] = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))

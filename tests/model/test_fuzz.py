"""Fuzzed manifests give located errors only.

Hypothesis mutates the valid example manifests (deletes keys, changes types,
puts odd values in, duplicates list entries, truncates the text, inserts
invalid YAML) and loads the result. The load may succeed; if it fails it
raises `ManifestErrors` only, and every error names the file and either a
document number or a line, and the object wherever the document identified
one. Never another exception, never an internal error.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allot.model.errors import ManifestError, ManifestErrors
from allot.model.loader import load_text
from allot.model.strict_yaml import StrictLoader
from fuzzing import examples, memory_ceiling, mutate_tree

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = sorted(p for p in EXAMPLES.rglob("*") if p.suffix in (".yaml", ".json"))
SOURCE = "fuzzed.yaml"
LINE = re.compile(r"\bline \d+")

ODD_VALUES: list[Any] = [
    None,
    0,
    -1,
    2**70,
    -(2**64),
    1.5,
    float("inf"),
    True,
    "",
    " ",
    "-1",
    "-5Gi",
    "1e99999",
    "Ünïcode-名前",
    "a/b/c",
    "x" * 300,
    "line\nbreak",
    "\x00",
    "2026-03-09T11:00:42Z",
    [],
    [None],
    {},
    {"unexpected": {"nested": [1, 2]}},
]
INVALID_YAML = [
    "\n: - ]\t{",
    "\n- [",
    "\nkey: value: other\n",
    "\n\t\tx: 1\n",
    '\n"unterminated',
    "\n&a [*a]\n",
    "\n!!python/object:os.system ''\n",
    "{",
    "\n---\n- 1\n",
]


def documents(path: Path) -> list[Any]:
    return list(yaml.load_all(path.read_text(), Loader=StrictLoader))


ORIGINALS = {path: documents(path) for path in FILES}


@st.composite
def mutated(draw: st.DrawFn) -> str:
    path = draw(st.sampled_from(FILES))
    docs = copy.deepcopy(ORIGINALS[path])
    mutate_tree(draw, docs, ODD_VALUES)
    text = yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:cut]
        else:
            text = text[:cut] + draw(st.sampled_from(INVALID_YAML)) + text[cut:]
    return text


def identified(docs: list[Any] | None, error: ManifestError) -> tuple[str, str]:
    """(kind, name) the document (or list item) at the error's location gives, '' where it gives none."""
    where = error.location
    if docs is None or where.document is None or not 0 < where.document <= len(docs):
        return "", ""
    raw = docs[where.document - 1]
    list_kind = ""
    if where.item is not None:
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("items"), list)
            or where.item >= len(raw["items"])
        ):
            return "", ""
        kind = raw.get("kind")
        list_kind = kind[: -len("List")] if isinstance(kind, str) and kind not in ("List",) else ""
        raw = raw["items"][where.item]
    if not isinstance(raw, dict):
        return "", ""
    kind = raw.get("kind") if "kind" in raw else list_kind
    metadata = raw.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return (kind if isinstance(kind, str) else ""), (name if isinstance(name, str) else "")


def check(text: str, errors: Sequence[ManifestError]) -> None:
    try:
        docs: list[Any] | None = list(yaml.load_all(text, Loader=StrictLoader))
    except yaml.YAMLError:
        docs = None
    assert errors
    for error in errors:
        where = error.location
        assert where.file == SOURCE, error
        assert where.document is not None or LINE.search(error.message), error
        assert not error.message.startswith("Internal error"), error
        kind, name = identified(docs, error)
        if kind and where.field not in ("kind", "apiVersion"):
            assert where.kind == kind, error
        if name and kind:
            assert where.name == name, error


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated())
def test_mutated_examples_give_located_errors_only(text: str) -> None:
    try:
        with memory_ceiling():
            load_text(text, SOURCE)
    except ManifestErrors as failure:
        check(text, failure.errors)


@pytest.mark.parametrize("snippet", INVALID_YAML)
def test_each_invalid_snippet_alone(snippet: str) -> None:
    text = (EXAMPLES / "kueue" / "topology.yaml").read_text() + snippet
    try:
        load_text(text, SOURCE)
    except ManifestErrors as failure:
        check(text, failure.errors)

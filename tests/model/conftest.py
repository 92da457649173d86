"""Shared helpers for the model tests: the example folders and loading that returns error strings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from allot.model.errors import ManifestErrors
from allot.model.loader import load_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_errors(text: str, source: str = "bad.yaml", *, validate: bool = True) -> list[str]:
    """Every error of loading `text`, as printed; [] when it loads."""
    try:
        load_text(text, source, validate=validate)
    except ManifestErrors as failure:
        return [str(e) for e in failure.errors]
    return []


@pytest.fixture(scope="session")
def examples() -> Path:
    return EXAMPLES


@pytest.fixture(scope="session")
def errors_of() -> Callable[..., list[str]]:
    return load_errors


def field_errors(*documents: Mapping[str, Any], validate: bool = True) -> list[str]:
    """`field: message` of every error of loading `documents` (plain dicts) together."""
    text = "---\n".join(yaml.safe_dump(dict(d), sort_keys=False) for d in documents)
    try:
        load_text(text, "test.yaml", validate=validate)
    except ManifestErrors as failure:
        return [f"{e.location.field}: {e.message}" for e in failure.errors]
    return []


@pytest.fixture(scope="session")
def problems() -> Callable[..., list[str]]:
    return field_errors

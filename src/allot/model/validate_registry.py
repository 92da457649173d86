"""Where the per-kind validators register (`register`, `register_set`).

Kept apart from `validation` so that the `validate_*` modules can import it
without importing each other in a cycle; `validation` imports them all, so
importing it (as the loader does) registers every validator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar, cast

from allot.model.base import Object
from allot.model.errors import Location, ManifestError

_O = TypeVar("_O", bound=Object)

Validator = Callable[[Object, Location], list[ManifestError]]
SetValidator = Callable[[Sequence[tuple[Object, Location]]], list[ManifestError]]

KIND_VALIDATORS: dict[type[Object], list[Validator]] = {}
SET_VALIDATORS: list[SetValidator] = []


def register(cls: type[_O]) -> Callable[[Callable[[_O, Location], list[ManifestError]]], Validator]:
    """Decorator: run the function on every object of exactly `cls`."""

    def decorator(fn: Callable[[_O, Location], list[ManifestError]]) -> Validator:
        # Sound because validate_object looks validators up by the object's own type.
        validator = cast(Validator, fn)
        KIND_VALIDATORS.setdefault(cls, []).append(validator)
        return validator

    return decorator


def register_set(fn: SetValidator) -> SetValidator:
    """Decorator: run the function once over all objects of a load."""
    SET_VALIDATORS.append(fn)
    return fn

"""Conversion between records and plain data (dicts, YAML, JSON).

Decoding is `msgspec.convert` with a hook that turns the strings and numbers
of a manifest into `Quantity` values; encoding prints quantities in canonical
form. Both directions go through the same field names, so load -> dump ->
load gives equal records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import msgspec
import yaml

from allot.model.base import Object
from allot.model.quantity import Quantity, QuantityError

T = TypeVar("T")


def _decode_hook(target: type, raw: Any) -> Any:
    if target is Quantity:
        try:
            return Quantity.coerce(raw)
        except QuantityError as err:
            # msgspec attaches the field path to a ValueError raised here (not to a ValidationError).
            raise ValueError(str(err)) from None
    raise NotImplementedError(f"cannot decode {target!r}")


def _encode_hook(value: Any) -> Any:
    if isinstance(value, Quantity):
        return value.canonical()
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


def decode(raw: Any, cls: type[T]) -> T:
    """Build a record from plain data; raises msgspec.ValidationError naming the field path."""
    return msgspec.convert(raw, cls, dec_hook=_decode_hook)


def to_data(record: Any) -> Any:
    """Plain dicts and lists, camelCase keys, quantities as canonical strings."""
    return msgspec.to_builtins(record, enc_hook=_encode_hook)


def object_to_data(obj: Object) -> dict[str, Any]:
    """A top-level object as a manifest dict, apiVersion and kind first."""
    data: dict[str, Any] = to_data(obj)
    head = {
        "apiVersion": obj.api_version or obj.default_api_version(),
        "kind": obj.kind or obj.KIND,
    }
    data.pop("apiVersion", None)
    data.pop("kind", None)
    return {**head, **data}


class _Dumper(yaml.CSafeDumper if hasattr(yaml, "CSafeDumper") else yaml.SafeDumper):  # type: ignore[misc]
    """Block-style YAML that keeps key order, as kubectl prints it."""


def dump_yaml(objects: Iterable[Object]) -> str:
    """Multi-document YAML, one document per object."""
    documents = [object_to_data(o) for o in objects]
    return yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def dump_json(objects: Iterable[Object]) -> str:
    """A `kind: List` JSON document, the shape `kubectl get -o json` prints."""
    items = [object_to_data(o) for o in objects]
    payload: Mapping[str, Any] = {"apiVersion": "v1", "kind": "List", "items": items}
    return msgspec.json.format(msgspec.json.encode(payload), indent=2).decode()

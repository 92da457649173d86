"""Load Kubernetes manifests from files, folders and text.

Accepts what `kubectl get -o yaml` and `-o json` print: multi-document YAML,
JSON, `kind: List` and typed lists (`NodeList`, ...) whose items may omit
apiVersion and kind. Objects of kinds allot does not model (Deployments,
Services ...) are skipped and reported, not rejected, so a whole cluster
dump can be read. Unknown fields are dropped, as the API server does.

Loading is all-or-nothing: every problem found in every file is collected,
and if there is any, `ManifestErrors` is raised with all of them; otherwise
a `Manifests` value holds every object with its location.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import yaml

from allot.model import kinds
from allot.model.base import Object
from allot.model.codec import decode
from allot.model.conversion import to_v1_shape
from allot.model.defaults import apply_defaults
from allot.model.errors import Location, ManifestError, ManifestErrors
from allot.model.strict_yaml import JsonProblem, describe_yaml_error, load_json, load_yaml_documents
from allot.model.validate_decode import decode_problem
from allot.model.validation import validate_object, validate_together

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

_O = TypeVar("_O", bound=Object)


@dataclass(frozen=True, slots=True)
class LoadedObject:
    obj: Object
    location: Location


@dataclass(frozen=True, slots=True)
class SkippedObject:
    """A document allot does not model (its kind), kept so that `validate` can list it."""

    location: Location
    api_version: str
    kind: str


@dataclass
class Manifests:
    """Everything one load produced, in input order."""

    entries: list[LoadedObject] = field(default_factory=list)
    skipped: list[SkippedObject] = field(default_factory=list)

    @property
    def objects(self) -> list[Object]:
        return [entry.obj for entry in self.entries]

    def of_kind(self, cls: type[_O]) -> list[_O]:
        return [entry.obj for entry in self.entries if isinstance(entry.obj, cls)]

    def location_of(self, obj: Object) -> Location | None:
        for entry in self.entries:
            if entry.obj is obj:
                return entry.location
        return None

    def extend(self, other: Manifests) -> None:
        self.entries.extend(other.entries)
        self.skipped.extend(other.skipped)


def _identify(raw: dict[str, Any], where: Location) -> Location:
    metadata = raw.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}

    def text(value: Any) -> str:
        return value if isinstance(value, str) else ""

    return Location(
        file=where.file,
        document=where.document,
        item=where.item,
        kind=text(raw.get("kind")),
        namespace=text(metadata.get("namespace")),
        name=text(metadata.get("name")),
    )


class _Collector:
    def __init__(self, *, validate: bool = True) -> None:
        self.validate = validate
        self.result = Manifests()
        self.errors: list[ManifestError] = []
        self._seen: dict[tuple[str, str, str], Location] = {}

    def add_document(
        self, raw: Any, where: Location, *, list_defaults: tuple[str, str] | None = None
    ) -> None:
        if raw is None:
            return  # an empty YAML document, e.g. a trailing '---'
        if not isinstance(raw, dict):
            self.errors.append(
                ManifestError(where, f"expected a Kubernetes object (a mapping), got {type(raw).__name__}")
            )
            return
        if list_defaults is not None:
            api_version, kind = list_defaults
            # `|`, not `**`: keys of bad input need not be strings.
            raw = {"apiVersion": api_version, "kind": kind} | raw if "kind" not in raw else raw
        where = _identify(raw, where)
        api_version = raw.get("apiVersion")
        kind = raw.get("kind")
        if not isinstance(kind, str) or not kind:
            self.errors.append(ManifestError(where.at("kind"), "required: every object needs a kind"))
            return
        if not isinstance(api_version, str) or not api_version:
            self.errors.append(
                ManifestError(where.at("apiVersion"), "required: every object needs an apiVersion")
            )
            return
        if kind == "List" or (kind.endswith("List") and "items" in raw):
            self._add_list(raw, api_version, kind, where)
            return
        cls = kinds.lookup(api_version, kind)
        if cls is None:
            self.result.skipped.append(SkippedObject(where, api_version, kind))
            return
        _, version = kinds.split_api_version(api_version)
        if version not in cls.API_VERSIONS:
            supported = ", ".join(kinds.supported_versions(cls))
            self.errors.append(
                ManifestError(
                    where.at("apiVersion"),
                    f"unsupported version {api_version!r} for kind {kind}; expected one of {supported}",
                )
            )
            return
        try:
            obj = apply_defaults(decode(to_v1_shape(raw), cls))
        except msgspec.ValidationError as err:
            field_path, message = decode_problem(err, raw)
            self.errors.append(ManifestError(where.at(field_path), message))
            return
        except RecursionError:
            self.errors.append(ManifestError(where, "nested too deeply (a recursive YAML alias?)"))
            return
        where = _identify({"kind": kind, "metadata": {"name": obj.name, "namespace": obj.namespace}}, where)
        if self.validate:
            problems = validate_object(obj, where)
            if problems:
                self.errors.extend(problems)
                return
        identity = (cls.KIND, obj.namespace, obj.name)
        first = self._seen.get(identity)
        if first is not None:
            self.errors.append(ManifestError(where, f"duplicate object: already defined at {first}"))
            return
        self._seen[identity] = where
        self.result.entries.append(LoadedObject(obj, where))

    def _add_list(self, raw: dict[str, Any], api_version: str, kind: str, where: Location) -> None:
        items = raw.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            self.errors.append(
                ManifestError(where.at("items"), f"expected a list, got {type(items).__name__}")
            )
            return
        # Items of typed lists (ResourceSliceList from the API) carry no kind of their own.
        item_kind = kind[: -len("List")] if kind != "List" else ""
        for index, item in enumerate(items):
            item_where = Location(file=where.file, document=where.document, item=index)
            defaults = (api_version, item_kind) if item_kind else None
            self.add_document(item, item_where, list_defaults=defaults)


def _yaml_documents(text: str, source: str) -> Iterator[tuple[int, Any] | ManifestError]:
    document = 0
    try:
        for document, raw in enumerate(load_yaml_documents(text), start=1):
            yield document, raw
    except yaml.YAMLError as err:
        yield ManifestError(Location(file=source, document=document + 1), describe_yaml_error(err))


def _json_documents(text: str, source: str) -> Iterator[tuple[int, Any] | ManifestError]:
    try:
        yield 1, load_json(text)
    except JsonProblem as problem:
        yield ManifestError(
            Location(file=source, document=1),
            f"line {problem.line} column {problem.column}: {problem.message}",
        )


def _documents(text: str, source: str) -> Iterator[tuple[int, Any] | ManifestError]:
    # A .yaml file may hold JSON documents between `---` lines (YAML reads JSON), as kubectl takes it.
    if source.endswith(".json") or (
        not source.endswith((".yaml", ".yml")) and text.lstrip().startswith(("{", "["))
    ):
        return _json_documents(text, source)
    return _yaml_documents(text, source)


def _finish(collector: _Collector) -> Manifests:
    if collector.validate and not collector.errors:
        entries = [(entry.obj, entry.location) for entry in collector.result.entries]
        collector.errors.extend(validate_together(entries))
    if collector.errors:
        raise ManifestErrors(collector.errors)
    return collector.result


def _load_text_into(collector: _Collector, text: str, source: str) -> None:
    for entry in _documents(text, source):
        if isinstance(entry, ManifestError):
            collector.errors.append(entry)
            continue
        document, raw = entry
        collector.add_document(raw, Location(file=source, document=document))


def load_text(text: str, source: str = "<input>", *, validate: bool = True) -> Manifests:
    """Objects from one YAML or JSON text; raises ManifestErrors listing every problem.

    With `validate=False` only decoding errors are reported: objects the API
    server would reject (an empty class name, an unknown allocation mode)
    load as written, defaults applied. The allocator's conformance fixtures
    need that, because reporting such input is the allocator's job there.
    """
    collector = _Collector(validate=validate)
    _load_text_into(collector, text, source)
    return _finish(collector)


def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path | str], list[ManifestError]]:
    """Files to read, in order: folders are walked recursively and sorted; `-` is standard input."""
    files: list[Path | str] = []
    errors: list[ManifestError] = []
    for entry in paths:
        if str(entry) == "-":
            files.append("-")
            continue
        path = Path(entry)
        try:
            if path.is_dir():
                found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
                if not found:
                    errors.append(
                        ManifestError(Location(file=str(path)), "folder holds no .yaml, .yml or .json files")
                    )
                files.extend(found)
            elif path.is_file():
                files.append(path)
            else:
                errors.append(ManifestError(Location(file=str(path)), "no such file or folder"))
        except OSError as err:  # a name too long, a folder that cannot be listed
            errors.append(
                ManifestError(Location(file=str(path)[:200]), f"cannot read: {err.strerror or err}")
            )
    return files, errors


def load_paths(paths: Sequence[str | Path], *, validate: bool = True) -> Manifests:
    """Objects from files and folders; raises ManifestErrors listing every problem in all of them.

    `validate` as for `load_text`.
    """
    collector = _Collector(validate=validate)
    files, errors = expand_paths(paths)
    collector.errors.extend(errors)
    for file in files:
        if file == "-":
            _load_text_into(collector, sys.stdin.read(), "<stdin>")
            continue
        assert isinstance(file, Path)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, ValueError) as err:  # ValueError: undecodable text, a NUL in the path
            collector.errors.append(ManifestError(Location(file=str(file)), f"cannot read: {err}"))
            continue
        _load_text_into(collector, text, str(file))
    return _finish(collector)

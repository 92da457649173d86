"""YAML and JSON read the way the API server reads them, within bounds that keep bad input cheap.

Every input allot reads (manifests, scenario files, scheduler
configurations) goes through here:

* a key given twice in one mapping is an error (PyYAML and Python's json
  keep the last value silently; the API server rejects the object); keys
  merged in with `<<` may be overridden, as YAML intends;
* unquoted timestamps stay strings, as the API server keeps them;
* an alias whose anchor contains it (`&a [*a]`) is an error instead of a
  structure that recurses forever;
* aliases may not expand a document past `MAX_ALIAS_GROWTH` times its own
  size plus `ALIAS_ALLOWANCE` nodes (a "billion laughs" file is a few
  hundred bytes that expands to gigabytes);
* nothing may nest deeper than `MAX_DEPTH` levels.

Problems are raised as `yaml.MarkedYAMLError` (YAML) or `JsonProblem`
(JSON), both with the line and column, so every caller reports them the
way it reports a syntax error.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
from collections.abc import Callable, Iterator
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = [
    "ALIAS_ALLOWANCE",
    "MAX_ALIAS_GROWTH",
    "MAX_DEPTH",
    "JsonProblem",
    "StrictLoader",
    "compose_and_load",
    "describe_yaml_error",
    "error_line",
    "load_json",
    "load_yaml",
    "load_yaml_documents",
]

MAX_DEPTH = 256
MAX_ALIAS_GROWTH = 10
ALIAS_ALLOWANCE = 10_000
_MERGE_TAG = "tag:yaml.org,2002:merge"
_BASE: Any = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader


class StrictLoader(_BASE):  # type: ignore[misc]
    """PyYAML's safe loader (the C one where present) with the checks of the module docstring."""

    def construct_document(self, node: Node) -> Any:
        check_graph(node)
        return super().construct_document(node)

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            _check_duplicates(self, node)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _check_duplicates(loader: StrictLoader, node: MappingNode) -> None:
    seen: dict[tuple[str, Any], Node] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG or not isinstance(key_node, ScalarNode):
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            identity = (type(key).__name__, key)
            first = seen.setdefault(identity, key_node)
        except TypeError:  # an unhashable key; PyYAML reports it itself
            continue
        if first is not key_node:
            raise ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"duplicate key {key!r} (first at line {first.start_mark.line + 1}); "
                "the API server rejects an object with a key given twice",
                key_node.start_mark,
            )


def check_graph(root: Node) -> None:
    """Raise ConstructorError for a recursive alias, too much alias expansion, or too deep nesting."""
    # Iterative depth-first walk: `expanded` is each node's size with aliases written out (memoised,
    # so shared subtrees are counted without walking them again); a node met again while still on the
    # stack is its own ancestor.
    expanded: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in _children(node))
            continue
        if key in expanded:
            continue
        if key in on_path:
            raise ConstructorError(
                None, None, "recursive alias: the anchored node contains an alias to itself", node.start_mark
            )
        if depth > MAX_DEPTH:
            raise ConstructorError(None, None, f"nested deeper than {MAX_DEPTH} levels", node.start_mark)
        on_path.add(key)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in _children(node))
    distinct = len(expanded)
    limit = MAX_ALIAS_GROWTH * distinct + ALIAS_ALLOWANCE
    if expanded[id(root)] > limit:
        raise ConstructorError(
            None,
            None,
            f"aliases expand this document to {expanded[id(root)]:,} nodes from {distinct:,} written; "
            f"at most {limit:,} are allowed",
            root.start_mark,
        )


def _children(node: Node) -> Iterator[Node]:
    if isinstance(node, SequenceNode):
        yield from node.value
    elif isinstance(node, MappingNode):
        for key, value in node.value:
            yield key
            yield value


def error_line(err: yaml.YAMLError) -> int | None:
    """The 1-based line a YAML error points at, if it points anywhere."""
    mark = getattr(err, "problem_mark", None)
    return mark.line + 1 if mark is not None else None


def describe_yaml_error(err: yaml.YAMLError) -> str:
    """One line: `line L column C: invalid YAML: <problem>` (without a position when there is none)."""
    mark = getattr(err, "problem_mark", None)
    position = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(err, "problem", None) or str(err).replace("\n", " ")
    return f"{position}invalid YAML: {problem}"


def load_yaml(text: str) -> Any:
    """The single document in `text` (None when empty); yaml.YAMLError for bad input."""
    return yaml.load(text, Loader=StrictLoader)


def load_yaml_documents(text: str) -> Iterator[Any]:
    """Every document in `text`, lazily; yaml.YAMLError for bad input."""
    return yaml.load_all(text, Loader=StrictLoader)


def compose_and_load(text: str) -> tuple[Node | None, Any]:
    """The single document's node tree (for line numbers) and its data, parsed once."""
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


class JsonProblem(ValueError):
    """Bad JSON, with where it is (1-based line and column)."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class _Duplicate(Exception):
    def __init__(self, key: str, offset: int = 0) -> None:
        self.key = key
        self.offset = offset


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Duplicate(key)
        result[key] = value
    return result


def load_json(text: str) -> Any:
    """One JSON value; JsonProblem for invalid JSON, a duplicate key, or too deep nesting."""
    try:
        data = json.loads(text, object_pairs_hook=_unique)
    except json.JSONDecodeError as err:
        raise JsonProblem(f"invalid JSON: {err.msg}", err.lineno, err.colno) from None
    except _Duplicate as duplicate:
        offset = _duplicate_offset(text)
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        raise JsonProblem(
            f"duplicate key {duplicate.key!r}; the API server rejects an object with a key given twice",
            line,
            column,
        ) from None
    except RecursionError:
        raise JsonProblem(f"nested deeper than {MAX_DEPTH} levels", 1, 1) from None
    if _depth(data) > MAX_DEPTH:
        raise JsonProblem(f"nested deeper than {MAX_DEPTH} levels", 1, 1)
    return data


# The pure-Python parts of the json module (typeshed does not declare them).
_json_object: Callable[..., tuple[Any, int]] = vars(json.decoder)["JSONObject"]
_scan_string: Callable[[str, int], tuple[str, int]] = vars(json.decoder)["scanstring"]
_py_make_scanner: Callable[[json.JSONDecoder], Any] = vars(json.scanner)["py_make_scanner"]


class _LocatingDecoder(json.JSONDecoder):
    """The pure-Python decoder, used only once a duplicate is known, to find where the second key is."""

    def __init__(self) -> None:
        super().__init__()
        self.parse_object = self._parse_object
        self.scan_once = _py_make_scanner(self)

    def _parse_object(self, s_and_end: tuple[str, int], strict: bool, *rest: Any) -> tuple[Any, int]:
        text, after_brace = s_and_end
        scan_once, _hook, _pairs_hook, *memo = rest
        pairs, end = _json_object(s_and_end, strict, scan_once, None, list, *memo)
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key, _second_key_offset(text, after_brace, key, scan_once))
            seen.add(key)
        return dict(pairs), end


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _second_key_offset(text: str, index: int, wanted: str, scan_once: Any) -> int:
    """Offset of the second `wanted` key of the object whose body starts at `index`."""
    found = 0
    index = _skip_space(text, index)
    while index < len(text) and text[index] == '"':
        key, end = _scan_string(text, index + 1)
        if key == wanted:
            found += 1
            if found == 2:
                return index
        index = _skip_space(text, _skip_space(text, end) + 1)  # past the colon
        _, index = scan_once(text, index)
        index = _skip_space(text, index)
        if index < len(text) and text[index] == ",":
            index = _skip_space(text, index + 1)
    return index


def _duplicate_offset(text: str) -> int:
    try:
        _LocatingDecoder().decode(text)
    except _Duplicate as duplicate:
        return duplicate.offset
    except (ValueError, RecursionError):
        pass
    return 0


def _depth(data: Any) -> int:
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        if isinstance(value, dict):
            stack.extend((child, depth + 1) for child in value.values())
        elif isinstance(value, list):
            stack.extend((child, depth + 1) for child in value)
    return deepest

"""The CEL engine behind device selectors: cel-expr-python (Google's cel-cpp), and nothing else.

This is the only module that imports the engine. It declares the DRA
environment (docs/cel.md explains each choice):

* `device` is not one object but four qualified variables, `device.driver`,
  `device.attributes`, `device.capacity` and (with consumable capacity)
  `device.allowMultipleAllocations`, because the engine cannot declare
  object types without a protobuf runtime. CEL resolves `device.driver` to
  the qualified variable, so selectors read exactly as upstream.
* Kubernetes' Quantity and Semver travel as `bytes` and `list(string)`
  (see `quantity_lib`, `semver_lib`); compile errors call the Quantity
  carrier `kubernetes.Quantity` again.
* Extensions: `cel.bind`, the strings library at version 2 (what
  Kubernetes enables), optional types.

It also turns the engine's status texts into Kubernetes' wording: compile
errors read `compilation failed: ERROR: <input>:1:1: ...` as cel-go prints
them, a missing map key reads `no such key: <key>`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from allot.cel import quantity_lib, semver_lib
from allot.cel.errors import CelCompileError, CelRuntimeError
from allot.cel.functions import Kind, Overload
from allot.cel.syntax import Expr, SyntaxDecodeError, decode_expression
from allot.cel.variables import ATTRIBUTES, CAPACITY, DRIVER, MULTI_ALLOC

__all__ = ["CompiledProgram", "Engine"]

# Kubernetes enables ext.Strings(ext.StringsVersion(2)).
_STRINGS_VERSION: Final = 2

_T = cel.Type
_CARRIERS: Final[Mapping[Kind, Any]] = {
    Kind.BOOL: _T.BOOL,
    Kind.INT: _T.INT,
    Kind.DOUBLE: _T.DOUBLE,
    Kind.STRING: _T.STRING,
    Kind.QUANTITY: _T.BYTES,
    Kind.SEMVER: _T.List(_T.STRING),
}

_STATUS_PREFIX: Final = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX: Final = re.compile(r" \[[A-Z_]+\]$")
_MISSING_KEY: Final = re.compile(r"^Key not found in map ?: ?\"?(.*?)\"?$", re.DOTALL)
_NO_OVERLOAD: Final = "No matching overloads found"
_APPLIED_TO: Final = re.compile(r"(applied to '\()([^']*)(\)')")


@dataclass(frozen=True, slots=True)
class CompiledProgram:
    """A type-checked expression and its syntax tree."""

    text: str
    program: Any
    tree: Expr


def _strip_status(text: str) -> str:
    return _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text))


def _kubernetes_type_names(message: str) -> str:
    # The carriers are an implementation detail; say what upstream would say.
    def rename(match: re.Match[str]) -> str:
        inner = re.sub(r"\bbytes\b", "kubernetes.Quantity", match.group(2))
        return f"{match.group(1)}{inner}{match.group(3)}"

    return _APPLIED_TO.sub(rename, message)


def _type_name(cel_type: Any) -> str:
    """cel-go's spelling of a type (`list(int)`), from the engine's (`LIST<INT>`)."""
    name = str(cel_type.name())
    if name == "BYTES":
        return Kind.QUANTITY.value
    if name == "NULL":
        return "null_type"
    return name.lower().replace("<", "(").replace(">", ")")


def _runtime_message(status: str) -> str:
    text = _strip_status(status)
    missing = _MISSING_KEY.match(text)
    if missing:
        return f"no such key: {missing.group(1)}"
    if text.startswith(_NO_OVERLOAD):
        detail = text[len(_NO_OVERLOAD) :].lstrip(" :")
        return f"no such overload: {detail}" if detail else "no such overload"
    if text == "divide by zero":
        return "division by zero"
    return text


def _declarations(overloads: Iterable[Overload]) -> list[Any]:
    by_name: dict[str, list[Any]] = {}
    for overload in overloads:
        by_name.setdefault(overload.name, []).append(
            cel.Overload(
                overload.overload_id,
                _CARRIERS[overload.result],
                [_CARRIERS[kind] for kind in overload.params],
                is_member=overload.member,
                impl=overload.impl,
            )
        )
    return [cel.FunctionDecl(name, decls) for name, decls in by_name.items()]


class Engine:
    """One configured CEL environment: compiles selectors and evaluates them on activations."""

    def __init__(self, *, consumable_capacity: bool) -> None:
        variables: dict[str, Any] = {
            DRIVER: _T.STRING,
            ATTRIBUTES: _T.Map(_T.STRING, _T.Map(_T.STRING, _T.DYN)),
            CAPACITY: _T.Map(_T.STRING, _T.Map(_T.STRING, _CARRIERS[Kind.QUANTITY])),
        }
        if consumable_capacity:
            variables[MULTI_ALLOC] = _T.BOOL
        self._env = cel.NewEnv(
            variables=variables,
            extensions=[
                ext_bindings.ExtBindings(),
                ext_strings.ExtStrings(_STRINGS_VERSION),
                ext_optional.ExtOptional(),
            ],
            functions=_declarations((*quantity_lib.OVERLOADS, *semver_lib.OVERLOADS)),
        )

    def compile(self, text: str) -> CompiledProgram:
        """Parse and type-check `text`; the result must be bool or dyn, as upstream requires."""
        try:
            program = self._env.compile(text)
        except RuntimeError as err:
            message = _kubernetes_type_names(_strip_status(str(err)))
            raise CelCompileError(f"compilation failed: {message}") from None
        result_type = program.return_type()
        if result_type != _T.BOOL and result_type != _T.DYN:
            raise CelCompileError(f"must evaluate to bool or the unknown type, not {_type_name(result_type)}")
        try:
            tree = decode_expression(program.serialize())
        except (SyntaxDecodeError, RecursionError) as err:
            # allot's analyses need the tree; without it the selector cannot be run safely.
            raise CelCompileError(
                f"compilation failed: cannot analyse the compiled expression: {err}"
            ) from None
        return CompiledProgram(text, program, tree)

    def parse(self, text: str) -> Expr | None:
        """The syntax tree before type checking (which resolves, and so hides, qualified names).

        None when `text` does not parse; `compile` then reports why.
        """
        try:
            program = self._env.compile(text, disable_check=True)
        except RuntimeError:
            return None
        return decode_expression(program.serialize())

    def activation(self, data: Mapping[str, object]) -> Any:
        """An evaluation context; the engine converts `data` once and reuses it for every evaluation."""
        return self._env.Activation(data=dict(data))

    def evaluate(self, compiled: CompiledProgram, activation: Any) -> bool:
        """The selector's verdict; a CEL error value or a non-bool result is a `CelRuntimeError`."""
        try:
            value = compiled.program.eval(activation)
        except RuntimeError as err:
            raise CelRuntimeError(_runtime_message(str(err))) from None
        verdict = value.value()
        if verdict is True or verdict is False:
            return bool(verdict)
        value_type = value.type()
        if value_type == _T.ERROR:
            raise CelRuntimeError(_runtime_message(str(value.value())))
        kind = _type_name(value_type).split("(", 1)[0]
        raise CelRuntimeError(f"CEL result of type {kind} could not be converted to bool")

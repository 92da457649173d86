"""allot.cel: DRA device selectors in the Kubernetes CEL environment (see DESIGN.md, docs/cel.md).

A selector is a CEL expression over one variable, `device` (its `driver`,
`attributes`, `capacity` and, with consumable capacity,
`allowMultipleAllocations`), with Kubernetes' quantity and semver
libraries, `cel.bind` and the strings extension. `SelectorEnvironment`
compiles selectors, evaluates them on `DeviceInput`s, and caches programs,
converted devices and verdicts; `check_selectors` validates the selectors of
loaded manifests the way the API server does.

This package depends on `allot.model` only.
"""

from allot.cel.device_input import DeviceInput
from allot.cel.environment import (
    COST_LIMIT,
    MAX_EXPRESSION_LENGTH,
    SelectorEnvironment,
    SelectorStats,
    default_environment,
)
from allot.cel.errors import CelCompileError, CelError, CelRuntimeError

__all__ = [
    "COST_LIMIT",
    "MAX_EXPRESSION_LENGTH",
    "CelCompileError",
    "CelError",
    "CelRuntimeError",
    "DeviceInput",
    "SelectorEnvironment",
    "SelectorStats",
    "default_environment",
]

"""Which devices of a node a request can select: class and request CEL selectors.

Selector results depend only on the device and the expressions, never on
what is allocated, so a node's candidate list for one request shape (class
selectors + request selectors) is computed once and cached on the node's
`NodePools` for the lifetime of the SliceIndex. Evaluation goes through
`allot.cel`, which caches results per (expression, device content) across
nodes as well.

Upstream evaluates selectors lazily, device by device, as its search reaches
them, and a CEL error is fatal only when a device that is not in use is
reached. To keep exactly that behaviour while evaluating eagerly, a device
whose evaluation failed stays in the candidate list with its error
attached; the search raises the error when (and only if) it gets there.

Order of checks for one device, as upstream's `isSelectable`: binding
conditions while the feature is off -> not selectable; class selectors, in
order, first false wins; request selectors likewise; then per-device node
selection.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from allot.cel import CelCompileError, CelRuntimeError, DeviceInput, SelectorEnvironment
from allot.dra.pools import NodeDevice, NodePools


class SelectorFailure(NamedTuple):
    """A CEL error met while evaluating one device, reported when the search reaches the device."""

    source: str  # "class" or "claim"
    position: int
    kind: str  # "compile" or "runtime"
    message: str


@dataclass(slots=True)
class Candidates:
    """The node's devices a request shape can select, in search order, plus rejection counts."""

    devices: list[NodeDevice] = field(default_factory=list)
    errors: dict[NodeDevice, SelectorFailure] = field(default_factory=dict)
    considered: int = 0
    binding_disabled: int = 0
    class_rejected: int = 0
    request_rejected: int = 0
    node_rejected: int = 0


def _evaluate(
    env: SelectorEnvironment, expressions: Sequence[str], device: DeviceInput, source: str
) -> bool | SelectorFailure:
    for position, expression in enumerate(expressions):
        try:
            if not env.evaluate(expression, device):
                return False
        except CelCompileError as err:
            return SelectorFailure(source, position, "compile", err.message)
        except CelRuntimeError as err:
            return SelectorFailure(source, position, "runtime", err.message)
    return True


def candidates(
    pools: NodePools,
    env: SelectorEnvironment,
    class_selectors: tuple[str, ...],
    request_selectors: tuple[str, ...],
) -> Candidates:
    """The (cached) candidate list of `pools` for one request shape."""
    key = (id(env), class_selectors, request_selectors)
    cached = pools.candidates.get(key)
    if cached is not None and cached[0] is env:
        result: Candidates = cached[1]
        return result
    binding = pools.features.device_binding
    result = Candidates()
    for device in pools.devices:
        info = device.info
        result.considered += 1
        if not binding and info.binding_conditions:
            result.binding_disabled += 1
            continue
        cel_input = info.cel_input
        verdict = _evaluate(env, class_selectors, cel_input, "class") if class_selectors else True
        if verdict is True and request_selectors:
            verdict = _evaluate(env, request_selectors, cel_input, "claim")
            if verdict is False:
                result.request_rejected += 1
                continue
        elif verdict is False:
            result.class_rejected += 1
            continue
        if isinstance(verdict, SelectorFailure):
            result.errors[device] = verdict
        elif not device.node_ok:
            result.node_rejected += 1
            continue
        result.devices.append(device)
    # Keep the environment alive with the entry: the key holds only its id.
    pools.candidates[key] = (env, result)
    return result

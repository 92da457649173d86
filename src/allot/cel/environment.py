"""`SelectorEnvironment`: compile, evaluate and cache DRA device selectors.

Three caches make repeated scheduling cheap, each a bounded LRU:

1. programs, per expression text (compile failures are not cached, as
   upstream's `cel.Cache` does not cache them);
2. device values, per device key: the attributes and capacities converted to
   CEL values once, with the engine activations built from them;
3. results, per (expression, device key): the verdict, or the runtime error,
   for as long as the entry lives. Upstream caches per allocation call only;
   a selector's result depends on nothing but the expression and the device,
   so allot keeps it across nodes, pods and scheduling cycles.

`stats` counts what happened so that tests and benchmarks can assert that
scheduling the same claim shape again evaluates no CEL.

Thread safety: an environment may be shared between threads. Misses are
serialised by a lock; hits take no lock, and the counters may then undercount.
The engine ties an activation to the thread that built it, so each thread
gets its own activations of a device (the converted values are shared).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Final

from allot.cel.cost import estimate_cost
from allot.cel.device_input import DeviceInput, DeviceValues, device_values
from allot.cel.domains import DomainLookups, device_field_presence_tests, domain_lookups
from allot.cel.engine import CompiledProgram, Engine
from allot.cel.errors import CelCompileError, CelRuntimeError
from allot.cel.variables import ATTRIBUTES, CAPACITY, DRIVER, MULTI_ALLOC
from allot.model.resource import MAX_CEL_EXPRESSION_LENGTH

__all__ = [
    "COST_LIMIT",
    "MAX_EXPRESSION_LENGTH",
    "SelectorEnvironment",
    "SelectorStats",
    "default_environment",
]

# resource.k8s.io/v1 CELSelectorExpressionMaxCost and CELSelectorExpressionMaxLength.
COST_LIMIT: Final = 1_000_000
MAX_EXPRESSION_LENGTH: Final = MAX_CEL_EXPRESSION_LENGTH

_HAS_CALL: Final = re.compile(r"\bhas\s*\(")
_NOTHING_MISSING: Final[tuple[frozenset[str], frozenset[str]]] = (frozenset(), frozenset())


@dataclass(frozen=True, slots=True)
class SelectorStats:
    """Counters since the environment was created (or `clear`ed)."""

    compilations: int = 0  # expressions handed to the engine's compiler, failures included
    compile_cache_hits: int = 0
    evaluations: int = 0  # CEL evaluations actually run
    result_cache_hits: int = 0
    inputs_built: int = 0  # devices converted to CEL values


@dataclass(frozen=True, slots=True)
class _Selector:
    compiled: CompiledProgram
    lookups: DomainLookups
    cost: int


_threads = threading.local()
_thread_serials = itertools.count()


def _thread_serial() -> int:
    """A number unique to the calling thread for the life of the process (idents get reused)."""
    serial: int | None = getattr(_threads, "serial", None)
    if serial is None:
        serial = _threads.serial = next(_thread_serials)
    return serial


def _touch(cache: OrderedDict[Any, Any], key: Any) -> None:
    # KeyError: another thread evicted the entry in between; harmless.
    with contextlib.suppress(KeyError):
        cache.move_to_end(key)


def _store(cache: OrderedDict[Any, Any], key: Any, value: Any, bound: int) -> None:
    cache[key] = value
    if len(cache) > bound:
        cache.popitem(last=False)


class SelectorEnvironment:
    """The Kubernetes DRA CEL environment, with compile, input and result caches."""

    def __init__(
        self,
        *,
        consumable_capacity: bool = True,
        cost_limit: int = COST_LIMIT,
        program_cache_size: int = 1024,
        input_cache_size: int = 16_384,
        result_cache_size: int = 262_144,
    ) -> None:
        """`consumable_capacity` declares `device.allowMultipleAllocations` (DRAConsumableCapacity)."""
        self.consumable_capacity = consumable_capacity
        self.cost_limit = cost_limit
        self._engine = Engine(consumable_capacity=consumable_capacity)
        self._program_cache_size = program_cache_size
        self._input_cache_size = input_cache_size
        self._result_cache_size = result_cache_size
        self._lock = threading.RLock()
        self._programs: OrderedDict[str, _Selector] = OrderedDict()
        self._inputs: OrderedDict[Hashable, DeviceValues] = OrderedDict()
        # A verdict, or the message of the runtime error it raised.
        self._results: OrderedDict[tuple[str, Hashable], bool | str] = OrderedDict()
        self._reset_counters()

    def _reset_counters(self) -> None:
        self._compilations = 0
        self._compile_cache_hits = 0
        self._evaluations = 0
        self._result_cache_hits = 0
        self._inputs_built = 0

    # -- compiling ----------------------------------------------------------------

    def _selector(self, expression: str) -> _Selector:
        selector = self._programs.get(expression)
        if selector is not None:
            _touch(self._programs, expression)
            self._compile_cache_hits += 1
            return selector
        with self._lock:
            self._compilations += 1
            if _HAS_CALL.search(expression):
                self._reject_device_presence_tests(expression)
            compiled = self._engine.compile(expression)
            selector = _Selector(compiled, domain_lookups(compiled.tree), estimate_cost(compiled.tree))
            _store(self._programs, expression, selector, self._program_cache_size)
        return selector

    def _reject_device_presence_tests(self, expression: str) -> None:
        # The engine resolves has(device.driver) to the variable itself and so
        # would return the driver name; upstream says true (every field of
        # device is always set). Refuse rather than answer wrongly.
        tree = self._engine.parse(expression)
        fields = device_field_presence_tests(tree) if tree is not None else []
        if fields:
            raise CelCompileError(
                f"compilation failed: has(device.{fields[0]}) is not supported by allot's CEL engine; "
                "the fields of device are always present"
            )

    def compile(self, expression: str) -> None:
        """Compile `expression` (cached); raises `CelCompileError`."""
        self._selector(expression)

    def compile_error(self, expression: str) -> str | None:
        """The compile error message, or None if `expression` compiles."""
        try:
            self._selector(expression)
        except CelCompileError as err:
            return err.message
        return None

    def estimated_cost(self, expression: str) -> int:
        """Worst-case cost of `expression` in CEL cost units (see `allot.cel.cost`)."""
        return self._selector(expression).cost

    # -- evaluating -----------------------------------------------------------------

    def evaluate(self, expression: str, device: DeviceInput) -> bool:
        """Whether `device` satisfies `expression`; cached per (expression, device.key).

        Raises `CelCompileError` for an expression that does not compile and
        `CelRuntimeError` when evaluation fails (upstream: a fatal allocation error).
        """
        result_key = (expression, device.key)
        cached = self._results.get(result_key)
        if cached is not None:
            _touch(self._results, result_key)
            self._result_cache_hits += 1
            if cached is True or cached is False:
                return cached
            raise CelRuntimeError(cached)
        selector = self._selector(expression)
        with self._lock:
            try:
                verdict = self._evaluate(selector, device)
            except CelRuntimeError as err:
                _store(self._results, result_key, err.message, self._result_cache_size)
                raise
            _store(self._results, result_key, verdict, self._result_cache_size)
        return verdict

    def _evaluate(self, selector: _Selector, device: DeviceInput) -> bool:
        values = self._values(device)
        if values.error is not None:
            raise CelRuntimeError(values.error.message)
        if selector.cost > self.cost_limit:
            raise CelRuntimeError(
                "operation cancelled: actual cost limit exceeded "
                f"(allot bounds the cost before evaluating: worst case {selector.cost} > {self.cost_limit})"
            )
        activation = self._activation(selector.lookups, values)
        self._evaluations += 1
        return self._engine.evaluate(selector.compiled, activation)

    def _values(self, device: DeviceInput) -> DeviceValues:
        values = self._inputs.get(device.key)
        if values is not None:
            _touch(self._inputs, device.key)
            return values
        values = device_values(device)
        self._inputs_built += 1
        _store(self._inputs, device.key, values, self._input_cache_size)
        return values

    def _activation(self, lookups: DomainLookups, values: DeviceValues) -> Any:
        # Unknown domains read as empty maps upstream; give the device an empty
        # map for each domain the expression looks up and the device lacks.
        missing_attributes = lookups.attributes.difference(values.attributes)
        missing_capacity = lookups.capacity.difference(values.capacity)
        if lookups.attributes_dynamic and values.driver not in values.attributes:
            missing_attributes |= {values.driver}
        if lookups.capacity_dynamic and values.driver not in values.capacity:
            missing_capacity |= {values.driver}
        missing = (
            (missing_attributes, missing_capacity)
            if missing_attributes or missing_capacity
            else _NOTHING_MISSING
        )
        # The engine binds an activation to the thread that made it (its
        # arena); another thread gets "No PyCelArena found" from it.
        slot = (_thread_serial(), missing)
        activation = values.activations.get(slot)
        if activation is None:
            data: dict[str, object] = {
                DRIVER: values.driver,
                ATTRIBUTES: values.attributes | {domain: {} for domain in missing_attributes},
                CAPACITY: values.capacity | {domain: {} for domain in missing_capacity},
            }
            if self.consumable_capacity:
                data[MULTI_ALLOC] = values.allow_multiple_allocations
            activation = self._engine.activation(data)
            values.activations[slot] = activation
        return activation

    # -- bookkeeping ----------------------------------------------------------------

    @property
    def stats(self) -> SelectorStats:
        return SelectorStats(
            compilations=self._compilations,
            compile_cache_hits=self._compile_cache_hits,
            evaluations=self._evaluations,
            result_cache_hits=self._result_cache_hits,
            inputs_built=self._inputs_built,
        )

    def clear_results(self) -> None:
        """Drop the cached verdicts only; programs and converted devices stay (for benchmarks)."""
        with self._lock:
            self._results.clear()

    def clear(self) -> None:
        """Drop every cached program, device and result, and zero the counters."""
        with self._lock:
            self._programs.clear()
            self._inputs.clear()
            self._results.clear()
            self._reset_counters()


_default: SelectorEnvironment | None = None
_default_lock = threading.Lock()


def default_environment() -> SelectorEnvironment:
    """The process-wide environment (consumable capacity enabled), created on first use."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = SelectorEnvironment(consumable_capacity=True)
    return _default

"""Caching: programs per expression, converted devices per key, verdicts per (expression, key)."""

from __future__ import annotations

import threading

import pytest

from allot.cel import (
    CelCompileError,
    CelRuntimeError,
    DeviceInput,
    SelectorEnvironment,
    SelectorStats,
    default_environment,
)
from allot.model.quantity import Quantity
from allot.model.resource import Device, DeviceAttribute, DeviceCapacity

DRIVER = "gpu.example.com"
CLASS_SELECTOR = f'device.driver == "{DRIVER}"'
REQUEST_SELECTOR = f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("40Gi"))'


def device(index: int, memory: str = "80Gi") -> DeviceInput:
    return DeviceInput(
        key=(DRIVER, "pool", "slice", 1, f"gpu-{index}"),
        driver=DRIVER,
        attributes={"index": DeviceAttribute(int_value=index)},
        capacity={"memory": DeviceCapacity(value=Quantity.parse(memory))},
    )


def test_second_evaluation_of_same_pair_is_a_cache_hit() -> None:
    env = SelectorEnvironment()
    assert env.evaluate(CLASS_SELECTOR, device(0)) is True
    assert env.stats == SelectorStats(compilations=1, evaluations=1, inputs_built=1)
    assert env.evaluate(CLASS_SELECTOR, device(0)) is True
    assert env.stats == SelectorStats(compilations=1, evaluations=1, inputs_built=1, result_cache_hits=1)


def test_other_device_key_evaluates_again() -> None:
    env = SelectorEnvironment()
    env.evaluate(CLASS_SELECTOR, device(0))
    env.evaluate(CLASS_SELECTOR, device(1))
    stats = env.stats
    assert (stats.evaluations, stats.inputs_built, stats.result_cache_hits) == (2, 2, 0)
    assert stats.compile_cache_hits == 1


def test_device_input_is_shared_between_expressions() -> None:
    env = SelectorEnvironment()
    env.evaluate(CLASS_SELECTOR, device(0))
    env.evaluate(REQUEST_SELECTOR, device(0))
    assert env.stats.inputs_built == 1
    assert env.stats.evaluations == 2


def test_key_is_trusted_to_identify_content() -> None:
    # The caller promises that equal keys mean equal content; allot does not look.
    env = SelectorEnvironment()
    small = DeviceInput(
        key="same",
        driver=DRIVER,
        attributes={},
        capacity={"memory": DeviceCapacity(value=Quantity.parse("1Gi"))},
    )
    large = DeviceInput(
        key="same",
        driver=DRIVER,
        attributes={},
        capacity={"memory": DeviceCapacity(value=Quantity.parse("80Gi"))},
    )
    assert env.evaluate(REQUEST_SELECTOR, small) is False
    assert env.evaluate(REQUEST_SELECTOR, large) is False


def test_scheduling_the_same_claim_shape_again_evaluates_no_cel() -> None:
    env = SelectorEnvironment()
    devices = [device(i, "80Gi" if i % 2 else "16Gi") for i in range(64)]

    def schedule() -> list[int]:
        return [
            d.attributes["index"].int_value or 0
            for d in devices
            if env.evaluate(CLASS_SELECTOR, d) and env.evaluate(REQUEST_SELECTOR, d)
        ]

    first = schedule()
    after_first = env.stats
    assert after_first.evaluations == 128
    assert after_first.inputs_built == 64
    second = schedule()
    after_second = env.stats
    assert second == first
    assert after_second.evaluations == after_first.evaluations
    assert after_second.inputs_built == after_first.inputs_built
    assert after_second.compilations == after_first.compilations == 2
    assert after_second.result_cache_hits == after_first.result_cache_hits + 128


def test_compile_is_cached() -> None:
    env = SelectorEnvironment()
    env.compile(CLASS_SELECTOR)
    env.compile(CLASS_SELECTOR)
    assert env.compile_error(CLASS_SELECTOR) is None
    assert env.stats.compilations == 1
    assert env.stats.compile_cache_hits == 2


def test_compile_failures_are_not_cached() -> None:
    env = SelectorEnvironment()
    for _ in range(2):
        with pytest.raises(CelCompileError, match="undeclared reference to 'noSuchVar'"):
            env.compile("noSuchVar")
    assert env.compile_error("noSuchVar") is not None
    assert env.stats.compilations == 3
    assert env.stats.compile_cache_hits == 0


def test_evaluating_a_bad_expression_raises_compile_error_every_time() -> None:
    env = SelectorEnvironment()
    for _ in range(2):
        with pytest.raises(CelCompileError):
            env.evaluate("noSuchVar", device(0))
    assert env.stats.evaluations == 0
    assert env.stats.compilations == 2


def test_runtime_errors_are_cached_per_pair() -> None:
    env = SelectorEnvironment()
    expression = f'device.attributes["{DRIVER}"].missing == 1'
    for _ in range(3):
        with pytest.raises(CelRuntimeError, match=r"^no such key: missing$"):
            env.evaluate(expression, device(0))
    assert env.stats.evaluations == 1
    assert env.stats.result_cache_hits == 2


def test_bad_device_is_converted_once() -> None:
    env = SelectorEnvironment()
    broken = DeviceInput(key="broken", driver=DRIVER, attributes={"x": DeviceAttribute()}, capacity={})
    for expression in ("true", "false", CLASS_SELECTOR):
        with pytest.raises(CelRuntimeError, match="unsupported attribute value"):
            env.evaluate(expression, broken)
    assert env.stats.inputs_built == 1
    assert env.stats.evaluations == 0


def test_result_cache_is_bounded() -> None:
    env = SelectorEnvironment(result_cache_size=2)
    for i in range(3):
        env.evaluate(CLASS_SELECTOR, device(i))
    env.evaluate(CLASS_SELECTOR, device(2))  # still cached
    assert env.stats.evaluations == 3
    env.evaluate(CLASS_SELECTOR, device(0))  # evicted, least recently used
    assert env.stats.evaluations == 4


def test_result_cache_keeps_recently_used_entries() -> None:
    env = SelectorEnvironment(result_cache_size=2)
    env.evaluate(CLASS_SELECTOR, device(0))
    env.evaluate(CLASS_SELECTOR, device(1))
    env.evaluate(CLASS_SELECTOR, device(0))  # touch: device 1 is now the oldest
    env.evaluate(CLASS_SELECTOR, device(2))  # evicts device 1
    env.evaluate(CLASS_SELECTOR, device(0))
    assert env.stats.evaluations == 3


def test_input_and_program_caches_are_bounded() -> None:
    env = SelectorEnvironment(input_cache_size=1, program_cache_size=1)
    env.evaluate(CLASS_SELECTOR, device(0))
    env.evaluate(REQUEST_SELECTOR, device(1))
    env.clear_results()
    env.evaluate(CLASS_SELECTOR, device(0))
    assert env.stats.inputs_built == 3
    assert env.stats.compilations == 3


def test_clear_drops_everything() -> None:
    env = SelectorEnvironment()
    env.evaluate(CLASS_SELECTOR, device(0))
    env.clear()
    assert env.stats == SelectorStats()
    env.evaluate(CLASS_SELECTOR, device(0))
    assert env.stats == SelectorStats(compilations=1, evaluations=1, inputs_built=1)


def test_clear_results_keeps_programs_and_inputs() -> None:
    env = SelectorEnvironment()
    env.evaluate(CLASS_SELECTOR, device(0))
    env.clear_results()
    env.evaluate(CLASS_SELECTOR, device(0))
    assert env.stats == SelectorStats(compilations=1, compile_cache_hits=1, evaluations=2, inputs_built=1)


def test_default_environment_is_shared_and_has_consumable_capacity() -> None:
    env = default_environment()
    assert env is default_environment()
    assert env.consumable_capacity is True
    assert env.compile_error("device.allowMultipleAllocations") is None


def test_from_device() -> None:
    model = Device(
        name="gpu-0",
        attributes={"index": DeviceAttribute(int_value=0)},
        allow_multiple_allocations=True,
    )
    made = DeviceInput.from_device(("k", 1), DRIVER, model)
    assert made.key == ("k", 1)
    assert made.allow_multiple_allocations is True
    assert SelectorEnvironment().evaluate(f'device.attributes["{DRIVER}"].index == 0', made) is True


def test_concurrent_evaluations_agree() -> None:
    env = SelectorEnvironment(result_cache_size=16)
    devices = [device(i, "80Gi" if i % 3 else "8Gi") for i in range(48)]
    expected = [i % 3 != 0 for i in range(48)]
    failures: list[str] = []

    def worker() -> None:
        for _ in range(5):
            got = [env.evaluate(REQUEST_SELECTOR, d) for d in devices]
            if got != expected:
                failures.append("mismatch")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures

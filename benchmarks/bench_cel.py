"""Device-selector benchmark: compile, first evaluation, reused-input and cached evaluation.

Run `python benchmarks/bench_cel.py` (with `src` on the path or allot
installed). It prints one line per figure, e.g.

    allot compile  simple-driver  84.1 us

for allot's `SelectorEnvironment` (cel-expr-python underneath, caches and
all), for cel-expr-python alone (`cel-py`: the engine call without allot's
caches, analyses and error handling; its first evaluation starts from
already converted values), and, when it is installed, for
`common-expression-language` (`cel-rs`) driven the same way (no type checking,
no unknown-domain or cost handling, and `cel.bind` is not supported; its
first evaluation includes converting the device). Every figure is the median
of several rounds, because the machines this runs on are noisy; compare
figures of one run, not across runs.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from allot.cel import DeviceInput, SelectorEnvironment, quantity_lib, semver_lib
from allot.cel.device_input import device_values
from allot.cel.functions import Kind, Overload
from allot.model.quantity import Quantity
from allot.model.resource import DeviceAttribute, DeviceCapacity

common_cel: Any
try:
    import cel as common_cel
except ImportError:  # the comparison engine is optional
    common_cel = None

DRIVER = "gpu.nvidia.com"

SELECTORS: Mapping[str, str] = {
    "simple-driver": f'device.driver == "{DRIVER}"',
    "attribute-eq": f'device.attributes["{DRIVER}"].productName == "NVIDIA H100 80GB HBM3"',
    "dra-md-6": (
        f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].productName == "NVIDIA H100 80GB HBM3" '
        f'&& device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
    ),
    "quantity": f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("40Gi"))',
    "semver": f'device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("550.0.0"))',
    "bind-strings": (
        f'cel.bind(gpu, device.attributes["{DRIVER}"], '
        'gpu.productName.lowerAscii().contains("h100") && gpu.architecture.startsWith("Hop"))'
    ),
}


def make_device(index: int) -> DeviceInput:
    """An H100 as NVIDIA's DRA driver publishes it: 8 attributes in 2 domains, 2 capacities."""
    attributes = {
        "productName": DeviceAttribute(string_value="NVIDIA H100 80GB HBM3"),
        "architecture": DeviceAttribute(string_value="Hopper"),
        "brand": DeviceAttribute(string_value="Nvidia"),
        "cudaComputeCapability": DeviceAttribute(version_value="9.0.0"),
        "driverVersion": DeviceAttribute(version_value="560.35.3"),
        "index": DeviceAttribute(int_value=index % 8),
        "uuid": DeviceAttribute(string_value=f"GPU-{index:08x}-1111-2222-3333-444455556666"),
        "resource.kubernetes.io/pcieRoot": DeviceAttribute(string_value=f"pci0000:{index % 4:02x}"),
    }
    capacity = {
        "memory": DeviceCapacity(value=Quantity.parse("80Gi")),
        "multiprocessors": DeviceCapacity(value=Quantity.parse("132")),
    }
    key = (DRIVER, f"node-{index // 8}", f"node-{index // 8}-gpus", 1, f"gpu-{index % 8}")
    return DeviceInput(key=key, driver=DRIVER, attributes=attributes, capacity=capacity)


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def report(engine: str, figure: str, selector: str, micros: float) -> None:
    print(f"{engine:<6} {figure:<14} {selector:<14} {micros:8.1f} us")


def bench_allot(devices: list[DeviceInput], rounds: int) -> None:
    for name, expression in SELECTORS.items():
        env = SelectorEnvironment()
        compile_samples = []
        for _ in range(rounds * 5):
            env.clear()
            start = time.perf_counter()
            env.compile(expression)
            compile_samples.append(time.perf_counter() - start)
        report("allot", "compile", name, median_us(compile_samples))

        first, reused, cached = [], [], []
        for _ in range(rounds):
            env.clear()
            env.compile(expression)
            start = time.perf_counter()
            for device in devices:
                env.evaluate(expression, device)
            first.append((time.perf_counter() - start) / len(devices))
            env.clear_results()
            start = time.perf_counter()
            for device in devices:
                env.evaluate(expression, device)
            reused.append((time.perf_counter() - start) / len(devices))
            start = time.perf_counter()
            for device in devices:
                env.evaluate(expression, device)
            cached.append((time.perf_counter() - start) / len(devices))
        report("allot", "first-eval", name, median_us(first))
        report("allot", "reused-input", name, median_us(reused))
        report("allot", "cached", name, median_us(cached))
        bench_engine_only(env, expression, name, devices, rounds)


def bench_engine_only(
    env: SelectorEnvironment, expression: str, name: str, devices: list[DeviceInput], rounds: int
) -> None:
    """cel-expr-python alone (compile with type check; evaluation on a prebuilt activation).

    These are the figures to compare with common-expression-language's: no
    caches, analyses or error translation around the engine call.
    """
    engine = env._engine  # the benchmark may look inside
    raw_env = engine._env
    compile_samples = []
    for _ in range(rounds * 5):
        start = time.perf_counter()
        raw_env.compile(expression)
        compile_samples.append(time.perf_counter() - start)
    report("cel-py", "compile", name, median_us(compile_samples))
    program = raw_env.compile(expression)
    values = [device_values(device) for device in devices]
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        activations = [
            engine.activation(
                {
                    "device.driver": v.driver,
                    "device.attributes": v.attributes,
                    "device.capacity": v.capacity,
                    "device.allowMultipleAllocations": v.allow_multiple_allocations,
                }
            )
            for v in values
        ]
        for activation in activations:
            program.eval(activation)
        samples.append((time.perf_counter() - start) / len(devices))
    report("cel-py", "first-eval", name, median_us(samples))
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for activation in activations:
            program.eval(activation)
        samples.append((time.perf_counter() - start) / len(devices))
    report("cel-py", "reused-input", name, median_us(samples))


_CARRIER_TYPES: Mapping[Kind, tuple[type, ...]] = {
    Kind.BOOL: (bool,),
    Kind.INT: (int,),
    Kind.DOUBLE: (float,),
    Kind.STRING: (str,),
    Kind.QUANTITY: (bytes, bytearray),
    Kind.SEMVER: (list,),
}


def _dispatcher(overloads: list[Overload]) -> Callable[..., Any]:
    # common-expression-language has no overloads: pick one by the argument types.
    def call(*args: Any) -> Any:
        for overload in overloads:
            if len(overload.params) == len(args) and all(
                isinstance(arg, _CARRIER_TYPES[kind]) and not (kind is Kind.INT and isinstance(arg, bool))
                for kind, arg in zip(overload.params, args, strict=True)
            ):
                result = overload.impl(*args)
                return bytes(result) if isinstance(result, bytearray) else result
        raise ValueError("no such overload")

    return call


def _common_functions() -> dict[str, Callable[..., Any]]:
    # The same Python implementations allot registers; member calls arrive as f(receiver, arg).
    by_name: dict[str, list[Overload]] = {}
    for overload in (*quantity_lib.OVERLOADS, *semver_lib.OVERLOADS):
        by_name.setdefault(overload.name, []).append(overload)
    return {name: _dispatcher(overloads) for name, overloads in by_name.items()}


def _common_context(device: DeviceInput, functions: dict[str, Callable[..., Any]]) -> Any:
    values = device_values(device)
    variables = {
        "device": {
            "driver": values.driver,
            "attributes": values.attributes,
            "capacity": {d: {k: bytes(v) for k, v in ids.items()} for d, ids in values.capacity.items()},
            "allowMultipleAllocations": values.allow_multiple_allocations,
        }
    }
    return common_cel.Context(variables=variables, functions=functions)


def bench_common(devices: list[DeviceInput], rounds: int) -> None:
    functions = _common_functions()
    for name, expression in SELECTORS.items():
        try:
            program = common_cel.compile(expression)
            program.execute(_common_context(devices[0], functions))
        except Exception as err:  # report what the engine cannot do
            print(
                f"cel-rs {'unsupported':<14} {name:<14} {type(err).__name__}: {str(err).splitlines()[0][:60]}"
            )
            continue
        compile_samples = []
        for _ in range(rounds * 5):
            start = time.perf_counter()
            common_cel.compile(expression)
            compile_samples.append(time.perf_counter() - start)
        report("cel-rs", "compile", name, median_us(compile_samples))
        first, reused = [], []
        for _ in range(rounds):
            contexts = []
            start = time.perf_counter()
            for device in devices:
                context = _common_context(device, functions)
                program.execute(context)
                contexts.append(context)
            first.append((time.perf_counter() - start) / len(devices))
            start = time.perf_counter()
            for context in contexts:
                program.execute(context)
            reused.append((time.perf_counter() - start) / len(devices))
        report("cel-rs", "first-eval", name, median_us(first))
        report("cel-rs", "reused-input", name, median_us(reused))


def bench_sweep(devices: list[DeviceInput]) -> None:
    """The scheduler's shape: every device against a class and a request selector, twice."""
    env = SelectorEnvironment()
    pair = (SELECTORS["simple-driver"], SELECTORS["dra-md-6"])
    for label in ("first-pass", "second-pass"):
        start = time.perf_counter()
        for device in devices:
            for expression in pair:
                env.evaluate(expression, device)
        elapsed = time.perf_counter() - start
        stats = env.stats
        print(
            f"allot  sweep-{label:<8} {len(devices)}x2      {elapsed * 1e3:8.1f} ms "
            f"(evaluations={stats.evaluations} hits={stats.result_cache_hits} inputs={stats.inputs_built})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=400, help="devices per round (default 400)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per figure (default 7)")
    args = parser.parse_args()
    devices = [make_device(i) for i in range(args.devices)]
    print(
        f"# python {platform.python_version()} on {platform.machine()}, {args.devices} devices, medians of {args.rounds}"
    )
    bench_allot(devices, args.rounds)
    if common_cel is not None:
        bench_common(devices, args.rounds)
    else:
        print("# common-expression-language is not installed; skipped")
    bench_sweep([make_device(i) for i in range(4000)])


if __name__ == "__main__":
    main()

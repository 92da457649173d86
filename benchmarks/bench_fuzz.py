"""The fuzz harness's cost and what it sees: cases per second and peak memory, per input kind.

Draws N cases of every input kind (tests/fuzz/inputs.py, derandomised) and runs each through the
real `allot` entry point in the harness's forked, memory-capped worker. Prints one line per kind:
cases, exit codes seen, wall time per case (mean and slowest), the largest peak RSS of a case, and
how many broke the harness's invariant (which must be 0).

Run: PYTHONPATH=src:tests python benchmarks/bench_fuzz.py [--cases N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz.inputs import (
    config_cases,
    manifest_cases,
    option_cases,
    scenario_cases,
    trace_cases,
    valid_cases,
)
from fuzz.runner import Case, Worker

KINDS: dict[str, Any] = {
    "manifests": manifest_cases(),
    "scenario files": scenario_cases(),
    "traces": trace_cases(),
    "scheduler configurations": config_cases(),
    "command-line options": option_cases(),
}


def draw(strategy: st.SearchStrategy[Case], count: int) -> list[Case]:
    found: list[Case] = []

    @settings(
        max_examples=count,
        database=None,
        derandomize=True,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(case: Case) -> None:
        found.append(case)

    collect()
    return found


def measure(worker: Worker, name: str, cases: list[Case]) -> None:
    codes: Counter[str] = Counter()
    times: list[float] = []
    peak = 0
    broken = 0
    for case in cases:
        started = time.perf_counter()
        outcome = worker.run(case)
        times.append(time.perf_counter() - started)
        codes[str(outcome.code if outcome.code is not None else f"signal {outcome.signal}")] += 1
        peak = max(peak, outcome.max_rss_kib)
        broken += bool(outcome.problems())
    shown = ", ".join(f"{code}: {n}" for code, n in sorted(codes.items()))
    print(
        f"{name:<26} {len(cases):>4} cases  exit {{{shown}}}  "
        f"{sum(times) / len(times):.2f} s/case (slowest {max(times):.2f} s)  "
        f"peak RSS {peak / 1024:.0f} MiB  invariant broken: {broken}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20, help="cases per input kind")
    options = parser.parse_args()
    worker = Worker()
    try:
        measure(worker, "unmutated inputs", valid_cases())
        for name, strategy in KINDS.items():
            measure(worker, name, draw(strategy, options.cases))
    finally:
        worker.close()


if __name__ == "__main__":
    main()

"""Fair and full: the quality goals of allot's `fair` policy, measured, one table.

For each workload, `allot simulate -o json` runs once per policy in a fresh
process, on the built-in scenario's cluster (20 DGX H100: 16 with whole
GPUs, 2 with fractional ones, 2 in MIG mode, and 4 CPU nodes):

* the built-in scenario (six hours, three teams, one floods the queue);
* a Philly-style multi-tenant trace (`benchmarks/philly_like.py`, seed 14,
  its first `--philly-jobs` jobs; 15 virtual clusters, Zipf job shares,
  1-32 GPUs per job);
* the synthetic trace at load 1.2 (`--synthetic-jobs` jobs).

Then the openb fragmentation experiment for FGDPlus (default trace, seed
42): unallocated GPU % at 100 % arrived load, which must not get worse.

Goals for `fair` (docs/placement.md, "Fair and full: measured"): idle while work
waited at most 5 %, Jain's index at least 0.95, every tenant's fair-share
ratio at least 0.9, jobs completed at least fifo-priority's. Each goal is
judged on both measures the simulator prints: over the whole cluster and
the one pool of GPUs, and over the GPUs the waiting work could use
(docs/simulator.md explains why both exist); a line says which were met.

Run: PYTHONPATH=src python benchmarks/bench_quality.py [--only builtin,philly,synthetic,openb]
     [--philly-jobs 1500] [--synthetic-jobs 1000] [--timeout 3600]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from philly_like import generate, write

SIMULATE = "from allot.cli.simulate_cmd import simulate; simulate()"
POLICIES = ("fifo-priority", "fair")
IDLE_GOAL = 5.0
JAIN_GOAL = 0.95
RATIO_GOAL = 0.9


def simulate(args: list[str], policy: str, timeout: float) -> tuple[dict[str, Any] | None, float]:
    command = [
        sys.executable,
        "-c",
        SIMULATE,
        *args,
        "--compare",
        policy,
        "-j",
        "1",
        "-q",
        "--no-report",
        "-o",
        "json",
    ]
    began = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - began
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        print(f"  {policy}: failed ({done.returncode}): {done.stderr.decode()[-300:]}")
        return None, elapsed
    summary: dict[str, Any] = json.loads(done.stdout)["policies"][0]
    return summary, elapsed


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:5.1f} %"


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:4.2f}"


def mark(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(label: str, runs: dict[str, tuple[dict[str, Any] | None, float]]) -> None:
    print(f"\n{label}")
    print(
        f"  {'policy':<14} {'wall':>8} {'completed':>11} {'idle waited':>12} {'usable idle':>12} "
        f"{'Jain':>5} {'Jain usable':>11} {'min ratio':>9} {'min usable':>10}  tenants (ratio / usable)"
    )
    for policy, (s, wall) in runs.items():
        if s is None:
            print(f"  {policy:<14} {wall:7.0f}s  did not finish")
            continue
        tenants = ", ".join(
            f"{t['name']} {ratio(t['fairShareRatio'])}/{ratio(t['usableFairShareRatio'])}"
            for t in s["tenants"]
        )
        print(
            f"  {policy:<14} {wall:7.0f}s {s['completed']:>5,}/{s['jobs']:<5,} {pct(s['idleWhileWaitingPct']):>12} "
            f"{pct(s['idleUsableWhileWaitingPct']):>12} {ratio(s['jain']):>5} {ratio(s['usableJain']):>11} "
            f"{ratio(s['minFairShareRatio']):>9} {ratio(s['minUsableFairShareRatio']):>10}  {tenants}"
        )
    fair, baseline = runs.get("fair", (None, 0))[0], runs.get("fifo-priority", (None, 0))[0]
    if fair is None:
        return
    idle, usable = fair["idleWhileWaitingPct"] or 0.0, fair["idleUsableWhileWaitingPct"] or 0.0
    print(
        f"  goals (fair): idle <= {IDLE_GOAL:g} %: cluster {mark(idle <= IDLE_GOAL)}, usable {mark(usable <= IDLE_GOAL)}; "
        f"Jain >= {JAIN_GOAL}: pool {mark((fair['jain'] or 0) >= JAIN_GOAL)}, "
        f"usable {mark((fair['usableJain'] or 0) >= JAIN_GOAL)}; "
        f"every ratio >= {RATIO_GOAL}: pool {mark((fair['minFairShareRatio'] or 0) >= RATIO_GOAL)}, "
        f"usable {mark((fair['minUsableFairShareRatio'] or 0) >= RATIO_GOAL)}"
        + (
            f"; completed >= fifo-priority's ({baseline['completed']:,}): {mark(fair['completed'] >= baseline['completed'])}"
            if baseline is not None
            else ""
        )
    )
    print(
        f"  fair: {fair['preemptions']:,} preemptions (moves included), GPU-hours lost to misalignment "
        f"{fair['lostMisalignedGpuHours']:.1f}, to time-slicing {fair['lostTimeSlicingGpuHours']:.1f}"
    )


def openb() -> None:
    from allot.sim.experiments.fragmentation import PAPER, RunSpec, run

    began = time.perf_counter()
    result = run(RunSpec("default", "FGDPlus", 42))
    paper = PAPER.get("default", {}).get("FGDPlus")
    reference = f" (paper {paper[0]:.2f} %)" if paper else ""
    print(
        f"\nopenb default trace, FGDPlus, seed 42: unallocated at 100 % arrived "
        f"{result.unallocated_at(100):.2f} %{reference}  ({time.perf_counter() - began:.0f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="builtin,philly,synthetic,openb")
    parser.add_argument("--philly-jobs", type=int, default=1500)
    parser.add_argument("--synthetic-jobs", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    args = parser.parse_args()
    only = set(args.only.split(","))
    workloads: list[tuple[str, list[str]]] = []
    with tempfile.TemporaryDirectory() as folder:
        if "builtin" in only:
            workloads.append(("built-in scenario (6 h)", []))
        if "philly" in only:
            trace = Path(folder) / "philly-like.csv"
            write(trace, generate())
            workloads.append(
                (
                    f"Philly-style trace, first {args.philly_jobs:,} jobs, 15 virtual clusters",
                    ["--trace", f"philly:{trace},limit={args.philly_jobs}"],
                )
            )
        if "synthetic" in only:
            workloads.append(
                (
                    f"synthetic trace, {args.synthetic_jobs:,} jobs at load 1.2",
                    ["--trace", f"synthetic:jobs={args.synthetic_jobs},load=1.2"],
                )
            )
        for label, extra in workloads:
            report(label, {policy: simulate(extra, policy, args.timeout) for policy in POLICIES})
        if "openb" in only:
            openb()


if __name__ == "__main__":
    main()

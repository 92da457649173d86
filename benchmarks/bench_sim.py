"""Simulator throughput: the event core, a whole simulation, and the built-in scenario.

Prints one figure per line:

* the event heap alone (push and batch-pop, no engine): events/s;
* a simulation on device-plugin GPUs (2,000 jobs of two tenants, fair
  sharing): simulated events/s, engine cycles/s;
* `allot simulate` on the built-in scenario (both policies and the report),
  in a fresh process: wall time and peak RSS.

Run: PYTHONPATH=src python benchmarks/bench_sim.py [--skip-default]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time

from allot.sim.clock import EventQueue
from allot.sim.events import EventKind
from allot.sim.scenario.build import prepare
from allot.sim.scenario.parse import parse_scenario
from allot.sim.simulator import SimOptions, Simulation

WORKLOAD = """
name: bench
seed: 1
cluster:
  nodes:
  - {count: 16, cpu: 128, memory: 1Ti, gpus: 8}
tenants:
- {name: a}
- {name: b, weight: 2}
jobs:
- name: train
  tenant: a
  count: 1000
  arrival: {poisson: {rate: 120/h}}
  pods: {choice: {values: [1, 2], weights: [80, 20]}}
  duration: {lognormal: {median: 40m, sigma: 0.7}}
  resources: {cpu: 8, memory: 64Gi, nvidia.com/gpu: 4}
- name: serve
  tenant: b
  count: 1000
  arrival: {poisson: {rate: 150/h}}
  duration: {lognormal: {median: 30m, sigma: 0.5}}
  resources: {cpu: 2, memory: 16Gi, nvidia.com/gpu: 1}
"""


def event_core(n: int = 400_000) -> None:
    queue = EventQueue()
    began = time.perf_counter()
    for i in range(n):
        queue.call_at(float(i % 50_000), EventKind(i % 4), "x")
    popped = 0
    while len(queue):
        popped += len(queue.pop_batch())
    elapsed = time.perf_counter() - began
    print(
        f"event heap          {popped / elapsed:12,.0f} events/s   ({popped:,} events pushed and popped in {elapsed:.2f} s)"
    )


def simulation(policy: str) -> None:
    prepared = prepare(parse_scenario(WORKLOAD, "bench.yaml"), policies=[policy])
    sim = Simulation(
        manifests=prepared.manifests,
        workload=prepared.workload,
        policy=prepared.policies[0],
        options=SimOptions(),
    )
    began = time.perf_counter()
    result = sim.run()
    elapsed = time.perf_counter() - began
    print(
        f"simulation {policy:<13} {result.events / elapsed:8,.0f} events/s   {result.cycles / elapsed:6,.0f} cycles/s"
        f"   ({len(result.jobs):,} jobs, {result.events:,} events, {result.cycles:,} cycles in {elapsed:.1f} s)"
    )


def default_scenario() -> None:
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            "-c",
            "from allot.cli.simulate_cmd import simulate; simulate()",
            "-q",
            "--report-dir",
            folder,
        ]
        began = time.perf_counter()
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - began
    if completed.returncode != 0:
        print(f"default scenario    failed: {completed.stderr[-500:]}")
        return
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"default scenario    {elapsed:12.1f} s wall (both policies and the report), peak RSS {peak:,.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-default", action="store_true", help="do not run the built-in scenario")
    args = parser.parse_args()
    if not args.skip_default:
        default_scenario()  # first, so the child's peak RSS is its own
    event_core()
    for policy in ("fifo-priority", "fair"):
        simulation(policy)


if __name__ == "__main__":
    main()

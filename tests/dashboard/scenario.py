"""A small simulation for the dashboard's tests: whole, shared and MIG GPUs, Kueue queues, contention.

Three DGX H100 (one of whole GPUs paired with NICs, one of fractional GPUs, one cut into MIG
slices) and a CPU node, two teams in a cohort; one team asks for more whole GPUs than its share
and the other, asking later, takes its share back (preemption).
`record(directory)` runs it under `fair` with the dashboard's `FrameRecorder` attached and returns
the run's `SimResult` (the recorder's own samples, to check the frames against).
"""

from __future__ import annotations

from pathlib import Path

from allot.dashboard.frames import FrameRecorder
from allot.sim.records import SimResult
from allot.sim.scenario.build import prepare
from allot.sim.scenario.parse import parse_scenario
from allot.sim.simulator import SimOptions, Simulation

SCENARIO = """
name: dashboard-test
seed: 11
horizon: 90m
cluster:
  presets:
  - {preset: dgx-h100, nodes: 1, namePrefix: train}
  - {preset: dgx-h100, nodes: 1, namePrefix: infer, gpuMode: shared}
  - {preset: dgx-h100, nodes: 1, namePrefix: mig, gpuMode: mig}
  nodes:
  - {count: 1, cpu: 32, memory: 128Gi, namePrefix: cpu}
kueue:
  cohort: lab
tenants:
- {name: alpha, weight: 1, quota: {gpus: 4}}
- {name: beta, weight: 1, quota: {gpus: 4}}
jobs:
- name: train
  tenant: alpha
  arrival: {poisson: {rate: 12/h}}
  pods: {choice: {values: [1, 2], weights: [60, 40]}}
  duration: {lognormal: {median: 30m, sigma: 0.5, max: 2h}}
  resources: {cpu: 16, memory: 64Gi}
  devices: {gpus: 4, nics: 4, alignment: preferred}
- name: serve
  tenant: beta
  arrival: {poisson: {rate: 20/h}}
  duration: {lognormal: {median: 25m, sigma: 0.5}}
  resources: {cpu: 2, memory: 8Gi}
  devices: {gpuShare: {cores: 30, memory: 20Gi}}
- name: tune
  tenant: beta
  arrival: {times: [40m, 45m, 50m]}
  duration: 30m
  resources: {cpu: 16, memory: 64Gi}
  devices: {gpus: 4}
- name: eval
  tenant: beta
  arrival: {poisson: {rate: 16/h}}
  duration: {lognormal: {median: 20m, sigma: 0.6}}
  resources: {cpu: 2, memory: 8Gi}
  devices: {mig: 1g.10gb}
"""

FRAMES = 24


def record(directory: Path, *, frames: int = FRAMES) -> SimResult:
    prepared = prepare(parse_scenario(SCENARIO, "dashboard-test.yaml"), policies=["fair"])
    simulation = Simulation(
        manifests=prepared.manifests,
        workload=prepared.workload,
        policy=prepared.policies[0],
        seed=prepared.seed,
        scenario=prepared.scenario.name,
        options=SimOptions(horizon=prepared.horizon, check_invariants=False),
    )
    assert prepared.horizon is not None
    recorder = FrameRecorder(simulation, directory, every=prepared.horizon / frames, title="dashboard-test")
    result = simulation.run()
    recorder.finish(result.end)
    return result

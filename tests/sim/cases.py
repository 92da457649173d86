"""Small scenarios for simulator tests, as scenario-file text, and a helper to run them."""

from __future__ import annotations

from allot.sim.metrics import Summary, summarize
from allot.sim.records import SimResult
from allot.sim.scenario.build import Prepared, prepare
from allot.sim.scenario.parse import parse_scenario
from allot.sim.simulator import SimOptions, Simulation
from allot.sim.topology import default_model

# Two tenants on 2 nodes x 4 device-plugin GPUs: a queue that can fill the cluster.
SMALL = """
name: small
seed: 3
horizon: 2h
cluster:
  nodes:
  - {count: 2, cpu: 32, memory: 128Gi, gpus: 4, namePrefix: gpu}
  - {count: 1, cpu: 16, memory: 64Gi, namePrefix: cpu}
tenants:
- {name: alpha}
- {name: beta, weight: 2}
jobs:
- name: train
  tenant: alpha
  arrival: {poisson: {rate: 12/h}}
  pods: {choice: {values: [1, 2], weights: [70, 30]}}
  duration: {uniform: [5m, 20m]}
  resources: {cpu: 2, memory: 8Gi, nvidia.com/gpu: 1}
- name: infer
  tenant: beta
  arrival: {poisson: {rate: 20/h}}
  duration: {lognormal: {median: 8m, sigma: 0.5}}
  resources: {cpu: 1, memory: 4Gi, nvidia.com/gpu: 1}
- name: prep
  tenant: beta
  arrival: {times: [0, 10m, 20m]}
  duration: 15m
  resources: {cpu: 4, memory: 8Gi}
"""


def prepared(text: str, *, seed: int | None = None, policies: list[str] | None = None) -> Prepared:
    return prepare(parse_scenario(text, "test.yaml"), seed=seed, policies=policies)


def run(
    text: str,
    policy: str = "fair",
    *,
    seed: int | None = None,
    check: bool = True,
    checkpoint: float | None = None,
) -> SimResult:
    p = prepared(text, seed=seed, policies=[policy])
    options = SimOptions(
        horizon=p.horizon,
        checkpoint=p.scenario.checkpoint if checkpoint is None else checkpoint,
        check_invariants=check,
    )
    return Simulation(
        manifests=p.manifests,
        workload=p.workload,
        policy=p.policies[0],
        seed=p.seed,
        scenario=p.scenario.name,
        options=options,
        node_events=p.scenario.node_events,
        throughput=default_model(p.scenario.throughput),
    ).run()


def run_summary(text: str, policy: str = "fair", **kwargs: object) -> Summary:
    return summarize(run(text, policy, **kwargs))  # type: ignore[arg-type]

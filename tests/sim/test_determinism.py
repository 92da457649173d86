"""Same inputs, same seed: the same trace and the same numbers; another seed, another workload."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from allot.sim.metrics import summarize
from fuzzing import examples

from .cases import SMALL, prepared, run


def _fingerprint(text: str, policy: str, seed: int) -> tuple[object, ...]:
    result = run(text, policy, seed=seed, check=False)
    trace = tuple((e.time, e.kind.value, e.subject, e.detail) for e in result.trace)
    return trace, summarize(result).to_dict()["wait"], tuple(result.samples.allocated)


def test_same_seed_same_trace_for_every_policy() -> None:
    for policy in ("fifo-priority", "fair"):
        first = _fingerprint(SMALL, policy, 11)
        assert first == _fingerprint(SMALL, policy, 11)
        assert first[0], "the trace records what happened"


def test_another_seed_draws_another_workload() -> None:
    a = [(j.key, j.arrival) for j in prepared(SMALL, seed=1).workload.jobs]
    b = [(j.key, j.arrival) for j in prepared(SMALL, seed=2).workload.jobs]
    assert a != b


def test_adding_a_template_keeps_the_other_templates_jobs() -> None:
    extra = (
        SMALL
        + """
- name: extra
  tenant: alpha
  arrival: {poisson: {rate: 30/h}}
  duration: 5m
  resources: {cpu: 1, memory: 1Gi}
"""
    )
    before = {j.key: (j.arrival, j.duration, j.pods) for j in prepared(SMALL).workload.jobs}
    after = {j.key: (j.arrival, j.duration, j.pods) for j in prepared(extra).workload.jobs}
    assert {k: v for k, v in after.items() if k in before} == before


SCENARIO = """
name: prop
horizon: 90m
cluster:
  nodes:
  - {{count: {nodes}, cpu: 16, memory: 64Gi, gpus: {gpus}}}
tenants:
- {{name: a}}
- {{name: b}}
priorityClasses:
- {{name: high, value: 100}}
jobs:
- name: big
  tenant: a
  priority: high
  arrival: {{poisson: {{rate: {rate_a}/h}}}}
  pods: {{choice: [1, 2, 3]}}
  duration: {{uniform: [2m, 30m]}}
  resources: {{cpu: 1, memory: 1Gi, nvidia.com/gpu: 1}}
- name: small
  tenant: b
  arrival: {{poisson: {{rate: {rate_b}/h}}}}
  duration: {{exponential: {{mean: 10m}}}}
  resources: {{cpu: 1, memory: 1Gi, nvidia.com/gpu: 1}}
"""


@settings(max_examples=examples(8))
@given(
    seed=st.integers(0, 2**31),
    nodes=st.integers(1, 3),
    gpus=st.integers(1, 4),
    rate_a=st.integers(1, 30),
    rate_b=st.integers(1, 30),
    policy=st.sampled_from(["fifo-priority", "fair"]),
)
def test_runs_are_reproducible(
    seed: int, nodes: int, gpus: int, rate_a: int, rate_b: int, policy: str
) -> None:
    text = SCENARIO.format(nodes=nodes, gpus=gpus, rate_a=rate_a, rate_b=rate_b)
    assert _fingerprint(text, policy, seed) == _fingerprint(text, policy, seed)

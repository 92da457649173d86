"""Every number in a scenario or trace has an upper bound checked at load time, and a run bigger than
its limits is refused before it starts: within the memory ceiling, with the file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from allot.model.errors import ManifestErrors
from allot.sim.limits import RunLimits
from allot.sim.scenario.build import prepare
from allot.sim.scenario.parse import parse_scenario
from allot.sim.scenario.schema import TraceSpec
from fuzzing import memory_ceiling

BASE = """name: bounds
horizon: 2h
cluster:
  nodes:
  - {count: 2, cpu: 32, memory: 128Gi, gpus: 4}
tenants: [{name: a}]
jobs:
- name: j
  tenant: a
  arrival: {poisson: {rate: 12/h}}
  duration: 10m
  resources: {cpu: 1, memory: 1Gi}
"""


def _errors(text: str, *, trace: TraceSpec | None = None, limits: RunLimits | None = None) -> list[str]:
    with pytest.raises(ManifestErrors) as caught, memory_ceiling():
        scenario = parse_scenario(text, "s.yaml", limits=limits or RunLimits())
        prepare(scenario, trace=trace, policies=["fair"], limits=limits or RunLimits())
    return [str(e) for e in caught.value.errors]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "arrival: {poisson: {rate: 12/h}}",
            "count: 10000000\n  arrival: {poisson: {rate: 1000/s}}",
            "s.yaml:10: jobs[0].count: the run would have 10,000,000 jobs, more than the limit of 100,000 "
            "(raise it with --max-jobs)",
        ),
        (
            "rate: 12/h",
            "rate: 1180591620717411303424/s",
            "s.yaml:10: jobs[0].arrival.poisson.rate: expected at most 1e+06 per second",
        ),
        (
            "rate: 12/h",
            "rate: 1000/s",
            "s.yaml:10: jobs[0].arrival: the run would have more jobs than the limit of 100,000",
        ),
        ("horizon: 2h", "horizon: inf", "s.yaml:2: horizon: expected a positive duration"),
        ("horizon: 2h", "horizon: .nan", "s.yaml:2: horizon: expected a positive duration"),
        ("horizon: 2h", "horizon: 11000d", "s.yaml:2: horizon: expected at most 3.1536e+08 seconds"),
        (
            "duration: 10m",
            "duration: {lognormal: {median: 10m, sigma: 1000000.0}}",
            "sigma: expected a number from 0 to 10",
        ),
        (
            "duration: 10m",
            "duration: {exponential: {mean: 1e300}}",
            "mean: expected a value from 0.001 to 3.1536e+08",
        ),
        (
            "duration: 10m",
            "duration: 10m\n  pods: 1000000000",
            "jobs[0].pods: expected a value from 1 to 10000",
        ),
        ("{count: 2,", "{count: 100000000,", "cluster.nodes[0].count: the run would have 100,000,000 nodes"),
        (
            "gpus: 4}",
            "gpus: 4, pods: 99999999999}",
            "cluster.nodes[0].pods: expected an integer from 1 to 1,000,000",
        ),
        (
            "tenants: [{name: a}]",
            "tenants: [{name: a, weight: .inf}]",
            "tenants[0].weight: expected a number",
        ),
        ("name: bounds", "name: bounds\nseed: 36893488147419103232", "seed: expected an integer from 0 to"),
        (
            "arrival: {poisson: {rate: 12/h}}",
            "arrival: {bursts: [{at: 0, count: 99999999999}]}",
            "bursts[0].count: expected an integer from 1 to 10,000,000",
        ),
    ],
)
def test_numbers_past_their_bounds_are_located_errors(old: str, new: str, expected: str) -> None:
    assert old in BASE
    messages = _errors(BASE.replace(old, new))
    assert any(expected in m for m in messages), messages


def test_preset_nodes_past_the_limit_are_refused_before_they_are_made() -> None:
    text = BASE.replace(
        "  nodes:\n  - {count: 2, cpu: 32, memory: 128Gi, gpus: 4}\n",
        "  presets: [{preset: dgx-h100, nodes: 50000000}]\n",
    )
    (message,) = _errors(text)
    assert "s.yaml" in message and "presets" in message and "50,000,000 nodes" in message


def test_the_limits_are_the_users_to_raise() -> None:
    text = BASE.replace("arrival: {poisson: {rate: 12/h}}", "count: 30\n  arrival: {poisson: {rate: 1/s}}")
    messages = _errors(text, limits=RunLimits(jobs=20))
    assert any("30 jobs, more than the limit of 20" in m for m in messages)
    prepared = prepare(parse_scenario(text, "s.yaml"), policies=["fair"], limits=RunLimits(jobs=30))
    assert len(prepared.workload.jobs) == 30
    pods = _errors(text, limits=RunLimits(pods=10))
    assert any("jobs[0].pods: the run would have" in m and "--max-pods" in m for m in pods)


@pytest.mark.parametrize(
    ("kind", "options", "expected"),
    [
        ("synthetic", {"jobs": 200_000}, "the run would have 200,000 jobs, more than the limit of 100,000"),
        ("synthetic", {"jobs": 10**12}, "jobs: expected a whole number from 1 to 10,000,000"),
        ("synthetic", {"load": float("inf")}, "load: expected a number above 0"),
        ("synthetic", {"durationScale": "x"}, "durationScale: expected a number, got 'x'"),
        ("synthetic", {"tenants": 10**6}, "tenants: expected a whole number from 1 to 1,000"),
        ("synthetic", {"jbos": 5}, "jbos: unknown option"),
        ("openb", {"limit": -1}, "limit: expected a whole number from 1"),
        ("openb", {"timeScale": 1e300}, "timeScale: expected a number above 0 and at most 1e+09"),
        ("openb", {"cluster": "mine"}, "cluster: expected one of trace, scenario"),
    ],
)
def test_trace_options_past_their_bounds_are_errors(
    kind: str, options: dict[str, object], expected: str
) -> None:
    messages = _errors(BASE, trace=TraceSpec(kind, None, options))
    assert any(expected in m for m in messages), messages


def test_philly_rows_and_options_past_their_bounds_are_located(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "job_id,user,vc,gpu_num,cpu_num,submit_time,duration\n"
        "j1,u,a,1,4,0,600\n"
        "j2,u,a,99999999,4,10,600\n"
        "j3,u,a,1,4,1e300,600\n"
        "j4,u,a,1,4,20,1e12\n"
    )
    messages = _errors(BASE, trace=TraceSpec("philly", str(path), {}))
    assert f"{path}:3: gpu_num: expected a whole number of GPUs from 0 to 100,000, got '99999999'" in messages
    assert any(m.startswith(f"{path}:4: submit_time:") for m in messages)
    assert any(m.startswith(f"{path}:5: duration: expected seconds from 0 to") for m in messages)
    (limit,) = _errors(BASE, trace=TraceSpec("philly", str(path), {"limit": "x"}))
    assert "limit: expected a whole number" in limit

"""Trace readers: Philly/Helios CSV (with located errors), the synthetic Philly-like generator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from allot.model.errors import ManifestErrors
from allot.sim.scenario.schema import TraceSpec
from allot.sim.traces import parse_trace_option
from allot.sim.traces.synthetic import MEAN_DURATION, sample_jobs

from .cases import prepared, run

CLUSTER = """
name: trace
cluster:
  nodes:
  - {{count: 2, cpu: 64, memory: 512Gi, gpus: 8, namePrefix: gpu}}
tenants:
- {{name: vc-a, weight: 2}}
trace: {trace}
"""

CSV = """job_id,user,vc,gpu_num,cpu_num,submit_time,duration,state
j1,u1,vc-a,1,4,2017-10-03 14:00:00,600,Pass
j2,u2,vc-b,16,32,2017-10-03 14:05:00,1200,Pass
j3,u2,vc-b,2,8,2017-10-03 14:06:00,,Killed
j4,u1,vc-a,0,2,2017-10-03 14:10:00,300,Pass
"""


def test_philly_csv(tmp_path: Path) -> None:
    path = tmp_path / "philly.csv"
    path.write_text(CSV)
    p = prepared(CLUSTER.format(trace=f"{{type: philly, file: {path}}}"))
    jobs = {j.key: j for j in p.workload.jobs}
    assert set(jobs) == {"vc-a/j1", "vc-b/j2", "vc-a/j4"}  # j3 never ran
    assert jobs["vc-a/j1"].arrival == 0 and jobs["vc-b/j2"].arrival == 300
    assert (jobs["vc-b/j2"].pods, jobs["vc-b/j2"].gang) == (2, True)  # 16 GPUs: two 8-GPU pods
    assert p.workload.tenants["vc-a"].weight == 2  # the scenario's settings for a known tenant
    assert p.workload.shapes[jobs["vc-b/j2"].shape].gpus == 8
    result = run(CLUSTER.format(trace=f"{{type: philly, file: {path}}}"), "fair")
    assert all(j.finish is not None for j in result.jobs)


def test_philly_errors_name_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(CSV.replace("j1,u1,vc-a,1,", "j1,u1,vc-a,one,").replace("14:05:00", "yesterday"))
    with pytest.raises(ManifestErrors) as caught:
        prepared(CLUSTER.format(trace=f"{{type: philly, file: {path}}}"))
    messages = [str(e) for e in caught.value.errors]
    assert f"{path}:2: gpu_num: expected a whole number of GPUs from 0 to 100,000, got 'one'" in messages
    assert any(m.startswith(f"{path}:3: submit_time:") for m in messages)
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ManifestErrors, match="missing column"):
        prepared(CLUSTER.format(trace=f"{{type: philly, file: {path}}}"))


def test_synthetic_sizes_and_durations_follow_the_philly_distribution() -> None:
    gpus, durations = sample_jobs(np.random.default_rng(1), 20_000)
    shares = {g: float(np.mean(gpus == g)) for g in (1, 2, 4, 8)}
    assert shares == pytest.approx({1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}, abs=0.01)
    assert durations.min() >= 60 * 10**1.5 and durations.max() <= 60 * 10**4
    short = durations < 60 * 10**3
    assert float(short.mean()) == pytest.approx(0.8, abs=0.01)
    assert float(durations.mean()) == pytest.approx(MEAN_DURATION, rel=0.05)


def test_synthetic_trace_builds_tenants_and_runs() -> None:
    text = CLUSTER.format(trace="{type: synthetic, jobs: 40, load: 1.5, tenants: 3, durationScale: 0.01}")
    p = prepared(text, seed=4)
    assert len(p.workload.jobs) == 40
    assert set(p.workload.tenants) == {"tenant-a", "tenant-b", "tenant-c"}
    result = run(text, "fair", seed=4)
    assert result.jobs and result.cycles > 0


def test_trace_option_syntax() -> None:
    assert parse_trace_option("synthetic:jobs=300,load=1.2") == TraceSpec(
        "synthetic", None, {"jobs": 300, "load": 1.2}
    )
    assert parse_trace_option("philly:/tmp/x.csv,tenant=user") == TraceSpec(
        "philly", "/tmp/x.csv", {"tenant": "user"}
    )
    assert parse_trace_option("openb:default").file == "default"
    for bad in ("helios:x", "philly", "synthetic:oops"):
        with pytest.raises(ValueError):
            parse_trace_option(bad)


@pytest.mark.parametrize(("column", "cell"), [("gpu_num", "1e400"), ("cpu_num", "inf"), ("duration", "nan")])
def test_philly_rejects_numbers_that_are_not_finite(tmp_path: Path, column: str, cell: str) -> None:
    path = tmp_path / "odd.csv"
    header = CSV.splitlines()[0].split(",")
    row = ["j1", "u1", "vc-a", "1", "4", "2017-10-03 14:00:00", "600", "Pass"]
    row[header.index(column)] = cell
    path.write_text(",".join(header) + "\n" + ",".join(row) + "\n")
    with pytest.raises(ManifestErrors) as caught:
        prepared(CLUSTER.format(trace=f"{{type: philly, file: {path}}}"))
    assert any(str(e).startswith(f"{path}:2: {column}:") for e in caught.value.errors)

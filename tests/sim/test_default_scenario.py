"""The built-in scenario: what it holds, and that `allot simulate` runs it into a full report."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from allot.cli.simulate_cmd import builtin_scenario, simulate
from allot.model.core import Node
from allot.report.sections import SECTIONS
from allot.sim.scenario.build import prepare
from allot.sim.scenario.schema import DeviceSpec


def test_the_builtin_scenario_describes_the_advertised_cluster() -> None:
    scenario = builtin_scenario()
    nodes = scenario.manifests.of_kind(Node)
    prefixes = Counter(n.name.rsplit("-", 1)[0] for n in nodes)
    assert prefixes == {"train": 16, "infer": 2, "mig": 2, "cpu": 4}
    gpu_nodes = [n for n in nodes if not n.name.startswith("cpu")]
    assert all(any(t.key == "nvidia.com/gpu" for t in n.spec.taints) for n in gpu_nodes)
    assert [t.name for t in scenario.tenants] == ["flood", "vision", "nlp"]
    devices = {j.name: j.devices for j in scenario.jobs}
    assert devices["vision-train"] == DeviceSpec(gpus=4, nics=4, alignment="pcieRoot")
    assert devices["nlp-serve"] is not None and devices["nlp-serve"].share is not None
    assert devices["vision-eval"] is not None and devices["vision-eval"].mig == "1g.10gb"
    assert devices["nlp-prep"] is None
    flood = next(j for j in scenario.jobs if j.name == "flood")
    assert flood.priority_class == "top"
    prepared = prepare(scenario)
    assert [p.name for p in prepared.policies] == ["fifo-priority", "fair"]
    assert len(prepared.workload.jobs) > 500


def test_simulate_with_no_arguments_writes_a_report_with_every_section(tmp_path: Path) -> None:
    # The first 90 minutes hold the flood's arrival and the first preemptions; the full
    # six hours are timed by benchmarks/bench_sim.py.
    report = tmp_path / "allot-report"
    began = time.perf_counter()
    outcome = CliRunner().invoke(simulate, ["--horizon", "90m", "--report-dir", str(report), "--jobs", "1"])
    elapsed = time.perf_counter() - began
    assert outcome.exit_code == 0, outcome.output
    print(f"built-in scenario, first 90 minutes, both policies and the report: {elapsed:.1f} s")
    assert "three-teams-dgx-h100" in outcome.output
    page = (report / "index.html").read_text()
    for anchor, _ in SECTIONS:
        assert f'<section id="{anchor}">' in page
    assert elapsed < 120

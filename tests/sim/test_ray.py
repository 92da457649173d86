"""`--ray ADDRESS`: sweeps run as Ray tasks write what a local run writes.

Runs where Ray is installed (`pip install 'allot[ray]'`, which CI does),
against a private local Ray cluster; skipped elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from allot.cli.experiment_cmd import experiment
from allot.cli.simulate_cmd import simulate

from .cases import SMALL

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'allot[ray]')")


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    ray.init(address="local", num_cpus=2, log_to_driver=False, include_dashboard=False)
    try:
        yield "local"
    finally:
        ray.shutdown()


def _summaries(output: str) -> list[dict[str, object]]:
    policies: list[dict[str, object]] = json.loads(output)["policies"]
    for summary in policies:
        summary.pop("wallSeconds")
    return policies


def test_simulate_compare_on_ray_gives_the_local_results(ray_cluster: str, tmp_path: Path) -> None:
    scenario = tmp_path / "small.yaml"
    scenario.write_text(SMALL)
    args = [str(scenario), "--compare", "fifo-priority,fair", "-o", "json", "--no-report", "-q"]
    local = CliRunner().invoke(simulate, [*args, "-j", "1"])
    remote = CliRunner().invoke(simulate, [*args, "--ray", ray_cluster])
    assert local.exit_code == 0, local.output
    assert remote.exit_code == 0, remote.output
    assert _summaries(remote.stdout) == _summaries(local.stdout)


def test_fragmentation_on_ray_writes_the_local_runs_file(ray_cluster: str, tmp_path: Path) -> None:
    args = ["fragmentation", "--policy", "FGD", "--policy", "BestFit", "--seeds", "42", "--pods", "30"]
    local = CliRunner().invoke(experiment, [*args, "--out", str(tmp_path / "local"), "--no-plots"])
    remote = CliRunner().invoke(
        experiment, [*args, "--out", str(tmp_path / "ray"), "--no-plots", "--ray", ray_cluster]
    )
    assert local.exit_code == 0, local.output
    assert remote.exit_code == 0, remote.output

    def rows(folder: str) -> list[dict[str, str]]:
        lines = (tmp_path / folder / "runs.csv").read_text().splitlines()
        header = lines[0].split(",")
        # Wall seconds differ from run to run; everything else is the result.
        return sorted(
            (
                {k: v for k, v in zip(header, line.split(","), strict=True) if k != "seconds"}
                for line in lines[1:]
            ),
            key=lambda r: sorted(r.items()),
        )

    assert rows("ray") == rows("local")

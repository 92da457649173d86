"""`allot experiment fragmentation`: a few pods through the CLI, and the curve and table arithmetic."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from allot.cli.experiment_cmd import experiment
from allot.report.fragmentation import read_runs
from allot.sim.experiments.fragmentation import GRID, RunResult, curve, summarise


def test_a_small_run_writes_table_runs_and_plots(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    args = ["fragmentation", "--policy", "FGD", "--policy", "BestFit", "--seeds", "42,43", "--pods", "40"]
    result = CliRunner().invoke(experiment, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    for name in ("runs.csv", "table.csv", "table.md", "unallocated_default.png", "bars_default.png"):
        assert (out / name).stat().st_size > 0, name
    # 40 pods never reach 100 % arrived: the table says where the runs got to, with no paper to compare.
    assert "Unallocated GPU % at 0 % arrived" in result.output and "4.77" not in result.output
    with (out / "table.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {(r["trace"], r["policy"], r["seeds"]) for r in rows} == {
        ("default", "FGD", "42 43"),
        ("default", "BestFit", "42 43"),
    }
    runs = read_runs(out / "runs.csv")
    assert len(runs) == 4 and all(r.pods == 40 for r in runs)
    # Runs already in the directory are not repeated.
    again = CliRunner().invoke(experiment, [*args, "--out", str(out), "--no-plots"])
    assert again.exit_code == 0 and "0 run(s) done" in again.output
    # ... but a quick look is no stand-in for a longer run: those are run again.
    longer = [*args[:-1], "60", "--out", str(out), "--no-plots"]
    redone = CliRunner().invoke(experiment, longer)
    assert redone.exit_code == 0 and "4 run(s) done" in redone.output
    assert all(r.pods == 60 for r in read_runs(out / "runs.csv"))


def test_bad_arguments_are_reported_not_raised(tmp_path: Path) -> None:
    result = CliRunner().invoke(experiment, ["fragmentation", "--trace", "nope", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown trace 'nope'" in result.output
    result = CliRunner().invoke(experiment, ["fragmentation", "--seeds", "a-b", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "expected seeds" in result.output


def test_curve_reads_the_first_pod_at_each_percent() -> None:
    capacity = 1000
    arrived = np.array([100, 400, 1000, 1300])
    allocated = np.array([100, 400, 900, 900])
    values = curve(arrived, allocated, capacity)
    assert values[0] == 100.0
    assert values[10] == 90.0  # first pod reaching 10 % arrived: 100 allocated
    assert values[40] == 60.0
    assert values[100] == 10.0
    assert values[130] == 10.0
    assert np.isnan(curve(arrived[:2], allocated[:2], capacity)[100])


def test_summary_is_mean_and_sample_sd_over_seeds() -> None:
    runs = []
    for seed, value in ((42, 4.0), (43, 6.0)):
        c = np.full(GRID.size, np.nan)
        c[100] = value
        runs.append(RunResult("default", "FGD", seed, 6_212_000, 1, 1, 0.1, c))
    (row,) = summarise(runs)
    assert row.mean == 5.0 and abs(row.sd - 2**0.5) < 1e-12 and row.paper == (4.77, 0.11)

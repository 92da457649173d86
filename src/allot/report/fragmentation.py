"""Files and plots of the fragmentation experiment: the table, the runs, and figures like the paper's.

* `runs.csv`: one line per (trace, policy, seed) with the curve (unallocated
  GPU % at every integer percent of arrived load, 0-130); `read_runs`
  loads it back, so results accumulate over several invocations;
* `table.csv`: policy x trace at 100 % arrived, mean and sd over seeds,
  with the paper's figures next to them; `table.md`, the same as a
  markdown matrix (trace x policy);
* `unallocated_<trace>.png`: unallocated GPU % against arrived load, per
  policy the median over seeds with the 25-75 % band (the paper's Fig. 9a);
* `bars_<trace>.png`: unallocated GPU % at 100 % arrived, mean +- sd per
  policy, the paper's value marked (Figs. 11-14).

Plots use matplotlib's Agg backend: no display needed.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from allot.report.files import write_atomically
from allot.sim.experiments.fragmentation import GRID, Row, RunResult

_RUN_COLUMNS = ("trace", "policy", "seed", "capacity_milli", "pods", "placed", "seconds")


def write_runs(results: Iterable[RunResult], path: Path) -> None:
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow([*_RUN_COLUMNS, *(f"u{int(x)}" for x in GRID)])
    for r in sorted(results, key=lambda r: (r.trace, r.policy, r.seed)):
        curve = ["" if math.isnan(v) else f"{v:.4f}" for v in r.curve]
        writer.writerow(
            [r.trace, r.policy, r.seed, r.capacity_milli, r.pods, r.placed, f"{r.seconds:.2f}", *curve]
        )
    write_atomically(path, handle.getvalue().encode("utf-8"))


def read_runs(path: Path) -> list[RunResult]:
    """Runs written by `write_runs` (none if the file does not exist)."""
    if not path.exists():
        return []
    results: list[RunResult] = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            curve = np.array(
                [float(row[f"u{int(x)}"]) if row.get(f"u{int(x)}") else np.nan for x in GRID],
                dtype=np.float64,
            )
            results.append(
                RunResult(
                    trace=row["trace"],
                    policy=row["policy"],
                    seed=int(row["seed"]),
                    capacity_milli=int(row["capacity_milli"]),
                    pods=int(row["pods"]),
                    placed=int(row["placed"]),
                    seconds=float(row["seconds"]),
                    curve=curve,
                )
            )
    return results


def write_table(rows: Sequence[Row], path: Path) -> None:
    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow(
        ["trace", "policy", "seeds", "unallocated_mean", "unallocated_sd", "paper_mean", "paper_sd"]
    )
    for row in rows:
        paper = row.paper if row.paper is not None else (None, None)
        writer.writerow(
            [
                row.trace,
                row.policy,
                " ".join(str(s) for s in row.seeds),
                f"{row.mean:.2f}",
                f"{row.sd:.2f}",
                "" if paper[0] is None else f"{paper[0]:.2f}",
                "" if paper[1] is None else f"{paper[1]:.2f}",
            ]
        )
    write_atomically(path, handle.getvalue().encode("utf-8"))


def markdown(rows: Sequence[Row]) -> str:
    """Trace x policy: `mean ± sd (paper)`, and the seeds."""
    policies: list[str] = []
    traces: list[str] = []
    cells: dict[tuple[str, str], Row] = {}
    for row in rows:
        if row.policy not in policies:
            policies.append(row.policy)
        if row.trace not in traces:
            traces.append(row.trace)
        cells[(row.trace, row.policy)] = row
    lines = ["| trace | " + " | ".join(policies) + " |", "|---|" + "---|" * len(policies)]
    for trace in traces:
        parts = []
        for policy in policies:
            cell = cells.get((trace, policy))
            if cell is None:
                parts.append("")
                continue
            paper = f" ({cell.paper[0]:.2f})" if cell.paper else ""
            parts.append(f"{cell.mean:.2f} ± {cell.sd:.2f}{paper}")
        lines.append(f"| {trace} | " + " | ".join(parts) + " |")
    seeds = sorted({s for r in rows for s in r.seeds})
    if seeds:
        lines.append("")
        lines.append(
            f"Unallocated GPU % at {rows[0].percent} % arrived load; mean ± sd over seeds {seeds[0]}-{seeds[-1]}"
            f" ({len(seeds)}); the paper's mean in parentheses."
        )
    return "\n".join(lines) + "\n"


def plot_curves(results: Sequence[RunResult], trace: str, path: Path) -> None:
    """Unallocated GPU % against arrived load for one trace: median and 25-75 % band per policy."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.2))
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    policies = sorted({r.policy for r in results if r.trace == trace})
    for policy in policies:
        curves = np.array([r.curve for r in results if r.trace == trace and r.policy == policy])
        usable = ~np.isnan(curves).all(axis=0)
        if not usable.any():
            continue
        x = GRID[usable]
        with np.errstate(all="ignore"):
            low, median, high = np.nanpercentile(curves[:, usable], [25, 50, 75], axis=0)
        (line,) = axes.plot(x, median, label=policy, linewidth=1.4)
        axes.fill_between(x, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    axes.set_xlim(75, 130)
    axes.set_ylim(bottom=0)
    axes.set_xlabel("Arrived workloads (% of cluster GPU capacity)")
    axes.set_ylabel("Unallocated GPU (%)")
    axes.set_title(f"openb {trace}")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    _save(figure, path)


def plot_bars(rows: Sequence[Row], trace: str, path: Path) -> None:
    """Unallocated GPU % at 100 % arrived for one trace: mean +- sd per policy, the paper's value marked."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    mine = [r for r in rows if r.trace == trace]
    figure = Figure(figsize=(6.4, 3.8))
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    x = np.arange(len(mine))
    axes.bar(
        x,
        [r.mean for r in mine],
        yerr=[r.sd for r in mine],
        capsize=3,
        color="tab:blue",
        alpha=0.8,
        label="allot",
    )
    paper = [(i, r.paper[0]) for i, r in enumerate(mine) if r.paper is not None]
    if paper:
        axes.scatter(
            [i for i, _ in paper],
            [v for _, v in paper],
            marker="_",
            s=400,
            color="black",
            label="paper",
            zorder=3,
        )
    axes.set_xticks(x, [r.policy for r in mine], rotation=20, fontsize="small")
    axes.set_ylabel("Unallocated GPU (%) at 100 % arrived")
    axes.set_title(f"openb {trace}")
    axes.grid(axis="y", alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    _save(figure, path)


def _save(figure: Any, path: Path) -> None:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    write_atomically(path, buffer.getvalue())


def write_all(
    results: Sequence[RunResult], rows: Sequence[Row], out: Path, *, plots: bool = True
) -> list[Path]:
    """Every file of the experiment into `out`; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "runs.csv", out / "table.csv", out / "table.md"]
    write_runs(results, written[0])
    write_table(rows, written[1])
    write_atomically(written[2], markdown(rows).encode("utf-8"))
    if plots:
        for trace in sorted({r.trace for r in rows}):
            curve_path = out / f"unallocated_{trace}.png"
            bar_path = out / f"bars_{trace}.png"
            plot_curves(results, trace, curve_path)
            plot_bars(rows, trace, bar_path)
            written += [curve_path, bar_path]
    return written

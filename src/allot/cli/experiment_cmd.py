"""`allot experiment`: reproducible experiments; `fragmentation` is the FGD paper's openb experiment.

    allot experiment fragmentation                      # default trace, seven policies, seeds 42-51
    allot experiment fragmentation --trace all --jobs 2 --out results/
    allot experiment fragmentation --trace gpuspec33 --policy FGD --seeds 42-44
    allot experiment fragmentation --trace all --ray auto      # on a Ray cluster

Results accumulate in the output directory (`runs.csv`): runs already
there are not repeated unless `--force`, so a long experiment can be run
in pieces. The table (policy x trace at 100 % arrived load, mean +- sd over
seeds, with the paper's figures) is printed and written as `table.csv`;
plots as PNG (see `allot.report.fragmentation`).
"""

from __future__ import annotations

import csv
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from allot.cli.exits import bad_input
from allot.cli.params import FilePath
from allot.report.fragmentation import read_runs, write_all, write_runs
from allot.scheduling.sharing.policies import POLICIES
from allot.sim.experiments.fragmentation import (
    ALL_POLICIES,
    TRACES,
    Row,
    RunResult,
    planned_pods,
    run_all,
    specs,
    summarise,
)
from allot.sim.ray_pool import RayUnavailable

SAVE_EVERY = 10
MAX_SEEDS = 1000
MAX_SEED = 2**32 - 1
MAX_JOBS = 256


def _seeds(text: str) -> list[int]:
    seeds: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                low, high = (int(bound) for bound in part.split("-", 1))
            elif part:
                low = high = int(part)
            else:
                continue
            if not 0 <= low <= high <= MAX_SEED or len(seeds) + high - low + 1 > MAX_SEEDS:
                raise click.BadParameter(
                    f"{part!r}: expected at most {MAX_SEEDS} seeds from 0 to {MAX_SEED}, as low-high or a list"
                )
            seeds.extend(range(low, high + 1))
    except ValueError:
        raise click.BadParameter(f"{text[:60]!r}: expected seeds like 42-51 or 42,43") from None
    if not seeds:
        raise click.BadParameter("no seeds given")
    return seeds


def _traces(values: tuple[str, ...]) -> list[str]:
    chosen: list[str] = []
    for value in values or ("default",):
        names = list(TRACES) if value == "all" else [value]
        for name in names:
            if name not in TRACES:
                raise click.BadParameter(f"unknown trace {name!r}; expected one of: all, {', '.join(TRACES)}")
            if name not in chosen:
                chosen.append(name)
    return chosen


def _table(rows: list[Row], percent: int = 100) -> Table:
    table = Table(title=f"Unallocated GPU % at {percent} % arrived load (mean ± sd over seeds)")
    for column in ("trace", "policy", "seeds", "allot", "paper", "gap"):
        table.add_column(column, justify="left" if column in ("trace", "policy") else "right")
    for row in rows:
        paper = f"{row.paper[0]:.2f} ± {row.paper[1]:.2f}" if row.paper else "-"
        gap = f"{row.mean - row.paper[0]:+.2f}" if row.paper else "-"
        seeds = f"{len(row.seeds)} ({row.seeds[0]}-{row.seeds[-1]})" if row.seeds else "0"
        table.add_row(row.trace, row.policy, seeds, f"{row.mean:.2f} ± {row.sd:.2f}", paper, gap)
    return table


@click.group("experiment")
def experiment() -> None:
    """Reproducible experiments on published traces."""


@experiment.command("fragmentation")
@click.option(
    "--trace",
    "traces",
    multiple=True,
    help="openb trace (repeatable): default, cpu050 ... multigpu50, or `all` for the paper's 17 [default: default]",
)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    type=click.Choice(POLICIES),
    help="placement policy (repeatable) [default: the paper's six and FGDPlus]",
)
@click.option("--seeds", default="42-51", show_default=True, help="seeds: a range 42-51 or a list 42,43")
@click.option(
    "--out",
    type=FilePath(file_okay=False, path_type=Path),
    default=Path("allot-experiment"),
    show_default=True,
    help="output directory (runs.csv, table.csv, plots)",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, MAX_JOBS),
    default=1,
    show_default=True,
    help="runs in parallel processes",
)
@click.option(
    "--pods",
    type=click.IntRange(min=1),
    default=None,
    help="only the first N pods of each run (a quick look)",
)
@click.option(
    "--ray",
    "ray_address",
    metavar="ADDRESS",
    help="run on a Ray cluster (auto, ray://HOST:10001, or local) instead of local processes",
)
@click.option("--force", is_flag=True, help="run again what runs.csv already holds")
@click.option("--no-plots", is_flag=True, help="write the CSV files only")
def fragmentation(
    traces: tuple[str, ...],
    policies: tuple[str, ...],
    seeds: str,
    out: Path,
    jobs: int,
    pods: int | None,
    force: bool,
    no_plots: bool,
    ray_address: str | None,
) -> None:
    """The FGD paper's experiment: fill the openb cluster to 130 %, record unallocated GPU % (research/sharing.md 1.6)."""
    console = Console()
    chosen_traces = _traces(traces)
    chosen_policies = list(policies or ALL_POLICIES)
    chosen_seeds = _seeds(seeds)
    runs_file = out / "runs.csv"
    try:
        existing = [] if force else read_runs(runs_file)
    except (KeyError, ValueError, csv.Error) as err:
        bad_input([f"{runs_file}: not a runs file written by allot ({err})"], "nothing was run")
    except OSError as err:
        bad_input([f"{runs_file}: cannot read: {err.strerror or err}"], "nothing was run")
    try:
        # Before hours of runs: a place the results cannot be written to is bad input now.
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        bad_input([f"--out {out}: cannot write there: {err.strerror or err}"], "nothing was run")
    done = {(r.trace, r.policy, r.seed): r for r in existing}
    wanted = list(specs(chosen_traces, chosen_policies, chosen_seeds, pods))
    # A stored run counts only if it placed as many pods as asked now (a --pods look is no whole run).
    todo = [
        s
        for s in wanted
        if (s.trace, s.policy, s.seed) not in done
        or done[(s.trace, s.policy, s.seed)].pods != planned_pods(s)
    ]
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("fragmentation runs", total=len(todo))

        def finished(result: RunResult) -> None:
            done[(result.trace, result.policy, result.seed)] = result
            progress.update(task, advance=1, description=f"{result.trace} {result.policy} seed {result.seed}")
            count = int(progress.tasks[0].completed)
            if count % SAVE_EVERY == 0:
                # A long experiment keeps what it has: an interrupted one resumes from here.
                write_runs(done.values(), runs_file)

        try:
            run_all(todo, jobs=jobs, done=finished, ray_address=ray_address)
        except RayUnavailable as err:
            raise click.ClickException(str(err)) from None
    results = list(done.values())
    keys = {(s.trace, s.policy, s.seed) for s in wanted}
    selected = [r for r in results if (r.trace, r.policy, r.seed) in keys]
    # Runs cut short by --pods may end before 100 % arrived: report where all of them got to.
    percent = min([100, *(r.reached for r in selected)])
    rows = summarise(selected, percent)
    try:
        written = write_all(results, rows, out, plots=not no_plots)
    except OSError as err:
        bad_input(
            [f"--out {out}: cannot write the results: {err.strerror or err}"], "the results were not written"
        )
    console.print(_table(rows, percent))
    console.print(
        f"{len(todo)} run(s) done, {len(results)} in {runs_file}; wrote {len(written)} file(s) to {out}/"
    )

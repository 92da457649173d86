"""`allot simulate [SCENARIO]`: run a workload under one or more policies, summarise, write the report.

With no SCENARIO the built-in scenario runs (allot/sim/scenarios/default.yaml).
Bad input (a scenario field, a manifest, a trace row, a policy name) is
reported with its location on stderr and the exit status is 1; nothing is
written then.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from allot.cli.exits import bad_input, negative
from allot.cli.params import FilePath
from allot.model.errors import ManifestErrors
from allot.report import format as fmt
from allot.sim.limits import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_JOBS,
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_PODS,
    MAX_SECONDS,
    MAX_SEED,
    RunLimits,
)
from allot.sim.metrics import Summary, summarize
from allot.sim.parallel import Task, TaskFailed, default_workers, run_all
from allot.sim.policies import Policy
from allot.sim.ray_pool import RayUnavailable, run_tasks_on_ray
from allot.sim.records import SimResult
from allot.sim.scenario.build import Prepared, prepare
from allot.sim.scenario.parse import load_scenario, parse_scenario
from allot.sim.scenario.reader import parse_duration, short_repr
from allot.sim.scenario.schema import Scenario
from allot.sim.simulator import SimOptions, Simulation, SimulationError
from allot.sim.topology import default_model
from allot.sim.traces import parse_trace_option

BUILTIN = "default.yaml"
DEFAULT_FRAMES = 120
MAX_FRAMES = 10_000


@dataclass(frozen=True, slots=True)
class FrameSettings:
    """Dashboard frames to record: `count` over the run, under `directory/<policy>`."""

    directory: Path
    count: int


PROGRESS_INTERVAL = 0.1  # seconds of wall time between progress-bar updates


def builtin_scenario(limits: RunLimits = DEFAULT_LIMITS) -> Scenario:
    text = resources.files("allot.sim").joinpath("scenarios", BUILTIN).read_text(encoding="utf-8")
    return parse_scenario(text, f"built-in {BUILTIN}", limits=limits)


def _fail(errors: ManifestErrors) -> NoReturn:
    bad_input(errors.errors, "nothing was simulated")


class _Bars:
    """One throttled rich progress bar per policy, fed with simulated time."""

    def __init__(self, console: Console, names: list[str], end: float) -> None:
        self.end = max(end, 1.0)
        self.progress = Progress(
            TextColumn("[bold]{task.description:<16}"),
            BarColumn(),
            TextColumn("{task.fields[clock]:>9} simulated"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.tasks = [self.progress.add_task(name, total=self.end, clock="0 s") for name in names]
        self._last = [0.0] * len(names)

    def update(self, index: int, now: float) -> None:
        wall = time.perf_counter()
        if wall - self._last[index] >= PROGRESS_INTERVAL or now >= self.end:
            self._last[index] = wall
            self.progress.update(self.tasks[index], completed=min(now, self.end), clock=fmt.duration(now))


def _run(
    prepared: Prepared,
    *,
    check: bool,
    workers: int,
    console: Console | None,
    ray_address: str | None = None,
    frames: FrameSettings | None = None,
    figures: bool = False,
) -> list[SimResult]:
    """Every policy's run; with `figures`, each process that ran one also draws its report figures
    (while the others still run) and the report's module is loaded here meanwhile."""
    options = SimOptions(
        horizon=prepared.horizon, checkpoint=prepared.scenario.checkpoint, check_invariants=check
    )
    end = prepared.horizon or max((j.arrival for j in prepared.workload.jobs), default=0.0)

    def task(policy: Policy) -> Task:
        def run(progress: Callable[[float], None]) -> SimResult:
            simulation = Simulation(
                manifests=prepared.manifests,
                workload=prepared.workload,
                policy=policy,
                seed=prepared.seed,
                scenario=prepared.scenario.name,
                options=options,
                node_events=prepared.scenario.node_events,
                throughput=default_model(prepared.scenario.throughput),
                progress=progress,
            )
            if frames is None:
                result = simulation.run()
            else:
                from allot.dashboard.frames import FrameRecorder

                recorder = FrameRecorder(
                    simulation,
                    frames.directory / policy.name,
                    every=max(end, 1.0) / frames.count,
                    title=f"{prepared.scenario.name}: {policy.name}",
                )
                result = simulation.run()
                recorder.finish(result.end)
            if figures:
                from allot.report.document import draw_figures

                # In a pool, the other policies' processes are done or nearly: half the figures
                # are drawn in a process of their own.
                draw_figures(result, split=workers > 1 and len(prepared.policies) > 1)
            return result

        return run

    if ray_address is not None:
        return run_tasks_on_ray([task(p) for p in prepared.policies], address=ray_address)
    bars = _Bars(console, [p.name for p in prepared.policies], end) if console is not None else None
    try:
        return run_all(
            [task(p) for p in prepared.policies],
            workers=workers,
            progress=bars.update if bars is not None else None,
            before_wait=lambda: _children_started(bars, figures),
        )
    finally:
        if bars is not None:
            bars.progress.stop()


def _children_started(bars: _Bars | None, figures: bool) -> None:
    if bars is not None:
        bars.progress.start()
    if figures:
        # Loading matplotlib takes a second or more: done while the simulations run.
        import allot.report.document  # noqa: F401


def _table(summaries: list[Summary]) -> Table:
    table = Table(title="Simulation summary", title_justify="left", show_lines=False)
    table.add_column("", no_wrap=True)
    for s in summaries:
        table.add_column(s.policy, justify="right")
    rows: list[tuple[str, Callable[[Summary], str]]] = [
        ("jobs completed / arrived", lambda s: f"{s.completed:,} / {s.jobs:,}"),
        ("GPU allocation", lambda s: fmt.pct(s.allocation_pct)),
        (
            "unallocated / fragmented GPUs",
            lambda s: f"{fmt.pct(s.unallocated_pct)} / {fmt.pct(s.fragmented_pct)}",
        ),
        (
            "idle while work waited (usable by it)",
            lambda s: f"{fmt.pct(s.idle_while_waiting_pct)} ({fmt.pct(s.idle_usable_while_waiting_pct)})",
        ),
        ("queue wait p50 / p95", lambda s: f"{fmt.duration(s.wait.p50)} / {fmt.duration(s.wait.p95)}"),
        ("worst fair-share ratio", lambda s: fmt.ratio(s.min_fair_share_ratio)),
        ("Jain's index", lambda s: fmt.ratio(s.jain)),
        ("worst fair-share ratio, usable GPUs", lambda s: fmt.ratio(s.min_usable_fair_share_ratio)),
        ("Jain's index, usable GPUs", lambda s: fmt.ratio(s.usable_jain)),
        ("preemptions", lambda s: f"{s.preemptions:,}"),
        ("aligned GPU+NIC starts", lambda s: fmt.pct(s.aligned_pct)),
        (
            "GPU-hours lost: misalignment / time-slicing",
            lambda s: f"{s.lost_misaligned_gpu_hours:,.1f} / {s.lost_time_slicing_gpu_hours:,.1f}",
        ),
    ]
    for name, value in rows:
        table.add_row(name, *(value(s) for s in summaries))
    for tenant in summaries[0].tenants:
        table.add_row(
            f"[bold]{tenant.name}[/]: wait p95, fair share",
            *(
                f"{fmt.duration(s.tenant(tenant.name).wait.p95)}, {fmt.ratio(s.tenant(tenant.name).fair_share_ratio)}"
                for s in summaries
            ),
        )
    table.add_row(
        "simulated / wall",
        *(f"{fmt.duration(s.simulated_hours * 3600)} / {s.wall_seconds:.1f} s" for s in summaries),
    )
    return table


def _limit(what: str, default: int, whole: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option(
        f"--max-{what}",
        type=click.IntRange(min=1),
        default=default,
        show_default=True,
        help=f"Refuse {whole} of more {what} than this.",
    )


@click.command()
@click.argument("scenario", required=False, type=FilePath(dir_okay=False, path_type=Path))
@click.option(
    "--compare",
    metavar="P1,P2",
    help="Policies to run side by side (fifo-priority, kueue, fair, fgd, or the scenario's own).",
)
@click.option(
    "--seed",
    type=click.IntRange(0, MAX_SEED),
    help="Random seed for the workload, 0 to 2^64-1 (default: the scenario's).",
)
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option(
    "--report-dir",
    type=FilePath(file_okay=False, path_type=Path),
    default=Path("allot-report"),
    show_default=True,
)
@click.option("--no-report", is_flag=True, help="Do not write the HTML report.")
@click.option(
    "--trace",
    metavar="SPEC",
    help="Replace the scenario's jobs: openb:default, philly:FILE or synthetic[:jobs=N,load=X].",
)
@click.option(
    "--horizon", metavar="DURATION", help="Stop at this simulated time (e.g. 6h; at most 10 years)."
)
@click.option(
    "--check",
    is_flag=True,
    help="Check the cluster invariants after every cycle (slower); exit 3 if one breaks.",
)
@click.option(
    "-j",
    "--jobs",
    "workers",
    type=click.IntRange(min=1),
    help="Policies simulated at once, one process each (default: one per CPU).",
)
@click.option(
    "--ray",
    "ray_address",
    metavar="ADDRESS",
    help="Run the policies as tasks on a Ray cluster (auto, ray://HOST:10001, or local) instead of local processes.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option(
    "--serve",
    is_flag=True,
    help="After the run, serve the dashboard over simulated time (every policy; Ctrl-C stops it).",
)
@click.option(
    "--record-frames",
    type=FilePath(file_okay=False, path_type=Path),
    help="Keep the dashboard's frames in this folder (one subfolder per policy) for `allot dashboard --replay`.",
)
@click.option(
    "--frames",
    "frame_count",
    type=click.IntRange(2, MAX_FRAMES),
    default=DEFAULT_FRAMES,
    show_default=True,
    help="Dashboard frames over the simulated time (with --serve or --record-frames).",
)
@click.option(
    "--bind-address", default="127.0.0.1", show_default=True, help="Address the dashboard listens on."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    help="Port of the dashboard (0: any free port).",
)
@_limit("nodes", DEFAULT_MAX_NODES, "a cluster")
@_limit("jobs", DEFAULT_MAX_JOBS, "a workload")
@_limit("pods", DEFAULT_MAX_PODS, "a workload")
def simulate(
    scenario: Path | None,
    compare: str | None,
    seed: int | None,
    output: str,
    report_dir: Path,
    no_report: bool,
    trace: str | None,
    horizon: str | None,
    workers: int | None,
    check: bool,
    quiet: bool,
    max_nodes: int,
    max_jobs: int,
    max_pods: int,
    ray_address: str | None,
    serve: bool,
    record_frames: Path | None,
    frame_count: int,
    bind_address: str,
    port: int,
) -> None:
    """Simulate SCENARIO (a scenario YAML; default: the built-in three-team DGX H100 cluster).

    A run larger than --max-nodes, --max-jobs or --max-pods is refused before it starts.
    """
    horizon_seconds = None
    if horizon is not None:
        horizon_seconds = parse_duration(horizon)
        if horizon_seconds is None or not 0 < horizon_seconds <= MAX_SECONDS:
            raise click.BadParameter(
                f"expected a duration such as 6h or 90m, above 0 and at most 10 years, got {short_repr(horizon)}",
                param_hint="--horizon",
            )
    limits = RunLimits(nodes=max_nodes, jobs=max_jobs, pods=max_pods)
    trace_spec = None
    if trace is not None:
        try:
            trace_spec = parse_trace_option(trace)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint="--trace") from None
    names = [p.strip() for p in compare.split(",") if p.strip()] if compare else None
    try:
        loaded = load_scenario(scenario, limits=limits) if scenario is not None else builtin_scenario(limits)
        prepared = prepare(
            loaded, seed=seed, trace=trace_spec, policies=names, horizon=horizon_seconds, limits=limits
        )
    except ManifestErrors as errors:
        _fail(errors)
    if (serve or record_frames is not None) and ray_address is not None:
        raise click.UsageError("--serve and --record-frames record on this machine: not with --ray")
    if (serve or record_frames is not None) and importlib.util.find_spec("aiohttp") is None:
        bad_input(
            ["--serve needs the dashboard extra (pip install 'allot[dashboard]')"], "nothing was simulated"
        )
    scratch = None
    folder = record_frames
    if serve and folder is None:
        scratch = tempfile.TemporaryDirectory(prefix="allot-frames-")
        folder = Path(scratch.name)
    frames = None
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            bad_input(
                [f"--record-frames {folder}: cannot create it: {err.strerror or err}"],
                "nothing was simulated",
            )
        frames = FrameSettings(folder, frame_count)
    try:
        _simulate_and_report(
            prepared,
            check=check,
            workers=workers,
            quiet=quiet,
            ray_address=ray_address,
            frames=frames,
            report_dir=None if no_report else report_dir,
            output=output,
        )
        if serve and frames is not None:
            from allot.cli.dashboard_cmd import replay_sources, serve_sources

            sys.stdout.flush()
            runs = [p.name for p in prepared.policies]
            serve_sources(replay_sources(frames.directory, runs), bind_address, port)
    finally:
        if scratch is not None:
            scratch.cleanup()


def _simulate_and_report(
    prepared: Prepared,
    *,
    check: bool,
    workers: int | None,
    quiet: bool,
    ray_address: str | None,
    frames: FrameSettings | None,
    report_dir: Path | None,
    output: str,
) -> None:
    err_console = Console(stderr=True)
    show_progress = not quiet and err_console.is_terminal
    try:
        results = _run(
            prepared,
            check=check,
            workers=workers or default_workers(len(prepared.policies)),
            console=err_console if show_progress else None,
            ray_address=ray_address,
            frames=frames,
            figures=report_dir is not None,
        )
    except RayUnavailable as err:
        click.echo(f"error: {err}", err=True)
        raise SystemExit(1) from None
    except (SimulationError, TaskFailed) as failure:
        if isinstance(failure, TaskFailed) and failure.kind != SimulationError.__name__:
            raise
        negative(f"invariant violated: {failure}")
    summaries = [summarize(r) for r in results]
    report_path = None
    if report_dir is not None:
        # The report draws with matplotlib: imported only when a report is written.
        from allot.report import ReportData, write_report

        data = ReportData(
            title=f"allot simulation: {prepared.scenario.name}",
            description=prepared.scenario.description,
            source=prepared.scenario.file,
            results=results,
            summaries=summaries,
            descriptions={p.name: p.description for p in prepared.policies},
        )
        try:
            report_path = write_report(data, report_dir)
        except OSError as err:
            bad_input(
                [f"--report-dir {report_dir}: cannot write the report: {err.strerror or err}"],
                "no report was written",
            )
    if output == "json":
        payload = {
            "scenario": prepared.scenario.name,
            "seed": prepared.seed,
            "policies": [s.to_dict() for s in summaries],
            "report": str(report_path) if report_path is not None else None,
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        _print_summary(prepared, results, summaries, report_path)


def _print_summary(
    prepared: Prepared, results: list[SimResult], summaries: list[Summary], report_path: Path | None
) -> None:
    console = Console()
    console.print(
        f"[bold]{prepared.scenario.name}[/]: {len(results[0].nodes)} nodes, {len(results[0].gpu_labels)} GPUs, "
        f"{len(prepared.workload.jobs):,} jobs from {len(prepared.workload.tenants)} tenants, seed {prepared.seed}"
    )
    console.print(_table(summaries))
    for note in sorted({n for s in summaries for n in s.notes}):
        console.print(f"[dim]note: {note}[/]")
    if report_path is not None:
        console.print(f"Report: [bold]{report_path}[/] (open it in a browser)")

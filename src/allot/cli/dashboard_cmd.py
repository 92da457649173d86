"""`allot dashboard`: the monitoring view without scheduling (a live cluster, or a recorded simulation).

`allot dashboard --kubeconfig K` mirrors the cluster read-only (no cycle, no write, no Lease)
and serves the same pages `allot run` serves beside /metrics. `allot dashboard --replay DIR`
serves a simulation recorded by `allot simulate --serve --record-frames DIR` (or any run's
frame directory). See docs/dashboard.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from allot.cli.exits import bad_input
from allot.cli.params import FilePath
from allot.cli.run_cmd import (
    configure_logging,
    dashboard_interval_option,
    kubeconfig_options,
    log_options,
    pool_label_option,
    run_settings,
)

if TYPE_CHECKING:
    from allot.dashboard.source import Source

NOT_DONE = "nothing was served"


def extra_missing(error: ImportError, command: str) -> NoReturn:
    bad_input([f"{command} needs the dashboard extra (pip install 'allot[dashboard]'): {error}"], NOT_DONE)


def replay_sources(directory: Path, runs: Sequence[str] | None = None) -> dict[str, Source]:
    """The runs recorded under `directory`: itself (one run) or its subdirectories (one per policy),
    or only those named in `runs`."""
    from allot.dashboard.frames import INDEX, FrameSource, RecordingError

    folders = (
        [directory]
        if (directory / INDEX).is_file()
        else sorted(p.parent for p in directory.glob(f"*/{INDEX}"))
    )
    if runs is not None:
        folders = [f for f in folders if f.name in runs]
    if not folders:
        bad_input([f"--replay {directory}: no recorded simulation here (no {INDEX})"], NOT_DONE)
    sources: dict[str, Source] = {}
    try:
        for folder in folders:
            source = FrameSource(folder)
            sources[source.policy or folder.name] = source
    except RecordingError as error:
        bad_input([f"--replay: {error}"], NOT_DONE)
    return sources


def serve_sources(sources: dict[str, Source], bind_address: str, port: int) -> None:
    """Serve recorded or finished runs until interrupted; the URL is printed once listening."""
    from allot.dashboard.server import serve

    def ready(url: str) -> None:
        click.echo(f"dashboard: {url} (Ctrl-C stops it)", err=True)

    try:
        asyncio.run(serve(sources, bind_address, port, ready=ready))
    except OSError as error:
        click.echo(f"dashboard: cannot serve on {bind_address}:{port}: {error.strerror or error}", err=True)
        raise SystemExit(1) from None


@click.command()
@kubeconfig_options
@click.option(
    "--replay",
    type=FilePath(exists=True, file_okay=False, path_type=Path),
    help="Serve a recorded simulation (the folder `allot simulate --serve --record-frames` wrote) instead.",
)
@click.option("--bind-address", default="127.0.0.1", show_default=True)
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=8080,
    show_default=True,
    help="HTTP port of the dashboard (0: any free port); a live mirror also serves /metrics, /healthz, /readyz.",
)
@click.option("--kube-api-qps", type=click.FloatRange(min=0), default=20.0, show_default=True)
@click.option("--kube-api-burst", type=click.IntRange(min=1), default=40, show_default=True)
@click.option(
    "--kueue/--no-kueue", default=True, show_default=True, help="Show Kueue's queues where they are served."
)
@pool_label_option
@dashboard_interval_option
@log_options
def dashboard(
    kubeconfig: str | None,
    context: str | None,
    replay: Path | None,
    bind_address: str,
    port: int,
    kube_api_qps: float,
    kube_api_burst: int,
    kueue: bool,
    pool_label: tuple[str, ...],
    dashboard_interval: float,
    log_format: str,
    log_level: str,
) -> None:
    """Serve the dashboard of a live cluster, read-only (nothing is scheduled or written), or of a
    recorded simulation (--replay). See docs/dashboard.md."""
    if replay is not None:
        if kubeconfig or context:
            raise click.UsageError("--replay serves a recording: --kubeconfig and --context do not apply")
        try:
            sources = replay_sources(replay)
        except ImportError as error:
            extra_missing(error, "allot dashboard --replay")
        serve_sources(sources, bind_address, port)
        return
    try:
        from allot.dashboard.live_source import live_dashboard
        from allot.live.app import RunSettings
        from allot.live.client import ClientOptions
    except ImportError as error:
        bad_input([f"allot dashboard needs the live extra (pip install 'allot[live]'): {error}"], NOT_DONE)
    configure_logging(log_format, log_level)
    settings = RunSettings(
        profiles={},
        client=ClientOptions(kubeconfig=kubeconfig, context=context, qps=kube_api_qps, burst=kube_api_burst),
        bind_address=bind_address,
        port=port,
        kueue=kueue,
        watch_only=True,
        extend_app=live_dashboard(
            title="allot dashboard (read-only)", pool_labels=pool_label, interval=dashboard_interval
        ),
    )
    run_settings(settings, "allot dashboard", NOT_DONE)

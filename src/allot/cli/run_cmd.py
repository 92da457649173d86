"""`allot run`: the live scheduler (a second scheduler, `schedulerName: allot`, beside kube-scheduler)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from allot.cli.exits import bad_input
from allot.cli.kubeconfig import config_errors, describe
from allot.cli.loading import load_kueue_config_or_exit
from allot.cli.params import FilePath
from allot.cli.profiles import load_config as load_scheduler_config
from allot.scheduling.profile import Profile

if TYPE_CHECKING:
    from allot.live.app import RunSettings

DEFAULT_SCHEDULER_NAME = "allot"
Command = TypeVar("Command", bound=Callable[..., Any])


def kubeconfig_options(command: Command) -> Command:
    """--kubeconfig and --context, as every command that talks to a cluster takes them."""
    command = click.option("--context", help="Kubeconfig context (default: its current-context).")(command)
    return click.option(
        "--kubeconfig",
        type=FilePath(exists=True, dir_okay=False),
        help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account).",
    )(command)


def log_options(command: Command) -> Command:
    """--log-format and --log-level (see `configure_logging`)."""
    command = click.option(
        "--log-level",
        type=click.Choice(["debug", "info", "warning", "error"]),
        default="info",
        show_default=True,
    )(command)
    return click.option(
        "--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True
    )(command)


dashboard_interval_option = click.option(
    "--dashboard-interval",
    type=click.FloatRange(min=0.5, max=3600),
    default=15.0,
    show_default=True,
    help="Seconds between the dashboard's samples of the cluster: its history (6 hours kept) and the GPU "
    "gauges of /metrics.",
)

pool_label_option = click.option(
    "--pool-label",
    multiple=True,
    metavar="LABEL",
    help="Node label naming a node's pool in the dashboard, tried in order (repeatable; default: "
    "the cloud providers' node pool labels, else the node name without its trailing number).",
)


class _JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message (structured logs for collectors)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure_logging(fmt: str, level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("allot")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


@click.command()
@kubeconfig_options
@click.option(
    "--config",
    "config_path",
    type=FilePath(exists=True, dir_okay=False, path_type=Path),
    help="KubeSchedulerConfiguration: allot schedules the pods whose schedulerName is one of its profiles.",
)
@click.option(
    "--kueue-config",
    "kueue_config_path",
    type=FilePath(exists=True, dir_okay=False, path_type=Path),
    help="Kueue's Configuration (config.kueue.x-k8s.io/v1beta2: resources.deviceClassMappings, "
    "fairSharing, ...), the file Kueue's controller manager reads.",
)
@click.option(
    "--scheduler-name",
    default=None,
    help=f"Profile name when no --config is given (default {DEFAULT_SCHEDULER_NAME}).",
)
@click.option(
    "--leader-elect/--no-leader-elect",
    default=False,
    show_default=True,
    help="Schedule only while holding a Lease (run two replicas).",
)
@click.option("--leader-elect-namespace", default="kube-system", show_default=True)
@click.option("--leader-elect-name", default="allot-scheduler", show_default=True)
@click.option(
    "--leader-elect-lease-duration",
    type=click.FloatRange(min=1),
    default=15.0,
    show_default=True,
    help="Seconds a standby waits after the last renewal before taking over.",
)
@click.option(
    "--leader-elect-renew-deadline",
    type=click.FloatRange(min=0.5),
    default=10.0,
    show_default=True,
    help="Seconds the leader keeps trying to renew before it stops.",
)
@click.option("--leader-elect-retry-period", type=click.FloatRange(min=0.1), default=2.0, show_default=True)
@click.option(
    "--identity", default="", help="This replica's name in the Lease (default: hostname and a random suffix)."
)
@click.option(
    "--kube-api-qps",
    type=click.FloatRange(min=0),
    default=50.0,
    show_default=True,
    help="Client-side request rate limit (0: none).",
)
@click.option("--kube-api-burst", type=click.IntRange(min=1), default=100, show_default=True)
@click.option("--bind-address", default="0.0.0.0", show_default=True)
@click.option(
    "--port",
    type=click.IntRange(min=-1, max=65535),
    default=10259,
    show_default=True,
    help="HTTP port for /metrics, /healthz, /readyz and the dashboard (-1: none, 0: any free port).",
)
@click.option(
    "--webhook-port",
    type=click.IntRange(min=0, max=65535),
    default=9443,
    show_default=True,
    help="HTTPS port of the Job admission webhook (0: any free port).",
)
@click.option(
    "--webhook-cert-file",
    type=FilePath(exists=True, dir_okay=False),
    help="TLS certificate of the webhook; with --webhook-key-file, the webhook is served.",
)
@click.option(
    "--webhook-key-file", type=FilePath(exists=True, dir_okay=False), help="TLS key of the webhook."
)
@click.option(
    "--victim-timeout",
    type=click.FloatRange(min=1),
    default=300.0,
    show_default=True,
    help="Seconds a nominated pod waits for its preemption victims to go before it is tried again.",
)
@click.option(
    "--max-bindings-in-flight",
    type=click.IntRange(min=1, max=10_000),
    default=32,  # allot.live.binder.DEFAULT_PARALLELISM (not imported: the live extra is optional)
    show_default=True,
    help="Bindings that write to the API server at once; the others wait their turn in decision order.",
)
@click.option(
    "--kueue/--no-kueue",
    default=True,
    show_default=True,
    help="Admit pods naming a Kueue LocalQueue where Kueue's objects are served.",
)
@click.option(
    "--quota-holds/--no-quota-holds",
    default=False,
    show_default=True,
    help="Keep cohort quota that frees up for the blocked head of the least-served ClusterQueue "
    'until it fits, as the simulator\'s `fair` policy does (docs/admission.md, "Quota holds"); '
    "off: Kueue's admission exactly.",
)
@click.option(
    "--reservations/--no-reservations",
    default=False,
    show_default=True,
    help="Hold a node for a pod that needs more whole GPUs than any node has free, as the "
    "simulator's `fair` policy does; only pods whose kueue.x-k8s.io/max-exec-time-seconds ends "
    'before the node drains backfill it (docs/placement.md, "Reservations"). Off: kube-scheduler\'s '
    "behaviour.",
)
@click.option(
    "--dashboard/--no-dashboard",
    default=True,
    show_default=True,
    help="Serve the dashboard on the HTTP port (/ beside /metrics; docs/dashboard.md); without it the "
    "GPU gauges of /metrics are still kept.",
)
@pool_label_option
@dashboard_interval_option
@log_options
def run(
    kubeconfig: str | None,
    context: str | None,
    config_path: Path | None,
    kueue_config_path: Path | None,
    scheduler_name: str | None,
    leader_elect: bool,
    leader_elect_namespace: str,
    leader_elect_name: str,
    leader_elect_lease_duration: float,
    leader_elect_renew_deadline: float,
    leader_elect_retry_period: float,
    identity: str,
    kube_api_qps: float,
    kube_api_burst: int,
    bind_address: str,
    port: int,
    webhook_port: int,
    webhook_cert_file: str | None,
    webhook_key_file: str | None,
    victim_timeout: float,
    max_bindings_in_flight: int,
    kueue: bool,
    quota_holds: bool,
    reservations: bool,
    dashboard: bool,
    pool_label: tuple[str, ...],
    dashboard_interval: float,
    log_format: str,
    log_level: str,
) -> None:
    """Schedule a live cluster: pods whose schedulerName is one of allot's profiles.

    The same engine as `allot simulate` and `allot place`: Kueue admission where a pod names a
    LocalQueue, gangs, DRA, topology, GPU sharing and preemption. See docs/live.md.
    """
    try:
        from allot.dashboard.live_source import live_dashboard
        from allot.live.app import RunSettings
        from allot.live.client import ClientOptions
        from allot.live.leader import LeaseSettings
    except ImportError as err:
        bad_input(
            [f"allot run needs the live extra (pip install 'allot[live]'): {err}"], "nothing was scheduled"
        )

    configure_logging(log_format, log_level)
    if (
        leader_elect
        and not leader_elect_retry_period < leader_elect_renew_deadline < leader_elect_lease_duration
    ):
        raise click.BadParameter(
            "expected retry period < renew deadline < lease duration", param_hint="--leader-elect-*"
        )
    backoff = (1.0, 10.0)
    if config_path is not None:
        config = load_scheduler_config(config_path, not_done="nothing was scheduled")
        profiles = config.profiles
        backoff = (float(config.pod_initial_backoff_seconds), float(config.pod_max_backoff_seconds))
        if scheduler_name is not None and scheduler_name not in profiles:
            raise click.BadParameter(
                f"no profile named {scheduler_name!r} in {config_path}", param_hint="--scheduler-name"
            )
    else:
        name = scheduler_name or DEFAULT_SCHEDULER_NAME
        profiles = {name: Profile(scheduler_name=name)}
    settings = RunSettings(
        profiles=profiles,
        client=ClientOptions(kubeconfig=kubeconfig, context=context, qps=kube_api_qps, burst=kube_api_burst),
        leader_elect=leader_elect,
        lease=LeaseSettings(
            namespace=leader_elect_namespace,
            name=leader_elect_name,
            lease_duration=leader_elect_lease_duration,
            renew_deadline=leader_elect_renew_deadline,
            retry_period=leader_elect_retry_period,
        ),
        identity=identity,
        bind_address=bind_address,
        port=port,
        kueue=kueue,
        kueue_config=(
            load_kueue_config_or_exit(str(kueue_config_path), not_done="nothing was scheduled")
            if kueue_config_path is not None
            else None
        ),
        quota_holds=quota_holds,
        reservations=reservations,
        victim_timeout=victim_timeout,
        backoff=backoff,
        max_bindings_in_flight=max_bindings_in_flight,
        webhook_port=webhook_port,
        webhook_cert_file=webhook_cert_file,
        webhook_key_file=webhook_key_file,
        extend_app=live_dashboard(
            title="allot run", pool_labels=pool_label, routes=dashboard, interval=dashboard_interval
        ),
    )
    if (webhook_cert_file is None) != (webhook_key_file is None):
        raise click.UsageError("--webhook-cert-file and --webhook-key-file go together")
    run_settings(settings, "allot run", "nothing was scheduled")


def run_settings(settings: RunSettings, command: str, not_done: str) -> None:
    """Run the live scheduler (or its read-only mirror) to the end; errors in one line, exit 1."""
    from allot.live.app import LeadershipLost
    from allot.live.app import run as run_live
    from allot.live.client import load_config
    from allot.live.scheduler import KueueConflict

    try:
        load_config(settings.client.kubeconfig, settings.client.context)
    except config_errors() as error:  # no kubeconfig, no in-cluster config, or an unusable one
        bad_input([f"no API server configuration: {describe(error)}"], not_done)
    try:
        asyncio.run(run_live(settings))
    except LeadershipLost as lost:
        click.echo(f"{command}: {lost}", err=True)
        sys.exit(1)
    except OSError as error:  # the HTTP port is taken, or not ours to bind
        click.echo(f"{command}: cannot serve: {error.strerror or error}", err=True)
        sys.exit(1)
    except (ValueError, KueueConflict) as error:
        click.echo(f"{command}: {error}", err=True)
        sys.exit(1)

"""`allot place CLUSTER...`: where every pending pod would go, and why the rest cannot."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from allot.cli.exits import bad_input, negative
from allot.cli.loading import load_or_exit
from allot.cli.params import FilePath
from allot.cli.profiles import load_profiles
from allot.model.codec import dump_yaml
from allot.plan.planner import PlanResult, explain, plan, resulting_objects

NOT_DONE = "nothing was planned"


def _devices(result: PlanResult, pod_key: str) -> str:
    state = result.state
    info = state.pods[pod_key]
    names: list[str] = []
    for _, claim_key in info.claims:
        claim = state.claims.get(claim_key)
        if claim is not None and claim.status.allocation is not None:
            names.extend(f"{r.pool}/{r.device}" for r in claim.status.allocation.devices.results)
    return ", ".join(names)


def _print_table(console: Console, result: PlanResult) -> None:
    table = Table(title=f"{len(result.bound)} pod(s) placed", title_justify="left")
    for column in ("pod", "node", "devices", "score"):
        table.add_column(column, justify="right" if column == "score" else "left")
    for bound in sorted(result.bound, key=lambda d: d.pod):
        table.add_row(bound.pod, bound.node, _devices(result, bound.pod), f"{bound.score:.0f}")
    console.print(table)
    for admitted in result.admitted:
        flavors = ", ".join(f"{k}={v}" for k, v in sorted(admitted.flavors.items()))
        click.echo(f"admitted {admitted.workload} in ClusterQueue {admitted.cluster_queue} ({flavors})")
    for evicted in result.evicted:
        click.echo(f"preempted {evicted.pod}: {evicted.reason} (for {evicted.preemptor})")
    if result.waiting:
        # Plain echo: reasons are long single lines that must not be wrapped.
        click.echo(f"{len(result.waiting)} pod(s) left pending:")
        for pod, reason in sorted(result.waiting.items()):
            click.echo(f"  {pod}: {reason}")


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--scheduler-name", help="Only place pods with this spec.schedulerName (as a second scheduler would)."
)
@click.option(
    "--config",
    "config_path",
    type=FilePath(exists=True, dir_okay=False, path_type=Path),
    help="KubeSchedulerConfiguration file with scheduler profiles.",
)
@click.option("--explain", "explain_pod", metavar="NAMESPACE/POD", help="Show per-node reasons for one pod.")
@click.option("-o", "--output", type=click.Choice(["table", "yaml"]), default="table", show_default=True)
@click.option("--check", is_flag=True, help="Check the invariants after every cycle; exit 3 if one breaks.")
@click.option("--no-queues", is_flag=True, help="Ignore Kueue queues: order by priority then arrival.")
def place(
    paths: tuple[str, ...],
    scheduler_name: str | None,
    config_path: Path | None,
    explain_pod: str | None,
    output: str,
    check: bool,
    no_queues: bool,
) -> None:
    """Place every pending pod of the cluster in PATHS (files, folders, or - for stdin)."""
    manifests = load_or_exit(paths, not_done=NOT_DONE)
    profiles = load_profiles(config_path, not_done=NOT_DONE) if config_path else None
    result = plan(
        manifests,
        profiles=profiles,
        scheduler_name=scheduler_name,
        queues=not no_queues,
        check_invariants=check,
    )
    console = Console()
    if output == "yaml":
        sys.stdout.write(dump_yaml(resulting_objects(result)))
    else:
        _print_table(console, result)
    if explain_pod:
        try:
            explanation = explain(result, explain_pod)
        except KeyError as missing:
            bad_input([f"--explain {explain_pod}: {missing.args[0]}"], "no explanation was given")
        click.echo(f"\n{explanation.pod}: {explanation.summary}")
        for node in explanation.nodes:
            click.echo(f"  {node.node}: {node.status.message()}")
            for line in node.allocator.splitlines():
                click.echo(f"      {line}")
    if result.violations:
        negative("\n".join(f"invariant violated: {violation}" for violation in result.violations))

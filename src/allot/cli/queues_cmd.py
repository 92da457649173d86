"""`allot queues CLUSTER...`: what Kueue would report for every ClusterQueue and LocalQueue.

Loads the manifests (a cluster dump, folders, `-` for stdin), builds the
quota tree, and counts pods with a `kueue.x-k8s.io/queue-name` label:
pods bound to a node (or Running) are admitted usage — on the flavor whose
node labels the node carries — and the others are pending workloads. Pod
groups count once. Succeeded and Failed pods are ignored.

Prints per ClusterQueue the usage and borrowing per flavor and resource,
`fairSharing.weightedShare` and pending / admitted counts, and per
LocalQueue its counts and admission-fair-sharing consumed resources; as
rich tables, or with `-o json` / `-o yaml` as ClusterQueue, LocalQueue and
Cohort objects carrying only `status`, in Kueue's field names. Bad input:
every error on stderr, exit 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
import msgspec
import yaml
from rich.console import Console
from rich.table import Table

from allot.admission import AdmissionState
from allot.admission.jobs import with_waiting_jobs
from allot.admission.resources import format_amount
from allot.admission.running import TERMINAL_PHASES
from allot.admission.status import (
    AdmissionStatus,
    ResourceUsage,
    cluster_queue_record,
    local_queue_record,
)
from allot.cli.loading import load_or_exit
from allot.model.codec import to_data
from allot.model.core import Pod
from allot.model.kueue import KUEUE_GROUP
from allot.model.loader import Manifests
from allot.model.runtime import RuntimeClass, admitted_pods


def _load(paths: Sequence[str]) -> Manifests:
    return load_or_exit(paths, not_done="no queue status was computed")


def build_state(manifests: Manifests) -> AdmissionState:
    """The admission state of a cluster dump: running queued pods and Jobs admitted, the rest
    pending (a suspended queued Job as its placeholder pods, as `allot run` has it)."""
    manifests = with_waiting_jobs(manifests)
    state = AdmissionState.from_manifests(manifests)
    admitted = admitted_pods(manifests.of_kind(Pod), manifests.of_kind(RuntimeClass))
    pods = [p for p in admitted if p.status.phase not in TERMINAL_PHASES]
    for workload in state.workloads_from_pods(pods):
        if workload.key not in state.entries:
            state.submit(workload, workload.created)
    return state


def _objects(status: AdmissionStatus) -> list[dict[str, Any]]:
    version = f"{KUEUE_GROUP}/v1beta2"
    objects: list[dict[str, Any]] = []
    for cq in status.cluster_queues:
        objects.append(
            {
                "apiVersion": version,
                "kind": "ClusterQueue",
                "metadata": {"name": cq.name},
                "status": to_data(cluster_queue_record(cq)),
            }
        )
    for lq in status.local_queues:
        namespace, name = lq.key.split("/", 1)
        objects.append(
            {
                "apiVersion": version,
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": namespace},
                "status": to_data(local_queue_record(lq)),
            }
        )
    for cohort in status.cohorts:
        entry: dict[str, Any] = {"apiVersion": version, "kind": "Cohort", "metadata": {"name": cohort.name}}
        if cohort.weighted_share is not None:
            entry["status"] = {"fairSharing": {"weightedShare": cohort.weighted_share}}
        objects.append(entry)
    return objects


def _tables(console: Console, state: AdmissionState, status: AdmissionStatus) -> None:
    fair = state.config.fair_sharing
    table = Table(title="ClusterQueues", title_justify="left")
    for column in ("name", "cohort", "flavor", "resource", "nominal", "usage", "borrowed"):
        table.add_column(column, justify="right" if column in ("nominal", "usage", "borrowed") else "left")
    if fair:
        table.add_column("weightedShare", justify="right")
    table.add_column("pending", justify="right")
    table.add_column("admitted", justify="right")
    for cq in status.cluster_queues:
        node = state.tree.cqs[cq.name]
        first = True
        rows: list[tuple[str, ResourceUsage | None]] = [(f.name, r) for f in cq.flavors for r in f.resources]
        rows = rows or [("", None)]
        for flavor, resource in rows:
            cells = [cq.name if first else "", (cq.cohort or "-") if first else "", flavor]
            if resource is None:
                cells += ["", "", "", ""]
            else:
                nominal = node.nominal.get((flavor, resource.name), 0)
                cells += [
                    resource.name,
                    format_amount(resource.name, nominal),
                    format_amount(resource.name, resource.total),
                    format_amount(resource.name, resource.borrowed) if resource.borrowed else "",
                ]
            if fair:
                cells.append(str(cq.weighted_share) if first else "")
            cells += [str(cq.pending) if first else "", str(cq.admitted) if first else ""]
            table.add_row(*cells)
            first = False
    console.print(table)
    lqs = Table(title="LocalQueues", title_justify="left")
    for column in ("name", "clusterQueue", "pending", "admitted", "usage", "consumed (AFS)"):
        lqs.add_column(column, justify="right" if column in ("pending", "admitted") else "left")
    for lq in status.local_queues:
        usage = ", ".join(
            f"{f.name}/{r.name}={format_amount(r.name, r.total)}" for f in lq.flavors for r in f.resources
        )
        consumed = ""
        if lq.consumed is not None:
            consumed = ", ".join(f"{r}={v:.3g}" for r, v in lq.consumed.items()) or "0"
        lqs.add_row(
            lq.key, lq.cluster_queue, str(lq.pending), str(lq.admitted), usage or "-", consumed or "-"
        )
    console.print(lqs)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml"]),
    default="table",
    show_default=True,
    help="Tables, or ClusterQueue/LocalQueue/Cohort status in Kueue's field names.",
)
def queues(paths: tuple[str, ...], output: str) -> None:
    """Show ClusterQueue and LocalQueue status (usage, borrowing, shares, counts) for a cluster's manifests."""
    manifests = _load(paths)
    state = build_state(manifests)
    status = state.status()
    if output == "json":
        payload = {"apiVersion": "v1", "kind": "List", "items": _objects(status)}
        click.echo(msgspec.json.format(msgspec.json.encode(payload), indent=2).decode())
    elif output == "yaml":
        click.echo(yaml.safe_dump_all(_objects(status), sort_keys=False), nl=False)
    else:
        _tables(Console(), state, status)

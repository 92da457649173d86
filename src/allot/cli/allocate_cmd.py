"""`allot allocate --node NODE MANIFESTS...`: allocate ResourceClaims on one node, as the scheduler would.

Reads Nodes, DeviceClasses, ResourceSlices, DeviceTaintRules and
ResourceClaims from the manifests. Claims that already have
`status.allocation` count as existing usage; the unallocated ones (all of
them in input order, or those named with --claim in the order named) are
allocated together on the node with Kubernetes 1.35 semantics (allot's
default feature set: every DRA feature on).

Prints a table of the allocation, or the reason nothing fits; with
`-o yaml` prints the allocated claims with `status.allocation` in upstream
form. Exit status: 0 allocated, 1 bad input, 2 bad usage, 3 does not fit on the node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import click
from msgspec.structs import replace
from rich.console import Console
from rich.table import Table

from allot.cli.exits import EXIT_NEGATIVE, bad_input
from allot.cli.loading import load_or_exit
from allot.dra import (
    AllocatedState,
    Allocation,
    AllocationError,
    Allocator,
    Features,
    NoAllocation,
    SliceIndex,
)
from allot.model.codec import dump_yaml
from allot.model.core import Node, NodeSelector
from allot.model.loader import Manifests
from allot.model.resource import (
    AllocationResult,
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceSlice,
)

NOT_DONE = "nothing was allocated"


def _fail(message: str) -> NoReturn:
    bad_input([message], NOT_DONE)


def _load(paths: Sequence[str]) -> Manifests:
    return load_or_exit(paths, not_done=NOT_DONE)


def _select_claims(claims: list[ResourceClaim], names: Sequence[str]) -> list[ResourceClaim]:
    pending = [c for c in claims if c.status.allocation is None]
    if not names:
        return pending
    by_key = {f"{c.metadata.namespace}/{c.metadata.name}": c for c in claims}
    selected: list[ResourceClaim] = []
    for name in names:
        key = name if "/" in name else f"default/{name}"
        found = by_key.get(key)
        if found is None:
            _fail(f"no ResourceClaim {key} in the manifests")
        if found.status.allocation is not None:
            _fail(f"ResourceClaim {key} is already allocated")
        selected.append(found)
    return selected


def _selector_text(selector: NodeSelector | None) -> str:
    if selector is None:
        return "any node"
    terms: list[str] = []
    for term in selector.node_selector_terms:
        parts = [f"{r.key} {r.operator} {','.join(r.values)}".strip() for r in term.match_expressions]
        parts += [f"{r.key} {r.operator} {','.join(r.values)}" for r in term.match_fields]
        terms.append(" and ".join(parts))
    return " or ".join(terms)


def _print_table(claims: Sequence[ResourceClaim], results: Sequence[AllocationResult], node: str) -> None:
    console = Console()
    if not console.is_terminal:
        console = Console(width=200)  # a pipe or file: never cut device names
    table = Table(title=f"allocation on node {node}", title_justify="left")
    for column in ("claim", "request", "device", "details"):
        table.add_column(column)
    for claim, result in zip(claims, results, strict=True):
        key = f"{claim.metadata.namespace}/{claim.metadata.name}"
        if not result.devices.results:
            table.add_row(key, "-", "-", "no devices requested")
        for device in result.devices.results:
            details: list[str] = []
            if device.admin_access:
                details.append("admin access")
            if device.share_id:
                details.append(f"share {device.share_id}")
            if device.consumed_capacity:
                details.append(", ".join(f"{k}={v}" for k, v in device.consumed_capacity.items()))
            if device.binding_conditions:
                details.append("binding: " + ", ".join(device.binding_conditions))
            table.add_row(
                key, device.request, f"{device.driver}/{device.pool}/{device.device}", "; ".join(details)
            )
    console.print(table)
    for claim, result in zip(claims, results, strict=True):
        console.print(
            f"{claim.metadata.namespace}/{claim.metadata.name}: node selector {_selector_text(result.node_selector)}"
            + (f", {len(result.devices.config)} config entries" if result.devices.config else "")
        )


@click.command()
@click.option(
    "--node", "node_name", required=True, help="Name of the Node (from the manifests) to allocate on."
)
@click.option(
    "--claim",
    "claim_names",
    multiple=True,
    metavar="NAMESPACE/NAME",
    help="Allocate only these claims (repeatable; default: every unallocated claim).",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "yaml"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--features",
    default=None,
    metavar="NAME,...",
    help="Enabled DRA features, upstream names (e.g. AdminAccess,PrioritizedList); default: all.",
)
@click.argument("manifests", nargs=-1, required=True)
def allocate(
    node_name: str,
    claim_names: tuple[str, ...],
    output: str,
    features: str | None,
    manifests: tuple[str, ...],
) -> None:
    """Allocate the unallocated ResourceClaims in MANIFESTS (files, folders, or - for stdin) on one node."""
    loaded = _load(manifests)
    nodes = {n.metadata.name: n for n in loaded.of_kind(Node)}
    node = nodes.get(node_name)
    if node is None:
        _fail(f"no Node {node_name} in the manifests")
    try:
        enabled = (
            Features.all() if features is None else Features.from_names(n for n in features.split(",") if n)
        )
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--features") from None
    all_claims = loaded.of_kind(ResourceClaim)
    claims = _select_claims(all_claims, claim_names)
    allocator = Allocator(
        {c.metadata.name: c for c in loaded.of_kind(DeviceClass)},
        SliceIndex(loaded.of_kind(ResourceSlice), loaded.of_kind(DeviceTaintRule)),
        features=enabled,
    )
    state = AllocatedState.from_claims(all_claims)
    try:
        outcome = allocator.allocate(node, claims, state)
    except AllocationError as err:
        _fail(err.message)
    if isinstance(outcome, NoAllocation):
        click.echo(outcome.node_error or outcome.diagnosis.summary, err=output == "yaml")
        if output == "text":
            for line in outcome.diagnosis.text().splitlines()[1:]:
                click.echo(line)
        raise SystemExit(EXIT_NEGATIVE)
    assert isinstance(outcome, Allocation)
    if output == "yaml":
        allocated = [
            replace(claim, status=replace(claim.status, allocation=result))
            for claim, result in zip(claims, outcome.results, strict=True)
        ]
        click.echo(dump_yaml(allocated), nl=False)
        return
    if not claims:
        click.echo("no unallocated claims")
        return
    _print_table(claims, outcome.results, node_name)

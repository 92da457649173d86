"""`allot validate PATH...`: load manifests and report every problem, or what was loaded."""

from __future__ import annotations

from collections import Counter

import click
from rich.console import Console
from rich.table import Table

from allot.cli.loading import load_or_exit


@click.command()
@click.argument("paths", nargs=-1, required=True)
def validate(paths: tuple[str, ...]) -> None:
    """Check manifests (files, folders, or - for stdin) the way the API server and allot would.

    Prints every problem with its file, document, object and field, and exits
    1; or prints a table of what was loaded and exits 0.
    """
    console = Console()
    manifests = load_or_exit(paths, not_done="nothing was loaded")
    counts = Counter(type(obj).KIND for obj in manifests.objects)
    table = Table(title=f"{len(manifests.objects)} objects loaded", title_justify="left")
    table.add_column("kind")
    table.add_column("count", justify="right")
    for kind, count in sorted(counts.items()):
        table.add_row(kind, str(count))
    console.print(table)
    if manifests.skipped:
        skipped = Counter(f"{s.api_version} {s.kind}" for s in manifests.skipped)
        listing = ", ".join(f"{kind} ({n})" for kind, n in sorted(skipped.items()))
        console.print(f"ignored (kinds allot does not schedule with): {listing}")

"""Loading manifests for a command: every problem on stderr and exit 1, or the manifests.

All commands that read a cluster share this, so bad input always looks the
same: one `error: <file> document N: <Kind ns/name>: <field>: <what was
expected>` line per problem, then a count and what was not done.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

import click

from allot.cli.checks import check_manifests
from allot.model.errors import ManifestError, ManifestErrors
from allot.model.loader import Manifests, load_paths

EXIT_BAD_INPUT = 1


def fail(errors: Sequence[ManifestError], not_done: str) -> NoReturn:
    for error in errors:
        click.echo(f"error: {error}", err=True)
    click.echo(f"{len(errors)} error(s); {not_done}", err=True)
    raise SystemExit(EXIT_BAD_INPUT)


def load_or_exit(paths: Sequence[str], *, not_done: str) -> Manifests:
    """The manifests at `paths`, checked by every layer; on any problem report all of them and exit 1."""
    try:
        manifests = load_paths(paths)
    except ManifestErrors as failure:
        fail(failure.errors, not_done)
    problems = check_manifests(manifests)
    if problems:
        fail(problems, not_done)
    return manifests

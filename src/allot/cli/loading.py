"""Loading manifests for a command: every problem on stderr and exit 1, or the manifests.

All commands that read a cluster share this, so bad input always looks the
same: one `error: <file> document N: <Kind ns/name>: <field>: <what was
expected>` line per problem, then a count and what was not done.
"""

from __future__ import annotations

from collections.abc import Sequence

from allot.cli.checks import check_manifests
from allot.cli.exits import bad_input
from allot.model.errors import ManifestErrors
from allot.model.kueue_config import Configuration
from allot.model.loader import Manifests, load_paths


def load_or_exit(paths: Sequence[str], *, not_done: str) -> Manifests:
    """The manifests at `paths`, checked by every layer; on any problem report all of them and exit 1."""
    try:
        manifests = load_paths(paths)
    except ManifestErrors as failure:
        bad_input(failure.errors, not_done)
    problems = check_manifests(manifests)
    if problems:
        bad_input(problems, not_done)
    return manifests


def load_kueue_config_or_exit(path: str, *, not_done: str) -> Configuration:
    """The one Kueue Configuration in the file at `path`; on any problem report it and exit 1."""
    manifests = load_or_exit([path], not_done=not_done)
    found = manifests.of_kind(Configuration)
    others = [e for e in manifests.entries if not isinstance(e.obj, Configuration)]
    if len(found) != 1 or others:
        bad_input(
            [f"{path}: expected one config.kueue.x-k8s.io Configuration, found {len(found)} and "
             f"{len(others)} other object(s)"],
            not_done,
        )  # fmt: skip
    return found[0]

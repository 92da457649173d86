"""The `allot` command: a click group whose subcommands live one per module.

Exit codes are the same in every command (`allot.cli.exits`). Click turns
usage errors into exit 2; the commands turn bad input into exit 1 and a
negative answer into 3. Anything else that escapes a command is a bug in
allot: `main` reports it in one line and exits 4 instead of printing a
traceback (ALLOT_TRACEBACK=1 lets the traceback through, for debugging).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import click

from allot import __version__
from allot.cli.exits import EXIT_INTERNAL

# A command's module is imported only when that command runs (or help lists it), so
# `allot run` does not load the simulator's plotting library and `allot validate` does not
# load the live client. Plain imports inside functions keep every dependency visible to
# import-linter and mypy.


def _simulate() -> click.Command:
    from allot.cli.simulate_cmd import simulate

    return simulate


def _validate() -> click.Command:
    from allot.cli.validate_cmd import validate

    return validate


def _allocate() -> click.Command:
    from allot.cli.allocate_cmd import allocate

    return allocate


def _place() -> click.Command:
    from allot.cli.place_cmd import place

    return place


def _queues() -> click.Command:
    from allot.cli.queues_cmd import queues

    return queues


def _preset() -> click.Command:
    from allot.cli.preset_cmd import preset

    return preset


def _experiment() -> click.Command:
    from allot.cli.experiment_cmd import experiment

    return experiment


def _agent() -> click.Command:
    from allot.cli.agent_cmd import agent

    return agent


def _run() -> click.Command:
    from allot.cli.run_cmd import run

    return run


def _dashboard() -> click.Command:
    from allot.cli.dashboard_cmd import dashboard

    return dashboard


COMMANDS: dict[str, Callable[[], click.Command]] = {
    "simulate": _simulate,
    "validate": _validate,
    "allocate": _allocate,
    "place": _place,
    "queues": _queues,
    "preset": _preset,
    "experiment": _experiment,
    "agent": _agent,
    "run": _run,
    "dashboard": _dashboard,
}


class LazyGroup(click.Group):
    """A group that imports a subcommand's module when the subcommand is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *super().list_commands(ctx)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        load = COMMANDS.get(cmd_name)
        return load() if load is not None else super().get_command(ctx, cmd_name)


def subcommands(group: click.Group) -> dict[str, click.Command]:
    """Every subcommand of `group` by name, imported (for tools and tests that walk the CLI)."""
    ctx = click.Context(group)
    found: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is not None:
            found[name] = command
    return found


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="allot")
def cli() -> None:
    """allot: a scheduler for GPUs and other accelerators on Kubernetes."""


TRACEBACK_VARIABLE = "ALLOT_TRACEBACK"


def main() -> None:
    try:
        cli()
    except Exception as bug:  # the last line of defence; every expected failure exits earlier
        if os.environ.get(TRACEBACK_VARIABLE):
            raise
        detail = str(bug).splitlines()[0] if str(bug) else ""
        click.echo(
            f"internal error: {type(bug).__name__}{': ' + detail if detail else ''} "
            f"(a bug in allot; {TRACEBACK_VARIABLE}=1 shows where)",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)

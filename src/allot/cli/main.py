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

import click

from allot import __version__
from allot.cli.agent_cmd import agent
from allot.cli.allocate_cmd import allocate
from allot.cli.dashboard_cmd import dashboard
from allot.cli.exits import EXIT_INTERNAL
from allot.cli.experiment_cmd import experiment
from allot.cli.place_cmd import place
from allot.cli.preset_cmd import preset
from allot.cli.queues_cmd import queues
from allot.cli.run_cmd import run
from allot.cli.simulate_cmd import simulate
from allot.cli.validate_cmd import validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="allot")
def cli() -> None:
    """allot: a scheduler for GPUs and other accelerators on Kubernetes."""


cli.add_command(simulate)
cli.add_command(validate)
cli.add_command(allocate)
cli.add_command(place)
cli.add_command(queues)
cli.add_command(preset)
cli.add_command(experiment)
cli.add_command(agent)
cli.add_command(run)
cli.add_command(dashboard)


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

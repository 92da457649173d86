"""The `allot` command: a click group whose subcommands live one per module."""

from __future__ import annotations

import click

from allot import __version__
from allot.cli.agent_cmd import agent
from allot.cli.allocate_cmd import allocate
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


def main() -> None:
    cli()

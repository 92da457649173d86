"""The binder's bounded parallelism: what `allot run` promises about writes in flight."""

from __future__ import annotations

import click
from click.testing import CliRunner

from allot.cli.main import cli, subcommands
from allot.live.binder import DEFAULT_PARALLELISM


def _option(name: str) -> click.Option:
    run = subcommands(cli)["run"]
    return next(p for p in run.params if isinstance(p, click.Option) and p.name == name)


def test_allot_run_writes_as_many_bindings_at_once_as_the_binder_does_by_default() -> None:
    assert _option("max_bindings_in_flight").default == DEFAULT_PARALLELISM


def test_zero_bindings_in_flight_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["run", "--max-bindings-in-flight", "0"])
    assert result.exit_code == 2
    assert "--max-bindings-in-flight" in result.output

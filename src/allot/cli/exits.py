"""Exit codes, the same meaning in every command, and the one way bad input is reported.

| code | meaning |
|---|---|
| 0 | done: the command did what was asked |
| 1 | bad input: a file, object or field is wrong (each problem is named on stderr; nothing is written) |
| 2 | bad usage: an unknown option, a malformed or out-of-range option value, a missing argument |
| 3 | answered "no": the command ran and the answer is negative (`allocate`: the claims do not fit on the
|   | node; `place --check` / `simulate --check`: a cluster invariant broke) |
| 4 | internal error: a bug in allot (reported in one line; ALLOT_TRACEBACK=1 shows the traceback) |
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NoReturn

import click

EXIT_DONE = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_NEGATIVE = 3
EXIT_INTERNAL = 4


def bad_input(problems: Iterable[object], not_done: str) -> NoReturn:
    """Print every problem as `error: <problem>` and a count with what was not done; exit 1."""
    count = 0
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
        count += 1
    click.echo(f"{count} error(s); {not_done}", err=True)
    raise SystemExit(EXIT_BAD_INPUT)


def negative(message: str) -> NoReturn:
    """The command's answer is "no": print why on stderr and exit 3."""
    click.echo(message, err=True)
    raise SystemExit(EXIT_NEGATIVE)

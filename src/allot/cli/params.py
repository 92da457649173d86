"""Option types shared by the commands, stricter than click's where click lets bad values through.

`FilePath` is click's Path that also refuses what no file system can hold
(a NUL byte, which Python's file functions reject with ValueError rather
than OSError), so such a value is bad usage (exit 2) instead of a crash
deep inside the command.
"""

from __future__ import annotations

from typing import Any

import click


class FilePath(click.Path):
    """click.Path, and the value must be something a file system can name."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and "\x00" in value:
            self.fail(f"{value!r} is not a path: it holds a NUL byte", param, ctx)
        return super().convert(value, param, ctx)

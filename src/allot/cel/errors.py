"""The errors a device selector can produce.

`CelCompileError` is what the API server would reject at admission and the
allocator reports as "CEL compile error"; `CelRuntimeError` is what the
allocator reports as "CEL runtime error" (a fatal error for the whole
allocation, upstream). The messages follow Kubernetes' wording where allot
can reproduce it.
"""

from __future__ import annotations

__all__ = ["CelCompileError", "CelError", "CelRuntimeError"]


class CelError(Exception):
    """A device selector that cannot be compiled or evaluated."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CelCompileError(CelError):
    """The expression does not parse, does not type-check, or does not yield a bool."""


class CelRuntimeError(CelError):
    """Evaluating the expression for one device failed (missing key, bad attribute, cost limit ...)."""

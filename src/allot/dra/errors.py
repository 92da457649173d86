"""The fatal error of an allocation call.

Upstream separates "does not fit" (no error, no result) from "cannot even
try" (an error: bad input, a CEL error, an unknown field). `AllocationError`
is the second kind; its `message` is upstream's text verbatim, because the
scheduler and the conformance suite match on it.
"""

from __future__ import annotations


class AllocationError(Exception):
    """Bad input that makes allocation impossible on every node (upstream's non-nil error)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

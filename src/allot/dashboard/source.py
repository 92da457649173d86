"""Where the dashboard's snapshots come from: the protocol the server reads.

A `Source` gives the snapshot at a time (`None`: the latest), the history of cluster totals up to
that time, the simulated instants it can show (`times`, empty for a live cluster) and a
`version` that changes whenever the latest snapshot may have (the server pushes it to pages as a
server-sent event, and pages refetch what they show).
"""

from __future__ import annotations

import asyncio
from typing import Protocol, runtime_checkable

from allot.dashboard.history import Point
from allot.dashboard.model import Snapshot


class Source(Protocol):
    # "live" (allot run), "watch" (allot dashboard, read-only) or "simulation".
    mode: str
    title: str

    def snapshot(self, at: float | None = None) -> Snapshot:
        """The snapshot at `at` (the latest at or before it; None: the latest). Raises QueryError."""
        ...

    def history(self, until: float | None = None) -> list[Point]: ...

    def times(self) -> list[float]: ...

    def version(self) -> int: ...


@runtime_checkable
class Sampled(Protocol):
    """A source that samples its own history while the server runs (a live cluster)."""

    async def run_sampler(self, stop: asyncio.Event) -> None: ...

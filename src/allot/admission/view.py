"""What the admission state's helpers (cycle, status, restore) read of it, as a protocol.

The helpers live in modules of their own; reading the state through this
protocol keeps them from importing `AdmissionState`, which imports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from allot.admission.config import AdmissionConfig
from allot.admission.entry import QueueEntry
from allot.admission.fair_sharing import ShareCalculator
from allot.admission.quota import QueuePolicy
from allot.admission.tree import QuotaTree


class AdmissionView(Protocol):
    """The read-only core of the admission state (AdmissionState is one)."""

    @property
    def entries(self) -> Mapping[str, QueueEntry]: ...
    @property
    def config(self) -> AdmissionConfig: ...
    @property
    def policies(self) -> Mapping[str, QueuePolicy]: ...
    @property
    def shares(self) -> ShareCalculator: ...
    @property
    def tree(self) -> QuotaTree: ...

"""The one exception admission raises: the caller asked for something impossible.

Expected outcomes (no fit, no preemption targets, a parked workload) are
values, never exceptions; `AdmissionError` is for misuse, such as admitting
an assignment that does not fit or restoring a workload without a queue.
"""

from __future__ import annotations


class AdmissionError(ValueError):
    """The caller asked for something the admission state cannot do."""

"""Device taints versus request tolerations.

Only the effects NoSchedule and NoExecute keep a device from being
allocated; None and unknown effects never do. A taint is tolerated when one
of the request's tolerations matches it: the toleration's effect is empty
or equal, its key is empty or equal, and the operator Exists matches any
value while Equal (or empty) needs the same value; an unknown operator never
matches (`allot.model.taints`, shared with node taints). Admin access does
not bypass taints.
"""

from __future__ import annotations

from collections.abc import Sequence

from allot.model.resource import DeviceTaint, DeviceToleration
from allot.model.taints import tolerates

BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def blocking(taints: Sequence[DeviceTaint]) -> tuple[DeviceTaint, ...]:
    """The taints that prevent allocation unless tolerated."""
    return tuple(t for t in taints if t.effect in BLOCKING_EFFECTS)


def all_tolerated(taints: Sequence[DeviceTaint], tolerations: Sequence[DeviceToleration]) -> bool:
    """Whether every blocking taint is tolerated by some toleration."""
    return all(any(tolerates(t, taint) for t in tolerations) for taint in taints)


__all__ = ["BLOCKING_EFFECTS", "all_tolerated", "blocking", "tolerates"]

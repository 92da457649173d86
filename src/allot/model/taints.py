"""Whether a toleration tolerates a taint: one rule for node taints and device taints.

Kubernetes applies the same matching to `core/v1` tolerations of node
taints and to DRA request tolerations of device taints: the toleration's
effect is empty or equal, its key is empty or equal, and operator Exists
matches any value while Equal (or empty) needs the same value; an unknown
operator never matches.
"""

from __future__ import annotations

from typing import Protocol


class TaintLike(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def value(self) -> str: ...

    @property
    def effect(self) -> str: ...


class TolerationLike(TaintLike, Protocol):
    @property
    def operator(self) -> str: ...


def tolerates(toleration: TolerationLike, taint: TaintLike) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator in ("Equal", ""):
        return toleration.value == taint.value
    return False

"""How well a set of devices used together is aligned: a level and a score.

A *unit* is the devices one claim (or one pod, over all its claims) uses.
Alignment is about devices of different kinds working together (a GPU
with its NIC, a GPU with the CPUs feeding it): for every device and every
other kind present in the unit, take the device's closest partner of that
kind (`places.relation`). Then

* level `pcieRoot`: every such pair is as close as it can be and at least
  one pair shares a PCIe root (GPU and NIC under one root, CPUs on their
  NUMA node);
* level `numaNode`: every pair shares at least the NUMA node (for GPU + CPU
  units the best there is);
* level `none`: some pair crosses sockets, or a device publishes no
  topology at all;
* no level (None): fewer than two kinds, nothing to align.

`score` is the mean closeness over those pairs, in [0, 1], so a unit with
one misaligned pair of eight scores better than one with all eight apart.
Alignments order by level first, then score (`alignment_value`): same
PCIe root > same NUMA node > across sockets.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from allot.scheduling.topology.places import APART, CLOSEST, Place, relation


class Level(enum.IntEnum):
    NONE = 0
    NUMA = 1
    PCIE = 2

    @property
    def label(self) -> str:
        return ("none", "numaNode", "pcieRoot")[self.value]


@dataclass(frozen=True, slots=True)
class Alignment:
    level: Level
    score: float
    pairs: int  # (device, other kind) pairs judged


def unit_alignment(places: Sequence[Place]) -> Alignment | None:
    """The alignment of devices used together; None when they are of fewer than two kinds."""
    by_kind: dict[str, list[Place]] = {}
    for place in places:
        by_kind.setdefault(place.kind, []).append(place)
    if len(by_kind) < 2:
        return None
    total = 0
    pairs = 0
    worst = CLOSEST
    shares_root = False
    for kind, members in by_kind.items():
        for place in members:
            for other_kind, others in by_kind.items():
                if other_kind == kind:
                    continue
                best = max(relation(place, other) for other in others) if place.known else APART
                if best == CLOSEST and place.roots and any(place.roots & o.roots for o in others):
                    shares_root = True
                total += best
                pairs += 1
                worst = min(worst, best)
    if worst == CLOSEST:
        level = Level.PCIE if shares_root else Level.NUMA
    elif worst == APART:
        level = Level.NONE
    else:
        level = Level.NUMA
    return Alignment(level, total / (CLOSEST * pairs), pairs)


def alignment_value(level: Level | None, score: float) -> float:
    """One number that orders alignments: the level, then the score (3 when there is nothing to align)."""
    return 3.0 if level is None else level.value + score

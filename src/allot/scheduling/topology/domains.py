"""Topology domains: nodes grouped by the labels a Kueue Topology names, level by level.

A Topology lists node labels from the outermost level in (block, rack,
hostname). A domain at level i is the tuple of a node's values for levels
0..i, so `("block-a", "rack-b")` is rack b of block a and racks of
different blocks never merge. Nodes that lack any of the labels, or that
the caller does not allow, belong to no domain, as Kueue ignores them.
Domains sort by their label values, which is the deterministic tie-break.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from allot.cluster.state import ClusterState
from allot.model.kueue import Topology
from allot.scheduling.framework import BoolArray

Domain = tuple[str, ...]


class Domains:
    """The domains of one Topology over the nodes of a ClusterState."""

    def __init__(self, state: ClusterState, topology: Topology, allowed: BoolArray | None = None) -> None:
        self.levels: list[str] = [level.node_label for level in topology.spec.levels]
        self.size = state.nodes.size
        self._paths: dict[int, Domain] = {}
        self._masks: dict[Domain, BoolArray] = {}
        for info in state.nodes.infos:
            if allowed is not None and not allowed[info.index]:
                continue
            values = [info.labels.get(label) for label in self.levels]
            if all(value is not None for value in values):
                self._paths[info.index] = tuple(v for v in values if v is not None)

    def level_index(self, label: str) -> int | None:
        return self.levels.index(label) if label in self.levels else None

    def at(self, level: int, within: Domain = ()) -> list[Domain]:
        """Every domain at `level` (0 = outermost) inside `within`, sorted."""
        prefix = len(within)
        found = {path[: level + 1] for path in self._paths.values() if path[:prefix] == within}
        return sorted(found)

    def of(self, node_index: int, level: int) -> Domain | None:
        path = self._paths.get(node_index)
        return path[: level + 1] if path is not None else None

    def mask(self, domain: Domain) -> BoolArray:
        """The nodes inside `domain` (every node of the topology for the empty domain); do not modify."""
        mask = self._masks.get(domain)
        if mask is None:
            mask = np.zeros(self.size, dtype=np.bool_)
            depth = len(domain)
            for index, path in self._paths.items():
                if path[:depth] == domain:
                    mask[index] = True
            self._masks[domain] = mask
        return mask

    def describe(self, domain: Domain) -> str:
        return domain[-1] if domain else "the topology"


def level_noun(label: str) -> str:
    """A readable name for a level label: `cloud.provider.com/topology-rack` -> `rack`."""
    if label == "kubernetes.io/hostname":
        return "node"
    name = label.rpartition("/")[2]
    return name.removeprefix("topology-") or label


def plural(noun: str) -> str:
    return noun + "es" if noun.endswith(("s", "x", "ch", "sh")) else noun + "s"


def describe_counts(counts: Sequence[tuple[str, int]], limit: int = 5) -> str:
    """`rack-a 5, rack-b 3, ... (4 more)`, most first."""
    ordered = sorted(counts, key=lambda item: (-item[1], item[0]))
    shown = ", ".join(f"{name} {count}" for name, count in ordered[:limit])
    rest = len(ordered) - limit
    return f"{shown}, ... ({rest} more)" if rest > 0 else shown

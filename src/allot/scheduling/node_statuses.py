"""Per-node reasons of a failed placement, worked out only when someone reads them.

A pod that fits nowhere leaves behind the mask filters' rejections (one
boolean array per plugin and reason) and the node filters' statuses. Most
readers want only kube-scheduler's one-line summary, which is a count per
reason and can be taken from the arrays directly; the per-node mapping
(for `--explain`, preemption and the planner) is built on first access.
Each node carries the reasons of the first plugin that rejected it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from allot.cluster.nodes import NodeInfo
from allot.scheduling.framework import BoolArray, Rejection
from allot.scheduling.status import Code, Status


class NodeStatuses(Mapping[str, Status]):
    """node name -> the status of the filter that rejected it; lazily built, with a cheap histogram."""

    __slots__ = ("_built", "_filtered", "_nodes", "_rejections")

    def __init__(
        self,
        rejections: Sequence[tuple[str, Rejection]],
        filtered: Mapping[int, Status],
        nodes: Sequence[NodeInfo],
    ) -> None:
        # Copies: a plugin may hand out an array it updates later, and reading happens later.
        self._rejections = [(plugin, Rejection(r.reason, r.nodes.copy(), r.code)) for plugin, r in rejections]
        # Node filters run only on nodes every mask filter passed; they have the last word.
        self._filtered = dict(filtered)
        self._nodes = nodes
        self._built: dict[str, Status] | None = None

    def _by_plugin(self) -> list[tuple[str, list[Rejection]]]:
        grouped: dict[str, list[Rejection]] = {}
        for plugin, rejection in self._rejections:
            grouped.setdefault(plugin, []).append(rejection)
        return list(grouped.items())

    def _build(self) -> dict[str, Status]:
        if self._built is None:
            statuses: dict[int, Status] = {}
            size = len(self._nodes)
            for plugin, rejections in self._by_plugin():
                union = np.zeros(size, dtype=np.bool_)
                for rejection in rejections:
                    union |= rejection.nodes
                for raw in np.flatnonzero(union):
                    index = int(raw)
                    if index in statuses:
                        continue
                    hits = [r for r in rejections if r.nodes[index]]
                    statuses[index] = Status(max(r.code for r in hits), tuple(r.reason for r in hits), plugin)
            statuses.update(self._filtered)
            self._built = {self._nodes[i].name: s for i, s in sorted(statuses.items())}
        return self._built

    def __getitem__(self, name: str) -> Status:
        return self._build()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._build())

    def __len__(self) -> int:
        return len(self._build())

    def plugins(self) -> frozenset[str]:
        """The plugins that rejected some node ("" for nodes the caller did not allow)."""
        return frozenset(p for p, _ in self._rejections) | {s.plugin for s in self._filtered.values()}

    def indices_with(self, code: Code) -> list[int]:
        """Indices of the nodes whose status has this code, in index order, from the arrays."""
        if self._built is not None:
            index_of = {info.name: info.index for info in self._nodes}
            return sorted(index_of[name] for name, status in self._built.items() if status.code == code)
        size = len(self._nodes)
        assigned: BoolArray = np.zeros(size, dtype=np.bool_)
        found: BoolArray = np.zeros(size, dtype=np.bool_)
        for index, status in self._filtered.items():
            assigned[index] = True
            found[index] = status.code == code
        for _, rejections in self._by_plugin():
            # A node's code is the highest among the rejections of its first plugin that hit it.
            highest = np.full(size, -1, dtype=np.int64)
            union = np.zeros(size, dtype=np.bool_)
            for rejection in rejections:
                highest = np.where(rejection.nodes, np.maximum(highest, int(rejection.code)), highest)
                union |= rejection.nodes
            fresh = union & ~assigned
            found |= fresh & (highest == int(code))
            assigned |= union
        return [int(i) for i in np.flatnonzero(found)]

    def histogram(self) -> Counter[str]:
        """How many nodes give each reason (a node counts a reason once), from the arrays."""
        if self._built is not None:
            return count_reasons(self._built.values())
        size = len(self._nodes)
        assigned: BoolArray = np.zeros(size, dtype=np.bool_)
        for index in self._filtered:
            assigned[index] = True
        counts = count_reasons(self._filtered.values())
        for _, rejections in self._by_plugin():
            by_reason: dict[str, BoolArray] = {}
            for rejection in rejections:
                mask = by_reason.get(rejection.reason)
                by_reason[rejection.reason] = (
                    rejection.nodes.copy() if mask is None else mask | rejection.nodes
                )
            union = np.zeros(size, dtype=np.bool_)
            for mask in by_reason.values():
                union |= mask
            fresh = union & ~assigned
            if fresh.any():
                for reason, mask in by_reason.items():
                    count = int(np.count_nonzero(mask & fresh))
                    if count:
                        counts[reason] += count
            assigned |= union
        return counts


def count_reasons(statuses: Iterable[Status]) -> Counter[str]:
    """How many statuses give each reason (a status counts a reason once)."""
    counts: Counter[str] = Counter()
    for status in statuses:
        for reason in dict.fromkeys(status.reasons):
            counts[reason] += 1
    return counts

"""The node table: every node's allocatable and requested resources as arrays.

Nodes are sorted by name and addressed by their index in that order, which
is also the deterministic tie-break everywhere in placement. Each resource
has two int64 arrays (allocatable, requested) so a filter or score can look
at all nodes in one vector operation instead of a Python loop per node.
Writes go through `add_usage` so the cluster's journal can undo them.

The API server accepts quantities far past int64 (any decimal quantity), so
the arrays hold every amount saturated at `AMOUNT_CAP` (2^53: 8 PiB of
memory, 9 * 10^12 CPUs), which keeps every sum and product the filters and
scores compute inside int64 and exact in float64. The exact amounts stay in
Python integers (`NodeInfo.allocatable`, `requested_total`), and a filter
that meets a saturated cell decides that node exactly (`saturated`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from allot.cluster.journal import Journal
from allot.cluster.resources import CPU, MEMORY, PODS, amounts
from allot.model.core import Node, Taint

# Keys of the non-zero scoring sums among the saturated cells (not resource names: those hold no space).
NONZERO_CPU = "nonzero cpu"
NONZERO_MEMORY = "nonzero memory"

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

AMOUNT_CAP = 2**53


def saturate(amount: int) -> int:
    """`amount` within [-AMOUNT_CAP, AMOUNT_CAP], the range the arrays hold."""
    return AMOUNT_CAP if amount > AMOUNT_CAP else -AMOUNT_CAP if amount < -AMOUNT_CAP else amount


@dataclass(slots=True)
class NodeInfo:
    """What placement needs of one node that does not change while pods come and go."""

    index: int
    node: Node
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    allocatable: dict[str, int]
    pods: set[str] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.node.name


class NodeTable:
    """Allocatable and requested amounts per resource, one array slot per node."""

    def __init__(self, nodes: Iterable[Node], journal: Journal) -> None:
        ordered = sorted(nodes, key=lambda n: n.name)
        self.journal = journal
        self.infos: list[NodeInfo] = []
        self.index: dict[str, int] = {}
        for i, node in enumerate(ordered):
            allocatable = amounts(node.status.allocatable)
            self.infos.append(NodeInfo(i, node, dict(node.metadata.labels), node.spec.taints, allocatable))
            self.index[node.name] = i
        self.size = len(self.infos)
        names: set[str] = {CPU, MEMORY, PODS}
        for info in self.infos:
            names.update(info.allocatable)
        self.allocatable: dict[str, IntArray] = {}
        self.requested: dict[str, IntArray] = {}
        # Exact totals of the cells whose array value is saturated, by (column, node index).
        self._beyond: dict[tuple[str, int], int] = {}
        # Columns with an allocatable amount past AMOUNT_CAP on some node.
        self._huge: set[str] = set()
        for name in sorted(names):
            self._add_column(name)
        # For scoring, pods that request nothing count a small default (kube-scheduler's non-zero requests).
        self.nonzero_cpu: IntArray = np.zeros(self.size, dtype=np.int64)
        self.nonzero_memory: IntArray = np.zeros(self.size, dtype=np.int64)
        self.schedulable: BoolArray = np.array(
            [not n.node.spec.unschedulable for n in self.infos], dtype=np.bool_
        )
        self.ready: BoolArray = np.array([n.node.ready for n in self.infos], dtype=np.bool_)
        # Per label key: each node's domain id (-1 without the label) and the values by id.
        self._domains: dict[str, tuple[IntArray, list[str]]] = {}

    def domains(self, key: str) -> tuple[IntArray, list[str]]:
        """Each node's topology domain for label `key`: an id per node (-1 where the label is
        missing) and the label value of each id, ids in order of first appearance by node index."""
        found = self._domains.get(key)
        if found is None:
            ids = np.full(self.size, -1, dtype=np.int64)
            values: list[str] = []
            seen: dict[str, int] = {}
            for info in self.infos:
                value = info.labels.get(key)
                if value is None:
                    continue
                known = seen.get(value)
                if known is None:
                    known = seen[value] = len(values)
                    values.append(value)
                ids[info.index] = known
            found = self._domains[key] = (ids, values)
        return found

    def _add_column(self, name: str) -> None:
        exact = [n.allocatable.get(name, 0) for n in self.infos]
        if any(abs(a) > AMOUNT_CAP for a in exact):
            self._huge.add(name)
        self.allocatable[name] = np.array([saturate(a) for a in exact], dtype=np.int64)
        self.requested[name] = np.zeros(self.size, dtype=np.int64)

    def saturated(self, name: str) -> bool:
        """Whether some cell of column `name` (allocatable or requested) holds a saturated amount:
        then comparisons on the arrays are only approximate, and exact ones use `free_exact`."""
        return name in self._huge or any(column == name for column, _ in self._beyond)

    def requested_total(self, name: str, index: int) -> int:
        """The exact amount of `name` the pods on node `index` request."""
        exact = self._beyond.get((name, index))
        if exact is not None:
            return exact
        column = self.requested.get(name)
        return int(column[index]) if column is not None else 0

    def free_exact(self, name: str, index: int) -> int:
        """Allocatable minus requested for `name` on node `index`, exactly."""
        return self.infos[index].allocatable.get(name, 0) - self.requested_total(name, index)

    def _add(self, column: IntArray, key: tuple[str, int], delta: int) -> None:
        index = key[1]
        exact = self._beyond.pop(key, None)
        total = (exact if exact is not None else int(column[index])) + delta
        if -AMOUNT_CAP <= total <= AMOUNT_CAP:
            column[index] = total
        else:
            column[index] = saturate(total)
            self._beyond[key] = total

    def free(self, name: str) -> IntArray:
        """Allocatable minus requested for `name` (zeros for a resource no node has)."""
        if name not in self.allocatable:
            return np.zeros(self.size, dtype=np.int64)
        return self.allocatable[name] - self.requested[name]

    def add_usage(self, index: int, usage: Mapping[str, int], nonzero: tuple[int, int], sign: int) -> None:
        """Add (sign=+1) or remove (sign=-1) one pod's requests on node `index`; journaled."""
        for name in usage:
            if name not in self.requested:
                # A resource no node offers: track its use so invariants can see it, capacity stays 0.
                self._add_column(name)
        self._apply(index, usage, nonzero, sign)
        self.journal.record(lambda: self._apply(index, usage, nonzero, -sign))

    def _apply(self, index: int, usage: Mapping[str, int], nonzero: tuple[int, int], sign: int) -> None:
        add = self._add
        for name, value in usage.items():
            add(self.requested[name], (name, index), sign * value)
        add(self.nonzero_cpu, (NONZERO_CPU, index), sign * nonzero[0])
        add(self.nonzero_memory, (NONZERO_MEMORY, index), sign * nonzero[1])

    def set_ready(self, index: int, ready: bool) -> None:
        old = bool(self.ready[index])
        self.ready[index] = ready
        self.journal.record(lambda: self.ready.__setitem__(index, old))

    def set_schedulable(self, index: int, schedulable: bool) -> None:
        old = bool(self.schedulable[index])
        self.schedulable[index] = schedulable
        self.journal.record(lambda: self.schedulable.__setitem__(index, old))

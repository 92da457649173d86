"""The node table: every node's allocatable and requested resources as arrays.

Nodes are sorted by name and addressed by their index in that order, which
is also the deterministic tie-break everywhere in placement. Each resource
has two int64 arrays (allocatable, requested) so a filter or score can look
at all nodes in one vector operation instead of a Python loop per node.
Writes go through `add_usage` so the cluster's journal can undo them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from allot.cluster.journal import Journal
from allot.cluster.resources import CPU, MEMORY, PODS, amounts
from allot.model.core import Node, Taint

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


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
        for name in sorted(names):
            self._add_column(name)
        # For scoring, pods that request nothing count a small default (kube-scheduler's non-zero requests).
        self.nonzero_cpu: IntArray = np.zeros(self.size, dtype=np.int64)
        self.nonzero_memory: IntArray = np.zeros(self.size, dtype=np.int64)
        self.schedulable: BoolArray = np.array(
            [not n.node.spec.unschedulable for n in self.infos], dtype=np.bool_
        )
        self.ready: BoolArray = np.array([n.node.ready for n in self.infos], dtype=np.bool_)

    def _add_column(self, name: str) -> None:
        self.allocatable[name] = np.array([n.allocatable.get(name, 0) for n in self.infos], dtype=np.int64)
        self.requested[name] = np.zeros(self.size, dtype=np.int64)

    def free(self, name: str) -> IntArray:
        """Allocatable minus requested for `name` (zeros for a resource no node has)."""
        if name not in self.allocatable:
            return np.zeros(self.size, dtype=np.int64)
        return self.allocatable[name] - self.requested[name]

    def add_usage(self, index: int, usage: Mapping[str, int], nonzero: tuple[int, int], sign: int) -> None:
        """Add (sign=+1) or remove (sign=-1) one pod's requests on node `index`; journaled."""
        for name, value in usage.items():
            if name not in self.requested:
                # A resource no node offers: track its use so invariants can see it, capacity stays 0.
                self._add_column(name)
            self.requested[name][index] += sign * value
        self.nonzero_cpu[index] += sign * nonzero[0]
        self.nonzero_memory[index] += sign * nonzero[1]
        self.journal.record(lambda: self._revert(index, usage, nonzero, sign))

    def _revert(self, index: int, usage: Mapping[str, int], nonzero: tuple[int, int], sign: int) -> None:
        for name, value in usage.items():
            self.requested[name][index] -= sign * value
        self.nonzero_cpu[index] -= sign * nonzero[0]
        self.nonzero_memory[index] -= sign * nonzero[1]

    def set_ready(self, index: int, ready: bool) -> None:
        old = bool(self.ready[index])
        self.ready[index] = ready
        self.journal.record(lambda: self.ready.__setitem__(index, old))

    def set_schedulable(self, index: int, schedulable: bool) -> None:
        old = bool(self.schedulable[index])
        self.schedulable[index] = schedulable
        self.journal.record(lambda: self.schedulable.__setitem__(index, old))

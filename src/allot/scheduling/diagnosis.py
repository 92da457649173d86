"""Why a pod fits nowhere: per-node reasons and kube-scheduler's one-line summary.

The summary has kube-scheduler's shape, so people who know its events read
allot's the same way: "0/500 nodes are available: 3 Insufficient cpu,
497 cannot allocate all claims." Each node contributes the reasons of the
first filter that rejected it; the "count reason" strings are sorted. A
cluster without nodes gets kube-scheduler's "no nodes available to schedule
pods", with no preemption account (kube-scheduler runs no plugin then).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from allot.scheduling.node_statuses import NodeStatuses, count_reasons
from allot.scheduling.status import Status

# What kube-scheduler says when the cluster has no node at all (ErrNoNodesAvailable).
NO_NODES = "no nodes available to schedule pods"


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The outcome of filtering for one pod that fit no node."""

    total_nodes: int
    # node name -> the status of the filter that rejected it
    node_statuses: Mapping[str, Status] = field(default_factory=dict)
    # a reason that applies before any node is looked at (claim missing, class missing)
    pre_filter: Status | None = None
    # outcome of preemption, if it was tried
    preemption: str = ""

    def histogram(self) -> Counter[str]:
        if isinstance(self.node_statuses, NodeStatuses):
            return self.node_statuses.histogram()
        return count_reasons(self.node_statuses.values())

    def message(self) -> str:
        if self.total_nodes == 0 and self.pre_filter is None:
            return NO_NODES  # kube-scheduler's words, before any plugin or preemption runs
        head = f"0/{self.total_nodes} nodes are available"
        if self.pre_filter is not None:
            text = f"{head}: {self.pre_filter.message()}."
        else:
            parts = sorted(f"{count} {reason}" for reason, count in self.histogram().items())
            text = f"{head}: {', '.join(parts)}." if parts else f"{head}."
        if self.preemption:
            text += f" {self.preemption}"
        return text

"""What every placement policy for shared GPUs gets and gives.

A policy answers two questions for one pod:

* `node_scores(ctx, pod, nodes)`: a score per feasible node, higher is
  better (the node choice; the GpuPlacement plugin hands it to the
  scheduler as its ScorePlugin score);
* `choose(ctx, pod, node)`: the GPU slots it wants on the chosen node, in
  preference order (the GPU choice; handed to the DRA allocator's choice
  hook, which keeps the allocation that uses them).

Policies copied from the FGD paper's simulator return the integer scores
its kube-scheduler plugins return (`integer_scores`), so that ties, which
the simulator breaks at random, stay ties; allot's own policies return
floats.

`PodView` is the pod's demand resolved against the table: the GPUs its
request shape selects, what one allocation consumes on each, and which
GPUs can take it now (trust-domain exclusions already applied).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from allot.scheduling.sharing.demand import Demand
from allot.scheduling.sharing.table import Needs, SharedGpuTable

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
MAX_SCORE = 100


@dataclass(slots=True)
class Context:
    """The cluster as policies see it."""

    table: SharedGpuTable
    cpu_free: Callable[[IntArray], IntArray]
    # Normalisers (the simulator's MaxSpecCpu / MaxSpecGpu): the largest node of the cluster.
    cpu_max: int
    gpu_max_milli: int
    rng: np.random.Generator
    # Allocatable CPU (milli) per node.
    cpu_capacity: IntArray | None = None


@dataclass(slots=True)
class PodView:
    """One pod's demand against the table."""

    demand: Demand
    needs: Needs | None
    # (N, G): GPUs the pod's request could use now, trust domains aside; all False for CPU-only pods.
    fit: BoolArray
    # (N, G): GPUs the pod's trust domain allows; None without isolation.
    allowed: BoolArray | None = None
    _usable: BoolArray | None = None

    @property
    def usable(self) -> BoolArray:
        """GPUs that can take the pod now: `fit` within what the trust domain allows."""
        if self._usable is None:
            self._usable = self.fit if self.allowed is None else self.fit & self.allowed
        return self._usable

    @property
    def count(self) -> int:
        return self.demand.count

    @property
    def cpu(self) -> int:
        return self.demand.cpu

    def milli(self, nodes: IntArray) -> IntArray:
        """Milli-GPUs one allocation takes on each GPU of `nodes` (k, G)."""
        if self.needs is None:
            return np.zeros((len(nodes), 1), dtype=np.int64)
        result: IntArray = self.needs.milli[nodes]
        return result

    def total_milli(self, nodes: IntArray) -> IntArray:
        """The pod's whole GPU request in milli-GPUs, per node (count x per-GPU share)."""
        if self.needs is None or self.count == 0:
            return np.zeros(len(nodes), dtype=np.int64)
        per_gpu = np.where(self.usable[nodes], self.needs.milli[nodes], 0).max(axis=1)
        result: IntArray = per_gpu * self.count
        return result


class Policy(Protocol):
    name: str
    integer_scores: bool

    def node_scores(self, ctx: Context, pod: PodView, nodes: IntArray) -> FloatArray: ...

    def choose(self, ctx: Context, pod: PodView, node: int) -> list[int]: ...


def best_fit_gpus(ctx: Context, pod: PodView, node: int) -> list[int]:
    """The open-gpu-share default: the usable GPUs with least free share first, lower index on ties."""
    usable = pod.usable[node]
    free = ctx.table.share_free[node]
    order = np.argsort(np.where(usable, free, np.iinfo(np.int64).max), kind="stable")
    return [int(g) for g in order[: max(pod.count, 1)] if usable[g]]


def sigmoid_score(delta: FloatArray, levels: int = MAX_SCORE) -> FloatArray:
    """The FGD plugin's score: int(100 * sigmoid(-delta / 1000)), delta in milli-GPUs; -1 for +inf."""
    finite = np.isfinite(delta)
    x = np.clip(np.where(finite, delta, 0.0) / 1000.0, -700.0, 700.0)
    score = np.floor(levels / (1.0 + np.exp(x)))
    result: FloatArray = np.where(finite, score, -1.0)
    return result

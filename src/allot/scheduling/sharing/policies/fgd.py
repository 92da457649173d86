"""FGD, Fragmentation Gradient Descent (Weng et al., ATC '23): place where expected fragmentation grows least.

For the arriving pod, every feasible node (and for a one-GPU pod every GPU
on it that can take it) is tried hypothetically and scored by the change
of the node's fragmentation under the target workload (`fragmentation`).
As the authors' plugin does, the score is int(100 * sigmoid(-dF / 1000))
and the GPU with the best score on the chosen node is taken (first one on
ties); several-GPU pods take the least-free fitting GPUs.

Work is cached per (pod shape, node): the table bumps a node's version
whenever its GPUs or pods change, and only nodes whose version moved since
a shape was last scored are computed again, in one vectorised pass. One
placement changes one node, so a frequent shape recomputes a handful of
nodes per pod.

Without a target workload, the classes are learned from the pods the
plugin sees (`workload.ClassCounter`); every rebuild drops the caches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from allot.scheduling.sharing.demand import Demand
from allot.scheduling.sharing.fragmentation import FragmentationModel
from allot.scheduling.sharing.policies.base import (
    Context,
    FloatArray,
    IntArray,
    PodView,
    Policy,
    sigmoid_score,
)
from allot.scheduling.sharing.stranding import BlendModel, StrandingModel
from allot.scheduling.sharing.table import SharedGpuTable
from allot.scheduling.sharing.workload import DEFAULT_THRESHOLD, ClassCounter, TargetWorkload

_MAX_ENTRIES = 1024
MEASURES: dict[str, type[FragmentationModel]] = {
    "fgd": FragmentationModel,
    "stranded": StrandingModel,
    "blend": BlendModel,
}


@dataclass(slots=True)
class _Entry:
    """Cached deltas of one pod shape: per node (and GPU), valid while the node's version is `stamp`."""

    delta: FloatArray
    chosen: IntArray | None
    stamp: IntArray


class FGD:
    name = "FGD"
    integer_scores = True

    def __init__(
        self,
        workload: TargetWorkload | None = None,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        quantize: bool = True,
        secondary: Policy | None = None,
        gpu_best_fit: bool = False,
        levels: int = 100,
        measure: str = "fgd",
    ) -> None:
        if measure not in MEASURES:
            raise ValueError(f"FGD measure: expected one of {', '.join(MEASURES)}, got {measure!r}")
        self.measure = measure
        self.levels = levels
        self.quantize = quantize
        self.secondary = secondary
        self.gpu_best_fit = gpu_best_fit
        self.integer_scores = quantize and secondary is None
        self.fixed = workload
        self.counter = ClassCounter(threshold) if workload is None else None
        self._model: FragmentationModel | None = None
        self._table: SharedGpuTable | None = None
        self._cache: dict[tuple[int, object], _Entry] = {}

    # -- the target workload ----------------------------------------------------------

    def observe(self, pod_key: str, demand: Demand) -> None:
        """A pod arrived; with a learned workload this may rebuild the classes."""
        if self.counter is not None and self.counter.observe(pod_key, demand):
            self._model = None
            self._cache.clear()

    @property
    def workload(self) -> TargetWorkload:
        if self.fixed is not None:
            return self.fixed
        assert self.counter is not None
        return self.counter.workload

    def model(self, ctx: Context) -> FragmentationModel:
        if self._model is None or self._table is not ctx.table:
            self._model = MEASURES[self.measure](ctx.table, self.workload, ctx.cpu_free)
            self._table = ctx.table
            self._cache.clear()
        return self._model

    # -- deltas, cached per shape and node ------------------------------------------------

    def deltas(self, ctx: Context, pod: PodView, nodes: IntArray) -> tuple[FloatArray, IntArray | None]:
        """dF for `nodes`: (k, G) for one-GPU pods (+inf where the GPU cannot take it), else (k,)."""
        model = self.model(ctx)
        table = ctx.table
        count = pod.count
        entry = self._cache.get(pod.demand.key)
        if entry is None:
            if len(self._cache) >= _MAX_ENTRIES:
                self._cache.clear()
            shape = table.valid.shape if count == 1 else (table.size,)
            entry = self._cache[pod.demand.key] = _Entry(
                delta=np.full(shape, np.inf),
                chosen=np.full((table.size, count), -1, dtype=np.int64) if count > 1 else None,
                stamp=np.full(table.size, -1, dtype=np.int64),
            )
        stale = nodes[entry.stamp[nodes] != table.version[nodes]]
        if stale.size:
            fit = pod.fit
            result = model.deltas(stale, pod.needs, fit, count, pod.cpu)
            entry.delta[stale] = result.delta
            if entry.chosen is not None and result.chosen is not None:
                entry.chosen[stale] = result.chosen
            entry.stamp[stale] = table.version[stale]
        delta = entry.delta[nodes]
        chosen = entry.chosen[nodes] if entry.chosen is not None else None
        if pod.allowed is not None:
            allowed = pod.allowed[nodes]
            if count == 1:
                delta = np.where(allowed, delta, np.inf)
            elif count > 1:
                # Exclusions change which GPUs a node would give; those nodes are computed afresh.
                limited = ~allowed.all(axis=1) & table.valid[nodes].any(axis=1)
                if limited.any():
                    rows = nodes[limited]
                    fresh = model.deltas(rows, pod.needs, pod.usable, count, pod.cpu)
                    delta = delta.copy()
                    delta[limited] = fresh.delta
                    if chosen is not None and fresh.chosen is not None:
                        chosen = chosen.copy()
                        chosen[limited] = fresh.chosen
        return delta, chosen

    # -- the policy ---------------------------------------------------------------------

    def node_scores(self, ctx: Context, pod: PodView, nodes: IntArray) -> FloatArray:
        delta, _ = self.deltas(ctx, pod, nodes)
        if not self.quantize:
            best = delta.min(axis=1) if pod.count == 1 else delta
            exact: FloatArray = np.where(np.isfinite(best), -best, -1e18)
            return exact
        score = sigmoid_score(delta, self.levels)
        if pod.count == 1:
            score = score.max(axis=1)
        if self.secondary is not None:
            # Within one integer FGD score, the secondary policy decides (its 0-100 squeezed below 1).
            score = score + 0.009 * np.clip(self.secondary.node_scores(ctx, pod, nodes), 0, 100)
        result: FloatArray = score
        return result

    def choose(self, ctx: Context, pod: PodView, node: int) -> list[int]:
        if pod.count == 0:
            return []
        delta, chosen = self.deltas(ctx, pod, np.array([node], dtype=np.int64))
        if pod.count > 1:
            return [int(g) for g in chosen[0]] if chosen is not None and chosen[0, 0] >= 0 else []
        if not self.quantize:
            row = delta[0]
            return [int(np.argmin(row))] if np.isfinite(row).any() else []
        score = sigmoid_score(delta[0], self.levels)
        if score.max() < 0:
            return []
        if self.gpu_best_fit:
            # Among the GPUs with the best score, the one with least free share.
            best = score == score.max()
            free = np.where(best, ctx.table.share_free[node], np.iinfo(np.int64).max)
            return [int(np.argmin(free))]
        return [int(np.argmax(score))]

"""GPU packing (the FGD paper's "Packing"): fill GPUs that are already shared, then used nodes, then idle ones.

Simulator `gpu_packing_score.go`, with the GPUs the pod would take chosen
least-free first:

* the pod fits on GPUs already in use: 100 - (sum of their free percent) / 10,
  at least 50;
* it needs fully free GPUs on a node that is partly used: 50 - number of
  such GPUs, at least 33;
* the node is idle: 33 - its number of GPUs, at least that number.

CPU-only pods score 0 everywhere. GPU inside the node: best fit.
"""

from __future__ import annotations

import numpy as np

from allot.scheduling.sharing.fragmentation import pick_least_free
from allot.scheduling.sharing.policies.base import (
    MAX_SCORE,
    Context,
    FloatArray,
    IntArray,
    PodView,
    best_fit_gpus,
)
from allot.scheduling.sharing.table import MILLI


class Packing:
    name = "Packing"
    integer_scores = True

    def node_scores(self, ctx: Context, pod: PodView, nodes: IntArray) -> FloatArray:
        if pod.count == 0:
            return np.zeros(len(nodes))
        table = ctx.table
        milli = table.milli_free[nodes]
        valid = table.valid[nodes]
        gpus = valid.sum(axis=1)
        fully_free = ((milli == MILLI) & valid).sum(axis=1)
        chosen = pick_least_free(table.share_free[nodes], pod.usable[nodes], pod.count)
        rows = np.arange(len(nodes))[:, None]
        picked = np.where(chosen >= 0, milli[rows, np.maximum(chosen, 0)], 0)
        free_used = (picked == MILLI).sum(axis=1)
        shared_free_percent = (picked * 100 // MILLI).sum(axis=1)
        idle = np.maximum(MAX_SCORE // 3 - fully_free, fully_free)
        partly = np.maximum(MAX_SCORE // 2 - free_used, MAX_SCORE // 3)
        shared = np.maximum(MAX_SCORE - shared_free_percent // 10, MAX_SCORE // 2)
        score = np.where(fully_free == gpus, idle, np.where(free_used > 0, partly, shared))
        result: FloatArray = score.astype(np.float64)
        return result

    def choose(self, ctx: Context, pod: PodView, node: int) -> list[int]:
        return best_fit_gpus(ctx, pod, node)

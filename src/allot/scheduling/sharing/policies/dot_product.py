"""DotProduct (Tetris-style, the FGD paper's "DotProd"): smallest dot product of free and requested resources.

Simulator `dot_product_score.go` with dimension extension `merge` and
normalisation `max`: node vector (free CPU, total free GPU milli), pod
vector (CPU, total GPU milli), both divided by the largest node of the
cluster; score = int(100 * (1 - dot / 2)). GPU inside the node: best fit
(with `merge` the plugin names no GPU and open-gpu-share picks the
tightest one).
"""

from __future__ import annotations

import numpy as np

from allot.scheduling.sharing.policies.base import (
    MAX_SCORE,
    Context,
    FloatArray,
    IntArray,
    PodView,
    best_fit_gpus,
)


class DotProduct:
    name = "DotProduct"
    integer_scores = True

    def node_scores(self, ctx: Context, pod: PodView, nodes: IntArray) -> FloatArray:
        cpu_max, gpu_max = max(ctx.cpu_max, 1), max(ctx.gpu_max_milli, 1)
        free_cpu = ctx.cpu_free(nodes) / cpu_max
        free_gpu = ctx.table.milli_free[nodes].sum(axis=1) / gpu_max
        dot = free_cpu * (pod.cpu / cpu_max) + free_gpu * (pod.total_milli(nodes) / gpu_max)
        result: FloatArray = np.trunc(MAX_SCORE * (1.0 - dot / 2.0))
        return result

    def choose(self, ctx: Context, pod: PodView, node: int) -> list[int]:
        return best_fit_gpus(ctx, pod, node)

"""BestFit (the FGD paper's baseline): the node with the least CPU and GPU left after placing the pod.

Score (simulator `best_fit_score.go`): 100 * (1 - sum_i w_i (free_i -
request_i) / max_i) over (CPU, total free GPU milli), weights 0.5/0.5,
normalised by the largest node of the cluster; truncated to an integer.
GPU inside the node: best fit (least free share that fits).
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


class BestFit:
    name = "BestFit"
    integer_scores = True

    def node_scores(self, ctx: Context, pod: PodView, nodes: IntArray) -> FloatArray:
        cpu = (ctx.cpu_free(nodes) - pod.cpu) / max(ctx.cpu_max, 1)
        gpu = (ctx.table.milli_free[nodes].sum(axis=1) - pod.total_milli(nodes)) / max(ctx.gpu_max_milli, 1)
        result: FloatArray = np.trunc(MAX_SCORE * (1.0 - (0.5 * cpu + 0.5 * gpu)))
        return result

    def choose(self, ctx: Context, pod: PodView, node: int) -> list[int]:
        return best_fit_gpus(ctx, pod, node)

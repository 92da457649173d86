"""GPU clustering (the FGD paper's "Clustering"): keep pods of one GPU-affinity kind together.

Simulator `gpu_clustering_score.go`. A pod's kind is `share-gpu` (part of
one GPU) or `<n>-gpu`; nodes are ranked in four tiers by the kinds of the
pods already on them: only this kind (75-100), this kind among others
(50-75), idle (25-50), other kinds only (0-25); inside a tier the more
GPU is allocated the higher: 25 * (max - free) / max, integer arithmetic.
CPU-only pods score 0 everywhere. GPU inside the node: best fit.
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
from allot.scheduling.sharing.table import MILLI


def pod_tag(ctx: Context, pod: PodView, nodes: IntArray) -> str:
    if pod.count == 1 and pod.needs is not None:
        milli = np.where(pod.usable[nodes], pod.needs.milli[nodes], MILLI)
        if milli.size and int(milli.min()) < MILLI:
            return "share-gpu"
    return f"{pod.count}-gpu"


class Clustering:
    name = "Clustering"
    integer_scores = True

    def node_scores(self, ctx: Context, pod: PodView, nodes: IntArray) -> FloatArray:
        if pod.count == 0:
            return np.zeros(len(nodes))
        table = ctx.table
        gpu_max = max(ctx.gpu_max_milli, 1)
        free = table.milli_free[nodes].sum(axis=1)
        base = (MAX_SCORE // 4) * (gpu_max - free) // gpu_max
        same = table.tag_counts(pod_tag(ctx, pod, nodes))[nodes] > 0
        kinds = table.tag_kinds[nodes]
        tier = np.where(
            same,
            np.where(kinds == 1, MAX_SCORE * 3 // 4, MAX_SCORE * 2 // 4),
            np.where(kinds == 0, MAX_SCORE // 4, 0),
        )
        result: FloatArray = (base + tier).astype(np.float64)
        return result

    def choose(self, ctx: Context, pod: PodView, node: int) -> list[int]:
        return best_fit_gpus(ctx, pod, node)

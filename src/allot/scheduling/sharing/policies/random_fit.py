"""Random (the FGD paper's "Random"): a random feasible node and a random fitting GPU on it.

Every feasible node gets a uniform random score, so the best is a uniform
random pick (the simulator's RandomScore gives one random node 100). The
random stream is the caller's (plugin argument `seed`).
"""

from __future__ import annotations

import numpy as np

from allot.scheduling.sharing.policies.base import Context, FloatArray, IntArray, PodView


class RandomFit:
    name = "Random"
    integer_scores = False

    def node_scores(self, ctx: Context, pod: PodView, nodes: IntArray) -> FloatArray:
        scores: FloatArray = ctx.rng.random(len(nodes))
        return scores

    def choose(self, ctx: Context, pod: PodView, node: int) -> list[int]:
        usable = np.flatnonzero(pod.usable[node])
        if usable.size == 0:
            return []
        picked = ctx.rng.permutation(usable)[: max(pod.count, 1)]
        return [int(g) for g in picked]

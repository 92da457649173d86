"""Weighted max-min fair shares of the contended GPUs, and how close tenants came to them.

At every sample the cluster has C GPUs on ready nodes and tenant i demands
d_i GPU-equivalents (its jobs that arrived and have not finished, running
or pending) with weight w_i. Its fair share f_i is the weighted max-min
(water-filling) allocation:

    f_i = min(d_i, λ · w_i),   with λ the largest value such that Σ_i f_i ≤ C

so a tenant that asks for less than its weighted part gets all it asks,
and what it leaves is split among the others by weight. When Σ d_i ≤ C
everyone's fair share is its demand. The *contended period* is the set
of samples with Σ d_i > C; over it, tenant i's fair-share ratio is

    r_i = ∫ a_i dt / ∫ f_i dt

with a_i the GPU-equivalents it actually held. r_i ≥ 0.9 means the tenant
got at least 90 % of the GPU time it was entitled to.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from allot.sim.stats import durations

FloatArray = npt.NDArray[np.float64]
_EPS = 1e-9


def weighted_max_min(capacity: float, demands: Sequence[float], weights: Sequence[float]) -> list[float]:
    """Water-filling: each tenant gets min(demand, λ·weight), Σ ≤ capacity, λ as large as possible."""
    shares = [0.0] * len(demands)
    active = [i for i, d in enumerate(demands) if d > _EPS and weights[i] > 0]
    left = max(capacity, 0.0)
    while active and left > _EPS:
        total_weight = sum(weights[i] for i in active)
        level = left / total_weight
        satisfied = [i for i in active if demands[i] - shares[i] <= level * weights[i] + _EPS]
        if not satisfied:
            for i in active:
                shares[i] += level * weights[i]
            break
        for i in satisfied:
            left -= demands[i] - shares[i]
            shares[i] = demands[i]
        active = [i for i in active if i not in satisfied]
    return shares


def fair_share_series(capacity: FloatArray, demand: FloatArray, weights: Sequence[float]) -> FloatArray:
    """f[sample, tenant] for a series of capacities and demands [sample, tenant]."""
    shares = np.zeros_like(demand)
    for k in range(demand.shape[0]):
        shares[k] = weighted_max_min(float(capacity[k]), list(demand[k]), weights)
    return shares


def contended(capacity: FloatArray, demand: FloatArray) -> npt.NDArray[np.bool_]:
    """Samples at which tenants together asked for more GPUs than there were."""
    return np.asarray(demand.sum(axis=1) > capacity + _EPS)


def share_ratios(
    times: FloatArray,
    end: float,
    capacity: FloatArray,
    demand: FloatArray,
    allocated: FloatArray,
    weights: Sequence[float],
) -> tuple[FloatArray, FloatArray, float]:
    """(GPU-seconds held, fair GPU-seconds) per tenant over the contended period, and its length."""
    span = durations(times, end)
    mask = contended(capacity, demand)
    if not mask.any():
        zeros = np.zeros(demand.shape[1])
        return zeros, zeros.copy(), 0.0
    fair = fair_share_series(capacity[mask], demand[mask], weights)
    weight = span[mask][:, None]
    return (allocated[mask] * weight).sum(axis=0), (fair * weight).sum(axis=0), float(span[mask].sum())

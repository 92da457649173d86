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

import itertools
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from allot.sim.records import DemandClasses
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


# -- fair shares of the GPUs each tenant's work can use ----------------------------------------
#
# The pool above counts every GPU for every tenant. A cluster with fractional-GPU nodes that only
# inference pods can use, or MIG partitions, is not one pool: a tenant whose jobs need whole GPUs
# is entitled to nothing on the fractional ones. The usable fair share takes each tenant's work
# by demand class (the GPUs a pod shape can run on, `DemandClasses`) and computes the weighted
# max-min allocation of the *usable* capacity:
#
#   f(T) = the most GPUs the tenants in T can hold together (a max flow from their demand
#          classes, each capped by its demand, to the GPU groups the classes can use, each capped
#          by its ready GPUs) = min over sets B of GPU groups of  C(B) + Σ d_c over the classes c
#          of T that can use a group outside B   (the max-flow min-cut theorem);
#   the fair shares are the lexicographically max-min allocation by weight under x(T) ≤ f(T)
#   for every T (water-filling over a polymatroid: raise λ until some set T is tight, freeze T's
#   tenants at λ·w, repeat).
#
# With one demand class it is the water-filling above over the usable GPUs. Sets are enumerated,
# so it is exact up to MAX_TENANTS tenants with demand at one instant (and up to MAX_GROUPS GPU
# groups); beyond that the usable GPUs are taken as one pool.

MAX_TENANTS = 8
MAX_GROUPS = 6


def _groups(
    masks: Sequence[npt.NDArray[np.bool_]], gpus: int
) -> tuple[npt.NDArray[np.int64], list[frozenset[int]]]:
    """Each GPU's group (-1: no class can use it), and per group the classes that can use it."""
    signatures: dict[frozenset[int], int] = {}
    group = np.full(gpus, -1, dtype=np.int64)
    users: list[frozenset[int]] = []
    for gpu in range(gpus):
        classes = frozenset(c for c, mask in enumerate(masks) if mask[gpu])
        if not classes:
            continue
        index = signatures.setdefault(classes, len(users))
        if index == len(users):
            users.append(classes)
        group[gpu] = index
    return group, users


def _max_min_sets(
    limits: dict[int, float], weights: Sequence[float], tenants: Sequence[int]
) -> dict[int, float]:
    """Water-filling over a polymatroid given by `limits[bitmask of tenants] = f(T)`."""
    shares: dict[int, float] = {}
    open_ = list(tenants)
    while open_:
        best = math.inf
        for subset, limit in limits.items():
            members = [i for i in tenants if subset >> i & 1]
            open_weight = sum(weights[i] for i in members if i in open_)
            if open_weight <= 0:
                continue
            level = (limit - sum(shares.get(i, 0.0) for i in members if i not in open_)) / open_weight
            best = min(best, level)
        if not math.isfinite(best):
            break
        best = max(best, 0.0)
        tight: set[int] = set()
        for subset, limit in limits.items():
            members = [i for i in tenants if subset >> i & 1]
            open_weight = sum(weights[i] for i in members if i in open_)
            if open_weight <= 0:
                continue
            frozen = sum(shares.get(i, 0.0) for i in members if i not in open_)
            if frozen + best * open_weight >= limit - _EPS * max(1.0, limit):
                tight.update(i for i in members if i in open_)
        if not tight:
            tight = set(open_)
        for i in tight:
            shares[i] = best * weights[i]
        open_ = [i for i in open_ if i not in tight]
    return shares


def usable_fair_shares(
    classes: DemandClasses, tenants: int, weights: Sequence[float]
) -> tuple[FloatArray, FloatArray]:
    """(fair shares [sample, tenant] of the usable GPUs, demand [sample, tenant] they can use)."""
    samples = classes.demand.shape[0]
    shares = np.zeros((samples, tenants))
    demand = np.zeros((samples, tenants))
    if not classes.keys or not classes.masks:
        return shares, demand
    gpus = classes.masks[0].size
    group, users = _groups(classes.masks, gpus)
    usable_classes = {c for c, mask in enumerate(classes.masks) if mask.any()}
    columns = [k for k, (_, c) in enumerate(classes.keys) if c in usable_classes]
    for column in columns:
        demand[:, classes.keys[column][0]] += classes.demand[:, column]
    # Ready GPUs per group, per ready version, then per sample.
    per_version = np.zeros((classes.ready.shape[0], len(users)))
    for g in range(len(users)):
        per_version[:, g] = (classes.ready & (group == g)[None, :]).sum(axis=1)
    capacity = per_version[classes.ready_version] if samples else np.zeros((0, len(users)))
    exact = [i for i in range(tenants) if weights[i] > 0 and demand[:, i].max(initial=0.0) > _EPS]
    limits = _set_limits(classes, columns, users, capacity, exact) if 1 < len(users) <= MAX_GROUPS else None
    for k in range(samples):
        active = [i for i in range(tenants) if demand[k, i] > _EPS and weights[i] > 0]
        if not active:
            continue
        if limits is None or len(exact) > MAX_TENANTS:
            shares[k] = weighted_max_min(float(capacity[k].sum()), list(demand[k]), weights)
            continue
        everyone = sum(1 << i for i in exact)
        if demand[k].sum() <= limits[everyone][k] + _EPS:
            shares[k] = demand[k]  # the usable GPUs serve every demand: no contention
            continue
        found = _max_min_sets({bits: float(values[k]) for bits, values in limits.items()}, weights, active)
        for i, value in found.items():
            shares[k, i] = value
    return shares, demand


def _set_limits(
    classes: DemandClasses,
    columns: Sequence[int],
    users: Sequence[frozenset[int]],
    capacity: FloatArray,
    tenants: Sequence[int],
) -> dict[int, FloatArray]:
    """f(T) for every set T of `tenants` (bitmask), per sample: the min-cut form of the module note."""
    limits: dict[int, FloatArray] = {}
    if len(tenants) > MAX_TENANTS:
        return limits
    samples = capacity.shape[0]
    cuts: list[tuple[FloatArray, FloatArray]] = []
    for groups in range(1 << len(users)):
        inside = [g for g in range(len(users)) if groups >> g & 1]
        room = capacity[:, inside].sum(axis=1) if inside else np.zeros(samples)
        # Per tenant, the demand of its classes that can use a group outside the set.
        outside = np.zeros((samples, max(tenants, default=0) + 1))
        for column in columns:
            tenant, klass = classes.keys[column]
            if tenant in tenants and any(klass in users[g] for g in range(len(users)) if not groups >> g & 1):
                outside[:, tenant] += classes.demand[:, column]
        cuts.append((room, outside))
    for size in range(1, len(tenants) + 1):
        for chosen in itertools.combinations(tenants, size):
            picked = list(chosen)
            limits[sum(1 << i for i in chosen)] = np.min(
                np.stack([room + outside[:, picked].sum(axis=1) for room, outside in cuts]), axis=0
            )
    return limits


def usable_share_ratios(
    times: FloatArray, end: float, classes: DemandClasses, allocated: FloatArray, weights: Sequence[float]
) -> tuple[FloatArray, FloatArray, float]:
    """`share_ratios` with fair shares of the GPUs each tenant's work can use; contended: the usable
    GPUs cannot serve every demand at once."""
    tenants = allocated.shape[1]
    shares, demand = usable_fair_shares(classes, tenants, weights)
    span = durations(times, end)
    mask = demand.sum(axis=1) > shares.sum(axis=1) + _EPS if len(times) else np.zeros(0, dtype=np.bool_)
    if not mask.any():
        zeros = np.zeros(tenants)
        return zeros, zeros.copy(), 0.0
    weight = span[mask][:, None]
    return (
        (allocated[mask] * weight).sum(axis=0),
        (shares[mask] * weight).sum(axis=0),
        float(span[mask].sum()),
    )

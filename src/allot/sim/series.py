"""Time series derived from a `SimResult` for plots: binned GPU occupancy, fair shares, counts.

Pure functions over recorded data (no plotting here; `allot.report` draws
what these return).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from allot.sim.fairshare import fair_share_series
from allot.sim.records import SimResult

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def occupancy_grid(result: SimResult, bins: int) -> tuple[FloatArray, IntArray, FloatArray]:
    """(bin edges, tenant[gpu, bin], fill[gpu, bin]).

    For every GPU and time bin: the tenant that held the largest share of the
    GPU over the bin (-1 if nobody), and how full the GPU was on average
    (0..1). Shares of one GPU held by several tenants at once add up.
    """
    end = max(result.end, 1e-9)
    edges = np.linspace(0.0, end, bins + 1)
    width = end / bins
    tenants = max(len(result.tenants), 1)
    gpus = len(result.gpu_labels)
    held = np.zeros((gpus, bins, tenants))
    occ = result.occupancy
    for gpu, tenant, fraction, start, stop in zip(
        occ.gpu, occ.tenant, occ.fraction, occ.start, occ.end, strict=True
    ):
        if stop <= start:
            continue
        first = min(int(start / width), bins - 1)
        last = min(int(stop / width), bins - 1)
        for b in range(first, last + 1):
            overlap = min(stop, edges[b + 1]) - max(start, edges[b])
            if overlap > 0:
                held[gpu, b, tenant] += fraction * overlap
    held /= width
    fill = np.minimum(held.sum(axis=2), 1.0)
    owner = np.where(fill > 1e-6, held.argmax(axis=2), -1).astype(np.int64)
    return edges, owner, fill


def fair_shares(result: SimResult) -> FloatArray:
    """Each tenant's weighted max-min fair share of the GPUs at every sample [sample, tenant]."""
    s = result.samples
    return fair_share_series(s.capacity, s.tenant_demand, result.weights)


def cumulative_counts(times: Iterable[float], grid: FloatArray) -> FloatArray:
    """How many of `times` fall at or before each point of `grid`."""
    ordered = np.sort(np.fromiter(times, dtype=np.float64))
    return np.searchsorted(ordered, grid, side="right").astype(np.float64)

"""Small statistics over samples: percentiles, Jain's index, step-function integrals.

Pure functions over numbers; no simulator types. Percentiles interpolate
linearly between order statistics (NumPy's default, "linear" method): the
p-th percentile of n values sorted as x_0..x_{n-1} is x at rank
p/100 · (n − 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Floats = Sequence[float] | npt.NDArray[np.float64]


def percentile(values: Floats, p: float) -> float | None:
    """The p-th percentile (0-100) of `values`, None when there are none."""
    if len(values) == 0:
        return None
    return float(np.percentile(np.asarray(values, dtype=np.float64), p))


def jain(values: Floats) -> float | None:
    """Jain's fairness index (Σx)² / (n · Σx²), in [1/n, 1]; None for no values, 1 for all zeros."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return None
    squares = float((x * x).sum())
    if squares == 0.0:
        return 1.0
    return float(x.sum() ** 2 / (x.size * squares))


def durations(times: Floats, end: float) -> npt.NDArray[np.float64]:
    """How long each sample of a step function holds: until the next sample, the last until `end`."""
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        return np.zeros(0)
    following = np.append(t[1:], max(end, float(t[-1])))
    return np.maximum(following - t, 0.0)


def integral(times: Floats, values: Floats, end: float) -> float:
    """∫ of the step function (times, values) from the first sample to `end`."""
    return float((durations(times, end) * np.asarray(values, dtype=np.float64)).sum())


def time_mean(times: Floats, values: Floats, end: float) -> float | None:
    """Time-weighted mean of a step function; None over an empty span."""
    span = durations(times, end)
    total = float(span.sum())
    if total <= 0.0:
        return None
    return float((span * np.asarray(values, dtype=np.float64)).sum() / total)

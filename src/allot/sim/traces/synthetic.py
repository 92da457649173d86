"""A synthetic Philly-like workload (Gavel's generator, research/fairshare.md section 4.1).

GPUs per job: 1, 2, 4 or 8 with probability 70, 10, 15 and 5 %. Duration:
60·10^U(1.5, 3) seconds with probability 0.8 (about 32 minutes to 17
hours), else 60·10^U(3, 4) seconds (17 hours to 7 days). Jobs arrive as a
Poisson process whose rate makes the offered load `load` × the cluster's
GPUs: rate = load · GPUs / (E[GPUs per job] · E[duration]). Each job
belongs to one of `tenants` tenants (uniformly, or by `shares`).

Options (trace: {type: synthetic, ...} or --trace synthetic:jobs=300,load=1.2):
`jobs` (default 400), `load` (1.0), `tenants` (3, or a list of names),
`shares` (relative job shares per tenant), `durationScale` (multiplies
every duration, default 1), `cpuPerGpu` (8).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from allot.model.loader import Manifests
from allot.sim.limits import DEFAULT_LIMITS, MAX_FACTOR, MAX_GPUS_PER_NODE, MAX_SECONDS, RunLimits
from allot.sim.scenario.reader import short_repr
from allot.sim.scenario.schema import Scenario
from allot.sim.traces.common import TraceBuilder
from allot.sim.traces.options import TraceOptionError, TraceOptions, check_jobs
from allot.sim.workload import Workload

GPU_SIZES = (1, 2, 4, 8)
GPU_PROBABILITIES = (0.70, 0.10, 0.15, 0.05)
SHORT_PROBABILITY = 0.8
OPTIONS = ("jobs", "load", "tenants", "shares", "durationScale", "cpuPerGpu")
MAX_TENANTS = 1000
SHORT_EXPONENTS = (1.5, 3.0)
LONG_EXPONENTS = (3.0, 4.0)


def _mean_log_uniform(low: float, high: float) -> float:
    """E[60 · 10^U(low, high)]."""
    return 60.0 * (10**high - 10**low) / ((high - low) * math.log(10))


MEAN_GPUS = sum(g * p for g, p in zip(GPU_SIZES, GPU_PROBABILITIES, strict=True))
MEAN_DURATION = SHORT_PROBABILITY * _mean_log_uniform(*SHORT_EXPONENTS) + (
    1 - SHORT_PROBABILITY
) * _mean_log_uniform(*LONG_EXPONENTS)


def sample_jobs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(GPUs, duration in seconds) of n jobs, as the module docstring describes."""
    gpus = rng.choice(np.array(GPU_SIZES), size=n, p=np.array(GPU_PROBABILITIES))
    short = rng.random(n) < SHORT_PROBABILITY
    exponent = np.where(short, rng.uniform(*SHORT_EXPONENTS, n), rng.uniform(*LONG_EXPONENTS, n))
    return gpus, 60.0 * np.power(10.0, exponent)


def synthetic_workload(
    options: Mapping[str, Any],
    scenario: Scenario,
    manifests: Manifests,
    *,
    seed: int,
    gpus: int,
    limits: RunLimits = DEFAULT_LIMITS,
) -> Workload:
    read = TraceOptions(options, OPTIONS)
    jobs = read.integer("jobs", 400) or 400
    check_jobs(jobs, limits)
    load = read.number("load", 1.0, maximum=MAX_FACTOR)
    scale = read.number("durationScale", 1.0, maximum=MAX_FACTOR)
    cpu_per_gpu = read.integer("cpuPerGpu", 8, maximum=MAX_GPUS_PER_NODE) or 8
    raw_tenants = read.raw("tenants", 3)
    if (
        isinstance(raw_tenants, list)
        and 0 < len(raw_tenants) <= MAX_TENANTS
        and all(isinstance(t, str) and t for t in raw_tenants)
    ):
        names = list(raw_tenants)
    else:
        count = read.integer("tenants", 3, maximum=MAX_TENANTS) if not isinstance(raw_tenants, list) else None
        if count is None:
            raise TraceOptionError(
                f"tenants: expected a count or a list of 1 to {MAX_TENANTS} names, got {short_repr(raw_tenants)}"
            )
        names = [f"tenant-{chr(ord('a') + i)}" if i < 26 else f"tenant-{i}" for i in range(count)]
    shares = read.raw("shares")
    if shares is None:
        weights = np.ones(len(names))
    elif isinstance(shares, list) and len(shares) == len(names):
        weights = np.array(
            [
                TraceOptions({"shares": s}, ["shares"]).number("shares", 1.0, maximum=MAX_FACTOR)
                for s in shares
            ]
        )
    else:
        raise TraceOptionError(f"shares: expected {len(names)} numbers, one per tenant")
    rng = np.random.default_rng([seed, 0x5EED])
    sizes, durations = sample_jobs(rng, jobs)
    durations = np.minimum(durations * scale, MAX_SECONDS)
    rate = load * max(gpus, 1) / (MEAN_GPUS * MEAN_DURATION * scale)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, jobs))
    owners = rng.choice(len(names), size=jobs, p=weights / weights.sum())
    builder = TraceBuilder(scenario, manifests)
    for name in names:
        builder.tenant(name)
    width = len(str(jobs))
    for i in range(jobs):
        g = int(sizes[i])
        builder.add(
            f"job-{i:0{width}d}",
            names[int(owners[i])],
            float(arrivals[i]),
            float(durations[i]),
            g,
            g * cpu_per_gpu,
        )
    return builder.workload()

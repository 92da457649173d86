"""When a job template's jobs arrive: a Poisson process, fixed times, or bursts.

    arrival: {poisson: {rate: 12/h, start: 0, stop: 4h}}   # exponential gaps
    arrival: {times: [0, 10m, 1h]}                         # exactly these
    arrival: {bursts: [{at: 30m, count: 5000, spread: 1m}]} # many at once (spread evenly)

A template's `count` caps how many jobs it submits; a Poisson process
without `stop` runs until the count is reached or, without a count, until
the scenario's horizon.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from allot.sim.limits import MAX_COUNT
from allot.sim.scenario.reader import Field

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Poisson:
    rate: float  # per second
    start: float = 0.0
    stop: float | None = None


@dataclass(frozen=True)
class Times:
    times: tuple[float, ...]


@dataclass(frozen=True)
class Burst:
    at: float
    count: int
    spread: float = 0.0


@dataclass(frozen=True)
class Bursts:
    bursts: tuple[Burst, ...]


Arrival = Poisson | Times | Bursts
KINDS = ("poisson", "times", "bursts")


def arrival_times(
    arrival: Arrival, rng: np.random.Generator, *, count: int | None, horizon: float | None, cap: int
) -> FloatArray:
    """Sorted arrival times; `count` caps how many, `horizon` ends an open-ended process.

    Never more than `cap` + 1 times are drawn: a caller that gets more than
    `cap` knows the template asks for more jobs than it may have, without
    having drawn them all.
    """
    wanted = min(count, cap + 1) if count is not None else cap + 1
    if isinstance(arrival, Times):
        times = np.sort(np.array(arrival.times, dtype=np.float64))
    elif isinstance(arrival, Bursts):
        parts = []
        drawn = 0
        for burst in arrival.bursts:
            size = min(burst.count, wanted - drawn)
            offsets = np.arange(size) * (burst.spread / burst.count) if burst.spread > 0 else 0.0
            parts.append(burst.at + np.zeros(size) + offsets)
            drawn += size
            if drawn >= wanted:
                break
        times = np.sort(np.concatenate(parts)) if parts else np.zeros(0)
    else:
        stop = arrival.stop if arrival.stop is not None else horizon
        chunks: list[FloatArray] = []
        t = arrival.start
        produced = 0
        while True:
            gaps = rng.exponential(1.0 / arrival.rate, 1024)
            chunk = t + np.cumsum(gaps)
            t = float(chunk[-1])
            if stop is not None:
                chunk = chunk[chunk < stop]
            chunks.append(chunk)
            produced += chunk.size
            if produced >= wanted or (stop is not None and t >= stop):
                break
        times = np.concatenate(chunks)
    return times[:wanted]


def parse_arrival(field: Field) -> Arrival | None:
    if not field.mapping(KINDS) or len(field.value) != 1:
        field.error(
            "expected exactly one of {poisson: {rate, start?, stop?}}, {times: [...]}, {bursts: [...]}"
        )
        return None
    if "poisson" in field.value:
        body = field.get("poisson")
        if not body.mapping(("rate", "start", "stop")):
            body.error("expected {rate, start?, stop?}")
            return None
        rate = body.require("rate", "a rate such as 12/h").as_rate()
        start = body.get("start").as_duration(0.0)
        stop = body.get("stop").as_duration(None)
        if rate is None or start is None:
            return None
        return Poisson(rate, start, stop)
    if "times" in field.value:
        body = field.get("times")
        values = [f.as_duration() for f in body.items()]
        if not values:
            body.error("expected a non-empty list of times")
            return None
        if any(v is None for v in values):
            return None
        return Times(tuple(v for v in values if v is not None))
    body = field.get("bursts")
    bursts: list[Burst] = []
    for item in body.items():
        if not item.mapping(("at", "count", "spread")):
            item.error("expected {at, count, spread?}")
            continue
        at = item.require("at", "when the burst arrives").as_duration()
        n = item.require("count", "how many jobs").as_int(minimum=1, maximum=MAX_COUNT)
        spread = item.get("spread").as_duration(0.0)
        if at is not None and n is not None and spread is not None:
            bursts.append(Burst(at, n, spread))
    if not bursts:
        if body.present and isinstance(body.value, list) and not body.value:
            body.error("expected at least one burst")
        return None
    return Bursts(tuple(bursts))

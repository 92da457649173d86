"""Random sizes and durations: fixed, uniform, lognormal, exponential, weighted choice.

In a scenario file a distribution is a plain value (fixed) or a one-key
mapping:

    duration: 30m                                  # fixed
    duration: {uniform: [10m, 1h]}                 # uniform between the bounds
    duration: {lognormal: {median: 20m, sigma: 0.8, max: 4h}}
    duration: {exponential: {mean: 45m}}
    pods: {choice: {values: [1, 2, 4, 8], weights: [70, 10, 15, 5]}}

Durations accept `90s`, `30m`, `2h`, `1h30m` or seconds; counts are
rounded to integers by the caller. Samples come from a NumPy Generator the
caller seeds, so a scenario is reproducible from its seed. Every value and
every sample stays within the field's bounds (`allot.sim.limits`): values
past them are errors, and samples of the open-ended distributions
(lognormal, exponential) are clipped to them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from allot.sim.limits import MAX_FACTOR, MAX_SIGMA
from allot.sim.scenario.reader import Field, parse_duration, short_repr

FloatArray = npt.NDArray[np.float64]
KINDS = ("fixed", "uniform", "lognormal", "exponential", "choice")


class Distribution(Protocol):
    def sample(self, rng: np.random.Generator, n: int) -> FloatArray: ...

    def mean(self) -> float: ...


@dataclass(frozen=True)
class Fixed:
    value: float

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return np.full(n, self.value)

    def mean(self) -> float:
        return self.value


@dataclass(frozen=True)
class Uniform:
    low: float
    high: float

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return rng.uniform(self.low, self.high, n)

    def mean(self) -> float:
        return (self.low + self.high) / 2


@dataclass(frozen=True)
class LogNormal:
    """exp(N(mu, sigma)), i.e. median e^mu, clipped to [low, high] when given."""

    mu: float
    sigma: float
    low: float | None = None
    high: float | None = None

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        values = rng.lognormal(self.mu, self.sigma, n)
        return (
            np.clip(values, self.low, self.high) if self.low is not None or self.high is not None else values
        )

    def mean(self) -> float:
        return math.exp(self.mu + self.sigma**2 / 2)


@dataclass(frozen=True)
class Exponential:
    scale: float
    high: float | None = None

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        values = rng.exponential(self.scale, n)
        return np.minimum(values, self.high) if self.high is not None else values

    def mean(self) -> float:
        return self.scale


@dataclass(frozen=True)
class Choice:
    values: tuple[float, ...]
    weights: tuple[float, ...]

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        p = np.array(self.weights) / sum(self.weights)
        return np.asarray(rng.choice(np.array(self.values), size=n, p=p), dtype=np.float64)

    def mean(self) -> float:
        return sum(v * w for v, w in zip(self.values, self.weights, strict=True)) / sum(self.weights)


def _number(kind: str) -> Callable[[Any], float | None]:
    if kind == "duration":
        return parse_duration

    def number(value: Any) -> float | None:
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        return None

    return number


def parse_distribution(field: Field, *, kind: str, minimum: float, maximum: float) -> Distribution | None:
    """A distribution of durations (`kind="duration"`) or numbers within [minimum, maximum]; None
    (and an error) if invalid."""
    convert = _number(kind)
    hint = "a duration such as 30m, 1h30m or 90 (seconds)" if kind == "duration" else "a number"

    def value_at(f: Field) -> float | None:
        value = convert(f.value)
        if value is None:
            f.error(f"expected {hint}, got {short_repr(f.value)}")
            return None
        if not minimum <= value <= maximum:
            f.error(f"expected a value from {minimum:g} to {maximum:g}, got {short_repr(f.value)}")
            return None
        return value

    if not isinstance(field.value, dict):
        value = value_at(field)
        return Fixed(value) if value is not None else None
    if len(field.value) != 1 or next(iter(field.value)) not in KINDS:
        field.error(f"expected {hint} or one of {{{', '.join(KINDS)}: ...}}")
        return None
    name = next(iter(field.value))
    body = field.get(name)
    if name == "fixed":
        value = value_at(body)
        return Fixed(value) if value is not None else None
    if name == "uniform":
        bounds = body.value
        if isinstance(bounds, dict):
            body.mapping(("min", "max"))
            low, high = value_at(body.require("min", hint)), value_at(body.require("max", hint))
        elif isinstance(bounds, list) and len(bounds) == 2:
            items = list(body.items())
            low, high = value_at(items[0]), value_at(items[1])
        else:
            body.error("expected [low, high] or {min, max}")
            return None
        if low is None or high is None:
            return None
        if high < low:
            body.error(f"expected low <= high, got {low:g} > {high:g}")
            return None
        return Uniform(low, high)
    if name == "lognormal":
        if not body.mapping(("median", "mu", "sigma", "min", "max")):
            body.error("expected {median (or mu), sigma, min?, max?}")
            return None
        sigma = body.require("sigma", "the spread, a number >= 0").as_float(minimum=0.0, maximum=MAX_SIGMA)
        median = body.get("median")
        mu_field = body.get("mu")
        mu: float | None
        if median.present:
            value = value_at(median)
            if value is not None and value <= 0:
                median.error("expected a positive median")
                value = None
            mu = math.log(value) if value is not None else None
        elif mu_field.present:
            mu = mu_field.as_float(
                minimum=math.log(minimum) if minimum > 0 else None, maximum=math.log(maximum)
            )
        else:
            body.error("required: median (or mu)")
            return None
        low = value_at(body.get("min")) if body.get("min").present else None
        high = value_at(body.get("max")) if body.get("max").present else None
        if mu is None or sigma is None:
            return None
        return LogNormal(mu, sigma, low, high if high is not None else maximum)
    if name == "exponential":
        if not body.mapping(("mean",)):
            body.error("expected {mean: ...}")
            return None
        mean = value_at(body.require("mean", hint))
        if mean is not None and mean <= 0:
            body.get("mean").error("expected a positive mean")
            return None
        return Exponential(mean, maximum) if mean is not None else None
    # choice
    if isinstance(body.value, list):
        values = [value_at(f) for f in body.items()]
        weights = [1.0] * len(values)
    elif body.mapping(("values", "weights")):
        values = [value_at(f) for f in body.require("values", "a list of values").items()]
        weights_field = body.get("weights")
        weights = (
            [w.as_float(minimum=0.0, maximum=MAX_FACTOR) or 0.0 for w in weights_field.items()]
            if weights_field.present
            else [1.0] * len(values)
        )
        if len(weights) != len(values):
            weights_field.error(f"expected {len(values)} weights, one per value, got {len(weights)}")
            return None
    else:
        return None
    if not values or any(v is None for v in values):
        if not values:
            body.error("expected at least one value")
        return None
    if sum(weights) <= 0:
        body.error("expected weights with a positive sum")
        return None
    return Choice(tuple(v for v in values if v is not None), tuple(weights))

"""Admission settings: Kueue's Configuration read into plain values.

`AdmissionConfig.from_configuration` takes the `Configuration` record (or
None, for Kueue's defaults) and returns the few switches admission reads:
fair sharing and its preemption strategies, admission fair sharing (half
life, sampling interval, resource weights), DRA device class mappings and
the waitForPodsReady requeuing strategy. Durations are Go duration strings
(`5m`, `1h30m`, `300ms`); they become seconds here. Problems in the
configuration are reported by `allot.admission.validate`, not raised.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from allot.model.kueue_config import (
    LESS_THAN_INITIAL_SHARE,
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
    Configuration,
)

DEFAULT_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
ALLOWED_STRATEGY_ORDERS = (
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (LESS_THAN_INITIAL_SHARE,),
    DEFAULT_STRATEGIES,
)
DEFAULT_SAMPLING_INTERVAL = 300.0  # Kueue's usageSamplingInterval default, 5m
DEFAULT_BACKOFF_BASE = 60
DEFAULT_BACKOFF_MAX = 3600
EVICTION_TIMESTAMP = "Eviction"
CREATION_TIMESTAMP = "Creation"

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string (`1h30m`, `90s`, `0`); ValueError if malformed."""
    value = text.strip()
    if not value:
        raise ValueError("empty duration")
    sign = 1.0
    if value[0] in "+-":
        sign = -1.0 if value[0] == "-" else 1.0
        value = value[1:]
    if value == "0":
        return 0.0
    total = 0.0
    position = 0
    for match in _DURATION_PART.finditer(value):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(value) or position == 0:
        raise ValueError(f"invalid duration {text!r}: expected a Go duration such as 5m, 1h30m or 300ms")
    return sign * total


@dataclass(frozen=True, slots=True)
class AfsConfig:
    """Admission fair sharing: how LocalQueue usage decays and is weighed."""

    half_life: float
    sampling_interval: float = DEFAULT_SAMPLING_INTERVAL
    resource_weights: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))

    def weight_of(self, resource: str) -> float:
        return self.resource_weights.get(resource, 1.0)


@dataclass(frozen=True, slots=True)
class RequeueConfig:
    """waitForPodsReady.requeuingStrategy: where an evicted workload goes back in line."""

    timestamp: str = EVICTION_TIMESTAMP
    backoff_base: float = DEFAULT_BACKOFF_BASE
    backoff_max: float = DEFAULT_BACKOFF_MAX
    backoff_limit: int | None = None

    def backoff(self, count: int) -> float:
        """Delay before the `count`-th requeue (1-based): base·2^(count−1), capped.

        Kueue adds a random jitter; allot does not (determinism).
        """
        if count <= 0:
            return 0.0
        return min(self.backoff_base * (2.0 ** (count - 1)), self.backoff_max)


@dataclass(frozen=True, slots=True)
class AdmissionConfig:
    """Everything admission reads from Kueue's controller configuration.

    The `fair_sharing_*` switches are Kueue feature gates, with Kueue's
    defaults: FairSharingPrioritizeNonBorrowing and
    FairSharingPreemptWithinNominal (beta, on),
    FairSharingReevaluatePreemptionCandidates (alpha, off).
    """

    fair_sharing: bool = False
    preemption_strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    afs: AfsConfig | None = None
    device_class_mappings: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    requeue: RequeueConfig = field(default_factory=RequeueConfig)
    fair_sharing_prioritize_non_borrowing: bool = True
    fair_sharing_preempt_within_nominal: bool = True
    fair_sharing_reevaluate_candidates: bool = False

    def mapped_resources(self, device_class: str) -> tuple[str, ...]:
        """Quota resource names a DeviceClass is charged to (empty if unmapped)."""
        return self.device_class_mappings.get(device_class, ())

    @classmethod
    def from_configuration(cls, config: Configuration | None) -> AdmissionConfig:
        """Read a Configuration; malformed values fall back to Kueue's defaults."""
        if config is None:
            return cls()
        strategies: tuple[str, ...] = DEFAULT_STRATEGIES
        if config.fair_sharing is not None and config.fair_sharing.preemption_strategies:
            given = tuple(config.fair_sharing.preemption_strategies)
            if given in ALLOWED_STRATEGY_ORDERS:
                strategies = given
        afs = None
        if config.admission_fair_sharing is not None:
            block = config.admission_fair_sharing
            afs = AfsConfig(
                half_life=_seconds(block.usage_half_life_time, 0.0),
                sampling_interval=_seconds(block.usage_sampling_interval, DEFAULT_SAMPLING_INTERVAL),
                resource_weights=MappingProxyType(dict(block.resource_weights)),
            )
        mappings: dict[str, list[str]] = {}
        if config.resources is not None:
            for mapping in config.resources.device_class_mappings:
                for device_class in mapping.device_class_names:
                    names = mappings.setdefault(device_class, [])
                    if mapping.name not in names:
                        names.append(mapping.name)
        requeue = RequeueConfig()
        ready = config.wait_for_pods_ready
        if ready is not None and ready.requeuing_strategy is not None:
            strategy = ready.requeuing_strategy
            requeue = RequeueConfig(
                timestamp=strategy.timestamp or EVICTION_TIMESTAMP,
                backoff_base=float(strategy.backoff_base_seconds or DEFAULT_BACKOFF_BASE),
                backoff_max=float(strategy.backoff_max_seconds or DEFAULT_BACKOFF_MAX),
                backoff_limit=strategy.backoff_limit_count,
            )
        return cls(
            fair_sharing=config.fair_sharing_enabled,
            preemption_strategies=strategies,
            afs=afs,
            device_class_mappings=MappingProxyType({k: tuple(v) for k, v in mappings.items()}),
            requeue=requeue,
        )


def _seconds(text: str | None, default: float) -> float:
    if not text:
        return default
    try:
        return parse_duration(text)
    except ValueError:
        return default

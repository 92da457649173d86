"""The target workload of FGD: the task classes expected to arrive, with their frequencies.

A task class is (non-zero CPU, GPU request) where the GPU request carries
the device shape (so a GPU-model constraint is part of it), the per-GPU
capacity requests and the GPU count, i.e. the paper's (CPU, per-GPU milli,
GPU count, GPU model) in DRA terms. CPU-only tasks are classes too.

As in the authors' simulator (`GetTypicalPods`, `podPopularityThreshold:
95`, step 1): classes are sorted by popularity (ties by CPU, then share,
then count) and the most popular are kept until they cover at least the
threshold share of pods; their frequencies are renormalised to sum to 1.

Where the classes come from is the caller's choice: the experiment passes
the classes of the original trace; a profile may list them in plugin args;
without either, `ClassCounter` learns them from the pods the plugin sees.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from allot.model.quantity import Quantity
from allot.scheduling.sharing.demand import Demand, GpuRequest

DEFAULT_THRESHOLD = 95.0
ClassKey = tuple[int, GpuRequest | None]


@dataclass(frozen=True, slots=True)
class TaskClass:
    cpu: int
    request: GpuRequest | None
    weight: float

    @property
    def key(self) -> ClassKey:
        return (self.cpu, self.request)


@dataclass(frozen=True, slots=True)
class TargetWorkload:
    """Task classes with frequencies summing to 1."""

    classes: tuple[TaskClass, ...]

    @classmethod
    def from_counts(
        cls, counts: Mapping[ClassKey, float], threshold: float = DEFAULT_THRESHOLD
    ) -> TargetWorkload:
        total = float(sum(counts.values()))
        if total <= 0:
            return cls(())
        # Most popular first; equal popularity in a fixed order (the simulator's Less, reversed).
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], *_order(kv[0])))
        kept: list[tuple[ClassKey, float]] = []
        covered = 0.0
        for key, count in ordered:
            if covered >= threshold * total / 100.0:
                break
            kept.append((key, count))
            covered += count
        return cls(tuple(TaskClass(cpu, request, count / covered) for (cpu, request), count in kept))

    @classmethod
    def from_demands(cls, demands: Iterable[Demand], threshold: float = DEFAULT_THRESHOLD) -> TargetWorkload:
        return cls.from_counts(Counter(d.key for d in demands), threshold)

    @classmethod
    def from_args(cls, raw: Any) -> TargetWorkload:
        """`{popularityThreshold: 95, classes: [{cpu, gpus, deviceClassName, selectors, capacity, weight}]}`."""
        if isinstance(raw, TargetWorkload):
            return raw
        if not isinstance(raw, Mapping):
            raise ValueError("targetWorkload: expected a mapping with a `classes` list")
        threshold = float(raw.get("popularityThreshold", DEFAULT_THRESHOLD))
        counts: dict[ClassKey, float] = {}
        for i, entry in enumerate(raw.get("classes") or []):
            if not isinstance(entry, Mapping):
                raise ValueError(f"targetWorkload.classes[{i}]: expected a mapping")
            cpu = Quantity.coerce(entry.get("cpu", 0)).milli_value()
            gpus = int(entry.get("gpus", 0))
            request = None
            if gpus:
                capacity = {
                    name: Quantity.coerce(q).nano for name, q in (entry.get("capacity") or {}).items()
                }
                request = GpuRequest(
                    class_name=str(entry.get("deviceClassName", "")),
                    selectors=tuple(str(s) for s in entry.get("selectors") or ()),
                    capacity_key=tuple(sorted(capacity.items())) if capacity else None,
                    count=gpus,
                )
            counts[(cpu, request)] = counts.get((cpu, request), 0.0) + float(entry.get("weight", 1))
        return cls.from_counts(counts, threshold)


def _order(key: ClassKey) -> tuple[int, int, int, str]:
    cpu, request = key
    if request is None:
        return (cpu, 0, 0, "")
    share = dict(request.capacity_key or ()).get("cores", 0)
    return (cpu, share, request.count, repr(request.selectors))


class ClassCounter:
    """Learns the target workload from the pods seen so far (each pod counted once)."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, every: int = 256) -> None:
        self.threshold = threshold
        self.every = every
        self.counts: Counter[ClassKey] = Counter()
        self.seen: set[str] = set()
        self.generation = 0
        self.workload = TargetWorkload(())

    def observe(self, pod_key: str, demand: Demand) -> bool:
        """Count the pod; True when the workload was rebuilt (callers drop what they derived from it)."""
        if pod_key in self.seen:
            return False
        self.seen.add(pod_key)
        self.counts[demand.key] += 1
        if len(self.seen) % self.every == 1 or not self.workload.classes:
            self.workload = TargetWorkload.from_counts(self.counts, self.threshold)
            self.generation += 1
            return True
        return False

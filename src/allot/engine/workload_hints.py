"""Queueing hints for Kueue workloads that fit their quota but not the nodes.

Admission parks a workload whose quota fits but whose pods could not all be
placed (`ParkKind.PLACEMENT`). Kueue itself never places, so when to try
again is allot's choice; these are the same hints the engine uses for pods
(`allot.scheduling.hints`), asked for the workload's pods:

* an event without a node (devices in shared pools, claims, slices,
  classes), or a node added: try again;
* the workload was parked with quota to preempt (its placement ran after
  evicting quota victims): any pod leaving, node change or quota change
  could change which victims and which room, so try again;
* otherwise its quota fit outright, so placement depended on the nodes
  alone: a pod leaving node n or n changing helps only if one of its pods
  now fits n; and a quota change helps only if its flavor assignment is no
  longer the one it failed with (asked once per quota generation and per
  Kueue equivalence class, not per workload).

`hints=False` requeues every parked workload every cycle: the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from allot.admission.flavors import Assignment, Mode
from allot.admission.state import AdmissionState
from allot.cluster.events import NODE_LOCAL, ClusterEvent, ClusterEventKind

# Kinds that can give a placement-parked workload room: the rest (binds, arrivals) cannot.
_HELPFUL = frozenset(ClusterEventKind) - {ClusterEventKind.POD_BOUND, ClusterEventKind.POD_ADDED}


@dataclass(slots=True)
class _Wait:
    cluster_queue: str
    shape: tuple[object, ...]
    # One pod per distinct pod class of the workload: what a node change is re-checked with.
    probes: tuple[str, ...]
    preempting: bool
    assignment: tuple[object, ...]
    generation: int


def assignment_signature(assignment: Assignment) -> tuple[object, ...]:
    """What placement depends on in an assignment: its mode and each pod set's flavors."""
    flavors = tuple(sorted((ps.name, tuple(sorted(ps.flavor_names()))) for ps in assignment.pod_sets))
    return (assignment.mode, flavors)


class PlacementWaits:
    """Workloads parked for placement, and the judgement of which events wake them."""

    def __init__(
        self,
        admission: AdmissionState,
        fits_on: Callable[[str, int], bool],
        probe_class: Callable[[str], object],
        *,
        hints: bool = True,
    ) -> None:
        self.admission = admission
        self.fits_on = fits_on
        self.probe_class = probe_class
        self.hints = hints
        self._waits: dict[str, _Wait] = {}
        admission.wake_placement = False

    def __len__(self) -> int:
        return len(self._waits)

    def park(self, key: str, assignment: Assignment, probes: tuple[str, ...]) -> None:
        entry = self.admission.entries[key]
        assert entry.cluster_queue is not None
        self._waits[key] = _Wait(
            cluster_queue=entry.cluster_queue,
            shape=entry.equivalence(),
            probes=probes,
            preempting=assignment.mode is Mode.PREEMPT,
            assignment=assignment_signature(assignment),
            generation=self.admission.tree.generation,
        )

    def forget(self, key: str) -> None:
        self._waits.pop(key, None)

    def begin_cycle(self) -> None:
        if not self.hints:
            for key in sorted(self._waits):
                self._wake(key)

    def observe(self, events: list[ClusterEvent]) -> None:
        """Requeue the waiting workloads these events could help."""
        if not self._waits:
            return
        helpful = [e for e in events if e.kind in _HELPFUL]
        generation = self.admission.tree.generation
        if not helpful and all(w.generation == generation for w in self._waits.values()):
            return
        anywhere = any(not e.local or e.kind is ClusterEventKind.NODE_ADDED for e in helpful)
        nodes = sorted({e.node for e in helpful if e.kind in NODE_LOCAL and e.node is not None})
        fits: dict[tuple[object, int], bool] = {}
        assignments: dict[tuple[str, tuple[object, ...]], tuple[object, ...]] = {}
        for key in sorted(self._waits):
            wait = self._waits[key]
            if anywhere or (wait.preempting and (helpful or wait.generation != generation)):
                self._wake(key)
                continue
            if wait.generation != generation and self._assignment_changed(key, wait, assignments):
                self._wake(key)
                continue
            wait.generation = generation
            if nodes and any(self._fits(p, n, fits) for p in wait.probes for n in nodes):
                self._wake(key)

    def _fits(self, pod: str, node: int, cache: dict[tuple[object, int], bool]) -> bool:
        klass = (self.probe_class(pod), node)
        found = cache.get(klass)
        if found is None:
            found = cache[klass] = self.fits_on(pod, node)
        return found

    def _assignment_changed(
        self, key: str, wait: _Wait, cache: dict[tuple[str, tuple[object, ...]], tuple[object, ...]]
    ) -> bool:
        group = (wait.cluster_queue, wait.shape)
        signature = cache.get(group)
        if signature is None:
            entry = self.admission.entries.get(key)
            if entry is None:
                return True
            signature = cache[group] = assignment_signature(self.admission.assign(entry.workload))
        return signature != wait.assignment

    def _wake(self, key: str) -> None:
        del self._waits[key]
        self.admission.requeue(key)

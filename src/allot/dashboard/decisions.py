"""What the dashboard remembers of the engine's decisions: reasons, preemptions, admissions, waits.

A driver (the live scheduler, the simulator) calls `DecisionLog.observe(result, now, state)`
after each cycle. The log keeps:

* the latest reason each pending pod was given (`reasons`), what `Engine.pending_reasons`
  completes with admission's own account, exactly as `allot place` prints it;
* per application (`allot.dashboard.apps`): preemptions (pods evicted), Kueue admissions, and
  the waits of the last `keep_waits` pods that started (creation to binding, seconds).

Memory is bounded: reasons are kept for pods the state still holds pending (pruned when the
map outgrows them), waits per application in a ring of `keep_waits`, tallies per application
key (applications are few: namespaces, queues and pod groups).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from allot.cluster.state import ClusterState
from allot.dashboard.apps import CLUSTER_QUEUE, app_keys, group_of, local_queue_of
from allot.dashboard.model import Tally
from allot.engine.decisions import Admitted, Bound, CycleResult, Evicted, Waiting
from allot.model.timestamps import parse_timestamp

KEEP_WAITS = 200

# LocalQueue key -> its ClusterQueue ("" when unknown).
QueueLookup = Callable[[str], str]


class DecisionLog:
    """See the module docstring."""

    def __init__(self, *, keep_waits: int = KEEP_WAITS) -> None:
        self.keep_waits = keep_waits
        self.reasons: dict[str, str] = {}
        self._preemptions: dict[str, int] = {}
        self._admissions: dict[str, int] = {}
        self._waits: dict[str, deque[float]] = {}

    def observe(self, result: CycleResult, now: float, state: ClusterState, queue_of: QueueLookup) -> None:
        for decision in result.decisions:
            if isinstance(decision, Waiting):
                self.reasons[decision.pod] = decision.reason
            elif isinstance(decision, Bound):
                self.reasons.pop(decision.pod, None)
                info = state.pods.get(decision.pod)
                created = parse_timestamp(info.pod.metadata.creation_timestamp) if info else None
                if created is not None:
                    for key in self._keys(decision.pod, state, queue_of):
                        ring = self._waits.setdefault(key, deque(maxlen=self.keep_waits))
                        ring.append(max(0.0, now - created))
            elif isinstance(decision, Evicted):
                for key in self._keys(decision.pod, state, queue_of):
                    self._preemptions[key] = self._preemptions.get(key, 0) + 1
            elif isinstance(decision, Admitted):
                key = f"{CLUSTER_QUEUE}/{decision.cluster_queue}"
                self._admissions[key] = self._admissions.get(key, 0) + 1
        if len(self.reasons) > 2 * len(state.pods) + 64:
            self.reasons = {k: v for k, v in self.reasons.items() if k in state.pods}

    @staticmethod
    def _keys(pod_key: str, state: ClusterState, queue_of: QueueLookup) -> list[str]:
        namespace = pod_key.partition("/")[0]
        info = state.pods.get(pod_key)
        labels = info.pod.metadata.labels if info is not None else {}
        local_queue = local_queue_of(namespace, labels)
        return app_keys(
            namespace, local_queue, queue_of(local_queue) if local_queue else "", group_of(namespace, labels)
        )

    def tallies(self) -> dict[str, Tally]:
        keys = sorted({*self._preemptions, *self._admissions, *self._waits})
        return {
            key: Tally(
                preemptions=self._preemptions.get(key, 0),
                admissions=self._admissions.get(key, 0),
                waits=tuple(self._waits.get(key, ())),
            )
            for key in keys
        }

"""Gangs: groups of pods placed all together or not at all.

Two spellings are recognised:

* Kueue's plain pod groups: label `kueue.x-k8s.io/pod-group-name` and
  annotation `kueue.x-k8s.io/pod-group-total-count` (every pod of the group
  must exist and be placed);
* the coscheduling plugin's `scheduling.x-k8s.io/pod-group` label (all
  pods with the label that exist form the group; annotation
  `scheduling.x-k8s.io/min-member`, if present, is how many must be placed).

A gang is placed in one transaction: each member in turn (by name), and if
the gang cannot be completed everything is rolled back, so a gang is never
partly placed. There is no special-casing beyond this.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from allot.cluster.pod_info import PodInfo
from allot.cluster.state import ClusterState
from allot.model.kueue import POD_GROUP_NAME_LABEL, POD_GROUP_TOTAL_COUNT_ANNOTATION
from allot.scheduling.scheduler import Outcome, Placement, Unschedulable

COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
COSCHEDULING_MIN_MEMBER_ANNOTATION = "scheduling.x-k8s.io/min-member"


@dataclass(frozen=True, slots=True)
class Gang:
    """A group of pods that must be placed together."""

    key: str  # namespace/group name
    members: tuple[str, ...]  # pod keys, sorted
    # How many members must be placed for the gang to run.
    required: int
    # How many pods the group declares (Kueue's total count); more than `members` means some are missing.
    declared: int

    @property
    def complete(self) -> bool:
        return len(self.members) >= self.declared


def _declared(info: PodInfo, annotation: str) -> int | None:
    raw = info.pod.metadata.annotations.get(annotation)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value > 0 else None


def _group_name(info: PodInfo) -> str | None:
    labels = info.pod.metadata.labels
    return labels.get(POD_GROUP_NAME_LABEL) or labels.get(COSCHEDULING_LABEL)


def is_gang_member(info: PodInfo) -> bool:
    return bool(_group_name(info))


def gang_key(info: PodInfo) -> str | None:
    """The `namespace/group` key of the pod's gang, or None outside any group."""
    name = _group_name(info)
    return f"{info.pod.namespace}/{name}" if name else None


def gangs(pods: Iterable[PodInfo]) -> dict[str, Gang]:
    """Gangs of the given pods, by the key `namespace/group`; pods outside any group are absent."""
    groups: dict[str, list[PodInfo]] = defaultdict(list)
    for info in pods:
        name = _group_name(info)
        if name:
            groups[f"{info.pod.namespace}/{name}"].append(info)
    result: dict[str, Gang] = {}
    for key, infos in groups.items():
        members = tuple(sorted(i.key for i in infos))
        total = max((_declared(i, POD_GROUP_TOTAL_COUNT_ANNOTATION) or 0) for i in infos)
        minimum = max((_declared(i, COSCHEDULING_MIN_MEMBER_ANNOTATION) or 0) for i in infos)
        declared = total or len(members)
        required = minimum or declared
        result[key] = Gang(key, members, min(required, declared), declared)
    return result


@dataclass(frozen=True, slots=True)
class GangPlacement:
    gang: str
    placements: tuple[Placement, ...]


@dataclass(frozen=True, slots=True)
class GangUnschedulable:
    gang: str
    reason: str
    failed: Unschedulable | None = None
    # How many members fit (bound before or placed in the attempt); None when not known.
    placed: int | None = None


def place_gang(
    state: ClusterState, gang: Gang, schedule_one: Callable[[str], Outcome]
) -> GangPlacement | GangUnschedulable:
    """Place every pending member with `schedule_one` (which binds), all or nothing.

    Runs in its own transaction: on success it commits (into any enclosing
    transaction), on failure nothing of it remains.
    """
    if not gang.complete:
        missing = gang.declared - len(gang.members)
        return GangUnschedulable(gang.key, f"waiting for {missing} more pod(s) of group {gang.key}")
    pending = [key for key in gang.members if not state.pods[key].bound]
    already = len(gang.members) - len(pending)
    placements: list[Placement] = []
    failure: Unschedulable | None = None
    with state.journal.transaction() as tx:
        for key in pending:
            outcome = schedule_one(key)
            if isinstance(outcome, Placement):
                placements.append(outcome)
            elif failure is None:
                failure = outcome
                if gang.required == gang.declared:
                    break
        if already + len(placements) >= gang.required and (failure is None or gang.required < gang.declared):
            tx.commit()
            return GangPlacement(gang.key, tuple(placements))
    assert failure is not None
    reason = f"pod group {gang.key}: {len(placements) + already}/{gang.required} pods fit; {failure.pod_key}: {failure.message}"
    return GangUnschedulable(gang.key, reason, failure, len(placements) + already)

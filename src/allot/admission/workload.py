"""Workloads: the unit Kueue admits, built from pods.

A pod with the `kueue.x-k8s.io/queue-name` label is a workload of its own;
pods that also carry `kueue.x-k8s.io/pod-group-name` form one workload per
(namespace, group), which is admitted all at once and only when as many pods
exist as the `kueue.x-k8s.io/pod-group-total-count` annotation says. Pods
without a queue label are not workloads: kube-scheduler semantics apply.

Pods of a group with the same shape (requests, node selection, tolerations)
form one pod set, as Kueue's pod-group integration does. Requests per pod are
`allot.cluster.resources.pod_requests` plus what the pod's DRA claims charge
through deviceClassMappings (`allot.admission.dra_quota`).

Priority: the WorkloadPriorityClass named by `kueue.x-k8s.io/priority-class`,
else the pod's PriorityClass, else the global default PriorityClass, else 0.
A label naming a WorkloadPriorityClass that does not exist makes the workload
invalid (Kueue does not create it); invalid workloads carry the reason and
are never admitted.

Workloads are immutable values; their admission state lives in
`allot.admission.state`. `created` is seconds since the epoch (the earliest
pod creationTimestamp), so workloads order by (created, key).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from allot.admission.dra_quota import DraQuotaError, claim_charges
from allot.cluster.resources import pod_requests
from allot.model.core import NodeSelector, Pod, Toleration
from allot.model.kueue import (
    POD_GROUP_NAME_LABEL,
    POD_GROUP_TOTAL_COUNT_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    WorkloadPriorityClass,
)
from allot.model.resource import ResourceClaim, ResourceClaimTemplate
from allot.model.scheduling import PriorityClass
from allot.model.timestamps import parse_timestamp

_EMPTY: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PodSet:
    """Pods of one shape inside a workload; `requests` is per pod."""

    name: str
    count: int
    requests: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    node_selector: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    required_affinity: NodeSelector | None = None
    tolerations: tuple[Toleration, ...] = ()
    pods: tuple[str, ...] = ()

    def total(self) -> dict[str, int]:
        """Requests of all `count` pods."""
        return {name: value * self.count for name, value in self.requests.items()}


@dataclass(frozen=True, slots=True)
class Workload:
    """One admission unit. `invalid` / `incomplete` say why it cannot be admitted yet."""

    key: str
    namespace: str
    name: str
    queue_name: str
    pod_sets: tuple[PodSet, ...]
    priority: int = 0
    priority_source: str = ""
    created: float = 0.0
    uid: str = ""
    invalid: str | None = None
    incomplete: str | None = None

    @property
    def local_queue(self) -> str:
        """`namespace/queue-name`, the key of the LocalQueue it is submitted to."""
        return f"{self.namespace}/{self.queue_name}"

    @property
    def pod_count(self) -> int:
        return sum(ps.count for ps in self.pod_sets)

    @property
    def pods(self) -> tuple[str, ...]:
        if len(self.pod_sets) == 1:
            return self.pod_sets[0].pods  # the common case, asked for often: no copy
        return tuple(pod for ps in self.pod_sets for pod in ps.pods)

    def total_requests(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for ps in self.pod_sets:
            for name, value in ps.total().items():
                total[name] = total.get(name, 0) + value
        return total

    def sort_key(self) -> tuple[float, str]:
        return (self.created, self.key)


def equivalence_shape(workload: Workload) -> tuple[object, ...]:
    """Kueue's scheduling equivalence hash: priority and pod-set shapes.

    Two pending workloads of one ClusterQueue with equal shapes fit, or fail
    to fit, alike; BestEffortFIFO parks the second without another assignment.
    """
    return (
        workload.priority,
        tuple(
            (
                ps.count,
                tuple(sorted(ps.requests.items())),
                tuple(sorted(ps.node_selector.items())),
                repr(ps.required_affinity),
                tuple(repr(t) for t in ps.tolerations),
            )
            for ps in workload.pod_sets
        ),
    )


def is_queued(pod: Pod) -> bool:
    """Whether Kueue manages this pod (it names a LocalQueue)."""
    return bool(pod.metadata.labels.get(QUEUE_NAME_LABEL))


def workload_key_of(pod: Pod) -> str | None:
    """The key of the workload `pod` belongs to, None for pods Kueue does not manage."""
    if not is_queued(pod):
        return None
    group = pod.metadata.labels.get(POD_GROUP_NAME_LABEL)
    return f"{pod.namespace}/{group or pod.name}"


def _shape(pod: Pod, requests: Mapping[str, int]) -> tuple[object, ...]:
    spec = pod.spec
    affinity = spec.affinity.node_affinity if spec.affinity is not None else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    return (
        tuple(sorted(requests.items())),
        tuple(sorted(spec.node_selector.items())),
        repr(required),
        tuple(repr(t) for t in spec.tolerations),
    )


class WorkloadBuilder:
    """Builds workloads from pods against the cluster's priority classes, claims and mappings."""

    def __init__(
        self,
        *,
        workload_priority_classes: Iterable[WorkloadPriorityClass] = (),
        priority_classes: Iterable[PriorityClass] = (),
        claims: Iterable[ResourceClaim] | Mapping[str, ResourceClaim] = (),
        claim_templates: Iterable[ResourceClaimTemplate] = (),
        device_class_mappings: Callable[[str], tuple[str, ...]] | None = None,
        default_time: float = 0.0,
    ) -> None:
        self._wpcs = {w.name: w for w in workload_priority_classes}
        classes = list(priority_classes)
        self._pcs = {p.name: p for p in classes}
        defaults = sorted((p for p in classes if p.global_default), key=lambda p: (-p.value, p.name))
        self._default_pc = defaults[0] if defaults else None
        # A mapping (a cluster's claims by key) is read live: claims its pod mutators create count.
        self._claims: Mapping[str, ResourceClaim] = (
            claims if isinstance(claims, Mapping) else {c.key: c for c in claims}
        )
        self._templates = {(t.namespace, t.name): t for t in claim_templates}
        self._mapped = device_class_mappings or (lambda _cls: ())
        self._default_time = default_time

    # --- priority ---------------------------------------------------------------

    def priority_of(self, pod: Pod) -> tuple[int, str, str | None]:
        """(priority, where it came from, error if the WorkloadPriorityClass is missing)."""
        wpc_name = pod.metadata.labels.get(PRIORITY_CLASS_LABEL)
        if wpc_name:
            wpc = self._wpcs.get(wpc_name)
            if wpc is None:
                return (
                    0,
                    "",
                    f"WorkloadPriorityClass {wpc_name!r} (label {PRIORITY_CLASS_LABEL}) does not exist",
                )
            return wpc.value, f"WorkloadPriorityClass/{wpc_name}", None
        name = pod.spec.priority_class_name
        if name and name in self._pcs:
            return self._pcs[name].value, f"PriorityClass/{name}", None
        if not name and self._default_pc is not None:
            return self._default_pc.value, f"PriorityClass/{self._default_pc.name}", None
        if pod.spec.priority is not None:
            return pod.spec.priority, "pod spec.priority", None
        return 0, "", None

    # --- requests ---------------------------------------------------------------

    def requests_of(self, pod: Pod, shared_seen: set[tuple[str, str]]) -> dict[str, int]:
        """Per-pod quota requests; raises DraQuotaError for claims admission cannot charge."""
        requests = pod_requests(pod)
        charges = claim_charges(
            pod,
            claims=self._claims,
            templates=self._templates,
            mapped=self._mapped,
            shared_seen=shared_seen,
        )
        for name, value in charges.items():
            requests[name] = requests.get(name, 0) + value
        return requests

    # --- workloads --------------------------------------------------------------

    def from_pods(self, pods: Iterable[Pod]) -> list[Workload]:
        """One workload per queued pod or pod group, ordered by (created, key)."""
        singles: list[Pod] = []
        groups: dict[tuple[str, str], list[Pod]] = {}
        for pod in pods:
            if not is_queued(pod):
                continue
            group = pod.metadata.labels.get(POD_GROUP_NAME_LABEL)
            if group:
                groups.setdefault((pod.namespace, group), []).append(pod)
            else:
                singles.append(pod)
        workloads = [self._build(f"{p.namespace}/{p.name}", p.namespace, p.name, [p], None) for p in singles]
        taken = {w.key for w in workloads}
        for (namespace, group), members in sorted(groups.items()):
            key = f"{namespace}/{group}"
            if key in taken:  # a lone pod already has this name; keep both distinct
                key = f"{key}#group"
            members.sort(key=lambda p: p.name)
            workloads.append(self._build(key, namespace, group, members, group))
        workloads.sort(key=Workload.sort_key)
        return workloads

    def _build(self, key: str, namespace: str, name: str, pods: list[Pod], group: str | None) -> Workload:
        first = pods[0]
        problems: list[str] = []
        queue_names = {p.metadata.labels.get(QUEUE_NAME_LABEL, "") for p in pods}
        if len(queue_names) > 1:
            problems.append(f"pods of group {name!r} name different queues: {', '.join(sorted(queue_names))}")
        priority, source, error = self.priority_of(first)
        if error:
            problems.append(error)
        shapes: dict[tuple[object, ...], list[tuple[Pod, dict[str, int]]]] = {}
        shared_seen: set[tuple[str, str]] = set()
        for pod in pods:
            try:
                requests = self.requests_of(pod, shared_seen)
            except DraQuotaError as err:
                problems.append(str(err))
                requests = pod_requests(pod)
            shapes.setdefault(_shape(pod, requests), []).append((pod, requests))
        pod_sets = []
        for index, members in enumerate(shapes.values()):
            pod, requests = members[0]
            spec = pod.spec
            affinity = spec.affinity.node_affinity if spec.affinity is not None else None
            pod_sets.append(
                PodSet(
                    name="main" if len(shapes) == 1 else f"set-{index}",
                    count=len(members),
                    requests=MappingProxyType(dict(requests)),
                    node_selector=MappingProxyType(dict(spec.node_selector)),
                    required_affinity=(
                        affinity.required_during_scheduling_ignored_during_execution if affinity else None
                    ),
                    tolerations=spec.tolerations,
                    pods=tuple(f"{p.namespace}/{p.name}" for p, _ in members),
                )
            )
        incomplete = None
        if group is not None:
            incomplete, total_problem = _group_completeness(name, pods)
            if total_problem:
                problems.append(total_problem)
        times = [t for t in (parse_timestamp(p.metadata.creation_timestamp) for p in pods) if t is not None]
        return Workload(
            key=key,
            namespace=namespace,
            name=name,
            queue_name=first.metadata.labels.get(QUEUE_NAME_LABEL, ""),
            pod_sets=tuple(pod_sets),
            priority=priority,
            priority_source=source,
            created=min(times) if times else self._default_time,
            uid=first.metadata.uid if group is None else "",
            invalid="; ".join(problems) or None,
            incomplete=incomplete,
        )


def _group_completeness(group: str, pods: list[Pod]) -> tuple[str | None, str | None]:
    """(why the group is not complete yet, why its total count is invalid)."""
    totals = {p.metadata.annotations.get(POD_GROUP_TOTAL_COUNT_ANNOTATION) for p in pods}
    if len(totals) != 1:
        return None, f"pods of group {group!r} disagree on {POD_GROUP_TOTAL_COUNT_ANNOTATION}"
    text = totals.pop()
    try:
        total = int(text or "")
    except ValueError:
        return (
            None,
            f"pod group {group!r}: annotation {POD_GROUP_TOTAL_COUNT_ANNOTATION} must be an integer, got {text!r}",
        )
    if total < 1:
        return None, f"pod group {group!r}: {POD_GROUP_TOTAL_COUNT_ANNOTATION} must be at least 1"
    if len(pods) > total:
        return None, f"pod group {group!r} has {len(pods)} pods, more than its total count {total}"
    if len(pods) < total:
        return f"pod group {group!r} has {len(pods)} of {total} pods", None
    return None, None

"""Fluent builders for Kueue objects and workloads (Kueue's MakeClusterQueue(...).Obj() style).

Quantities are written as Kubernetes spells them ("9", "500m", "4Gi") and
converted with the model's decoder, so tests read like manifests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allot.admission import AdmissionConfig, AdmissionState, PodSet, Workload
from allot.admission.resources import quota_amount
from allot.model.codec import decode
from allot.model.defaults import apply_defaults
from allot.model.kueue import ClusterQueue, Cohort, LocalQueue, ResourceFlavor
from allot.model.quantity import Quantity

Quota = str | int | tuple[Any, ...]


def units(resource: str, value: str | int) -> int:
    """A quantity in admission units (CPU in millicores)."""
    return quota_amount(resource, Quantity.coerce(value))


def _quota_entry(resource: str, value: Quota) -> dict[str, Any]:
    if isinstance(value, tuple):
        nominal, borrowing, lending = (*value, None, None)[:3]
    else:
        nominal, borrowing, lending = value, None, None
    entry: dict[str, Any] = {"name": resource, "nominalQuota": str(nominal)}
    if borrowing is not None:
        entry["borrowingLimit"] = str(borrowing)
    if lending is not None:
        entry["lendingLimit"] = str(lending)
    return entry


def flavor_quotas(name: str, **resources: Quota) -> dict[str, Any]:
    """`flavor_quotas("h100", **{"nvidia.com/gpu": (8, 2, 4)})`: nominal, borrowingLimit, lendingLimit."""
    return {"name": name, "resources": [_quota_entry(r.replace("__", "/"), v) for r, v in resources.items()]}


def group(covered: list[str], *flavors: dict[str, Any]) -> dict[str, Any]:
    return {"coveredResources": covered, "flavors": list(flavors)}


class CQ:
    def __init__(self, name: str) -> None:
        self.data: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {"namespaceSelector": {}, "resourceGroups": []},
        }

    @property
    def spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self.data["spec"]
        return spec

    def cohort(self, name: str) -> CQ:
        self.spec["cohortName"] = name
        return self

    def group(self, covered: list[str], *flavors: dict[str, Any]) -> CQ:
        self.spec["resourceGroups"].append(group(covered, *flavors))
        return self

    def quota(self, flavor: str, **resources: Quota) -> CQ:
        """One group covering exactly these resources with one flavor."""
        covered = [r.replace("__", "/") for r in resources]
        return self.group(covered, flavor_quotas(flavor, **resources))

    def preemption(
        self,
        within: str = "Never",
        reclaim: str = "Never",
        borrow: str | None = None,
        threshold: int | None = None,
    ) -> CQ:
        block: dict[str, Any] = {"withinClusterQueue": within, "reclaimWithinCohort": reclaim}
        if borrow is not None:
            block["borrowWithinCohort"] = {"policy": borrow}
            if threshold is not None:
                block["borrowWithinCohort"]["maxPriorityThreshold"] = threshold
        self.spec["preemption"] = block
        return self

    def fungibility(
        self, borrow: str = "MayStopSearch", preempt: str = "TryNextFlavor", preference: str | None = None
    ) -> CQ:
        block: dict[str, Any] = {"whenCanBorrow": borrow, "whenCanPreempt": preempt}
        if preference:
            block["preference"] = preference
        self.spec["flavorFungibility"] = block
        return self

    def weight(self, value: str | float) -> CQ:
        self.spec["fairSharing"] = {"weight": str(value)}
        return self

    def strict(self) -> CQ:
        self.spec["queueingStrategy"] = "StrictFIFO"
        return self

    def afs(self) -> CQ:
        self.spec["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
        return self

    def obj(self) -> ClusterQueue:
        return apply_defaults(decode(self.data, ClusterQueue))


class CohortB:
    def __init__(self, name: str) -> None:
        self.data: dict[str, Any] = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Cohort",
            "metadata": {"name": name},
            "spec": {},
        }

    def parent(self, name: str) -> CohortB:
        self.data["spec"]["parentName"] = name
        return self

    def quota(self, flavor: str, **resources: Quota) -> CohortB:
        covered = [r.replace("__", "/") for r in resources]
        self.data["spec"].setdefault("resourceGroups", []).append(
            group(covered, flavor_quotas(flavor, **resources))
        )
        return self

    def weight(self, value: str | float) -> CohortB:
        self.data["spec"]["fairSharing"] = {"weight": str(value)}
        return self

    def obj(self) -> Cohort:
        return decode(self.data, Cohort)


def flavor(
    name: str,
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    tolerations: list[dict[str, str]] | None = None,
) -> ResourceFlavor:
    spec: dict[str, Any] = {}
    if labels:
        spec["nodeLabels"] = dict(labels)
    if taints:
        spec["nodeTaints"] = taints
    if tolerations:
        spec["tolerations"] = tolerations
    return decode(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": spec,
        },
        ResourceFlavor,
    )


def local_queue(key: str, cluster_queue: str, weight: str | float | None = None) -> LocalQueue:
    namespace, name = key.split("/")
    spec: dict[str, Any] = {"clusterQueue": cluster_queue}
    if weight is not None:
        spec["fairSharing"] = {"weight": str(weight)}
    return decode(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        },
        LocalQueue,
    )


def workload(
    key: str,
    queue: str = "lq",
    *,
    priority: int = 0,
    created: float = 0.0,
    count: int = 1,
    node_selector: Mapping[str, str] | None = None,
    **requests: str | int,
) -> Workload:
    """A one-pod-set workload in namespace `ns` (key `ns/name`) asking `requests` per pod."""
    namespace, name = key.split("/") if "/" in key else ("ns", key)
    per_pod = {r.replace("__", "/"): units(r.replace("__", "/"), v) for r, v in requests.items()}
    return Workload(
        key=f"{namespace}/{name}",
        namespace=namespace,
        name=name,
        queue_name=queue,
        pod_sets=(
            PodSet(name="main", count=count, requests=per_pod, node_selector=dict(node_selector or {})),
        ),
        priority=priority,
        created=created,
    )


def make_state(
    *cluster_queues: CQ | ClusterQueue,
    cohorts: tuple[CohortB | Cohort, ...] = (),
    flavors: tuple[ResourceFlavor, ...] | None = None,
    local_queues: tuple[LocalQueue, ...] | None = None,
    config: AdmissionConfig | None = None,
) -> AdmissionState:
    """A state with one LocalQueue `ns/lq-<cq>` per ClusterQueue (and `ns/lq` for the first)."""
    cqs = [c.obj() if isinstance(c, CQ) else c for c in cluster_queues]
    names = {f.name for f in flavors or ()}
    if flavors is None:
        found = sorted({f.name for q in cqs for g in q.spec.resource_groups for f in g.flavors})
        found += sorted(
            {
                f.name
                for c in cohorts
                for g in (c.obj() if isinstance(c, CohortB) else c).spec.resource_groups
                for f in g.flavors
            }
        )
        flavors = tuple(flavor(n) for n in dict.fromkeys(found) if n not in names)
    if local_queues is None:
        local_queues = tuple(local_queue(f"ns/lq-{q.name}", q.name) for q in cqs)
        if cqs:
            local_queues += (local_queue("ns/lq", cqs[0].name),)
    return AdmissionState(
        cluster_queues=cqs,
        cohorts=[c.obj() if isinstance(c, CohortB) else c for c in cohorts],
        local_queues=local_queues,
        flavors=flavors,
        config=config,
    )


def admit_all(state: AdmissionState, now: float = 0.0) -> list[str]:
    """Run one engine cycle where placement always succeeds and preemption is not attempted."""
    admitted = []
    from allot.admission import Mode, ParkReason

    for candidate in state.candidates(now):
        assignment = state.assign(candidate.workload)
        if assignment.mode is Mode.FIT:
            state.admit(candidate.workload, assignment, now)
            admitted.append(candidate.workload.key)
        else:
            state.park(candidate.workload, ParkReason.quota(assignment.message()))
    return admitted

"""The application views: a page of applications of one kind, and one application in full.

An application is a namespace, a Kueue LocalQueue or ClusterQueue, or a pod group
(`allot.dashboard.apps`). One application shows its quota (a ClusterQueue's nominal quota,
limits, usage and what it borrows; a LocalQueue's usage), Kueue's weighted share, its GPUs held
and asked for against its fair share (`allot.dashboard.fairness`, namespaces and ClusterQueues),
the waits of its pods that started lately and of those still pending, preemptions, and a page of
its pending pods, each with its reason, and of its running pods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from allot.admission.resources import format_amount
from allot.dashboard.apps import CLUSTER_QUEUE, KINDS, LOCAL_QUEUE, NAMESPACE, POD_GROUP
from allot.dashboard.cluster_view import TOP_REASONS, pod_row, reason_kind
from allot.dashboard.fairness import Share, shares
from allot.dashboard.model import PodRecord, Quota, Snapshot
from allot.dashboard.query import Page, QueryError
from allot.sim.stats import percentile


def _member(kind: str, name: str) -> Callable[[PodRecord], bool]:
    if kind == NAMESPACE:
        return lambda p: p.namespace == name
    if kind == LOCAL_QUEUE:
        return lambda p: p.local_queue == name
    if kind == CLUSTER_QUEUE:
        return lambda p: p.cluster_queue == name
    return lambda p: p.group == name


def _names(snapshot: Snapshot, kind: str) -> set[str]:
    if kind == NAMESPACE:
        return {p.namespace for p in snapshot.pods}
    if kind == LOCAL_QUEUE:
        return {q.key for q in snapshot.local_queues} | {
            p.local_queue for p in snapshot.pods if p.local_queue
        }
    if kind == CLUSTER_QUEUE:
        return {q.name for q in snapshot.cluster_queues}
    return {p.group for p in snapshot.pods if p.group}


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise QueryError(f"no application kind {kind[:40]!r}; expected one of {', '.join(KINDS)}", 404)
    return kind


def _shares(snapshot: Snapshot, kind: str) -> dict[str, Share]:
    if kind not in (NAMESPACE, CLUSTER_QUEUE):
        return {}
    return {s.name: s for s in shares(snapshot, kind)}


def app_list(snapshot: Snapshot, kind: str, *, text: str, page: Page) -> dict[str, Any]:
    check_kind(kind)
    needle = text.lower()
    names = sorted(n for n in _names(snapshot, kind) if needle in n.lower())
    fair = _shares(snapshot, kind)
    held: dict[str, float] = {}
    pending: dict[str, float] = {}
    pending_pods: dict[str, int] = {}
    running: dict[str, int] = {}
    for pod in snapshot.pods:
        name = _key_of(pod, kind)
        if not name:
            continue
        if pod.node:
            held[name] = held.get(name, 0.0) + pod.gpus
            running[name] = running.get(name, 0) + 1
        else:
            pending[name] = pending.get(name, 0.0) + pod.gpus
            pending_pods[name] = pending_pods.get(name, 0) + 1
    queues = {q.name: q for q in snapshot.cluster_queues}
    window = page.cut(len(names))
    items = []
    for name in names[window]:
        share = fair.get(name)
        tally = snapshot.tallies.get(f"{kind}/{name}")
        queue = queues.get(name) if kind == CLUSTER_QUEUE else None
        items.append(
            {
                "app": f"{kind}/{name}",
                "name": name,
                "held": round(held.get(name, 0.0), 3),
                "pending": round(pending.get(name, 0.0), 3),
                "pendingPods": pending_pods.get(name, 0),
                "runningPods": running.get(name, 0),
                "fair": round(share.fair, 3) if share is not None else None,
                "ratio": _ratio(share),
                "weightedShare": queue.weighted_share if queue is not None else None,
                "borrowing": any(q.borrowed > 0 for q in queue.quota) if queue is not None else None,
                "preemptions": tally.preemptions if tally is not None else 0,
            }
        )
    return {
        "time": snapshot.time,
        "kind": kind,
        "total": len(names),
        "offset": window.start,
        "limit": page.limit,
        "items": items,
    }


def _key_of(pod: PodRecord, kind: str) -> str:
    if kind == NAMESPACE:
        return pod.namespace
    if kind == LOCAL_QUEUE:
        return pod.local_queue
    if kind == CLUSTER_QUEUE:
        return pod.cluster_queue
    return pod.group


def _ratio(share: Share | None) -> float | None:
    ratio = share.ratio if share is not None else None
    return round(ratio, 3) if ratio is not None else None


def _quota(row: Quota) -> dict[str, Any]:
    def text(value: int | None) -> str | None:
        return format_amount(row.resource, value) if value is not None else None

    return {
        "flavor": row.flavor,
        "resource": row.resource,
        "nominal": text(row.nominal),
        "usage": text(row.usage),
        "borrowed": text(row.borrowed),
        "borrowingLimit": text(row.borrowing_limit),
        "lendingLimit": text(row.lending_limit),
        # Usage over nominal quota (above 1: borrowing).
        "used": round(row.usage / row.nominal, 3) if row.nominal > 0 else None,
    }


def _waits(values: list[float]) -> dict[str, float | int | None]:
    def rounded(value: float | None) -> float | None:
        return round(value, 1) if value is not None else None

    return {
        "count": len(values),
        "p50": rounded(percentile(values, 50)),
        "p95": rounded(percentile(values, 95)),
        "max": rounded(max(values, default=None)) if values else None,
    }


def app_view(
    snapshot: Snapshot, kind: str, name: str, *, pending_page: Page, running_page: Page
) -> dict[str, Any]:
    check_kind(kind)
    if name not in _names(snapshot, kind):
        raise QueryError(f"no {kind} named {name[:100]!r}", 404)
    now = snapshot.time
    member = _member(kind, name)
    pods = [p for p in snapshot.pods if member(p)]
    pending = [p for p in pods if not p.node]
    running = [p for p in pods if p.node]
    pending.sort(key=lambda p: (p.created if p.created is not None else now, p.key))
    share = _shares(snapshot, kind).get(name)
    tally = snapshot.tallies.get(f"{kind}/{name}")
    document: dict[str, Any] = {
        "time": now,
        "app": f"{kind}/{name}",
        "kind": kind,
        "name": name,
        "links": _links(snapshot, kind, name, pods),
        "gpus": {
            "held": round(sum(p.gpus for p in running), 3),
            "pending": round(sum(p.gpus for p in pending), 3),
            "fair": round(share.fair, 3) if share is not None else None,
            "ratio": _ratio(share),
            "weight": share.weight if share is not None else None,
        },
        "decisionsSeen": snapshot.decisions_seen,
        "preemptions": tally.preemptions if tally is not None else 0,
        "admissions": tally.admissions if tally is not None else 0,
        "waits": {
            "started": _waits(list(tally.waits) if tally is not None else []),
            "pending": _waits([now - p.created for p in pending if p.created is not None]),
        },
        "reasons": _reasons(pending),
        "pending": _page(pending, pending_page, now),
        "running": _page(sorted(running, key=lambda p: p.key), running_page, now),
    }
    if kind == CLUSTER_QUEUE:
        queue = next(q for q in snapshot.cluster_queues if q.name == name)
        document["kueue"] = {
            "cohort": queue.cohort,
            "weight": queue.weight,
            "weightedShare": queue.weighted_share,
            "dominantResource": queue.dominant_resource,
            "pendingWorkloads": queue.pending_workloads,
            "admittedWorkloads": queue.admitted_workloads,
            "inactive": queue.inactive,
        }
        document["quota"] = [_quota(q) for q in queue.quota]
    elif kind == LOCAL_QUEUE:
        local = next((q for q in snapshot.local_queues if q.key == name), None)
        if local is not None:
            document["kueue"] = {
                "clusterQueue": local.cluster_queue,
                "pendingWorkloads": local.pending_workloads,
                "admittedWorkloads": local.admitted_workloads,
            }
            document["quota"] = [
                {"flavor": f, "resource": r, "usage": format_amount(r, v)} for f, r, v in local.usage
            ]
    return document


def _reasons(pending: list[PodRecord]) -> list[dict[str, Any]]:
    counts: dict[str, list[float]] = {}
    for pod in pending:
        entry = counts.setdefault(reason_kind(pod.reason), [0, 0.0])
        entry[0] += 1
        entry[1] += pod.gpus
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_REASONS]
    return [{"reason": r, "pods": int(v[0]), "gpus": round(v[1], 3)} for r, v in ordered]


def _page(pods: list[PodRecord], page: Page, now: float) -> dict[str, Any]:
    window = page.cut(len(pods))
    return {
        "total": len(pods),
        "offset": window.start,
        "limit": page.limit,
        "items": [pod_row(p, now) for p in pods[window]],
    }


def _links(snapshot: Snapshot, kind: str, name: str, pods: list[PodRecord]) -> dict[str, Any]:
    """The other applications this one touches: its namespaces, queues, cohort, pod groups."""
    local = sorted({p.local_queue for p in pods if p.local_queue})
    cluster = sorted({p.cluster_queue for p in pods if p.cluster_queue})
    if kind == LOCAL_QUEUE:
        cluster = sorted({q.cluster_queue for q in snapshot.local_queues if q.key == name} | set(cluster))
    if kind == CLUSTER_QUEUE:
        local = sorted({q.key for q in snapshot.local_queues if q.cluster_queue == name} | set(local))
    cohort = next((q.cohort for q in snapshot.cluster_queues if q.name in cluster or q.name == name), "")
    links = {
        NAMESPACE: sorted(
            {p.namespace for p in pods} | ({n.split("/")[0] for n in local} if kind != NAMESPACE else set())
        ),
        LOCAL_QUEUE: local,
        CLUSTER_QUEUE: cluster,
        POD_GROUP: sorted({p.group for p in pods if p.group})[:50],
        "cohort": cohort,
        "nodes": sorted({p.node for p in pods if p.node})[:50],
    }
    links[kind] = [n for n in links[kind] if n != name] if isinstance(links[kind], list) else links[kind]
    return links

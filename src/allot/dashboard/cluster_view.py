"""The cluster view: GPUs by model and node pool, fragmentation, pending work, fair shares, history.

`cluster_view(snapshot, history)` aggregates server-side into a document whose size does not
grow with the cluster: one row per GPU model and per node pool, the `TOP_REASONS` commonest
pending reasons (normalised as the report does: names and counts taken out), the `TOP_PENDING`
pending pods holding the most GPU-hours of waiting, one row per application of the default
kind (`allot.dashboard.fairness`), and at most `MAX_POINTS` history points.
"""

from __future__ import annotations

import functools
from typing import Any

from allot.dashboard.apps import CLUSTER_QUEUE, LOCAL_QUEUE, NAMESPACE, POD_GROUP
from allot.dashboard.fairness import Share, shares
from allot.dashboard.history import Point, totals
from allot.dashboard.measures import STATES, gpu_states, pending_work, summed
from allot.dashboard.model import PodRecord, Snapshot
from allot.sim.recorder import normalise_reason

TOP_REASONS = 8
TOP_PENDING = 20
MAX_POINTS = 720
MAX_APPS = 50


_FIELDS = (("gpus", "total"), ("ready", "ready"), ("allocated", "allocated"), ("inUse", "in_use"),
           ("fragmented", "stranded"), ("unhealthy", "unhealthy"))  # fmt: skip


def _row(states: dict[str, float]) -> dict[str, float | int]:
    return {
        name: int(states[state]) if state in ("total", "ready", "unhealthy") else round(states[state], 3)
        for name, state in _FIELDS
    }


@functools.lru_cache(maxsize=4096)
def reason_kind(reason: str) -> str:
    """A pending reason without the names and counts that make each pod's unique (the report's
    normalisation), computed once per distinct text."""
    return normalise_reason(reason)


def thin(points: list[Point], limit: int = MAX_POINTS) -> list[Point]:
    """At most `limit` points, evenly picked, the last one always kept."""
    if len(points) <= limit:
        return points
    step = len(points) / limit
    picked = [points[int(i * step)] for i in range(limit - 1)]
    return [*picked, points[-1]]


def app_link(kind: str, name: str) -> str:
    return f"{kind}/{name}"


def cluster_view(snapshot: Snapshot, history: list[Point]) -> dict[str, Any]:
    now = snapshot.time
    states = gpu_states(snapshot)
    nodes: dict[str, list[int]] = {}
    for node in snapshot.nodes:
        counts = nodes.setdefault(node.pool, [0, 0])
        counts[0] += 1
        counts[1] += node.ready
    point = totals(snapshot)
    work = pending_work(snapshot)
    pending = [p for p in snapshot.pods if not p.node]
    reasons: dict[str, list[float]] = {}
    # (-GPU-seconds waited, -seconds waited, pod): the most GPU time waiting first.
    waited: list[tuple[float, float, str]] = []
    for pod in pending:
        wait = max(0.0, now - pod.created) if pod.created is not None else 0.0
        entry = reasons.setdefault(reason_kind(pod.reason), [0, 0.0])
        entry[0] += 1
        entry[1] += pod.gpus
        waited.append((-pod.gpus * wait, -wait, pod.key))
    waited.sort()
    by_key = {p.key: p for p in pending}
    by_pool = summed(states, 0)
    empty = dict.fromkeys(STATES, 0.0)
    return {
        "time": now,
        "source": snapshot.source,
        "title": snapshot.title,
        "totals": {
            "nodes": len(snapshot.nodes),
            "nodesReady": sum(1 for n in snapshot.nodes if n.ready),
            "gpus": sum(len(n.gpus) for n in snapshot.nodes),
            "ready": point.ready,
            "allocated": point.allocated,
            "inUse": point.in_use,
            "fragmented": point.fragmented,
            "unhealthy": int(summed(states).get("", empty)["unhealthy"]),
            "pods": len(snapshot.pods),
        },
        "byModel": [{"model": m, **_row(r)} for m, r in sorted(summed(states, 1).items())],
        "byPool": [
            {"pool": p, "nodes": n[0], "nodesReady": n[1], **_row(by_pool.get(p, empty))}
            for p, n in sorted(nodes.items())
        ],
        "pending": {
            "pods": work.pods,
            "gpus": round(work.gpus, 3),
            "gpuHours": round(work.gpu_hours, 3),
            "oldest": round(work.oldest, 1),
            "reasons": [
                {"reason": r, "pods": int(v[0]), "gpus": round(v[1], 3)}
                for r, v in sorted(reasons.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_REASONS]
            ],
            "top": [pod_row(by_key[key], now) for _, _, key in waited[:TOP_PENDING]],
        },
        "apps": [
            _apps(snapshot, kind)
            for kind in (NAMESPACE, CLUSTER_QUEUE)
            if kind == NAMESPACE or snapshot.cluster_queues
        ],
        "history": [list(point_values(p)) for p in thin(history)],
        "historyFields": ["time", "ready", "allocated", "inUse", "fragmented", "pendingPods", "pendingGpus"],
    }


def _apps(snapshot: Snapshot, kind: str) -> dict[str, Any]:
    """The applications of `kind` with the most GPUs held and asked for, against their fair share."""
    found = shares(snapshot, kind)
    found.sort(key=lambda s: (-(s.held + s.pending), s.name))
    return {"kind": kind, "total": len(found), "items": [share_row(kind, s) for s in found[:MAX_APPS]]}


def point_values(point: Point) -> tuple[float, float, float, float, float, int, float]:
    return (
        point.time,
        point.ready,
        point.allocated,
        point.in_use,
        point.fragmented,
        point.pending_pods,
        point.pending_gpus,
    )


def pod_row(pod: PodRecord, now: float) -> dict[str, Any]:
    """A pod as every view lists it, with links to its node and applications; a pending pod
    with how long it has waited and why."""
    links = [app_link(NAMESPACE, pod.namespace)]
    if pod.local_queue:
        links.append(app_link(LOCAL_QUEUE, pod.local_queue))
    if pod.cluster_queue:
        links.append(app_link(CLUSTER_QUEUE, pod.cluster_queue))
    if pod.group:
        links.append(app_link(POD_GROUP, pod.group))
    row: dict[str, Any] = {
        "pod": pod.key,
        "node": pod.node,
        "phase": pod.phase,
        "gpus": pod.gpus,
        "priority": pod.priority,
        "apps": links,
    }
    if not pod.node:
        row["waited"] = round(max(0.0, now - pod.created), 1) if pod.created is not None else None
        row["reason"] = pod.reason
    return row


def share_row(kind: str, share: Share) -> dict[str, Any]:
    ratio = share.ratio
    return {
        "app": app_link(kind, share.name),
        "name": share.name,
        "weight": share.weight,
        "held": round(share.held, 3),
        "pending": round(share.pending, 3),
        "pendingPods": share.pending_pods,
        "fair": round(share.fair, 3),
        "ratio": round(ratio, 3) if ratio is not None else None,
    }

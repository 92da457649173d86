"""The cluster view: GPUs by model and node pool, fragmentation, pending work, fair shares, history.

`cluster_view(snapshot, history)` aggregates server-side into a document whose size does not
grow with the cluster: one row per GPU model and per node pool, the `TOP_REASONS` commonest
pending reasons (normalised as the report does: names and counts taken out), the `TOP_PENDING`
pending pods holding the most GPU-hours of waiting, one row per application of the default
kind (`allot.dashboard.fairness`), and at most `MAX_POINTS` history points.
"""

from __future__ import annotations

from typing import Any

from allot.dashboard.apps import CLUSTER_QUEUE, LOCAL_QUEUE, NAMESPACE, POD_GROUP
from allot.dashboard.fairness import Share, default_kind, shares
from allot.dashboard.history import EPSILON, Point, totals
from allot.dashboard.model import PodRecord, Snapshot
from allot.sim.recorder import normalise_reason

TOP_REASONS = 8
TOP_PENDING = 20
MAX_POINTS = 720
MAX_APPS = 50
HOUR = 3600.0


def _row(*, nodes: bool) -> dict[str, float]:
    row = {"gpus": 0.0, "ready": 0.0, "allocated": 0.0, "inUse": 0.0, "fragmented": 0.0}
    return {"nodes": 0.0, "nodesReady": 0.0, **row} if nodes else row


def _add_gpus(row: dict[str, float], ready: bool, allocated: float, in_use: float, healthy: bool) -> None:
    row["gpus"] += 1
    row["allocated"] += allocated
    row["inUse"] += in_use
    if ready and healthy:
        row["ready"] += 1
        if EPSILON < allocated < 1 - EPSILON:
            row["fragmented"] += 1 - allocated


def _rounded(row: dict[str, float]) -> dict[str, float | int]:
    return {k: int(v) if k in _COUNTS else round(v, 3) for k, v in row.items()}


_COUNTS = frozenset({"nodes", "nodesReady", "gpus", "ready"})


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
    by_model: dict[str, dict[str, float]] = {}
    by_pool: dict[str, dict[str, float]] = {}
    unhealthy = 0
    for node in snapshot.nodes:
        pool = by_pool.setdefault(node.pool, _row(nodes=True))
        pool["nodes"] += 1
        pool["nodesReady"] += int(node.ready)
        for gpu in node.gpus:
            model = by_model.setdefault(gpu.model or gpu.mode, _row(nodes=False))
            for row in (model, pool):
                _add_gpus(row, node.ready, gpu.allocated, gpu.in_use, gpu.healthy)
            unhealthy += int(not gpu.healthy)
    point = totals(snapshot)
    pending = [p for p in snapshot.pods if not p.node]
    reasons: dict[str, list[float]] = {}
    waited: list[tuple[float, str]] = []
    gpu_hours = 0.0
    oldest = 0.0
    for pod in pending:
        wait = max(0.0, now - pod.created) if pod.created is not None else 0.0
        oldest = max(oldest, wait)
        gpu_hours += pod.gpus * wait / HOUR
        entry = reasons.setdefault(normalise_reason(pod.reason), [0, 0.0])
        entry[0] += 1
        entry[1] += pod.gpus
        waited.append((-pod.gpus * wait, pod.key))
    waited.sort()
    by_key = {p.key: p for p in pending}
    kind = default_kind(snapshot)
    apps = shares(snapshot, kind)
    apps.sort(key=lambda s: (-(s.held + s.pending), s.name))
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
            "unhealthy": unhealthy,
            "pods": len(snapshot.pods),
        },
        "byModel": [{"model": m, **_rounded(r)} for m, r in sorted(by_model.items())],
        "byPool": [{"pool": p, **_rounded(r)} for p, r in sorted(by_pool.items())],
        "pending": {
            "pods": len(pending),
            "gpus": point.pending_gpus,
            "gpuHours": round(gpu_hours, 3),
            "oldest": round(oldest, 1),
            "reasons": [
                {"reason": r, "pods": int(v[0]), "gpus": round(v[1], 3)}
                for r, v in sorted(reasons.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_REASONS]
            ],
            "top": [pod_row(by_key[key], now) for _, key in waited[:TOP_PENDING]],
        },
        "apps": {
            "kind": kind,
            "total": len(apps),
            "items": [share_row(kind, s) for s in apps[:MAX_APPS]],
        },
        "history": [list(point_values(p)) for p in thin(history)],
        "historyFields": ["time", "ready", "allocated", "inUse", "fragmented", "pendingPods", "pendingGpus"],
    }


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

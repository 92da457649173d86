"""Refusing to share Kueue's queues with Kueue's own controller manager.

allot replaces Kueue's admission for the pods it schedules; two admitters over the same
ClusterQueues would each count quota the other does not see. Before allot admits anything (and
whenever it looks for newly installed kinds) it checks for a live Kueue manager:

* its leader-election Lease (`kueue-system/c1f6bfd2.kueue.x-k8s.io` by default, Kueue's
  `leaderElection.resourceName`) held and renewed within its lease duration, or
* a Workload whose quota was reserved in one of the ClusterQueues within the last five minutes
  (allot writes no Workload objects, so someone else admitted it).

Either one is reported as a reason; `allot run` then stops with an error naming it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from allot.live.client import ApiClient, ApiError, NotFound

KUEUE_LEASE = ("kueue-system", "c1f6bfd2.kueue.x-k8s.io")
RECENT = timedelta(minutes=5)


def _parse(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


async def lease_holder(client: ApiClient, namespace: str, name: str, now: datetime) -> str | None:
    """The holder of Kueue's leader Lease when it was renewed within its duration, else None."""
    try:
        lease: dict[str, Any] = await client.get(
            f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        )
    except NotFound:
        return None
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity")
    renewed = _parse(spec.get("renewTime"))
    duration = timedelta(seconds=float(spec.get("leaseDurationSeconds") or 15))
    if holder and renewed is not None and now - renewed <= duration:
        return str(holder)
    return None


async def recent_admission(client: ApiClient, version: str, queues: set[str], now: datetime) -> str | None:
    """A Workload admitted into one of `queues` within `RECENT`, as `namespace/name in queue`."""
    try:
        body = await client.get(f"/apis/kueue.x-k8s.io/{version}/workloads", {"limit": "500"})
    except NotFound:
        return None
    for item in body.get("items") or ():
        status = item.get("status") or {}
        queue = (status.get("admission") or {}).get("clusterQueue")
        if queue not in queues:
            continue
        for condition in status.get("conditions") or ():
            if condition.get("type") == "QuotaReserved" and condition.get("status") == "True":
                stamp = _parse(condition.get("lastTransitionTime"))
                if stamp is not None and now - stamp <= RECENT:
                    meta = item.get("metadata") or {}
                    return f"{meta.get('namespace')}/{meta.get('name')} in ClusterQueue {queue}"
    return None


async def kueue_manager_active(
    client: ApiClient, *, workload_version: str | None, queues: set[str], lease: tuple[str, str] = KUEUE_LEASE
) -> str | None:
    """Why a Kueue controller manager looks active over `queues` (None when it does not)."""
    now = datetime.now(UTC)
    try:
        holder = await lease_holder(client, *lease, now)
        if holder is not None:
            return f"Kueue's controller manager holds its leader Lease {lease[0]}/{lease[1]} ({holder})"
        if workload_version is not None and queues:
            admitted = await recent_admission(client, workload_version, queues, now)
            if admitted is not None:
                return f"Kueue admitted workload {admitted} in the last {RECENT.seconds // 60} minutes"
    except ApiError as error:
        if error.status == 403:
            return None  # not allowed to look: the RBAC in deploy/ grants it; say nothing rather than guess
        raise
    return None

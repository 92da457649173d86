"""Kueue's queues on a live cluster: a flooding tenant borrows, another reclaims its quota, and
`kubectl get clusterqueues` shows what allot admitted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    bound_nodes,
    create_node,
    eventually,
    pod_manifest,
    pods,
    serve_kueue_crds,
)
from live.kueue_crds import team_queues

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def _queues() -> list[dict[str, Any]]:
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "default-flavor"},
    }
    cohort = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "research"}}
    objects: list[dict[str, Any]] = [flavor, cohort]
    for team in ("flood", "steady"):
        objects += team_queues(team, "research", {"cpu": "4"})
    return objects


@pytest.fixture
def plane(fresh_control_plane: ControlPlane) -> Iterator[ControlPlane]:
    plane = fresh_control_plane
    plane.start_controller_manager()  # its node lifecycle controller lifts the not-ready taint
    serve_kueue_crds(plane)
    for team in ("flood", "steady"):
        plane.kubectl("create", "namespace", team)
    for obj in _queues():
        plane.apply(json.dumps(obj))
    create_node(plane, "cpu-1", cpu="8")
    yield plane


def _queued(name: str, team: str) -> str:
    return pod_manifest(name, namespace=team, cpu="1", labels={QUEUE_LABEL: "main"})


def test_a_flood_borrows_the_idle_quota_and_the_other_tenant_reclaims_it(plane: ControlPlane) -> None:
    with AllotProcess(plane) as allot:
        for i in range(12):
            plane.apply(_queued(f"flood-{i}", "flood"))
        # The cohort holds 8 CPUs: the flood takes its 4 and borrows the steady team's idle 4.
        eventually(lambda: len(bound_nodes(plane, "flood")) == 8, what="flood admitted up to the cohort")
        cq = eventually(lambda: (q := plane.get("clusterqueue", "flood")).get("status", {}).get("pendingWorkloads") == 4 and q,
                        what="ClusterQueue status")  # fmt: skip
        assert cq["status"]["admittedWorkloads"] == 8
        usage = cq["status"]["flavorsUsage"][0]["resources"][0]
        assert (usage["name"], usage["total"], usage["borrowed"]) == ("cpu", "8", "4")
        for i in range(4):
            plane.apply(_queued(f"steady-{i}", "steady"))
        # The steady team reclaims its nominal quota: 4 of the flood's borrowed workloads are preempted.
        eventually(lambda: len(bound_nodes(plane, "steady")) == 4, what="steady team admitted", timeout=90)
        eventually(lambda: len(bound_nodes(plane, "flood")) == 4, what="flood back to its nominal quota")
        steady = eventually(lambda: (q := plane.get("clusterqueue", "steady")).get("status", {}).get("admittedWorkloads") == 4 and q,
                            what="steady status")  # fmt: skip
        assert steady["status"]["flavorsUsage"][0]["resources"][0]["total"] == "4"
        lq = plane.get("localqueue", "main", namespace="steady")
        assert lq["status"]["admittedWorkloads"] == 4  # type: ignore[index]
        assert allot.alive(), allot.output()[-3000:]
    # Preempted pods are deleted (their owners would re-create them); none is left half-bound.
    assert all(p["spec"].get("nodeName") for p in pods(plane, "steady").values())


def test_finished_and_deleted_workloads_give_their_quota_to_the_next_in_line(plane: ControlPlane) -> None:
    with AllotProcess(plane) as allot:
        for i in range(11):
            plane.apply(_queued(f"flood-{i}", "flood"))
        eventually(lambda: len(bound_nodes(plane, "flood")) == 8, what="flood admitted up to the cohort")
        running = sorted(bound_nodes(plane, "flood"))
        waiting = sorted(set(pods(plane, "flood")) - set(running))
        # One pending workload is deleted: it leaves its queue (nothing else changes).
        plane.kubectl("delete", "pod", "-n", "flood", waiting[0], "--wait=false")
        # Two running ones complete (their kubelet would report it) and one is deleted: three CPUs
        # of quota come back, and the two still pending are admitted.
        for name in running[:2]:
            plane.request("PATCH", f"/api/v1/namespaces/flood/pods/{name}/status", {"status": {"phase": "Succeeded"}},
                          content_type="application/merge-patch+json")  # fmt: skip
        plane.kubectl("delete", "pod", "-n", "flood", running[2], "--grace-period=0", "--force")
        eventually(lambda: set(waiting[1:]) <= set(bound_nodes(plane, "flood")), what="the rest admitted")
        cq = eventually(lambda: (q := plane.get("clusterqueue", "flood")).get("status", {}).get("admittedWorkloads") == 7 and q,
                        what="ClusterQueue status")  # fmt: skip
        assert cq["status"]["pendingWorkloads"] == 0
        assert cq["status"]["flavorsUsage"][0]["resources"][0]["total"] == "7"
        assert allot.alive(), allot.output()[-3000:]


def _now(offset_seconds: float = 0.0) -> str:
    import datetime

    stamp = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=offset_seconds)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _workload(name: str, admitted_at: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": name, "namespace": "flood"},
        "spec": {"queueName": "main", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
    }  # fmt: skip


def _admit(plane: ControlPlane, name: str, stamp: str) -> None:
    status = {"status": {"admission": {"clusterQueue": "flood", "podSetAssignments": []}, "conditions": [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "by Kueue",
         "lastTransitionTime": stamp[:19] + "Z"}]}}  # fmt: skip
    plane.request("PATCH", f"/apis/kueue.x-k8s.io/v1beta2/namespaces/flood/workloads/{name}/status", status,
                  content_type="application/merge-patch+json")  # fmt: skip


def _exits(plane: ControlPlane) -> tuple[int, str]:
    allot = AllotProcess(plane)
    code = allot.process.wait(60)
    return code, allot.output()


def test_allot_refuses_to_admit_beside_a_live_kueue_manager(plane: ControlPlane) -> None:
    # A workload Kueue admitted long ago (Kueue stopped since) does not stop allot.
    plane.apply(json.dumps(_workload("old", _now(-3600))))
    _admit(plane, "old", _now(-3600))
    with AllotProcess(plane) as allot:
        plane.apply(_queued("flood-0", "flood"))
        eventually(
            lambda: bound_nodes(plane, "flood").get("flood-0"), what="allot admits beside a stale Workload"
        )
        assert allot.alive()
    # One admitted a moment ago means a Kueue manager is at work: allot will not start.
    plane.apply(json.dumps(_workload("fresh", _now())))
    _admit(plane, "fresh", _now())
    code, output = _exits(plane)
    assert code == 1
    assert "Kueue admitted workload flood/fresh in ClusterQueue flood" in output
    plane.kubectl("delete", "workload", "fresh", "-n", "flood")
    # Kueue's leader Lease held and renewed: the same.
    plane.kubectl("create", "namespace", "kueue-system")
    plane.apply(json.dumps({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "c1f6bfd2.kueue.x-k8s.io", "namespace": "kueue-system"},
        "spec": {"holderIdentity": "kueue-controller-manager-0", "leaseDurationSeconds": 60, "renewTime": _now()},
    }))  # fmt: skip
    code, output = _exits(plane)
    assert code == 1
    assert "leader Lease kueue-system/c1f6bfd2.kueue.x-k8s.io" in output

"""Kueue's Job integration on a real API server: Jobs sent to a queue are created suspended by
allot's webhook, admitted by allot within quota (all pods placed or none), started with their
flavor's node labels, hold their quota until they finish, survive allot's restart without being
admitted twice, and are suspended again when a higher-priority Job preempts them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    claim_template,
    create_node,
    eventually,
    gpu_class,
    gpu_slice,
    metric,
    no_device_twice,
    pod_claim_devices,
    register_job_webhook,
    serve_kueue_crds,
    webhook_flags,
)

NS = "team"
ADMISSION = "allot.dev/job-admission"


def _queues() -> list[dict[str, Any]]:
    kueue = "kueue.x-k8s.io/v1beta2"
    return [
        {"apiVersion": kueue, "kind": "ResourceFlavor", "metadata": {"name": "pool-a"},
         "spec": {"nodeLabels": {"pool": "a"}}},
        {"apiVersion": kueue, "kind": "ClusterQueue", "metadata": {"name": "team"}, "spec": {
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "pool-a", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}},
        {"apiVersion": kueue, "kind": "LocalQueue", "metadata": {"name": "main", "namespace": NS},
         "spec": {"clusterQueue": "team"}},
        {"apiVersion": kueue, "kind": "WorkloadPriorityClass", "metadata": {"name": "low"}, "value": 10},
        {"apiVersion": kueue, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 100},
    ]  # fmt: skip


@pytest.fixture
def plane(fresh_control_plane: ControlPlane) -> Iterator[ControlPlane]:
    plane = fresh_control_plane
    # The Job controller makes the pods of started Jobs; the node lifecycle controller lifts
    # the not-ready taint.
    plane.start_controller_manager()
    serve_kueue_crds(plane)
    plane.kubectl("create", "namespace", NS)
    for obj in _queues():
        plane.apply(json.dumps(obj))
    # pool-a holds the flavor; pool-b has room too, but the admitted pods must not go there.
    create_node(plane, "a-1", cpu="8", labels={"pool": "a"})
    create_node(plane, "b-1", cpu="8", labels={"pool": "b"})
    yield plane


def _job(name: str, *, pods: int = 2, cpu: str = "2", priority: str | None = None,
         gpu_template: str | None = None, scheduler: str | None = None) -> str:  # fmt: skip
    labels = {"kueue.x-k8s.io/queue-name": "main"}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": cpu}}}  # fmt: skip
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
    }
    if gpu_template:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": gpu_template}]
        container["resources"]["claims"] = [{"name": "gpu"}]
    if scheduler:
        spec["schedulerName"] = scheduler
    return json.dumps({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"parallelism": pods, "completions": pods, "template": {"spec": spec}},
    })  # fmt: skip


def _jobs(plane: ControlPlane) -> dict[str, dict[str, Any]]:
    return {j["metadata"]["name"]: j for j in plane.get("jobs", namespace=NS)["items"]}  # type: ignore[union-attr]


def _running(plane: ControlPlane) -> set[str]:
    return {name for name, job in _jobs(plane).items() if job["spec"].get("suspend") is False}


def _pods_of(plane: ControlPlane, job: str) -> list[dict[str, Any]]:
    items = plane.get("pods", namespace=NS)["items"]
    return [
        p for p in items  # type: ignore[union-attr]
        if p["metadata"].get("labels", {}).get("batch.kubernetes.io/job-name") == job
        and not p["metadata"].get("deletionTimestamp")
        and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]  # fmt: skip


def _bound(plane: ControlPlane, job: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in _pods_of(plane, job)
        if p["spec"].get("nodeName")
    }


def _succeed(plane: ControlPlane, job: str) -> None:
    for pod in _pods_of(plane, job):
        plane.kubectl("patch", "pod", pod["metadata"]["name"], "-n", NS, "--subresource=status",
                      "--type=merge", "-p", json.dumps({"status": {"phase": "Succeeded"}}))  # fmt: skip


def _job_events(plane: ControlPlane, job: str) -> dict[str, str]:
    """Reason -> note of the events allot wrote about a Job (what `kubectl describe job` shows)."""
    items = plane.get("events.v1.events.k8s.io", namespace=NS)["items"]
    return {
        e["reason"]: e.get("note", "") for e in items  # type: ignore[union-attr]
        if e["regarding"].get("kind") == "Job" and e["regarding"].get("name") == job
    }  # fmt: skip


def _cq_counts(plane: ControlPlane) -> tuple[int, int] | None:
    status = plane.get("clusterqueue", "team").get("status") or {}
    if "admittedWorkloads" not in status:  # type: ignore[operator]
        return None
    return status["admittedWorkloads"], status["pendingWorkloads"]  # type: ignore[index]


def test_jobs_are_admitted_within_quota_started_on_their_flavor_and_hold_quota_until_they_finish(
    plane: ControlPlane, tmp_path: Path
) -> None:
    with AllotProcess(plane, *webhook_flags(plane, tmp_path)) as allot:
        register_job_webhook(plane, allot)
        plane.apply(_job("first"))
        eventually(lambda: _running(plane) == {"first"}, what="the first Job started")
        plane.apply(_job("second"))
        bound = eventually(lambda: len(b := _bound(plane, "first")) == 2 and b, what="first's pods bound")
        # Its flavor's node labels were injected: the pods went to pool a, never to pool b.
        assert set(bound.values()) == {"a-1"}
        first = _jobs(plane)["first"]
        assert first["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "a"}
        recorded = json.loads(first["metadata"]["annotations"][ADMISSION])
        assert recorded["flavors"] == {"main/cpu": "pool-a"}
        # The quota (4 CPUs) is the first Job's: the second stays suspended, without pods.
        eventually(lambda: _cq_counts(plane) == (1, 1), what="ClusterQueue: 1 admitted, 1 pending")
        assert _running(plane) == {"first"} and not _pods_of(plane, "second")
        # /metrics counts Jobs by state (placeholders are not pending pods).
        eventually(
            lambda: (
                (
                    metric(allot, "allot_kueue_jobs", state="admitted"),
                    metric(allot, "allot_kueue_jobs", state="queued"),
                )
                == (1, 1)
            ),
            what="Job metrics",
        )
        assert metric(allot, "scheduler_pending_pods", queue="active") == 0
        # Each Job is told what happened to it: the first started, the second why it waits.
        eventually(lambda: "Started" in _job_events(plane, "first"), what="Started event")
        pending = eventually(lambda: _job_events(plane, "second").get("Pending"), what="Pending event")
        assert "quota" in pending, pending
        # A quota change rebuilds admission: the running Job keeps its 4 CPUs, so 6 still leave
        # the second waiting.
        queue = _queues()[1]
        queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "6"
        plane.apply(json.dumps(queue))
        eventually(
            lambda: (plane.get("clusterqueue", "team").get("status") or {}).get("flavorsUsage"),  # type: ignore[union-attr]
            what="ClusterQueue usage",
        )
        time.sleep(2)
        assert _running(plane) == {"first"} and _cq_counts(plane) == (1, 1)
        # One pod finishing does not release the quota: the Job still runs.
        _succeed_one = _pods_of(plane, "first")[0]["metadata"]["name"]
        plane.kubectl("patch", "pod", _succeed_one, "-n", NS, "--subresource=status", "--type=merge",
                      "-p", json.dumps({"status": {"phase": "Succeeded"}}))  # fmt: skip
        eventually(lambda: len(_pods_of(plane, "first")) == 1, what="one pod of the first Job done")
        assert _running(plane) == {"first"}
        _succeed(plane, "first")
        # The Job completes: its quota goes to the second, whose pods are placed.
        eventually(lambda: "second" in _running(plane), what="the second Job started", timeout=90)
        eventually(lambda: len(_bound(plane, "second")) == 2, what="second's pods bound")
        eventually(lambda: _cq_counts(plane) == (1, 0), what="ClusterQueue: 1 admitted, 0 pending")
        conditions = {c["type"]: c["status"] for c in _jobs(plane)["first"]["status"].get("conditions", [])}
        assert conditions.get("Complete") == "True"


def test_a_restarted_allot_keeps_a_running_jobs_quota_and_a_higher_priority_job_preempts_it(
    plane: ControlPlane, tmp_path: Path
) -> None:
    flags = webhook_flags(plane, tmp_path)
    with AllotProcess(plane, *flags) as allot:
        register_job_webhook(plane, allot)
        plane.apply(_job("low", priority="low"))
        eventually(lambda: len(_bound(plane, "low")) == 2, what="the low Job's pods bound")
        allot.kill()
    with AllotProcess(plane, *flags) as allot:
        register_job_webhook(plane, allot)
        plane.apply(_job("peer", priority="low"))
        # The restarted allot counts the running Job's quota: the peer waits.
        eventually(lambda: _cq_counts(plane) == (1, 1), what="ClusterQueue: 1 admitted, 1 pending")
        assert _running(plane) == {"low"} and not _pods_of(plane, "peer")
        plane.apply(_job("urgent", priority="high"))
        # The urgent Job preempts the low one: suspended again, its pods deleted, its quota taken.
        eventually(lambda: _running(plane) == {"urgent"}, what="urgent started, low suspended", timeout=90)
        eventually(lambda: len(_bound(plane, "urgent")) == 2, what="urgent's pods bound")
        eventually(lambda: not _pods_of(plane, "low"), what="the low Job's pods gone")
        low = _jobs(plane)["low"]
        assert ADMISSION not in (low["metadata"].get("annotations") or {})
        assert "Preempted" in _job_events(plane, "low").get("Stopped", "")
        eventually(lambda: _cq_counts(plane) == (1, 2), what="ClusterQueue: 1 admitted, 2 pending")


KUEUE_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
resources:
  deviceClassMappings:
  - name: example.com/gpu
    deviceClassNames: [gpu]
"""


def test_a_job_started_without_admission_is_suspended_and_jobs_with_claim_templates_get_their_devices(
    plane: ControlPlane, tmp_path: Path
) -> None:
    config = tmp_path / "kueue.yaml"
    config.write_text(KUEUE_CONFIG)
    # GPUs from claims count against quota through the mapping: 4 of them.
    queue = _queues()[1]
    queue["spec"]["resourceGroups"][0]["coveredResources"].append("example.com/gpu")
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"].append(
        {"name": "example.com/gpu", "nominalQuota": "4"}
    )
    plane.apply(json.dumps(queue))
    plane.apply(gpu_slice("a-1", 2))
    plane.apply(gpu_class())
    plane.apply(claim_template("one-gpu", namespace=NS))
    # No webhook: this Job starts at once, and its controller makes pods before any admission.
    plane.apply(_job("eager", cpu="1", gpu_template="one-gpu", scheduler="allot"))
    eventually(lambda: len(_pods_of(plane, "eager")) == 2, what="eager's pods created")
    with AllotProcess(plane, f"--kueue-config={config}"):
        # allot suspends it (as Kueue does), then admits it: its pods are re-made and placed,
        # each with one of a-1's two GPUs.
        eventually(lambda: len(_bound(plane, "eager")) == 2, what="eager's pods bound", timeout=90)
        job = _jobs(plane)["eager"]
        assert ADMISSION in job["metadata"]["annotations"]
        devices = pod_claim_devices(plane, NS)
        assert sorted(d for pod in _bound(plane, "eager") for d in devices[pod]) == [
            ("a-1", "gpu-0"), ("a-1", "gpu-1")]  # fmt: skip
        # A second GPU Job waits: the devices (not the CPU quota) are what it lacks.
        plane.apply(_job("later", cpu="1", gpu_template="one-gpu", scheduler="allot", pods=1))
        eventually(lambda: _jobs(plane).get("later", {}).get("spec", {}).get("suspend") is True,
                   what="later suspended by allot")  # fmt: skip
        assert not _bound(plane, "later")
        # Deleting the running Job frees its quota and devices: the waiting one starts on them.
        plane.kubectl("delete", "job", "eager", "-n", NS, "--cascade=foreground", "--wait=false")
        eventually(lambda: len(_bound(plane, "later")) == 1, what="later's pod bound", timeout=90)
        assert no_device_twice(plane, [NS]) == []

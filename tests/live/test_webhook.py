"""The Job webhook registered with a real API server: Jobs sent to a Kueue queue are created suspended."""

from __future__ import annotations

import json
from pathlib import Path

from controlplane import ControlPlane
from live.cluster import AllotProcess, register_job_webhook, webhook_flags

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "", "namespace": "default", "labels": {}},
    "spec": {
        "parallelism": 2,
        "completions": 2,
        "template": {"spec": {"restartPolicy": "Never",
                              "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}},
    },
}  # fmt: skip


def _job(name: str, queue: str | None) -> str:
    job = json.loads(json.dumps(JOB))
    job["metadata"]["name"] = name
    if queue:
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue
    return json.dumps(job)


def test_jobs_sent_to_a_queue_are_created_suspended_and_name_allot_as_their_scheduler(
    fresh_control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = fresh_control_plane
    with AllotProcess(plane, *webhook_flags(plane, tmp_path)) as allot:
        register_job_webhook(plane, allot)
        plane.apply(_job("queued", "main"))
        plane.apply(_job("plain", None))
    queued = plane.get("job", "queued", namespace="default")
    plain = plane.get("job", "plain", namespace="default")
    assert queued["spec"]["suspend"] is True  # type: ignore[index]
    assert queued["spec"]["template"]["spec"]["schedulerName"] == "allot"  # type: ignore[index]
    assert plain["spec"].get("suspend") is False  # type: ignore[union-attr]
    assert plain["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"  # type: ignore[index]

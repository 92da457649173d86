"""The Job webhook registered with a real API server: Jobs sent to a Kueue queue are created suspended."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from controlplane import ControlPlane
from live.cluster import AllotProcess, eventually

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


def _register(plane: ControlPlane, port: int) -> None:
    ca = base64.b64encode(plane.certs.ca_cert.read_bytes()).decode()
    plane.apply(json.dumps({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "allot-jobs"},
        "webhooks": [{
            "name": "jobs.allot.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Fail", "timeoutSeconds": 10,
            "clientConfig": {"url": f"https://127.0.0.1:{port}/mutate-batch-v1-job", "caBundle": ca},
            "rules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}],
        }],
    }))  # fmt: skip


def test_jobs_sent_to_a_queue_are_created_suspended_and_name_allot_as_their_scheduler(
    fresh_control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = fresh_control_plane
    extension = tmp_path / "webhook.ext"
    extension.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    cert, key = plane.certs.sign("webhook", "/CN=allot-webhook", extensions=extension)
    with AllotProcess(
        plane, "--webhook-port=0", f"--webhook-cert-file={cert}", f"--webhook-key-file={key}"
    ) as allot:
        found = eventually(
            lambda: re.search(r"Job webhook on [0-9.]+:(\d+)", allot.output()), what="webhook port"
        )
        _register(plane, int(found.group(1)))
        plane.apply(_job("queued", "main"))
        plane.apply(_job("plain", None))
    queued = plane.get("job", "queued", namespace="default")
    plain = plane.get("job", "plain", namespace="default")
    assert queued["spec"]["suspend"] is True  # type: ignore[index]
    assert queued["spec"]["template"]["spec"]["schedulerName"] == "allot"  # type: ignore[index]
    assert plain["spec"].get("suspend") is False  # type: ignore[union-attr]
    assert plain["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"  # type: ignore[index]

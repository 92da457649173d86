"""The mutating admission webhook `allot run` serves: Jobs submitted to a Kueue queue start suspended.

As Kueue's own webhook does, a `batch/v1` Job labelled `kueue.x-k8s.io/queue-name` is created
with `spec.suspend: true`, so its pods are not created until the Job is admitted; allot admits
and starts it (`allot.live.job_admission`). A Job whose pod template names no scheduler (or the
default one) is also given allot's, so the pods allot admitted are the pods allot places; a Job
that names another scheduler is left alone.

The endpoint speaks admission.k8s.io/v1 AdmissionReview over TLS (the API server only calls
webhooks over HTTPS); the certificate and key are files given to `allot run`
(`--webhook-cert-file`, `--webhook-key-file`), for example from cert-manager.
`deploy/scheduler/webhook.yaml` registers it. Anything it cannot read is allowed unchanged
(`failurePolicy` decides what the API server does when the webhook is down).
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from allot.model.kueue import QUEUE_NAME_LABEL

log = logging.getLogger("allot.live.webhook")

JOB_PATH = "/mutate-batch-v1-job"
DEFAULT_SCHEDULER = "default-scheduler"


def job_patch(job: dict[str, Any], *, scheduler_names: Sequence[str]) -> list[dict[str, Any]]:
    """JSON patch operations for a Job being created (empty when it is none of allot's business).

    `scheduler_names` are allot's profiles, the first given to Jobs that name no scheduler; a
    Job that names another scheduler is left alone (allot would never admit it)."""
    labels = (job.get("metadata") or {}).get("labels") or {}
    if not labels.get(QUEUE_NAME_LABEL):
        return []
    spec = job.get("spec") or {}
    template_spec = (spec.get("template") or {}).get("spec") or {}
    named = template_spec.get("schedulerName", DEFAULT_SCHEDULER)
    if named != DEFAULT_SCHEDULER and named not in scheduler_names:
        return []
    patch: list[dict[str, Any]] = []
    if spec.get("suspend") is not True:
        patch.append({"op": "add", "path": "/spec/suspend", "value": True})
    if named == DEFAULT_SCHEDULER and scheduler_names:
        patch.append({"op": "add", "path": "/spec/template/spec/schedulerName", "value": scheduler_names[0]})
    return patch


def review_response(review: dict[str, Any], *, scheduler_names: Sequence[str]) -> dict[str, Any]:
    """The AdmissionReview answer to one request."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": True}
    kind = request.get("kind") or {}
    if request.get("operation") == "CREATE" and (kind.get("group"), kind.get("kind")) == ("batch", "Job"):
        patch = job_patch(request.get("object") or {}, scheduler_names=scheduler_names)
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {
        "apiVersion": review.get("apiVersion", "admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": response,
    }


def make_webhook_app(*, scheduler_names: Sequence[str]) -> web.Application:
    app = web.Application(client_max_size=8 * 1024 * 1024)

    async def mutate_job(request: web.Request) -> web.Response:
        try:
            review = await request.json()
        except (ValueError, UnicodeDecodeError):
            return web.json_response({"error": "expected an AdmissionReview in JSON"}, status=400)
        if not isinstance(review, dict):
            return web.json_response({"error": "expected an AdmissionReview object"}, status=400)
        return web.json_response(review_response(review, scheduler_names=scheduler_names))

    app.router.add_post(JOB_PATH, mutate_job)
    return app


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context


async def serve_webhook(app: web.Application, host: str, port: int, context: ssl.SSLContext) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, ssl_context=context).start()
    return runner

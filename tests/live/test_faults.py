"""Faults while `allot run` schedules: the API server restarted, watches expired, conflicting
writers, allot killed between a claim write and a binding, two replicas sharing one Lease.

After each: every pod bound once, no device in two claims, no claim left allocated for a pod
that is gone, and nothing left pending that `allot place` would place.
"""

from __future__ import annotations

import http.server
import json
import random
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    bound_nodes,
    claim_template,
    claims,
    create_node,
    eventually,
    gpu_class,
    gpu_slice,
    metric,
    pending_that_fit,
    pod_manifest,
    pods,
    register_webhook,
    soundness,
)


def _cluster(plane: ControlPlane, nodes: int = 3, gpus: int = 4) -> None:
    plane.start_controller_manager()
    for i in range(nodes):
        create_node(plane, f"node-{i}", cpu="64")
        plane.apply(gpu_slice(f"node-{i}", gpus))
    plane.apply(gpu_class())
    plane.apply(claim_template("one-gpu"))


def _settled(plane: ControlPlane, tmp: Path, expected_bound: int) -> None:
    eventually(
        lambda: len(bound_nodes(plane)) == expected_bound, what=f"{expected_bound} pods bound", timeout=240
    )
    # The resourceclaim controller cleans up after deleted pods in its own time.
    eventually(lambda: soundness(plane, ["default"]) == [], what="a sound cluster", timeout=60)
    assert pending_that_fit(plane, tmp / "settled.yaml") == []


@pytest.fixture
def plane(fresh_control_plane: ControlPlane) -> Iterator[ControlPlane]:
    _cluster(fresh_control_plane)
    yield fresh_control_plane


def test_the_api_server_restarting_mid_run_loses_nothing(plane: ControlPlane, tmp_path: Path) -> None:
    with AllotProcess(plane) as allot:
        for i in range(4):
            plane.apply(pod_manifest(f"before-{i}", template="one-gpu"))
        eventually(lambda: len(bound_nodes(plane)) == 4, what="first pods bound")
        plane.restart_apiserver(down_for=2.0)
        for i in range(4):
            plane.apply(pod_manifest(f"after-{i}", template="one-gpu"))
        _settled(plane, tmp_path, 8)
        assert allot.alive(), allot.output()[-3000:]
        assert metric(allot, "allot_informer_reconnects", kind="pods") >= 1


def test_expired_watches_are_listed_again_and_nothing_is_missed(
    fresh_control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = fresh_control_plane
    # Watches served from etcd, compacted every second: a watch resumed from an old version gets 410 Gone.
    plane.extra_apiserver_args = ["--watch-cache=false", "--etcd-compaction-interval=1s"]
    plane.restart_apiserver()
    _cluster(plane)
    with AllotProcess(plane) as allot:
        plane.apply(pod_manifest("first", template="one-gpu"))
        eventually(lambda: "first" in bound_nodes(plane), what="first pod bound")
        plane.stop_apiserver()
        time.sleep(3.0)  # allot backs off; its watches' versions age
        plane.start_apiserver()
        for i in range(6):
            plane.apply(pod_manifest(f"churn-{i}", cpu="0"))  # writes that move the revision on
            plane.kubectl("delete", "pod", f"churn-{i}", "--wait=false")
        time.sleep(2.5)  # at least two compactions
        for i in range(4):
            plane.apply(pod_manifest(f"later-{i}", template="one-gpu"))
        eventually(lambda: len(bound_nodes(plane)) == 5, what="later pods bound", timeout=240)
        gone = sum(
            metric(allot, "allot_informer_lists", kind=k, reason="gone")
            for k in ("pods", "resourceclaims", "nodes")
        )
        assert gone >= 1, allot.output()[-3000:]
    _settled(plane, tmp_path, 5)


class ConflictInjector:
    """A second writer, made deterministic: a validating webhook the API server calls on every claim
    status write. On each claim's first status write it labels that claim (a write of its own, which
    lands first) before it lets the status write through, so the status write names a version that
    is no longer current and the API server answers 409 Conflict, as when another controller
    changes a claim between allot's read and its write."""

    def __init__(self, plane: ControlPlane, folder: Path) -> None:
        extension = folder / "conflicts.ext"
        extension.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        cert, key = plane.certs.sign("conflicts", "/CN=conflict-injector", extensions=extension)
        self.touched: set[str] = set()
        injector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                name = request["name"]
                if name not in injector.touched:
                    injector.touched.add(name)
                    plane.kubectl("label", "resourceclaim", name, "-n", request["namespace"],
                                  "touched-by=second-writer", "--overwrite")  # fmt: skip
                response = {"uid": request["uid"], "allowed": True}
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": response}).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        register_webhook(
            plane, "ValidatingWebhookConfiguration", "inject-conflicts", f"https://127.0.0.1:{self.server.server_port}/",
            [{"apiGroups": ["resource.k8s.io"], "apiVersions": ["v1"], "operations": ["UPDATE"],
              "resources": ["resourceclaims/status"]}],
            timeout=20,
        )  # fmt: skip

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_conflicting_writes_to_claims_requeue_and_every_pod_is_bound_once(
    plane: ControlPlane, tmp_path: Path
) -> None:
    for i in range(10):
        plane.apply(pod_manifest(f"contended-{i}", template="one-gpu"))
    eventually(lambda: len(claims(plane)) == 10, what="claims created")
    injector = ConflictInjector(plane, tmp_path)
    try:
        with AllotProcess(plane) as allot:
            eventually(lambda: len(bound_nodes(plane)) == 10, what="all bound despite conflicts", timeout=180)
            bindings = metric(allot, "allot_bindings_total", result="ok")
            failures = metric(allot, "allot_bindings_total", result="failed")
        plane.kubectl("delete", "validatingwebhookconfiguration", "inject-conflicts")
    finally:
        injector.close()
    assert injector.touched == set(claims(plane))  # every claim was changed under allot's first write
    assert bindings == 10  # each pod bound exactly once
    assert failures == 10  # each conflict failed one attempt, which was requeued and retried
    assert allot.output().count("Conflict") >= 10, allot.output()[-3000:]
    _settled(plane, tmp_path, 10)


def _crash_state(plane: ControlPlane, pod: str) -> None:
    """What a scheduler killed after writing a claim and before the binding leaves behind."""
    claim_name = eventually(
        lambda: pods(plane)[pod].get("status", {}).get("resourceClaimStatuses"), what="claim"
    )[0]["resourceClaimName"]
    claim = claims(plane)[claim_name]
    uid = pods(plane)[pod]["metadata"]["uid"]
    status = {
        "metadata": {"resourceVersion": claim["metadata"]["resourceVersion"]},
        "status": {
            "allocation": {
                "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-2", "device": "gpu-3"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}]},
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": uid}],
        },
    }  # fmt: skip
    plane.request("PATCH", f"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{claim_name}/status", status,
                  content_type="application/merge-patch+json")  # fmt: skip


def test_a_claim_written_before_a_crash_is_reused_not_given_twice(
    plane: ControlPlane, tmp_path: Path
) -> None:
    plane.apply(pod_manifest("survivor", template="one-gpu"))
    _crash_state(plane, "survivor")
    for i in range(11):  # every other GPU of the cluster
        plane.apply(pod_manifest(f"other-{i}", template="one-gpu"))
    with AllotProcess(plane):
        _settled(plane, tmp_path, 12)
    # The half-written allocation was taken as it stood, and its device went to nobody else.
    assert bound_nodes(plane)["survivor"] == "node-2"


def test_a_claim_written_before_a_crash_is_released_when_its_node_no_longer_fits(
    plane: ControlPlane, tmp_path: Path
) -> None:
    plane.apply(pod_manifest("stranded", template="one-gpu", cpu="32"))
    _crash_state(plane, "stranded")
    plane.apply(pod_manifest("hog", cpu="60", extra_spec={"nodeName": "node-2"}))  # node-2's CPU is taken
    with AllotProcess(plane):
        node = eventually(
            lambda: bound_nodes(plane).get("stranded"), what="stranded pod bound elsewhere", timeout=240
        )
    assert node != "node-2"
    _settled(plane, tmp_path, 2)


def test_killed_at_random_moments_and_restarted_nothing_is_given_twice(
    plane: ControlPlane, tmp_path: Path
) -> None:
    rng = random.Random(20261125)
    for i in range(12):
        plane.apply(pod_manifest(f"burst-{i}", template="one-gpu"))
    for _ in range(3):
        victim = AllotProcess(plane)
        eventually(lambda p=victim: "synced:" in p.output(), what="allot synced")  # type: ignore[misc]
        time.sleep(rng.uniform(0.0, 0.6))
        victim.kill()  # half-done writes are allowed here; the next start must repair them
    with AllotProcess(plane):
        _settled(plane, tmp_path, 12)


def test_two_replicas_with_one_lease_only_the_leader_schedules(plane: ControlPlane, tmp_path: Path) -> None:
    flags = ("--leader-elect", "--leader-elect-namespace=default", "--leader-elect-lease-duration=4",
             "--leader-elect-renew-deadline=3", "--leader-elect-retry-period=0.5")  # fmt: skip
    first = AllotProcess(plane, *flags, "--identity=replica-a", name="replica-a")
    eventually(lambda: "became leader" in first.output(), what="replica-a leads")
    second = AllotProcess(plane, *flags, "--identity=replica-b", name="replica-b")
    try:
        eventually(lambda: "synced:" in second.output(), what="replica-b synced (standby)")
        for i in range(3):
            plane.apply(pod_manifest(f"lead-{i}", template="one-gpu"))
        eventually(lambda: len(bound_nodes(plane)) == 3, what="bound by the leader")
        assert metric(first, "allot_bindings_total", result="ok") == 3
        assert metric(second, "allot_bindings_total", result="ok") == 0
        lease = plane.get("lease", "allot-scheduler", namespace="default")
        assert lease["spec"]["holderIdentity"] == "replica-a"  # type: ignore[index]
        first.kill()  # no graceful release: the standby waits for the lease to expire
        eventually(lambda: "became leader" in second.output(), what="replica-b takes over", timeout=30)
        for i in range(3):
            plane.apply(pod_manifest(f"follow-{i}", template="one-gpu"))
        eventually(lambda: len(bound_nodes(plane)) == 6, what="bound by the new leader")
        assert metric(second, "allot_bindings_total", result="ok") == 3
    finally:
        first.stop()
        second.stop()
    _settled(plane, tmp_path, 6)

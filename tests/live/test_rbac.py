"""deploy/scheduler's RBAC is exactly what `allot run` uses: run it as that ServiceAccount on an API
server with RBAC on and audit logging, exercise every path, and compare the audit log with the rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from controlplane import ControlPlane, binaries_folder, skip_reason
from live.cluster import (
    AllotProcess,
    bound_nodes,
    claim_template,
    create_node,
    eventually,
    gpu_class,
    gpu_slice,
    pod_manifest,
    pods,
    priority_class,
    serve_kueue_crds,
    storage,
    volumes_spec,
)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "scheduler"
USER = "system:serviceaccount:allot-system:allot-scheduler"
# Verbs the role grants for paths this test does not force (each with why it is needed).
RARE = {
    ("get", "resource.k8s.io", "resourceclaims", ""): "reads a claim afresh to undo a binding that failed",
    ("create", "resource.k8s.io", "resourceclaims", ""): "claims for extended resources served by DRA",
    # Not a request of its own: the API server checks this permission when a status patch
    # changes status.allocation or status.reservedFor (the test fails without it).
    ("patch", "resource.k8s.io", "resourceclaims", "binding"): "writing allocations",
    ("get", "batch", "jobs", ""): "reads a Job afresh when starting it met the Job controller's status write",
}
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "rules": [{"level": "Metadata", "users": [USER]}],
}


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[ControlPlane]:
    if binaries_folder() is None:
        pytest.skip(skip_reason())
    policy = tmp_path / "audit-policy.yaml"
    policy.write_text(json.dumps(AUDIT_POLICY))
    audit = tmp_path / "audit.log"
    plane = ControlPlane(
        tmp_path / "plane", apiserver_args=[f"--audit-policy-file={policy}", f"--audit-log-path={audit}"]
    )
    plane.start()
    plane.audit_log = audit  # type: ignore[attr-defined]
    try:
        yield plane
    finally:
        plane.stop()


def _granted() -> set[tuple[str, str, str, str]]:
    granted: set[tuple[str, str, str, str]] = set()
    for document in yaml.safe_load_all((DEPLOY / "rbac.yaml").read_text()):
        if document["kind"] not in ("ClusterRole", "Role"):
            continue
        for rule in document["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    name, _, sub = resource.partition("/")
                    for verb in rule["verbs"]:
                        granted.add((verb, group, name, sub))
    return granted


def _used(audit: Path) -> tuple[set[tuple[str, str, str, str]], list[str]]:
    used: set[tuple[str, str, str, str]] = set()
    denied: list[str] = []
    for line in audit.read_text().splitlines():
        entry = json.loads(line)
        if entry["user"]["username"] != USER or entry["stage"] != "ResponseComplete":
            continue
        ref = entry.get("objectRef")
        if ref is None:
            continue  # discovery (non-resource URLs), allowed to every authenticated user
        key = (entry["verb"], ref.get("apiGroup", ""), ref["resource"], ref.get("subresource", ""))
        if entry.get("responseStatus", {}).get("code") == 403:
            denied.append(str(key))
        used.add(key)
    return used, denied


def test_the_deployed_role_grants_exactly_what_allot_run_uses(plane: ControlPlane) -> None:
    plane.start_controller_manager()
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
        plane.apply((DEPLOY / name).read_text())
    serve_kueue_crds(plane)
    kubeconfig = plane.service_account_kubeconfig("allot-system", "allot-scheduler")
    plane.kubectl("create", "namespace", "queued")
    for obj in (
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "any"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "all"},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": "any", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "main", "namespace": "queued"},
         "spec": {"clusterQueue": "all"}},
    ):  # fmt: skip
        plane.apply(json.dumps(obj))
    create_node(plane, "rbac-1", cpu="4")
    plane.apply(gpu_slice("rbac-1", 1))
    plane.apply(gpu_class())
    plane.apply(claim_template("one-gpu"))
    plane.apply(priority_class("low", 1))
    plane.apply(priority_class("high", 100))
    flags = ("--leader-elect", "--leader-elect-namespace=allot-system")
    with AllotProcess(plane, *flags, kubeconfig=kubeconfig) as allot:
        plane.apply(pod_manifest("first", template="one-gpu", priority_class="low"))  # bind with a claim
        eventually(lambda: bound_nodes(plane).get("first"), what="first bound")
        plane.apply(
            pod_manifest("second", template="one-gpu", priority_class="low")
        )  # waits: condition, event
        eventually(lambda: pods(plane)["second"].get("status", {}).get("conditions"), what="second waits")
        plane.apply(pod_manifest("urgent", template="one-gpu", priority_class="high"))  # preempts first
        eventually(lambda: bound_nodes(plane).get("urgent"), what="urgent bound")
        plane.apply(_queued_job())  # admitted and started (patch), its pod bound
        eventually(lambda: bound_nodes(plane, "queued"), what="the queued Job's pod bound")
        storage(plane, "rbac-1")  # a volume claim bound, one sent to provisioning
        plane.apply(pod_manifest("volumes", cpu="100m", extra_spec=volumes_spec()))
        eventually(lambda: bound_nodes(plane).get("volumes"), what="volumes bound")
        assert allot.alive(), allot.output()[-3000:]
    used, denied = _used(plane.audit_log)  # type: ignore[attr-defined]
    assert denied == []
    granted = _granted()
    assert used <= granted, f"used but not granted: {sorted(used - granted)}"
    unused = granted - used - set(RARE)
    assert unused == set(), f"granted but never used: {sorted(unused)}"


def _queued_job() -> str:
    return json.dumps({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "queued", "namespace": "queued", "labels": {"kueue.x-k8s.io/queue-name": "main"}},
        "spec": {"suspend": True, "template": {"spec": {
            "schedulerName": "allot", "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "500m"}}}]}}},
    })  # fmt: skip


def test_every_deploy_manifest_is_accepted_by_the_api_server(fresh_control_plane: ControlPlane) -> None:
    plane = fresh_control_plane
    # cert-manager's kinds need its CRDs, which this control plane does not have.
    foreign = {"cert-manager.io"}
    for path in sorted((DEPLOY.parent).glob("*/*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if not document or document["apiVersion"].split("/")[0] in foreign:
                continue
            if document["kind"] != "Namespace":
                plane.kubectl(
                    "create", "namespace", document["metadata"].get("namespace", "default"), check=False
                )
            plane.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(document))

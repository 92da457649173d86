"""Helpers for the live tests: objects in a real API server, allot running against it, waiting.

`AllotProcess` runs `allot run` as a separate process (as a Deployment would), so tests can
stop it with SIGTERM or kill it with SIGKILL. Object helpers write YAML through kubectl and
read back JSON; `eventually` polls a condition with a deadline and says what it last saw.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from controlplane import ControlPlane
from live.kueue_crds import manifests as kueue_crds

T = TypeVar("T")
DRIVER = "gpu.example.com"


def eventually(check: Callable[[], T], *, timeout: float = 60.0, interval: float = 0.2, what: str = "") -> T:
    """Poll `check` until it returns something truthy; fail with its last value after `timeout`."""
    deadline = time.monotonic() + timeout
    last: T = check()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f} s waiting for {what or check}: last {last!r}"
            )
        time.sleep(interval)
        last = check()
    return last


def node_manifest(name: str, *, cpu: str = "16", memory: str = "64Gi", labels: dict[str, str] | None = None,
                  taints: Sequence[dict[str, str]] = ()) -> str:  # fmt: skip
    meta = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    return json.dumps(
        {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {"taints": list(taints)}}
    )


def create_node(plane: ControlPlane, name: str, *, cpu: str = "16", memory: str = "64Gi", pods: str = "110",
                labels: dict[str, str] | None = None, extended: dict[str, str] | None = None,
                taints: Sequence[dict[str, str]] = ()) -> None:  # fmt: skip
    """A Node object with allocatable resources and Ready=True (no kubelet runs)."""
    plane.apply(node_manifest(name, labels=labels, taints=taints))
    resources = {"cpu": cpu, "memory": memory, "pods": pods, **(extended or {})}
    status = {
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
        }
    }
    plane.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(status))


def gpu_slice(node: str, count: int, *, driver: str = DRIVER, model: str = "H100",
              extra_devices: Sequence[dict[str, Any]] = ()) -> str:  # fmt: skip
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": model}, "index": {"int": i}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for i in range(count)
    ]
    return json.dumps({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": [*devices, *extra_devices]},
    })  # fmt: skip


def gpu_class(name: str = "gpu", *, driver: str = DRIVER) -> str:
    return json.dumps({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    })  # fmt: skip


def _claim_spec(device_class: str, count: int) -> dict[str, Any]:
    return {
        "devices": {
            "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class, "count": count}}]
        }
    }


def claim_template(
    name: str, *, namespace: str = "default", device_class: str = "gpu", count: int = 1
) -> str:
    return json.dumps({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": _claim_spec(device_class, count)},
    })  # fmt: skip


def named_claim(name: str, *, namespace: str = "default", device_class: str = "gpu", count: int = 1) -> str:
    """A ResourceClaim made by hand (pods name it in `resourceClaimName`)."""
    return json.dumps({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace}, "spec": _claim_spec(device_class, count),
    })  # fmt: skip


def pod_manifest(name: str, *, namespace: str = "default", scheduler: str = "allot", cpu: str = "1",
                 template: str | None = None, claim: str | None = None, priority_class: str | None = None,
                 labels: dict[str, str] | None = None, extra_spec: dict[str, Any] | None = None) -> str:  # fmt: skip
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": cpu}}}  # fmt: skip
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [container],
        "terminationGracePeriodSeconds": 0,
    }
    if template or claim:
        entry: dict[str, str] = {"name": "gpu"}
        if template:
            entry["resourceClaimTemplateName"] = template
        else:
            entry["resourceClaimName"] = claim or ""
        spec["resourceClaims"] = [entry]
        container["resources"]["claims"] = [{"name": "gpu"}]
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    spec.update(extra_spec or {})
    meta = {"name": name, "namespace": namespace, "labels": labels or {}}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def pods(plane: ControlPlane, namespace: str = "default") -> dict[str, dict[str, Any]]:
    items = plane.get("pods", namespace=namespace)["items"]
    return {p["metadata"]["name"]: p for p in items}  # type: ignore[union-attr]


def bound_nodes(plane: ControlPlane, namespace: str = "default") -> dict[str, str]:
    """Pod name -> node, for the bound pods of a namespace."""
    return {
        name: p["spec"].get("nodeName", "")
        for name, p in pods(plane, namespace).items()
        if p["spec"].get("nodeName")
    }


def scheduled_message(pod: dict[str, Any]) -> str:
    """The message of a pod's PodScheduled=False condition: why it waits; "" while it has none."""
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return str(condition.get("message", ""))
    return ""


def claims(plane: ControlPlane, namespace: str = "default") -> dict[str, dict[str, Any]]:
    items = plane.get("resourceclaims", namespace=namespace)["items"]
    return {c["metadata"]["name"]: c for c in items}  # type: ignore[union-attr]


def allocated_devices(claim: dict[str, Any]) -> list[tuple[str, str]]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [(r["pool"], r["device"]) for r in (allocation.get("devices") or {}).get("results") or []]


def pod_claim_devices(plane: ControlPlane, namespace: str = "default") -> dict[str, list[tuple[str, str]]]:
    """Pod name -> the devices allocated to the claims it names (by generated or given claim)."""
    by_name = claims(plane, namespace)
    result: dict[str, list[tuple[str, str]]] = {}
    for name, pod in pods(plane, namespace).items():
        devices: list[tuple[str, str]] = []
        statuses = {
            s["name"]: s.get("resourceClaimName")
            for s in pod.get("status", {}).get("resourceClaimStatuses") or []
        }
        for entry in pod["spec"].get("resourceClaims") or []:
            claim_name = entry.get("resourceClaimName") or statuses.get(entry["name"])
            if claim_name and claim_name in by_name:
                devices.extend(allocated_devices(by_name[claim_name]))
        result[name] = sorted(devices)
    return result


def no_device_twice(plane: ControlPlane, namespaces: Sequence[str] = ("default",)) -> list[str]:
    """Devices allocated exclusively to more than one claim (none, in a sound cluster)."""
    holders: dict[tuple[str, str], list[str]] = {}
    for namespace in namespaces:
        for name, claim in claims(plane, namespace).items():
            allocation = (claim.get("status") or {}).get("allocation") or {}
            for result in (allocation.get("devices") or {}).get("results") or []:
                if not result.get("shareID"):
                    holders.setdefault((result["pool"], result["device"]), []).append(f"{namespace}/{name}")
    return [f"{device}: {names}" for device, names in holders.items() if len(names) > 1]


def dump_cluster(plane: ControlPlane, path: Path) -> Path:
    """What `kubectl get -o yaml` prints for every kind allot reads: the input of `allot place`."""
    kinds = "nodes,pods,namespaces,priorityclasses,poddisruptionbudgets,deviceclasses,resourceclaims,resourceslices,resourceclaimtemplates"
    path.write_text(plane.kubectl("get", kinds, "-A", "-o", "yaml"))
    return path


def allot_binary() -> str:
    return str(Path(sys.executable).with_name("allot"))


class AllotProcess:
    """`allot run` as its own process against a control plane; see the module docstring."""

    def __init__(
        self,
        plane: ControlPlane,
        *args: str,
        kubeconfig: Path | None = None,
        name: str = "allot",
        command: str = "run",
    ) -> None:
        """`command`: `run`, or `dashboard` (the read-only mirror, same flags for what they share)."""
        self.plane = plane
        self.log = plane.workdir / "logs" / f"{name}-{time.monotonic_ns()}.log"
        argv = [
            allot_binary(),
            command,
            f"--kubeconfig={kubeconfig or plane.kubeconfig}",
            "--port=0",
            "--log-level=debug",
            *args,
        ]
        handle = self.log.open("wb")
        self.process = subprocess.Popen(
            argv, stdout=handle, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
        handle.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def http_port(self, timeout: float = 60.0) -> int:
        """The port of its HTTP server (/metrics, the dashboard), once it listens."""
        found = eventually(
            lambda: re.search(r"/readyz on [0-9.]+:(\d+)", self.output()) or not self.alive(),
            timeout=timeout,
            what="allot's HTTP port in its log",
        )
        if not isinstance(found, re.Match):
            raise AssertionError("allot stopped:\n" + self.output()[-3000:])
        return int(found.group(1))

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> AllotProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# Kinds in the order a cluster gets them: what pods need exists before the pods.
_APPLY_ORDER = (
    "Namespace", "PriorityClass", "DeviceClass", "Node", "ResourceSlice", "ResourceClaimTemplate",
    "ResourceClaim", "PodDisruptionBudget",
)  # fmt: skip
_SERVER_FIELDS = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink")


def serve_kueue_crds(plane: ControlPlane) -> None:
    """Create Kueue's CRDs (`live.kueue_crds`) and wait until the API server serves them."""
    plane.apply(kueue_crds())
    eventually(
        lambda: "clusterqueues" in plane.kubectl("api-resources", "--api-group=kueue.x-k8s.io"),
        what="Kueue CRDs served",
    )


def apply_manifests(plane: ControlPlane, text: str, *, scheduler: str | None = None) -> list[dict[str, Any]]:
    """Create the objects of a multi-document YAML the way they would have been created: kinds in
    dependency order, server fields dropped, Node status patched in, pods last (pending, with
    `scheduler` as their schedulerName when given). Returns the documents applied."""
    import yaml

    documents = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    expanded: list[dict[str, Any]] = []
    for document in documents:
        expanded.extend(
            document.get("items") or [] if document.get("kind", "").endswith("List") else [document]
        )
    for document in expanded:
        metadata = document.setdefault("metadata", {})
        for key in _SERVER_FIELDS:
            metadata.pop(key, None)
        # Owners named by UID (a preset's slices owned by their Node) would not match the new objects.
        metadata.pop("ownerReferences", None)
        if document.get("kind") == "Pod":
            document.get("spec", {}).pop("nodeName", None)
            document.pop("status", None)
            if scheduler is not None:
                document["spec"]["schedulerName"] = scheduler
        if document.get("kind") in ("ResourceClaim",):
            document.pop("status", None)
    order = {kind: i for i, kind in enumerate(_APPLY_ORDER)}
    expanded.sort(key=lambda d: order.get(d.get("kind", ""), len(order)))
    for document in expanded:
        plane.apply(json.dumps(document))
        if document.get("kind") == "Node" and document.get("status"):
            status = {"status": document["status"]}
            if not any(c.get("type") == "Ready" for c in status["status"].get("conditions") or []):
                status["status"]["conditions"] = [
                    {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}
                ]
            plane.kubectl(
                "patch",
                "node",
                document["metadata"]["name"],
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps(status),
            )
    return expanded


def priority_class(name: str, value: int) -> str:
    return json.dumps(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
    )


def metric(process: AllotProcess, name: str, **labels: str) -> float:
    """One sample of allot's /metrics (0 when absent)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{process.http_port()}/metrics", timeout=10) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def soundness(plane: ControlPlane, namespaces: Sequence[str]) -> list[str]:
    """What must hold after any fault: no device in two claims, no allocated claim without a live
    pod reserving it, every bound pod's claims allocated and reserved for it."""
    problems = no_device_twice(plane, namespaces)
    for namespace in namespaces:
        live = {p["metadata"]["uid"]: p for p in pods(plane, namespace).values()}
        by_name = claims(plane, namespace)
        for name, claim in by_name.items():
            status = claim.get("status") or {}
            if not status.get("allocation"):
                continue
            reserved = status.get("reservedFor") or []
            if not reserved:
                problems.append(f"claim {namespace}/{name} is allocated and reserved for nobody")
            for ref in reserved:
                if ref.get("uid") not in live:
                    problems.append(
                        f"claim {namespace}/{name} is reserved for a pod that is gone ({ref.get('name')})"
                    )
        for pod in live.values():
            if not pod["spec"].get("nodeName"):
                continue
            statuses = {
                s["name"]: s.get("resourceClaimName")
                for s in pod.get("status", {}).get("resourceClaimStatuses") or []
            }
            for entry in pod["spec"].get("resourceClaims") or []:
                claim_name = entry.get("resourceClaimName") or statuses.get(entry["name"])
                claim = by_name.get(claim_name or "")
                status = (claim or {}).get("status") or {}
                if not status.get("allocation") or pod["metadata"]["uid"] not in {
                    r.get("uid") for r in status.get("reservedFor") or []
                }:
                    problems.append(
                        f"bound pod {namespace}/{pod['metadata']['name']}: claim {claim_name} not allocated for it"
                    )
    return problems


def pending_that_fit(plane: ControlPlane, path: Path, scheduler: str = "allot") -> list[str]:
    """Pods left pending that `allot place` would place on the cluster as it is (none, when settled)."""
    from allot.model.loader import load_paths
    from allot.plan.planner import plan

    result = plan(load_paths([dump_cluster(plane, path)]), scheduler_name=scheduler)
    return sorted(b.pod for b in result.bound)


def storage(plane: ControlPlane, node: str) -> None:
    """Two classes waiting for the first consumer (a local volume on `node`, and dynamic
    provisioning) and a claim of each, `data` and `scratch`."""
    objects = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "dyn"},
         "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-pv"},
         "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                  "local": {"path": "/mnt/disk"},
                  "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                      {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
         "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "5Gi"}}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "scratch", "namespace": "default"},
         "spec": {"storageClassName": "dyn", "accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "1Gi"}}}},
    ]  # fmt: skip
    for obj in objects:
        plane.apply(json.dumps(obj))


def volumes_spec() -> dict[str, object]:
    return {
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "scratch", "persistentVolumeClaim": {"claimName": "scratch"}},
        ]
    }


def webhook_flags(plane: ControlPlane, folder: Path) -> list[str]:
    """`allot run` flags serving the Job webhook on a free port, with a certificate the plane's CA signed."""
    extension = folder / "webhook.ext"
    extension.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    cert, key = plane.certs.sign("webhook", "/CN=allot-webhook", extensions=extension)
    return ["--webhook-port=0", f"--webhook-cert-file={cert}", f"--webhook-key-file={key}"]


def register_webhook(plane: ControlPlane, kind: str, name: str, url: str, rules: list[dict[str, Any]],
                     *, timeout: int = 10) -> None:  # fmt: skip
    """Register (or point again) a Mutating/ValidatingWebhookConfiguration at `url`, trusted
    through the plane's CA, failing closed."""
    ca = base64.b64encode(plane.certs.ca_cert.read_bytes()).decode()
    plane.apply(json.dumps({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
        "webhooks": [{
            "name": f"{name}.allot.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Fail", "timeoutSeconds": timeout,
            "clientConfig": {"url": url, "caBundle": ca}, "rules": rules,
        }],
    }))  # fmt: skip


def register_job_webhook(plane: ControlPlane, allot: AllotProcess) -> None:
    """Register (or point again) the MutatingWebhookConfiguration at `allot`'s webhook port."""
    found = eventually(
        lambda: re.search(r"Job webhook on [0-9.]+:(\d+)", allot.output()), what="webhook port"
    )
    register_webhook(
        plane, "MutatingWebhookConfiguration", "allot-jobs", f"https://127.0.0.1:{found.group(1)}/mutate-batch-v1-job",
        [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}],
    )  # fmt: skip

"""The test harness itself: a real API server with DRA on, and kube-scheduler as the oracle.

If these fail, every live test that follows would prove nothing; they run first and say why.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from controlplane import ControlPlane
from controlplane.plane import binaries_folder, skip_reason

NODE = """
apiVersion: v1
kind: Node
metadata: {name: harness-node, labels: {kubernetes.io/hostname: harness-node}}
"""
CLASS_AND_SLICE = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: harness.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "harness.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: harness-node-gpus}
spec:
  driver: harness.example.com
  nodeName: harness-node
  pool: {name: harness-node, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: harness.example.com}}]
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {name: harness-pod, namespace: default}
spec:
  containers: [{name: c, image: pause, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
"""


def make_ready(plane: ControlPlane, node: str) -> None:
    status = {
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
        }
    }
    plane.kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p", json.dumps(status))


def test_api_server_serves_dra_v1(control_plane: ControlPlane) -> None:
    resources = control_plane.kubectl("api-resources", "--api-group=resource.k8s.io", "-o", "name")
    for kind in ("deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"):
        assert f"{kind}.resource.k8s.io" in resources


def test_kube_scheduler_binds_a_pod_with_a_claim_from_a_template(control_plane: ControlPlane) -> None:
    plane = control_plane
    plane.start_controller_manager()
    plane.start_scheduler()
    plane.apply(NODE)
    make_ready(plane, "harness-node")
    plane.apply(CLASS_AND_SLICE)
    plane.apply(POD)
    deadline = time.monotonic() + 60
    node = ""
    while time.monotonic() < deadline and not node:
        pod = plane.get("pod", "harness-pod", namespace="default")
        node = pod["spec"].get("nodeName", "")  # type: ignore[index, union-attr]
        time.sleep(0.2)
    assert node == "harness-node", plane.logs()
    claims = plane.get("resourceclaims", namespace="default")["items"]
    assert len(claims) == 1  # type: ignore[arg-type]
    results = claims[0]["status"]["allocation"]["devices"]["results"]  # type: ignore[index]
    assert [r["device"] for r in results] in (["gpu-0"], ["gpu-1"])


def test_api_server_restarts_and_keeps_its_data(fresh_control_plane: ControlPlane) -> None:
    plane = fresh_control_plane
    plane.kubectl("create", "namespace", "kept")
    plane.restart_apiserver()
    assert "kept" in plane.kubectl("get", "namespaces", "-o", "name")


def test_a_port_taken_before_the_api_server_binds_it_is_replaced(tmp_path: Path) -> None:
    if binaries_folder() is None:
        pytest.skip(skip_reason())
    plane = ControlPlane(tmp_path / "plane")
    taken = plane.port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        # Another process binds the port between the plane choosing it and the server starting.
        squatter.bind(("127.0.0.1", taken))
        squatter.listen()
        try:
            plane.start()
            assert plane.port != taken
            # The kubeconfig names the port the server listens on.
            assert f":{plane.port}" in (tmp_path / "plane" / "admin.kubeconfig").read_text()
            assert plane.kubectl("get", "--raw", "/readyz").strip() == "ok"
        finally:
            plane.stop()

"""The dashboard of `allot run` on a real API server, in headless Chromium: nodes, slices and pods
created while the page is open appear in each view without a reload; links lead from a pending
pod to its queue and, once it is bound, to its node; each view's screenshot holds what was
created; the JSON behind the views says the same; bad requests get a 4xx. `allot dashboard`
shows the same cluster read-only, without writing to it."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane import ControlPlane
from dashboard.browser import Browser, browser_or_skip, distinct_colours
from live.cluster import AllotProcess, eventually, metric, pod_manifest
from live.kueue_crds import manifests as kueue_crds

DRIVER = "gpu.example.com"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
TAINT = {"key": f"{DRIVER}/xid", "value": "79", "effect": "NoSchedule"}


def _gpu(name: str, kind: str, root: str, numa: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {
            "type": {"string": kind},
            "productName": {"string": "H100"},
            "resource.kubernetes.io/pcieRoot": {"string": root},
            "resource.kubernetes.io/numaNode": {"int": numa},
        },
        **extra,
    }


def _slice(node: str, driver: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices},
    }  # fmt: skip


def _whole_gpus(tainted: bool) -> dict[str, Any]:
    second = _gpu("gpu-1", "whole", "pci0000:20", 1, **({"taints": [TAINT]} if tainted else {}))
    return _slice("node-a", DRIVER, [_gpu("gpu-0", "whole", "pci0000:10", 0), second])


def _shared_gpu() -> dict[str, Any]:
    cores = {"default": "100", "validRange": {"min": "1", "max": "100", "step": "1"}}
    memory = {"default": "1Gi", "validRange": {"min": "1Gi", "max": "80Gi", "step": "1Gi"}}
    device = _gpu(
        "gpu-0", "shared", "pci0000:30", 0,
        allowMultipleAllocations=True,
        capacity={"cores": {"value": "100", "requestPolicy": cores}, "memory": {"value": "80Gi", "requestPolicy": memory}},
    )  # fmt: skip
    return _slice("node-b", DRIVER, [device])


def _nic() -> dict[str, Any]:
    nic = {"name": "nic-0", "attributes": {"resource.kubernetes.io/pcieRoot": {"string": "pci0000:10"},
                                           "resource.kubernetes.io/numaNode": {"int": 0}}}  # fmt: skip
    return _slice("node-a", "dra.net", [nic])


def _class(name: str, kind: str) -> dict[str, Any]:
    expression = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "{kind}"'
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }  # fmt: skip


def _template(name: str, device_class: str, capacity: dict[str, str] | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {"deviceClassName": device_class, "count": 1}
    if capacity:
        request["capacity"] = {"requests": capacity}
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}}},
    }  # fmt: skip


def _pod(name: str, **options: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads(pod_manifest(name, namespace="team-a", **options))
    return manifest


def _queues() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "team-a-cq"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "main", "namespace": "team-a"}, "spec": {"clusterQueue": "team-a-cq"},
        },
    ]  # fmt: skip


# Where each kind is created (objects go straight to the API: no kubectl process per object).
_PLURALS = {
    "Namespace": "namespaces", "Node": "nodes", "Pod": "pods", "DeviceClass": "deviceclasses",
    "ResourceSlice": "resourceslices", "ResourceClaimTemplate": "resourceclaimtemplates",
    "ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues",
}  # fmt: skip


def _path(obj: dict[str, Any]) -> str:
    version = obj["apiVersion"]
    base = f"/api/{version}" if "/" not in version else f"/apis/{version}"
    namespace = obj["metadata"].get("namespace")
    return base + (f"/namespaces/{namespace}" if namespace else "") + "/" + _PLURALS[obj["kind"]]


def _create(plane: ControlPlane, *objects: dict[str, Any]) -> None:
    for obj in objects:
        code, body = plane.request("POST", _path(obj), obj)
        assert code == 201, body


def _replace_slice(plane: ControlPlane, obj: dict[str, Any]) -> None:
    patch = {"spec": {"devices": obj["spec"]["devices"]}}
    code, body = plane.request("PATCH", f"{_path(obj)}/{obj['metadata']['name']}", patch,
                               content_type="application/merge-patch+json")  # fmt: skip
    assert code == 200, body


def _node(plane: ControlPlane, name: str) -> None:
    """A Ready node with 16 CPUs (no kubelet runs)."""
    _create(
        plane,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        },
    )
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    status = {"status": {"allocatable": resources, "capacity": resources, "conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}]}}  # fmt: skip
    code, body = plane.request(
        "PATCH", f"/api/v1/nodes/{name}/status", status, content_type="application/merge-patch+json"
    )
    assert code == 200, body


def _pods(plane: ControlPlane) -> dict[str, dict[str, Any]]:
    code, body = plane.request("GET", "/api/v1/namespaces/team-a/pods")
    assert code == 200 and isinstance(body, dict), body
    return {p["metadata"]["name"]: p for p in body["items"]}


def _bound(plane: ControlPlane) -> dict[str, str]:
    return {name: p["spec"]["nodeName"] for name, p in _pods(plane).items() if p["spec"].get("nodeName")}


def _get(port: int, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def plane(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    browser_or_skip()
    control_plane.start_controller_manager()  # claims from templates
    control_plane.apply(kueue_crds())
    eventually(lambda: control_plane.request("GET", "/apis/kueue.x-k8s.io/v1beta2/localqueues")[0] == 200,
               what="Kueue's CRDs served")  # fmt: skip
    _create(control_plane, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    _create(control_plane, *_queues(), _class("whole-gpu", "whole"), _class("shared-gpu", "shared"),
            _template("one-gpu", "whole-gpu"), _template("gpu-slice", "shared-gpu", {"cores": "30", "memory": "24Gi"}))  # fmt: skip
    yield control_plane


@pytest.fixture(scope="module")
def mirror(plane: ControlPlane) -> Iterator[AllotProcess]:
    """`allot dashboard`, read-only, started beside the first test (it starts while that one runs)."""
    with AllotProcess(plane, command="dashboard", name="dashboard") as process:
        yield process


def test_the_dashboard_follows_a_live_cluster_in_a_browser(
    plane: ControlPlane, mirror: AllotProcess, tmp_path: Path
) -> None:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with AllotProcess(plane, "--dashboard-interval=1") as allot, Browser(tmp_path / "browser") as browser:
        port = allot.http_port()
        eventually(lambda: _get(port, "/api/v1/cluster")[0] == 200, what="the dashboard serving the cluster")
        browser.open(f"http://127.0.0.1:{port}/#/cluster")
        browser.wait_for("document.querySelector('#cluster-totals')", what="the cluster view")

        # Nodes and slices appear while the page is open: 3 GPUs, one tainted by the agent's XID check.
        for name in ("node-a", "node-b"):
            _node(plane, name)
        _create(plane, _whole_gpus(tainted=True), _nic(), _shared_gpu())
        totals = "document.querySelector('#cluster-totals').innerText"
        browser.wait_for(
            f"/GPUs ready\\s*2\\s*of 3 on 2\\/2 ready nodes/.test({totals})", what="2 of 3 GPUs ready"
        )
        assert "Unhealthy GPUs\n1" in browser.text("#cluster-totals")

        # Pods: a whole GPU, a 30 % share, a second whole GPU (none free: pending), a queued pod over quota.
        _create(plane, _pod("train-0", template="one-gpu"), _pod("infer-0", template="gpu-slice"))
        eventually(lambda: len(_bound(plane)) == 2, what="train-0 and infer-0 bound")
        _create(
            plane, _pod("train-1", template="one-gpu"), _pod("batch-0", cpu="6", labels={QUEUE_LABEL: "main"})
        )
        browser.wait_for("document.querySelector('#pending-top') && /team-a\\/train-1/.test(document.querySelector('#pending-top').innerText) && /team-a\\/batch-0/.test(document.querySelector('#pending-top').innerText)",
                         what="both pending pods listed")  # fmt: skip
        # The reason shown is the sentence allot wrote in the pod's PodScheduled condition.
        condition = eventually(
            lambda: _scheduled_message(plane, "train-1"), what="train-1's PodScheduled message"
        )
        assert condition in browser.text("#pending-top")
        status, pod = _get(port, "/api/v1/pods/team-a/train-1")
        assert status == 200 and pod["reason"] == condition and pod["node"] == "" and pod["gpus"] == 1
        assert "GPU-hours waiting" in browser.text("#cluster-totals")
        assert distinct_colours(browser.screenshot(shots / "cluster.png")) > 20

        # From the pending queued pod to its queue: quota, the pod, its reason.
        browser.click('#pending-top a[href="#/pod/team-a/batch-0"]')
        browser.wait_for(
            "/is pending/.test(document.querySelector('#main').innerText)", what="batch-0's page"
        )
        quota_reason = browser.text("#pod-reason")
        assert "quota" in quota_reason, quota_reason
        browser.click('#pod-detail a[href="#/app/clusterqueue/team-a-cq"]')
        browser.wait_for("document.querySelector('#app-pending') && /team-a\\/batch-0/.test(document.querySelector('#app-pending').innerText)",
                         what="the ClusterQueue's pending pods")  # fmt: skip
        queue = browser.text()
        assert "ClusterQueue team-a-cq" in queue and quota_reason in queue
        assert distinct_colours(browser.screenshot(shots / "queue.png")) > 20
        status, document = _get(port, "/api/v1/apps/clusterqueue/team-a-cq")
        cpu = next(q for q in document["quota"] if q["resource"] == "cpu")
        assert (cpu["nominal"], document["pending"]["total"]) == ("4", 1)

        # From the pending GPU pod to its node, once the agent lifts the taint and allot binds it.
        browser.click('a[href="#/cluster"]')
        browser.wait_for("document.querySelector('#pending-top')", what="the cluster view again")
        browser.click('#pending-top a[href="#/pod/team-a/train-1"]')
        browser.wait_for(
            "/is pending/.test(document.querySelector('#main').innerText)", what="train-1's page"
        )
        _replace_slice(plane, _whole_gpus(tainted=False))
        browser.wait_for(
            "document.querySelector('#pod-detail a[href=\"#/node/node-a\"]')",
            what="train-1 bound, linked to its node",
        )
        browser.click('#pod-detail a[href="#/node/node-a"]')
        browser.wait_for("document.querySelector('#node-map')", what="node-a's map")
        node = browser.text("#node-map")
        assert "NUMA node 0" in node and "NUMA node 1" in node and "PCIe root pci0000:10" in node
        assert "team-a/train-0" in node and "team-a/train-1" in node and "nic nic-0" in node
        assert distinct_colours(browser.screenshot(shots / "node-a.png")) > 20

        # The shared GPU: the pod holding 30 % of it, with its trust domain; the pod runs (a kubelet's word).
        _set_phase(plane, "infer-0", "Running")
        browser.click('a[href="#/nodes"]')
        browser.wait_for("document.querySelector('#data a[href=\"#/node/node-b\"]')", what="the node list")
        browser.click('#data a[href="#/node/node-b"]')
        browser.wait_for("/team-a\\/infer-0/.test((document.querySelector('#node-map') || {innerText: ''}).innerText)",
                         what="node-b's shared GPU")  # fmt: skip
        shared = browser.text("#node-map")
        assert "30 %" in shared and "trust namespace=team-a" in shared and "shared" in shared
        browser.wait_for(
            "/30 %\\s*$/m.test(document.querySelector('.gpu .head').innerText)", what="30 % allocated"
        )
        assert distinct_colours(browser.screenshot(shots / "node-b.png")) > 20
        # The allocation shows before the pod's phase reaches the dashboard's watch; "in use" follows it.
        eventually(lambda: _get(port, "/api/v1/cluster")[1]["totals"]["inUse"] == pytest.approx(0.3),
                   what="0.3 GPUs in use on /api/v1/cluster")  # fmt: skip
        # The same measures on /metrics, for Prometheus and deploy/grafana.
        eventually(lambda: metric(allot, "allot_gpus", pool="node-b", model="H100", state="in_use") == pytest.approx(0.3),
                   what="allot_gpus on /metrics")  # fmt: skip
        assert metric(allot, "allot_gpus", pool="node-a", model="H100", state="allocated") == 2
        assert browser.problems() == []
        assert allot.alive(), allot.output()[-3000:]

        # The JSON behind the views, and requests the dashboard refuses with a 4xx.
        status, listing = _get(port, "/api/v1/nodes?limit=1&sort=pods&order=desc")
        assert status == 200 and listing["total"] == 2 and [n["name"] for n in listing["items"]] == ["node-a"]
        for path, code in (
            ("/api/v1/nodes/no-such-node", 404),
            ("/api/v1/nodes?limit=100000", 400),
            ("/api/v1/nodes?q=" + "x" * 5000, 414),
            ("/api/v1/nodes?offset=-1", 400),
            ("/api/v1/nodes?frobnicate=1", 400),
            ("/api/v1/cluster?t=nan", 400),
            ("/api/v1/apps/teams/a", 404),
            ("/api/v1/apps/localqueue/no-slash", 404),
            ("/api/v1/pods/team-a/no-such-pod", 404),
        ):
            status, body = _get(port, path)
            assert status == code, (path, status, body)
            assert set(body) == {"error"} and "Traceback" not in body["error"], body
    assert _bound(plane)["train-1"] == "node-a"


def _scheduled_message(plane: ControlPlane, name: str) -> str:
    for condition in _pods(plane)[name].get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message", ""))
    return ""


def _set_phase(plane: ControlPlane, name: str, phase: str) -> None:
    status = {"status": {"phase": phase}}
    code, body = plane.request("PATCH", f"/api/v1/namespaces/team-a/pods/{name}/status", status,
                               content_type="application/merge-patch+json")  # fmt: skip
    assert code == 200, body


def test_allot_dashboard_shows_the_cluster_read_only(plane: ControlPlane, mirror: AllotProcess) -> None:
    # What allot run wrote of the queued pod before it stopped (its PodScheduled=False condition).
    batch_before = _pods(plane)["batch-0"]["status"]
    # A pod of another scheduler, which says why it waits: the mirror shows that sentence.
    _create(plane, _pod("orphan-0", scheduler="elsewhere"))
    said = "0/2 nodes are available: 2 node(s) did not match the elsewhere-only selector."
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": said}
    code, body = plane.request("PATCH", "/api/v1/namespaces/team-a/pods/orphan-0/status",
                               {"status": {"conditions": [condition]}}, content_type="application/merge-patch+json")  # fmt: skip
    assert code == 200, body
    port = mirror.http_port()
    orphan = eventually(lambda: (got := _get(port, "/api/v1/pods/team-a/orphan-0"))[0] == 200 and got[1]["reason"] == said and got[1],
                        what="the other scheduler's reason in the read-only dashboard")  # fmt: skip
    assert orphan["node"] == "" and orphan["scheduler"] == "elsewhere"
    _, cluster = _get(port, "/api/v1/cluster")
    assert cluster["source"] == "watch"
    # What allot run placed before it stopped: 2 whole GPUs and 30 % of the shared one, on 3 GPUs.
    assert (cluster["totals"]["nodes"], cluster["totals"]["gpus"], cluster["totals"]["allocated"]) == (
        2,
        3,
        2.3,
    )
    _, node = _get(port, "/api/v1/nodes/node-a")
    holders = {
        h["pod"]
        for numa in node["layout"]
        for root in numa["roots"]
        for g in root["gpus"]
        for h in g["holders"]
    }
    assert holders == {"team-a/train-0", "team-a/train-1"}
    _, queue = _get(port, "/api/v1/apps/clusterqueue/team-a-cq")
    assert [p["pod"] for p in queue["pending"]["items"]] == ["team-a/batch-0"]
    assert mirror.alive(), mirror.output()[-3000:]
    # The mirror writes nothing: the pods it shows pending keep the status they had.
    time.sleep(1.0)
    now = _pods(plane)
    assert (
        now["orphan-0"]["status"]["conditions"][0]["message"] == said
        and "nodeName" not in now["orphan-0"]["spec"]
    )
    assert now["batch-0"]["status"] == batch_before

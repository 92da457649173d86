"""Live scheduling throughput: `allot run` against kube-scheduler v1.36 on the same API server.

The shape of kube-scheduler's SchedulingWithResourceClaimTemplate benchmark, on a real control
plane (../shared/k8s): N nodes with 8 GPUs each (one ResourceSlice per node), one DeviceClass,
one ResourceClaimTemplate asking for one GPU, and P pods created at once, each with a claim
from the template (the controller manager creates the claims). For each scheduler and each
client rate setting it prints pods/s from the first pod's creation to the last pod bound, and
for allot the engine's CPU time per pod and the scheduling-cycle latency p50 / p99 (from its
debug log).

Settings: "stock" is kube-scheduler's default client rate (qps 50, burst 100); "lifted" gives
both schedulers qps 5000, burst 10000. The controller manager runs with a lifted rate in every
run so that claim creation is not what is measured.

Run: KUBEBUILDER_ASSETS=$(../shared/k8s/install.sh) python benchmarks/bench_live.py
     [--nodes 100] [--pods 500] [--also-1000-nodes]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from controlplane import ControlPlane, binaries_folder, skip_reason
from live.cluster import AllotProcess, claim_template, gpu_class, gpu_slice, node_manifest

SETTINGS = {"stock": (50, 100), "lifted": (5000, 10000)}
CYCLE = re.compile(
    r"cycle \d+: \d+ events, (\d+) bound, \d+ evicted, \d+ waiting \(([0-9.]+) ms, ([0-9.]+) ms CPU\)"
)


def _nodes(plane: ControlPlane, count: int) -> None:
    status = {
        "status": {
            "allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
        }
    }

    def one(i: int) -> None:
        name = f"node-{i:04d}"
        plane.request("POST", "/api/v1/nodes", json.loads(node_manifest(name)))
        plane.request(
            "PATCH", f"/api/v1/nodes/{name}/status", status, content_type="application/merge-patch+json"
        )
        plane.request("POST", "/apis/resource.k8s.io/v1/resourceslices", json.loads(gpu_slice(name, 8)))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(count)))


def _pods(plane: ControlPlane, count: int, scheduler: str, prefix: str) -> float:
    """Create `count` pods at once; returns when the first was sent (time.monotonic())."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "", "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        },
    }  # fmt: skip

    def one(i: int) -> None:
        pod = json.loads(json.dumps(body))
        pod["metadata"]["name"] = f"{prefix}-{i:05d}"
        status, answer = plane.request("POST", "/api/v1/namespaces/default/pods", pod)
        if status >= 300:
            raise RuntimeError(f"creating a pod: {status} {answer}")

    start = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(count)))
    return start


def _bound(plane: ControlPlane, prefix: str) -> int:
    _, body = plane.request("GET", "/api/v1/namespaces/default/pods?limit=100000")
    items = body["items"]  # type: ignore[index]
    return sum(1 for p in items if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName"))


def _wait_bound(plane: ControlPlane, prefix: str, count: int, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _bound(plane, prefix) >= count:
            return time.monotonic()
        time.sleep(0.1)
    raise RuntimeError(f"only {_bound(plane, prefix)} of {count} pods bound in {timeout:.0f} s")


def _cluster(workdir: Path, nodes: int) -> ControlPlane:
    plane = ControlPlane(workdir)
    plane.start()
    plane.start_controller_manager()
    plane.apply(gpu_class())
    plane.apply(claim_template("one-gpu"))
    _nodes(plane, nodes)
    return plane


def run_kube_scheduler(workdir: Path, nodes: int, pods: int, qps: int, burst: int) -> float:
    plane = _cluster(workdir, nodes)
    try:
        config = (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"leaderElection: {{leaderElect: false}}\nclientConnection:\n  qps: {qps}\n  burst: {burst}\n"
        )
        plane.start_scheduler(config)
        start = _pods(plane, pods, "default-scheduler", "ks")
        end = _wait_bound(plane, "ks", pods, timeout=1200)
        return pods / (end - start)
    finally:
        plane.stop()


def run_allot(
    workdir: Path, nodes: int, pods: int, qps: int, burst: int
) -> tuple[float, float, float, float]:
    """pods/s, engine CPU ms per pod, cycle p50 and p99 (ms)."""
    plane = _cluster(workdir, nodes)
    try:
        allot = AllotProcess(plane, f"--kube-api-qps={qps}", f"--kube-api-burst={burst}")
        try:
            deadline = time.monotonic() + 120
            while "synced:" not in allot.output() and time.monotonic() < deadline:
                time.sleep(0.1)
            start = _pods(plane, pods, "allot", "al")
            end = _wait_bound(plane, "al", pods, timeout=1200)
            log = allot.output()
        finally:
            allot.stop()
        cycles = [(int(b), float(ms), float(cpu)) for b, ms, cpu in CYCLE.findall(log)]
        busy = [ms for bound, ms, _ in cycles if bound]
        engine_ms = sum(cpu for _, _, cpu in cycles)
        quantiles = statistics.quantiles(busy, n=100) if len(busy) >= 2 else [0.0] * 99
        return pods / (end - start), engine_ms / pods, quantiles[49], quantiles[98]
    finally:
        plane.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--settings", default="stock,lifted")
    parser.add_argument("--also-1000-nodes", action="store_true", help="Then 1,000 nodes (lifted setting).")
    args = parser.parse_args()
    if binaries_folder() is None:
        sys.exit(skip_reason())
    shapes = [(args.nodes, args.pods, name) for name in args.settings.split(",")]
    if args.also_1000_nodes:
        shapes.append((1000, args.pods, "lifted"))
    for nodes, pods, setting in shapes:
        qps, burst = SETTINGS[setting]
        with tempfile.TemporaryDirectory() as tmp:
            kube = run_kube_scheduler(Path(tmp) / "kube", nodes, pods, qps, burst)
        with tempfile.TemporaryDirectory() as tmp:
            allot, engine_ms, p50, p99 = run_allot(Path(tmp) / "allot", nodes, pods, qps, burst)
        print(
            f"{nodes} nodes x 8 GPUs, {pods} pods, {setting} (qps {qps}, burst {burst}): "
            f"kube-scheduler {kube:.1f} pods/s, allot {allot:.1f} pods/s ({allot / kube:.2f}x); "
            f"allot engine {engine_ms:.2f} ms CPU per pod, cycle p50 {p50:.1f} ms, p99 {p99:.1f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()

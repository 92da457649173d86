"""Live scheduling throughput: `allot run` against kube-scheduler v1.36 on the same API server.

The shape of kube-scheduler's SchedulingWithResourceClaimTemplate benchmark, on a real control
plane (../shared/k8s): N nodes with 8 GPUs each (one ResourceSlice per node), one DeviceClass,
one ResourceClaimTemplate asking for one GPU, and P pods, each with a claim from the template
(the controller manager creates the claims).

The pods are created first, with no scheduler running, and the run waits until every claim
exists: on a small machine the API server creates pods more slowly than either scheduler binds
them, so timing from creation would measure the API server. Then the scheduler starts and the
clock runs until the last pod is bound. Each line prints, per scheduler:

* pods/s from the scheduler's start (process start, informers' sync included) to the last bind;
* seconds to the first bind;

and for allot the engine's CPU time per pod, the number of cycles that bound pods and the
longest of them, and the p50 / p99 wall time of all its cycles (from its debug log; most cycles
after the first only take in the watch events of allot's own writes). Both schedulers write three requests per pod (the claim's
finalizer, the claim's status, the Binding), so at the stock client rate both are bound by it.

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


def _claims(plane: ControlPlane) -> int:
    _, body = plane.request("GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims?limit=100000")
    return len(body["items"])  # type: ignore[index]


def _backlog(plane: ControlPlane, count: int, scheduler: str, prefix: str) -> None:
    """Create the pods (nobody schedules them yet) and wait until each has its claim."""
    _pods(plane, count, scheduler, prefix)
    deadline = time.monotonic() + 600
    while _claims(plane) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {_claims(plane)} of {count} claims created")
        time.sleep(0.2)


def _wait_bound(plane: ControlPlane, prefix: str, count: int, timeout: float) -> tuple[float, float]:
    """(time of the first bind seen, time all were bound), polling every 0.1 s."""
    deadline = time.monotonic() + timeout
    first = None
    while time.monotonic() < deadline:
        bound = _bound(plane, prefix)
        now = time.monotonic()
        if bound and first is None:
            first = now
        if bound >= count:
            return first if first is not None else now, now
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


def _rates(pods: int, start: float, first: float, end: float) -> tuple[float, float]:
    """pods/s from start to the last bind, and seconds from start to the first bind."""
    return pods / (end - start), first - start


def run_kube_scheduler(workdir: Path, nodes: int, pods: int, qps: int, burst: int) -> tuple[float, float]:
    plane = _cluster(workdir, nodes)
    try:
        _backlog(plane, pods, "default-scheduler", "ks")
        config = (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
            f"leaderElection: {{leaderElect: false}}\nclientConnection:\n  qps: {qps}\n  burst: {burst}\n"
        )
        start = time.monotonic()
        plane.start_scheduler(config)
        first, end = _wait_bound(plane, "ks", pods, timeout=1200)
        return _rates(pods, start, first, end)
    finally:
        plane.stop()


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def run_allot(
    workdir: Path, nodes: int, pods: int, qps: int, burst: int
) -> tuple[float, float, float, float, float, list[float]]:
    """pods/s from start, s to the first bind, engine CPU ms per pod, cycles that bound, longest
    (ms), and every cycle's wall time (ms)."""
    plane = _cluster(workdir, nodes)
    try:
        _backlog(plane, pods, "allot", "al")
        start = time.monotonic()
        allot = AllotProcess(plane, f"--kube-api-qps={qps}", f"--kube-api-burst={burst}")
        try:
            first, end = _wait_bound(plane, "al", pods, timeout=1200)
            log = allot.output()
        finally:
            allot.stop()
        cycles = [(int(b), float(ms), float(cpu)) for b, ms, cpu in CYCLE.findall(log)]
        busy = [ms for bound, ms, _ in cycles if bound]
        engine_ms = sum(cpu for _, _, cpu in cycles)
        overall, to_first = _rates(pods, start, first, end)
        every = [ms for _, ms, _ in cycles]
        return overall, to_first, engine_ms / pods, len(busy), max(busy, default=0.0), every
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
            kube, kube_first = run_kube_scheduler(Path(tmp) / "kube", nodes, pods, qps, burst)
        with tempfile.TemporaryDirectory() as tmp:
            allot, first, engine_ms, busy, longest, every = run_allot(
                Path(tmp) / "allot", nodes, pods, qps, burst
            )
        print(
            f"{nodes} nodes x 8 GPUs, {pods} pods, {setting} (qps {qps}, burst {burst}): "
            f"kube-scheduler {kube:.1f} pods/s (first bind {kube_first:.1f} s), "
            f"allot {allot:.1f} pods/s (first bind {first:.1f} s) = {allot / kube:.2f}x; "
            f"allot engine {engine_ms:.2f} ms CPU per pod, {busy} cycle(s) bound pods, "
            f"longest {longest:.0f} ms; cycle latency p50 {_percentile(every, 0.5):.1f} ms, "
            f"p99 {_percentile(every, 0.99):.1f} ms over {len(every)} cycles",
            flush=True,
        )


if __name__ == "__main__":
    main()

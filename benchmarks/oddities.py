"""Unusual but valid objects, played with kube-scheduler v1.36 and with `allot run`, side by side.

Each folder under `benchmarks/oddities/` holds `cluster.yaml` (what exists first) and `pods.yaml`
(pods and what they need, applied at once). For each folder and each scheduler, a fresh control
plane (../shared/k8s) gets two nodes (`n1`, 8 CPUs, label `zone: earth`; `n2`, 8 CPUs), the
cluster, the scheduler, then the pods; after `--settle` seconds each pod's node, its
`PodScheduled` condition (reason, message) and its claims' devices (pool, device) are read. A line per pod says
whether both schedulers left it alike.

The folders cover what the differential generator does not: scheduling gates and claims that do
not exist (kept out of kube-scheduler's queue), PersistentVolumeClaims (WaitForFirstConsumer,
Immediate, generic ephemeral volumes), RuntimeClass overhead and scheduling, preemptionPolicy
Never, DRA counters, device taints, extended resources served by a DeviceClass, incomplete and
superseded pools, a node with no status, spread and affinity fields (minDomains, matchLabelKeys,
namespace selectors), and a CEL selector that fails at runtime on one node
(a documented difference: docs/differential.md).
Pods applied at once are taken in an order that depends on timing, so a difference in which of
two competing pods got a node is not by itself a defect: read the messages.

Run: KUBEBUILDER_ASSETS=$(../shared/k8s/install.sh) python benchmarks/oddities.py [FOLDER ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from controlplane import ControlPlane, binaries_folder, skip_reason
from live.cluster import AllotProcess, create_node, pod_claim_devices, pods

FOLDERS = Path(__file__).resolve().parent / "oddities"
NAMESPACE = "odd"
Outcome = tuple[str | None, tuple[str, str] | None, list[tuple[str, str]]]


def _outcomes(plane: ControlPlane) -> dict[str, Outcome]:
    devices = pod_claim_devices(plane, NAMESPACE)
    found: dict[str, Outcome] = {}
    for name, pod in sorted(pods(plane, NAMESPACE).items()):
        status: dict[str, Any] = pod.get("status") or {}
        scheduled = [c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"]
        condition = (scheduled[0].get("reason", ""), scheduled[0].get("message", "")) if scheduled else None
        found[name] = (pod["spec"].get("nodeName"), condition, devices.get(name, []))
    return found


def play(folder: Path, *, allot: bool, settle: float) -> dict[str, Outcome]:
    with tempfile.TemporaryDirectory(prefix="allot-oddities-") as workdir:
        plane = ControlPlane(Path(workdir))
        plane.start()
        try:
            plane.start_controller_manager()
            create_node(plane, "n1", cpu="8", labels={"zone": "earth"})
            create_node(plane, "n2", cpu="8")
            plane.apply((folder / "cluster.yaml").read_text())
            process = AllotProcess(plane, "--scheduler-name=default-scheduler") if allot else None
            if process is None:
                plane.start_scheduler()
            try:
                time.sleep(2)
                plane.apply((folder / "pods.yaml").read_text())
                time.sleep(settle)
                if process is not None and not process.alive():
                    raise RuntimeError("allot run stopped:\n" + process.output()[-3000:])
                return _outcomes(plane)
            finally:
                if process is not None:
                    process.stop()
        finally:
            plane.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "folders", nargs="*", type=Path, help="default: every folder under benchmarks/oddities"
    )
    parser.add_argument("--settle", type=float, default=12.0, help="seconds after the pods are applied")
    args = parser.parse_args()
    if binaries_folder() is None:
        sys.exit(skip_reason())
    folders = args.folders or sorted(p for p in FOLDERS.iterdir() if p.is_dir())
    alike = total = 0
    for folder in folders:
        kube = play(folder, allot=False, settle=args.settle)
        allot = play(folder, allot=True, settle=args.settle)
        print(f"{folder.name}:")
        for name in sorted(set(kube) | set(allot)):
            total += 1
            if kube.get(name) == allot.get(name):
                alike += 1
                print(f"  =  {name}: {kube.get(name)}")
            else:
                print(
                    f"  != {name}\n       kube-scheduler {kube.get(name)}\n       allot run      {allot.get(name)}"
                )
    print(f"\n{alike} of {total} pods left alike by kube-scheduler and allot run")
    return 0


if __name__ == "__main__":
    sys.exit(main())

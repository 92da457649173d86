"""`allot run --quota-holds` on a real API server: cohort quota that frees up is kept for the
least-served queue's blocked head, instead of going to a queue that already borrows.

One 16-CPU node. `lend` (9 CPUs of nominal quota) runs 5; `borrow` (7) runs 11, 4 of them
borrowed; `starved` has no quota of its own and asks for 4 CPUs. Under Kueue's fair sharing alone
the borrower's one-CPU pods would win every CPU that frees up (its share after admission stays
below the starved queue's), and the 4-CPU pod would never start (tests/engine/test_quota_holds.py
shows that without holds)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    bound_nodes,
    create_node,
    eventually,
    pod_manifest,
    pods,
    scheduled_message,
    serve_kueue_crds,
)
from live.kueue_crds import team_queues

QUEUE = {"kueue.x-k8s.io/queue-name": "main"}
NOMINAL = {"lend": "9", "borrow": "7", "starved": "0"}
FAIR_SHARING = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
"""


@pytest.fixture
def plane(fresh_control_plane: ControlPlane) -> Iterator[ControlPlane]:
    plane = fresh_control_plane
    plane.start_controller_manager()  # its node lifecycle controller lifts the not-ready taint
    serve_kueue_crds(plane)
    objects: list[dict[str, Any]] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "all"}},
    ]  # fmt: skip
    for team, nominal in NOMINAL.items():
        plane.kubectl("create", "namespace", team)
        objects += team_queues(team, "all", {"cpu": nominal})
    for obj in objects:
        plane.apply(json.dumps(obj))
    create_node(plane, "cpu-1", cpu="16")
    yield plane


def _apply(plane: ControlPlane, name: str, team: str, cpu: int = 1) -> None:
    plane.apply(pod_manifest(name, namespace=team, cpu=str(cpu), labels=QUEUE))


def _succeed(plane: ControlPlane, team: str, name: str) -> None:
    plane.request("PATCH", f"/api/v1/namespaces/{team}/pods/{name}/status", {"status": {"phase": "Succeeded"}},
                  content_type="application/merge-patch+json")  # fmt: skip


def test_freed_quota_waits_for_the_least_served_queue_and_then_starts_its_job(
    plane: ControlPlane, tmp_path: Path
) -> None:
    config = tmp_path / "kueue.yaml"
    config.write_text(FAIR_SHARING)
    with AllotProcess(plane, f"--kueue-config={config}", "--quota-holds") as allot:
        for i in range(11):
            _apply(plane, f"run-{i}", "borrow")
        for i in range(5):
            _apply(plane, f"lend-{i}", "lend")
        eventually(lambda: len(bound_nodes(plane, "borrow")) + len(bound_nodes(plane, "lend")) == 16,
                   what="the node full", timeout=90)  # fmt: skip
        _apply(plane, "big", "starved", cpu=4)
        for i in range(4):
            _apply(plane, f"more-{i}", "borrow")
        # The node is full: all five wait (for quota), and the big job's queue is least served.
        eventually(lambda: scheduled_message(pods(plane, "starved").get("big", {})), what="big waits")
        eventually(lambda: all(scheduled_message(pods(plane, "borrow").get(f"more-{i}", {})) for i in range(4)),
                   what="more-* wait")  # fmt: skip

        # Two of the borrower's pods end: two CPUs of cohort quota come back. The borrower may not
        # take them: they are held for the big job, and the pods say so.
        for i in range(2):
            _succeed(plane, "borrow", f"run-{i}")
        eventually(lambda: "quota held for a workload of a less-served ClusterQueue (starved/big)"
                   in scheduled_message(pods(plane, "borrow")["more-0"]), what="the hold's reason")  # fmt: skip
        time.sleep(2)  # nothing is bound on the held quota meanwhile
        assert not {f"more-{i}" for i in range(4)} & set(bound_nodes(plane, "borrow"))
        assert "big" not in bound_nodes(plane, "starved")

        # Two more end: four CPUs are free and the big job starts on them; the borrower still waits.
        for i in range(2, 4):
            _succeed(plane, "borrow", f"run-{i}")
        eventually(lambda: "big" in bound_nodes(plane, "starved"), what="the big job bound")
        time.sleep(2)
        assert not {f"more-{i}" for i in range(4)} & set(bound_nodes(plane, "borrow"))
        status = eventually(lambda: (q := plane.get("clusterqueue", "starved")).get("status", {}).get("admittedWorkloads") == 1 and q,
                            what="the starved queue's status")  # fmt: skip
        assert status["status"]["flavorsUsage"][0]["resources"][0]["borrowed"] == "4"
        assert allot.alive(), allot.output()[-3000:]

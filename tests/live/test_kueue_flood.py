"""A GPU flood through Kueue's queues with fair sharing, on a real API server: `allot run` admits
and binds exactly what `allot place` plans on the same objects (one engine), device-plugin GPUs
and DRA claims counted against quota alike."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from allot.model.loader import load_paths
from allot.plan.planner import plan
from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    bound_nodes,
    claim_template,
    create_node,
    dump_cluster,
    eventually,
    gpu_class,
    gpu_slice,
    no_device_twice,
    pod_claim_devices,
    pod_manifest,
    pods,
    serve_kueue_crds,
)
from live.kueue_crds import team_queues

TEAMS = ("flood", "train", "serve")
QUEUE = {"kueue.x-k8s.io/queue-name": "main"}
# Fair sharing on (v1beta2: the block's presence), DRA GPUs counted as example.com/gpu.
KUEUE_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
resources:
  deviceClassMappings:
  - name: example.com/gpu
    deviceClassNames: [gpu]
"""


def _kueue_objects() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "all"}},
    ]  # fmt: skip
    for team in TEAMS:
        objects += team_queues(team, "all", {"cpu": "8", "nvidia.com/gpu": "4", "example.com/gpu": "2"})
    return objects


def _plugin_gpu_pod(name: str, team: str, *, gpus: int, cpu: str, priority_class: str | None = None) -> str:
    resources = {
        "requests": {"cpu": cpu, "nvidia.com/gpu": str(gpus)},
        "limits": {"nvidia.com/gpu": str(gpus)},
    }
    container = {"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": resources}
    return pod_manifest(
        name,
        namespace=team,
        labels=QUEUE,
        priority_class=priority_class,
        extra_spec={"containers": [container]},
    )


def test_a_gpu_flood_is_admitted_and_bound_as_allot_place_plans_it(
    fresh_control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = fresh_control_plane
    plane.start_controller_manager()
    serve_kueue_crds(plane)
    queues = tmp_path / "queues.yaml"
    queues.write_text("\n---\n".join(json.dumps(o) for o in _kueue_objects()))
    config = tmp_path / "kueue.yaml"
    config.write_text(KUEUE_CONFIG)
    for team in TEAMS:
        plane.kubectl("create", "namespace", team)
        plane.apply(claim_template("one-gpu", namespace=team))
    for obj in _kueue_objects():
        plane.apply(json.dumps(obj))
    plane.apply(json.dumps({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": "high"}, "value": 1000}))  # fmt: skip
    plane.apply(gpu_class())
    for i in range(4):
        create_node(plane, f"gpu-{i}", cpu="8", extended={"nvidia.com/gpu": "4"})
        plane.apply(gpu_slice(f"gpu-{i}", 2))
    # The flood: many one-GPU pods at once; another team's two-GPU pods, half at high priority;
    # a third team's pods with a DRA GPU each, from a template.
    for i in range(14):
        plane.apply(_plugin_gpu_pod(f"flood-{i:02d}", "flood", gpus=1, cpu="1"))
    for i in range(5):
        plane.apply(
            _plugin_gpu_pod(f"big-{i}", "train", gpus=2, cpu="2", priority_class="high" if i % 2 else None)
        )
    for i in range(5):
        plane.apply(pod_manifest(f"dra-{i}", namespace="serve", cpu="2", labels=QUEUE, template="one-gpu"))
    eventually(lambda: all(p.get("status", {}).get("resourceClaimStatuses") for p in pods(plane, "serve").values()),
               what="claims created from templates")  # fmt: skip

    # `allot place` on the dump (the queues and the configuration beside it), then `allot run`.
    dump = dump_cluster(plane, tmp_path / "cluster.yaml")
    (tmp_path / "config.yaml").write_text(KUEUE_CONFIG)
    expected = plan(load_paths([dump, queues, tmp_path / "config.yaml"]), scheduler_name="allot")
    want = {b.pod: b.node for b in expected.bound}
    # Every team gets GPUs, and the quota leaves part of the flood waiting: a flood, not a fit.
    assert {key.split("/")[0] for key in want} == set(TEAMS)
    assert any(key.startswith("flood/") for key in expected.waiting)

    with AllotProcess(plane, f"--kueue-config={config}") as allot:

        def bound() -> dict[str, str]:
            return {
                f"{team}/{name}": node for team in TEAMS for name, node in bound_nodes(plane, team).items()
            }

        eventually(lambda: len(bound()) >= len(want), what=f"{len(want)} pods bound", timeout=90)
        time.sleep(2)  # nothing more is bound later: what is waiting stays waiting
        assert bound() == want
        # The queues' status tells the truth: admitted workloads per ClusterQueue as bound.
        admitted = {team: sum(k.startswith(f"{team}/") for k in want) for team in TEAMS}
        eventually(
            lambda: (
                {t: plane.get("clusterqueue", t).get("status", {}).get("admittedWorkloads", 0) for t in TEAMS}
                == admitted
            ),
            what=f"ClusterQueue status {admitted}",
        )
        assert allot.alive(), allot.output()[-3000:]
    devices = pod_claim_devices(plane, "serve")
    for placed in expected.bound:
        if placed.pod.startswith("serve/"):
            wanted = sorted(
                (r.pool, r.device) for a in placed.allocations.values() for r in a.devices.results
            )
            assert devices[placed.pod.split("/", 1)[1]] == wanted
    assert no_device_twice(plane, list(TEAMS)) == []

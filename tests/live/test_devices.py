"""`allot run` on DRA's harder cases, against the decisions `allot place` makes on the same objects:
a GPU and an RDMA NIC under one PCIe root, MIG partitions through a prioritized list, fractional
GPUs by consumable capacity."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.model.loader import load_paths
from allot.plan.planner import plan
from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    allot_binary,
    apply_manifests,
    bound_nodes,
    dump_cluster,
    eventually,
    no_device_twice,
    pod_claim_devices,
    pod_manifest,
    pods,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FRACTION = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "gpu-30-percent", "namespace": "default"},
    "spec": {"spec": {"devices": {"requests": [{
        "name": "gpu",
        "exactly": {"deviceClassName": "hami-core-gpu.project-hami.io",
                    "capacity": {"requests": {"cores": "30", "memory": "10Gi"}}},
    }]}}},
}  # fmt: skip


@pytest.fixture(scope="module")
def plane(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    control_plane.start_controller_manager()
    yield control_plane


def _preset(*args: str) -> str:
    return subprocess.run(
        [allot_binary(), "preset", *args, "-o", "yaml"], check=True, capture_output=True, text=True
    ).stdout


def test_aligned_mig_and_fractional_claims_are_allocated_as_allot_place_does(
    plane: ControlPlane, tmp_path: Path
) -> None:
    for name in ("nodes.yaml", "deviceclasses.yaml", "resourceslices.yaml", "workload.yaml"):
        apply_manifests(plane, (EXAMPLES / "cluster" / name).read_text())
    for name in ("node.yaml", "h100-dynamic-mig.yaml", "claim.yaml"):
        apply_manifests(plane, (EXAMPLES / "mig" / name).read_text())
    apply_manifests(
        plane,
        _preset("dgx-h100", "--nodes", "1", "--gpu-mode", "shared", "--prefix", "shared", "--no-classes"),
    )
    apply_manifests(plane, _preset("dgx-h100", "--nodes", "1", "--gpu-mode", "shared", "--prefix", "unused"))
    plane.kubectl("delete", "node", "unused-00")  # the preset's classes (hami) without a second node
    plane.apply(json.dumps(FRACTION))
    plane.apply(pod_manifest("mig-user", claim="inference-mig", cpu="1"))
    for i in range(5):
        plane.apply(pod_manifest(f"fraction-{i}", template="gpu-30-percent", cpu="1"))
    eventually(
        lambda: all(
            p.get("status", {}).get("resourceClaimStatuses")
            for n, p in pods(plane).items()
            if n.startswith("fraction")
        ),
        what="claims created from templates",
    )
    expected = plan(load_paths([dump_cluster(plane, tmp_path / "cluster.yaml")]), scheduler_name="allot")
    expected_nodes = {b.pod: b.node for b in expected.bound}
    assert "ml-team/trainer-0" in expected_nodes and "default/mig-user" in expected_nodes
    assert sum(1 for k in expected_nodes if "fraction" in k) == 5

    with AllotProcess(plane) as allot:

        def all_bound() -> dict[str, str]:
            found = {f"default/{k}": v for k, v in bound_nodes(plane).items()}
            found.update({f"ml-team/{k}": v for k, v in bound_nodes(plane, "ml-team").items()})
            return found if len(found) == len(expected_nodes) else {}

        bound = eventually(all_bound, what="every pod bound")
        assert allot.alive(), allot.output()
    assert bound == expected_nodes
    devices = {f"default/{k}": v for k, v in pod_claim_devices(plane).items()}
    devices.update({f"ml-team/{k}": v for k, v in pod_claim_devices(plane, "ml-team").items()})
    for placed in expected.bound:
        want = sorted((r.pool, r.device) for a in placed.allocations.values() for r in a.devices.results)
        assert devices[placed.pod] == want, placed.pod
    assert no_device_twice(plane, ("default", "ml-team")) == []

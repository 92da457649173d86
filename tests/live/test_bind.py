"""`allot run` against a real API server: pods with DRA claims bound as `allot place` decides."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

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
)


@pytest.fixture(scope="module")
def plane(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    control_plane.start_controller_manager()
    yield control_plane


def test_pods_with_claims_from_templates_are_bound_as_allot_place_decides(
    plane: ControlPlane, tmp_path: Path
) -> None:
    for name in ("node-a", "node-b"):
        create_node(plane, name, cpu="8")
        plane.apply(gpu_slice(name, 2))
    plane.apply(gpu_class())
    plane.apply(claim_template("one-gpu"))
    for i in range(3):
        plane.apply(pod_manifest(f"trainer-{i}", template="one-gpu", cpu="2"))
    # The controller creates each pod's claim; then the cluster is what `allot place` reads.
    eventually(lambda: all(p.get("status", {}).get("resourceClaimStatuses") for p in pods(plane).values()),
               what="claims created from templates")  # fmt: skip
    expected = plan(load_paths([dump_cluster(plane, tmp_path / "cluster.yaml")]), scheduler_name="allot")
    expected_nodes = {b.pod.split("/", 1)[1]: b.node for b in expected.bound}
    assert len(expected_nodes) == 3

    with AllotProcess(plane) as allot:
        bound = eventually(lambda: len(bound_nodes(plane)) == 3 and bound_nodes(plane), what="3 pods bound")
        assert allot.alive(), allot.output()
    assert bound == expected_nodes
    devices = pod_claim_devices(plane)
    for placed in expected.bound:
        name = placed.pod.split("/", 1)[1]
        want = sorted((r.pool, r.device) for a in placed.allocations.values() for r in a.devices.results)
        assert devices[name] == want
    assert no_device_twice(plane) == []

"""`allot run` against a real API server: pods with DRA claims bound as `allot place` decides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from allot.model.loader import load_paths
from allot.plan.planner import plan
from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    allocated_devices,
    bound_nodes,
    claim_template,
    claims,
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


def test_a_pod_asking_for_an_extended_resource_gets_a_claim_its_status_names(plane: ControlPlane) -> None:
    # `example.com/gpu: 1` on a node whose allocatable lacks it: a DeviceClass with
    # extendedResourceName serves it. As kube-scheduler does, allot creates the claim, allocates
    # and reserves it, names it in the pod's status.extendedResourceClaimStatus (what the kubelet
    # reads to prepare the device for the container), then binds.
    create_node(plane, "node-ext", cpu="8")
    plane.apply(gpu_slice("node-ext", 1))
    served = json.loads(gpu_class("ext-gpu"))
    served["spec"]["extendedResourceName"] = "example.com/gpu"
    plane.apply(json.dumps(served))
    manifest = json.loads(pod_manifest("ext-user", cpu="1"))
    container = manifest["spec"]["containers"][0]
    container["resources"] = {
        "requests": {"cpu": "1", "example.com/gpu": "1"},
        "limits": {"example.com/gpu": "1"},
    }
    manifest["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "node-ext"}
    plane.apply(json.dumps(manifest))
    with AllotProcess(plane) as allot:
        eventually(lambda: bound_nodes(plane).get("ext-user") == "node-ext", what="ext-user bound")
        assert allot.alive(), allot.output()
    status = pods(plane)["ext-user"]["status"].get("extendedResourceClaimStatus")
    assert status is not None, pods(plane)["ext-user"]["status"]
    assert status["requestMappings"] == [
        {"containerName": "main", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    ]
    claim = claims(plane)[status["resourceClaimName"]]
    assert allocated_devices(claim) == [("node-ext", "gpu-0")]
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["ext-user"]
    assert no_device_twice(plane) == []

"""`allot run` against a real API server: volume claims that wait for their first consumer, and
pods placed by the pods around them.

A claim matched to an available volume has the volume's claimRef written, and the PV
controller (the controller manager runs) then binds the claim; a claim left to dynamic
provisioning is annotated with the node its pod went to. A pod with required anti-affinity
to a running pod goes to another node.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    bound_nodes,
    create_node,
    eventually,
    pod_manifest,
    storage,
    volumes_spec,
)

SELECTED_NODE = "volume.kubernetes.io/selected-node"


@pytest.fixture(scope="module")
def plane(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    control_plane.start_controller_manager()
    yield control_plane


def test_claims_waiting_for_their_first_consumer_are_bound_and_annotated(plane: ControlPlane) -> None:
    for name in ("vol-a", "vol-b"):
        create_node(plane, name, cpu="4")
    storage(plane, "vol-b")
    plane.apply(pod_manifest("with-volumes", cpu="1", extra_spec=volumes_spec()))
    with AllotProcess(plane) as allot:
        node = eventually(lambda: bound_nodes(plane).get("with-volumes"), what="the pod bound")
        assert allot.alive(), allot.output()[-3000:]
    # The local volume lives on vol-b only, so the pod went there.
    assert node == "vol-b"
    scratch = plane.get("pvc", "scratch", namespace="default")
    assert scratch["metadata"]["annotations"][SELECTED_NODE] == "vol-b"  # type: ignore[index]
    volume = plane.get("pv", "local-pv")
    assert volume["spec"]["claimRef"]["name"] == "data"  # type: ignore[index]
    data = eventually(
        lambda: plane.get("pvc", "data", namespace="default")["spec"].get("volumeName"),  # type: ignore[union-attr]
        what="the PV controller binding the claim",
    )
    assert data == "local-pv"


def test_required_anti_affinity_keeps_a_pod_off_its_targets_node(plane: ControlPlane) -> None:
    for name in ("aff-a", "aff-b"):
        create_node(plane, name, cpu="4", labels={"pool": "aff"})
    select = {"nodeSelector": {"pool": "aff"}}
    plane.apply(pod_manifest("aff-first", cpu="1", labels={"app": "spread-me"}, extra_spec=select))
    with AllotProcess(plane) as allot:
        first = eventually(lambda: bound_nodes(plane).get("aff-first"), what="the first pod bound")
        term = {
            "topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"app": "spread-me"}},
        }
        anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
        plane.apply(
            pod_manifest("aff-second", cpu="1", labels={"app": "spread-me"}, extra_spec={**select, **anti})
        )
        second = eventually(lambda: bound_nodes(plane).get("aff-second"), what="the second pod bound")
        assert allot.alive(), allot.output()[-3000:]
    assert {first, second} == {"aff-a", "aff-b"}

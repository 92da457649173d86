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


def test_volume_claims_and_anti_affinity_as_allot_run_binds_them(plane: ControlPlane) -> None:
    for name in ("vol-a", "vol-b"):
        create_node(plane, name, cpu="4", labels={"pool": "vol"})
    storage(plane, "vol-b")
    select = {"nodeSelector": {"pool": "vol"}}
    plane.apply(pod_manifest("with-volumes", cpu="1", extra_spec={**select, **volumes_spec()}))
    plane.apply(pod_manifest("spread-0", cpu="1", labels={"app": "spread-me"}, extra_spec=select))
    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "spread-me"}}}
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    with AllotProcess(plane) as allot:
        first = eventually(lambda: bound_nodes(plane).get("spread-0"), what="the first spread pod bound")
        plane.apply(
            pod_manifest("spread-1", cpu="1", labels={"app": "spread-me"}, extra_spec={**select, **anti})
        )
        bound = eventually(
            lambda: {"with-volumes", "spread-1"} <= set(bound_nodes(plane)) and bound_nodes(plane),
            what="the volume pod and the second spread pod bound",
        )
        assert allot.alive(), allot.output()[-3000:]
    # The local volume lives on vol-b only, so the pod went there.
    assert bound["with-volumes"] == "vol-b"
    scratch = plane.get("pvc", "scratch", namespace="default")
    assert scratch["metadata"]["annotations"][SELECTED_NODE] == "vol-b"  # type: ignore[index]
    volume = plane.get("pv", "local-pv")
    assert volume["spec"]["claimRef"]["name"] == "data"  # type: ignore[index]
    data = eventually(
        lambda: plane.get("pvc", "data", namespace="default")["spec"].get("volumeName"),  # type: ignore[union-attr]
        what="the PV controller binding the claim",
    )
    assert data == "local-pv"
    # Required anti-affinity kept the second pod off the first one's node.
    assert {first, bound["spread-1"]} == {"vol-a", "vol-b"}

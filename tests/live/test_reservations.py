"""`allot run --reservations` on a real API server: a pod that needs a whole node holds one, and
only pods whose runtime estimate ends before the node drains use its free GPUs meanwhile.

One node with 8 device-plugin GPUs; four one-GPU pods run (each labelled with Kueue's maximum
execution time, 3,600 s). An 8-GPU pod then waits for the node to drain, and three one-GPU pods
come: one that will end in 1,000 s (it backfills), one without an estimate and one of 5,000 s
(both would delay the big pod, so they wait). Without reservations all three would start at once
and the big pod would wait for them too (tests/engine/test_reservation.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from allot.model.kueue import MAX_EXEC_TIME_LABEL
from allot.scheduling.scheduler import HELD_REASON
from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    bound_nodes,
    create_node,
    eventually,
    pod_manifest,
    pods,
    scheduled_message,
)

NS = "default"
GPU = "nvidia.com/gpu"


@pytest.fixture
def plane(fresh_control_plane: ControlPlane) -> Iterator[ControlPlane]:
    plane = fresh_control_plane
    plane.start_controller_manager()  # its node lifecycle controller lifts the not-ready taint
    create_node(plane, "gpu-1", extended={GPU: "8"})
    yield plane


def _gpu_pod(plane: ControlPlane, name: str, gpus: int, estimate: int | None) -> None:
    labels = {MAX_EXEC_TIME_LABEL: str(estimate)} if estimate is not None else {}
    manifest = json.loads(pod_manifest(name, namespace=NS, cpu="100m", labels=labels))
    manifest["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "100m", GPU: str(gpus)},
        "limits": {GPU: str(gpus)},
    }
    plane.apply(json.dumps(manifest))


def test_a_held_node_is_backfilled_only_by_pods_that_end_before_it_drains(plane: ControlPlane) -> None:
    with AllotProcess(plane, "--reservations") as allot:
        for i in range(4):
            _gpu_pod(plane, f"long-{i}", 1, 3600)
        eventually(lambda: len(bound_nodes(plane, NS)) == 4, what="the long pods bound")
        _gpu_pod(plane, "big", 8, None)
        eventually(lambda: scheduled_message(pods(plane, NS).get("big", {})), what="big waits")
        for name, estimate in (("short", 1000), ("unknown", None), ("too-long", 5000)):
            _gpu_pod(plane, name, 1, estimate)
        eventually(lambda: "short" in bound_nodes(plane, NS), what="the short pod backfills")
        for name in ("unknown", "too-long"):
            message = eventually(lambda n=name: scheduled_message(pods(plane, NS).get(n, {})), what=name)
            assert HELD_REASON in message, message
        time.sleep(2)  # three GPUs stay free, kept for the big pod
        assert set(bound_nodes(plane, NS)) == {*(f"long-{i}" for i in range(4)), "short"}

        # The node drains: the big pod takes it before the two that waited.
        for name in ("short", *(f"long-{i}" for i in range(4))):
            plane.kubectl("delete", "pod", "-n", NS, name, "--grace-period=0", "--force")
        eventually(lambda: "big" in bound_nodes(plane, NS), what="the big pod bound")
        assert not {"unknown", "too-long"} & set(bound_nodes(plane, NS))
        assert allot.alive(), allot.output()[-3000:]

"""Churn against `allot run` on a real control plane: pods, claims, claim templates, device
classes, slices and nodes created and deleted in a seeded random order while allot schedules.
Afterwards allot is still running without an internal error, no device is in two claims, no
claim is left to a pod that is gone, and no pending pod fits (what `allot place` would bind on
the cluster as it is, nothing). Two defects this found: a claim deleted under a waiting pod
crashed allot at the pod's next try, and a pod tried while the cluster had no node waited five
minutes after nodes came back."""

from __future__ import annotations

import random
import time
from pathlib import Path

from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    claim_template,
    create_node,
    eventually,
    gpu_class,
    gpu_slice,
    named_claim,
    pending_that_fit,
    pod_manifest,
    pods,
    priority_class,
    soundness,
)

SEED = 6
STEPS = 200
NODES = ("churn-0", "churn-1", "churn-2")
OPERATIONS = (
    *["pod-template"] * 4, *["pod-named"] * 2, "pod-high", "pod-high-gpu", "pod-cpu",
    "claim", "delete-claim", *["delete-pod"] * 2, "delete-slice", "slice", "delete-node", "node",
    "delete-class", "class", "delete-template", "template",
)  # fmt: skip


def _step(plane: ControlPlane, rng: random.Random, count: int) -> None:
    operation = rng.choice(OPERATIONS)
    name = f"{operation}-{count}"
    node = rng.choice(NODES)
    claim = f"named-{rng.randrange(4)}"
    if operation == "pod-template":
        plane.apply(pod_manifest(name, template="one"))
    elif operation == "pod-named":
        plane.apply(pod_manifest(name, claim=claim))
    elif operation == "pod-high":
        plane.apply(pod_manifest(name, cpu=str(rng.choice([2, 4])), priority_class="high"))
    elif operation == "pod-high-gpu":
        plane.apply(pod_manifest(name, template="one", priority_class="high"))
    elif operation == "pod-cpu":
        plane.apply(pod_manifest(name, cpu=str(rng.choice([1, 2, 4]))))
    elif operation == "claim":
        plane.apply(named_claim(claim))
    elif operation == "delete-claim":
        plane.kubectl("delete", "resourceclaim", claim, "--ignore-not-found", "--wait=false")
    elif operation == "delete-pod":
        existing = sorted(pods(plane))
        if existing:
            victim = rng.choice(existing)
            plane.kubectl("delete", "pod", victim, "--grace-period=0", "--force", "--ignore-not-found")
    elif operation == "delete-slice":
        plane.kubectl(
            "delete", "resourceslice", f"{node}-gpu.example.com", "--ignore-not-found", "--wait=false"
        )
    elif operation == "slice":
        plane.apply(gpu_slice(node, 2))
    elif operation == "delete-node":
        plane.kubectl("delete", "node", node, "--ignore-not-found", "--wait=false")
    elif operation == "node":
        create_node(plane, node, cpu="8")
    elif operation == "delete-class":
        plane.kubectl("delete", "deviceclass", "gpu", "--ignore-not-found", "--wait=false")
    elif operation == "class":
        plane.apply(gpu_class("gpu"))
    elif operation == "delete-template":
        plane.kubectl("delete", "resourceclaimtemplate", "one", "--ignore-not-found", "--wait=false")
    else:
        plane.apply(claim_template("one"))


def test_allot_survives_churn_and_leaves_nothing_given_twice_or_pending_that_fits(
    fresh_control_plane: ControlPlane, tmp_path: Path
) -> None:
    plane = fresh_control_plane
    plane.start_controller_manager()
    rng = random.Random(SEED)
    with AllotProcess(plane) as allot:
        for node in NODES:
            create_node(plane, node, cpu="8")
            plane.apply(gpu_slice(node, 2))
        plane.apply(gpu_class("gpu"))
        plane.apply(claim_template("one"))
        plane.apply(priority_class("high", 1000))
        for count in range(STEPS):
            try:
                _step(plane, rng, count)
            except Exception as error:  # the API may refuse a step (an edit of a pod it holds)
                if "is invalid" not in str(error) and "Forbidden" not in str(error):
                    raise
            time.sleep(rng.choice([0.0, 0.02, 0.1, 0.3]))
            assert allot.alive() and "internal error" not in allot.output(), allot.output()[-3000:]
        dump = tmp_path / "cluster.yaml"
        try:
            eventually(lambda: not soundness(plane, ["default"]), timeout=60, what="a sound cluster")
            eventually(
                lambda: not pending_that_fit(plane, dump), timeout=60, what="nothing pending that fits"
            )
        except AssertionError:
            raise AssertionError(
                f"unsound: {soundness(plane, ['default'])}; pending that fit: {pending_that_fit(plane, dump)}"
            ) from None
        assert allot.alive() and "internal error" not in allot.output(), allot.output()[-3000:]

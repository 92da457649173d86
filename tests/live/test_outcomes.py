"""What users see on a live cluster: reasons on pods that wait, preemption as kube-scheduler does it,
device-plugin GPUs, gangs all-or-nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane import ControlPlane
from live.cluster import (
    AllotProcess,
    bound_nodes,
    create_node,
    eventually,
    gpu_class,
    gpu_slice,
    named_claim,
    pod_manifest,
    pods,
    priority_class,
)

NS = "outcomes"


@pytest.fixture(scope="module")
def plane(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    control_plane.start_controller_manager()
    control_plane.kubectl("create", "namespace", NS)
    yield control_plane


@pytest.fixture
def allot(plane: ControlPlane) -> Iterator[AllotProcess]:
    with AllotProcess(plane) as process:
        yield process


def _condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition["type"] == kind:
            return condition  # type: ignore[no-any-return]
    return None


def _events(plane: ControlPlane, pod: str) -> list[dict[str, Any]]:
    items = plane.get("events.events.k8s.io", namespace=NS)["items"]
    return [e for e in items if e["regarding"]["name"] == pod]  # type: ignore[union-attr, index]


def test_a_pod_that_fits_nowhere_says_why_in_its_condition_and_an_event(
    plane: ControlPlane, allot: AllotProcess
) -> None:
    create_node(plane, "small-1", cpu="2", labels={"test": "outcomes-reasons"})
    plane.apply(
        pod_manifest(
            "too-big", namespace=NS, cpu="64", extra_spec={"nodeSelector": {"test": "outcomes-reasons"}}
        )
    )

    condition = eventually(
        lambda: _condition(pods(plane, NS).get("too-big", {}), "PodScheduled"), what="PodScheduled"
    )
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    assert condition["message"].startswith("0/")
    assert "Insufficient cpu" in condition["message"]
    events = eventually(lambda: _events(plane, "too-big"), what="a FailedScheduling event")
    assert events[0]["reason"] == "FailedScheduling" and events[0]["type"] == "Warning"
    assert "Insufficient cpu" in events[0]["note"]
    plane.kubectl("delete", "pod", "too-big", "-n", NS, "--wait=false")


def test_a_gated_pod_waits_and_is_bound_once_its_gate_is_removed(
    plane: ControlPlane, allot: AllotProcess
) -> None:
    create_node(plane, "gate-1", cpu="4", labels={"test": "outcomes-gates"})
    spec = {"schedulingGates": [{"name": "example.com/approval"}], "nodeSelector": {"test": "outcomes-gates"}}
    plane.apply(pod_manifest("gated", namespace=NS, extra_spec=spec))
    condition = eventually(
        lambda: _condition(pods(plane, NS).get("gated", {}), "PodScheduled"), what="PodScheduled"
    )
    assert condition["reason"] == "SchedulingGated"
    assert "gated" not in bound_nodes(plane, NS)
    # As kube-scheduler does, allot leaves the API server's condition and writes no event for it.
    # A pod naming a claim that does not exist is kept out of the queue the same way (PreEnqueue).
    claimless = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "no-such-claim"}],
                 "nodeSelector": {"test": "outcomes-gates"}}  # fmt: skip
    plane.apply(pod_manifest("claimless", namespace=NS, extra_spec=claimless))
    plane.apply(
        pod_manifest("witness", namespace=NS, extra_spec={"nodeSelector": {"test": "outcomes-gates"}})
    )
    eventually(lambda: bound_nodes(plane, NS).get("witness"), what="a later pod bound: allot has looked")
    eventually(lambda: [e for e in _events(plane, "witness") if e["reason"] == "Scheduled"], what="its event")
    gated = pods(plane, NS)["gated"]
    assert _condition(gated, "PodScheduled") == condition
    assert condition["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    assert _condition(pods(plane, NS)["claimless"], "PodScheduled") is None
    assert _events(plane, "gated") == [] and _events(plane, "claimless") == []
    plane.kubectl("delete", "pod", "claimless", "witness", "-n", NS, "--grace-period=0", "--force")
    plane.kubectl(
        "patch",
        "pod",
        "gated",
        "-n",
        NS,
        "--type=json",
        "-p",
        json.dumps([{"op": "remove", "path": "/spec/schedulingGates"}]),
    )
    assert eventually(lambda: bound_nodes(plane, NS).get("gated"), what="gated pod bound") == "gate-1"
    events = eventually(
        lambda: [e for e in _events(plane, "gated") if e["reason"] == "Scheduled"], what="Scheduled event"
    )
    assert events[0]["note"] == f"Successfully assigned {NS}/gated to gate-1"


def test_device_plugin_gpus_are_counted_from_node_allocatable(
    plane: ControlPlane, allot: AllotProcess
) -> None:
    create_node(
        plane, "plugin-1", cpu="32", labels={"test": "outcomes-plugin"}, extended={"nvidia.com/gpu": "2"}
    )
    selector = {"nodeSelector": {"test": "outcomes-plugin"}}
    for i in range(3):
        manifest = json.loads(pod_manifest(f"plugin-{i}", namespace=NS, extra_spec=selector))
        manifest["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
        plane.apply(json.dumps(manifest))
    eventually(
        lambda: len([p for p in bound_nodes(plane, NS) if p.startswith("plugin-")]) == 2,
        what="two of three bound",
    )
    waiting = [
        n for n, p in pods(plane, NS).items() if n.startswith("plugin-") and not p["spec"].get("nodeName")
    ]
    assert len(waiting) == 1
    condition = eventually(lambda: _condition(pods(plane, NS)[waiting[0]], "PodScheduled"), what="reason")
    assert "nvidia.com/gpu" in condition["message"]


def test_a_gang_is_bound_whole_or_not_at_all(plane: ControlPlane, allot: AllotProcess) -> None:
    create_node(plane, "gang-1", cpu="4", labels={"test": "outcomes-gang"})
    selector = {"nodeSelector": {"test": "outcomes-gang"}}
    group = {"scheduling.x-k8s.io/pod-group": "trio"}
    # Three pods of 2 CPUs on 4 CPUs: the whole gang cannot fit, so none is bound.
    for i in range(3):
        plane.apply(pod_manifest(f"trio-{i}", namespace=NS, cpu="2", labels=group, extra_spec=selector))
    eventually(lambda: all(_condition(p, "PodScheduled") for n, p in pods(plane, NS).items() if n.startswith("trio")),
               what="reasons on the gang")  # fmt: skip
    assert not [n for n in bound_nodes(plane, NS) if n.startswith("trio")]
    # A second node makes room for the whole gang: all three are bound.
    create_node(plane, "gang-2", cpu="4", labels={"test": "outcomes-gang"})
    eventually(
        lambda: len([n for n in bound_nodes(plane, NS) if n.startswith("trio")]) == 3, what="the gang bound"
    )


def test_preemption_marks_and_deletes_victims_and_respects_a_disruption_budget(
    plane: ControlPlane, allot: AllotProcess
) -> None:
    create_node(plane, "pre-1", cpu="4", labels={"test": "outcomes-preempt"})
    create_node(plane, "pre-2", cpu="4", labels={"test": "outcomes-preempt"})
    selector = {"nodeSelector": {"test": "outcomes-preempt"}}
    plane.apply(priority_class("low", 1))
    plane.apply(priority_class("high", 100))
    plane.apply(json.dumps({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "keep", "namespace": NS},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "protected"}}},
    }))  # fmt: skip
    plane.apply(
        pod_manifest(
            "protected-a",
            namespace=NS,
            cpu="2",
            priority_class="low",
            labels={"app": "protected"},
            extra_spec=selector,
        )
    )
    plane.apply(
        pod_manifest(
            "protected-b",
            namespace=NS,
            cpu="2",
            priority_class="low",
            labels={"app": "protected"},
            extra_spec=selector,
        )
    )
    plane.apply(pod_manifest("plain-a", namespace=NS, cpu="2", priority_class="low", extra_spec=selector))
    plane.apply(pod_manifest("plain-b", namespace=NS, cpu="2", priority_class="low", extra_spec=selector))
    eventually(
        lambda: len([n for n in bound_nodes(plane, NS) if n.startswith(("protected", "plain"))]) == 4,
        what="4 bound",
    )
    # allot counts the allowance from the budget's spec and the pods where no disruption controller
    # has counted it, and takes the smaller of the two counts where one has.
    layout = bound_nodes(plane, NS)
    plane.apply(pod_manifest("urgent", namespace=NS, cpu="4", priority_class="high", extra_spec=selector))

    node = eventually(lambda: bound_nodes(plane, NS).get("urgent"), what="the preemptor bound", timeout=90)
    remaining = bound_nodes(plane, NS)
    gone = {n for n in ("protected-a", "protected-b", "plain-a", "plain-b") if n not in remaining}
    # The victims were the pods on the node the preemptor took, and no budget-protected pod was
    # taken while a node without any existed.
    assert gone == {
        n
        for n, where in layout.items()
        if where == node and n in ("protected-a", "protected-b", "plain-a", "plain-b")
    }
    protected_nodes = {layout["protected-a"], layout["protected-b"]}
    if protected_nodes != {"pre-1", "pre-2"}:
        assert not gone & {"protected-a", "protected-b"}


def test_a_preemptor_is_nominated_and_waits_until_its_victims_are_gone(
    plane: ControlPlane, allot: AllotProcess
) -> None:
    create_node(plane, "nom-1", cpu="4", labels={"test": "outcomes-nominate"})
    selector = {"nodeSelector": {"test": "outcomes-nominate"}}
    plane.apply(priority_class("low", 1))
    plane.apply(priority_class("high", 100))
    # A victim with a grace period: without a kubelet it stays Terminating until force-deleted.
    slow = json.loads(
        pod_manifest("slow-victim", namespace=NS, cpu="4", priority_class="low", extra_spec=selector)
    )
    slow["spec"]["terminationGracePeriodSeconds"] = 300
    plane.apply(json.dumps(slow))
    eventually(lambda: bound_nodes(plane, NS).get("slow-victim"), what="victim bound")
    plane.apply(pod_manifest("boss", namespace=NS, cpu="4", priority_class="high", extra_spec=selector))

    victim = eventually(
        lambda: (p := pods(plane, NS)["slow-victim"])["metadata"].get("deletionTimestamp") and p,
        what="victim deleted",
    )
    disruption = _condition(victim, "DisruptionTarget")
    assert disruption is not None and disruption["reason"] == "PreemptionByScheduler"
    boss = eventually(lambda: pods(plane, NS)["boss"]["status"].get("nominatedNodeName"), what="nomination")
    assert boss == "nom-1"
    assert "boss" not in bound_nodes(plane, NS)  # not while the victim still runs
    # As kube-scheduler: meanwhile the preemptor says why it did not fit, without a post-filter
    # account (preemption answered it), in its condition and a FailedScheduling event.
    told = eventually(lambda: _condition(pods(plane, NS)["boss"], "PodScheduled"), what="boss's condition")
    assert told["status"] == "False" and told["reason"] == "Unschedulable"
    assert told["message"].startswith("0/") and "Insufficient cpu" in told["message"]
    assert "preemption" not in told["message"] and "claims" not in told["message"]
    notes = eventually(lambda: [e["note"] for e in _events(plane, "boss") if e["reason"] == "FailedScheduling"],
                       what="FailedScheduling event")  # fmt: skip
    assert notes == [told["message"]]
    plane.kubectl("delete", "pod", "slow-victim", "-n", NS, "--force", "--grace-period=0")
    assert eventually(lambda: bound_nodes(plane, NS).get("boss"), what="preemptor bound") == "nom-1"


def test_a_claim_deleted_under_a_waiting_pod_makes_it_wait_for_the_claim_and_a_new_one_is_used(
    plane: ControlPlane, allot: AllotProcess
) -> None:
    create_node(plane, "claimgone-1", cpu="8", labels={"test": "outcomes-claim-gone"})
    plane.apply(gpu_slice("claimgone-1", 1))
    plane.apply(gpu_class("claimgone-gpu"))
    plane.apply(gpu_class("claimgone-none", driver="none.example.com"))
    selector = {"nodeSelector": {"test": "outcomes-claim-gone"}}
    # The claim asks for a device no node has: the pod waits, tried and told why.
    plane.apply(named_claim("doomed", namespace=NS, device_class="claimgone-none"))
    plane.apply(pod_manifest("orphaned", namespace=NS, claim="doomed", extra_spec=selector))
    condition = eventually(
        lambda: _condition(pods(plane, NS).get("orphaned", {}), "PodScheduled"), what="PodScheduled"
    )
    assert "cannot allocate all claims" in condition["message"]
    # Deleted while the pod waits: the pod names a claim that is gone, and allot keeps scheduling.
    plane.kubectl("delete", "resourceclaim", "doomed", "-n", NS)
    # A new node with a device of the class the deleted claim asked for wakes the pod: it is tried
    # without its claim.
    create_node(plane, "claimgone-2", cpu="8", labels={"test": "outcomes-claim-gone"})
    plane.apply(gpu_slice("claimgone-2", 1, driver="none.example.com"))
    plane.apply(pod_manifest("after-delete", namespace=NS, extra_spec=selector))
    eventually(lambda: bound_nodes(plane, NS).get("after-delete"), what="a later pod bound")
    assert allot.alive(), allot.output()[-3000:]
    assert "orphaned" not in bound_nodes(plane, NS)
    # A claim of that name made again, one the node can serve, is the one the pod gets.
    plane.apply(named_claim("doomed", namespace=NS, device_class="claimgone-gpu"))
    node = eventually(lambda: bound_nodes(plane, NS).get("orphaned"), what="pod bound")
    claim = plane.get("resourceclaims", namespace=NS)["items"]
    doomed = next(c for c in claim if c["metadata"]["name"] == "doomed")
    results = doomed["status"]["allocation"]["devices"]["results"]
    assert [(r["pool"], r["device"]) for r in results] == [(node, "gpu-0")]
    assert allot.alive(), allot.output()[-3000:]
    assert "internal error" not in allot.output(), allot.output()[-3000:]
    plane.kubectl("delete", "pod", "orphaned", "after-delete", "-n", NS, "--grace-period=0", "--force")


def test_a_pod_on_a_cluster_without_nodes_says_so_and_is_bound_once_a_node_comes(
    fresh_control_plane: ControlPlane,
) -> None:
    # kube-scheduler v1.36 on the same control plane writes this message, and binds the pod
    # about a second after a node is added (it tries a pod no plugin rejected on any event).
    plane = fresh_control_plane
    plane.start_controller_manager()
    with AllotProcess(plane) as allot:
        plane.apply(pod_manifest("lonely"))
        condition = eventually(
            lambda: _condition(pods(plane).get("lonely", {}), "PodScheduled"), what="PodScheduled"
        )
        assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
        assert condition["message"] == "no nodes available to schedule pods"
        create_node(plane, "first-node")
        assert eventually(lambda: bound_nodes(plane).get("lonely"), timeout=30) == "first-node"
        assert "internal error" not in allot.output()

"""Device-plugin style requests (`nvidia.com/gpu: 2`) served by DRA through DeviceClass.extendedResourceName."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from allot.cluster.claims import EXTENDED_CLAIM_ANNOTATION
from allot.cluster.invariants import check
from allot.cluster.state import ClusterState
from allot.model.core import Pod
from allot.model.resource import ResourceClaim
from allot.scheduling.extended_resources import resource_classes
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from builders import device_class, gpu_slice, node, pod


def _two_gpu_node(*, pods: list[Pod], claims: Sequence[ResourceClaim] = ()) -> ClusterState:
    """One node with two DRA GPUs and no device plugin; a DeviceClass serves nvidia.com/gpu."""
    return ClusterState(
        nodes=[node("dra-node")],
        slices=[gpu_slice("dra-node", 2)],
        classes=[device_class(extended_resource="nvidia.com/gpu")],
        claims=claims,
        pods=pods,
    )


def test_dra_node_serves_extended_resource_with_a_generated_claim() -> None:
    state = _two_gpu_node(pods=[pod("p", extended={"nvidia.com/gpu": "2"})])
    outcome = Scheduler(state).schedule("default/p")
    assert isinstance(outcome, Placement) and outcome.node == "dra-node"
    info = state.pods["default/p"]
    ((entry, key),) = info.claims
    claim = state.claims[key]
    assert entry == "extended-resources"
    assert claim.metadata.annotations[EXTENDED_CLAIM_ANNOTATION] == "true"
    assert [r.name for r in claim.spec.devices.requests] == ["container-0-request-0"]
    assert claim.status.allocation is not None
    assert sorted(r.device for r in claim.status.allocation.devices.results) == ["gpu-0", "gpu-1"]
    # The GPUs come from the claim, not from node allocatable.
    assert "nvidia.com/gpu" not in state.nodes.requested or state.nodes.requested["nvidia.com/gpu"].sum() == 0
    assert check(state) == []


def test_device_plugin_node_serves_it_the_classic_way() -> None:
    state = ClusterState(
        nodes=[node("plugin-node", extended={"nvidia.com/gpu": "4"})],
        classes=[device_class(extended_resource="nvidia.com/gpu")],
        pods=[pod("p", extended={"nvidia.com/gpu": "2"})],
    )
    outcome = Scheduler(state).schedule("default/p")
    assert isinstance(outcome, Placement)
    assert state.pods["default/p"].claims == ()
    assert int(state.nodes.requested["nvidia.com/gpu"][0]) == 2
    assert check(state) == []


def test_too_few_devices_is_unschedulable() -> None:
    state = ClusterState(
        nodes=[node("dra-node")],
        slices=[gpu_slice("dra-node", 1)],
        classes=[device_class(extended_resource="nvidia.com/gpu")],
        pods=[pod("p", extended={"nvidia.com/gpu": "2"})],
    )
    outcome = Scheduler(state).place("default/p")
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == "0/1 nodes are available: 1 cannot allocate all claims."


def test_implicit_class_resource_name_and_newest_class_wins() -> None:
    old = device_class("gpu-old", extended_resource="example.com/gpu")
    new = device_class("gpu-new", extended_resource="example.com/gpu")
    old = replace(old, metadata=replace(old.metadata, creation_timestamp="2026-01-01T00:00:00Z"))
    new = replace(new, metadata=replace(new.metadata, creation_timestamp="2026-02-01T00:00:00Z"))
    mapping = resource_classes([old, new])
    assert mapping["example.com/gpu"] == "gpu-new"
    assert mapping["deviceclass.resource.kubernetes.io/gpu-old"] == "gpu-old"


def test_a_bound_pods_status_names_its_extended_claim_and_a_state_read_back_holds_it() -> None:
    # What the scheduler writes before binding (kube-scheduler's status.extendedResourceClaimStatus),
    # and a state built from the objects afterwards (a dump, a restart) linking the claim to its pod:
    # the GPUs are the claim's, not node usage, and they free up when the pod leaves.
    first = _two_gpu_node(pods=[pod("p", extended={"nvidia.com/gpu": "2"})])
    assert isinstance(Scheduler(first).schedule("default/p"), Placement)
    info = first.pods["default/p"]
    ((_, key),) = info.claims
    status = info.pod.status.extended_resource_claim_status
    assert status is not None and f"default/{status.resource_claim_name}" == key
    assert [(m.container_name, m.resource_name, m.request_name) for m in status.request_mappings] == [
        (info.pod.spec.containers[0].name, "nvidia.com/gpu", "container-0-request-0")
    ]
    bound = replace(info.pod, spec=replace(info.pod.spec, node_name="dra-node"))
    again = _two_gpu_node(pods=[bound], claims=[first.claims[key]])
    read = again.pods["default/p"]
    assert read.bound and read.claims == (("extended-resources", key),)
    assert read.served_by_claims == frozenset({"nvidia.com/gpu"})
    assert check(again) == []
    again.unbind("default/p")
    assert again.claims[key].status.allocation is None

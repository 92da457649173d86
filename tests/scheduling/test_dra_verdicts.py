"""The DRA filter's verdicts per node layout: identical nodes in the same use share one allocator run.

Nodes whose devices take several allocations (consumable capacity) share a
verdict only while their shares consume the same capacity; a node that also
sees a partitioned GPU of another node, none of whose devices it can use,
shares verdicts as any other node does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import numpy as np
import yaml

from allot.cluster.state import ClusterState
from allot.dra import Allocator
from allot.model.loader import load_text
from allot.model.resource import AllocationResult
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from allot.scheduling.topology.choice import AlignedChoice

DRIVER = "gpu.example.com"


def _docs(nodes: int, *, partitioned_elsewhere: bool = False) -> list[dict[str, object]]:
    docs: list[dict[str, object]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    ]
    for i in range(nodes):
        name = f"node-{i}"
        allocatable = {"cpu": "64", "memory": "256Gi", "pods": "110"}
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": allocatable, "capacity": allocatable},
            }
        )
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [
                        {
                            "name": f"gpu-{g}",
                            "allowMultipleAllocations": True,
                            "capacity": {"memory": {"value": "80Gi"}},
                        }
                        for g in range(2)
                    ],
                },
            }
        )
    if partitioned_elsewhere:
        # node-0's GPU partitions: a counter set in one slice, the partitions in another.
        counters = {"sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}]}
        partitions = {
            "devices": [
                {
                    "name": f"mig-{m}",
                    "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}],
                }
                for m in range(2)
            ]
        }
        docs += [_mig_slice("mig-counters", counters), _mig_slice("mig-devices", partitions)]
    return docs


def _mig_slice(name: str, content: dict[str, object]) -> dict[str, object]:
    """One of the two slices of node-0's partitioned GPU (pool `mig`)."""
    spec = {
        "driver": DRIVER,
        "nodeName": "node-0",
        "pool": {"name": "mig", "generation": 1, "resourceSliceCount": 2},
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": spec | content,
    }


def _pod(name: str, memory: str) -> list[dict[str, object]]:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu",
                            "capacity": {"requests": {"memory": memory}},
                        },
                    }
                ]
            }
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
        },
    }
    return [claim, pod]


def _state(nodes: int, pods: list[tuple[str, str]], *, partitioned_elsewhere: bool = False) -> ClusterState:
    docs = _docs(nodes, partitioned_elsewhere=partitioned_elsewhere)
    for name, memory in pods:
        docs.extend(_pod(name, memory))
    return ClusterState.from_manifests(load_text(yaml.safe_dump_all(docs)))


@contextmanager
def _allocator_runs() -> Iterator[list[str]]:
    """The node of every allocator run while the block runs."""
    runs: list[str] = []
    real = Allocator.allocate

    def counted(self: Allocator, node: object, *args: object, **kwargs: object) -> object:
        runs.append(node.metadata.name)  # type: ignore[attr-defined]
        return real(self, node, *args, **kwargs)  # type: ignore[arg-type]

    with mock.patch.object(Allocator, "allocate", counted):
        yield runs


def test_nodes_with_shared_devices_in_the_same_use_share_one_verdict() -> None:
    state = _state(4, [("a", "30Gi")])
    scheduler = Scheduler(state, {"default-scheduler": Profile()})
    with _allocator_runs() as runs:
        fits = [scheduler.fits_on("default/a", i) for i in range(4)]
    assert fits == [True] * 4
    # One run decides all four identical, unused nodes.
    assert runs == ["node-0"]


def test_a_node_whose_shares_consume_capacity_is_decided_on_its_own() -> None:
    # node-0's two GPUs hold 70Gi each; node-1's are unused: a 20Gi share fits only node-1,
    # though both nodes have identical hardware and neither GPU is held whole.
    state = _state(2, [("a", "70Gi"), ("b", "70Gi"), ("c", "20Gi")])
    scheduler = Scheduler(state, {"default-scheduler": Profile()})
    assert scheduler.bind_on("default/a", 0) and scheduler.bind_on("default/b", 0)
    with _allocator_runs() as runs:
        fits = [scheduler.fits_on("default/c", i) for i in range(2)]
    assert fits == [False, True]
    assert runs == ["node-0", "node-1"]
    # The verdict for node-0 in this use is kept: asked again, no allocator run, the same answer.
    with _allocator_runs() as runs:
        assert not scheduler.fits_on("default/c", 0)
    assert runs == []
    placed = scheduler.place("default/c")
    assert isinstance(placed, Placement) and placed.node == "node-1"


def test_a_freed_share_makes_its_node_fit_again() -> None:
    state = _state(2, [("a", "70Gi"), ("b", "70Gi"), ("c", "20Gi")])
    scheduler = Scheduler(state, {"default-scheduler": Profile()})
    only_node_0 = np.zeros(state.nodes.size, dtype=np.bool_)
    only_node_0[0] = True
    assert scheduler.bind_on("default/a", 0) and scheduler.bind_on("default/b", 0)
    assert isinstance(scheduler.place("default/c", allowed=only_node_0), Unschedulable)
    state.unbind("default/b")
    placed = scheduler.place("default/c", allowed=only_node_0)
    assert isinstance(placed, Placement) and placed.node == "node-0"


def test_a_partitioned_gpu_elsewhere_does_not_stop_sharing_verdicts() -> None:
    state = _state(4, [("a", "30Gi")], partitioned_elsewhere=True)
    scheduler = Scheduler(state, {"default-scheduler": Profile()})
    with _allocator_runs() as runs:
        fits = [scheduler.fits_on("default/a", i) for i in range(4)]
    assert fits == [True] * 4
    # node-0 holds the partitions (a problem of its own); nodes 1-3 share one verdict.
    assert runs == ["node-0", "node-1"]


def _allocations(state: ClusterState, pod_key: str) -> list[AllocationResult]:
    allocations = [state.claims[key].status.allocation for _, key in state.pods[pod_key].claims]
    assert all(a is not None for a in allocations)
    return [a for a in allocations if a is not None]


def test_the_devices_chosen_on_a_node_are_chosen_again_for_the_same_problem_there() -> None:
    state = _state(2, [("a", "30Gi"), ("b", "30Gi")])
    scheduler = Scheduler(state, {"default-scheduler": Profile()})
    fresh = _state(2, [("a", "30Gi"), ("b", "30Gi")])
    with mock.patch.object(
        AlignedChoice, "__call__", autospec=True, side_effect=AlignedChoice.__call__
    ) as chooser:
        assert scheduler.bind_on("default/a", 1)
        first = _allocations(state, "default/a")
        state.unbind("default/a")
        assert scheduler.bind_on("default/b", 1)
    # The chooser ran for a only; b, posing the same problem on the same node, got its answer...
    assert chooser.call_count == 1
    given = _allocations(state, "default/b")
    # ... with its shares named for b's claim: exactly what a chooser run for b gives.
    assert Scheduler(fresh, {"default-scheduler": Profile()}).bind_on("default/b", 1)
    assert given == _allocations(fresh, "default/b")
    shares = [r.share_id for r in given[0].devices.results]
    assert shares and None not in shares
    assert shares != [r.share_id for r in first[0].devices.results]
    assert [r.device for r in given[0].devices.results] == [r.device for r in first[0].devices.results]


def test_a_node_in_another_use_gets_its_own_choice() -> None:
    state = _state(2, [("a", "30Gi"), ("b", "30Gi"), ("c", "60Gi")])
    scheduler = Scheduler(state, {"default-scheduler": Profile()})
    with mock.patch.object(
        AlignedChoice, "__call__", autospec=True, side_effect=AlignedChoice.__call__
    ) as chooser:
        assert scheduler.bind_on("default/c", 1)
        assert scheduler.bind_on("default/a", 1)
        assert scheduler.bind_on("default/b", 1)
    # Each pod found node-1 in another use (the shares before it consume capacity): three choices,
    # each made on the node as it then was, so no GPU holds more than its 80Gi.
    assert chooser.call_count == 3
    held: dict[str, int] = {}
    for pod in ("a", "b", "c"):
        for result in _allocations(state, f"default/{pod}")[0].devices.results:
            memory = result.consumed_capacity["memory"] if result.consumed_capacity else None
            assert memory is not None
            held[result.device] = held.get(result.device, 0) + memory.nano
    assert all(total <= 80 * 2**30 * 10**9 for total in held.values())

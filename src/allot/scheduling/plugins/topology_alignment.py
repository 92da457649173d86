"""TopologyAlignment: prefer nodes where the pod's devices can be aligned without breaking pairs.

A score plugin. For each feasible node it asks the alignment planner (the
same one DynamicResources' `alignment: preferred` chooser uses on the
chosen node) for its best proposal and scores

    100 * (0.8 * value / 3 + 0.2 / (1 + broken pairs))

where `value` is the proposal's alignment value (level + score, 0..3; 3
when the pod asks for one kind of device only, see
`alignment.alignment_value`) and `broken pairs` the free aligned GPU/NIC
pairs it would take apart. So a GPU+NIC pod goes where a GPU and a NIC
share a free PCIe root, and a GPU-only pod goes where a GPU whose NIC is
already taken is free. Pods without unallocated claims score 0 everywhere.

Results are cached per (claims, node hardware, free devices): nodes of one
model in the same state are planned once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import msgspec
import numpy as np

from allot.cluster.state import ClusterState
from allot.dra import Allocator, DeviceId
from allot.model.resource import AllocationResult, ResourceClaim
from allot.scheduling.framework import Cycle, FloatArray, IntArray
from allot.scheduling.topology.places import place_of
from allot.scheduling.topology.planner import plan
from allot.scheduling.topology.view import ViewBuilder, try_view

NAME = "TopologyAlignment"
ALIGNMENT_WEIGHT = 0.8
_ENCODER = msgspec.msgpack.Encoder(enc_hook=str)


def node_score(value: float, broken: int) -> float:
    """From a proposal's alignment value (0..3, see `alignment_value`) and the pairs it breaks."""
    return 100.0 * (ALIGNMENT_WEIGHT * value / 3.0 + (1 - ALIGNMENT_WEIGHT) / (1 + broken))


@dataclass(slots=True)
class _Node:
    """A node's hardware fingerprint, its exclusive devices, and which of them are in use (None: stale)."""

    hardware: bytes
    devices: list[DeviceId]
    used: bytes | None = None


class TopologyAlignment:
    name = NAME

    def __init__(self) -> None:
        self._state: ClusterState | None = None
        self._builder: ViewBuilder | None = None
        self._nodes: dict[int, _Node] = {}
        self._node_of: dict[DeviceId, int] = {}
        self._scores: dict[tuple[bytes, bytes, bytes], float] = {}
        self._aware = False

    def _builder_for(self, state: ClusterState) -> ViewBuilder:
        if (
            self._builder is None
            or self._state is not state
            or self._builder.allocator.slices is not state.slices
        ):
            if self._state is not None and self._on_allocation in self._state.allocation_listeners:
                self._state.allocation_listeners.remove(self._on_allocation)
            self._state = state
            self._builder = ViewBuilder(Allocator(state.classes, state.slices, features=state.features))
            self._nodes = {}
            self._node_of = {}
            self._scores = {}
            # A cluster whose devices publish no topology gets no scores (and pays nothing).
            self._aware = any(
                place_of(s.spec.driver, d).known for s in state.slices.slices for d in s.spec.devices
            )
            # Device use changes (rollbacks included) mark the node's use as stale.
            state.allocation_listeners.append(self._on_allocation)
        return self._builder

    def _on_allocation(self, allocation: AllocationResult, sign: int) -> None:
        for result in allocation.devices.results:
            index = self._node_of.get(DeviceId(result.driver, result.pool, result.device))
            if index is not None:
                self._nodes[index].used = None

    def _node(self, builder: ViewBuilder, state: ClusterState, index: int) -> _Node:
        node = self._nodes.get(index)
        if node is None:
            pools = builder.allocator.pools(state.nodes.infos[index].node)
            # Per-machine identifiers (GPU UUIDs, MACs) make every node unique; selectors rarely read
            # them, so they are left out: nodes of one model share plans.
            stripped = [
                (
                    d.info.id.driver,
                    d.shared,
                    {k: v for k, v in d.info.device.attributes.items() if not _unique(k)},
                    d.info.device.capacity,
                )
                for d in pools.devices
            ]
            digest = hashlib.blake2b(_ENCODER.encode(stripped), digest_size=16).digest()
            # Shared devices always count as free to the planner: only exclusive ones matter.
            devices = [d.info.id for d in pools.devices if not d.shared]
            node = self._nodes[index] = _Node(digest, devices)
            for device_id in devices:
                self._node_of[device_id] = index
        if node.used is None:
            in_use = state.allocated.in_use
            node.used = bytes(in_use(device_id) for device_id in node.devices)
        return node

    def score(self, cycle: Cycle, nodes: IntArray) -> FloatArray:
        state = cycle.state
        claims = _unallocated(cycle)
        result = np.zeros(nodes.size, dtype=np.float64)
        if not claims:
            return result
        builder = self._builder_for(state)
        if not self._aware:
            return result
        signature = _ENCODER.encode([claim.spec for claim in claims])
        for position, raw in enumerate(nodes):
            index = int(raw)
            node = self._node(builder, state, index)
            assert node.used is not None
            key = (signature, node.hardware, node.used)
            value = self._scores.get(key)
            if value is None:
                view = try_view(builder, state.nodes.infos[index].node, claims, state.allocated)
                proposals = plan(view) if view is not None else []
                value = node_score(proposals[0].value, proposals[0].broken) if proposals else 0.0
                if len(self._scores) > 100_000:
                    self._scores.clear()
                self._scores[key] = value
            result[position] = value
        return result


def _unique(attribute: str) -> bool:
    return attribute.rpartition("/")[2] in ("uuid", "mac", "parentUUID")


def _unallocated(cycle: Cycle) -> list[ResourceClaim]:
    state = cycle.state
    seen: set[str] = set()
    claims: list[ResourceClaim] = []
    for _, key in cycle.pod.claims:
        claim = state.claims.get(key)
        if claim is None or key in seen or claim.status.allocation is not None:
            continue
        seen.add(key)
        claims.append(claim)
    return claims

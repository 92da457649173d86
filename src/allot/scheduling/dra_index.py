"""Free-device counts per request shape and node, so most DRA filtering needs no allocator run.

A request shape is a device class plus the request's own selectors. For
each shape the index knows, per node, how many devices it can select and
how many of those no claim holds exclusively; the counts follow every
allocation change through the cluster state's listeners (rollbacks
included). A node with fewer free devices than the pod asks for cannot
fit it, whatever the allocator would try, so such nodes are filtered in
one array comparison.

For a shape whose devices are all plain (node-local, not shared, no
counters, no blocking taints, no binding conditions) and a pod whose claims
ask only for counts of one shape, "enough free devices" is also
sufficient: then the allocator runs only on the chosen node. Any doubt
(CEL errors, network-attached devices) makes a shape unindexable, and the
allocator decides as usual.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import msgspec
import numpy as np
from msgspec.structs import replace

from allot.cluster.state import ClusterState
from allot.dra import Allocator, DeviceId
from allot.dra.selection import candidates
from allot.model.resource import AllocationResult
from allot.scheduling.framework import IntArray

ShapeKey = tuple[str, tuple[str, ...]]
_ENCODER = msgspec.msgpack.Encoder(enc_hook=str)


def _signature(parts: list[object]) -> bytes | None:
    """A digest of the parts; None (no sharing of verdicts) if one holds an integer msgpack cannot."""
    try:
        encoded = _ENCODER.encode(parts)
    except OverflowError:
        return None
    return hashlib.blake2b(encoded, digest_size=16).digest()


@dataclass(slots=True)
class NodeLayout:
    """A node's devices by position, and a signature shared by nodes with identical hardware.

    Two nodes with the same signature and the same use (`DeviceIndex.usage`:
    the used positions, and for devices that take several allocations what
    their shares consume) give the allocator the same problem (names aside),
    so its verdict can be reused. `signature` is None when that does not
    hold: pools reaching beyond the node, or counters this node's devices
    share with devices elsewhere.
    """

    signature: bytes | None
    positions: dict[DeviceId, int] = field(default_factory=dict)
    used: int = 0
    # Devices that take several allocations: their use is more than a bit (see `DeviceIndex.usage`).
    shared: tuple[DeviceId, ...] = ()
    _usage_token: tuple[int, int] = (0, -1)
    _usage: object = None


@dataclass(slots=True)
class ShapeIndex:
    """One request shape's selectable devices, per node."""

    free: IntArray
    # Whether counting is enough (no shared devices, counters, taints ...) on every node.
    exact: bool
    node_of: dict[DeviceId, int] = field(default_factory=dict)


class DeviceIndex:
    """Shapes registered on first use; counts kept current by allocation listeners."""

    def __init__(self, state: ClusterState, allocator: Allocator) -> None:
        self.state = state
        self.allocator = allocator
        self._shapes: dict[ShapeKey, ShapeIndex | None] = {}
        self._by_device: dict[DeviceId, list[ShapeIndex]] = {}
        self._layouts: dict[int, NodeLayout] = {}
        self._layout_of: dict[DeviceId, NodeLayout] = {}
        state.allocation_listeners.append(self._on_allocation)

    def detach(self) -> None:
        if self._on_allocation in self.state.allocation_listeners:
            self.state.allocation_listeners.remove(self._on_allocation)

    def shape(self, class_name: str, selectors: tuple[str, ...]) -> ShapeIndex | None:
        key = (class_name, selectors)
        if key not in self._shapes:
            self._shapes[key] = self._build(class_name, selectors)
        return self._shapes[key]

    def _build(self, class_name: str, selectors: tuple[str, ...]) -> ShapeIndex | None:
        device_class = self.state.classes.get(class_name)
        if device_class is None:
            return None
        class_selectors = tuple(s.cel.expression for s in device_class.spec.selectors if s.cel is not None)
        if len(class_selectors) != len(device_class.spec.selectors):
            return None
        table = self.state.nodes
        free = np.zeros(table.size, dtype=np.int64)
        index = ShapeIndex(free=free, exact=True)
        allocated = self.state.allocated
        for info in table.infos:
            pools = self.allocator.pools(info.node)
            found = candidates(pools, self.allocator.selectors, class_selectors, selectors)
            if found.errors:
                return None
            for device in found.devices:
                device_info = device.info
                if device_info.slice.spec.node_name != info.name or device_info.per_device:
                    return None  # visible from other nodes too: one count per node would be wrong
                if (
                    device.shared
                    or device.counters
                    or device.taints
                    or device.blocked
                    or device_info.binding_conditions
                ):
                    index.exact = False
                device_id = device_info.id
                index.node_of[device_id] = info.index
                if device.shared or device_id not in allocated.exclusive:
                    free[info.index] += 1
        for device_id in index.node_of:
            self._by_device.setdefault(device_id, []).append(index)
        return index

    def layout(self, node_index: int) -> NodeLayout:
        layout = self._layouts.get(node_index)
        if layout is None:
            layout = self._layouts[node_index] = self._build_layout(node_index)
        return layout

    def _build_layout(self, node_index: int) -> NodeLayout:
        info = self.state.nodes.infos[node_index]
        pools = self.allocator.pools(info.node)
        layout = NodeLayout(signature=None)
        parts: list[object] = []
        cacheable = True
        shared: list[DeviceId] = []
        for pool in pools.pools:
            parts.append((pool.driver, pool.incomplete, pool.invalid, len(pool.devices)))
            for device in pool.devices:
                device_info = device.info
                if device_info.slice.spec.node_name != info.name or device_info.per_device:
                    cacheable = False
                if device.shared:
                    shared.append(device_info.id)
                layout.positions[device_info.id] = len(layout.positions)
                parts.append((replace(device_info.device, name=""), device.node_ok))
            if pool.counters is not None:
                # Decimal text: totals are exact nano-unit integers, far past what msgpack holds.
                parts.append(tuple(str(total) for total in pool.counters.layout.totals))
                # A pool none of whose devices this node sees (a partitioned GPU of another
                # node) changes nothing here; one whose counters this node's devices share
                # with devices elsewhere does.
                if pool.devices and any(d not in layout.positions for d, _ in pool.counters.devices):
                    cacheable = False
        if cacheable:
            layout.signature = _signature(parts)
        layout.shared = tuple(shared)
        allocated = self.state.allocated
        for device_id, position in layout.positions.items():
            self._layout_of[device_id] = layout
            if device_id in allocated.exclusive:
                layout.used |= 1 << position
        return layout

    def usage(self, layout: NodeLayout) -> object:
        """What of the node's devices is in use, as far as the allocator can tell: with the layout's
        signature, equal usages pose the allocator the same problem. A shared device counts by
        whether it is held whole, whether it has shares and the capacity its shares consume."""
        if not layout.shared:
            return layout.used
        allocated = self.state.allocated
        token = (allocated.serial, allocated.version)
        if layout._usage_token != token:
            exclusive, shares, capacity = allocated.exclusive, allocated.shared, allocated.capacity
            layout._usage = (
                layout.used,
                tuple(
                    (
                        device in exclusive,
                        device in shares,
                        tuple(sorted(capacity[device].items())) if device in capacity else (),
                    )
                    for device in layout.shared
                ),
            )
            layout._usage_token = token
        return layout._usage

    def _on_allocation(self, allocation: AllocationResult, sign: int) -> None:
        for result in allocation.devices.results:
            if result.share_id or result.admin_access:
                continue
            device_id = DeviceId(result.driver, result.pool, result.device)
            layout = self._layout_of.get(device_id)
            if layout is not None:
                bit = 1 << layout.positions[device_id]
                layout.used = layout.used | bit if sign > 0 else layout.used & ~bit
            shapes = self._by_device.get(device_id)
            if not shapes:
                continue
            for shape in shapes:
                shape.free[shape.node_of[device_id]] -= sign

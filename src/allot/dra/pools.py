"""Resource pools as one node sees them, gathered once per node and cached.

`SliceIndex` holds the cluster's ResourceSlices (with DeviceTaintRules
applied) indexed for per-node gathering: node-local slices by node name,
everything else (allNodes, node selectors, per-device selection, counter
slices) in one list, and every slice by pool for the completeness checks.
`SliceIndex.gather(node, features)` returns the node's `NodePools`,
computed with upstream 1.35's rules and cached per node name and feature
set until the node's labels change:

1. A slice is relevant if it holds counter sets (always), or its nodeName /
   allNodes / nodeSelector matches the node, or (per-device node selection)
   any of its devices matches. With PartitionableDevices off, slices using
   counters or per-device selection are skipped. Unknown node selection ->
   skipped.
2. Per pool only the highest generation among relevant slices is kept. If
   the slices at hand are fewer than `resourceSliceCount`, every slice of the
   pool is scanned: a newer generation elsewhere makes the pool obsolete
   (dropped); too few slices of this generation make it *incomplete* (kept,
   flagged, no devices used).
3. A complete pool is *invalid* (kept, flagged, no devices used) if device
   names repeat among its device slices on this node, a counter set name
   repeats, or any device of the pool (on this node or not) consumes a
   counter set or counter that does not exist.

Pools are ordered by (driver, pool name) and slices by name, as Kubernetes
1.36 does, so the first-fit search is deterministic; in the experimental
variant (binding conditions or consumable capacity enabled) pools holding
devices with binding conditions come last, as upstream prefers plain devices.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from allot.dra.counters import Consumption, CounterLayout, PoolCounters
from allot.dra.devices import DeviceInfo
from allot.dra.errors import AllocationError
from allot.dra.features import Features
from allot.dra.ids import DeviceId
from allot.dra.nodes import node_matches
from allot.dra.taint_rules import apply_taint_rules
from allot.dra.tolerations import BLOCKING_EFFECTS
from allot.model.core import Node
from allot.model.resource import CounterSet, DeviceTaint, DeviceTaintRule, ResourceSlice

PoolKey = tuple[str, str]


class NodeDevice:
    """A device as one node's allocation sees it: its pool, counter use and feature-dependent flags."""

    __slots__ = ("blocked", "counters", "info", "node_ok", "pool", "shared", "taints")

    def __init__(
        self, info: DeviceInfo, pool: Pool, counters: Consumption, node_ok: bool, features: Features
    ) -> None:
        self.info = info
        self.pool = pool
        self.counters = counters
        # Per-device node selection; upstream applies it after the selectors.
        self.node_ok = node_ok
        self.shared = features.consumable_capacity and info.allow_multiple
        self.taints: tuple[DeviceTaint, ...] = info.blocking_taints if features.device_taints else ()
        # A device that consumes counters is unusable without PartitionableDevices.
        self.blocked = info.consumes and not features.partitionable_devices

    def __repr__(self) -> str:
        return f"NodeDevice({self.info.id})"


class Pool:
    """One pool on one node: usable devices in order, or why it cannot be used."""

    __slots__ = (
        "counters",
        "devices",
        "driver",
        "generation",
        "has_binding_conditions",
        "incomplete",
        "invalid",
        "key",
        "name",
        "unusable_devices",
    )

    def __init__(self, key: PoolKey, generation: int) -> None:
        self.key = key
        self.driver, self.name = key
        self.generation = generation
        self.incomplete = False
        self.invalid: str | None = None
        self.devices: list[NodeDevice] = []
        self.counters: PoolCounters | None = None
        self.has_binding_conditions = False
        # Devices of an incomplete or invalid pool that target the node (diagnostics only).
        self.unusable_devices = 0

    @property
    def usable(self) -> bool:
        return not self.incomplete and self.invalid is None

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"

    def __repr__(self) -> str:
        state = "incomplete" if self.incomplete else f"invalid: {self.invalid}" if self.invalid else "ok"
        return f"Pool({self}, {state}, {len(self.devices)} devices)"


class NodePools:
    """Everything one node can allocate from, plus per-node caches of derived data."""

    __slots__ = ("candidates", "devices", "features", "labels", "node", "node_name", "pools")

    def __init__(self, node: Node | None, features: Features, pools: list[Pool]) -> None:
        self.node = node
        self.node_name = node.metadata.name if node is not None else None
        self.labels = dict(node.metadata.labels) if node is not None else {}
        self.features = features
        self.pools = pools
        self.devices: list[NodeDevice] = [d for p in pools if p.usable for d in p.devices]
        # Selector results per request shape, filled by allot.dra.selection.
        self.candidates: dict[Any, Any] = {}

    @property
    def any_invalid(self) -> bool:
        return any(p.invalid is not None for p in self.pools)


def _has_blocking(taints: Sequence[DeviceTaint]) -> bool:
    return any(t.effect in BLOCKING_EFFECTS for t in taints)


class SliceIndex:
    """ResourceSlices (+ DeviceTaintRules) indexed for per-node pool gathering; immutable."""

    def __init__(self, slices: Iterable[ResourceSlice], taint_rules: Iterable[DeviceTaintRule] = ()) -> None:
        self.slices: list[ResourceSlice] = apply_taint_rules(list(slices), taint_rules)
        self._infos: list[list[DeviceInfo] | None] = [None] * len(self.slices)
        self._by_pool: dict[PoolKey, list[int]] = {}
        self._local: dict[str, list[int]] = {}
        self._global: list[int] = []
        for index, slice_ in enumerate(self.slices):
            spec = slice_.spec
            self._by_pool.setdefault((spec.driver, spec.pool.name), []).append(index)
            if spec.node_name and not spec.shared_counters:
                self._local.setdefault(spec.node_name, []).append(index)
            else:
                self._global.append(index)
        self._cache: dict[tuple[str | None, Features], NodePools] = {}

    def __len__(self) -> int:
        return len(self.slices)

    def infos(self, index: int) -> list[DeviceInfo]:
        """The DeviceInfo objects of one slice (created on first use, then shared)."""
        infos = self._infos[index]
        if infos is None:
            slice_ = self.slices[index]
            infos = self._infos[index] = [DeviceInfo(slice_, d) for d in slice_.spec.devices]
        return infos

    def gather(self, node: Node | None, features: Features) -> NodePools:
        """The pools `node` can allocate from (cached until the node's labels change)."""
        name = node.metadata.name if node is not None else None
        key = (name, features)
        cached = self._cache.get(key)
        if cached is not None and (
            cached.node is node or (node is not None and cached.labels == node.metadata.labels)
        ):
            return cached
        result = NodePools(node, features, self._gather(node, features))
        self._cache[key] = result
        return result

    def pool_keys(self) -> list[PoolKey]:
        return sorted(self._by_pool)

    # -- gathering ------------------------------------------------------------------

    def _relevant(self, index: int, node: Node | None, features: Features) -> bool:
        spec = self.slices[index].spec
        if not features.partitionable_devices and (
            spec.per_device_node_selection is not None or spec.shared_counters
        ):
            return False
        if spec.shared_counters:
            return True
        if spec.node_name or spec.all_nodes or spec.node_selector is not None:
            try:
                return node_matches(node, spec.node_name, spec.all_nodes, spec.node_selector)
            except AllocationError as err:
                raise AllocationError(
                    f"gather pool information: failed to perform node selection for slice "
                    f"{self.slices[index].metadata.name}: {err.message}"
                ) from None
        if spec.per_device_node_selection:
            return any(self._device_on_node(index, d, node) for d in range(len(spec.devices)))
        return False  # some future node selection field: not ours to interpret

    def _device_on_node(self, index: int, device_index: int, node: Node | None) -> bool:
        slice_ = self.slices[index]
        device = slice_.spec.devices[device_index]
        try:
            return node_matches(node, device.node_name, device.all_nodes, device.node_selector)
        except AllocationError as err:
            raise AllocationError(
                f"gather pool information: failed to perform node selection for device {device.name} "
                f"in slice {slice_.metadata.name}: {err.message}"
            ) from None

    def _gather(self, node: Node | None, features: Features) -> list[Pool]:
        name = node.metadata.name if node is not None else None
        indices = self._global if name is None else sorted(self._global + self._local.get(name, []))
        buckets: dict[PoolKey, list[int]] = {}
        for index in indices:
            if not self._relevant(index, node, features):
                continue
            spec = self.slices[index].spec
            key = (spec.driver, spec.pool.name)
            bucket = buckets.get(key)
            if bucket is None:
                buckets[key] = [index]
                continue
            current = self.slices[bucket[0]].spec.pool.generation
            if spec.pool.generation > current:
                buckets[key] = [index]
            elif spec.pool.generation == current:
                bucket.append(index)

        plain: list[Pool] = []
        with_binding: list[Pool] = []
        for key, bucket in buckets.items():
            first = self.slices[bucket[0]].spec.pool
            pool: Pool | None
            if len(bucket) == first.resource_slice_count:
                pool = self._build(key, bucket, None, node, features)
            else:
                same_generation: list[int] = []
                obsolete = False
                for index in self._by_pool[key]:
                    generation = self.slices[index].spec.pool.generation
                    if generation > first.generation:
                        obsolete = True
                        break
                    if generation == first.generation:
                        same_generation.append(index)
                if obsolete:
                    continue  # a newer generation is being published elsewhere
                if len(same_generation) != first.resource_slice_count:
                    pool = Pool(key, first.generation)
                    pool.incomplete = True
                    pool.unusable_devices = sum(len(self.slices[i].spec.devices) for i in bucket)
                else:
                    pool = self._build(key, bucket, same_generation, node, features)
            if features.experimental and pool.has_binding_conditions:
                with_binding.append(pool)
            else:
                plain.append(pool)
        plain.sort(key=lambda p: p.key)
        with_binding.sort(key=lambda p: p.key)
        return plain + with_binding

    def _build(
        self,
        key: PoolKey,
        bucket: list[int],
        all_slices: list[int] | None,
        node: Node | None,
        features: Features,
    ) -> Pool:
        pool = Pool(key, self.slices[bucket[0]].spec.pool.generation)
        ordered = sorted(bucket, key=lambda i: self.slices[i].metadata.name)
        if features.partitionable_devices:
            device_slices = [i for i in ordered if not self.slices[i].spec.shared_counters]
            counter_slices = [i for i in ordered if self.slices[i].spec.shared_counters]
        else:
            device_slices, counter_slices = ordered, []
        pool.unusable_devices = sum(len(self.slices[i].spec.devices) for i in device_slices)
        pool.has_binding_conditions = any(
            d.binding_conditions for i in device_slices for d in self.slices[i].spec.devices
        )

        seen: set[str] = set()
        for index in device_slices:
            for device in self.slices[index].spec.devices:
                if device.name in seen:
                    pool.invalid = f"duplicate device name {device.name}"
                    return pool
                seen.add(device.name)

        layout: CounterLayout | None = None
        counter_devices: list[tuple[DeviceId, Consumption]] = []
        if features.partitionable_devices:
            sets: dict[str, CounterSet] = {}
            for index in counter_slices:
                for counter_set in self.slices[index].spec.shared_counters:
                    if counter_set.name in sets:
                        pool.invalid = f"duplicate counter set name {counter_set.name}"
                        return pool
                    sets[counter_set.name] = counter_set
            others: list[int] = []
            if all_slices is not None and len(all_slices) != len(bucket):
                in_bucket = set(bucket)
                others = [i for i in all_slices if i not in in_bucket]
            for index in [*ordered, *others]:
                for device in self.slices[index].spec.devices:
                    for consumption in device.consumes_counters:
                        consumed_set = sets.get(consumption.counter_set)
                        if consumed_set is None:
                            pool.invalid = f"counter set {consumption.counter_set} not found"
                            return pool
                        for counter in consumption.counters:
                            if counter not in consumed_set.counters:
                                pool.invalid = (
                                    f"counter {counter} not found in counter set {consumed_set.name}"
                                )
                                return pool
            layout = CounterLayout(list(sets.values()))
            for index in [*device_slices, *others]:
                spec = self.slices[index].spec
                for device in spec.devices:
                    if device.consumes_counters:
                        counter_devices.append(
                            (DeviceId(spec.driver, spec.pool.name, device.name), layout.consumption(device))
                        )
            if counter_devices:
                pool.counters = PoolCounters(layout, counter_devices)

        for index in device_slices:
            per_device = bool(self.slices[index].spec.per_device_node_selection)
            for device_index, info in enumerate(self.infos(index)):
                counters = layout.consumption(info.device) if layout is not None and info.consumes else ()
                node_ok = not per_device or self._device_on_node(index, device_index, node)
                pool.devices.append(NodeDevice(info, pool, counters, node_ok, features))
        pool.unusable_devices = 0
        return pool

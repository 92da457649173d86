"""Keeping the node's ResourceSlices on the API server equal to what the agent found.

`Publisher.sync(pools)` compares each driver's desired pool with the slices
the server holds for this node and driver, and when anything differs (a
device, an attribute, a taint, the set of slices) it bumps the pool's
generation, server-side applies every slice of the pool with the agent's
field manager, and then deletes the pool's slices that are no longer
wanted. Consumers only use a pool's highest generation, so the old slices
stop counting the moment the new generation is complete. A pool that did
not change is not written at all; a driver with no devices left loses all
its slices. Slices of other drivers on the node are never touched.

Shutdown writes nothing: the slices stay, so a restarted agent (a new
DaemonSet pod, an upgrade) finds them equal and devices never vanish in
between.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Node as KubeNode
from lightkube.resources.resource_v1 import ResourceSlice as KubeSlice

from allot.agent.client import ApiClient
from allot.model.base import OwnerReference
from allot.model.codec import decode, object_to_data, to_data
from allot.model.errors import Location
from allot.model.resource import DeviceTaint, ResourcePool, ResourceSlice
from allot.model.validate_slice import validate_slice

log = logging.getLogger(__name__)


class PublishError(RuntimeError):
    """A pool the agent built does not pass the API's rules (a bug: nothing of it was written)."""


@dataclass
class PoolResult:
    driver: str
    generation: int
    changed: bool
    slices: int
    deleted: int = 0


def _with_generation(slices: Sequence[ResourceSlice], generation: int) -> list[ResourceSlice]:
    return [
        msgspec.structs.replace(
            s,
            spec=msgspec.structs.replace(
                s.spec, pool=msgspec.structs.replace(s.spec.pool, generation=generation)
            ),
        )
        for s in slices
    ]


def _content(slices: Sequence[ResourceSlice]) -> dict[str, Any]:
    """What makes two pools equal: slice names and specs, pool generation left out."""
    return {
        s.name: to_data(
            msgspec.structs.replace(
                s.spec,
                pool=ResourcePool(
                    name=s.spec.pool.name, resource_slice_count=s.spec.pool.resource_slice_count
                ),
            )
        )
        for s in slices
    }


@dataclass
class Publisher:
    api: ApiClient
    node: str
    drivers: Collection[str]  # the drivers whose slices on this node the agent owns
    owner: OwnerReference | None = None
    published: dict[str, list[ResourceSlice]] = field(default_factory=dict)
    # Highest generation written or seen per pool: a pool deleted by someone else comes back
    # at a higher generation, never an old one.
    generations: dict[str, int] = field(default_factory=dict)

    async def node_owner(self) -> OwnerReference | None:
        """The Node as the slices' owner (they go when it does); None where it cannot be read."""
        await self.api.limit.wait()
        try:
            node = await self.api.client.get(KubeNode, self.node)
        except ApiError as err:
            log.warning(
                "node %s: cannot read it (%s); slices get no owner reference", self.node, err.status.message
            )
            return None
        uid = node.metadata.uid if node.metadata is not None else None
        if not uid:
            return None
        return OwnerReference(api_version="v1", kind="Node", name=self.node, uid=uid, controller=True)

    async def load(self) -> dict[str, list[ResourceSlice]]:
        """The slices the server holds for this node, by driver (only the drivers the agent owns)."""
        await self.api.limit.wait()
        found: dict[str, list[ResourceSlice]] = {}
        async for item in self.api.client.list(KubeSlice, fields={"spec.nodeName": self.node}):
            data = item.to_dict()
            record = decode(data, ResourceSlice)
            if record.spec.driver in self.drivers and record.spec.pool.name == self.node:
                found.setdefault(record.spec.driver, []).append(record)
        self.published = {d: sorted(s, key=lambda x: x.name) for d, s in found.items()}
        return self.published

    def published_taints(self) -> dict[tuple[str, str], tuple[DeviceTaint, ...]]:
        """Device taints in the published slices (what a previous run found unhealthy)."""
        return {
            (s.spec.driver, d.name): d.taints
            for slices in self.published.values()
            for s in slices
            for d in s.spec.devices
            if d.taints
        }

    async def sync(self, pools: Mapping[str, Sequence[ResourceSlice]]) -> list[PoolResult]:
        """Make the server's pools equal `pools` (built at any generation; see the module docstring)."""
        results = []
        for driver in sorted(set(pools) | set(self.published)):
            results.append(await self._sync_pool(driver, list(pools.get(driver, ()))))
        return results

    async def _sync_pool(self, driver: str, desired: list[ResourceSlice]) -> PoolResult:
        current = self.published.get(driver, [])
        generation = max((s.spec.pool.generation for s in current), default=self.generations.get(driver, 0))
        generation = max(generation, self.generations.get(driver, 0))
        if desired and current and _content(desired) == _content(current):
            self.generations[driver] = generation
            return PoolResult(driver, generation, False, len(current))
        if desired:
            generation += 1
            desired = _with_generation(desired, generation)
            for index, resource_slice in enumerate(desired):
                problems = validate_slice(
                    resource_slice, Location(kind="ResourceSlice", name=resource_slice.name)
                )
                if problems:
                    raise PublishError(f"pool {driver} slice {index}: {problems[0]}")
            for resource_slice in desired:
                await self._apply(resource_slice)
        wanted = {s.name for s in desired}
        deleted = 0
        for stale in current:
            if stale.name not in wanted:
                await self.api.limit.wait()
                try:
                    await self.api.client.delete(KubeSlice, stale.name)
                    deleted += 1
                except ApiError as err:
                    if err.status.code != 404:
                        raise
        self.generations[driver] = generation
        if desired:
            self.published[driver] = desired
        else:
            self.published.pop(driver, None)
        log.info(
            "pool %s/%s: generation %d, %d slices, %d deleted",
            driver,
            self.node,
            generation,
            len(desired),
            deleted,
        )
        return PoolResult(driver, generation, True, len(desired), deleted)

    async def _apply(self, resource_slice: ResourceSlice) -> None:
        data = object_to_data(resource_slice)
        metadata = data["metadata"]
        # Server-side apply names what it owns: the name, the owner, the spec; nothing the server sets.
        data["metadata"] = {k: v for k, v in metadata.items() if k in ("name", "ownerReferences", "labels")}
        if self.owner is not None:
            data["metadata"]["ownerReferences"] = [to_data(self.owner)]
        await self.api.limit.wait()
        body = cast(KubeSlice, KubeSlice.from_dict(data))
        await self.api.client.apply(body, field_manager=self.api.field_manager, force=True)

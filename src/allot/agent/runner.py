"""The agent's loop: publish what the node has, keep it true, leave it in place on shutdown.

`Agent.run(stop)`:

1. start: read the Node (owner of the slices), list the slices already
   published for it, adopt their sticky health taints, publish;
2. every `poll` seconds: ask each GPU how it is (reachable, recovery
   action), re-read sysfs (NIC links, devices that came or went), sample
   the GPU gauges, and publish if anything changed; NVML events (XID, ECC)
   wake the loop at once from a thread that waits on them;
3. every `resync` seconds: re-read NVML's inventory and re-list the
   server's slices, so that edits or deletions by others are repaired;
4. on `stop`: return without writing; the slices stay as they are.

A GPU that was there and is no longer enumerated keeps its record, tainted
`gpu-lost`, rather than vanishing from the pool: pods on it must learn
that it is gone (NoExecute), and it comes back untainted if it returns.
Failed API calls are logged, counted and retried at the next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx2
import msgspec
from lightkube.core.exceptions import ApiError

from allot.agent.client import ApiClient
from allot.agent.gpu_source import GpuSample, GpuStatus, HealthEvent
from allot.agent.health import HealthTracker
from allot.agent.inventory import GpuInventory, HostInventory
from allot.agent.metrics import AgentMetrics
from allot.agent.node import AgentConfig, NodeDevices, join
from allot.agent.publisher import Publisher
from allot.agent.slices import build_pools
from allot.agent.sources import Sources
from allot.model.presets.devices import CPU_DRIVER, GPU_DRIVER, NIC_DRIVER
from allot.model.presets.gpu_sharing import HAMI_DRIVER

log = logging.getLogger(__name__)
DRIVERS = (GPU_DRIVER, HAMI_DRIVER, NIC_DRIVER, CPU_DRIVER)


@dataclass(frozen=True, slots=True)
class AgentOptions:
    node: str
    config: AgentConfig = field(default_factory=AgentConfig)
    resync: float = 300.0  # seconds between full re-reads of NVML and the server
    poll: float = 5.0  # seconds between health polls
    settle: float = 30.0  # seconds after an XID before a recovery may clear it


def keep_lost(previous: GpuInventory, current: GpuInventory) -> tuple[GpuInventory, set[str]]:
    """`current` plus the GPUs of `previous` it no longer lists; the UUIDs of those."""
    seen = {g.uuid for g in current.gpus}
    lost = [g for g in previous.gpus if g.uuid not in seen]
    if not lost:
        return current, set()
    gpus = tuple(sorted((*current.gpus, *lost), key=lambda g: g.index))
    return msgspec.structs.replace(current, gpus=gpus), {g.uuid for g in lost}


class Agent:
    def __init__(
        self,
        api: ApiClient,
        sources: Sources,
        options: AgentOptions,
        *,
        metrics: AgentMetrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api = api
        self.sources = sources
        self.options = options
        self.metrics = metrics or AgentMetrics()
        self.clock = clock
        self.publisher = Publisher(api, options.node, DRIVERS)
        self.gpu_inventory = sources.gpu.inventory()
        self.lost: set[str] = set()
        self.devices = self._join(sources.host())
        self.health = HealthTracker(self.devices, settle=options.settle)
        self.wake = asyncio.Event()
        self.synced = asyncio.Event()  # set after each successful publish (tests wait on it)

    def _join(self, host: HostInventory) -> NodeDevices:
        devices = join(self.options.node, self.gpu_inventory, host, self.options.config)
        for problem in devices.problems:
            log.warning("%s", problem)
        return devices

    async def close(self) -> None:
        """Let go of the API connection and of NVML; the published slices stay."""
        await self.api.client.close()
        self.sources.close()

    # -- steps ------------------------------------------------------------------------------

    async def start(self) -> None:
        self.publisher.owner = await self.publisher.node_owner()
        await self.publisher.load()
        self.health.adopt(self.publisher.published_taints())
        await self.publish()

    async def publish(self) -> None:
        pools = build_pools(self.devices, taints=self.health.taints(), replicas=self.options.config.replicas)
        results = await self.publisher.sync(pools)
        for result in results:
            self.metrics.observe_generation(result.driver, result.generation)
        keys = [(s.spec.driver, d.name) for slices in pools.values() for s in slices for d in s.spec.devices]
        self.metrics.observe_health(keys, self.health.taints())
        self.synced.set()

    # Reading (NVML, sysfs) may block: the loop does it in a thread and applies the result on
    # the loop's own thread, so the health state is only ever touched from one thread.

    def read(self, *, inventory: bool) -> tuple[GpuInventory | None, HostInventory]:
        return (self.sources.gpu.inventory() if inventory else None), self.sources.host()

    def apply_read(self, gpus: GpuInventory | None, host: HostInventory) -> None:
        """New inventory (GPUs gone from NVML kept as lost), re-joined; conditions of kept devices stay."""
        if gpus is not None:
            self.gpu_inventory, self.lost = keep_lost(self.gpu_inventory, gpus)
        self.devices = self._join(host)
        self.health.replace_devices(self.devices)

    def refresh(self, *, inventory: bool) -> None:
        self.apply_read(*self.read(inventory=inventory))

    def probe(self) -> tuple[dict[str, GpuStatus], list[GpuSample]]:
        """Each GPU's status (lost ones unreachable without asking) and the GPU gauges."""
        gpu = self.sources.gpu
        statuses = {
            r.gpu.uuid: GpuStatus(reachable=False) if r.gpu.uuid in self.lost else gpu.status(r.gpu.uuid)
            for r in self.devices.gpus
        }
        return statuses, gpu.samples()

    def apply_probe(self, statuses: dict[str, GpuStatus], samples: list[GpuSample]) -> None:
        now = self.clock()
        for uuid, status in statuses.items():
            self.health.on_gpu_status(uuid, status, now)
        self.health.on_links(now)
        self.metrics.observe_samples(self.devices, samples)

    def poll_health(self) -> None:
        self.apply_probe(*self.probe())

    def apply_events(self, events: list[HealthEvent]) -> int:
        now = self.clock()
        for event in events:
            self.metrics.observe_event(self.devices, event)
            if self.health.on_event(event, now):
                log.warning("GPU %s: %s %s", event.uuid, event.kind, event.xid or "")
        return len(events)

    def handle_events(self, timeout: float) -> int:
        """Wait up to `timeout` for NVML events and apply them; how many arrived."""
        return self.apply_events(self.sources.gpu.wait_events(timeout))

    # -- loop ---------------------------------------------------------------------------------

    async def _watch_events(self, halt: asyncio.Event) -> None:
        while not halt.is_set():
            events = await asyncio.to_thread(self.sources.gpu.wait_events, 0.5)
            if events and self.apply_events(events):
                self.wake.set()

    async def _cycle(self, resync_due: bool) -> None:
        self.apply_read(*await asyncio.to_thread(lambda: self.read(inventory=resync_due)))
        if resync_due:
            await self.publisher.load()
        self.apply_probe(*await asyncio.to_thread(self.probe))
        await self.publish()

    async def run(self, stop: asyncio.Event) -> None:
        """Until `stop` is set (see the module docstring)."""
        while not stop.is_set():
            try:
                await self.start()
                break
            except (ApiError, httpx2.HTTPError, OSError) as err:
                self.metrics.publish_errors.inc()
                log.warning("first publish failed (%s); retrying in %.0f s", err, self.options.poll)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.options.poll)
        halt = asyncio.Event()  # ends the event watcher however the loop ends
        watcher = asyncio.create_task(self._watch_events(halt))
        next_resync = time.monotonic() + self.options.resync
        try:
            while not stop.is_set():
                waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(self.wake.wait())]
                await asyncio.wait(waiters, timeout=self.options.poll, return_when=asyncio.FIRST_COMPLETED)
                for waiter in waiters:
                    waiter.cancel()
                if stop.is_set():
                    break
                self.wake.clear()
                resync_due = time.monotonic() >= next_resync
                try:
                    await self._cycle(resync_due)
                    if resync_due:
                        next_resync = time.monotonic() + self.options.resync
                except (ApiError, httpx2.HTTPError, OSError) as err:
                    self.metrics.publish_errors.inc()
                    log.warning("sync failed (%s); retrying in %.0f s", err, self.options.poll)
                    next_resync = 0.0  # the server's state is unknown now: list it again first
        finally:
            halt.set()
            await watcher
            log.info("stopped; the published slices stay in place")

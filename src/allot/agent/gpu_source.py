"""The interface between the agent and whatever tells it about GPUs: NVML, or a recorded machine.

`GpuSource` is four questions: what GPUs are there (`inventory`), what
happened to them (`wait_events`, NVML's event API: XID errors, ECC errors),
how is one doing now (`status`: still on the bus? does the driver ask for a
reset?), and what are their gauges (`samples`, for /metrics). The NVML
backend (`allot.agent.nvml`) asks the library; `ReplayGpuSource` answers
from a recording and lets tests inject events and states through the same
methods, so the health logic under test is the one that runs on a node.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import Literal, Protocol

from allot.agent.inventory import GpuInventory

EventKind = Literal["xid", "ecc-double-bit", "ecc-single-bit"]
# What the driver asks for before the GPU is usable again (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION).
RecoveryAction = Literal["none", "reset", "reboot", "drain-p2p", "drain-and-reset"]
RECOVERY_ACTIONS: dict[int, RecoveryAction] = {
    0: "none",
    1: "reset",
    2: "reboot",
    3: "drain-p2p",
    4: "drain-and-reset",
}


@dataclass(frozen=True, slots=True)
class HealthEvent:
    """One NVML event on GPU `uuid`; an XID may name the MIG GPU instance it happened in."""

    uuid: str
    kind: EventKind
    xid: int = 0
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


@dataclass(frozen=True, slots=True)
class GpuStatus:
    """How a GPU answers now: `reachable` is False once it fell off the bus (or vanished);
    `recovery` is None where the driver cannot say (older drivers)."""

    reachable: bool = True
    recovery: RecoveryAction | None = None


@dataclass(frozen=True, slots=True)
class GpuSample:
    """Gauges of one GPU for /metrics; None where the GPU does not report one."""

    uuid: str
    temperature_c: float | None = None
    utilization_percent: float | None = None
    memory_used_bytes: int | None = None
    memory_free_bytes: int | None = None
    power_watts: float | None = None


class GpuSource(Protocol):
    def inventory(self) -> GpuInventory: ...

    def wait_events(self, timeout: float) -> list[HealthEvent]:
        """Block up to `timeout` seconds for events; what arrived (possibly nothing)."""
        ...

    def status(self, uuid: str) -> GpuStatus: ...

    def samples(self) -> list[GpuSample]: ...

    def close(self) -> None: ...


class ReplayGpuSource:
    """A recorded `GpuInventory` behind the `GpuSource` interface, with injection for tests and demos."""

    def __init__(self, recorded: GpuInventory) -> None:
        self.recorded = recorded
        self._events: queue.Queue[HealthEvent] = queue.Queue()
        self._status: dict[str, GpuStatus] = {}
        self._samples: dict[str, GpuSample] = {}

    def inventory(self) -> GpuInventory:
        return self.recorded

    def inject(self, event: HealthEvent) -> None:
        self._events.put(event)

    def set_status(self, uuid: str, status: GpuStatus) -> None:
        self._status[uuid] = status

    def set_sample(self, sample: GpuSample) -> None:
        self._samples[sample.uuid] = sample

    def wait_events(self, timeout: float) -> list[HealthEvent]:
        try:
            events = [self._events.get(timeout=max(timeout, 0.0))]
        except queue.Empty:
            return []
        while True:
            try:
                events.append(self._events.get_nowait())
            except queue.Empty:
                return events

    def status(self, uuid: str) -> GpuStatus:
        known = any(g.uuid == uuid for g in self.recorded.gpus)
        return self._status.get(uuid, GpuStatus(reachable=known, recovery="none" if known else None))

    def samples(self) -> list[GpuSample]:
        return [self._samples.get(g.uuid, GpuSample(uuid=g.uuid)) for g in self.recorded.gpus]

    def close(self) -> None:
        pass


class NoGpus(ReplayGpuSource):
    """A node without NVML: no GPUs, no events."""

    def __init__(self) -> None:
        super().__init__(GpuInventory())

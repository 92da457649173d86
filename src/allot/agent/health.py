"""Device health: NVML events, GPU status and NIC links turned into device taints, and back.

Pure logic (no I/O, the caller passes the time). `HealthTracker` keeps, per
device, the conditions that make it unhealthy, and `taints()` renders them
as the `taints` of the published devices: `NoSchedule` keeps new claims
off a device, `NoExecute` also makes Kubernetes evict the pods whose claims
use it (the DRA device-taint eviction controller).

| condition | taint key | value | effect | clears when |
|---|---|---|---|---|
| XID the driver calls fatal (table below) | `gpu.nvidia.com/xid` | the XID | NoExecute | the GPU is reachable and NVML's recovery action is `none` |
| other XIDs, except application XIDs | `gpu.nvidia.com/xid` | the XID | NoSchedule | same |
| double-bit ECC event | `gpu.nvidia.com/ecc` | `double-bit` | NoExecute | same |
| GPU does not answer (fell off the bus, or vanished) | `gpu.nvidia.com/gpu-lost` | `true` | NoExecute | it answers again |
| NIC link down (netdev operstate, or RDMA port not ACTIVE) | `dra.net/link-down` | `true` | NoSchedule | the link is up |

Fatal XIDs: those after which the GPU's state cannot be trusted until it
is reset, so the work on it is lost anyway: 48 (double-bit ECC), 62
(internal micro-controller halt), 64 (ECC page retirement or row-remapping
failure), 79 (fallen off the bus), 95 (uncontained ECC error), 119 and 120
(GSP timeout and error), 140 (unrecovered ECC error). Application XIDs
(13, 31, 43, 45, 68, 109: a program's own fault, timeout or clean-up) say
nothing about the device and taint nothing; they are counted in /metrics.
Single-bit ECC errors are corrected by the hardware: counted, not tainted.

Scope: an event of a MIG GPU instance whose placement the agent knows
taints, with NoSchedule, the devices that overlap that placement (the MIG
partitions sharing its memory slices and the whole GPU); anything else
taints every device of the GPU. The XID and ECC conditions are sticky:
they stay until a status poll, `settle` seconds or more after the event,
finds the GPU reachable with recovery action `none` (drivers that cannot
tell keep the taint until an operator resets the GPU and restarts the
agent, or removes the taint). On start, the agent adopts the sticky taints
its published slices already carry, so a restart does not forget them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from allot.agent.gpu_source import GpuStatus, HealthEvent
from allot.agent.node import GpuRecord, NodeDevices
from allot.model.presets.devices import GPU_DRIVER, NIC_DRIVER
from allot.model.resource import DeviceTaint

XID_KEY = f"{GPU_DRIVER}/xid"
ECC_KEY = f"{GPU_DRIVER}/ecc"
LOST_KEY = f"{GPU_DRIVER}/gpu-lost"
LINK_KEY = f"{NIC_DRIVER}/link-down"
STICKY_KEYS = (XID_KEY, ECC_KEY)

FATAL_XIDS = {
    48: "double-bit ECC error",
    62: "internal micro-controller halt",
    64: "ECC page retirement or row remapping failure",
    79: "GPU has fallen off the bus",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
    140: "unrecovered ECC error",
}
APPLICATION_XIDS = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive clean-up",
    68: "video decoder exception",
    109: "context switch timeout",
}
_SEVERITY = {"NoSchedule": 1, "NoExecute": 2}

DeviceKey = tuple[str, str]  # (driver, device name)


@dataclass(frozen=True, slots=True)
class Condition:
    key: str
    value: str
    effect: str
    since: float  # seconds since the epoch, from the caller's clock
    reason: str = ""

    def taint(self) -> DeviceTaint:
        stamp = datetime.fromtimestamp(int(self.since), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return DeviceTaint(key=self.key, value=self.value, effect=self.effect, time_added=stamp)


def xid_effect(xid: int) -> str | None:
    """NoExecute for fatal XIDs, None for application XIDs, NoSchedule for the rest."""
    if xid in APPLICATION_XIDS:
        return None
    return "NoExecute" if xid in FATAL_XIDS else "NoSchedule"


@dataclass
class HealthTracker:
    """Conditions per device (see the module docstring); `settle` seconds before recovery may clear."""

    devices: NodeDevices
    settle: float = 30.0
    conditions: dict[DeviceKey, dict[str, Condition]] = field(default_factory=dict)
    ignored_events: int = 0

    # -- which devices an event touches -----------------------------------------------------

    def _gpu(self, uuid: str) -> GpuRecord | None:
        return next((g for g in self.devices.gpus if g.gpu.uuid == uuid), None)

    def gpu_keys(self, gpu: GpuRecord, placement: tuple[int, int] | None = None) -> list[DeviceKey]:
        """The devices of `gpu`; with a placement (start, size), only those overlapping it."""
        keys = [(gpu.driver, gpu.name)]
        for mig in self.devices.mig_placements(gpu):
            start, size = mig.start, mig.profile.placement_size
            if placement is None or (start < placement[0] + placement[1] and placement[0] < start + size):
                keys.append((GPU_DRIVER, mig.name))
        return keys

    def _event_keys(self, gpu: GpuRecord, event: HealthEvent, effect: str) -> list[DeviceKey]:
        if effect == "NoSchedule" and event.gpu_instance_id is not None:
            present = next(
                (m for m in gpu.gpu.mig_devices if m.gpu_instance_id == event.gpu_instance_id), None
            )
            if present is not None:
                return self.gpu_keys(gpu, (present.placement_start, present.placement_size))
        return self.gpu_keys(gpu)

    # -- updates -------------------------------------------------------------------------------

    def _set(self, key: DeviceKey, condition: Condition) -> bool:
        held = self.conditions.setdefault(key, {})
        current = held.get(condition.key)
        if current is not None and _SEVERITY[current.effect] > _SEVERITY[condition.effect]:
            return False  # a milder condition of the same kind does not soften a fatal one
        if current is not None and (current.value, current.effect) == (condition.value, condition.effect):
            return False
        held[condition.key] = condition
        return True

    def _clear(
        self, key: DeviceKey, condition_keys: Iterable[str], *, older_than: float | None = None
    ) -> bool:
        held = self.conditions.get(key, {})
        gone = [
            k for k in condition_keys if k in held and (older_than is None or held[k].since <= older_than)
        ]
        for k in gone:
            del held[k]
        if not held:
            self.conditions.pop(key, None)
        return bool(gone)

    def on_event(self, event: HealthEvent, now: float) -> bool:
        """Apply one NVML event; whether any device's taints changed."""
        gpu = self._gpu(event.uuid)
        if gpu is None:
            return False
        if event.kind == "xid":
            effect = xid_effect(event.xid)
            if effect is None:
                self.ignored_events += 1
                return False
            reason = FATAL_XIDS.get(event.xid, f"XID {event.xid}")
            condition = Condition(XID_KEY, str(event.xid), effect, now, reason)
        elif event.kind == "ecc-double-bit":
            effect = "NoExecute"
            condition = Condition(ECC_KEY, "double-bit", effect, now, "double-bit ECC error")
        else:
            self.ignored_events += 1
            return False
        changed = False
        for key in self._event_keys(gpu, event, effect):
            changed |= self._set(key, condition)
        return changed

    def on_gpu_status(self, uuid: str, status: GpuStatus, now: float) -> bool:
        gpu = self._gpu(uuid)
        if gpu is None:
            return False
        changed = False
        for key in self.gpu_keys(gpu):
            if not status.reachable:
                changed |= self._set(
                    key, Condition(LOST_KEY, "true", "NoExecute", now, "GPU does not answer")
                )
                continue
            changed |= self._clear(key, [LOST_KEY])
            if status.recovery == "none":
                changed |= self._clear(key, STICKY_KEYS, older_than=now - self.settle)
        return changed

    def on_links(self, now: float) -> bool:
        changed = False
        for nic in self.devices.nics:
            key = (NIC_DRIVER, nic.name)
            if nic.link_up:
                changed |= self._clear(key, [LINK_KEY])
            else:
                changed |= self._set(key, Condition(LINK_KEY, "true", "NoSchedule", now, "link down"))
        return changed

    def adopt(self, published: Mapping[DeviceKey, Iterable[DeviceTaint]]) -> None:
        """Take over the sticky taints a previous run published (their time is when they were added)."""
        for key, taints in published.items():
            for taint in taints:
                if taint.key in STICKY_KEYS and taint.effect in _SEVERITY:
                    since = _parse_time(taint.time_added)
                    self._set(key, Condition(taint.key, taint.value, taint.effect, since, "adopted"))

    def replace_devices(self, devices: NodeDevices) -> None:
        """New inventory: conditions of devices that are gone go with them."""
        self.devices = devices
        known = {(g.driver, g.name) for g in devices.gpus}
        known |= {(GPU_DRIVER, m.name) for g in devices.gpus for m in devices.mig_placements(g)}
        known |= {(NIC_DRIVER, n.name) for n in devices.nics}
        for key in [k for k in self.conditions if k not in known]:
            del self.conditions[key]

    # -- results ------------------------------------------------------------------------------------

    def taints(self) -> dict[DeviceKey, tuple[DeviceTaint, ...]]:
        return {
            key: tuple(c.taint() for _, c in sorted(held.items()))
            for key, held in sorted(self.conditions.items())
            if held
        }


def _parse_time(stamp: str | None) -> float:
    if not stamp:
        return 0.0
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return 0.0

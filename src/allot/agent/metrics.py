"""The agent's /metrics: per-device health and GPU gauges, with DCGM-exporter names where one fits.

A registry per agent (tests run several). GPU gauges carry the labels
DCGM-exporter uses (`gpu` index, `UUID`, `device` as nvidia<minor>,
`modelName`, `pci_bus_id`, `Hostname`) so existing dashboards work:

| metric | unit | DCGM-exporter |
|---|---|---|
| `DCGM_FI_DEV_GPU_TEMP` | °C | same |
| `DCGM_FI_DEV_GPU_UTIL` | % | same |
| `DCGM_FI_DEV_FB_USED`, `DCGM_FI_DEV_FB_FREE` | MiB | same |
| `DCGM_FI_DEV_POWER_USAGE` | W | same |
| `DCGM_FI_DEV_XID_ERRORS` | last XID seen | same |
| `allot_agent_device_healthy{driver,device}` | 1 healthy, 0 tainted NoSchedule/NoExecute | - |
| `allot_agent_device_taint{driver,device,key,effect}` | 1 per taint | - |
| `allot_agent_health_events_total{kind}` | NVML events received | - |
| `allot_agent_pool_generation{driver}` | the published pool's generation | - |
| `allot_agent_publish_errors_total` | failed syncs (retried) | - |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from allot.agent.gpu_source import GpuSample, HealthEvent
from allot.agent.node import NodeDevices
from allot.model.resource import DeviceTaint

MIB = 1024 * 1024
_GPU_LABELS = ("gpu", "UUID", "device", "modelName", "pci_bus_id", "Hostname")


class AgentMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.temperature = Gauge("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (C).", _GPU_LABELS, registry=r)
        self.utilization = Gauge("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", _GPU_LABELS, registry=r)
        self.fb_used = Gauge(
            "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", _GPU_LABELS, registry=r
        )
        self.fb_free = Gauge(
            "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", _GPU_LABELS, registry=r
        )
        self.power = Gauge("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", _GPU_LABELS, registry=r)
        self.xid = Gauge(
            "DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", _GPU_LABELS, registry=r
        )
        self.healthy = Gauge(
            "allot_agent_device_healthy", "1 if the device carries no NoSchedule/NoExecute taint.",
            ("driver", "device"), registry=r,
        )  # fmt: skip
        self.taint = Gauge(
            "allot_agent_device_taint", "Taints the agent publishes on a device.",
            ("driver", "device", "key", "effect"), registry=r,
        )  # fmt: skip
        self.events = Counter(
            "allot_agent_health_events", "NVML health events received.", ("kind",), registry=r
        )
        self.generation = Gauge(
            "allot_agent_pool_generation", "Generation of the published pool.", ("driver",), registry=r
        )
        self.publish_errors = Counter(
            "allot_agent_publish_errors", "Failed syncs with the API server.", registry=r
        )

    def _gpu_labels(self, devices: NodeDevices) -> dict[str, tuple[str, ...]]:
        return {
            g.gpu.uuid: (
                str(g.gpu.index),
                g.gpu.uuid,
                f"nvidia{g.gpu.minor}",
                g.gpu.product_name,
                g.slot.pci_bus_id,
                devices.node,
            )
            for g in devices.gpus
        }

    def observe_samples(self, devices: NodeDevices, samples: Iterable[GpuSample]) -> None:
        labels = self._gpu_labels(devices)
        for sample in samples:
            gpu = labels.get(sample.uuid)
            if gpu is None:
                continue
            for gauge, value in (
                (self.temperature, sample.temperature_c),
                (self.utilization, sample.utilization_percent),
                (self.fb_used, None if sample.memory_used_bytes is None else sample.memory_used_bytes / MIB),
                (self.fb_free, None if sample.memory_free_bytes is None else sample.memory_free_bytes / MIB),
                (self.power, sample.power_watts),
            ):
                if value is not None:
                    gauge.labels(*gpu).set(value)

    def observe_event(self, devices: NodeDevices, event: HealthEvent) -> None:
        self.events.labels(event.kind).inc()
        gpu = self._gpu_labels(devices).get(event.uuid)
        if event.kind == "xid" and gpu is not None:
            self.xid.labels(*gpu).set(event.xid)

    def observe_health(
        self, devices: Sequence[tuple[str, str]], taints: Mapping[tuple[str, str], Sequence[DeviceTaint]]
    ) -> None:
        self.taint.clear()
        self.healthy.clear()
        for driver, device in devices:
            held = taints.get((driver, device), ())
            blocking = any(t.effect in ("NoSchedule", "NoExecute") for t in held)
            self.healthy.labels(driver, device).set(0 if blocking else 1)
            for t in held:
                self.taint.labels(driver, device, t.key, t.effect).set(1)

    def observe_generation(self, driver: str, generation: int) -> None:
        self.generation.labels(driver).set(generation)

    def text(self) -> str:
        return generate_latest(self.registry).decode()

"""What the trace readers share: tenants named by the trace, and pod shapes per job size.

A trace names its tenants (Philly's virtual clusters, openb's ...); each
becomes a `Tenant` with a namespace, LocalQueue and ClusterQueue of the
same (DNS-safe) name, unless the scenario file defines a tenant of that
name, whose settings then apply. Jobs of the same tenant and size share a
`PodShape`: `gpus` GPUs and `cpu` CPUs per pod, asked for through a
ResourceClaimTemplate (`devices: {gpus: N}`) when the cluster has NVIDIA's
DeviceClass, else through the `nvidia.com/gpu` extended resource.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from allot.model.loader import Manifests
from allot.model.quantity import Quantity
from allot.model.resource import DeviceClass, ResourceClaimTemplate
from allot.sim.inventory import PLUGIN_GPU_RESOURCE
from allot.sim.scenario import devices as shorthand
from allot.sim.scenario.arrivals import Times
from allot.sim.scenario.distributions import Fixed
from allot.sim.scenario.jobs import claim_template, prototype_pod, tenant_of
from allot.sim.scenario.schema import DeviceSpec, JobTemplate, Scenario
from allot.sim.workload import Job, PodShape, Tenant, Workload

_UNSAFE = re.compile(r"[^a-z0-9-]+")
GPUS_PER_NODE = 8


def dns_name(text: str, fallback: str = "tenant") -> str:
    cleaned = _UNSAFE.sub("-", text.lower()).strip("-")[:63].strip("-")
    return cleaned or fallback


@dataclass
class TraceBuilder:
    """Accumulates tenants, shapes and jobs while a trace is read."""

    scenario: Scenario
    manifests: Manifests
    gpus_per_node: int = GPUS_PER_NODE
    memory_per_cpu_gib: int = 4
    tenants: dict[str, Tenant] = field(default_factory=dict)
    shapes: dict[str, PodShape] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)
    objects: list[ResourceClaimTemplate] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._known = {t.name: t for t in self.scenario.tenants}
        classes = {c.name for c in self.manifests.of_kind(DeviceClass)}
        self.dra = shorthand.GPU_CLASS in classes
        self._keys: set[str] = set()

    def tenant(self, raw: str) -> Tenant:
        name = dns_name(raw)
        found = self.tenants.get(name)
        if found is None:
            spec = self._known.get(name)
            found = (
                tenant_of(spec)
                if spec is not None
                else Tenant(name, name, name, trust=name, cluster_queue=name)
            )
            self.tenants[name] = found
        return found

    def _shape(self, tenant: Tenant, gpus: int, cpu: int) -> str:
        name = f"{tenant.name}-g{gpus}-c{cpu}"
        if name in self.shapes:
            return name
        resources = {
            "cpu": Quantity.from_int(cpu),
            "memory": Quantity.parse(f"{self.memory_per_cpu_gib * cpu}Gi"),
        }
        devices = None
        claim = None
        if gpus and self.dra:
            devices = DeviceSpec(gpus=gpus)
            claim = shorthand.claim_spec(devices, {shorthand.GPU_CLASS})
        elif gpus:
            resources[PLUGIN_GPU_RESOURCE] = Quantity.from_int(gpus)
        template = JobTemplate(
            name=name,
            tenant=tenant.name,
            arrival=Times((0.0,)),
            count=None,
            pods=Fixed(1.0),
            gang=None,
            duration=Fixed(1.0),
            resources=resources,
            devices=devices,
        )
        if claim is not None:
            self.objects.append(claim_template(name, tenant.namespace, claim))
        prototype = prototype_pod(template, tenant, claim)
        self.shapes[name] = PodShape(name, tenant.name, prototype, float(gpus), "gpu" if gpus else "cpu")
        return name

    def add(
        self, job_id: str, tenant_name: str, arrival: float, duration: float, gpus: int, cpu: int
    ) -> None:
        """One trace job; jobs wider than a node become gangs of node-sized pods."""
        tenant = self.tenant(tenant_name)
        pods = max(1, -(-gpus // self.gpus_per_node)) if gpus else 1
        per_pod = -(-gpus // pods) if gpus else 0
        cpu_per_pod = max(1, -(-cpu // pods)) if cpu else max(1, per_pod * 4)
        shape = self._shape(tenant, per_pod, cpu_per_pod)
        key = f"{tenant.namespace}/{dns_name(job_id, 'job')[:50]}"
        if key in self._keys:
            key = f"{key}-{len(self.jobs)}"
        self._keys.add(key)
        self.jobs.append(
            Job(
                key=key,
                tenant=tenant.name,
                shape=shape,
                arrival=arrival,
                pods=pods,
                duration=max(duration, 1.0),
                gang=pods > 1,
            )
        )

    def workload(self) -> Workload:
        return Workload(dict(sorted(self.tenants.items())), self.shapes, self.jobs, list(self.objects))

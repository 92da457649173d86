"""What a simulation runs: tenants, pod shapes and jobs, independent of where they came from.

Scenario files, Philly/Helios CSVs, the openb trace and the synthetic
generator all produce a `Workload`: a list of `Job`s (arrival time, pod
count, duration, gang or not) whose pods are stamped from a `PodShape`'s
prototype when the job arrives. Pods carry the labels that give them
meaning to both ordering policies: the tenant's Kueue LocalQueue
(`kueue.x-k8s.io/queue-name`) and, for gangs, Kueue's pod-group label and
total-count annotation, which kube-scheduler ordering also treats as a gang.

A job's `duration` is seconds of work at full speed, counted from the
moment its pods are bound (not from arrival).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from msgspec.structs import replace

from allot.cluster.claims import object_uid
from allot.model.base import Object
from allot.model.core import Pod
from allot.model.kueue import POD_GROUP_NAME_LABEL, POD_GROUP_TOTAL_COUNT_ANNOTATION, QUEUE_NAME_LABEL

JOB_LABEL = "sim.allot.dev/job"
TENANT_LABEL = "sim.allot.dev/tenant"
KIND_LABEL = "sim.allot.dev/kind"
# The tenant's trust domain: pods with the same value may share a GPU without memory isolation.
TRUST_LABEL = "sim.allot.dev/trust"


@dataclass(frozen=True, slots=True)
class Tenant:
    """One party sharing the cluster: its namespace, LocalQueue and fair-share weight."""

    name: str
    namespace: str
    local_queue: str = ""
    weight: float = 1.0
    trust: str = ""
    cluster_queue: str = ""


@dataclass(frozen=True, slots=True)
class PodShape:
    """What every pod of one job template looks like.

    `prototype` is a complete pod without a name; `gpus` is what one pod asks
    for in GPU-equivalents (a whole GPU is 1, a 30 % share 0.3, a MIG slice
    its dominant fraction of the GPU), used as demand for fair shares.
    """

    name: str
    tenant: str
    prototype: Pod
    gpus: float = 0.0
    kind: str = ""


@dataclass(frozen=True, slots=True)
class Job:
    """One submission: `pods` pods of `shape`, arriving together at `arrival`."""

    key: str
    tenant: str
    shape: str
    arrival: float
    pods: int = 1
    duration: float = 60.0
    gang: bool = False

    @property
    def namespace(self) -> str:
        return self.key.partition("/")[0]

    @property
    def name(self) -> str:
        return self.key.partition("/")[2]

    def pod_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.pods)]


@dataclass
class Workload:
    """Tenants, shapes and jobs (sorted by arrival, then key), plus the objects the pods need
    (ResourceClaimTemplates, PriorityClasses, namespaces ...)."""

    tenants: dict[str, Tenant]
    shapes: dict[str, PodShape]
    jobs: list[Job]
    objects: list[Object] = field(default_factory=list)
    # A trace that brings its own cluster (openb): these objects replace the scenario's
    # Nodes, ResourceSlices and DeviceClasses.
    cluster: list[Object] | None = None

    def __post_init__(self) -> None:
        self.jobs.sort(key=lambda j: (j.arrival, j.key))

    def tenant_names(self) -> list[str]:
        return list(self.tenants)


def timestamp(seconds: float) -> str:
    """RFC 3339 for simulated time (seconds since the epoch), with microseconds so order survives."""
    text = datetime.fromtimestamp(seconds, UTC).isoformat(timespec="microseconds")
    return text.replace("+00:00", "Z")


def make_pods(job: Job, shape: PodShape, tenant: Tenant) -> list[Pod]:
    """The pods of `job`, stamped from its shape's prototype, created at its arrival time."""
    proto = shape.prototype
    labels: dict[str, str] = {**proto.metadata.labels, JOB_LABEL: job.name, TENANT_LABEL: tenant.name}
    if shape.kind:
        labels[KIND_LABEL] = shape.kind
    if tenant.trust:
        labels[TRUST_LABEL] = tenant.trust
    if tenant.local_queue:
        labels[QUEUE_NAME_LABEL] = tenant.local_queue
    annotations: Mapping[str, str] = proto.metadata.annotations
    if job.gang:
        labels[POD_GROUP_NAME_LABEL] = job.name
        annotations = {**annotations, POD_GROUP_TOTAL_COUNT_ANNOTATION: str(job.pods)}
    created = timestamp(job.arrival)
    pods: list[Pod] = []
    for name in job.pod_names():
        metadata = replace(
            proto.metadata,
            name=name,
            namespace=job.namespace,
            labels=labels,
            annotations=dict(annotations),
            creation_timestamp=created,
            # Set once here: the cluster state derives claim ownership from the uid on every bind.
            uid=object_uid("Pod", job.namespace, name),
        )
        pods.append(replace(proto, metadata=metadata))
    return pods

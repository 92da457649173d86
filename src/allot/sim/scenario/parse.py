"""Scenario YAML → `Scenario`, with every problem reported at its file, line and field.

Top-level fields: `name`, `description`, `seed`, `horizon`, `checkpoint`,
`compare`, `policies`, `cluster`, `kueue`, `tenants`, `priorityClasses`,
`workloadPriorityClasses`, `jobs`, `trace`. The cluster (manifest paths,
hardware presets, CPU nodes) and inline Kueue objects are loaded here, so
a `Scenario` carries its manifests; jobs stay templates until a seed turns
them into a workload (`allot.sim.scenario.build`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from allot.model.base import Object
from allot.model.codec import decode
from allot.model.core import Node, Toleration
from allot.model.errors import Location, ManifestErrors
from allot.model.loader import LoadedObject, load_paths, load_text
from allot.model.presets.catalog import PresetError
from allot.model.presets.expand import expand_specs
from allot.model.quantity import Quantity
from allot.model.resource import ResourceClaimSpec
from allot.model.strict_yaml import describe_yaml_error, load_yaml
from allot.scheduling.topology.alignment import Level
from allot.sim.limits import (
    DEFAULT_LIMITS,
    MAX_COUNT,
    MAX_DEVICES_PER_POD,
    MAX_FACTOR,
    MAX_PODS_PER_JOB,
    MAX_PRIORITY,
    MAX_SECONDS,
    MAX_SEED,
    MIN_PRIORITY,
    RunLimits,
    too_many,
)
from allot.sim.scenario.arrivals import parse_arrival
from allot.sim.scenario.distributions import Fixed, parse_distribution
from allot.sim.scenario.nodes import plain_nodes
from allot.sim.scenario.reader import Field, Reader, read_yaml
from allot.sim.scenario.schema import (
    DeviceSpec,
    GpuShare,
    JobTemplate,
    PolicySpec,
    PriorityClassSpec,
    Scenario,
    TenantSpec,
    TraceSpec,
)
from allot.sim.simulator import NodeEvent
from allot.sim.topology import ThroughputFactors

# The smallest throughput factor a scenario may give (a pod a thousand times slower).
MIN_FACTOR = 0.001

TOP_LEVEL = (
    "name",
    "description",
    "seed",
    "horizon",
    "checkpoint",
    "compare",
    "policies",
    "cluster",
    "kueue",
    "tenants",
    "priorityClasses",
    "workloadPriorityClasses",
    "jobs",
    "trace",
    "throughput",
)
THROUGHPUT_KEYS = ("gpuNic", "cpuNuma")
GPU_NIC_KEYS = ("numaNode", "none")
CLUSTER_KEYS = ("manifests", "presets", "nodes", "nodeEvents")
KUEUE_KEYS = ("manifests", "objects", "cohort")
TENANT_KEYS = ("name", "namespace", "localQueue", "clusterQueue", "weight", "trust", "quota")
JOB_KEYS = (
    "name",
    "tenant",
    "arrival",
    "count",
    "pods",
    "gang",
    "duration",
    "priority",
    "workloadPriority",
    "resources",
    "devices",
    "claim",
    "tolerations",
    "nodeSelector",
    "kind",
    "runtimeEstimate",
)
DEVICE_KEYS = ("gpus", "nics", "alignment", "gpuShare", "mig", "deviceClass")
POLICY_KEYS = (
    "base",
    "description",
    "queues",
    "fairSharing",
    "preemption",
    "consolidation",
    "reservations",
    "quotaHolds",
    "schedulerConfig",
)
TRACE_KINDS = ("synthetic", "philly", "openb")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_WHERE = re.compile(r"^(\S+?): (.*)$", re.DOTALL)


def parse_scenario(
    text: str, file: str, *, base_dir: Path | None = None, limits: RunLimits = DEFAULT_LIMITS
) -> Scenario:
    """Parse a scenario file's text; ManifestErrors lists every problem found (a cluster of more
    nodes than `limits` allow is one)."""
    data, reader = read_yaml(text, file)
    root = Field(reader, "", data)
    if not isinstance(data, dict):
        reader.error("", "expected a scenario mapping (name, cluster, tenants, jobs ...)")
        reader.raise_if_errors()
    root.mapping(TOP_LEVEL)
    base = base_dir if base_dir is not None else Path(file).parent
    scenario = Scenario(
        name=root.get("name").as_str(Path(file).stem) or Path(file).stem, file=file, lines=reader.lines
    )
    scenario.description = root.get("description").as_str("") or ""
    scenario.seed = root.get("seed").as_int(0, minimum=0, maximum=MAX_SEED) or 0
    scenario.horizon = root.get("horizon").as_duration(None, positive=True)
    scenario.checkpoint = root.get("checkpoint").as_float(0.0, minimum=0.0, maximum=1.0) or 0.0
    scenario.compare = _compare(root.get("compare"))
    scenario.throughput = _throughput(root.get("throughput"))
    scenario.policies = [_policy(name, f, base) for name, f in root.get("policies").entries()]
    _cluster(root.get("cluster"), scenario, base, reader, limits.nodes)
    _kueue(root.get("kueue"), scenario, base, reader)
    scenario.tenants = [t for t in (_tenant(f) for f in root.get("tenants").items()) if t is not None]
    scenario.priority_classes = [
        *_priorities(root.get("priorityClasses"), workload=False),
        *_priorities(root.get("workloadPriorityClasses"), workload=True),
    ]
    scenario.jobs = [j for j in (_job(f) for f in root.get("jobs").items()) if j is not None]
    scenario.trace = _trace(root.get("trace"), base)
    _cross_check(root, scenario, reader)
    reader.raise_if_errors()
    return scenario


def load_scenario(path: str | Path, *, limits: RunLimits = DEFAULT_LIMITS) -> Scenario:
    """Read and parse a scenario file; ManifestErrors for a missing file or bad content."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, ValueError) as err:  # ValueError: undecodable text, a NUL in the path
        reader = Reader(str(file))
        reader.error("", f"cannot read: {err}")
        reader.raise_if_errors()
        raise AssertionError("unreachable") from None
    return parse_scenario(text, str(file), limits=limits)


# -- sections ---------------------------------------------------------------------------


def _compare(field: Field) -> list[str]:
    if not field.present or field.value is None:
        return []
    if isinstance(field.value, str):
        return [p.strip() for p in field.value.split(",") if p.strip()]
    return [name for name in (f.as_str() for f in field.items()) if name]


def _throughput(field: Field) -> ThroughputFactors | None:
    """`throughput: {gpuNic: {numaNode: 0.63, none: 0.53}, cpuNuma: 0.71}`: factors in (0, 1]."""
    if not field.present or field.value is None or not field.mapping(THROUGHPUT_KEYS):
        return None
    defaults = ThroughputFactors()
    gpu_nic = dict(defaults.gpu_nic)
    nic = field.get("gpuNic")
    if nic.present and nic.value is not None and nic.mapping(GPU_NIC_KEYS):
        for key, level in (("numaNode", Level.NUMA), ("none", Level.NONE)):
            value = nic.get(key).as_float(None, minimum=MIN_FACTOR, maximum=1.0)
            if value is not None:
                gpu_nic[level] = value
    cpu = field.get("cpuNuma").as_float(None, minimum=MIN_FACTOR, maximum=1.0)
    return ThroughputFactors(
        gpu_nic=MappingProxyType(gpu_nic), cpu_numa=cpu if cpu is not None else defaults.cpu_numa
    )


def _policy(name: str, field: Field, base: Path) -> PolicySpec:
    field.mapping(POLICY_KEYS)
    config = field.get("schedulerConfig")
    raw: Any = None
    if isinstance(config.value, str):
        path = base / config.value
        try:
            raw = load_yaml(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:  # ValueError: undecodable text, a NUL in the path
            config.error(f"cannot read KubeSchedulerConfiguration {path}: {err}")
        except yaml.YAMLError as err:
            config.error(f"KubeSchedulerConfiguration {path}: {describe_yaml_error(err)}")
    elif config.present and config.value is not None and config.mapping():
        raw = config.value
    return PolicySpec(
        name=name,
        base=field.get("base").as_str("fair") or "fair",
        queues=field.get("queues").as_bool(None),
        fair_sharing=field.get("fairSharing").as_bool(None),
        preemption=field.get("preemption").as_bool(None),
        consolidation=field.get("consolidation").as_bool(None),
        reservations=field.get("reservations").as_bool(None),
        quota_holds=field.get("quotaHolds").as_bool(None),
        scheduler_config=raw,
        description=field.get("description").as_str("") or "",
        path=field.path,
    )


def _load_files(field: Field, base: Path, scenario: Scenario, reader: Reader) -> None:
    paths: list[Path] = []
    for item in field.items():
        value = item.as_str()
        if value is not None:
            paths.append(base / value)
    if not paths:
        return
    try:
        scenario.manifests.extend(load_paths(paths))
    except ManifestErrors as failure:
        reader.errors.extend(failure.errors)


def _cluster(field: Field, scenario: Scenario, base: Path, reader: Reader, max_nodes: int) -> None:
    if not field.mapping(CLUSTER_KEYS):
        return
    _load_files(field.get("manifests"), base, scenario, reader)
    presets = field.get("presets")
    room = max_nodes - len(scenario.manifests.of_kind(Node))
    if room < 0:
        field.get("manifests").error(too_many("nodes", max_nodes - room, max_nodes, "--max-nodes"))
        return
    asked = _preset_nodes(presets)
    if asked > room:
        presets.error(too_many("nodes", max_nodes - room + asked, max_nodes, "--max-nodes"))
        return
    room -= asked
    if presets.present and presets.value is not None:
        try:
            objects = expand_specs(presets.value, where=presets.path)
        except PresetError as err:
            match = _WHERE.match(str(err))
            if match:
                reader.error(match.group(1), match.group(2))
            else:
                presets.error(str(err))
        else:
            _extend(scenario, objects, f"{reader.file}: {presets.path}")
    nodes = plain_nodes(field.get("nodes"), room)
    _extend(scenario, nodes, f"{reader.file}: cluster.nodes")
    for item in field.get("nodeEvents").items():
        if not item.mapping(("node", "down", "up")):
            item.error("expected {node, down, up?}")
            continue
        node = item.require("node", "the node's name").as_str()
        down = item.require("down", "when the node fails").as_duration()
        up = item.get("up").as_duration(None)
        if node and down is not None:
            if up is not None and up <= down:
                item.get("up").error(f"expected a time after down ({down:g}s), got {up:g}s")
                continue
            scenario.node_events.append(NodeEvent(node, down, up))


def _preset_nodes(presets: Field) -> int:
    """How many nodes the preset entries ask for, before any is made (their own checks come later)."""
    if not isinstance(presets.value, list):
        return 0
    counts = [e.get("nodes", 1) if isinstance(e, dict) else 0 for e in presets.value]
    return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c > 0)


def _extend(scenario: Scenario, objects: Sequence[Object], source: str) -> None:
    scenario.manifests.entries.extend(LoadedObject(o, Location(file=source)) for o in objects)


def _kueue(field: Field, scenario: Scenario, base: Path, reader: Reader) -> None:
    if not field.mapping(KUEUE_KEYS):
        return
    scenario.cohort = field.get("cohort").as_str("all") or "all"
    _load_files(field.get("manifests"), base, scenario, reader)
    objects = field.get("objects")
    if objects.present and objects.value is not None:
        if not isinstance(objects.value, list):
            objects.expected("a list of Kueue objects (as in manifests)")
            return
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects.value}, default=str)
        try:
            scenario.manifests.extend(load_text(text, f"{reader.file}: {objects.path}"))
        except ManifestErrors as failure:
            reader.errors.extend(failure.errors)


def _dns_label(field: Field, default: str | None = None) -> str | None:
    value = field.as_str(default)
    if value is not None and not _DNS_LABEL.match(value):
        field.error(f"expected a DNS label (lower-case letters, digits and '-'), got {value!r}")
        return None
    return value


def _tenant(field: Field) -> TenantSpec | None:
    if not field.mapping(TENANT_KEYS):
        field.error("expected a tenant mapping {name, namespace?, weight?, quota? ...}")
        return None
    name = _dns_label(field.require("name", "the tenant's name"))
    if name is None:
        return None
    namespace = _dns_label(field.get("namespace"), name) or name
    local_queue = _dns_label(field.get("localQueue"), name) or name
    cluster_queue = _dns_label(field.get("clusterQueue"), name) or name
    weight = field.get("weight").as_float(1.0, minimum=0.0, maximum=MAX_FACTOR)
    quota_field = field.get("quota")
    quota: dict[str, Quantity] | None = None
    if quota_field.present and quota_field.value is not None:
        quota = {}
        for key, item in quota_field.entries():
            value = item.as_quantity()
            if value is not None:
                quota[key] = value
    return TenantSpec(
        name=name,
        namespace=namespace,
        local_queue=local_queue,
        cluster_queue=cluster_queue,
        weight=weight if weight is not None else 1.0,
        trust=field.get("trust").as_str(name) or name,
        quota=quota,
        path=field.path,
    )


def _priorities(field: Field, *, workload: bool) -> list[PriorityClassSpec]:
    found: list[PriorityClassSpec] = []
    for item in field.items():
        if not item.mapping(("name", "value", "globalDefault")):
            item.error("expected {name, value, globalDefault?}")
            continue
        name = _dns_label(item.require("name", "the class's name"))
        value = item.require("value", "the priority, an integer").as_int(
            minimum=MIN_PRIORITY, maximum=MAX_PRIORITY
        )
        default = item.get("globalDefault").as_bool(False) or False
        if name is not None and value is not None:
            found.append(PriorityClassSpec(name, value, default, workload))
    return found


def _decode_list(field: Field, cls: type[Any], what: str) -> tuple[Any, ...]:
    values = []
    for item in field.items():
        try:
            values.append(decode(item.value, cls))
        except Exception as err:  # msgspec.ValidationError names the sub-field
            item.error(f"expected {what}: {err}")
    return tuple(values)


def _devices(field: Field) -> DeviceSpec | None:
    if not field.mapping(DEVICE_KEYS):
        if field.present and field.value is not None:
            return None
        return None
    share_field = field.get("gpuShare")
    share = None
    if share_field.mapping(("cores", "memory")):
        cores = share_field.get("cores").as_int(None, minimum=1)
        if cores is not None and cores > 100:
            share_field.get("cores").error(f"expected a percentage from 1 to 100, got {cores}")
            cores = None
        memory = share_field.get("memory").as_quantity()
        if cores is None and memory is None:
            share_field.error("expected cores (percent of the GPU) and/or memory (e.g. 10Gi)")
        share = GpuShare(cores, memory)
    alignment = field.get("alignment").as_str(None)
    spec = DeviceSpec(
        gpus=field.get("gpus").as_int(0, minimum=0, maximum=MAX_DEVICES_PER_POD) or 0,
        nics=field.get("nics").as_int(0, minimum=0, maximum=MAX_DEVICES_PER_POD) or 0,
        alignment=alignment,
        share=share,
        mig=field.get("mig").as_str(None),
        device_class=field.get("deviceClass").as_str(None),
    )
    if spec.gpus + spec.nics > MAX_DEVICES_PER_POD:
        field.error(f"expected at most {MAX_DEVICES_PER_POD} GPUs and NICs together (a claim's limit)")
    if spec.alignment not in (None, "preferred") and spec.nics and spec.gpus and spec.gpus % spec.nics:
        field.get("nics").error(
            f"expected a divisor of gpus ({spec.gpus}): each NIC is paired with gpus/nics GPUs"
        )
    if spec.share is not None and spec.mig is not None:
        field.error("gpuShare and mig are exclusive: a pod takes a share of a GPU or a MIG partition")
    if (spec.share is not None or spec.mig is not None) and spec.nics:
        field.get("nics").error("NICs go with whole GPUs; drop nics or use gpus")
    return spec


def _job(field: Field) -> JobTemplate | None:
    if not field.mapping(JOB_KEYS):
        field.error("expected a job template mapping {name, tenant, arrival, duration ...}")
        return None
    name = _dns_label(field.require("name", "the template's name"))
    tenant = field.require("tenant", "the tenant that submits these jobs").as_str()
    arrival_field = field.require("arrival", "{poisson: ...}, {times: [...]} or {bursts: [...]}")
    arrival = parse_arrival(arrival_field) if arrival_field.present else None
    count = field.get("count").as_int(None, minimum=1, maximum=MAX_COUNT)
    pods_field = field.get("pods")
    pods = (
        parse_distribution(pods_field, kind="number", minimum=1, maximum=MAX_PODS_PER_JOB)
        if pods_field.present
        else None
    )
    duration_field = field.require("duration", "how long each job runs once started")
    duration = (
        parse_distribution(duration_field, kind="duration", minimum=0.001, maximum=MAX_SECONDS)
        if duration_field.present
        else None
    )
    resources: dict[str, Quantity] = {}
    for key, item in field.get("resources").entries():
        value = item.as_quantity()
        if value is not None:
            resources[key] = value
    claim_field = field.get("claim")
    claim = None
    if claim_field.present and claim_field.value is not None:
        try:
            claim = decode(claim_field.value, ResourceClaimSpec)
        except Exception as err:
            claim_field.error(f"expected a ResourceClaim spec ({{devices: {{requests: [...]}}}}): {err}")
    devices = _devices(field.get("devices"))
    if claim is not None and devices is not None:
        field.get("claim").error(
            "give either devices (shorthand) or claim (a full ResourceClaim spec), not both"
        )
    if name is None or tenant is None or arrival is None or duration is None:
        return None
    return JobTemplate(
        name=name,
        tenant=tenant,
        arrival=arrival,
        count=count,
        pods=pods if pods is not None else Fixed(1.0),
        gang=field.get("gang").as_bool(None),
        duration=duration,
        priority_class=field.get("priority").as_str(None),
        workload_priority=field.get("workloadPriority").as_str(None),
        resources=resources,
        devices=devices,
        claim=claim,
        tolerations=_decode_list(
            field.get("tolerations"), Toleration, "a toleration {key, operator, value, effect}"
        ),
        node_selector=field.get("nodeSelector").as_string_map(),
        kind=field.get("kind").as_str(None),
        runtime_estimate=field.get("runtimeEstimate").as_duration(None, positive=True),
        path=field.path,
    )


def _trace(field: Field, base: Path) -> TraceSpec | None:
    if not field.present or field.value is None:
        return None
    if not field.mapping():
        return None
    kind = field.require("type", f"one of {', '.join(TRACE_KINDS)}").as_str()
    if kind is not None and kind not in TRACE_KINDS:
        field.get("type").error(f"expected one of {', '.join(TRACE_KINDS)}, got {kind!r}")
        return None
    file = field.get("file").as_str(None)
    if kind == "philly" and file is None:
        field.error("required: file (the Philly/Helios-style CSV)")
    options = {k: v for k, v in field.value.items() if k not in ("type", "file")}
    return TraceSpec(kind or "synthetic", str(base / file) if file else None, options)


def _cross_check(root: Field, scenario: Scenario, reader: Reader) -> None:
    tenants: dict[str, TenantSpec] = {}
    for tenant in scenario.tenants:
        if tenant.name in tenants:
            reader.error(f"{tenant.path}.name", f"duplicate tenant {tenant.name!r}")
        tenants[tenant.name] = tenant
    templates: set[str] = set()
    for job in scenario.jobs:
        if job.name in templates:
            reader.error(f"{job.path}.name", f"duplicate job template {job.name!r}")
        templates.add(job.name)
        if job.tenant not in tenants:
            known = ", ".join(sorted(tenants)) or "none defined"
            reader.error(f"{job.path}.tenant", f"unknown tenant {job.tenant!r}; tenants: {known}")
    if not scenario.jobs and scenario.trace is None and not reader.errors:
        reader.error("", "required: jobs (job templates) or trace")
    if scenario.jobs and scenario.trace is not None:
        reader.error("trace", "give either jobs or trace, not both")
    names = [p.name for p in scenario.priority_classes]
    for duplicate in {n for n in names if names.count(n) > 1}:
        reader.error("priorityClasses", f"duplicate priority class {duplicate!r}")

"""From a parsed `Scenario` to what the simulator runs: manifests, a workload, policies.

`prepare(scenario, seed=..., trace=..., policies=...)`:

1. Jobs: each job template gets its own random stream, seeded by
   (seed, template index), so adding a template does not change the jobs
   of the others; arrival times, pod counts and durations are drawn up
   front. A trace (`trace:` in the file or `--trace`) replaces the
   templates.
2. Objects: a ResourceClaimTemplate per template that asks for devices,
   PriorityClasses and WorkloadPriorityClasses, and the Kueue objects the
   tenants imply (`allot.sim.scenario.kueue`).
3. Policies: the names asked for (else the file's `compare`, else
   `fifo-priority,fair`), the file's own definitions first.

Problems (an unknown priority class, a policy that cannot run) are located
errors, raised together as ManifestErrors.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from allot.model.base import Object
from allot.model.core import (
    Node,
)
from allot.model.errors import Location, ManifestError, ManifestErrors
from allot.model.kueue import WorkloadPriorityClass
from allot.model.loader import LoadedObject, Manifests, load_text
from allot.model.resource import (
    DeviceClass,
    ResourceClaimSpec,
    ResourceClaimTemplate,
    ResourceSlice,
)
from allot.model.scheduling import PriorityClass
from allot.scheduling.profile import ProfileError
from allot.scheduling.profile_config import checked_profiles
from allot.sim.inventory import PLUGIN_GPU_RESOURCE
from allot.sim.limits import DEFAULT_LIMITS, MAX_PODS_PER_JOB, MAX_SECONDS, RunLimits, too_many
from allot.sim.policies import Policy, PolicyError, builtin
from allot.sim.scenario import devices as shorthand
from allot.sim.scenario.arrivals import Arrival, Bursts, Poisson, Times, arrival_times
from allot.sim.scenario.jobs import claim_template, prototype_pod, tenant_of, whole_gpus
from allot.sim.scenario.kueue import device_mappings, kueue_manifests, requested_resources
from allot.sim.scenario.reader import Reader
from allot.sim.scenario.schema import PolicySpec, Scenario, TraceSpec
from allot.sim.workload import Job, PodShape, Workload

DEFAULT_COMPARE = ("fifo-priority", "fair")
# Each policy is one more simulation of the whole workload.
MAX_POLICIES = 16


@dataclass
class Prepared:
    """Everything one `allot simulate` run needs."""

    scenario: Scenario
    manifests: Manifests
    workload: Workload
    policies: list[Policy]
    seed: int
    horizon: float | None


def _classes(manifests: Manifests) -> dict[str, DeviceClass]:
    return {c.name: c for c in manifests.of_kind(DeviceClass)}


def shared_gpu_memory(manifests: Manifests) -> int:
    """Memory of the largest shareable GPU (for GPU-equivalents of memory shares)."""
    best = 0
    for s in manifests.of_kind(ResourceSlice):
        for device in s.spec.devices:
            if device.allow_multiple_allocations and "memory" in device.capacity:
                best = max(best, device.capacity["memory"].value.value())
    return best or shorthand.DEFAULT_GPU_MEMORY


# -- job templates ------------------------------------------------------------------------


def template_workload(
    scenario: Scenario,
    seed: int,
    manifests: Manifests,
    horizon: float | None,
    limits: RunLimits = DEFAULT_LIMITS,
) -> Workload:
    """Jobs drawn from the scenario's templates (see the module docstring); a located error when
    they come to more jobs or pods than `limits` allow."""
    tenants = {t.name: tenant_of(t) for t in scenario.tenants}
    classes = set(_classes(manifests))
    gpu_memory = shared_gpu_memory(manifests)
    shapes: dict[str, PodShape] = {}
    jobs: list[Job] = []
    objects: list[Any] = []
    total_pods = 0
    reader = Reader(scenario.file, scenario.lines)
    for index, template in enumerate(scenario.jobs):
        tenant = tenants[template.tenant]
        claim = template.claim
        if claim is None and template.devices is not None:
            claim = shorthand.claim_spec(template.devices, classes)
        if claim is not None:
            objects.append(claim_template(template.name, tenant.namespace, claim))
        if (
            isinstance(template.arrival, Poisson)
            and template.count is None
            and template.arrival.stop is None
            and horizon is None
        ):
            reader.error(
                f"{template.path}.arrival", "a Poisson process needs stop, the template's count, or a horizon"
            )
            continue
        rng = np.random.default_rng([seed, index])
        room = limits.jobs - len(jobs)
        times = arrival_times(template.arrival, rng, count=template.count, horizon=horizon, cap=room)
        if times.size > room:
            known = _known_jobs(template.arrival, template.count)
            where = "count" if template.count is not None and template.count > room else "arrival"
            total = len(jobs) + known if known is not None else None
            reader.error(f"{template.path}.{where}", too_many("jobs", total, limits.jobs, "--max-jobs"))
            break
        pods = np.clip(np.rint(template.pods.sample(rng, times.size)), 1, MAX_PODS_PER_JOB).astype(int)
        total_pods += int(pods.sum())
        if total_pods > limits.pods:
            reader.error(f"{template.path}.pods", too_many("pods", total_pods, limits.pods, "--max-pods"))
            break
        durations = np.clip(template.duration.sample(rng, times.size), 0.001, MAX_SECONDS)
        gang_default = template.pods.mean() > 1
        gpus = (
            shorthand.gpu_equivalents(template.devices, gpu_memory)
            if template.devices is not None
            else (_claim_gpus(claim))
        )
        plugin = template.resources.get(PLUGIN_GPU_RESOURCE)
        if plugin is not None:
            gpus += plugin.value()
        shapes[template.name] = PodShape(
            name=template.name,
            tenant=tenant.name,
            prototype=prototype_pod(template, tenant, claim),
            gpus=gpus,
            kind=template.kind
            or shorthand.kind_of(template.devices, template.pods.mean(), bool(template.gang)),
        )
        width = max(4, len(str(times.size)))
        for k in range(times.size):
            count = int(pods[k])
            jobs.append(
                Job(
                    key=f"{tenant.namespace}/{template.name}-{k:0{width}d}",
                    tenant=tenant.name,
                    shape=template.name,
                    arrival=float(times[k]),
                    pods=count,
                    duration=float(durations[k]),
                    gang=template.gang if template.gang is not None else (gang_default and count > 1),
                )
            )
    reader.raise_if_errors()
    return Workload(tenants, shapes, jobs, objects)


def _known_jobs(arrival: Arrival, count: int | None) -> int | None:
    """How many jobs a template makes, when that is known without drawing them."""
    exact = len(arrival.times) if isinstance(arrival, Times) else None
    if isinstance(arrival, Bursts):
        exact = sum(burst.count for burst in arrival.bursts)
    if exact is not None and count is not None:
        return min(exact, count)
    return exact if exact is not None else count


def check_run_size(manifests: Manifests, workload: Workload, limits: RunLimits, *, where: Location) -> None:
    """ManifestErrors when the cluster or the workload is larger than `limits` allow."""
    problems: list[str] = []
    nodes = len(manifests.of_kind(Node))
    if nodes > limits.nodes:
        problems.append(too_many("nodes", nodes, limits.nodes, "--max-nodes"))
    if len(workload.jobs) > limits.jobs:
        problems.append(too_many("jobs", len(workload.jobs), limits.jobs, "--max-jobs"))
    pods = sum(job.pods for job in workload.jobs)
    if pods > limits.pods:
        problems.append(too_many("pods", pods, limits.pods, "--max-pods"))
    if problems:
        raise ManifestErrors([ManifestError(where, problem) for problem in problems])


def _claim_gpus(claim: ResourceClaimSpec | None) -> float:
    """GPU-equivalents of a full claim spec: its whole-GPU device count (shares and MIG count 1)."""
    if claim is None:
        return 0.0
    total = 0.0
    for request in claim.devices.requests:
        if request.exactly is not None and request.exactly.device_class_name != shorthand.RDMA_CLASS:
            total += request.exactly.count or 1
    return total


# -- objects --------------------------------------------------------------------------------


def _priority_docs(scenario: Scenario) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for spec in scenario.priority_classes:
        if spec.workload:
            docs.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "WorkloadPriorityClass",
                    "metadata": {"name": spec.name},
                    "value": spec.value,
                }
            )
        else:
            docs.append(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": spec.name},
                    "value": spec.value,
                    "globalDefault": spec.global_default,
                }
            )
    return docs


def _check_priorities(scenario: Scenario, manifests: Manifests, reader: Reader) -> None:
    classes = {p.name for p in manifests.of_kind(PriorityClass)}
    workload_classes = {p.name for p in manifests.of_kind(WorkloadPriorityClass)}
    for job in scenario.jobs:
        if job.priority_class and job.priority_class not in classes:
            known = ", ".join(sorted(classes)) or "none defined (priorityClasses)"
            reader.error(
                f"{job.path}.priority", f"unknown PriorityClass {job.priority_class!r}; known: {known}"
            )
        if job.workload_priority and job.workload_priority not in workload_classes:
            known = ", ".join(sorted(workload_classes)) or "none defined (workloadPriorityClasses)"
            reader.error(
                f"{job.path}.workloadPriority",
                f"unknown WorkloadPriorityClass {job.workload_priority!r}; known: {known}",
            )


def _policy(spec: PolicySpec, reader: Reader) -> Policy | None:
    try:
        base = builtin(spec.base)
    except PolicyError as err:
        reader.error(f"{spec.path}.base", str(err))
        return None
    profiles = base.profiles
    if spec.scheduler_config is not None:
        try:
            profiles = checked_profiles(
                spec.scheduler_config, source=f"{reader.file}: {spec.path}.schedulerConfig"
            )
        except ProfileError as err:
            reader.error(f"{spec.path}.schedulerConfig", str(err))
            return None
    return dataclasses.replace(
        base,
        name=spec.name,
        description=spec.description or f"{base.description} (customised)",
        queues=base.queues if spec.queues is None else spec.queues,
        fair_sharing=base.fair_sharing if spec.fair_sharing is None else spec.fair_sharing,
        preemption=base.preemption if spec.preemption is None else spec.preemption,
        consolidation=base.consolidation if spec.consolidation is None else spec.consolidation,
        reservations=base.reservations if spec.reservations is None else spec.reservations,
        quota_holds=base.quota_holds if spec.quota_holds is None else spec.quota_holds,
        profiles=profiles,
    )


def resolve_policies(scenario: Scenario, names: list[str] | None) -> list[Policy]:
    """The policies to run: `names`, else the file's `compare`, else fifo-priority and fair."""
    reader = Reader(scenario.file, scenario.lines)
    custom: dict[str, Policy] = {}
    for spec in scenario.policies:
        policy = _policy(spec, reader)
        if policy is not None:
            custom[spec.name] = policy
    wanted = names or scenario.compare or list(DEFAULT_COMPARE)
    where, option = ("compare", "") if not names else ("", "--compare: ")
    if len(set(wanted)) != len(wanted):
        reader.error(where, f"{option}each policy once, please: {', '.join(wanted)[:200]}")
    if len(wanted) > MAX_POLICIES:
        reader.error(where, f"{option}at most {MAX_POLICIES} policies side by side, got {len(wanted)}")
        wanted = []
    policies: list[Policy] = []
    for name in wanted:
        if name in custom:
            policies.append(custom[name])
            continue
        try:
            policies.append(builtin(name))
        except PolicyError as err:
            reader.error("compare" if not names else "", str(err))
    reader.raise_if_errors()
    if not policies:
        raise ManifestErrors([])
    return policies


CLUSTER_KINDS = (Node, ResourceSlice, DeviceClass)


def _replace_cluster(manifests: Manifests, cluster: list[Object]) -> Manifests:
    """The manifests with their Nodes, ResourceSlices and DeviceClasses replaced by `cluster`."""
    kept = [e for e in manifests.entries if not isinstance(e.obj, CLUSTER_KINDS)]
    added = [LoadedObject(o, Location(file="<trace cluster>")) for o in cluster]
    return Manifests(entries=[*added, *kept], skipped=list(manifests.skipped))


def _load_generated(docs: list[dict[str, Any]], source: str) -> Manifests:
    if not docs:
        return Manifests()
    return load_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}), source)


def prepare(
    scenario: Scenario,
    *,
    seed: int | None = None,
    trace: TraceSpec | None = None,
    policies: list[str] | None = None,
    horizon: float | None = None,
    limits: RunLimits = DEFAULT_LIMITS,
) -> Prepared:
    """Jobs, objects and policies for a run; ManifestErrors for anything that does not fit together
    or a run larger than `limits`."""
    from allot.sim.traces import trace_workload

    run_seed = scenario.seed if seed is None else seed
    # A trace given for this run brings its own time span: the file's horizon is for its jobs.
    run_horizon = horizon if horizon is not None or trace is not None else scenario.horizon
    manifests = Manifests(entries=list(scenario.manifests.entries), skipped=list(scenario.manifests.skipped))
    reader = Reader(scenario.file, scenario.lines)
    priority = _load_generated(_priority_docs(scenario), f"{scenario.file}: priorityClasses")
    manifests.extend(priority)
    _check_priorities(scenario, manifests, reader)
    nodes = {n.name for n in manifests.of_kind(Node)}
    for index, event in enumerate(scenario.node_events):
        if event.node not in nodes:
            reader.error(f"cluster.nodeEvents[{index}].node", f"no node named {event.node!r} in the cluster")
    reader.raise_if_errors()
    chosen = trace or scenario.trace
    origin = reader.location("trace") if trace is None else Location(file="--trace")
    if chosen is not None:
        workload = trace_workload(
            chosen, scenario, manifests, seed=run_seed, horizon=run_horizon, limits=limits, origin=origin
        )
        if workload.cluster is not None:
            manifests = _replace_cluster(manifests, workload.cluster)
    else:
        workload = template_workload(scenario, run_seed, manifests, run_horizon, limits)
    check_run_size(manifests, workload, limits, where=origin if chosen else Location(file=scenario.file))
    if run_horizon is not None:
        workload.jobs = [j for j in workload.jobs if j.arrival < run_horizon]
    classes = _classes(manifests)
    claim_specs = [o.spec.spec for o in workload.objects if isinstance(o, ResourceClaimTemplate)]
    mappings = device_mappings(claim_specs, classes)
    resources = requested_resources((s.prototype for s in workload.shapes.values()), mappings)
    quotas: Mapping[str, Any] = {t.name: t.quota for t in scenario.tenants}
    docs = kueue_manifests(
        tenants=list(workload.tenants.values()),
        quotas=quotas,
        existing=manifests,
        resources=resources,
        mappings=mappings,
        whole_gpus=whole_gpus(manifests),
        cohort=scenario.cohort,
    )
    manifests.extend(_load_generated(docs, f"{scenario.file}: generated Kueue objects"))
    return Prepared(
        scenario=scenario,
        manifests=manifests,
        workload=workload,
        policies=resolve_policies(scenario, policies),
        seed=run_seed,
        horizon=run_horizon,
    )

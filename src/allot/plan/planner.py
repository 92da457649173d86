"""The one-shot planner behind `allot place`: where would every pending pod go, and why not.

`plan(manifests)` builds the cluster (and, when ClusterQueues are present,
the Kueue admission state, starting from the workloads already running)
from manifests, runs engine cycles until nothing changes, and returns the
decisions with the resulting state. Preemption victims are deleted between
cycles, as the live driver deletes them. The planner's clock stands at the
dump's time (`dump_time`: the latest pod creation), so workloads admitted
now are more recent than those that already run. `explain`
re-runs one pending pod's cycle and adds, for each node the allocator
rejected, the allocator's own diagnosis. `resulting_objects` gives the
Pods (with nodeName) and ResourceClaims (with status.allocation and
reservedFor) in upstream form.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from msgspec.structs import replace

from allot.admission.jobs import is_placeholder, with_waiting_jobs
from allot.admission.state import AdmissionState
from allot.cluster.invariants import check
from allot.cluster.pod_index import claim_names
from allot.cluster.state import ClusterState
from allot.dra import AllocationError, Allocator, NoAllocation
from allot.engine.decisions import Admitted, Bound, CycleResult, Deallocated, Decision, Evicted, Waiting
from allot.engine.engine import Engine, EnginePolicy
from allot.model.base import Object
from allot.model.core import Pod, PodResourceClaimStatus
from allot.model.kueue import ClusterQueue, Topology
from allot.model.loader import Manifests
from allot.model.storage import ANN_SELECTED_NODE
from allot.model.timestamps import parse_timestamp
from allot.scheduling.profile import DEFAULT_SCHEDULER_NAME, Profile
from allot.scheduling.scheduler import Unschedulable
from allot.scheduling.status import Status

MAX_CYCLES = 20


@dataclass
class PlanResult:
    state: ClusterState
    engine: Engine
    decisions: list[Decision] = field(default_factory=list)
    # The last reason each still-pending pod got.
    waiting: dict[str, str] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    @property
    def bound(self) -> list[Bound]:
        return CycleResult(tuple(self.decisions)).bound

    @property
    def evicted(self) -> list[Evicted]:
        return CycleResult(tuple(self.decisions)).evicted

    @property
    def admitted(self) -> list[Admitted]:
        return CycleResult(tuple(self.decisions)).admitted


def dump_time(manifests: Manifests) -> float:
    """When the cluster was dumped, as far as it says: its latest pod creation (0 without any)."""
    times = (parse_timestamp(p.metadata.creation_timestamp) for p in manifests.of_kind(Pod))
    return max((t for t in times if t is not None), default=0.0)


def build_engine(
    manifests: Manifests,
    *,
    profiles: Mapping[str, Profile] | None = None,
    scheduler_name: str | None = None,
    queues: bool = True,
    now: float = 0.0,
    seed: int = 0,
) -> Engine:
    """A ClusterState (and AdmissionState when the manifests hold ClusterQueues) with an engine over them.

    `now` is when admission starts: workloads already running count as admitted by then. `seed`
    varies the tie-breaks among equally good nodes.
    """
    if queues and manifests.of_kind(ClusterQueue):
        # Suspended Jobs sent to a queue wait as their placeholder pods, as `allot run` has them.
        manifests = with_waiting_jobs(manifests)
    state = ClusterState.from_manifests(manifests)
    admission = None
    if queues and manifests.of_kind(ClusterQueue):
        admission = AdmissionState.from_cluster(manifests, state, start_time=now)
    known = dict(profiles) if profiles else {DEFAULT_SCHEDULER_NAME: Profile()}
    fallback = None if scheduler_name else next(iter(known))
    if scheduler_name and scheduler_name not in known:
        # A second scheduler runs the default profile under its own name.
        known[scheduler_name] = replace_profile_name(known[next(iter(known))], scheduler_name)
    return Engine(
        state,
        admission=admission,
        profiles=known,
        policy=EnginePolicy(queues=queues, scheduler_name=scheduler_name),
        fallback_profile=fallback,
        topologies=manifests.of_kind(Topology),
        seed=seed,
    )


def replace_profile_name(profile: Profile, name: str) -> Profile:
    return dataclasses.replace(profile, scheduler_name=name)


def plan(
    manifests: Manifests,
    *,
    profiles: Mapping[str, Profile] | None = None,
    scheduler_name: str | None = None,
    queues: bool = True,
    check_invariants: bool = False,
    seed: int = 0,
) -> PlanResult:
    """Place every pending pod the scheduler is responsible for; see the module docstring."""
    now = dump_time(manifests)
    engine = build_engine(
        manifests, profiles=profiles, scheduler_name=scheduler_name, queues=queues, now=now, seed=seed
    )
    result = PlanResult(engine.state, engine)
    for _ in range(MAX_CYCLES):
        outcome = engine.cycle(now)
        result.decisions.extend(d for d in outcome.decisions if not isinstance(d, Waiting))
        for decision in outcome.decisions:
            if isinstance(decision, Waiting):
                result.waiting[decision.pod] = decision.reason
            elif isinstance(decision, Bound):
                result.waiting.pop(decision.pod, None)
            elif isinstance(decision, Evicted):
                _delete_victim(engine, decision.pod, now)
        if check_invariants:
            result.violations.extend(check(engine.state))
        if not outcome.bound and not outcome.evicted and not outcome.of(Deallocated):
            break
    result.waiting = engine.pending_reasons(result.waiting)
    return result


def _delete_victim(engine: Engine, pod_key: str, now: float) -> None:
    """A preemption victim is deleted, as kube-scheduler and `allot run` delete it (with the claims
    made for it), so the plan never places it again: a pod a controller would re-create comes back
    under a new name, which a plan cannot know."""
    info = engine.state.pods.get(pod_key)
    if info is None or is_placeholder(info.pod):
        # A suspended Job's stand-in: the Job is suspended again, nothing is deleted.
        return
    engine.state.remove_pod(pod_key)
    engine.pod_deleted(pod_key, now)


@dataclass(frozen=True, slots=True)
class NodeExplanation:
    node: str
    status: Status
    allocator: str = ""


@dataclass(frozen=True, slots=True)
class Explanation:
    pod: str
    summary: str
    nodes: tuple[NodeExplanation, ...]


def explain(result: PlanResult, pod_key: str) -> Explanation:
    """Why `pod_key` is where it is, or per node why it fits nowhere."""
    state = result.state
    info = state.pods.get(pod_key)
    evicted = [e for e in result.evicted if e.pod == pod_key]
    if info is None and evicted:
        last = evicted[-1]
        return Explanation(pod_key, f"preempted for {last.preemptor} ({last.reason}) and deleted", ())
    if info is None:
        raise KeyError(f"no pod {pod_key!r}; pods are named namespace/name")
    if info.node is not None:
        node = state.nodes.infos[info.node].name
        return Explanation(pod_key, f"bound to {node}", ())
    with state.journal.transaction():
        outcome = result.engine.scheduler.place(pod_key)
    if not isinstance(outcome, Unschedulable):
        reason = result.waiting.get(pod_key, "")
        return Explanation(pod_key, f"fits on {outcome.node} now; it waits because: {reason}", ())
    claims = [state.claims[key] for _, key in info.claims if key in state.claims]
    unallocated = [c for c in claims if c.status.allocation is None]
    allocator = Allocator(state.classes, state.slices, features=state.features)
    nodes: list[NodeExplanation] = []
    for name, status in sorted(outcome.diagnosis.node_statuses.items()):
        detail = ""
        if status.plugin == "DynamicResources" and unallocated:
            index = state.nodes.index[name]
            try:
                allocation = allocator.allocate(state.nodes.infos[index].node, unallocated, state.allocated)
            except AllocationError as failure:
                detail = failure.message
            else:
                if isinstance(allocation, NoAllocation):
                    detail = allocation.node_error or allocation.diagnosis.text()
        nodes.append(NodeExplanation(name, status, detail))
    return Explanation(pod_key, outcome.message, tuple(nodes))


def resulting_objects(result: PlanResult) -> list[Object]:
    """Pods with spec.nodeName and ResourceClaims with status, for every pod placed by this plan;
    with the PersistentVolumeClaims (and the volumes) their placement bound or sent to
    provisioning (`volume.kubernetes.io/selected-node`)."""
    state = result.state
    placed = {d.pod for d in result.bound}
    objects: list[Object] = []
    claim_keys: set[str] = set()
    volume_claims: set[str] = set()
    for key in sorted(placed):
        info = state.pods[key]
        if info.node is None or is_placeholder(info.pod):
            # A Job's placeholder: the Job is started, its pods placed when they exist.
            continue
        node = state.nodes.infos[info.node].name
        pod: Pod = info.pod
        statuses = pod.status.resource_claim_statuses
        generated = {
            entry: state.claims[claim_key].name
            for entry, claim_key in info.claims
            if claim_key in state.claims
            and any(e.name == entry and e.resource_claim_template_name for e in pod.spec.resource_claims)
        }
        if generated:
            statuses = tuple(
                PodResourceClaimStatus(name=e, resource_claim_name=n) for e, n in sorted(generated.items())
            )
        objects.append(
            replace(
                pod,
                spec=replace(pod.spec, node_name=node),
                status=replace(pod.status, resource_claim_statuses=statuses),
            )
        )
        claim_keys.update(k for _, k in info.claims if k in state.claims)
        volume_claims.update(k for k in claim_names(pod) if k in state.storage.claims)
    objects.extend(state.claims[k] for k in sorted(claim_keys))
    storage = state.storage
    claims = [storage.claims[k] for k in sorted(volume_claims)]
    decided = [c for c in claims if c.spec.volume_name or ANN_SELECTED_NODE in c.metadata.annotations]
    objects.extend(decided)
    objects.extend(
        storage.volumes[name]
        for name in sorted({c.spec.volume_name for c in decided if c.spec.volume_name})
        if name in storage.volumes
    )
    return objects

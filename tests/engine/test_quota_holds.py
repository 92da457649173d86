"""Quota holds: the blocked head of the least-served queue keeps freed cohort quota until it fits."""

from __future__ import annotations

from allot.admission.config import AdmissionConfig
from allot.admission.state import AdmissionState
from allot.cluster.invariants import check
from allot.cluster.state import ClusterState
from allot.engine.decisions import CycleResult
from allot.engine.engine import Engine, EnginePolicy, QueueingConfig
from allot.model.core import Pod
from allot.model.loader import load_text

# One 16-CPU node. a (7 CPUs of nominal quota) borrows 4 of what b (9) lends; c has no quota of
# its own. c's 4-CPU job, once admitted, would borrow as much as a borrows now, so Kueue's
# fair-sharing preemption takes nothing for it (its share after admission would not be below a's).
FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
"""


def queue(name: str, nominal: int, namespace: str) -> str:
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  cohortName: all
  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {namespace}}}}}
  preemption: {{withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{{name: cpu, nominalQuota: "{nominal}"}}]
---
apiVersion: v1
kind: Namespace
metadata: {{name: {namespace}, labels: {{kubernetes.io/metadata.name: {namespace}}}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: q, namespace: {namespace}}}
spec: {{clusterQueue: {name}}}
"""


NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "16", memory: 64Gi, pods: "110"}}
"""


def pod(name: str, namespace: str, cpu: int) -> Pod:
    (found,) = load_text(
        f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""
    ).objects
    assert isinstance(found, Pod)
    return found


def engine(*, holds: bool, hints: bool = True) -> Engine:
    manifests = load_text(
        "\n---\n".join([FLAVOR, queue("a", 7, "ta"), queue("b", 9, "tb"), queue("c", 0, "tc"), NODE])
    )
    state = ClusterState.from_manifests(manifests)
    admission = AdmissionState.from_manifests(
        manifests, journal=state.journal, config=AdmissionConfig(fair_sharing=True)
    )
    policy = EnginePolicy(quota_holds=holds, queueing=QueueingConfig.exact(hints=hints))
    return Engine(state, admission=admission, policy=policy)


def started(result: CycleResult) -> list[str]:
    return sorted(d.pod for d in result.bound)


def finish(e: Engine, pod_key: str, now: float) -> None:
    e.state.drop_pod(pod_key)
    e.pod_deleted(pod_key, now)


def run(*, holds: bool, hints: bool = True) -> tuple[list[list[str]], list[dict[str, str]], Engine]:
    """a runs 11 one-CPU pods (4 borrowed), b 5: the node is full. Then c asks for 4 CPUs and a
    for 4 more one-CPU pods; a's running pods end two at a time."""
    e = engine(holds=holds, hints=hints)
    for i in range(11):
        e.state.add_pod(pod(f"run-{i}", "ta", 1))
    for i in range(5):
        e.state.add_pod(pod(f"b-{i}", "tb", 1))
    starts = [started(e.cycle(0.0))]
    e.state.add_pod(pod("big", "tc", 4))
    for i in range(4):
        e.state.add_pod(pod(f"more-{i}", "ta", 1))
    first = e.cycle(1.0)
    starts.append(started(first))
    reasons: list[dict[str, str]] = []
    for step, now in enumerate((2.0, 3.0)):
        for i in (2 * step, 2 * step + 1):
            finish(e, f"ta/run-{i}", now)
        result = e.cycle(now)
        starts.append(started(result))
        reasons.append({d.pod: d.reason for d in result.waiting})
        assert check(e.state) == []
    return starts, reasons, e


def test_without_holds_the_borrower_takes_every_freed_cpu_and_the_large_job_starves() -> None:
    starts, _, _ = run(holds=False)
    assert len(starts[0]) == 16 and starts[1] == []
    # Kueue's order: a's one-CPU pods borrow less after admission than c's job would, so they
    # win each freed CPU; c's job never has the 4 CPUs it needs.
    assert starts[2] == ["ta/more-0", "ta/more-1"]
    assert starts[3] == ["ta/more-2", "ta/more-3"]


def test_a_hold_keeps_freed_quota_for_the_least_served_queue_and_admits_it() -> None:
    starts, reasons, e = run(holds=True)
    assert len(starts[0]) == 16 and starts[1] == []
    # a is more served than c (it borrows, c holds nothing): a may not borrow the freed CPUs.
    assert starts[2] == []
    assert "quota held for a workload of a less-served ClusterQueue (tc/big)" in reasons[0]["ta/more-0"]
    # Four CPUs are free: c's job starts; the hold ends with it.
    assert starts[3] == ["tc/big"]
    assert not e.holds_quota("tc/big")


def test_a_workload_admitted_on_held_quota_is_not_taken_back_by_fair_sharing() -> None:
    _, _, e = run(holds=True)
    # c now borrows 4 and a nothing: Kueue's LessThanInitialShare would let a's next pod preempt
    # c's job at once. Admitted on quota kept for it, the job runs; a waits for quota to free.
    result = e.cycle(4.0)
    assert not result.evicted and e.state.pods["tc/big"].bound


def test_a_queue_reclaiming_its_nominal_quota_still_preempts_a_protected_workload() -> None:
    _, _, e = run(holds=True)
    # b runs 5 of its 9 CPUs; four more keep it within nominal: lent quota is always reclaimed.
    for i in range(4):
        e.state.add_pod(pod(f"reclaim-{i}", "tb", 1))
    result = e.cycle(4.0)
    assert [d.pod for d in result.evicted] == ["tc/big"]
    assert started(result) == [f"tb/reclaim-{i}" for i in range(4)]


def test_a_queue_within_its_nominal_quota_is_never_refused() -> None:
    e = engine(holds=True)
    for i in range(11):
        e.state.add_pod(pod(f"run-{i}", "ta", 1))
    for i in range(5):
        e.state.add_pod(pod(f"b-{i}", "tb", 1))
    e.cycle(0.0)
    e.state.add_pod(pod("big", "tc", 4))
    e.cycle(1.0)
    # b's pod ends and b asks for another: b is within its nominal 9, which is guaranteed to it.
    finish(e, "tb/b-0", 2.0)
    e.state.add_pod(pod("b-again", "tb", 1))
    assert started(e.cycle(2.0)) == ["tb/b-again"]


def test_no_hold_where_no_queue_is_more_served() -> None:
    # c alone asks: nobody borrows, so there is nothing to hold against and nothing is refused.
    e = engine(holds=True)
    e.state.add_pod(pod("big", "tc", 20))
    e.state.add_pod(pod("small", "ta", 1))
    result = e.cycle(0.0)
    assert started(result) == ["ta/small"]
    assert e._quota_holds == {}


def test_holds_decide_the_same_with_and_without_queueing_hints() -> None:
    # Holds are chosen from the admission state: retrying everything every cycle changes nothing.
    with_hints, reasons, _ = run(holds=True, hints=True)
    every_cycle, reasons_every_cycle, _ = run(holds=True, hints=False)
    assert with_hints == every_cycle
    assert [sorted(r) for r in reasons] == [sorted(r) for r in reasons_every_cycle]

"""Admission benchmark: ordering + flavor assignment + admit over a large queue.

Run `python benchmarks/bench_admission.py` (with `src` on the path or allot
installed). Builds 100 ClusterQueues in 10 cohorts (two flavors each, cpu /
memory / GPU quotas, reclaimWithinCohort), 1,000 LocalQueues and 50,000
pending workloads of random shape (seeded), then runs engine cycles where
placement always succeeds: every yielded candidate is assigned, and admitted
if it fits or parked otherwise; heads that cannot fit are parked by
`candidates` itself. A decision is one workload admitted or parked. Then a
second phase finishes admitted workloads one by one and admits what their
freed quota lets in (requeue on event). It prints, per mode (classic, fair
sharing, fair sharing with admission fair sharing), e.g.

    admission decisions 50000 pending 100 cq 1000 lq  classic       12345 decisions/s  (admitted 9000, 1.2 s)
    admission churn     2000 finishes                 classic        3456 decisions/s

and the process's peak resident memory. Figures from noisy machines: compare
within one run.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from allot.admission import (
    AdmissionConfig,
    AdmissionState,
    AfsConfig,
    Mode,
    ParkReason,
    PodSet,
    Workload,
)
from allot.model.codec import decode
from allot.model.kueue import ClusterQueue, Cohort, LocalQueue, ResourceFlavor

GPU = "nvidia.com/gpu"


def objects(cohorts: int, per_cohort: int, lqs_per_cq: int, afs: bool) -> tuple[list, list, list, list]:
    flavors = [
        decode({"metadata": {"name": name}, "spec": {"nodeLabels": {"pool": name}}}, ResourceFlavor)
        for name in ("on-demand", "spot")
    ]
    cqs, cohort_objs, lqs = [], [], []
    for c in range(cohorts):
        cohort_objs.append(decode({"metadata": {"name": f"cohort-{c}"}, "spec": {}}, Cohort))
        for q in range(per_cohort):
            name = f"cq-{c}-{q}"
            quotas = []
            for flavor, scale in (("on-demand", 1), ("spot", 2)):
                quotas.append(
                    {
                        "name": flavor,
                        "resources": [
                            {"name": "cpu", "nominalQuota": str(64 * scale)},
                            {"name": "memory", "nominalQuota": f"{256 * scale}Gi"},
                            {"name": GPU, "nominalQuota": str(8 * scale)},
                        ],
                    }
                )
            spec = {
                "cohortName": f"cohort-{c}",
                "namespaceSelector": {},
                "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU], "flavors": quotas}],
                "preemption": {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority"},
            }
            if afs:
                spec["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
            cqs.append(decode({"metadata": {"name": name}, "spec": spec}, ClusterQueue))
            for lq in range(lqs_per_cq):
                lqs.append(
                    decode(
                        {"metadata": {"name": f"lq-{lq}", "namespace": name}, "spec": {"clusterQueue": name}},
                        LocalQueue,
                    )
                )
    return cqs, cohort_objs, lqs, flavors


def workloads(n: int, cqs: list[ClusterQueue], lqs_per_cq: int, seed: int) -> list[Workload]:
    rng = random.Random(seed)
    result = []
    for i in range(n):
        cq = cqs[rng.randrange(len(cqs))].name
        lq = f"lq-{rng.randrange(lqs_per_cq)}"
        gpus = rng.choice((0, 0, 1, 1, 2, 4))
        requests = {
            "cpu": rng.choice((500, 1000, 2000, 4000, 8000)),
            "memory": rng.choice((1, 4, 16, 32)) << 30,
        }
        if gpus:
            requests[GPU] = gpus
        count = rng.choice((1, 1, 1, 2, 4))
        result.append(
            Workload(
                key=f"{cq}/w{i}",
                namespace=cq,
                name=f"w{i}",
                queue_name=lq,
                pod_sets=(PodSet("main", count, requests),),
                priority=rng.choice((0, 0, 1, 2, 3)),
                created=float(i),
            )
        )
    return result


def cycle(state: AdmissionState, now: float) -> tuple[int, int]:
    """One engine cycle with placement that always succeeds: (admitted, parked by the engine)."""
    admitted = parked = 0
    for candidate in state.candidates(now):
        assignment = state.assign(candidate.workload)
        if assignment.mode is Mode.FIT:
            with state.journal.transaction() as tx:
                state.admit(candidate.workload, assignment, now)
                tx.commit()
            admitted += 1
        else:
            state.park(candidate.workload, ParkReason.quota(assignment.message()))
            parked += 1
    return admitted, parked


def run(mode: str, args: argparse.Namespace) -> None:
    fair = mode != "classic"
    afs = mode == "fair+afs"
    cqs, cohorts, lqs, flavors = objects(args.cohorts, args.per_cohort, args.lqs_per_cq, afs)
    config = AdmissionConfig(
        fair_sharing=fair, afs=AfsConfig(half_life=600.0, sampling_interval=60.0) if afs else None
    )
    state = AdmissionState(
        cluster_queues=cqs, cohorts=cohorts, local_queues=lqs, flavors=flavors, config=config
    )
    pending = workloads(args.workloads, cqs, args.lqs_per_cq, args.seed)
    for w in pending:
        state.submit(w)
    start = time.perf_counter()
    now = 0.0
    admitted = 0
    while True:
        now += 1.0
        got, _ = cycle(state, now)
        admitted += got
        if not got:
            break
    elapsed = time.perf_counter() - start
    decided = admitted + sum(q.parked_count() for q in state.queues.values())
    label = f"admission decisions {args.workloads} pending {len(cqs)} cq {len(lqs)} lq"
    print(f"{label}  {mode:<9} {decided / elapsed:>9.0f} decisions/s  (admitted {admitted}, {elapsed:.2f} s)")
    # Churn: finish admitted workloads one at a time; each finish requeues the parked
    # workloads of its cohort tree, and the next cycle admits what fits.
    running = sorted(k for k, e in state.entries.items() if e.state == "Admitted")
    rng = random.Random(args.seed + 1)
    rng.shuffle(running)
    finishes = min(args.finishes, len(running))
    start = time.perf_counter()
    decisions = 0
    for key in running[:finishes]:
        now += 1.0
        state.finish(key, now)
        got, parked = cycle(state, now)
        decisions += got + parked
    elapsed = time.perf_counter() - start
    if finishes:
        print(
            f"admission churn     {finishes} finishes{'':<27}{mode:<9} {decisions / elapsed:>9.0f} decisions/s  "
            f"({decisions} decisions, {elapsed:.2f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=50_000)
    parser.add_argument("--cohorts", type=int, default=10)
    parser.add_argument("--per-cohort", type=int, default=10)
    parser.add_argument("--lqs-per-cq", type=int, default=10)
    parser.add_argument("--finishes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--modes", default="classic,fair,fair+afs")
    args = parser.parse_args()
    for mode in args.modes.split(","):
        run(mode, args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak resident memory {peak / 1024:.0f} MiB")


if __name__ == "__main__":
    main()

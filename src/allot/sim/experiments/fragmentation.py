"""The FGD paper's fragmentation experiment on openb, run through allot's scheduler.

Protocol (research/sharing.md 1.6 and 1.8, the authors' simulator):

1. Cluster: the 1,213 GPU nodes (6,212 GPUs) of the node list; node names
   get a random prefix permutation per seed, as the simulator does.
2. Per seed: the pods sorted by name, shuffled with the seed, then tuned
   to 130 % of the cluster's GPU capacity: below it, pods drawn uniformly
   with replacement from the original trace are appended (`<pod>-tuned-<i>`)
   until the next would overshoot (judged, as the simulator does, by its
   per-GPU share); above it, random pods are removed until
   at most 130 % remain. Appended pods are not reshuffled.
3. Pods are placed one at a time in that order, with no departures, by
   allot's Scheduler with one profile: the default filters, GpuPlacement
   (the policy under test) and every node scored (percentageOfNodesToScore
   100); GpuIsolation with `trustDomain: any`, as the paper lets any pods
   share a GPU. Ties go to the first node by name, so the seed's name permutation
   decides them, as in the simulator (whose results depend on it: with
   ties broken at random per decision, FGD opens every 8-GPU node and
   leaves about 10.7 % unallocated instead of 4.8 %). A pod that does not
   fit is dropped.
4. After each pod: arrived GPU milli (placed or not) and allocated GPU
   milli. The curve is unallocated GPU % = 100 - allocated / capacity, read
   at each integer percent of arrived load (0-130; the first pod at or
   past it); the table reports it at 100 %, mean and sd over seeds.

FGD's target workload is the task classes of the original trace (before
tuning), CPU-only pods included, popularity threshold 95 %. Go's random
streams cannot be replayed in Python, so numbers agree with the paper
within the seed spread, not digit for digit.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from allot.cluster.state import ClusterState
from allot.scheduling.profile import Profile
from allot.scheduling.scheduler import Placement, Scheduler
from allot.scheduling.sharing.demand import request_of
from allot.scheduling.sharing.policies import WORKLOAD_POLICIES
from allot.scheduling.sharing.workload import ClassKey, TargetWorkload
from allot.sim.openb.cluster import NAMESPACE, claim_template, templates, to_cluster, to_pod
from allot.sim.openb.trace import EXPERIMENT_TRACES, OpenbNode, OpenbPod, read_nodes, read_pods
from allot.sim.ray_pool import ray_map

FloatArray = npt.NDArray[np.float64]

CAPACITY_RATIO = 1.3
PAPER_SEEDS = tuple(range(42, 52))
PAPER_POLICIES = ("Random", "DotProduct", "Clustering", "Packing", "BestFit", "FGD")
# The paper's six and allot's own.
ALL_POLICIES = (*PAPER_POLICIES, "FGDPlus")
PROFILE = "openb-experiment"
GRID = np.arange(0, 131, dtype=np.int64)
TRACES = EXPERIMENT_TRACES
# Non-zero CPU, as kube-scheduler's scorers and the FGD simulator count a pod that asks for none.
DEFAULT_CPU_MILLI = 100

# The paper's table (research/sharing.md 1.7): unallocated GPU % at arrived = 100 %, mean and sd
# over seeds 42-51, per trace and policy (DotProd is DotProduct here).
PAPER: dict[str, dict[str, tuple[float, float]]] = {
    "default": {
        "Random": (13.70, 0.33),
        "DotProduct": (9.38, 0.19),
        "Clustering": (8.35, 0.61),
        "Packing": (8.22, 0.53),
        "BestFit": (7.14, 0.14),
        "FGD": (4.77, 0.11),
    },
    "cpu050": {
        "Random": (10.98, 0.26),
        "DotProduct": (6.97, 0.19),
        "Clustering": (6.48, 0.34),
        "Packing": (6.54, 0.32),
        "BestFit": (6.44, 0.13),
        "FGD": (5.00, 0.11),
    },
    "cpu100": {
        "Random": (12.57, 0.28),
        "DotProduct": (8.27, 0.27),
        "Clustering": (7.58, 0.40),
        "Packing": (7.50, 0.42),
        "BestFit": (6.74, 0.13),
        "FGD": (4.79, 0.14),
    },
    "cpu200": {
        "Random": (16.97, 0.27),
        "DotProduct": (12.55, 0.61),
        "Clustering": (10.33, 0.38),
        "Packing": (10.02, 0.48),
        "BestFit": (7.85, 0.21),
        "FGD": (5.18, 0.16),
    },
    "cpu250": {
        "Random": (20.00, 0.33),
        "DotProduct": (16.43, 0.45),
        "Clustering": (12.25, 0.61),
        "Packing": (11.95, 0.68),
        "BestFit": (8.79, 0.25),
        "FGD": (6.80, 0.29),
    },
    "gpushare40": {
        "Random": (15.14, 0.34),
        "DotProduct": (10.70, 0.14),
        "Clustering": (10.24, 0.62),
        "Packing": (10.23, 0.53),
        "BestFit": (8.56, 0.20),
        "FGD": (6.04, 0.07),
    },
    "gpushare60": {
        "Random": (17.19, 0.35),
        "DotProduct": (13.18, 0.28),
        "Clustering": (13.10, 0.41),
        "Packing": (12.85, 0.37),
        "BestFit": (10.94, 0.18),
        "FGD": (8.75, 0.13),
    },
    "gpushare80": {
        "Random": (19.38, 0.28),
        "DotProduct": (15.86, 0.19),
        "Clustering": (15.50, 0.54),
        "Packing": (15.35, 0.50),
        "BestFit": (13.34, 0.24),
        "FGD": (10.92, 0.11),
    },
    "gpushare100": {
        "Random": (21.10, 0.15),
        "DotProduct": (18.02, 0.30),
        "Clustering": (17.78, 0.51),
        "Packing": (17.87, 0.50),
        "BestFit": (15.38, 0.22),
        "FGD": (13.36, 0.16),
    },
    "gpuspec10": {
        "Random": (13.74, 0.25),
        "DotProduct": (9.83, 0.39),
        "Clustering": (8.04, 0.71),
        "Packing": (7.76, 0.65),
        "BestFit": (6.90, 0.21),
        "FGD": (5.34, 0.19),
    },
    "gpuspec20": {
        "Random": (14.10, 0.35),
        "DotProduct": (11.71, 0.17),
        "Clustering": (10.89, 0.21),
        "Packing": (10.72, 0.25),
        "BestFit": (11.54, 0.12),
        "FGD": (5.34, 0.13),
    },
    "gpuspec25": {
        "Random": (14.58, 0.34),
        "DotProduct": (14.56, 0.16),
        "Clustering": (13.59, 0.29),
        "Packing": (13.23, 0.35),
        "BestFit": (14.33, 0.20),
        "FGD": (6.09, 0.11),
    },
    "gpuspec33": {
        "Random": (16.13, 0.26),
        "DotProduct": (20.18, 0.25),
        "Clustering": (18.91, 0.22),
        "Packing": (17.78, 0.39),
        "BestFit": (19.61, 0.27),
        "FGD": (12.16, 0.18),
    },
    "multigpu20": {
        "Random": (13.08, 0.52),
        "DotProduct": (8.15, 0.32),
        "Clustering": (6.66, 0.60),
        "Packing": (6.50, 0.64),
        "BestFit": (6.27, 0.25),
        "FGD": (4.47, 0.16),
    },
    "multigpu30": {
        "Random": (13.37, 0.47),
        "DotProduct": (6.89, 0.31),
        "Clustering": (5.45, 0.32),
        "Packing": (5.30, 0.32),
        "BestFit": (5.43, 0.24),
        "FGD": (3.64, 0.10),
    },
    "multigpu40": {
        "Random": (14.62, 0.76),
        "DotProduct": (5.96, 0.22),
        "Clustering": (4.65, 0.30),
        "Packing": (4.41, 0.31),
        "BestFit": (4.90, 0.23),
        "FGD": (3.09, 0.10),
    },
    "multigpu50": {
        "Random": (18.72, 0.83),
        "DotProduct": (5.27, 0.20),
        "Clustering": (4.31, 0.28),
        "Packing": (3.94, 0.31),
        "BestFit": (4.38, 0.18),
        "FGD": (2.91, 0.11),
    },
}


@dataclass(frozen=True, slots=True)
class RunSpec:
    trace: str
    policy: str
    seed: int
    # Only the first `max_pods` pods of the tuned workload (quick runs, tests); None = all.
    max_pods: int | None = None


@dataclass(slots=True)
class RunResult:
    trace: str
    policy: str
    seed: int
    capacity_milli: int
    pods: int
    placed: int
    seconds: float
    # Unallocated GPU % at each integer percent of arrived load (GRID); NaN where never reached.
    curve: FloatArray = field(default_factory=lambda: np.full(GRID.size, np.nan))

    def unallocated_at(self, percent: int = 100) -> float:
        return float(self.curve[percent])

    @property
    def reached(self) -> int:
        """The highest arrived-load percent the run recorded (about 130 for a whole run)."""
        finite = np.flatnonzero(np.isfinite(self.curve))
        return int(GRID[finite[-1]]) if finite.size else 0


def tuned_workload(
    pods: Sequence[OpenbPod], seed: int, capacity_milli: int, ratio: float = CAPACITY_RATIO
) -> list[tuple[str, OpenbPod]]:
    """(name, row) in arrival order: sorted by name, shuffled, tuned to `ratio` x capacity (module docstring)."""
    rng = np.random.default_rng(seed)
    ordered = sorted(pods, key=lambda p: p.name)
    order = rng.permutation(len(ordered))
    arrivals: list[tuple[str, OpenbPod]] = [(ordered[i].name, ordered[i]) for i in order]
    target = int(ratio * capacity_milli)
    total = sum(p.gpu_request_milli for _, p in arrivals)
    if total < target:
        copies: Counter[str] = Counter()
        while True:
            pod = ordered[int(rng.integers(len(ordered)))]
            # The simulator checks the per-GPU share here (and adds the whole request below).
            if total + (pod.gpu_milli if pod.num_gpu else 0) > target:
                break
            total += pod.gpu_request_milli
            arrivals.append((f"{pod.name}-tuned-{copies[pod.name]}", pod))
            copies[pod.name] += 1
    while total > target and arrivals:
        index = int(rng.integers(len(arrivals)))
        total -= arrivals.pop(index)[1].gpu_request_milli
    return arrivals


def target_workload(
    pods: Sequence[OpenbPod], threshold: float = 95.0, gpu_weight: float = 0.0
) -> TargetWorkload:
    """FGD's task classes of the original trace (CPU-only pods included).

    `gpu_weight` w counts a pod as 1 + w x its GPUs (the simulator's
    `gpuResWeight`, there for whole-GPU pods only): 0 is the paper's setting.
    """
    counts: dict[ClassKey, float] = {}
    specs = {t.metadata.name: t.spec.spec for t in templates(pods)}
    for pod in pods:
        request = None
        if pod.num_gpu > 0 and pod.gpu_milli > 0:
            request = request_of(specs[claim_template(pod).metadata.name])
        key = (pod.cpu_milli or DEFAULT_CPU_MILLI, request)
        counts[key] = counts.get(key, 0.0) + 1.0 + gpu_weight * pod.gpu_request_milli / 1000
    return TargetWorkload.from_counts(counts, threshold)


def profile(
    policy: str, seed: int, workload: TargetWorkload | None, extra: dict[str, Any] | None = None
) -> Profile:
    # No preemption here, so pods without GPU room anywhere can be turned away in pre-filter.
    args: dict[str, Any] = {
        "policy": policy,
        "seed": seed,
        "tieBreak": "name",
        "rejectInPreFilter": True,
        **(extra or {}),
    }
    if workload is not None:
        args["targetWorkload"] = workload
    # The FGD paper packs any pods onto one GPU: no trust domains (openb's pods share one
    # namespace anyway), stated here rather than left to the default profile's isolation.
    return Profile(
        scheduler_name=PROFILE,
        filters=(
            "NodeUnschedulable",
            "TaintToleration",
            "NodeAffinity",
            "NodeResourcesFit",
            "GpuPlacement",
            "GpuIsolation",
        ),
        score_weights={"GpuPlacement": 1000},
        percentage_of_nodes_to_score=100,
        plugin_args={"GpuPlacement": args, "GpuIsolation": {"trustDomain": "any"}},
    )


def node_names(nodes: Sequence[OpenbNode], seed: int) -> list[str]:
    """The simulator's random prefix permutation of node names."""
    rank = np.random.default_rng(seed + 1_000_003).permutation(len(nodes))
    return [f"{int(r):04d}-{n.name}" for r, n in zip(rank, nodes, strict=True)]


@cache
def _nodes() -> tuple[OpenbNode, ...]:
    return tuple(read_nodes())


@cache
def _pods(trace: str) -> tuple[OpenbPod, ...]:
    return tuple(read_pods(trace))


@cache
def _workload(trace: str, threshold: float = 95.0, gpu_weight: float = 0.0) -> TargetWorkload:
    return target_workload(_pods(trace), threshold, gpu_weight)


def planned_pods(spec: RunSpec) -> int:
    """How many pods the run places: the tuned workload, or its first `max_pods`."""
    capacity = sum(n.gpus for n in _nodes()) * 1000
    planned = len(tuned_workload(_pods(spec.trace), spec.seed, capacity))
    return planned if spec.max_pods is None else min(planned, spec.max_pods)


def run(
    spec: RunSpec, *, progress: Callable[[int, int], None] | None = None, extra: dict[str, Any] | None = None
) -> RunResult:
    """One (trace, policy, seed) run; `progress(done, total)` is called every 500 pods."""
    nodes = _nodes()
    pods = _pods(spec.trace)
    capacity = sum(n.gpus for n in nodes) * 1000
    arrivals = tuned_workload(pods, spec.seed, capacity)
    if spec.max_pods is not None:
        arrivals = arrivals[: spec.max_pods]
    k8s_nodes, slices, classes = to_cluster(nodes, node_names(nodes, spec.seed))
    state = ClusterState(
        nodes=k8s_nodes, slices=slices, classes=classes, templates=templates(pods), pod_mutators=()
    )
    workload = None
    if spec.policy in WORKLOAD_POLICIES:
        options = {**WORKLOAD_OPTIONS.get(spec.policy, {}), **(extra or {})}
        workload = _workload(
            spec.trace, float(options.get("popularityThreshold", 95.0)), float(options.get("gpuWeight", 0.0))
        )
    scheduler = Scheduler(state, {PROFILE: profile(spec.policy, spec.seed, workload, extra)})
    arrived = np.zeros(len(arrivals), dtype=np.int64)
    allocated = np.zeros(len(arrivals), dtype=np.int64)
    total_arrived = total_allocated = placed = 0
    start = time.perf_counter()
    for i, (name, row) in enumerate(arrivals):
        info = state.add_pod(to_pod(row, name=name, namespace=NAMESPACE, scheduler=PROFILE))
        total_arrived += row.gpu_request_milli
        if isinstance(scheduler.schedule(info.key), Placement):
            total_allocated += row.gpu_request_milli
            placed += 1
        arrived[i] = total_arrived
        allocated[i] = total_allocated
        if progress is not None and (i + 1) % 500 == 0:
            progress(i + 1, len(arrivals))
    seconds = time.perf_counter() - start
    return RunResult(
        trace=spec.trace,
        policy=spec.policy,
        seed=spec.seed,
        capacity_milli=capacity,
        pods=len(arrivals),
        placed=placed,
        seconds=seconds,
        curve=curve(arrived, allocated, capacity),
    )


def curve(arrived: npt.NDArray[np.int64], allocated: npt.NDArray[np.int64], capacity: int) -> FloatArray:
    """Unallocated GPU % at the first pod where arrived load reaches each grid percent."""
    result = np.full(GRID.size, np.nan)
    if arrived.size == 0:
        return result
    thresholds = GRID * capacity / 100.0
    index = np.searchsorted(arrived, thresholds, side="left")
    reached = index < arrived.size
    result[reached] = 100.0 - allocated[index[reached]] * 100.0 / capacity
    result[GRID == 0] = 100.0
    return result


# How each policy's target workload is built from the trace (the paper's setting unless listed).
WORKLOAD_OPTIONS: dict[str, dict[str, float]] = {}


def _run_quiet(spec: RunSpec) -> RunResult:
    return run(spec)


def run_all(
    specs: Sequence[RunSpec],
    *,
    jobs: int = 1,
    done: Callable[[RunResult], None] | None = None,
    ray_address: str | None = None,
) -> list[RunResult]:
    """Every run, in `jobs` processes or as tasks on the Ray cluster at `ray_address`;
    `done` is called as each finishes (any order)."""
    results: list[RunResult] = []
    if ray_address is not None:
        return ray_map(
            _run_quiet,
            list(specs),
            address=ray_address,
            on_result=(lambda _i, result: done(result)) if done is not None else None,
        )
    if jobs <= 1:
        for spec in specs:
            result = run(spec)
            results.append(result)
            if done is not None:
                done(result)
        return results
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for result in pool.map(_run_quiet, specs):
            results.append(result)
            if done is not None:
                done(result)
    return results


def specs(
    traces: Sequence[str], policies: Sequence[str], seeds: Sequence[int], max_pods: int | None = None
) -> Iterator[RunSpec]:
    for trace in traces:
        for policy in policies:
            for seed in seeds:
                yield RunSpec(trace, policy, seed, max_pods)


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the table: unallocated GPU % at `percent` arrived (100 % for the paper's), over seeds."""

    trace: str
    policy: str
    seeds: tuple[int, ...]
    mean: float
    sd: float
    paper: tuple[float, float] | None
    # The arrived-load percent the values are taken at (the paper's table: 100).
    percent: int = 100


def summarise(results: Sequence[RunResult], percent: int = 100) -> list[Row]:
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for result in results:
        groups.setdefault((result.trace, result.policy), []).append(result)
    rows: list[Row] = []
    for (trace, policy), runs in groups.items():
        values = np.array([r.unallocated_at(percent) for r in runs], dtype=np.float64)
        values = values[np.isfinite(values)]
        mean = float(values.mean()) if values.size else float("nan")
        sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
        # The paper's figures are at 100 % arrived; elsewhere there is nothing to compare with.
        paper = PAPER.get(trace, {}).get(policy) if percent == 100 else None
        rows.append(Row(trace, policy, tuple(sorted(r.seed for r in runs)), mean, sd, paper, percent))
    order = {t: i for i, t in enumerate(TRACES)}
    rows.sort(key=lambda r: (order.get(r.trace, len(order)), r.trace, r.policy))
    return rows

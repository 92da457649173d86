"""A Philly-style multi-tenant trace, generated: the stand-in for the published Philly replay.

The Philly replay that Gavel uses (Microsoft's Philly cluster, Jeon et al.,
"Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training
Workloads", USENIX ATC 2019) is not shipped with allot and cannot be
fetched here, so the benchmark replays a trace with its published shape,
generated from a seed:

* 13,716 jobs over 15 virtual clusters (the tenants); job counts per
  virtual cluster follow Zipf's law (weight 1/k), so a few clusters submit
  most of the work, as in Philly;
* GPUs per job: 1 (70 %), 2 (9 %), 4 (11 %), 8 (7 %), 16 (2 %), 32 (1 %);
  jobs wider than 8 GPUs become gangs of 8-GPU pods;
* run time: log-normal with a 20-minute median and sigma 1.8 (a heavy
  tail from seconds to days), clipped to [1 minute, 7 days];
* arrivals: a Poisson process whose rate follows a day-night cycle (twice
  as many submissions at the day's peak as at night) and whose mean
  offers `load` × `gpus` GPUs of work (default 1.3 × 160, the built-in
  scenario's cluster: long backlogs, where fair sharing matters).

The CSV has Philly's columns (`job_id,user,vc,gpu_num,cpu_num,submit_time,
duration`), so `allot simulate --trace philly:FILE` reads it as it would
read the real replay.

Run: python benchmarks/philly_like.py OUT.csv [--jobs N] [--seed S] [--load X] [--gpus G]
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

import numpy as np

JOBS = 13_716
VIRTUAL_CLUSTERS = 15
SEED = 14
GPU_SIZES = (1, 2, 4, 8, 16, 32)
GPU_PROBABILITIES = (0.70, 0.09, 0.11, 0.07, 0.02, 0.01)
MEDIAN_SECONDS = 20 * 60.0
SIGMA = 1.8
MIN_SECONDS, MAX_SECONDS = 60.0, 7 * 86_400.0
DAY = 86_400.0
CPUS_PER_GPU = 4


def generate(
    jobs: int = JOBS, *, seed: int = SEED, load: float = 1.3, gpus: int = 160, vcs: int = VIRTUAL_CLUSTERS
) -> list[tuple[str, str, str, int, int, float, float]]:
    """(job_id, user, vc, gpu_num, cpu_num, submit_time, duration) rows in submission order."""
    rng = np.random.default_rng([seed, 0x9B11])
    sizes = rng.choice(np.array(GPU_SIZES), size=jobs, p=np.array(GPU_PROBABILITIES))
    durations = np.clip(
        rng.lognormal(math.log(MEDIAN_SECONDS), SIGMA, jobs).round(), MIN_SECONDS, MAX_SECONDS
    )
    weights = 1.0 / np.arange(1, vcs + 1)
    owners = rng.choice(vcs, size=jobs, p=weights / weights.sum())
    # Mean arrival rate that offers `load` x `gpus` GPUs of work, then thinned by a day-night cycle.
    mean_rate = load * gpus / float(np.mean(sizes * durations))
    peak = mean_rate * 4 / 3  # rate(t) = peak * (0.75 + 0.25 sin): mean = 0.75 peak, night half the peak
    times: list[float] = []
    now = 0.0
    while len(times) < jobs:
        now += float(rng.exponential(1.0 / peak))
        if rng.random() < 0.75 + 0.25 * math.sin(2 * math.pi * now / DAY):
            times.append(now)
    rows = []
    for i in range(jobs):
        vc = f"vc{int(owners[i]):02d}"
        user = f"{vc}-user{int(rng.integers(20)):02d}"
        g = int(sizes[i])
        rows.append((f"job-{i:05d}", user, vc, g, g * CPUS_PER_GPU, round(times[i], 3), float(durations[i])))
    return rows


def write(path: Path, rows: list[tuple[str, str, str, int, int, float, float]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["job_id", "user", "vc", "gpu_num", "cpu_num", "submit_time", "duration"])
        out.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--load", type=float, default=1.3)
    parser.add_argument("--gpus", type=int, default=160)
    args = parser.parse_args()
    write(args.out, generate(args.jobs, seed=args.seed, load=args.load, gpus=args.gpus))


if __name__ == "__main__":
    main()

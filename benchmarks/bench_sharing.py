"""GPU-sharing placement on the openb trace: speed and quality of each policy, one figure per line.

The FGD paper's experiment for one seed: the 1,213 GPU nodes of openb, the
default trace tuned to 130 % of the cluster's GPU capacity, every pod
placed in turn through allot's Scheduler with GpuPlacement. Prints:

* seconds for the FGD run (cluster built, ~10.8k pods placed; target < 20 s)
  and the process's peak memory after it;
* seconds per policy;
* unallocated GPU % at 100 % arrived load per policy (paper: FGD 4.77).

Run: PYTHONPATH=src python benchmarks/bench_sharing.py [--trace default] [--seed 42]
"""

from __future__ import annotations

import argparse
import resource
import time

from allot.sim.experiments.fragmentation import ALL_POLICIES, PAPER, RunSpec, run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default="default")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    order = ["FGD", *(p for p in ALL_POLICIES if p != "FGD")]
    for policy in order:
        start = time.perf_counter()
        result = run(RunSpec(args.trace, policy, args.seed))
        seconds = time.perf_counter() - start
        if policy == "FGD":
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"sharing openb {args.trace} 130% FGD {result.pods} pods on 1213 nodes: "
                f"{seconds:.1f} s ({result.seconds:.1f} s placing), peak RSS {peak:.0f} MiB"
            )
        paper = PAPER.get(args.trace, {}).get(policy)
        reference = f" (paper {paper[0]:.2f})" if paper else ""
        print(
            f"sharing openb {args.trace} seed {args.seed} {policy:<10} {seconds:6.1f} s  "
            f"unallocated at 100% arrived {result.unallocated_at(100):5.2f} %{reference}  "
            f"placed {result.placed}/{result.pods}"
        )


if __name__ == "__main__":
    main()

"""Differential runs against the real kube-scheduler v1.36: record cases, compare allot, print figures.

    # record the test corpus (tests/differential/corpus), seeds 0-59, small clusters:
    KUBEBUILDER_ASSETS=$(../shared/k8s/install.sh) python benchmarks/differential.py record --seeds 0-59
    # fresh cases, larger clusters, not kept; prints agreement per feature:
    KUBEBUILDER_ASSETS=$(../shared/k8s/install.sh) python benchmarks/differential.py run --seeds 1000-1099 --size large
    # compare a recorded corpus again (no binaries needed):
    python benchmarks/differential.py compare [--corpus DIR] [--verbose]
    # the same generated cases played with `allot run` in kube-scheduler's place, each step held
    # to `allot place` from the same state (same node, devices, victims, message):
    KUBEBUILDER_ASSETS=$(../shared/k8s/install.sh) python benchmarks/differential.py live --seeds 7000-7039 --size large

What is generated, recorded and compared: docs/differential.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from controlplane import binaries_folder, skip_reason
from differential.case import CORPUS, Case, corpus_paths, load, save
from differential.compare import CaseReport, compare_case
from differential.figures import table
from differential.generate import generate


def seeds(text: str) -> list[int]:
    found: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        found.extend(range(int(low), int(high or low) + 1))
    return found


def record(seed_list: list[int], size: str, folder: Path | None, *, live: bool = False) -> list[Case]:
    """Play each seed's case on a fresh cluster (kube-scheduler, or `allot run` when `live`); save
    it in `folder` unless None."""
    from differential.allot_run import AllotRun
    from differential.runner import Recorder, start_plane

    if binaries_folder() is None:
        sys.exit(skip_reason())
    cases = []
    with tempfile.TemporaryDirectory(prefix="allot-differential-") as workdir:
        plane = start_plane(Path(workdir))
        recorder = Recorder(plane, AllotRun(plane) if live else None)
        try:
            for seed in seed_list:
                start = time.monotonic()
                case = recorder.record(generate(seed, size=size))
                if size != "small":
                    case.name = f"{case.name}-{size}"
                name = save(case, folder).name if folder is not None else case.name
                cases.append(case)
                placed = sum(s.node is not None for s in case.steps)
                print(f"recorded {name}: {placed}/{len(case.steps)} placed, {time.monotonic() - start:.1f} s",
                      flush=True)  # fmt: skip
        finally:
            recorder.close()
            plane.stop()
    return cases


def report(cases: list[Case], *, verbose: bool) -> list[CaseReport]:
    reports = []
    start = time.monotonic()
    for case in cases:
        result = compare_case(case, equivalent=True)
        reports.append(result)
        if verbose or result.failures():
            status = (
                "gated " + ",".join(result.gated) if result.gated else "FAIL" if result.failures() else "ok"
            )
            print(f"{case.name}: {status}")
            for failure in result.failures():
                print(f"    {failure}")
    elapsed = time.monotonic() - start
    steps = sum(len(c.steps) for c in cases)
    print(f"\ncompared {len(cases)} cases ({steps} steps) in {elapsed:.1f} s")
    supported = [r for r in reports if not r.gated]
    print(f"\ncases without gated features ({len(supported)}):")
    print(table(supported))
    gated = [r for r in reports if r.gated]
    if gated:
        print(f"\ncases with gated features ({len(gated)}; expected to disagree until the plugins land):")
        print(table(gated))
    return reports


def report_live(cases: list[Case]) -> int:
    """Each step `allot run` took against `allot place` from the same state; the number that differ."""
    from differential.allot_run import compare_live

    steps = differ = placed = preempting = pending = 0
    for case in cases:
        for step in compare_live(case):
            steps += 1
            placed += step.run_node is not None
            pending += step.run_node is None
            preempting += bool(step.run_victims)
            if step.differences():
                differ += 1
                print(f"{case.name} {step.pod}: " + "; ".join(step.differences()))
    print(
        f"\nallot run against allot place: {len(cases)} cases, {steps} steps ({placed} placed, "
        f"{preempting} of them by preemption, {pending} left pending): {steps - differ} agree on node, "
        f"devices, victims and message, {differ} differ"
    )
    return differ


def _stop(signum: int, frame: object) -> None:
    # SIGTERM ends the run through the finally clauses, so the control plane is stopped too.
    raise SystemExit(128 + signum)


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record cases into a corpus folder, then compare them")
    rec.add_argument("--seeds", default="0-59")
    rec.add_argument("--size", choices=("small", "large"), default="small")
    rec.add_argument("--out", type=Path, default=CORPUS)
    run = sub.add_parser("run", help="record fresh cases in a temporary folder and compare them")
    run.add_argument("--seeds", default="1000-1049")
    run.add_argument("--size", choices=("small", "large"), default="small")
    live = sub.add_parser("live", help="play fresh cases with allot run; hold each step to allot place")
    live.add_argument("--seeds", default="1000-1049")
    live.add_argument("--size", choices=("small", "large"), default="small")
    cmp = sub.add_parser("compare", help="compare a recorded corpus")
    cmp.add_argument("--corpus", type=Path, default=CORPUS)
    for p in (rec, run, cmp):
        p.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    if args.command == "live":
        return 1 if report_live(record(seeds(args.seeds), args.size, None, live=True)) else 0
    if args.command == "compare":
        cases = [load(p) for p in corpus_paths(args.corpus)]
    elif args.command == "record":
        cases = record(seeds(args.seeds), args.size, args.out)
    else:
        with tempfile.TemporaryDirectory(prefix="allot-differential-cases-") as folder:
            cases = record(seeds(args.seeds), args.size, Path(folder))
    reports = report(cases, verbose=args.verbose)
    return 1 if any(r.failures() and not r.gated for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())

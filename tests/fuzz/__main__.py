"""`python -m tests.fuzz [--scale N] [--all] [PYTEST ARGS...]`: the long, randomised fuzz run.

Runs the fuzz harness (tests/fuzz) and the in-process fuzzers (tests/model/test_fuzz.py,
tests/sim/test_fuzz.py, tests/robust) under the `fuzz` hypothesis profile: new random examples on
every run, `--scale` times as many as CI draws (default 25), each case under the harness's memory
ceiling. `--all` runs every property test of the suite that way. Failures are kept in the local
example database (.hypothesis/) and replay on the next run, fuzz profile or not.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
FUZZERS = ["fuzz", "model/test_fuzz.py", "sim/test_fuzz.py", "robust"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=25, help="examples per test, as a multiple of CI's")
    parser.add_argument("--all", action="store_true", help="every property test, not only the fuzzers")
    options, rest = parser.parse_known_args(argv)
    if options.scale < 1:
        parser.error("--scale: expected a positive integer")
    os.environ["ALLOT_HYPOTHESIS_PROFILE"] = "fuzz"
    os.environ["ALLOT_FUZZ_SCALE"] = str(options.scale)
    targets = [str(TESTS)] if options.all else [str(TESTS / target) for target in FUZZERS]
    return int(pytest.main([*targets, "-q", *rest]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The suite's property tests draw the same examples on every run unless the fuzz profile is chosen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import settings

from fuzzing import PROFILE_VARIABLE, examples

ROOT = Path(__file__).resolve().parent.parent


def test_the_default_profile_is_derandomised_and_bounded() -> None:
    if os.environ.get(PROFILE_VARIABLE, "ci") != "ci":
        return
    current = settings.default
    assert current.derandomize and current.database is None and current.deadline is None
    assert examples(40) == 40


def test_the_fuzz_profile_is_random_and_longer() -> None:
    code = (
        "import sys; sys.path.insert(0, 'tests'); import fuzzing; fuzzing.load_hypothesis_profile();"
        "from hypothesis import settings; s = settings.default;"
        "print(s.derandomize, fuzzing.examples(40) > 40)"
    )
    env = {**os.environ, PROFILE_VARIABLE: "fuzz"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["False", "True"], out.stderr

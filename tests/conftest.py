"""Suite-wide settings: hypothesis profiles (tests/fuzzing.py: a fixed, derandomised one by default, a long
randomised one for `python -m tests.fuzz`); the real control plane's fixtures (tests/controlplane)."""

from __future__ import annotations

from fuzzing import load_hypothesis_profile

pytest_plugins = ["controlplane.fixtures"]

load_hypothesis_profile()

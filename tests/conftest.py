"""Suite-wide settings: hypothesis profiles (tests/fuzzing.py: a fixed, derandomised one by default, a
long randomised one for `python -m tests.fuzz`); the real control plane's fixtures (tests/controlplane);
long test files first."""

from __future__ import annotations

import pytest

from fuzzing import load_hypothesis_profile

pytest_plugins = ["controlplane.fixtures"]

load_hypothesis_profile()


# Files that take a minute or more: run first, so that under `-n 2 --dist loadfile` (pyproject's
# addopts) the two workers do not end on one long file while the other sits idle.
LONG_FILES = (
    "tests/live/test_faults.py",
    "tests/sim/test_hints_equivalence.py",
    "tests/sim/test_monopolisation.py",
    "tests/sharing/test_experiment.py",
    "tests/sim/test_ray.py",
    "tests/fuzz/test_fuzz_cli.py",
    "tests/dashboard/test_live_dashboard.py",
    "tests/live/test_devices.py",
    "tests/live/test_kueue.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.path.as_posix()
        return next((i for i, name in enumerate(LONG_FILES) if path.endswith(name)), len(LONG_FILES))

    items.sort(key=rank)  # stable: the order within a file, and of the other files, is kept

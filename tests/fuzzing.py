"""Shared by the property and fuzz tests: hypothesis profiles, a memory ceiling, and random structural
mutations of parsed YAML documents.

Profiles (chosen with the environment variable ALLOT_HYPOTHESIS_PROFILE):

* `ci`, the default: derandomised (every run draws the same examples, so the suite passes or fails
  the same way on one commit), no example database, no deadline, and each test's own bounded
  number of examples;
* `fuzz`, for `python -m tests.fuzz`: new random examples on every run, FUZZ_SCALE times as many
  (ALLOT_FUZZ_SCALE, default 25), failures kept in the local example database so they replay.
"""

from __future__ import annotations

import copy
import os
import resource
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROFILE_VARIABLE = "ALLOT_HYPOTHESIS_PROFILE"
FUZZ_SCALE = int(os.environ.get("ALLOT_FUZZ_SCALE", "25"))
# What a fuzzed input may add to the process's address space before it counts as runaway memory.
MEMORY_CEILING = 2 << 30


def profile() -> str:
    return os.environ.get(PROFILE_VARIABLE, "ci")


def load_hypothesis_profile() -> None:
    settings.register_profile(
        "ci", derandomize=True, database=None, deadline=None, max_examples=100, print_blob=True
    )
    settings.register_profile(
        "fuzz",
        derandomize=False,
        deadline=None,
        max_examples=100 * FUZZ_SCALE,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    if profile() not in ("ci", "fuzz"):
        raise ValueError(f"{PROFILE_VARIABLE}: expected ci or fuzz, got {profile()!r}")
    settings.load_profile(profile())


def examples(count: int) -> int:
    """A test's number of examples: `count` in CI, FUZZ_SCALE times more under the fuzz profile."""
    return count * FUZZ_SCALE if profile() == "fuzz" else count


@contextmanager
def memory_ceiling(extra: int = MEMORY_CEILING) -> Iterator[None]:
    """Let the process grow by at most `extra` bytes of address space inside the block (RLIMIT_AS):
    a runaway allocation raises MemoryError there instead of exhausting the machine."""
    statm = Path("/proc/self/statm")
    if not statm.exists():
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    ceiling = int(statm.read_text().split()[0]) * resource.getpagesize() + extra
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


ACTIONS = ("delete", "odd", "retype", "duplicate", "rename")


def containers(node: Any, found: list[Any]) -> list[Any]:
    """Every dict and list inside `node`, depth first."""
    if isinstance(node, dict | list):
        found.append(node)
        for child in node.values() if isinstance(node, dict) else node:
            containers(child, found)
    return found


def mutate_tree(
    draw: st.DrawFn, root: Any, odd_values: Sequence[Any], actions: Sequence[str] = ACTIONS
) -> None:
    """Apply 1-4 random edits in place: delete a key, put an odd value in, wrap or flatten a value,
    duplicate a list entry, rename a key."""
    for _ in range(draw(st.integers(1, 4))):
        target = draw(st.sampled_from(containers(root, [])))
        if not target:
            continue
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        key = draw(st.sampled_from(keys))
        action = draw(st.sampled_from(list(actions)))
        if action == "delete":
            del target[key]
        elif action == "odd":
            target[key] = copy.deepcopy(draw(st.sampled_from(list(odd_values))))
        elif action == "retype":
            value = target[key]
            target[key] = [value] if not isinstance(value, list) else str(value)
        elif action == "duplicate" and isinstance(target, list):
            target.insert(key, copy.deepcopy(target[key]))
        elif action == "rename" and isinstance(target, dict):
            target[str(key) + draw(st.sampled_from(["X", "_", ".", "/x"]))] = target.pop(key)

"""Upper bounds on every number in a scenario or trace, and on the size of a run.

Field bounds are checked when a file or option is read, and a value past
one is a located error (file, line, field). They are far beyond anything a
real cluster or trace needs; their job is to keep a typo or a fuzzer from
asking for 2^70 of something:

| what | bound |
|---|---|
| durations, times, horizon, spreads, start/stop | finite, at most `MAX_SECONDS` (10 years) |
| arrival rates | positive, at most `MAX_RATE` per second |
| a template's `count`, a burst's `count`, trace `jobs`/`limit` | at most `MAX_COUNT` |
| pods per job (values and samples of `pods`) | 1 to `MAX_PODS_PER_JOB` |
| GPUs and NICs per pod (`devices`) | at most `MAX_DEVICES_PER_POD` together (a claim's limit) |
| device-plugin GPUs per plain node, pods per node | at most `MAX_GPUS_PER_NODE`, `MAX_PODS_PER_NODE` |
| seeds | 0 to `MAX_SEED` (2^64 - 1) |
| weights, shares, loads, scales | finite, at most `MAX_FACTOR` |
| lognormal sigma | at most `MAX_SIGMA` |
| priority values | `MIN_PRIORITY` to `MAX_PRIORITY` (PriorityClass's range) |
| CPUs per GPU, GPUs per node in traces | at most `MAX_GPUS_PER_NODE` |

Samples of open-ended distributions (lognormal, exponential) are clipped
to their field's bound.

The run's size is checked before the simulation starts, as soon as it is
known: nodes when the cluster is read, jobs while they are drawn (never
more than one past the limit is drawn), pods once the jobs are. A run past
`RunLimits` is refused with an error that names the option that raises the
limit (`--max-nodes`, `--max-jobs`, `--max-pods`).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_SECONDS = 10 * 365 * 86400.0
MAX_RATE = 1_000_000.0
MAX_COUNT = 10_000_000
MAX_PODS_PER_JOB = 10_000
MAX_DEVICES_PER_POD = 32
MAX_GPUS_PER_NODE = 1024
MAX_PODS_PER_NODE = 1_000_000
MAX_SEED = 2**64 - 1
MAX_FACTOR = 1e9
MAX_SIGMA = 10.0
MIN_PRIORITY = -(2**31)
MAX_PRIORITY = 1_000_000_000

DEFAULT_MAX_NODES = 10_000
DEFAULT_MAX_JOBS = 100_000
DEFAULT_MAX_PODS = 1_000_000


@dataclass(frozen=True, slots=True)
class RunLimits:
    """The largest run `allot simulate` starts without being asked for more."""

    nodes: int = DEFAULT_MAX_NODES
    jobs: int = DEFAULT_MAX_JOBS
    pods: int = DEFAULT_MAX_PODS


def too_many(what: str, count: int | None, limit: int, option: str) -> str:
    """The message for a run past a limit: how many (None: not known exactly), the limit, and the
    option that raises it."""
    if count is None:
        return f"the run would have more {what} than the limit of {limit:,} (raise it with {option})"
    return f"the run would have {count:,} {what}, more than the limit of {limit:,} (raise it with {option})"


DEFAULT_LIMITS = RunLimits()

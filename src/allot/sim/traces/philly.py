"""Philly/Helios-style job CSVs: `job_id,user,vc,gpu_num,cpu_num,submit_time,duration,...`.

One row per job; the virtual cluster (`vc`) is the tenant (option
`tenant: user` uses the user column). `submit_time` is seconds or a date
and time (`2017-10-03 14:00:00`, ISO 8601); times are shifted so the first
submission is at 0. `duration` is the run time in seconds. Rows with no
duration (jobs that never ran) are skipped; extra columns are ignored.
Jobs asking for more GPUs than a node has become gangs of node-sized pods.

Options: `tenant` (vc | user), `limit` (read at most this many jobs),
`timeScale` (multiplies submit gaps and durations), `gpusPerNode` (8).
Bad rows are errors naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from allot.model.errors import Location, ManifestError, ManifestErrors
from allot.model.loader import Manifests
from allot.sim.limits import DEFAULT_LIMITS, MAX_FACTOR, MAX_GPUS_PER_NODE, MAX_SECONDS, RunLimits, too_many
from allot.sim.scenario.reader import short_repr
from allot.sim.scenario.schema import Scenario
from allot.sim.traces.common import GPUS_PER_NODE, TraceBuilder
from allot.sim.traces.options import TraceOptionError, TraceOptions
from allot.sim.workload import Workload

REQUIRED = ("job_id", "user", "vc", "gpu_num", "submit_time", "duration")
OPTIONS = ("tenant", "limit", "timeScale", "gpusPerNode")
MAX_ERRORS = 50
MAX_GPUS_PER_JOB = 100_000
MAX_CPUS_PER_JOB = 1_000_000
# Timestamps (seconds since 1970) of any trace fall far inside this; it keeps spans finite.
MAX_TIMESTAMP = 1e11


def _time(text: str) -> float | None:
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and abs(seconds) <= MAX_TIMESTAMP else None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError):
        return None


def _number(text: str, maximum: float) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    # Infinity and NaN are valid floats but no number of GPUs, CPUs or seconds.
    return value if math.isfinite(value) and 0 <= value <= maximum else None


def philly_workload(
    path: str,
    options: Mapping[str, Any],
    scenario: Scenario,
    manifests: Manifests,
    *,
    limits: RunLimits = DEFAULT_LIMITS,
) -> Workload:
    read = TraceOptions(options, OPTIONS)
    tenant_column = read.choice("tenant", "vc", ("vc", "user"))
    limit = read.integer("limit", None)
    scale = read.number("timeScale", 1.0, maximum=MAX_FACTOR)
    gpus_per_node = read.integer("gpusPerNode", GPUS_PER_NODE, maximum=MAX_GPUS_PER_NODE) or GPUS_PER_NODE
    errors: list[ManifestError] = []

    def error(line: int, column: str, message: str) -> None:
        errors.append(ManifestError(Location(file=f"{path}:{line}", field=column), message))

    try:
        handle = open(path, encoding="utf-8", newline="")  # noqa: SIM115  (closed below)
    except (OSError, ValueError) as err:  # ValueError: a NUL in the path
        raise ManifestErrors([ManifestError(Location(file=path), f"cannot read: {err}")]) from None
    rows: list[tuple[int, str, str, float, float, int, int]] = []
    try:
        with handle:
            reader = csv.DictReader(handle)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise ManifestErrors(
                    [
                        ManifestError(
                            Location(file=f"{path}:1"),
                            f"missing column(s) {', '.join(missing)}; expected {','.join(REQUIRED)},...",
                        )
                    ]
                )
            for line, row in enumerate(reader, start=2):
                if limit is not None and len(rows) >= limit:
                    break
                if len(rows) > limits.jobs:
                    raise TraceOptionError(too_many("jobs", len(rows), limits.jobs, "--max-jobs"))
                parsed = _row(row, line, tenant_column, error)
                if parsed is not None:
                    rows.append((line, *parsed))
                if len(errors) >= MAX_ERRORS:
                    break
    except (UnicodeDecodeError, csv.Error) as err:
        raise ManifestErrors([ManifestError(Location(file=path), f"cannot read as CSV: {err}")]) from None
    if errors:
        raise ManifestErrors(errors[:MAX_ERRORS])
    if not rows:
        raise ManifestErrors([ManifestError(Location(file=path), "no jobs with a duration in the file")])
    first = min(rows, key=lambda r: r[3])
    builder = TraceBuilder(scenario, manifests, gpus_per_node=gpus_per_node)
    for line, job_id, tenant, submit, duration, gpus, cpus in rows:
        arrival = (submit - first[3]) * scale
        if arrival > MAX_SECONDS:
            error(
                line,
                "submit_time",
                f"arrives {arrival:g} s after the first job (line {first[0]}), more than {MAX_SECONDS:g} s "
                "(10 years; timeScale included)",
            )
            if len(errors) >= MAX_ERRORS:
                break
            continue
        builder.add(job_id, tenant, arrival, min(duration * scale, MAX_SECONDS), gpus, cpus)
    if errors:
        raise ManifestErrors(errors[:MAX_ERRORS])
    return builder.workload()


def _row(
    row: dict[str, str | None], line: int, tenant_column: str, error: Callable[[int, str, str], None]
) -> tuple[str, str, float, float, int, int] | None:
    """One job from a row, or None (with errors recorded) when the row is bad or has no duration."""
    duration_text = (row.get("duration") or "").strip()
    if not duration_text:
        return None
    duration = _number(duration_text, MAX_SECONDS)
    gpus = _number(row.get("gpu_num") or "", MAX_GPUS_PER_JOB)
    cpus = _number(row.get("cpu_num") or "0", MAX_CPUS_PER_JOB) if row.get("cpu_num") else 0.0
    submit = _time(row.get("submit_time") or "")
    if duration is None:
        error(
            line, "duration", f"expected seconds from 0 to {MAX_SECONDS:g}, got {short_repr(duration_text)}"
        )
    if gpus is None or (gpus is not None and gpus != int(gpus)):
        error(
            line,
            "gpu_num",
            f"expected a whole number of GPUs from 0 to {MAX_GPUS_PER_JOB:,}, got {short_repr(row.get('gpu_num'))}",
        )
    if cpus is None:
        error(
            line,
            "cpu_num",
            f"expected a number of CPUs from 0 to {MAX_CPUS_PER_JOB:,}, got {short_repr(row.get('cpu_num'))}",
        )
    if submit is None:
        error(
            line,
            "submit_time",
            f"expected seconds or a date and time, got {short_repr(row.get('submit_time'))}",
        )
    if duration is None or gpus is None or cpus is None or submit is None or gpus != int(gpus):
        return None
    return (
        str(row.get("job_id") or ""),
        row.get(tenant_column) or "unknown",
        submit,
        duration,
        int(gpus),
        int(cpus),
    )

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
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from allot.model.errors import Location, ManifestError, ManifestErrors
from allot.model.loader import Manifests
from allot.sim.scenario.schema import Scenario
from allot.sim.traces.common import GPUS_PER_NODE, TraceBuilder
from allot.sim.workload import Workload

REQUIRED = ("job_id", "user", "vc", "gpu_num", "submit_time", "duration")


def _time(text: str) -> float | None:
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) else None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    # Infinity and NaN are valid floats but no number of GPUs, CPUs or seconds.
    return value if math.isfinite(value) and value >= 0 else None


def philly_workload(
    path: str, options: Mapping[str, Any], scenario: Scenario, manifests: Manifests
) -> Workload:
    tenant_column = str(options.get("tenant", "vc"))
    limit = options.get("limit")
    scale = float(options.get("timeScale", 1.0))
    errors: list[ManifestError] = []

    def error(line: int, column: str, message: str) -> None:
        errors.append(ManifestError(Location(file=f"{path}:{line}", field=column), message))

    if tenant_column not in ("vc", "user"):
        raise ManifestErrors([ManifestError(Location(file=path, field="tenant"), "expected vc or user")])
    try:
        handle = open(path, encoding="utf-8", newline="")  # noqa: SIM115  (closed below)
    except OSError as err:
        raise ManifestErrors([ManifestError(Location(file=path), f"cannot read: {err}")]) from None
    rows: list[tuple[str, str, float, float, int, int]] = []
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
            if limit is not None and len(rows) >= int(limit):
                break
            duration_text = (row.get("duration") or "").strip()
            if not duration_text:
                continue
            duration = _number(duration_text)
            gpus = _number(row.get("gpu_num") or "")
            cpus = _number(row.get("cpu_num") or "0") if row.get("cpu_num") else 0.0
            submit = _time(row.get("submit_time") or "")
            if duration is None:
                error(line, "duration", f"expected seconds, got {duration_text!r}")
            if gpus is None or (gpus is not None and gpus != int(gpus)):
                error(line, "gpu_num", f"expected a whole number of GPUs, got {row.get('gpu_num')!r}")
            if cpus is None:
                error(line, "cpu_num", f"expected a number of CPUs, got {row.get('cpu_num')!r}")
            if submit is None:
                error(
                    line,
                    "submit_time",
                    f"expected seconds or a date and time, got {row.get('submit_time')!r}",
                )
            if duration is None or gpus is None or cpus is None or submit is None:
                continue
            rows.append(
                (row["job_id"], row[tenant_column] or "unknown", submit, duration, int(gpus), int(cpus))
            )
    if errors:
        raise ManifestErrors(errors[:50])
    if not rows:
        raise ManifestErrors([ManifestError(Location(file=path), "no jobs with a duration in the file")])
    start = min(r[2] for r in rows)
    builder = TraceBuilder(scenario, manifests, gpus_per_node=int(options.get("gpusPerNode", GPUS_PER_NODE)))
    for job_id, tenant, submit, duration, gpus, cpus in rows:
        builder.add(job_id, tenant, (submit - start) * scale, duration * scale, gpus, cpus)
    return builder.workload()

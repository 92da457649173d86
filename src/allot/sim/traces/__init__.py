"""Workloads from traces: synthetic (Philly-like), Philly/Helios CSVs, and Alibaba's openb.

`trace_workload(spec, scenario, manifests, seed=..., horizon=...)` reads
the trace named by a `TraceSpec` (`trace:` in a scenario file, or
`--trace openb:default|philly:FILE|synthetic[:k=v,...]` on the command
line) into a `Workload`. Problems are ManifestErrors naming the file, line
and column, or the option.
"""

from __future__ import annotations

from allot.model.errors import Location, ManifestError, ManifestErrors
from allot.model.loader import Manifests
from allot.sim.limits import DEFAULT_LIMITS, RunLimits
from allot.sim.scenario.jobs import whole_gpus
from allot.sim.scenario.schema import Scenario, TraceSpec
from allot.sim.traces.openb import openb_workload
from allot.sim.traces.options import TraceOptionError
from allot.sim.traces.philly import philly_workload
from allot.sim.traces.synthetic import synthetic_workload
from allot.sim.workload import Workload


def trace_workload(
    spec: TraceSpec,
    scenario: Scenario,
    manifests: Manifests,
    *,
    seed: int,
    horizon: float | None,
    limits: RunLimits = DEFAULT_LIMITS,
    origin: Location | None = None,
) -> Workload:
    """The trace's workload; ManifestErrors located at `origin` (the scenario's `trace` field, or the
    --trace option) for a bad option, or at the trace file's line and column for a bad row."""
    where = origin if origin is not None else Location(file="--trace")
    try:
        if spec.kind == "synthetic":
            return synthetic_workload(
                spec.options, scenario, manifests, seed=seed, gpus=whole_gpus(manifests), limits=limits
            )
        if spec.kind == "philly":
            if spec.file is None:
                raise TraceOptionError("file: required: the Philly/Helios-style CSV")
            return philly_workload(spec.file, spec.options, scenario, manifests, limits=limits)
        if spec.kind == "openb":
            return openb_workload(
                spec.file or "default", spec.options, scenario, manifests, seed=seed, limits=limits
            )
    except TraceOptionError as err:
        raise ManifestErrors([ManifestError(where, f"trace {spec.kind}: {err}")]) from None
    raise ManifestErrors(
        [ManifestError(where, f"unknown trace {spec.kind!r}; expected synthetic, philly or openb")]
    )


def parse_trace_option(text: str) -> TraceSpec:
    """`openb:default`, `philly:FILE[,k=v...]`, `synthetic[:k=v,...]` as a TraceSpec; ValueError if malformed."""
    kind, _, rest = text.partition(":")
    kind = kind.strip()
    if kind not in ("synthetic", "philly", "openb"):
        raise ValueError(f"expected openb:default, philly:FILE or synthetic[:k=v,...], got {text!r}")
    parts = [p for p in rest.split(",") if p] if rest else []
    file: str | None = None
    options: dict[str, object] = {}
    for part in parts:
        if "=" in part:
            key, _, value = part.partition("=")
            options[key.strip()] = _value(value.strip())
        elif file is None and kind != "synthetic":
            file = part
        else:
            raise ValueError(f"--trace {text}: expected key=value, got {part!r}")
    if kind == "philly" and file is None:
        raise ValueError("--trace philly:FILE: the CSV file is required")
    return TraceSpec(kind, file, options)


def _value(text: str) -> object:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            continue
    return text

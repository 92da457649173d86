"""deploy/grafana/allot.json: a dashboard Grafana imports, whose every query names metrics allot exports.

Every PromQL expression (panel targets and template variables) is tokenised: a name followed by
`(` must be a PromQL function or aggregation, every other name a sample the scheduler's or the
agent's registry exposes (a counter's `_total`, a histogram's `_bucket`/`_sum`/`_count`), and
every label a selector or a grouping names must be one of that metric's labels. The registries
are allot's own (`allot.live.metrics.Metrics`, `allot.agent.metrics.AgentMetrics`), not a list
copied here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.metrics import MetricWrapperBase

from allot.agent.metrics import AgentMetrics
from allot.live.metrics import Metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "allot.json"

FUNCTIONS = {
    "sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "group",
    "count_values", "rate", "irate", "increase", "delta", "idelta", "deriv", "histogram_quantile",
    "clamp_min", "clamp_max", "clamp", "abs", "ceil", "floor", "round", "vector", "scalar", "time",
    "label_replace", "label_join", "avg_over_time", "max_over_time", "min_over_time", "sum_over_time",
    "count_over_time", "last_over_time", "absent", "sort", "sort_desc", "changes", "resets",
}  # fmt: skip
KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*")|(?P<range>\[[^\]]*\])|(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)'
    r"|(?P<number>\d+(?:\.\d+)?(?:e[+-]?\d+)?)|(?P<op>==|!=|=~|!~|[-+*/^(),{}=<>])|(?P<space>\s+)"
)


def exported() -> dict[str, frozenset[str]]:
    """Every sample name the scheduler and the agent expose, with its labels."""
    found: dict[str, frozenset[str]] = {}
    for owner in (Metrics(), AgentMetrics()):
        for collector in vars(owner).values():
            if not isinstance(collector, MetricWrapperBase):
                continue
            name, labels = collector._name, frozenset(collector._labelnames)
            suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
            for suffix in suffixes[collector._type]:
                found[name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return found


def tokens(expression: str) -> list[tuple[str, str]]:
    result: list[tuple[str, str]] = []
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if match is None:
            raise AssertionError(f"cannot read {expression[position:]!r} in {expression!r}")
        kind = match.lastgroup or ""
        if kind != "space":
            result.append((kind, match.group()))
        position = match.end()
    return result


def problems(expression: str, metrics: dict[str, frozenset[str]]) -> list[str]:
    """What in `expression` is not a PromQL function or an exported metric and its labels."""
    found: list[str] = []
    parts = tokens(expression)
    depth = 0
    used: list[str] = []  # metrics named in this expression
    grouped: list[str] = []  # labels named by by/without/on/ignoring
    i = 0
    while i < len(parts):
        kind, text = parts[i]
        following = parts[i + 1][1] if i + 1 < len(parts) else ""
        if kind == "name" and text in GROUPING and following == "(":
            i += 2
            while parts[i][1] != ")":
                if parts[i][0] == "name":
                    grouped.append(parts[i][1])
                i += 1
        elif kind == "name" and (following == "(" or following in GROUPING):
            if text not in FUNCTIONS:
                found.append(f"unknown function {text}")
        elif kind == "name" and text not in KEYWORDS and depth == 0:
            if text not in metrics:
                found.append(f"metric {text} is not exported by allot or its agent")
            else:
                used.append(text)
                if following == "{":
                    i += 2
                    while parts[i][1] != "}":
                        if parts[i][0] == "name" and parts[i][1] not in metrics[text]:
                            found.append(f"{text} has no label {parts[i][1]}")
                        i += 1
                    i += 1
                    continue
        elif text == "{":
            depth += 1
        elif text == "}":
            depth -= 1
        i += 1
    labels = set().union(*(metrics[m] for m in used)) if used else set()
    found.extend(f"no metric of {expression!r} has label {g}" for g in grouped if g not in labels)
    if not used:
        found.append(f"{expression!r} names no metric")
    return found


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    panels: list[dict[str, Any]] = []
    for panel in dashboard["panels"]:
        panels.append(panel)
        panels.extend(panel.get("panels", []))
    return panels


def _queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    found = [(p["title"], t["expr"]) for p in _panels(dashboard) for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            call = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["query"]["query"])
            assert call is not None, variable
            found.append((f"${variable['name']}", f"sum by ({call.group(2)}) ({call.group(1)})"))
    return found


def test_every_query_names_metrics_allot_exports() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    metrics = exported()
    queries = _queries(dashboard)
    assert len(queries) >= 30
    found = [f"{title}: {problem}" for title, expr in queries for problem in problems(expr, metrics)]
    assert found == []
    # Cluster, scheduling, queue and node panels, over both registries.
    named = {name for _, expr in queries for kind, name in tokens(expr) if kind == "name" and name in metrics}
    for wanted in ("allot_gpus", "scheduler_pending_pods", "allot_cluster_queue_weighted_share", "DCGM_FI_DEV_GPU_UTIL",
                   "allot_agent_device_healthy"):  # fmt: skip
        assert wanted in named


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("sum(allot_gpu_total)", "metric allot_gpu_total is not exported"),
        ('sum(allot_gpus{node="a"})', "allot_gpus has no label node"),
        ("sum by (zone) (allot_gpus)", "has label zone"),
        ("sum(avgg(allot_gpus))", "unknown function avgg"),
        ("rate(allot_bindings[5m])", "metric allot_bindings is not exported"),
    ],
)
def test_the_check_catches_a_query_allot_cannot_answer(expression: str, problem: str) -> None:
    assert any(problem in p for p in problems(expression, exported()))


def test_grafana_can_import_it() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    panels = _panels(dashboard)
    assert len({p["id"] for p in panels}) == len(panels)
    taken: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        cells = {(grid["y"] + dy, grid["x"] + dx) for dy in range(grid["h"]) for dx in range(grid["w"])}
        assert not cells & taken, f"{panel['title']} overlaps another panel"
        taken |= cells
        if panel["type"] != "row":
            # Every panel reads the datasource the dashboard's variable picks at import.
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
            assert all(t["refId"] for t in panel["targets"])
    assert {v["name"] for v in dashboard["templating"]["list"]} == {
        "datasource",
        "pool",
        "cluster_queue",
        "node",
    }

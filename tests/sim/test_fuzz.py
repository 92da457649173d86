"""Fuzzed scenario files and traces give located errors only.

Hypothesis mutates valid scenario files (the built-in one and a small one:
deletes keys, puts odd values in, changes types, renames keys, truncates
the text, inserts invalid YAML) and Philly CSV traces (odd cells, missing
columns, cut lines), then parses and prepares them as `allot simulate`
does. Preparing may succeed; if it fails, it raises `ManifestErrors` only,
and every error names the file. Never another exception.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allot.model.errors import ManifestErrors
from allot.sim.scenario.build import prepare
from allot.sim.scenario.parse import parse_scenario
from fuzzing import examples, memory_ceiling, mutate_tree

from .cases import SMALL

DEFAULT = (Path(__file__).resolve().parents[2] / "src/allot/sim/scenarios/default.yaml").read_text()
SOURCES = {"small": yaml.safe_load(SMALL), "default": yaml.safe_load(DEFAULT)}
FILE = "fuzzed.yaml"
ODD: list[Any] = [
    None,
    0,
    -1,
    2**70,
    1.5,
    float("nan"),
    True,
    "",
    "-5Gi",
    "1e99999",
    "x" * 200,
    [],
    {},
    [None],
]
ODD += ["10x", "-3h", "Ünïcode", {"unexpected": [1]}, "2026-03-09T11:00:42Z", "a/b"]
BROKEN_YAML = ["\n: - ]\t{", "\n- [", "\nkey: value: other\n", '\n"unterminated', "\n&a [*a]\n", "{"]


@st.composite
def mutated_scenario(draw: st.DrawFn) -> str:
    doc = copy.deepcopy(SOURCES[draw(st.sampled_from(sorted(SOURCES)))])
    mutate_tree(draw, doc, ODD)
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + (draw(st.sampled_from(BROKEN_YAML)) if draw(st.booleans()) else "")
    return text


def assert_located(failure: ManifestErrors, file: str) -> None:
    assert failure.errors
    for error in failure.errors:
        assert file in str(error), str(error)


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow])
@given(mutated_scenario())
def test_mutated_scenarios_prepare_or_give_located_errors(text: str) -> None:
    try:
        with memory_ceiling():
            prepare(parse_scenario(text, FILE), policies=["fair"])
    except ManifestErrors as failure:
        assert_located(failure, FILE)


PHILLY_HEADER = ["job_id", "user", "vc", "gpu_num", "cpu_num", "submit_time", "duration", "state"]
PHILLY_ROWS = [
    ["j1", "u1", "vc-a", "1", "4", "2017-10-03 14:00:00", "600", "Pass"],
    ["j2", "u2", "vc-b", "16", "32", "2017-10-03 14:05:00", "1200", "Pass"],
    ["j3", "u2", "vc-b", "2", "8", "2017-10-03 14:06:00", "", "Killed"],
]
ODD_CELLS = ["", "-1", "one", "1e400", "nan", "2017-13-45 99:99:99", "x" * 100, '"', "1.5", "0"]


@st.composite
def mutated_philly(draw: st.DrawFn) -> str:
    header = list(PHILLY_HEADER)
    rows = [list(r) for r in PHILLY_ROWS]
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["cell", "drop-column", "cut-row", "extra-cell"]))
        if action == "cell":
            row = draw(st.sampled_from(rows))
            if row:
                row[draw(st.integers(0, len(row) - 1))] = draw(st.sampled_from(ODD_CELLS))
        elif action == "drop-column" and len(header) > 1:
            column = draw(st.integers(0, len(header) - 1))
            del header[column]
            for row in rows:
                if column < len(row):
                    del row[column]
        elif action == "cut-row":
            row = draw(st.sampled_from(rows))
            del row[draw(st.integers(0, len(row))) :]
        else:
            draw(st.sampled_from(rows)).append("surplus")
    return "\n".join(",".join(r) for r in [header, *rows]) + "\n"


SCENARIO_WITH_TRACE = """
name: trace
cluster:
  nodes:
  - {{count: 2, cpu: 64, memory: 512Gi, gpus: 8, namePrefix: gpu}}
trace: {{type: philly, file: {path}}}
"""


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(csv_text=mutated_philly())
def test_mutated_philly_traces_prepare_or_give_located_errors(tmp_path: Path, csv_text: str) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(csv_text)
    try:
        with memory_ceiling():
            prepare(parse_scenario(SCENARIO_WITH_TRACE.format(path=path), FILE), policies=["fair"])
    except ManifestErrors as failure:
        assert_located(failure, str(path))

"""Hypothesis strategies for every input kind allot reads: manifests, scenario files, traces, scheduler
configurations and command-line options, each drawn as a `Case` (a command line and its files).

Each strategy starts from valid input that runs quickly and mutates it: structural edits (keys deleted,
renamed, retyped, list entries duplicated), numbers and quantities replaced by values at or past the
limits the API server and allot document, text-level damage (a key written twice, a recursive alias,
truncation, invalid YAML). Options that scale the work (seeds, pods, jobs, nodes) are drawn either
small or far past their documented limits, so a case is either quick or refused at once; the harness's
time limit then catches a run that neither finishes nor refuses.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import click
import yaml
from hypothesis import strategies as st

from allot.cli.main import cli, subcommands
from allot.model.strict_yaml import StrictLoader
from fuzzing import containers, mutate_tree

from .runner import Case

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

INTEGERS: list[Any] = [
    0,
    -1,
    1,
    7,
    2**31 - 1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
]
FLOATS: list[Any] = [0.5, 1e-320, 1e308, -1e308, float("nan"), float("inf"), float("-inf")]
QUANTITIES = [
    "0",
    "1n",
    "-1",
    "17Gi",
    "80Gi",
    "8Ei",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "1e18",
    "1e100",
    "1e1000",
    "123456789012345678901234567890",
    "0.000000001",
    "99999999999999999999Ki",
    "1e-1000",
]
DURATIONS = [
    "inf",
    "nan",
    "-1",
    "1e400",
    "1e30",
    "100000000d",
    "0",
    "0s",
    "1ms",
    "999999999999h",
    "90m",
    "5m",
]
RATES = ["1e300/s", "inf/s", "nan/h", "1180591620717411303424/s", "0/h", "1e-300/s", "12/h", "1e9/s"]
STRINGS = ["", " ", "x" * 300, "Ünïcode-名前", "a/b", "\x00", "-", "2026-03-09T11:00:42Z", "&a [*a]"]
STRUCTURES: list[Any] = [None, True, [], {}, [None], {"unexpected": {"nested": [1]}}]
ODD: list[Any] = [*INTEGERS, *FLOATS, *QUANTITIES, *DURATIONS, *RATES, *STRINGS, *STRUCTURES]
# Every case takes a second or two; a generous limit keeps a loaded CI machine from failing one.
CASE_TIMEOUT = 120.0
BROKEN_YAML = ["\n: - ]\t{", "\n- [", "\nkey: value: other\n", '\n"unterminated', "\n&a [*a]\n", "{"]


def _documents(*paths: Path) -> list[Any]:
    docs: list[Any] = []
    for path in paths:
        for doc in yaml.load_all(path.read_text(), Loader=StrictLoader):
            if isinstance(doc, dict) and doc.get("kind") == "List":
                docs.extend(doc["items"])
            elif doc is not None:
                docs.append(doc)
    return docs


def _yaml_files(folder: str) -> list[Path]:
    return sorted((EXAMPLES / folder).glob("*.yaml"))


POD_WITH_MIG_CLAIM = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "mig-user", "namespace": "default"},
    "spec": {
        "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "mig"}]}}],
        "resourceClaims": [{"name": "mig", "resourceClaimName": "inference-mig"}],
    },
}
QUEUED_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "queued", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
    "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
}
QUEUED_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
    "spec": {
        "parallelism": 2,
        "completions": 4,
        "suspend": True,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
            }
        },
    },
}
# (documents, the commands to run on them as one file, a node to allocate on)
BUNDLES: dict[str, tuple[list[Any], str]] = {
    "cluster": (_documents(*_yaml_files("cluster")), "gpu-node-1"),
    "mig": (
        [*_documents(*_yaml_files("mig"), EXAMPLES / "cluster" / "deviceclasses.yaml"), POD_WITH_MIG_CLAIM],
        "mig-node-1",
    ),
    "kueue": (
        [*_documents(*_yaml_files("kueue"), EXAMPLES / "cluster" / "nodes.yaml"), QUEUED_POD, QUEUED_JOB],
        "",
    ),
}


def _dump(docs: Any, *, many: bool) -> str:
    if many:
        return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)
    return yaml.safe_dump(docs, sort_keys=False, allow_unicode=True)


def _leaves(root: Any) -> list[tuple[Any, Any]]:
    """(container, key) of every scalar leaf."""
    found: list[tuple[Any, Any]] = []
    for node in containers(root, []):
        keys = node if isinstance(node, dict) else range(len(node))
        found.extend((node, key) for key in keys if not isinstance(node[key], dict | list))
    return found


def _at_limits(draw: st.DrawFn, root: Any, pool: list[Any]) -> None:
    """Replace 1-3 numeric or quantity-like leaves with values at or past the documented limits."""
    numeric = [
        (node, key)
        for node, key in _leaves(root)
        if (isinstance(node[key], int | float) and not isinstance(node[key], bool))
        or (isinstance(node[key], str) and node[key][:1].isdigit())
    ]
    for _ in range(draw(st.integers(1, 3))):
        if numeric:
            node, key = draw(st.sampled_from(numeric))
            node[key] = copy.deepcopy(draw(st.sampled_from(pool)))


def _damage_text(draw: st.DrawFn, text: str) -> str:
    """Sometimes: a line written twice (a duplicate key where it is one), a recursive alias, a cut."""
    choice = draw(st.sampled_from(["none", "none", "repeat-line", "cut", "append"]))
    lines = text.splitlines(keepends=True)
    if choice == "repeat-line" and lines:
        index = draw(st.integers(0, len(lines) - 1))
        lines.insert(index, lines[index])
        return "".join(lines)
    if choice == "cut":
        return text[: draw(st.integers(0, len(text)))]
    if choice == "append":
        return text + draw(st.sampled_from(BROKEN_YAML))
    return text


def _mutated(draw: st.DrawFn, docs: Any, *, many: bool, limits: list[Any]) -> str:
    docs = copy.deepcopy(docs)
    if draw(st.booleans()):
        _at_limits(draw, docs, limits)
    else:
        mutate_tree(draw, docs, ODD)
    return _damage_text(draw, _dump(docs, many=many))


@st.composite
def manifest_cases(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(sorted(BUNDLES)))
    docs, node = BUNDLES[name]
    text = _mutated(draw, docs, many=True, limits=[*INTEGERS, *FLOATS, *QUANTITIES])
    file = "cluster.yaml"
    command = draw(
        st.sampled_from(
            [
                ["validate", file],
                ["place", file],
                ["place", file, "-o", "yaml"],
                ["queues", file],
                ["queues", file, "-o", "json"],
                ["allocate", file, "--node", node or "n1"],
                ["allocate", file, "--node", node or "n1", "-o", "yaml"],
            ]
        )
    )
    return Case(command, {file: text.encode()}, timeout=CASE_TIMEOUT)


SCENARIO = yaml.safe_load(
    """
name: small
seed: 3
horizon: 2h
cluster:
  nodes:
  - {count: 2, cpu: 32, memory: 128Gi, gpus: 4, namePrefix: gpu}
  - {count: 1, cpu: 16, memory: 64Gi, namePrefix: cpu}
  nodeEvents:
  - {node: gpu-00, down: 30m, up: 50m}
tenants:
- {name: alpha, quota: {cpu: 40, nvidia.com/gpu: 6}}
- {name: beta, weight: 2}
priorityClasses:
- {name: high, value: 1000}
jobs:
- name: train
  tenant: alpha
  count: 20
  arrival: {poisson: {rate: 12/h}}
  pods: {choice: {values: [1, 2], weights: [70, 30]}}
  duration: {uniform: [5m, 20m]}
  priority: high
  resources: {cpu: 2, memory: 8Gi, nvidia.com/gpu: 1}
- name: infer
  tenant: beta
  arrival: {poisson: {rate: 20/h, stop: 90m}}
  duration: {lognormal: {median: 8m, sigma: 0.5, max: 1h}}
  resources: {cpu: 1, memory: 4Gi, nvidia.com/gpu: 1}
- name: burst
  tenant: beta
  arrival: {bursts: [{at: 10m, count: 5, spread: 1m}]}
  pods: 2
  duration: {exponential: {mean: 5m}}
  resources: {cpu: 4, memory: 8Gi}
- name: prep
  tenant: beta
  arrival: {times: [0, 10m, 20m]}
  duration: 15m
  resources: {cpu: 4, memory: 8Gi}
"""
)
SIMULATE = ["--no-report", "-q", "-j", "1", "-o", "json", "--max-jobs", "400"]


@st.composite
def scenario_cases(draw: st.DrawFn) -> Case:
    text = _mutated(draw, SCENARIO, many=False, limits=[*INTEGERS, *FLOATS, *QUANTITIES, *DURATIONS, *RATES])
    argv = ["simulate", "scenario.yaml", *SIMULATE]
    # Odd options now and then (most are refused as usage errors, and then the file is never read).
    if draw(st.integers(0, 3)) == 0:
        argv += ["--horizon", draw(st.sampled_from(DURATIONS))]
    if draw(st.integers(0, 3)) == 0:
        argv += ["--seed", str(draw(st.sampled_from(INTEGERS)))]
    return Case(argv, {"scenario.yaml": text.encode()}, timeout=CASE_TIMEOUT)


PHILLY = [
    ["job_id", "user", "vc", "gpu_num", "cpu_num", "submit_time", "duration", "state"],
    ["j1", "u1", "vc-a", "1", "4", "2017-10-03 14:00:00", "600", "Pass"],
    ["j2", "u2", "vc-b", "16", "32", "2017-10-03 14:05:00", "1200", "Pass"],
    ["j3", "u2", "vc-b", "2", "8", "2017-10-03 14:06:00", "", "Killed"],
]
TRACE_VALUES: list[Any] = [*INTEGERS, *FLOATS, "", "x", "user", "vc", "single", "scenario", "-5", "1e999"]
TRACE_OPTIONS = {
    "synthetic": ["jobs", "load", "tenants", "shares", "durationScale", "cpuPerGpu"],
    "philly": ["limit", "timeScale", "gpusPerNode", "tenant"],
    "openb": ["limit", "timeScale", "tenant", "cluster"],
}
# The scenario's cluster and tenants with a trace instead of its jobs (--trace replaces that trace).
SMALL_CLUSTER = {
    **{k: v for k, v in SCENARIO.items() if k != "jobs"},
    "trace": {"type": "synthetic", "jobs": 5},
}


def _cell(value: Any) -> str:
    return repr(value) if isinstance(value, float) and not math.isfinite(value) else str(value)


@st.composite
def trace_cases(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(sorted(TRACE_OPTIONS)))
    rows = copy.deepcopy(PHILLY)
    for _ in range(draw(st.integers(0, 3))):
        row = draw(st.sampled_from(rows))
        row[draw(st.integers(0, len(row) - 1))] = _cell(draw(st.sampled_from(TRACE_VALUES)))
    if draw(st.booleans()):
        del rows[draw(st.integers(0, len(rows) - 1))][draw(st.integers(0, 3)) :]
    options = {"openb": {"limit": 20, "cluster": "scenario"}, "synthetic": {"jobs": 30}}.get(kind, {})
    for key in draw(st.lists(st.sampled_from(TRACE_OPTIONS[kind]), max_size=3)):
        options[key] = draw(st.sampled_from(TRACE_VALUES))
    spec = {"openb": "openb:default", "philly": "philly:jobs.csv", "synthetic": "synthetic"}[kind]
    parts = [f"{key}={_cell(value)}" for key, value in options.items()]
    spec = spec + (("," if ":" in spec else ":") + ",".join(parts) if parts else "")
    files = {"jobs.csv": "\n".join(",".join(r) for r in rows).encode()}
    if draw(st.booleans()):
        argv = ["simulate", "scenario.yaml", "--trace", spec, *SIMULATE, "--horizon", "2h"]
        files["scenario.yaml"] = yaml.safe_dump(SMALL_CLUSTER).encode()
    else:
        scenario = {
            **SMALL_CLUSTER,
            "trace": {"type": kind, **({"file": "jobs.csv"} if kind == "philly" else {})},
        }
        scenario["trace"].update(
            {k: v for k, v in options.items() if not isinstance(v, float) or math.isfinite(v)}
        )
        files["scenario.yaml"] = yaml.safe_dump(scenario).encode()
        argv = ["simulate", "scenario.yaml", *SIMULATE, "--horizon", "2h"]
    return Case(argv, files, timeout=CASE_TIMEOUT)


CONFIG = yaml.safe_load(
    """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 50
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      enabled: [{name: GpuIsolation}]
    score:
      enabled: [{name: NodeResourcesFit, weight: 2}, {name: TopologyAlignment, weight: 1}]
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
  - name: DynamicResources
    args: {stepBudget: 1000, alignment: preferred}
  - name: GpuIsolation
    args: {trustDomain: namespace}
- schedulerName: sharing
  plugins:
    filter:
      enabled: [{name: GpuPlacement}]
      disabled: [{name: DynamicResources}]
  pluginConfig:
  - name: GpuPlacement
    args: {policy: FGD, seed: 1, tieBreak: name, stepBudget: 500}
"""
)


@st.composite
def config_cases(draw: st.DrawFn) -> Case:
    text = _mutated(draw, CONFIG, many=False, limits=[*INTEGERS, *FLOATS, *STRINGS])
    cluster = _dump(BUNDLES["cluster"][0], many=True)
    if draw(st.booleans()):
        return Case(
            ["place", "cluster.yaml", "--config", "config.yaml"],
            {"cluster.yaml": cluster.encode(), "config.yaml": text.encode()},
            timeout=CASE_TIMEOUT,
        )
    scenario = {**SCENARIO, "policies": {"custom": {"base": "fair", "schedulerConfig": "config.yaml"}}}
    return Case(
        ["simulate", "scenario.yaml", *SIMULATE, "--compare", "custom"],
        {"scenario.yaml": yaml.safe_dump(scenario).encode(), "config.yaml": text.encode()},
        timeout=CASE_TIMEOUT,
    )


# -- command-line options, from click's own description of every command ------------------------

BASE_ARGV: dict[str, list[str]] = {
    "simulate": ["scenario.yaml", *SIMULATE],
    "place": ["cluster.yaml"],
    "allocate": ["cluster.yaml", "--node", "gpu-node-1"],
    "queues": ["cluster.yaml"],
    "validate": ["cluster.yaml"],
    "preset": ["dgx-h100"],
    "experiment fragmentation": ["--pods", "5", "--seeds", "42", "--policy", "FGD", "--no-plots"],
    "agent run": ["--node-name", "n1"],
}
# Commands that serve a cluster: without one (the harness gives them none) they can only fail, at once.
SERVERS = ("run", "agent run")
OPTION_VALUES: list[str] = [
    *(str(v) for v in INTEGERS),
    "nan",
    "inf",
    "-inf",
    "1e999",
    *DURATIONS,
    *STRINGS[:6],
    "cluster.yaml",
    "scenario.yaml",
    "missing.yaml",
    ".",
    "out/dir",
    "fair,fifo-priority",
    "synthetic:jobs=10",
    "1-1000000000",
    "42,43",
    "all",
]


def _commands() -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in subcommands(cli).items():
        if isinstance(command, click.Group):
            for sub, inner in subcommands(command).items():
                found[f"{name} {sub}"] = inner
        else:
            found[name] = command
    return found


COMMANDS = _commands()


def _value(draw: st.DrawFn, option: click.Option) -> str:
    if isinstance(option.type, click.Choice) and draw(st.booleans()):
        return str(draw(st.sampled_from(list(option.type.choices))))
    return draw(st.sampled_from(OPTION_VALUES))


@st.composite
def option_cases(draw: st.DrawFn) -> Case:
    name = draw(st.sampled_from(sorted(COMMANDS)))
    command = COMMANDS[name]
    argv = [*name.split(), *BASE_ARGV.get(name, [])]
    options = [p for p in command.params if isinstance(p, click.Option) and p.name not in ("help",)]
    for option in draw(st.lists(st.sampled_from(options), max_size=4)) if options else []:
        flag = draw(st.sampled_from(option.opts + option.secondary_opts))
        if option.is_flag or option.count:
            argv.append(flag)
        else:
            argv += [flag, _value(draw, option)]
    if draw(st.integers(0, 9)) == 0:
        argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(OPTION_VALUES)))
    files = {
        "cluster.yaml": _dump(BUNDLES["cluster"][0], many=True).encode(),
        "scenario.yaml": yaml.safe_dump(SCENARIO).encode(),
    }
    return Case(argv, files, timeout=CASE_TIMEOUT)


def valid_cases() -> list[Case]:
    """One unmutated case of every kind: each must run to the end."""
    cluster = _dump(BUNDLES["cluster"][0], many=True).encode()
    scenario = yaml.safe_dump(SCENARIO).encode()
    rows = "\n".join(",".join(r) for r in PHILLY).encode()
    small = yaml.safe_dump(SMALL_CLUSTER).encode()
    return [
        Case(["simulate", "scenario.yaml", *SIMULATE], {"scenario.yaml": scenario}),
        *(
            Case([command, "cluster.yaml", *extra], {"cluster.yaml": _dump(docs, many=True).encode()})
            for docs, node in BUNDLES.values()
            for command, extra in (
                ("validate", []),
                ("place", []),
                ("queues", []),
                *((("allocate", ["--node", node]),) if node else ()),
            )
        ),
        Case(
            ["simulate", "scenario.yaml", "--trace", "philly:jobs.csv", *SIMULATE, "--horizon", "2h"],
            {"scenario.yaml": small, "jobs.csv": rows},
        ),
        Case(
            ["simulate", "scenario.yaml", "--trace", "synthetic:jobs=30", *SIMULATE], {"scenario.yaml": small}
        ),
        Case(
            ["simulate", "scenario.yaml", "--trace", "openb:default,limit=20,cluster=scenario", *SIMULATE],
            {"scenario.yaml": small},
        ),
        Case(
            ["place", "cluster.yaml", "--config", "config.yaml"],
            {"cluster.yaml": cluster, "config.yaml": yaml.safe_dump(CONFIG).encode()},
        ),
        *(
            Case([*name.split(), *argv], {"cluster.yaml": cluster, "scenario.yaml": scenario})
            for name, argv in BASE_ARGV.items()
            if name not in SERVERS
        ),
    ]

"""Bad options and bad configurations get one line and the documented exit code, never a traceback.

Exit codes (README): 0 done, 1 bad input, 2 bad usage, 3 answered "no", 4 a bug in allot.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner

from allot.cli import main as entry
from allot.cli.main import cli, subcommands
from allot.cli.params import FilePath

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCENARIO = """
name: tiny
horizon: 30m
cluster:
  nodes: [{count: 1, cpu: 8, memory: 32Gi, gpus: 2}]
tenants: [{name: a}]
jobs:
- {name: j, tenant: a, arrival: {times: [0, 1m]}, duration: 5m, resources: {cpu: 1, memory: 1Gi}}
"""


def _run(*args: str, cwd: Path | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(SCENARIO)
    return path


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--seed", "-1", "-1 is not in the range 0<=x<=18446744073709551615"),
        ("--seed", str(2**64), "is not in the range"),
        ("--horizon", "inf", "above 0 and at most 10 years, got 'inf'"),
        ("--horizon", "nan", "above 0 and at most 10 years, got 'nan'"),
        ("--horizon", "11000d", "above 0 and at most 10 years"),
        ("--max-jobs", "0", "0 is not in the range x>=1"),
        ("--report-dir", "a\x00b", "holds a NUL byte"),
    ],
)
def test_bad_simulate_options_are_usage_errors(scenario: Path, option: str, value: str, message: str) -> None:
    result = _run("simulate", str(scenario), "--no-report", "-q", option, value)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_a_run_past_a_limit_is_refused_and_names_the_flag(scenario: Path) -> None:
    result = _run("simulate", str(scenario), "--no-report", "-q", "--max-jobs", "1")
    assert result.exit_code == 1
    assert "the run would have 2 jobs, more than the limit of 1 (raise it with --max-jobs)" in result.stderr
    assert _run("simulate", str(scenario), "--no-report", "-q", "-j", "1", "--max-jobs", "2").exit_code == 0


@pytest.mark.parametrize(
    ("plugin", "args", "message"),
    [
        (
            "NodeResourcesFit",
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": "x"}]}},
            "invalid literal",
        ),
        (
            "NodeResourcesFit",
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1e999}]}},
            "infinity",
        ),
        ("NodeResourcesFit", {"scoringStrategy": {"resources": [{"weight": 3}]}}, "missing 'name'"),
        ("NodeResourcesFit", {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 500}]}}, "1-100"),
        ("NodeResourcesFit", {"scoringStrategy": "MostAllocated"}, "args:"),
        ("NodeResourcesFit", {"scoringStrategy": {"type": "Nope"}}, "unsupported scoring strategy 'Nope'"),
        ("DynamicResources", {"stepBudget": -1}, "stepBudget: expected a positive integer"),
        ("GpuPlacement", {"tieBreak": "weird"}, "tieBreak"),
    ],
)
def test_a_bad_plugin_argument_is_bad_input_naming_the_plugin(
    tmp_path: Path, plugin: str, args: dict[str, Any], message: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "s", "pluginConfig": [{"name": plugin, "args": args}]}],
            }
        )
    )
    result = _run("place", str(EXAMPLES / "cluster"), "--config", str(config))
    assert result.exit_code == 1, result.output
    (first, count) = result.stderr.splitlines()
    assert first.startswith(f"error: {config}: profile 's': pluginConfig {plugin} args: ")
    assert message in first and count == "1 error(s); nothing was planned"


def test_a_score_weight_past_int32_is_bad_input(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- plugins: {score: {enabled: [{name: NodeResourcesFit, weight: 10000000000000000000000}]}}\n"
    )
    result = _run("place", str(EXAMPLES / "cluster"), "--config", str(config))
    assert result.exit_code == 1 and "weight" in result.stderr


def test_a_report_that_cannot_be_written_is_bad_input_and_leaves_nothing(
    scenario: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = _run("simulate", str(scenario), "-q", "-j", "1", "--report-dir", str(blocker / "report"))
    assert result.exit_code == 1, result.output
    assert "cannot write the report" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "tiny.yaml"]


def test_allocate_answers_no_with_3_and_bad_features_are_usage_errors(tmp_path: Path) -> None:
    claim = tmp_path / "claim.yaml"
    claim.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: default}\n"
        "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu.nvidia.com, count: 9}}]}}\n"
    )
    paths = [str(EXAMPLES / "cluster"), str(claim)]
    no = _run("allocate", *paths, "--node", "gpu-node-1", "--claim", "default/c")
    assert no.exit_code == 3 and no.stdout.startswith("cannot allocate all claims")
    usage = _run("allocate", *paths, "--node", "gpu-node-1", "--features", "Nope")
    assert usage.exit_code == 2 and "--features" in usage.output


def test_a_bug_is_one_line_with_exit_4(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise OverflowError("can't serialize ints < -2**63 or > 2**64 - 1\nsecond line")

    monkeypatch.setattr(entry, "cli", explode)
    monkeypatch.delenv(entry.TRACEBACK_VARIABLE, raising=False)
    with pytest.raises(SystemExit) as done:
        entry.main()
    assert done.value.code == 4
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "internal error: OverflowError: can't serialize ints < -2**63 or > 2**64 - 1 "
        "(a bug in allot; ALLOT_TRACEBACK=1 shows where)"
    ]
    monkeypatch.setenv(entry.TRACEBACK_VARIABLE, "1")
    with pytest.raises(OverflowError):
        entry.main()


def test_the_installed_command_prints_no_traceback_for_a_negative_seed(scenario: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from allot.cli.main import main; main()",
            "simulate",
            str(scenario),
            "--seed",
            "-1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "Invalid value for '--seed'" in done.stderr


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ("- pluginConfig: 5\n", "profiles[0].pluginConfig: expected a list, got int"),
        ("- plugins: {score: {enabled: 7}}\n", "profiles[0].plugins.score.enabled: expected a list, got int"),
        ("- plugins: [filter]\n", "profiles[0].plugins: expected a mapping, got list"),
        ("- 5\n", "profiles[0]: expected a mapping, got int"),
    ],
)
def test_a_configuration_of_the_wrong_shape_names_the_field(
    tmp_path: Path, profile: str, message: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n" + profile
    )
    result = _run("place", str(EXAMPLES / "cluster"), "--config", str(config))
    assert result.exit_code == 1, result.output
    assert f"error: {config}: {message}" in result.stderr


def test_a_path_too_long_for_the_file_system_is_bad_input() -> None:
    result = _run("validate", "x" * 300)
    assert result.exit_code == 1
    assert "cannot read: File name too long" in result.stderr


def _options(command: click.Command) -> list[click.Parameter]:
    if isinstance(command, click.Group):
        return [p for sub in subcommands(command).values() for p in _options(sub)]
    return list(command.params)


def test_every_path_option_refuses_what_no_file_system_can_name() -> None:
    """A path parameter of click's own type would let a NUL byte through to a ValueError."""
    paths = [p for p in _options(cli) if isinstance(p.type, click.Path)]
    assert paths and all(isinstance(p.type, FilePath) for p in paths), [
        p.name for p in paths if not isinstance(p.type, FilePath)
    ]


@pytest.mark.parametrize("command", [["run"], ["agent", "run", "--node-name", "n1"]])
@pytest.mark.parametrize("text", ["a: 1\n---\nb: 2\n", "clusters: 5\n", "[\n"])
def test_serving_commands_report_a_bad_kubeconfig_as_bad_input(
    tmp_path: Path, command: list[str], text: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(text)
    result = _run(*command, "--kubeconfig", str(kubeconfig))
    assert result.exit_code == 1, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: no API server configuration: ")

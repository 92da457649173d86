"""`allot validate` end to end through click's CliRunner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from allot.cli.main import cli


@pytest.mark.parametrize("folder", ["cluster", "mig", "kueue"])
def test_examples_validate(examples: Path, folder: str) -> None:
    result = CliRunner().invoke(cli, ["validate", str(examples / folder)])
    assert result.exit_code == 0, result.output
    assert "objects loaded" in result.stdout
    assert result.stderr == ""


def test_summary_table_counts_each_kind(examples: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(examples / "cluster")])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].strip() == "16 objects loaded"
    rows = {
        cells[1]: int(cells[2]) for line in lines if len(cells := [c.strip() for c in line.split("│")]) == 4
    }
    assert rows == {
        "DeviceClass": 4,
        "Namespace": 1,
        "Node": 2,
        "Pod": 1,
        "PriorityClass": 1,
        "ResourceClaimTemplate": 1,
        "ResourceSlice": 6,
    }


def test_unknown_kinds_are_listed(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
    )
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 0
    assert "ignored (kinds allot does not schedule with): apps/v1 Deployment (1)" in result.stdout


def test_every_error_goes_to_stderr_with_exit_code_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: a}\n"
        "spec:\n  devices:\n    requests:\n    - name: gpu\n      exactly: {deviceClassName: '', count: 0}\n"
        "---\napiVersion: v1\nkind: Node\nmetadata: {name: Node_1}\n"
    )
    broken = tmp_path / "broken.json"
    broken.write_text('{"apiVersion": "v1",')
    result = CliRunner().invoke(cli, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"error: {bad} document 1: ResourceClaim a/c: spec.devices.requests[0].exactly.deviceClassName: Required value"
    )
    assert lines[1] == (
        f"error: {bad} document 1: ResourceClaim a/c: spec.devices.requests[0].exactly.count: "
        "Invalid value: 0: must be greater than zero"
    )
    assert lines[2].startswith(
        f'error: {bad} document 2: Node Node_1: metadata.name: Invalid value: "Node_1": '
    )
    assert lines[3].startswith(f"error: {broken} document 1: line 1 column 21: invalid JSON: ")
    assert lines[4] == "4 error(s); nothing was loaded"
    assert "Traceback" not in result.output


def test_missing_path(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"error: {tmp_path / 'nope'}: no such file or folder"


def test_standard_input() -> None:
    result = CliRunner().invoke(
        cli, ["validate", "-"], input="apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"
    )
    assert result.exit_code == 0
    assert "1 objects loaded" in result.stdout

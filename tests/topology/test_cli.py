"""`allot preset` through click's CliRunner; its output passes `allot validate`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from allot.cli.main import cli
from allot.cli.preset_cmd import preset
from allot.model.loader import load_text


def test_list_names_every_preset() -> None:
    result = CliRunner().invoke(preset, ["--list"])
    assert result.exit_code == 0, result.output
    for name in ("dgx-h100", "dgx-h200", "p4d-24xlarge", "pcie-l40s"):
        assert name in result.output


def test_yaml_output_validates(tmp_path: Path) -> None:
    result = CliRunner().invoke(preset, ["dgx-h100", "--nodes", "2", "--racks", "2", "--topology", "t"])
    assert result.exit_code == 0, result.output
    manifests = load_text(result.output)
    kinds = sorted(type(o).KIND for o in manifests.objects)
    assert kinds.count("Node") == 2 and kinds.count("ResourceSlice") == 6 and "Topology" in kinds
    path = tmp_path / "cluster.yaml"
    path.write_text(result.output)
    validated = CliRunner().invoke(cli, ["validate", str(path)])
    assert validated.exit_code == 0, validated.output
    assert "13 objects loaded" in validated.output


def test_json_output_is_a_list() -> None:
    result = CliRunner().invoke(preset, ["p4d-24xlarge", "-o", "json", "--no-classes", "--gpu-mode", "mig"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["kind"] == "List"
    assert {item["kind"] for item in document["items"]} == {"Node", "ResourceSlice"}


def test_bad_input_is_a_usage_error() -> None:
    unknown = CliRunner().invoke(preset, ["dgx-a100"])
    assert unknown.exit_code == 2 and "unknown preset 'dgx-a100'" in unknown.output
    no_mig = CliRunner().invoke(preset, ["pcie-l40s", "--gpu-mode", "mig"])
    assert no_mig.exit_code == 2 and "does not support MIG" in no_mig.output
    nothing = CliRunner().invoke(preset, [])
    assert nothing.exit_code == 2 and "--list" in nothing.output

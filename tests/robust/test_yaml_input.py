"""YAML and JSON input as the API server reads it: duplicate keys rejected with their location; recursive,
exploding and too deeply nested documents rejected instead of exhausting the machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from allot.cli.main import cli
from allot.model.errors import ManifestErrors
from allot.model.loader import load_text
from allot.sim.scenario.parse import parse_scenario
from fuzzing import memory_ceiling

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
DUPLICATE_NODE = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {a: b}\n  name: n2\n"
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=False)
)


def _errors(text: str, source: str = "in.yaml") -> list[str]:
    with pytest.raises(ManifestErrors) as caught, memory_ceiling():
        load_text(text, source)
    return [str(e) for e in caught.value.errors]


def test_a_duplicate_key_names_the_file_document_line_and_key() -> None:
    (error,) = _errors(NODE + "---\n" + DUPLICATE_NODE)
    assert error.startswith("in.yaml document 2: line 10 column 3:")
    assert "duplicate key 'name' (first at line 8)" in error


def test_a_duplicate_key_in_json_names_the_line_of_the_second_spelling() -> None:
    text = '{"apiVersion": "v1", "kind": "Node",\n "metadata": {"name": "n1",\n   "name": "n2"}}'
    (error,) = _errors(text, "in.json")
    assert error.startswith("in.json document 1: line 3 column 4:")
    assert "duplicate key 'name'" in error


def test_merge_keys_may_be_overridden() -> None:
    text = (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: &base {a: b}\n"
        "  annotations:\n    <<: *base\n    a: c\n"
    )
    (node,) = load_text(text).objects
    assert node.metadata.annotations == {"a": "c"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("apiVersion: v1\nkind: Node\nmetadata: &m {name: n1, labels: *m}\n", "recursive alias"),
        (LAUGHS, "aliases expand this document to"),
        ("[" * 400 + "]" * 400, "nested deeper than 256 levels"),
    ],
)
def test_documents_that_recurse_or_explode_are_rejected(text: str, message: str) -> None:
    (error,) = _errors(text)
    assert message in error


def test_deep_json_is_rejected() -> None:
    (error,) = _errors("[" * 400 + "]" * 400, "in.json")
    assert "nested deeper than 256 levels" in error


def test_a_scenario_with_a_duplicate_key_or_a_recursive_alias_gets_a_located_error() -> None:
    with pytest.raises(ManifestErrors) as caught:
        parse_scenario("name: a\nseed: 1\nname: b\n", "s.yaml")
    assert "s.yaml:3" in str(caught.value) and "duplicate key 'name'" in str(caught.value)
    with pytest.raises(ManifestErrors) as caught, memory_ceiling():
        parse_scenario("name: a\njobs: &j [*j]\n", "s.yaml")
    assert "s.yaml:2" in str(caught.value) and "recursive alias" in str(caught.value)


def test_a_scheduler_configuration_with_a_duplicate_key_is_bad_input(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(NODE)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: a\n  schedulerName: b\n"
    )
    result = CliRunner().invoke(cli, ["place", str(cluster), "--config", str(config)])
    assert result.exit_code == 1, result.output
    assert "config.yaml" in result.stderr and "line 5" in result.stderr and "duplicate key" in result.stderr
    assert "Traceback" not in result.output

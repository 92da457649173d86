"""`allot place` as a user runs it: table, reasons, --explain, -o yaml, --check, --scheduler-name."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from allot.cli.main import cli
from allot.model.codec import dump_yaml
from builders import claim_spec, claim_template, device_class, gpu_slice, node, pod


def write_cluster(tmp_path: Path, pods: list[object]) -> Path:
    objects = [
        node("n1"),
        node("n2"),
        gpu_slice("n1", 1),
        gpu_slice("n2", 1),
        device_class(),
        claim_template("one-gpu", claim_spec(("gpu", "gpu.example.com", 1))),
        *pods,
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(dump_yaml(objects))  # type: ignore[arg-type]
    return path


def test_place_prints_placements_and_reasons(tmp_path: Path) -> None:
    path = write_cluster(tmp_path, [pod(f"p{i}", claims={"gpu": "one-gpu"}) for i in range(3)])
    result = CliRunner().invoke(cli, ["place", str(path)])
    assert result.exit_code == 0, result.output
    assert "2 pod(s) placed" in result.output
    assert "default/p2: 0/2 nodes are available: 2 cannot allocate all claims." in result.output


def test_place_explain_shows_the_allocator_diagnosis_per_node(tmp_path: Path) -> None:
    path = write_cluster(tmp_path, [pod(f"p{i}", claims={"gpu": "one-gpu"}) for i in range(3)])
    result = CliRunner().invoke(cli, ["place", str(path), "--explain", "default/p2"])
    assert result.exit_code == 0, result.output
    assert "  n1: cannot allocate all claims" in result.output
    assert "1 devices considered, 1 already allocated" in result.output


def test_place_yaml_writes_pods_and_claims_in_upstream_form(tmp_path: Path) -> None:
    path = write_cluster(tmp_path, [pod("p0", claims={"gpu": "one-gpu"})])
    result = CliRunner().invoke(cli, ["place", str(path), "-o", "yaml"])
    assert result.exit_code == 0, result.output
    documents = list(yaml.safe_load_all(result.output))
    pods = [d for d in documents if d["kind"] == "Pod"]
    claims = [d for d in documents if d["kind"] == "ResourceClaim"]
    # Either node fits; the claim must be allocated on the one the pod is bound to.
    node = pods[0]["spec"]["nodeName"]
    assert node in ("n1", "n2")
    (status,) = pods[0]["status"]["resourceClaimStatuses"]
    assert status["name"] == "gpu" and status["resourceClaimName"] == claims[0]["metadata"]["name"]
    allocation = claims[0]["status"]["allocation"]
    assert allocation["devices"]["results"][0] == {
        "request": "gpu",
        "driver": "gpu.example.com",
        "pool": node,
        "device": "gpu-0",
    }
    assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [node]
    assert claims[0]["status"]["reservedFor"][0]["name"] == "p0"


def test_scheduler_name_restricts_to_that_schedulers_pods(tmp_path: Path) -> None:
    path = write_cluster(
        tmp_path,
        [
            pod("mine", claims={"gpu": "one-gpu"}, scheduler_name="allot"),
            pod("theirs", claims={"gpu": "one-gpu"}),
        ],
    )
    result = CliRunner().invoke(cli, ["place", str(path), "--scheduler-name", "allot", "-o", "yaml"])
    assert result.exit_code == 0, result.output
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(result.output) if d["kind"] == "Pod"]
    assert names == ["mine"]


def test_check_runs_the_invariants(tmp_path: Path) -> None:
    path = write_cluster(tmp_path, [pod(f"p{i}", claims={"gpu": "one-gpu"}) for i in range(2)])
    result = CliRunner().invoke(cli, ["place", str(path), "--check"])
    assert result.exit_code == 0, result.output


def test_bad_input_gets_located_errors_and_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\n")
    result = CliRunner().invoke(cli, ["place", str(path)])
    assert result.exit_code == 1
    assert (
        'bad.yaml document 1: Pod default/Bad_Name: metadata.name: Invalid value: "Bad_Name"' in result.output
    )
    assert "bad.yaml document 1: Pod default/Bad_Name: spec.containers: Required value" in result.output
    assert "2 error(s); nothing was planned" in result.output

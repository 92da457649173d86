"""`allot allocate`: the command over manifests, via click's CliRunner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from allot.cli.allocate_cmd import allocate
from allot.model.loader import load_paths
from allot.model.resource import ResourceClaim

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: gpu-node-1}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: device.driver == "gpu.example.com"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-node-1-gpus}
spec:
  driver: gpu.example.com
  pool: {name: gpu-node-1, generation: 1, resourceSliceCount: 1}
  nodeName: gpu-node-1
  devices:
  - {name: gpu-0, attributes: {numa: {int: 0}}}
  - {name: gpu-1, attributes: {numa: {int: 0}}}
  - {name: gpu-2, attributes: {numa: {int: 1}}}
  - {name: gpu-3, attributes: {numa: {int: 1}}}
  - name: shared-0
    allowMultipleAllocations: true
    capacity: {memory: {value: 80Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: training, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.example.com
        selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].numa == 0'}}]
status:
  allocation:
    devices:
      results:
      - {request: gpus, driver: gpu.example.com, pool: gpu-node-1, device: gpu-0}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: inference, namespace: team-b}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu.example.com, count: 2}
    constraints:
    - matchAttribute: gpu.example.com/numa
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: notebook, namespace: team-b}
spec:
  devices:
    requests:
    - name: slice
      exactly:
        deviceClassName: gpu.example.com
        capacity: {requests: {memory: 10Gi}}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    return path


def test_text_output(cluster: Path) -> None:
    result = CliRunner().invoke(allocate, ["--node", "gpu-node-1", str(cluster)])
    assert result.exit_code == 0, result.output
    assert "team-b/inference" in result.stdout and "gpu.example.com/gpu-node-1/gpu-2" in result.stdout
    assert "gpu.example.com/gpu-node-1/gpu-3" in result.stdout
    assert "team-b/notebook" in result.stdout and "memory=10Gi" in result.stdout
    assert "node selector metadata.name In gpu-node-1" in result.stdout


def test_yaml_output_is_upstream_form(cluster: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(allocate, ["--node", "gpu-node-1", "-o", "yaml", str(cluster)])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out.yaml"
    out.write_text(result.stdout)
    claims = load_paths([out]).of_kind(ResourceClaim)
    assert [c.metadata.name for c in claims] == ["inference", "notebook"]
    allocation = claims[0].status.allocation
    assert allocation is not None
    assert [d.device for d in allocation.devices.results] == ["gpu-2", "gpu-3"]
    shared = claims[1].status.allocation
    assert shared is not None and shared.devices.results[0].share_id
    assert "shareID:" in result.stdout and "consumedCapacity:" in result.stdout


def test_named_claims(cluster: Path) -> None:
    result = CliRunner().invoke(
        allocate, ["--node", "gpu-node-1", "--claim", "team-b/notebook", str(cluster)]
    )
    assert result.exit_code == 0, result.output
    assert "team-b/notebook" in result.stdout and "team-b/inference" not in result.stdout
    already = CliRunner().invoke(
        allocate, ["--node", "gpu-node-1", "--claim", "team-a/training", str(cluster)]
    )
    assert already.exit_code == 1 and "ResourceClaim team-a/training is already allocated" in already.stderr
    missing = CliRunner().invoke(allocate, ["--node", "gpu-node-1", "--claim", "nope", str(cluster)])
    assert missing.exit_code == 1 and "no ResourceClaim default/nope" in missing.stderr


def test_does_not_fit(cluster: Path) -> None:
    text = CLUSTER.replace("count: 2}", "count: 3}")
    cluster.write_text(text)
    result = CliRunner().invoke(
        allocate, ["--node", "gpu-node-1", "--claim", "team-b/inference", str(cluster)]
    )
    assert result.exit_code == 3
    assert result.stdout.startswith(
        "cannot allocate all claims: claim team-b/inference: no combination of devices satisfies its constraints"
    )
    assert "claim team-b/inference request gpus: 5 devices considered, 1 already allocated" in result.stdout
    as_yaml = CliRunner().invoke(
        allocate, ["--node", "gpu-node-1", "-o", "yaml", "--claim", "team-b/inference", str(cluster)]
    )
    assert as_yaml.exit_code == 3 and as_yaml.stdout == "" and "cannot allocate all claims" in as_yaml.stderr


def test_bad_input(cluster: Path, tmp_path: Path) -> None:
    unknown_node = CliRunner().invoke(allocate, ["--node", "nope", str(cluster)])
    assert unknown_node.exit_code == 1 and "error: no Node nope in the manifests" in unknown_node.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: [x]}\n---\nkind: Node\n")
    result = CliRunner().invoke(allocate, ["--node", "gpu-node-1", str(broken)])
    assert result.exit_code == 1
    assert result.stderr.count("error: ") >= 2 and "nothing was allocated" in result.stderr
    unknown_class = CLUSTER.replace(
        "deviceClassName: gpu.example.com, count: 2", "deviceClassName: nope, count: 2"
    )
    cluster.write_text(unknown_class)
    failed = CliRunner().invoke(allocate, ["--node", "gpu-node-1", str(cluster)])
    assert failed.exit_code == 1 and "could not retrieve device class nope" in failed.stderr
    features = CliRunner().invoke(allocate, ["--node", "gpu-node-1", "--features", "Bogus", str(cluster)])
    assert features.exit_code == 2 and "unknown DRA feature" in features.stderr  # an option value: usage


def test_features_option(cluster: Path) -> None:
    # Without ConsumableCapacity the notebook's capacity request is refused upstream's way
    # (experimental variant only, so DeviceBindingAndStatus stays on).
    result = CliRunner().invoke(
        allocate, ["--node", "gpu-node-1", "--features", "DeviceBindingAndStatus", str(cluster)]
    )
    assert result.exit_code == 1
    assert "has capacity requests, but the DRAConsumableCapacity feature is disabled" in result.stderr

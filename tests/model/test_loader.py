"""The loader: document shapes kubectl and the API print, unknown kinds and fields, locations, validate=False."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from allot.model.codec import dump_yaml
from allot.model.core import Node, Pod
from allot.model.errors import Location, ManifestErrors
from allot.model.loader import load_paths, load_text
from allot.model.resource import ResourceClaim, ResourceSlice

KIND_LIST = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: node-1
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
    namespace: default
- apiVersion: v1
  kind: Node
  metadata:
    name: node-2
kind: List
metadata:
  resourceVersion: ""
"""


def test_kind_list_items_are_located_by_index() -> None:
    manifests = load_text(KIND_LIST, "nodes.yaml")
    assert [n.name for n in manifests.of_kind(Node)] == ["node-1", "node-2"]
    assert manifests.entries[1].location == Location(
        file="nodes.yaml", document=1, item=2, kind="Node", name="node-2"
    )
    assert str(manifests.entries[1].location) == "nodes.yaml document 1 item 2: Node node-2"


def test_unknown_kinds_are_skipped_and_reported() -> None:
    manifests = load_text(
        KIND_LIST + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api\n", "all.yaml"
    )
    assert [(s.api_version, s.kind, s.location.item, s.location.document) for s in manifests.skipped] == [
        ("apps/v1", "Deployment", 1, 1),
        ("v1", "ConfigMap", None, 2),
    ]
    assert manifests.skipped[0].location.name == "web"


def test_typed_list_items_without_api_version_and_kind() -> None:
    # The shape of GET /apis/resource.k8s.io/v1/resourceslices.
    payload = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSliceList",
        "metadata": {"resourceVersion": "123"},
        "items": [
            {
                "metadata": {"name": f"s{i}"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": "n",
                    "pool": {"name": "n", "resourceSliceCount": 2},
                },
            }
            for i in range(2)
        ],
    }
    manifests = load_text(json.dumps(payload), "slices.json")
    slices = manifests.of_kind(ResourceSlice)
    assert [s.name for s in slices] == ["s0", "s1"]
    assert slices[0].api_version == "resource.k8s.io/v1" and slices[0].kind == "ResourceSlice"
    assert manifests.entries[0].location.item == 0


def test_typed_list_errors_name_the_item() -> None:
    payload = {
        "apiVersion": "v1",
        "kind": "NodeList",
        "items": [{"metadata": {"name": "ok"}}, {"metadata": {"name": "Bad"}}],
    }
    with pytest.raises(ManifestErrors) as failure:
        load_text(json.dumps(payload), "nodes.json")
    assert [str(e).split(": Invalid")[0] for e in failure.value.errors] == [
        "nodes.json document 1 item 1: Node Bad: metadata.name"
    ]


def test_unknown_fields_are_tolerated_and_dropped() -> None:
    text = """\
apiVersion: v1
kind: Node
metadata:
  name: node-1
  managedFields: [{manager: kubelet}]
spec:
  podCIDR: 10.244.0.0/24
  futureField: {anything: [1, 2]}
status:
  nodeInfo: {kubeletVersion: v1.35.0}
"""
    node = load_text(text).of_kind(Node)[0]
    assert node.name == "node-1"
    printed = dump_yaml([node])
    for dropped in ("managedFields", "podCIDR", "futureField", "nodeInfo"):
        assert dropped not in printed


def test_empty_documents_and_comments_are_ignored() -> None:
    text = "# a comment\n---\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n"
    assert [o.name for o in load_text(text).objects] == ["a"]


def test_json_list_input() -> None:
    text = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}],
        }
    )
    assert [o.kind for o in load_text(text, "-").objects] == ["Namespace"]


def test_a_yaml_file_of_json_documents_between_separators_loads_as_kubectl_takes_it(tmp_path: Path) -> None:
    documents = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in ("a", "b")]
    path = tmp_path / "namespaces.yaml"
    path.write_text("\n---\n".join(json.dumps(d) for d in documents))
    assert [o.name for o in load_paths([path]).objects] == ["a", "b"]
    # The same text read as JSON (a .json file) is one document with extra data: an error there.
    json_path = tmp_path / "namespaces.json"
    json_path.write_text(path.read_text())
    with pytest.raises(ManifestErrors, match=r"namespaces.json document 1: line 2 column 1: invalid JSON"):
        load_paths([json_path])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\nstatus:\n  capacity: {cpu: '4', memory: 1.5.2Gi}\n",
            "bad.yaml document 1: Node n: status.capacity[memory]: '1.5.2Gi': quantities must match the regular "
            "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: {a: b, c: [d]}\n",
            "bad.yaml document 1: Node n: metadata.labels[c]: expected str, got array",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
            "spec:\n  devices:\n  - name: d\n    consumesCounters:\n    - counterSet: c\n      counters: {a: {value: 1}, b: {}}\n",
            "bad.yaml document 1: ResourceSlice s: spec.devices[0].consumesCounters[0].counters[b]: required field value is missing",
        ),
        (
            "apiVersion: v1\nkind: Node\nmetadata: []\n",
            "bad.yaml document 1: Node: metadata: expected object, got array",
        ),
        (
            "apiVersion: v1\nkind: List\nitems: {a: 1}\n",
            "bad.yaml document 1: List: items: expected a list, got dict",
        ),
        (
            "apiVersion: v1\nkind: NodeList\nitems: [{1: 2}]\n",
            "bad.yaml document 1 item 0: Node: [1]: expected str (a map key)",
        ),
    ],
)
def test_decode_errors_point_at_the_exact_field(
    errors_of: Callable[..., list[str]], text: str, expected: str
) -> None:
    assert errors_of(text) == [expected]


def test_errors_of_several_files_are_reported_together(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: A\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text("{")
    (tmp_path / "notes.txt").write_text("ignored")
    with pytest.raises(ManifestErrors) as failure:
        load_paths([tmp_path, tmp_path / "missing.yaml"])
    files = [e.location.file for e in failure.value.errors]
    assert files == [
        str(tmp_path / "missing.yaml"),
        str(tmp_path / "a.yaml"),
        str(tmp_path / "sub" / "b.json"),
    ]


INVALID_FOR_THE_API = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: claim-0, namespace: default}
spec:
  devices:
    requests:
    - name: subReq-0
      exactly: {deviceClassName: "", allocationMode: future-mode, selectors: [{}], count: 500}
    constraints:
    - requests: [subReq-0]
"""


def test_validate_false_loads_what_the_api_server_would_reject(tmp_path: Path) -> None:
    with pytest.raises(ManifestErrors):
        load_text(INVALID_FOR_THE_API)
    claim = load_text(INVALID_FOR_THE_API, validate=False).of_kind(ResourceClaim)[0]
    exactly = claim.spec.devices.requests[0].exactly
    assert exactly is not None
    assert (exactly.device_class_name, exactly.allocation_mode, exactly.count) == ("", "future-mode", 500)
    assert exactly.selectors[0].cel is None
    path = tmp_path / "claim.yaml"
    path.write_text(INVALID_FOR_THE_API)
    assert len(load_paths([path], validate=False).objects) == 1


def test_validate_false_still_reports_what_cannot_be_decoded(errors_of: Callable[..., list[str]]) -> None:
    text = INVALID_FOR_THE_API.replace("count: 500", "count: many")
    assert errors_of(text, validate=False) == [
        "bad.yaml document 1: ResourceClaim default/claim-0: spec.devices.requests[0].exactly.count: expected int | null, got str"
    ]


def test_pod_defaults_come_before_validation() -> None:
    pod = load_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
        "    resources: {limits: {nvidia.com/gpu: 1}}\n"
    ).of_kind(Pod)[0]
    assert pod.namespace == "default"
    assert pod.spec.containers[0].resources.requests["nvidia.com/gpu"].value() == 1

"""Round trips on the example manifests, and older API versions decoding to the same records."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from allot.model.base import Object
from allot.model.codec import dump_json, dump_yaml
from allot.model.kueue import ClusterQueue, Cohort, LocalQueue
from allot.model.loader import load_paths, load_text
from allot.model.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice

FOLDERS = ["cluster", "mig", "kueue"]


@pytest.mark.parametrize("folder", FOLDERS)
def test_yaml_round_trip(examples: Path, folder: str) -> None:
    objects = load_paths([examples / folder]).objects
    again = load_text(dump_yaml(objects), "dumped.yaml").objects
    assert again == objects
    # Dumping is stable: a second round prints the same text.
    assert dump_yaml(again) == dump_yaml(objects)


@pytest.mark.parametrize("folder", FOLDERS)
def test_json_round_trip(examples: Path, folder: str) -> None:
    objects = load_paths([examples / folder]).objects
    assert load_text(dump_json(objects), "dumped.json").objects == objects


def test_versions_are_kept_on_dump(examples: Path) -> None:
    manifests = load_paths([examples / "kueue"])
    old = next(q for q in manifests.of_kind(ClusterQueue) if q.name == "team-infer")
    assert old.api_version == "kueue.x-k8s.io/v1beta1"
    printed = dump_yaml([old])
    assert printed.startswith("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n")
    assert "  cohort: production\n" in printed


def same_version(obj: Object, api_version: str) -> Object:
    return replace(obj, api_version=api_version)


SLICE_V1 = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 3, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      model: {string: H100}
      resource.kubernetes.io/pcieRoot: {string: pci0000:15}
    capacity:
      memory: {value: 80Gi}
"""
SLICE_V1BETA1 = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: node-1-gpu}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 3, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    basic:
      attributes:
        model: {string: H100}
        resource.kubernetes.io/pcieRoot: {string: pci0000:15}
      capacity:
        memory: {value: 80Gi}
"""
CLAIM_V1 = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "H100"'}}]
        count: 2
        adminAccess: false
    - name: nic
      firstAvailable:
      - {name: fast, deviceClassName: nic.example.com}
      - {name: slow, deviceClassName: nic.example.com, allocationMode: All}
    constraints:
    - {requests: [gpu, nic], matchAttribute: resource.kubernetes.io/pcieRoot}
"""
CLAIM_V1BETA1 = """\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: team-a}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.example.com
      selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "H100"'}}]
      count: 2
      adminAccess: false
    - name: nic
      firstAvailable:
      - {name: fast, deviceClassName: nic.example.com}
      - {name: slow, deviceClassName: nic.example.com, allocationMode: All}
    constraints:
    - {requests: [gpu, nic], matchAttribute: resource.kubernetes.io/pcieRoot}
"""


@pytest.mark.parametrize(
    ("v1", "older", "cls"),
    [
        (SLICE_V1, SLICE_V1BETA1, ResourceSlice),
        (SLICE_V1, SLICE_V1.replace("resource.k8s.io/v1\n", "resource.k8s.io/v1beta2\n"), ResourceSlice),
        (CLAIM_V1, CLAIM_V1BETA1, ResourceClaim),
        (
            "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\n"
            "spec: {selectors: [{cel: {expression: 'true'}}]}\n",
            "apiVersion: resource.k8s.io/v1beta1\nkind: DeviceClass\nmetadata: {name: gpu}\n"
            "spec: {selectors: [{cel: {expression: 'true'}}]}\n",
            DeviceClass,
        ),
    ],
)
def test_resource_v1beta_decodes_to_the_v1_record(v1: str, older: str, cls: type[Object]) -> None:
    new_obj = load_text(v1).of_kind(cls)[0]
    old_obj = load_text(older).of_kind(cls)[0]
    assert same_version(old_obj, new_obj.api_version) == new_obj


def test_resource_claim_template_v1beta1() -> None:
    spec_v1 = CLAIM_V1.split("spec:\n", 1)[1]
    spec_old = CLAIM_V1BETA1.split("spec:\n", 1)[1]

    def indent(text: str) -> str:
        return "".join("  " + line for line in text.splitlines(keepends=True))

    head = "kind: ResourceClaimTemplate\nmetadata: {name: t, namespace: team-a}\nspec:\n  spec:\n"
    new_obj = load_text("apiVersion: resource.k8s.io/v1\n" + head + indent(spec_v1)).objects[0]
    old_obj = load_text("apiVersion: resource.k8s.io/v1beta1\n" + head + indent(spec_old)).objects[0]
    assert isinstance(new_obj, ResourceClaimTemplate)
    assert same_version(old_obj, new_obj.api_version) == new_obj


CQ = """\
apiVersion: kueue.x-k8s.io/{version}
kind: ClusterQueue
metadata: {{name: team-a}}
spec:
  {cohort}: research
  queueingStrategy: StrictFIFO
  flavorFungibility: {{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {{name: cpu, nominalQuota: 32}}
      - {{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 8, lendingLimit: 4}}
  preemption: {{reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}}
  fairSharing: {{weight: 2}}
"""


def test_kueue_v1beta1_decodes_to_the_v1beta2_record() -> None:
    new_obj = load_text(CQ.format(version="v1beta2", cohort="cohortName")).of_kind(ClusterQueue)[0]
    old_obj = load_text(CQ.format(version="v1beta1", cohort="cohort")).of_kind(ClusterQueue)[0]
    assert old_obj.cohort_ref == new_obj.cohort_ref == "research"
    # The records differ only in the version and the field that spelled the cohort.
    normalized = replace(
        old_obj,
        api_version=new_obj.api_version,
        spec=replace(old_obj.spec, cohort=None, cohort_name="research"),
    )
    assert normalized == new_obj


def test_kueue_local_queue_and_cohort_versions() -> None:
    lq = "apiVersion: kueue.x-k8s.io/{}\nkind: LocalQueue\nmetadata: {{name: q, namespace: a}}\nspec: {{clusterQueue: cq}}\n"
    new_lq, old_lq = (load_text(lq.format(v)).of_kind(LocalQueue)[0] for v in ("v1beta2", "v1beta1"))
    assert same_version(old_lq, new_lq.api_version) == new_lq
    cohort = "apiVersion: kueue.x-k8s.io/{}\nkind: Cohort\nmetadata: {{name: research}}\nspec: {{{}: org}}\n"
    new_cohort = load_text(cohort.format("v1beta2", "parentName")).of_kind(Cohort)[0]
    alpha_cohort = load_text(cohort.format("v1alpha1", "parent")).of_kind(Cohort)[0]
    assert new_cohort.parent_ref == alpha_cohort.parent_ref == "org"

"""Malformed manifests: each gives every one of its errors, exactly as printed.

Every message names the file, the document (and list item), the object, the
field, and what was expected, in the API server's wording where there is one.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

CASES: list[tuple[str, str, str, list[str]]] = [
    (
        "yaml-syntax-second-document",
        "bad.yaml",
        """\
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
---
apiVersion: v1
kind: Node
metadata:
  name: [node-1
""",
        [
            "bad.yaml document 2: line 10 column 1: invalid YAML: did not find expected ',' or ']'",
        ],
    ),
    (
        "json-syntax",
        "bad.json",
        '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},}',
        [
            "bad.json document 1: line 1 column 69: invalid JSON: Expecting property name enclosed in double quotes",
        ],
    ),
    (
        "document-not-a-mapping",
        "bad.yaml",
        """\
- apiVersion: v1
  kind: Node
""",
        [
            "bad.yaml document 1: expected a Kubernetes object (a mapping), got list",
        ],
    ),
    (
        "missing-kind",
        "bad.yaml",
        """\
apiVersion: v1
metadata:
  name: node-1
""",
        [
            "bad.yaml document 1: node-1: kind: required: every object needs a kind",
        ],
    ),
    (
        "missing-api-version",
        "bad.yaml",
        """\
kind: Node
metadata:
  name: node-1
""",
        [
            "bad.yaml document 1: Node node-1: apiVersion: required: every object needs an apiVersion",
        ],
    ),
    (
        "unserved-version",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v2
kind: DeviceClass
metadata:
  name: gpu
""",
        [
            "bad.yaml document 1: DeviceClass gpu: apiVersion: unsupported version 'resource.k8s.io/v2' for kind DeviceClass; expected one of resource.k8s.io/v1, resource.k8s.io/v1beta2, resource.k8s.io/v1beta1",
        ],
    ),
    (
        "wrong-type",
        "bad.yaml",
        """\
apiVersion: v1
kind: Node
metadata:
  name: node-1
spec:
  unschedulable: maybe
""",
        [
            "bad.yaml document 1: Node node-1: spec.unschedulable: expected bool, got str",
        ],
    ),
    (
        "label-value-not-a-string",
        "bad.yaml",
        """\
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels:
    zone: a
    gpu: true
""",
        [
            "bad.yaml document 1: Node node-1: metadata.labels[gpu]: expected str, got bool",
        ],
    ),
    (
        "bad-quantity",
        "bad.yaml",
        """\
apiVersion: v1
kind: Node
metadata:
  name: node-1
status:
  capacity:
    cpu: '64'
    memory: 512 GB
""",
        [
            "bad.yaml document 1: Node node-1: status.capacity[memory]: '512 GB': quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ],
    ),
    (
        "attribute-wrong-type",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      model: {string: A100}
      memoryGiB: {int: eighty}
""",
        [
            "bad.yaml document 1: ResourceSlice node-1-gpus: spec.devices[0].attributes[memoryGiB].int: expected int | null, got str",
        ],
    ),
    (
        "capacity-without-value",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    capacity:
      memory: {value: 80Gi}
      cores: {}
""",
        [
            "bad.yaml document 1: ResourceSlice node-1-gpus: spec.devices[0].capacity[cores]: required field value is missing",
        ],
    ),
    (
        "node-name",
        "bad.yaml",
        """\
apiVersion: v1
kind: Node
metadata:
  name: GPU_Node
""",
        [
            "bad.yaml document 1: Node GPU_Node: metadata.name: Invalid value: \"GPU_Node\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ],
    ),
    (
        "namespace-name",
        "bad.yaml",
        """\
apiVersion: v1
kind: Namespace
metadata:
  name: team.a
""",
        [
            "bad.yaml document 1: Namespace team.a: metadata.name: Invalid value: \"team.a\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ],
    ),
    (
        "claim-requests",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: train
  namespace: team-a
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: "", allocationMode: Some}
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, count: 0}
    - name: nic
""",
        [
            "bad.yaml document 1: ResourceClaim team-a/train: spec.devices.requests[0].exactly.deviceClassName: Required value",
            'bad.yaml document 1: ResourceClaim team-a/train: spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "ExactCount", "All"',
            "bad.yaml document 1: ResourceClaim team-a/train: spec.devices.requests[1].exactly.count: Invalid value: 0: must be greater than zero",
            "bad.yaml document 1: ResourceClaim team-a/train: spec.devices.requests[2]: Required value: exactly one of `exactly` or `firstAvailable` is required",
            'bad.yaml document 1: ResourceClaim team-a/train: spec.devices.requests[1].name: Duplicate value: "gpu"',
        ],
    ),
    (
        "claim-constraints",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: train
  namespace: team-a
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
    constraints:
    - requests: [gpu, nic]
      matchAttribute: pcieRoot
    - requests: [gpu]
""",
        [
            "bad.yaml document 1: ResourceClaim team-a/train: spec.devices.constraints[0].requests[1]: Invalid value: \"nic\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
            'bad.yaml document 1: ResourceClaim team-a/train: spec.devices.constraints[0].matchAttribute: Invalid value: "pcieRoot": a fully qualified name must be a domain and a name separated by a slash',
            'bad.yaml document 1: ResourceClaim team-a/train: spec.devices.constraints[1]: Required value: exactly one of "matchAttribute" or "distinctAttribute" is required',
        ],
    ),
    (
        "selector-without-cel",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel: {expression: device.driver == "gpu.example.com"}
  - {}
""",
        [
            "bad.yaml document 1: DeviceClass gpu.example.com: spec.selectors[1].cel: Required value",
        ],
    ),
    (
        "all-with-count",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: all-gpus
  namespace: team-a
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {deviceClassName: gpu.example.com, allocationMode: All, count: 8}
""",
        [
            "bad.yaml document 1: ResourceClaimTemplate team-a/all-gpus: spec.spec.devices.requests[0].exactly.count: Invalid value: 8: must not be specified when allocationMode is 'All'",
        ],
    ),
    (
        "slice-node-selection",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  pool: {name: node-1, resourceSliceCount: 0}
  devices:
  - name: gpu-0
""",
        [
            "bad.yaml document 1: ResourceSlice node-1-gpus: spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
            "bad.yaml document 1: ResourceSlice node-1-gpus: spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        ],
    ),
    (
        "slice-devices-and-counters",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  sharedCounters:
  - name: gpu-0-counter-set
    counters:
      memory: {value: 80Gi}
  devices:
  - name: gpu-0
""",
        [
            'bad.yaml document 1: ResourceSlice node-1-gpus: spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed',
        ],
    ),
    (
        "slice-attribute-values",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      driverVersion: {version: v570.1}
      serial: {string: "0123456789012345678901234567890123456789012345678901234567890123456789"}
      gpu.example.com/model: {string: A100, int: 1}
""",
        [
            'bad.yaml document 1: ResourceSlice node-1-gpus: spec.devices[0].attributes[driverVersion].version: Invalid value: "v570.1": must be a string compatible with semver.org spec 2.0.0',
            "bad.yaml document 1: ResourceSlice node-1-gpus: spec.devices[0].attributes[serial].string: Too long: may not be more than 64 bytes",
            "bad.yaml document 1: ResourceSlice node-1-gpus: spec.devices[0].attributes[gpu.example.com/model]: Invalid value: exactly one value must be specified",
        ],
    ),
    (
        "slice-device-taint-effect",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    taints:
    - {key: gpu.example.com/unhealthy, effect: Evict}
""",
        [
            'bad.yaml document 1: ResourceSlice node-1-gpus: spec.devices[0].taints[0].effect: Unsupported value: "Evict": supported values: "NoExecute", "NoSchedule", "None"',
        ],
    ),
    (
        "slice-request-policy",
        "bad.yaml",
        """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    capacity:
      memory:
        value: 80Gi
        requestPolicy: {default: 10Gi, validValues: [10Gi, 20Gi]}
  - name: gpu-1
    allowMultipleAllocations: true
    capacity:
      memory:
        value: 80Gi
        requestPolicy: {default: 5Gi, validValues: [40Gi, 10Gi]}
""",
        [
            "bad.yaml document 1: ResourceSlice node-1-gpus: spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true",
            'bad.yaml document 1: ResourceSlice node-1-gpus: spec.devices[1].capacity[memory].requestPolicy.validValues[1]: Invalid value: "10Gi": values must be sorted in ascending order',
            'bad.yaml document 1: ResourceSlice node-1-gpus: spec.devices[1].capacity[memory].requestPolicy.validValues: Invalid value: "5Gi": default value is not valid according to the requestPolicy',
        ],
    ),
    (
        "pod",
        "bad.yaml",
        """\
apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: team-a
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
  containers:
  - name: main
    resources:
      claims:
      - name: gpus
      requests: {cpu: "8", memory: 64Gi}
      limits: {cpu: "4"}
  tolerations:
  - key: nvidia.com/gpu
    operator: Exists
    value: present
""",
        [
            'bad.yaml document 1: Pod team-a/trainer: spec.containers[0].resources.requests[cpu]: Invalid value: "8": must be less than or equal to cpu limit of 4',
            'bad.yaml document 1: Pod team-a/trainer: spec.containers[0].resources.claims[0]: Not found: "gpus": must be one of the names in pod.spec.resourceClaims: gpu',
            "bad.yaml document 1: Pod team-a/trainer: spec.tolerations[0].value: Invalid value: \"present\": value must be empty when `operator` is 'Exists'",
        ],
    ),
    (
        "priority-class-value",
        "bad.yaml",
        """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: urgent
value: 2000000000
""",
        [
            "bad.yaml document 1: PriorityClass urgent: value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
        ],
    ),
    (
        "pdb-both",
        "bad.yaml",
        """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: trainers
  namespace: team-a
spec:
  minAvailable: 50%
  maxUnavailable: 150%
""",
        [
            'bad.yaml document 1: PodDisruptionBudget team-a/trainers: spec: Invalid value: "minAvailable: 50%, maxUnavailable: 150%": minAvailable and maxUnavailable cannot be both set',
            'bad.yaml document 1: PodDisruptionBudget team-a/trainers: spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%',
        ],
    ),
    (
        "cluster-queue-quota",
        "bad.yaml",
        """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - name: memory
        nominalQuota: 64Gi
        borrowingLimit: 16Gi
""",
        [
            "bad.yaml document 1: ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources: Invalid value: must have the same number of resources as the coveredResources",
            'bad.yaml document 1: ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": must match the name in coveredResources',
            'bad.yaml document 1: ClusterQueue team-a: spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "16Gi": must be nil when cohort is empty',
        ],
    ),
    (
        "local-queue-without-cluster-queue",
        "bad.yaml",
        """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: main
  namespace: team-a
spec: {}
""",
        [
            "bad.yaml document 1: LocalQueue team-a/main: spec.clusterQueue: Required value",
        ],
    ),
    (
        "cohort-own-parent",
        "bad.yaml",
        """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: research
spec:
  parentName: research
""",
        [
            'bad.yaml document 1: Cohort research: spec.parentName: Invalid value: "research": a cohort cannot be its own parent',
        ],
    ),
    (
        "topology-levels",
        "bad.yaml",
        """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata:
  name: dc
spec:
  levels:
  - nodeLabel: kubernetes.io/hostname
  - nodeLabel: cloud.provider.com/rack
  - nodeLabel: cloud.provider.com/rack
""",
        [
            'bad.yaml document 1: Topology dc: spec.levels[0].nodeLabel: Invalid value: "kubernetes.io/hostname": the kubernetes.io/hostname label can only be used at the lowest level of topology',
            'bad.yaml document 1: Topology dc: spec.levels[2].nodeLabel: Duplicate value: "cloud.provider.com/rack"',
        ],
    ),
    (
        "duplicate-object",
        "bad.yaml",
        """\
apiVersion: v1
kind: Node
metadata:
  name: node-1
---
apiVersion: v1
kind: Node
metadata:
  name: node-1
""",
        [
            "bad.yaml document 2: Node node-1: duplicate object: already defined at bad.yaml document 1: Node node-1",
        ],
    ),
    (
        "list-item",
        "bad.yaml",
        """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: node-1
- apiVersion: v1
  kind: Node
  metadata:
    name: node-2
  spec:
    taints:
    - key: nvidia.com/gpu
      effect: NoScheduel
""",
        [
            'bad.yaml document 1 item 1: Node node-2: spec.taints[0].effect: Unsupported value: "NoScheduel": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
        ],
    ),
    (
        "v1beta2-cohort-spelling",
        "bad.yaml",
        """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: team-a
spec:
  cohort: research
""",
        [
            "bad.yaml document 1: ClusterQueue team-a: spec.cohort: Forbidden: not a field in v1beta2; use spec.cohortName",
        ],
    ),
    (
        "admin-access-namespace",
        "bad.yaml",
        """\
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: monitor
  namespace: team-a
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu.example.com, allocationMode: All, adminAccess: true}
""",
        [
            "bad.yaml document 2: ResourceClaim team-a/monitor: spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace",
        ],
    ),
]


@pytest.mark.parametrize(("source", "text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_error_is_reported_exactly(
    errors_of: Callable[..., list[str]], source: str, text: str, expected: list[str]
) -> None:
    assert errors_of(text, source) == expected


def test_there_are_at_least_twenty_distinct_cases() -> None:
    assert len({c[0] for c in CASES}) == len(CASES) >= 20
    assert all(c[3] for c in CASES)

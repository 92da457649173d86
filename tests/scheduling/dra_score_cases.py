"""A cluster where `firstAvailable` alternatives decide the node, shared by the unit test and the
check against the real kube-scheduler (tests/live/test_dra_score.py).

Three equal nodes with one GPU each, of three models; the claim template prefers A100, then
L40, then T4. The node that sorts first by name has the least preferred GPU, so a scheduler that
ignored the preference (or took the first node) would put the first pod there.
"""

from __future__ import annotations

from ready_nodes import node_yaml

NODES = {"a-t4": "T4", "b-l40": "L40", "c-a100": "A100"}
PREFERENCE = ("A100", "L40", "T4")
CPU = "8"


def slice_yaml(name: str, model: str) -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}-gpus}}
spec:
  driver: gpu.example.com
  nodeName: {name}
  pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}
  devices: [{{name: gpu-0, attributes: {{model: {{string: {model}}}}}}}]
"""


def _alternative(model: str) -> str:
    return f"""
        - name: {model.lower()}
          deviceClassName: gpu.example.com
          selectors: [{{cel: {{expression: 'device.attributes["gpu.example.com"].model == "{model}"'}}}}]"""


CLASS_AND_TEMPLATE = f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu.example.com}}
spec:
  selectors: [{{cel: {{expression: 'device.driver == "gpu.example.com"'}}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: best-gpu, namespace: default}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        firstAvailable:{"".join(_alternative(m) for m in PREFERENCE)}
"""


def pod_yaml(name: str) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers: [{{name: c, image: pause, resources: {{claims: [{{name: gpu}}]}}}}]
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: best-gpu}}]
"""


def cluster_yaml() -> str:
    """Nodes, slices, class and template (no pods)."""
    parts = [node_yaml(n, cpu=CPU) for n in NODES] + [slice_yaml(n, m) for n, m in NODES.items()]
    return "\n---\n".join([*parts, CLASS_AND_TEMPLATE])

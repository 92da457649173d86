"""Ready Nodes for cases that run both through allot and on the real control plane.

`node_yaml` is the Node as allot reads it (status included); on the API server the status
must be written through the status subresource, which `mark_ready` does (and it lifts the
not-ready taint the API server puts on new nodes, as no node controller runs there).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from controlplane import ControlPlane


def _status(cpu: str, memory: str) -> dict[str, object]:
    amounts = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "allocatable": amounts,
        "capacity": amounts,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
    }


def node_yaml(name: str, *, cpu: str, memory: str = "32Gi") -> str:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": _status(cpu, memory),
    }
    return yaml.safe_dump(node, sort_keys=False)


def mark_ready(plane: ControlPlane, name: str, *, cpu: str, memory: str = "32Gi") -> None:
    patch = json.dumps({"status": _status(cpu, memory)})
    plane.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", patch)
    plane.kubectl("taint", "nodes", name, "node.kubernetes.io/not-ready:NoSchedule-", check=False)

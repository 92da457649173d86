"""The node views: a page of the node list, and one node's devices as a map.

`node_list(snapshot, ...)` filters (name substring, pool), sorts and pages the nodes, one short
row each. `node_view(snapshot, name)` lays one node out the way its hardware is wired: NUMA
nodes, in each the PCIe roots, under each root its GPUs (with their MIG slices in use or their
fractional shares, and the pods holding them with their trust domain) and NICs; devices local to
a NUMA node only (CPU groups) beside the roots; devices that publish no topology apart. Taints
and health come from the published devices (the node agent taints what is unhealthy).
"""

from __future__ import annotations

from typing import Any

from allot.dashboard.cluster_view import pod_row
from allot.dashboard.model import OTHER, PARTITION, DeviceRecord, GpuRecord, NodeRecord, Snapshot
from allot.dashboard.query import Page, QueryError

SORTS = ("name", "allocated", "free", "pods", "pool")
MAX_NODE_PODS = 500
UNKNOWN = "unknown"


def _free(node: NodeRecord) -> int:
    return sum(1 for g in node.gpus if node.ready and g.healthy and g.allocated <= 1e-9)


def node_row(node: NodeRecord) -> dict[str, Any]:
    return {
        "name": node.name,
        "pool": node.pool,
        "ready": node.ready,
        "schedulable": node.schedulable,
        "gpus": len(node.gpus),
        "allocated": round(sum(g.allocated for g in node.gpus), 3),
        "inUse": round(sum(g.in_use for g in node.gpus), 3),
        "free": _free(node),
        "unhealthy": sum(1 for g in node.gpus if not g.healthy),
        "models": sorted({g.model for g in node.gpus if g.model}),
        "pods": len(node.pods),
        # Allocation of each GPU, in the node's GPU order: the row's little map.
        "map": [round(g.allocated, 2) for g in node.gpus],
    }


def node_list(
    snapshot: Snapshot, *, text: str, pool: str, sort: str, descending: bool, page: Page
) -> dict[str, Any]:
    needle = text.lower()
    nodes = [n for n in snapshot.nodes if needle in n.name.lower() and (not pool or n.pool == pool)]
    keys = {
        "name": lambda n: (n.name,),
        "pool": lambda n: (n.pool, n.name),
        "allocated": lambda n: (sum(g.allocated for g in n.gpus), n.name),
        "free": lambda n: (_free(n), n.name),
        "pods": lambda n: (len(n.pods), n.name),
    }
    nodes.sort(key=keys[sort], reverse=descending)
    window = page.cut(len(nodes))
    return {
        "time": snapshot.time,
        "total": len(nodes),
        "offset": window.start,
        "limit": page.limit,
        "pools": sorted({n.pool for n in snapshot.nodes}),
        "items": [node_row(n) for n in nodes[window]],
    }


def _device(device: DeviceRecord) -> dict[str, Any]:
    return {
        "name": device.name,
        "driver": device.driver,
        "kind": device.kind,
        "role": device.role,
        "model": device.model,
        "taints": list(device.taints),
        "healthy": device.healthy,
        "holders": [{"pod": h.pod, "share": h.share, "domain": h.domain} for h in device.holders],
    }


def _gpu(index: int, gpu: GpuRecord, devices: list[DeviceRecord]) -> dict[str, Any]:
    partitions = [d for d in devices if d.role == PARTITION]
    return {
        "index": index,
        "label": gpu.label,
        "mode": gpu.mode,
        "model": gpu.model,
        "allocated": gpu.allocated,
        "inUse": gpu.in_use,
        "healthy": gpu.healthy,
        "taints": sorted({t for d in devices for t in d.taints}),
        # MIG: the placements it publishes, and the slices in use with their holders.
        "placements": len(partitions),
        "slices": [_device(d) for d in partitions if d.holders],
        "holders": [
            {"pod": h.pod, "share": h.share, "domain": h.domain, "device": d.name}
            for d in devices
            if d.role != PARTITION
            for h in d.holders
        ],
    }


def node_view(snapshot: Snapshot, name: str) -> dict[str, Any]:
    node = next((n for n in snapshot.nodes if n.name == name), None)
    if node is None:
        raise QueryError(f"no node named {name[:100]!r}", 404)
    by_gpu: dict[int, list[DeviceRecord]] = {}
    others: list[DeviceRecord] = []
    for device in node.devices:
        if device.gpu >= 0:
            by_gpu.setdefault(device.gpu, []).append(device)
        else:
            others.append(device)
    # NUMA node -> PCIe root -> {"gpus": [...], "devices": [...]}; devices without a root sit at
    # their NUMA node; those with neither are apart.
    numa: dict[str, dict[str, Any]] = {}

    def slot(numa_node: int | None, root: str) -> dict[str, Any]:
        key = str(numa_node) if numa_node is not None else UNKNOWN
        entry = numa.setdefault(key, {"numa": key, "roots": {}, "local": []})
        return entry["roots"].setdefault(root, {"root": root, "gpus": [], "devices": []})  # type: ignore[no-any-return]

    for index, gpu in enumerate(node.gpus):
        slot(gpu.numa, gpu.pcie_root or UNKNOWN)["gpus"].append(_gpu(index, gpu, by_gpu.get(index, [])))
    for device in others:
        if device.pcie_root:
            slot(device.numa, device.pcie_root)["devices"].append(_device(device))
        elif device.numa is not None:
            slot(device.numa, UNKNOWN)
            numa[str(device.numa)]["local"].append(_device(device))
        else:
            slot(None, UNKNOWN)["devices"].append(_device(device))
    layout = []
    for key in sorted(numa, key=lambda k: (k == UNKNOWN, int(k) if k != UNKNOWN else 0)):
        entry = numa[key]
        roots = [r for r in sorted(entry["roots"].values(), key=lambda r: (r["root"] == UNKNOWN, r["root"]))]
        layout.append(
            {"numa": key, "roots": [r for r in roots if r["gpus"] or r["devices"]], "local": entry["local"]}
        )
    pods = {p.key: p for p in snapshot.pods if p.node == name}
    listed = sorted(pods)[:MAX_NODE_PODS]
    return {
        "time": snapshot.time,
        "name": node.name,
        "pool": node.pool,
        "ready": node.ready,
        "schedulable": node.schedulable,
        "taints": list(node.taints),
        "cpu": {"allocatable": node.cpu[0], "requested": node.cpu[1]},
        "memory": {"allocatable": node.memory[0], "requested": node.memory[1]},
        "summary": node_row(node),
        "layout": layout,
        "otherDevices": sum(1 for d in others if d.role == OTHER),
        "pods": [pod_row(pods[key], snapshot.time) for key in listed],
        "podsTotal": len(pods),
    }

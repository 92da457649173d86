"""Small clusters written as YAML, for the tests of plugins that read many fields.

`nodes(...)` writes ready nodes with labels (and images, taints); `cluster(text)` loads
manifests into a ClusterState exactly as `allot place` would; `scores(state, pod, plugin)`
returns one plugin's normalised scores over the feasible nodes, by node name.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import yaml

from allot.cluster.state import ClusterState
from allot.model.loader import load_text
from allot.scheduling.framework import Cycle
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable


def node_doc(name: str, labels: Mapping[str, str] | None = None, *, cpu: str = "8", **status: object) -> str:
    allocatable = {"cpu": cpu, "memory": "32Gi", "pods": "110"}
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": allocatable, "capacity": allocatable, **status},
    }
    return yaml.safe_dump(doc)


def zoned(*names_and_zones: tuple[str, str | None]) -> str:
    """Nodes named with their zone (None: no zone label)."""
    return "---\n".join(
        node_doc(name, {"topology.kubernetes.io/zone": zone} if zone else {})
        for name, zone in names_and_zones
    )


def cluster(*texts: str) -> ClusterState:
    return ClusterState.from_manifests(load_text("\n---\n".join(texts)))


def add(state: ClusterState, text: str) -> str:
    """Add one pod from YAML; its key."""
    (pod,) = load_text(text).objects
    return state.add_pod(pod).key  # type: ignore[arg-type]


def place(state: ClusterState, key: str, scheduler: Scheduler | None = None) -> Placement | Unschedulable:
    return (scheduler or Scheduler(state)).place(key)


def feasible(state: ClusterState, key: str) -> set[str]:
    """The nodes that pass every filter, by name."""
    scheduler = Scheduler(state)
    return {info.name for info in state.nodes.infos if scheduler.fits_on(key, info.index)}


def scores(state: ClusterState, key: str, plugin: str) -> dict[str, float]:
    """`plugin`'s normalised scores (before its weight) on the nodes that pass every filter."""
    scheduler = Scheduler(state)
    plugins = scheduler.plugins(state.pods[key].pod.spec.scheduler_name)
    assert plugins is not None
    names = sorted(feasible(state, key))
    nodes = np.array([state.nodes.index[n] for n in names], dtype=np.int64)
    cycle = Cycle(state, state.pods[key])
    for pre in plugins.pre_filters:
        assert pre.pre_filter(cycle).ok
    (scorer,) = [s for s, _ in plugins.scorers if s.name == plugin]
    values = scorer.score(cycle, nodes)
    return {name: float(v) for name, v in zip(names, values, strict=True)}


def pod_doc(name: str, *, labels: Mapping[str, str] | None = None, node: str = "", **spec: object) -> str:
    body: dict[str, object] = {"containers": [{"name": "c", "image": "app:1"}], **spec}
    if node:
        body["nodeName"] = node
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": body,
    }
    return yaml.safe_dump(doc)

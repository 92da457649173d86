"""The openb trace (Alibaba, 2023): shipped files, readers, and the conversion to Kubernetes objects.

`trace` reads the node list and the pod lists (any of the four column
flavours) into rows; `cluster` turns rows into Nodes, ResourceSlices of
fractional GPUs, Pods and claim templates. The FGD experiment
(`allot.sim.experiments.fragmentation`) runs on top of both.
"""

from allot.sim.openb.cluster import claim_template, templates, to_cluster, to_node, to_pod
from allot.sim.openb.trace import (
    EXPERIMENT_TRACES,
    OpenbNode,
    OpenbPod,
    TraceError,
    read_nodes,
    read_pods,
    shipped_checksums,
)

__all__ = [
    "EXPERIMENT_TRACES",
    "OpenbNode",
    "OpenbPod",
    "TraceError",
    "claim_template",
    "read_nodes",
    "read_pods",
    "shipped_checksums",
    "templates",
    "to_cluster",
    "to_node",
    "to_pod",
]

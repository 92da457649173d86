"""NodePorts: a pod's host ports must be free on the node.

The ports a pod takes are the `hostPort`s of its containers and sidecars (init containers
with `restartPolicy: Always`). A wanted port conflicts with a used one of the same protocol
and number when either is on the wildcard address `0.0.0.0` (an empty `hostIP`) or both are
on the same address, as kube-scheduler's HostPortInfo decides.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from allot.cluster.events import NODE_EVENTS, ClusterEventKind
from allot.cluster.pod_index import ANY_HOST_IP, HostPort, host_ports, port_key
from allot.scheduling.framework import BoolArray, Cycle, Rejection
from allot.scheduling.status import Code

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"


def conflicts(wanted: HostPort, used: Mapping[HostPort, int]) -> bool:
    ip, protocol, port = wanted
    if ip == ANY_HOST_IP:
        return any(p == port and proto == protocol for _, proto, p in used)
    return (ip, protocol, port) in used or (ANY_HOST_IP, protocol, port) in used


class NodePorts:
    name = NAME
    # Ports free up when a pod leaves.
    wake_on = NODE_EVENTS | {ClusterEventKind.POD_LEFT}

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        wanted = [port_key(p) for p in host_ports(cycle.pod.pod)]
        if not wanted:
            return []
        index = cycle.state.pod_index
        rejected = np.zeros_like(candidates)
        for node in index.nodes_with_ports():
            if candidates[node]:
                used = index.used_ports(node)
                rejected[node] = any(conflicts(w, used) for w in wanted)
        return [Rejection(REASON, rejected, Code.UNSCHEDULABLE)] if rejected.any() else []

"""NodeDeclaredFeatures: a pod that needs a node feature goes only where the node declares it.

kube-scheduler v1.36 (feature gate NodeDeclaredFeatures, beta, on) infers the features a pod
needs from spec fields allot does not model (ulimits, restart rules, security profiles and
the like) and checks them against `status.declaredFeatures`. No field allot reads asks for a
declared feature, so every pod allot can express passes: the plugin is accepted in profiles
and checks nothing.
"""

from __future__ import annotations

from allot.cluster.events import NODE_EVENTS
from allot.scheduling.framework import BoolArray, Cycle, Rejection

NAME = "NodeDeclaredFeatures"
REASON = "node(s) didn't match Pod's required features"


class NodeDeclaredFeatures:
    name = NAME
    wake_on = NODE_EVENTS

    def filter_mask(self, cycle: Cycle, candidates: BoolArray) -> list[Rejection]:
        return []

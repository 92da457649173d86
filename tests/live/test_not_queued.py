"""The reasons for which allot, as kube-scheduler, writes no condition: the engine's own messages
for pods kube-scheduler keeps out of its queue match, ordinary reasons do not (no server needed)."""

from __future__ import annotations

import pytest

from allot.cluster.state import CLAIM_NOT_FOUND, TEMPLATE_NOT_FOUND, WAITING_FOR_CLAIM
from allot.engine.decisions import CycleResult, Waiting
from allot.engine.pod_path import SCHEDULING_GATED
from allot.live.metrics import Metrics
from allot.live.status import NOT_QUEUED


@pytest.mark.parametrize(
    "reason",
    [
        SCHEDULING_GATED.format(gates="example.com/approval"),
        WAITING_FOR_CLAIM.format(entry="gpu"),
        "0/4 nodes are available: " + CLAIM_NOT_FOUND.format(key="team-a/shared-gpu") + ".",
        "0/4 nodes are available: " + TEMPLATE_NOT_FOUND.format(namespace="team-a", name="one-gpu") + ".",
    ],
)
def test_reasons_kube_scheduler_keeps_out_of_its_queue_are_not_written(reason: str) -> None:
    assert NOT_QUEUED.search(reason)


@pytest.mark.parametrize(
    "reason",
    [
        "0/4 nodes are available: 4 Insufficient cpu.",
        "0/4 nodes are available: 2 cannot allocate all claims, 2 resourceclaim in use.",
        "0/4 nodes are available: 4 resourceclaim not available on the node.",
        "quota: insufficient unused quota for nvidia.com/gpu in flavor default, 1 more needed",
        "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector. "
        "still not schedulable, preemption: not eligible: SchedulingGated pods elsewhere",
    ],
)
def test_ordinary_reasons_are_written(reason: str) -> None:
    assert not NOT_QUEUED.search(reason)


def test_only_pods_that_were_tried_count_as_unschedulable_attempts() -> None:
    metrics = Metrics(profile="allot")
    gated = Waiting("team-a/gated", SCHEDULING_GATED.format(gates="example.com/approval"))
    tried = Waiting("team-a/big", "0/4 nodes are available: 4 Insufficient cpu.")
    metrics.cycle(0.01, CycleResult((gated, tried)))
    labels = {"result": "unschedulable", "profile": "allot"}
    assert metrics.registry.get_sample_value("scheduler_schedule_attempts_total", labels) == 1.0

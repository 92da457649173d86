"""How the engine orders and protects work, and when it retries what waits."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from allot.engine.queueing import QueueingConfig


@dataclass(frozen=True, slots=True)
class ConsolidationConfig:
    """Consolidation's bounds per cycle (allot.engine.consolidate): units tried, pods moved, and
    candidate nodes searched per pod."""

    max_units: int = 4
    max_moves: int = 8
    max_nodes: int = 16


@dataclass(frozen=True, slots=True)
class EnginePolicy:
    """How the engine orders and protects work.

    `queues`: admit pods that carry a Kueue queue label through the
    admission state (True), or treat every pod as kube-scheduler would,
    by priority then arrival (False, the "fifo-priority" baseline).
    `preemption`: whether pods outside Kueue may preempt lower priorities.
    `consolidation`: place waiting work by moving running pods (None: never, as kube-scheduler).
    `reservation`: hold a node for a large waiting job, with backfill (False: never).
    `quota_holds`: keep freed cohort quota for the least-served queue's blocked head (False: never).
    """

    queues: bool = True
    preemption: bool = True
    # Only pods naming this scheduler are considered (as a second scheduler beside kube-scheduler); None = all.
    scheduler_name: str | None = None
    # Backoff, the unschedulable safety net, and whether hints decide retries (allot.engine.queueing).
    # Exact by default (retries only at events that could help); a live scheduler passes
    # QueueingConfig() for kube-scheduler's backoff and safety net.
    queueing: QueueingConfig = dataclasses.field(default_factory=QueueingConfig.exact)
    consolidation: ConsolidationConfig | None = None
    # Hold a node for a large job waiting for it to drain; backfill by runtime estimates
    # (allot.engine.reserve). Off: kube-scheduler's and Kueue's behaviour.
    reservation: bool = False
    # The blocked head of the least-served queue keeps the cohort's freed quota until it fits
    # (allot.engine.quota_hold). Off: Kueue's behaviour.
    quota_holds: bool = False

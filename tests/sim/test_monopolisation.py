"""The fair-share issue's two monopolisation scenarios, as simulations.

(a) One tenant submits 1,000 single-GPU pods at the top priority; (b) one
tenant submits 5,000 small pods in one burst. Two honest tenants keep
submitting single-GPU jobs that, together, would fill the cluster. Under
`fair` (Kueue admission with fair sharing) the honest tenants receive at
least 90 % of their fair share of GPU time over the contended period;
under `fifo-priority` (kube-scheduler ordering) they are starved, as the
issue says. Small cluster, uniform durations: each run takes seconds.
"""

from __future__ import annotations

import pytest

from allot.sim.metrics import Summary

from .cases import run_summary

HONEST = ("honest-a", "honest-b")

SCENARIO = """
name: monopoly-{case}
seed: 5
horizon: {horizon}
cluster:
  nodes:
  - {{count: 5, cpu: 64, memory: 256Gi, gpus: 6, namePrefix: gpu}}
tenants:
- {{name: flood}}
- {{name: honest-a}}
- {{name: honest-b}}
priorityClasses:
- {{name: top, value: 1000000}}
- {{name: normal, value: 100, globalDefault: true}}
jobs:
- name: flood
  tenant: flood
  priority: {flood_priority}
  arrival: {{bursts: [{{at: 30m, count: {count}}}]}}
  duration: {flood_duration}
  resources: {{cpu: 1, memory: 1Gi, nvidia.com/gpu: 1}}
- name: work-a
  tenant: honest-a
  arrival: {{poisson: {{rate: 90/h}}}}
  duration: 10m
  resources: {{cpu: 1, memory: 1Gi, nvidia.com/gpu: 1}}
- name: work-b
  tenant: honest-b
  arrival: {{poisson: {{rate: 90/h}}}}
  duration: 10m
  resources: {{cpu: 1, memory: 1Gi, nvidia.com/gpu: 1}}
"""

CASES = {
    "priority": {"count": 1000, "flood_priority": "top", "flood_duration": "40m", "horizon": "3h"},
    "burst": {"count": 5000, "flood_priority": "normal", "flood_duration": "60m", "horizon": "150m"},
}


def honest_ratios(summary: Summary) -> list[float]:
    ratios = [summary.tenant(t).fair_share_ratio for t in HONEST]
    assert all(r is not None for r in ratios), "the cluster must be contended"
    return [r for r in ratios if r is not None]


@pytest.mark.parametrize("case", sorted(CASES))
def test_fair_sharing_protects_honest_tenants_that_fifo_starves(case: str) -> None:
    text = SCENARIO.format(case=case, **CASES[case])
    fair = run_summary(text, "fair", check=False)
    fifo = run_summary(text, "fifo-priority", check=False)
    assert fair.contended_hours > 1.5 and fifo.contended_hours > 1.5
    assert min(honest_ratios(fair)) >= 0.9, (case, honest_ratios(fair))
    assert max(honest_ratios(fifo)) < 0.5, (case, honest_ratios(fifo))
    # The flood still gets the rest: fair sharing is not a quota wall.
    assert fair.tenant("flood").gpu_hours > 0.25 * fair.gpus * fair.simulated_hours

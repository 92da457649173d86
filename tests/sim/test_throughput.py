"""What sharing and misalignment cost in the simulator: time-slicing's equal turns, CPUs off their GPU's
NUMA node, and the GPU-hours lost to each."""

from __future__ import annotations

import pytest

from allot.sim.metrics import summarize

from .cases import run

# One DGX H100 with time-sliced GPUs (four replicas each): four one-GPU jobs at once, and a pod whose
# GPU is on NUMA node 1 and whose CPUs are forced onto NUMA node 0.
SLICED = """
name: sliced
seed: 1
cluster:
  presets:
  - {preset: dgx-h100, nodes: 1, namePrefix: ts, gpuMode: time-sliced}
tenants:
- {name: a}
throughput: {cpuNuma: 0.5}
jobs:
- name: shared
  tenant: a
  arrival: {times: [0, 0, 0, 0]}
  duration: 1h
  devices: {gpus: 1}
- name: misaligned
  tenant: a
  arrival: {times: [0]}
  duration: 1h
  claim:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.nvidia.com
          selectors: [{cel: {expression: "device.attributes['resource.kubernetes.io'].numaNode == 1"}}]
      - name: cpu
        exactly:
          deviceClassName: dra.cpu
          selectors: [{cel: {expression: "device.attributes['resource.kubernetes.io'].numaNode == 0"}}]
          capacity: {requests: {dra.cpu/cpu: "4"}}
"""


def test_time_slicing_divides_the_gpu_equally_and_misaligned_cpus_cost_their_factor() -> None:
    result = run(SLICED, "fifo-priority")
    ended = {r.pod.removeprefix("a/"): r for r in result.runs}
    finish = {j.key.removeprefix("a/"): j.finish for j in result.jobs}
    shared = [name for name in ended if name.startswith("shared")]
    # The four replicas land on one GPU: each runs at a quarter of full speed, so an hour's work takes four.
    assert all(ended[name].speed == pytest.approx(0.25) for name in shared)
    assert all(finish[name.removesuffix("-0")] == pytest.approx(4 * 3600) for name in shared)
    # The scenario prices CPUs on the wrong NUMA node at 0.5: the hour's work takes two.
    assert finish["misaligned-0000"] == pytest.approx(2 * 3600)
    summary = summarize(result)
    # Each shared pod lost three of its four hours to the others' turns; the misaligned pod held a
    # quarter of a GPU (one replica) for two hours at half speed.
    assert summary.lost_time_slicing_gpu_hours == pytest.approx(4 * 3.0)
    assert summary.lost_misaligned_gpu_hours == pytest.approx(0.25 * 2 * 0.5)
    assert [p.speed for p in summary.slowest[:4]] == pytest.approx([0.25] * 4)


def test_a_pod_speeds_up_when_its_gpu_partner_leaves() -> None:
    two = """
name: two
cluster:
  presets:
  - {preset: dgx-h100, nodes: 1, namePrefix: ts, gpuMode: time-sliced}
tenants:
- {name: a}
jobs:
- {name: quick, tenant: a, arrival: {times: [0]}, duration: 30m, devices: {gpus: 1}}
- {name: slow, tenant: a, arrival: {times: [0]}, duration: 1h, devices: {gpus: 1}}
"""
    result = run(two, "fifo-priority")
    finish = {j.key: j.finish for j in result.jobs}
    # Half speed each while both run: quick's 30 minutes take an hour; slow did 30 minutes of its
    # hour by then and does the rest alone, at full speed.
    assert finish["a/quick-0000"] == pytest.approx(3600)
    assert finish["a/slow-0000"] == pytest.approx(5400)

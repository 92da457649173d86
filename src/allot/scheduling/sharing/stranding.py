"""Stranded capacity: FGD's fragmentation measure, looking ahead to filling the node with each class.

FGD asks of a node whether *one* more task of class m fits, and counts as
fragment the free GPU share m could not use then. That misses what
happens when the node fills up: a node with 40 free cores and 6 free GPUs
takes one 12-core GPU task, but not six, so five GPUs are stranded by CPU;
and a GPU with 0.9 free serves one 0.47-GPU task and strands 0.43.

The stranded capacity of node n for class m counts, instead, what is left
when n is filled with as many m-tasks as it can hold:

    K_m   = min(sum_g floor(free_g / share_m) // count_m,  cpu_free // cpu_m)
    S_m   = free_total - K_m * count_m * share_m        (all free for CPU-only classes)
    S_n   = sum_m p_m S_m

and placements are scored by the change of S_n, as FGD scores by the
change of F_n (same classes, same frequencies, same vectorised search over
every node and GPU). It is allot's own measure; `FGD` with
`measure: stranded` uses it.
"""

from __future__ import annotations

import numpy as np

from allot.scheduling.sharing.fragmentation import (
    BoolArray,
    CpuFree,
    Deltas,
    FloatArray,
    FragmentationModel,
    IntArray,
    pick_least_free,
)
from allot.scheduling.sharing.table import MILLI, Needs, SharedGpuTable
from allot.scheduling.sharing.workload import TargetWorkload

_MANY = 1 << 40


class StrandingModel(FragmentationModel):
    """The stranded-capacity measure over one table and target workload."""

    def __init__(
        self,
        table: SharedGpuTable,
        workload: TargetWorkload,
        cpu_free: CpuFree,
        *,
        scarcity: bool = False,
        cpu_capacity: IntArray | None = None,
    ) -> None:
        super().__init__(table, workload, cpu_free, scarcity=scarcity, cpu_capacity=cpu_capacity)
        self.need_milli: IntArray = self.task_milli_per_gpu()
        self.safe_share: IntArray = np.where(self.need_share > 0, self.need_share, 1)
        self.safe_mem: IntArray = np.where(self.need_mem > 0, self.need_mem, 1)
        self.safe_count: IntArray = np.where(self.count > 0, self.count, 1)
        self.safe_cpu: IntArray = np.where(self.cpu > 0, self.cpu, 1)

    def _instances(self, nodes: IntArray, share: IntArray, memory: IntArray) -> IntArray:
        """Tasks of each class each GPU can hold (M, k, G)."""
        by_share = np.where(self.need_share[:, nodes] > 0, share[None] // self.safe_share[:, nodes], _MANY)
        by_mem = np.where(self.need_mem[:, nodes] > 0, memory[None] // self.safe_mem[:, nodes], _MANY)
        result: IntArray = np.where(self.base[:, nodes], np.minimum(by_share, by_mem), 0)
        return result

    def _task_milli(self, nodes: IntArray) -> IntArray:
        """Milli-GPUs one task of each class takes on each node (M, k): its largest per-GPU need there."""
        per_gpu = np.where(self.base[:, nodes], self.need_milli[:, nodes], 0).max(axis=2)
        result: IntArray = per_gpu * self.count[:, None]
        return result

    def _stranded(self, held: IntArray, total: IntArray, cpu: IntArray, task_milli: IntArray) -> FloatArray:
        """sum_m p_m S_m from per-class GPU-held task counts (M, k, ...), free milli and CPU."""
        by_cpu = cpu // self.safe_cpu.reshape(-1, *([1] * (cpu.ndim)))
        tasks = np.minimum(held // self.safe_count.reshape(-1, *([1] * (held.ndim - 1))), by_cpu)
        extra = held.ndim - task_milli.ndim
        used = tasks * task_milli.reshape(*task_milli.shape, *([1] * extra))
        stranded = np.maximum(total[None] - used, 0)
        gpu = self.gpu_class.reshape(-1, *([1] * (held.ndim - 1)))
        frag = np.where(gpu, stranded, total[None])
        result: FloatArray = np.tensordot(self.p, frag, axes=1)
        return result

    def fragmentation(self, nodes: IntArray) -> FloatArray:
        t = self.table
        held = self._instances(nodes, t.share_free[nodes], t.mem_free[nodes]).sum(axis=2)
        total = t.milli_free[nodes].sum(axis=1)
        return self._stranded(held, total, self.cpu_free(nodes), self._task_milli(nodes))

    def _deltas(
        self, nodes: IntArray, needs: Needs | None, pod_usable: BoolArray | None, count: int, cpu: int
    ) -> Deltas:
        t = self.table
        share, memory, milli = t.share_free[nodes], t.mem_free[nodes], t.milli_free[nodes]
        cpu_left = self.cpu_free(nodes)
        task_milli = self._task_milli(nodes)
        per_gpu = self._instances(nodes, share, memory)
        held = per_gpu.sum(axis=2)
        total = milli.sum(axis=1)
        before = self._stranded(held, total, cpu_left, task_milli)
        cpu_after = cpu_left - cpu
        if count == 0 or needs is None or pod_usable is None:
            return Deltas(before, self._stranded(held, total, cpu_after, task_milli) - before)
        fit = pod_usable[nodes]
        cap = np.where(t.share_cap[nodes] > 0, t.share_cap[nodes], 1)
        if count == 1:
            share2 = share - needs.share[nodes]
            memory2 = memory - needs.memory[nodes]
            milli2 = np.where(fit, share2 * MILLI // cap, milli)
            per_gpu2 = self._instances(nodes, share2, memory2)
            # Only the tried GPU changes (last axis): patch the sums.
            held2 = held[:, :, None] - per_gpu + per_gpu2
            total2 = total[:, None] - milli + milli2
            after = self._stranded(held2, total2, cpu_after[:, None], task_milli)
            delta: FloatArray = np.where(fit, after - before[:, None], np.inf)
            return Deltas(before, delta)
        chosen = pick_least_free(share, fit, count)
        ok = chosen[:, -1] >= 0
        rows = np.repeat(np.arange(len(nodes)), count)[np.repeat(ok, count)]
        cols = chosen[ok].ravel()
        share2 = share.copy()
        memory2 = memory.copy()
        share2[rows, cols] -= needs.share[nodes][rows, cols]
        memory2[rows, cols] -= needs.memory[nodes][rows, cols]
        milli2 = np.where(t.valid[nodes], share2 * MILLI // cap, 0)
        held2 = self._instances(nodes, share2, memory2).sum(axis=2)
        after = self._stranded(held2, milli2.sum(axis=1), cpu_after, task_milli)
        many: FloatArray = np.where(ok, after - before, np.inf)
        return Deltas(before, many, np.where(ok[:, None], chosen, -1))


class BlendModel(FragmentationModel):
    """FGD's measure and stranded capacity, averaged: one placement scored by both views of waste."""

    def __init__(
        self,
        table: SharedGpuTable,
        workload: TargetWorkload,
        cpu_free: CpuFree,
        *,
        scarcity: bool = False,
        cpu_capacity: IntArray | None = None,
        weight: float | None = None,
    ) -> None:
        super().__init__(table, workload, cpu_free, scarcity=scarcity, cpu_capacity=cpu_capacity)
        self.stranding = StrandingModel(
            table, workload, cpu_free, scarcity=scarcity, cpu_capacity=cpu_capacity
        )
        # How much stranding counts: as much as tasks sharing a GPU make of the GPU demand
        # (at most half). Whole-GPU workloads are FGD's home ground; partial GPUs are
        # where filling matters.
        task = self.stranding._task_milli(np.arange(table.size)).max(axis=1)
        share = (self.stranding.need_milli.max(axis=(1, 2)) < MILLI) & (self.count == 1)
        demand = float((self.p * task).sum())
        self.weight = min(0.5, float((self.p * task * share).sum()) / demand) if demand > 0 else 0.0
        if weight is not None:
            self.weight = weight

    def fragmentation(self, nodes: IntArray) -> FloatArray:
        w = self.weight
        result: FloatArray = (1 - w) * super().fragmentation(nodes) + w * self.stranding.fragmentation(nodes)
        return result

    def _deltas(
        self, nodes: IntArray, needs: Needs | None, pod_usable: BoolArray | None, count: int, cpu: int
    ) -> Deltas:
        first = super()._deltas(nodes, needs, pod_usable, count, cpu)
        second = self.stranding._deltas(nodes, needs, pod_usable, count, cpu)
        w = self.weight
        before = (1 - w) * first.before + w * second.before
        return Deltas(before, (1 - w) * first.delta + w * second.delta, first.chosen)

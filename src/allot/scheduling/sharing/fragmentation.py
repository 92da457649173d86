"""FGD's fragmentation measure, vectorised over nodes, GPUs and task classes.

For node n and task class m (research/sharing.md 1.4, the authors'
`pkg/utils/frag.go`), in milli-GPUs:

* m is CPU-only, or n cannot host m (GPU model, CPU, or fewer than m's
  GPU count of GPUs with room for m's per-GPU share): every free milli of
  n is fragment;
* otherwise only the GPUs that cannot take m's share are fragment.

F_n = sum_m p_m F_n(m). Room for a share is the table's test (share and
memory, with the device's request policy), so the measure extends the
paper's one-dimensional model to (compute, memory) as sharing.md 5.2 says.

`deltas` gives, for one arriving pod shape on a set of nodes, F after the
hypothetical placement minus F before: per GPU for one-GPU pods (each
feasible GPU tried, as FGD does for sharing pods), per node for several
GPUs (the simulator's `Sub`: the feasible GPUs with least free share
first) and for CPU-only pods. The sum over GPUs is decomposed so that
trying every GPU costs one pass over (classes x nodes x GPUs), not one per
GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from allot.cluster.nodes import saturate
from allot.scheduling.sharing.table import MILLI, Needs, SharedGpuTable
from allot.scheduling.sharing.workload import TargetWorkload

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

CpuFree = Callable[[IntArray], IntArray]
# Below this many nodes, finding identical ones costs more than computing them all.
_DEDUP_FROM = 24


@dataclass(slots=True)
class Deltas:
    """F before and after a hypothetical placement on the given nodes."""

    before: FloatArray  # (k,)
    # One-GPU pods: (k, G), +inf where the GPU cannot take the pod. Otherwise (k,), +inf where no fit.
    delta: FloatArray
    # Several GPUs: the chosen slots per node (k, count), -1 where the node does not fit.
    chosen: IntArray | None = None


class FragmentationModel:
    """The class arrays of one target workload over one table."""

    def __init__(
        self,
        table: SharedGpuTable,
        workload: TargetWorkload,
        cpu_free: CpuFree,
        *,
        scarcity: bool = False,
        cpu_capacity: IntArray | None = None,
    ) -> None:
        self.table = table
        self.workload = workload
        self.cpu_free = cpu_free
        classes = workload.classes
        shape = (len(classes), *table.valid.shape)
        self.p: FloatArray = np.array([c.weight for c in classes], dtype=np.float64)
        self.count: IntArray = np.array(
            [c.request.count if c.request else 0 for c in classes], dtype=np.int64
        )
        self.cpu: IntArray = np.array([saturate(c.cpu) for c in classes], dtype=np.int64)
        self.gpu_class: BoolArray = self.count > 0
        self.base: BoolArray = np.zeros(shape, dtype=np.bool_)
        self.need_share: IntArray = np.zeros(shape, dtype=np.int64)
        self.need_mem: IntArray = np.zeros(shape, dtype=np.int64)
        for m, task in enumerate(classes):
            request = task.request
            if request is None:
                continue
            mask = table.shape(request.class_name, request.selectors)
            if mask is None:
                continue
            needs = table.needs(request.capacity_key, request.capacity)
            self.base[m] = mask.mask & needs.ok
            self.need_share[m] = needs.share
            self.need_mem[m] = needs.memory
        if scarcity and len(classes):
            # Classes that can use only part of the GPUs weigh more, in proportion: their
            # fragments are the ones that cannot be made up for elsewhere. A class's part is
            # the GPUs it can select on nodes big enough for it (GPU count, CPU).
            usable = self.base & table.valid[None]
            hosts = usable.sum(axis=2) >= self.count[:, None]
            if cpu_capacity is not None:
                hosts &= cpu_capacity[None] >= self.cpu[:, None]
            capacity = (usable.sum(axis=2) * hosts).sum(axis=1).astype(np.float64)
            total = float(table.valid.sum())
            factor = np.where(self.gpu_class & (capacity > 0), total / np.maximum(capacity, 1.0), 1.0)
            weighted = self.p * factor
            self.p = weighted / weighted.sum()
        # Nodes whose hardware looks the same to every class (and with the same capacities) share a type.
        signature = np.concatenate(
            [
                self.base.transpose(1, 0, 2).reshape(table.size, -1).astype(np.int64),
                self.need_share.transpose(1, 0, 2).reshape(table.size, -1),
                self.need_mem.transpose(1, 0, 2).reshape(table.size, -1),
                table.share_cap,
                table.mem_cap,
            ],
            axis=1,
        )
        self.node_type: IntArray = np.unique(signature, axis=0, return_inverse=True)[1].reshape(-1)

    # -- the measure ------------------------------------------------------------------

    def task_milli_per_gpu(self) -> IntArray:
        """Milli-GPUs one task of each class takes on each GPU slot (classes x nodes x GPUs)."""
        cap = np.where(self.table.share_cap > 0, self.table.share_cap, 1)
        milli: IntArray = -(-self.need_share * MILLI // cap[None])
        return milli

    def _usable(self, nodes: IntArray, share: IntArray, memory: IntArray) -> BoolArray:
        result: BoolArray = (
            self.base[:, nodes]
            & (share[None] >= self.need_share[:, nodes])
            & (memory[None] >= self.need_mem[:, nodes])
        )
        return result

    def _frag(self, nodes: IntArray, usable: BoolArray, milli: IntArray, cpu: IntArray) -> FloatArray:
        """F for k nodes from usable (M,k,G), free milli (k,G) and free CPU (k,)."""
        total = milli.sum(axis=1)
        inside = np.where(usable, 0, milli[None]).sum(axis=2)
        fits = (usable.sum(axis=2) >= self.count[:, None]) & (cpu[None] >= self.cpu[:, None])
        frag = np.where(self.gpu_class[:, None] & fits, inside, total[None])
        frag = self._cpu_bound(nodes, frag, total[None], cpu[None])
        result: FloatArray = self.p @ frag
        return result

    def _cpu_bound(self, nodes: IntArray, frag: IntArray, total: IntArray, cpu: IntArray) -> IntArray:
        """A hook for measures that also count GPU share the node's CPU cannot feed (none here)."""
        return frag

    def fragmentation(self, nodes: IntArray) -> FloatArray:
        """F of each node, now."""
        t = self.table
        share, memory, milli = t.share_free[nodes], t.mem_free[nodes], t.milli_free[nodes]
        return self._frag(nodes, self._usable(nodes, share, memory), milli, self.cpu_free(nodes))

    def deltas(
        self, nodes: IntArray, needs: Needs | None, pod_usable: BoolArray | None, count: int, cpu: int
    ) -> Deltas:
        """F after placing one pod of this shape on each node (each GPU for one-GPU pods) minus F now.

        `pod_usable` (N, G) marks the GPUs that can take the pod; `needs` is
        what one allocation consumes per GPU. Nodes in identical situations
        (same hardware type, free amounts and CPU) are computed once.
        """
        if len(nodes) > _DEDUP_FROM:
            key = self._state_key(nodes, needs, pod_usable)
            _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
            if len(first) < len(nodes):
                inverse = inverse.reshape(-1)
                unique = self._deltas(nodes[first], needs, pod_usable, count, cpu)
                chosen = unique.chosen[inverse] if unique.chosen is not None else None
                return Deltas(unique.before[inverse], unique.delta[inverse], chosen)
        return self._deltas(nodes, needs, pod_usable, count, cpu)

    def _state_key(self, nodes: IntArray, needs: Needs | None, pod_usable: BoolArray | None) -> IntArray:
        t = self.table
        parts = [
            self.node_type[nodes, None],
            t.share_free[nodes],
            t.mem_free[nodes],
            self.cpu_free(nodes)[:, None],
        ]
        if needs is not None and pod_usable is not None:
            parts += [needs.share[nodes], needs.memory[nodes], pod_usable[nodes].astype(np.int64)]
        key: IntArray = np.concatenate(parts, axis=1)
        return key

    def _deltas(
        self, nodes: IntArray, needs: Needs | None, pod_usable: BoolArray | None, count: int, cpu: int
    ) -> Deltas:
        t = self.table
        share, memory, milli = t.share_free[nodes], t.mem_free[nodes], t.milli_free[nodes]
        cpu_left = self.cpu_free(nodes)
        usable = self._usable(nodes, share, memory)
        before = self._frag(nodes, usable, milli, cpu_left)
        cpu_after = cpu_left - cpu
        if count == 0 or needs is None or pod_usable is None:
            after = self._frag(nodes, usable, milli, cpu_after)
            return Deltas(before, after - before)
        fit = pod_usable[nodes]
        if count == 1:
            return Deltas(
                before, self._one_gpu(nodes, usable, share, memory, milli, cpu_after, needs, fit, before)
            )
        return self._many_gpus(nodes, share, memory, cpu_after, needs, fit, count, before)

    def _one_gpu(
        self,
        nodes: IntArray,
        usable: BoolArray,
        share: IntArray,
        memory: IntArray,
        milli: IntArray,
        cpu_after: IntArray,
        needs: Needs,
        fit: BoolArray,
        before: FloatArray,
    ) -> FloatArray:
        cap = np.where(self.table.share_cap[nodes] > 0, self.table.share_cap[nodes], 1)
        share2 = share - needs.share[nodes]
        memory2 = memory - needs.memory[nodes]
        milli2 = np.where(fit, share2 * MILLI // cap, milli)
        usable2 = (
            self.base[:, nodes]
            & (share2[None] >= self.need_share[:, nodes])
            & (memory2[None] >= self.need_mem[:, nodes])
        )
        # Only the tried GPU changes: patch the per-node sums instead of recomputing them.
        outside = np.where(usable, 0, milli[None])
        inside = outside.sum(axis=2)
        inside2 = inside[:, :, None] - outside + np.where(usable2, 0, milli2[None])
        count2 = usable.sum(axis=2)[:, :, None] - usable + usable2
        total2 = milli.sum(axis=1)[:, None] - milli + milli2
        fits2 = (count2 >= self.count[:, None, None]) & (cpu_after[None, :, None] >= self.cpu[:, None, None])
        frag2 = np.where(self.gpu_class[:, None, None] & fits2, inside2, total2[None])
        frag2 = self._cpu_bound(nodes, frag2, total2[None], cpu_after[None, :, None])
        after: FloatArray = np.tensordot(self.p, frag2, axes=1)
        delta: FloatArray = np.where(fit, after - before[:, None], np.inf)
        return delta

    def _many_gpus(
        self,
        nodes: IntArray,
        share: IntArray,
        memory: IntArray,
        cpu_after: IntArray,
        needs: Needs,
        fit: BoolArray,
        count: int,
        before: FloatArray,
    ) -> Deltas:
        chosen = pick_least_free(share, fit, count)
        ok = chosen[:, -1] >= 0
        rows = np.repeat(np.arange(len(nodes)), count)
        cols = np.where(chosen >= 0, chosen, 0).ravel()
        share2 = share.copy()
        memory2 = memory.copy()
        take = np.repeat(ok, count)
        share2[rows[take], cols[take]] -= needs.share[nodes][rows[take], cols[take]]
        memory2[rows[take], cols[take]] -= needs.memory[nodes][rows[take], cols[take]]
        cap = np.where(self.table.share_cap[nodes] > 0, self.table.share_cap[nodes], 1)
        milli2 = np.where(self.table.valid[nodes], share2 * MILLI // cap, 0)
        after = self._frag(nodes, self._usable(nodes, share2, memory2), milli2, cpu_after)
        delta: FloatArray = np.where(ok, after - before, np.inf)
        return Deltas(before, delta, np.where(ok[:, None], chosen, -1))


def pick_least_free(share: IntArray, fit: BoolArray, count: int) -> IntArray:
    """Per row, the `count` fitting columns with least free share (stable: lower index first); -1 if too few."""
    key = np.where(fit, share, np.iinfo(np.int64).max)
    order = np.argsort(key, axis=1, kind="stable")[:, :count]
    picked_fit = np.take_along_axis(fit, order, axis=1)
    result: IntArray = np.where(picked_fit, order, -1)
    # A row with too few fitting GPUs has -1 at its end; make the whole row -1.
    short = (result < 0).any(axis=1)
    result[short] = -1
    return result


class CpuAwareModel(FragmentationModel):
    """FGD's measure, plus the GPU share that the node's CPU cannot feed with tasks of the class.

    For a class that fits, FGD counts only the GPUs too small for it. Here
    the usable part is further capped by CPU: with c free cores the node
    runs at most floor(c / cpu_m) more m-tasks, so GPU share beyond
    floor(c / cpu_m) x (m's GPU share) is fragment for m too:

        F_n(m) = max(FGD's F_n(m), free_total - floor(cpu / cpu_m) * count_m * share_m)

    This looks one node-fill ahead on the CPU dimension only (allot's own).
    """

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
        per_gpu = np.where(self.base, self.task_milli_per_gpu(), 0).max(axis=2)
        self.task_milli: IntArray = per_gpu * self.count[:, None]
        self.safe_cpu: IntArray = np.where(self.cpu > 0, self.cpu, 1)

    def _cpu_bound(self, nodes: IntArray, frag: IntArray, total: IntArray, cpu: IntArray) -> IntArray:
        shape = (-1,) + (1,) * (frag.ndim - 1)
        tasks = cpu // self.safe_cpu.reshape(shape)
        milli = self.task_milli[:, nodes].reshape(
            self.task_milli.shape[0], len(nodes), *([1] * (frag.ndim - 2))
        )
        fed = np.maximum(total - tasks * milli, 0)
        gpu = self.gpu_class.reshape(shape)
        result: IntArray = np.where(gpu, np.maximum(frag, fed), frag)
        return result

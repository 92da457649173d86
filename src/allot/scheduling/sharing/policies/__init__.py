"""Placement policies for shared GPUs, by the name a profile selects them with (`GpuPlacement` args).

FGD, BestFit, Packing, DotProduct, Clustering and Random are the FGD
paper's six (as its simulator implements them); FGDPlus is allot's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allot.scheduling.sharing.policies.base import Context, PodView, Policy
from allot.scheduling.sharing.policies.best_fit import BestFit
from allot.scheduling.sharing.policies.clustering import Clustering
from allot.scheduling.sharing.policies.dot_product import DotProduct
from allot.scheduling.sharing.policies.fgd import FGD, fgd_plus
from allot.scheduling.sharing.policies.packing import Packing
from allot.scheduling.sharing.policies.random_fit import RandomFit
from allot.scheduling.sharing.workload import DEFAULT_THRESHOLD, TargetWorkload

POLICIES = ("FGD", "FGDPlus", "BestFit", "Packing", "DotProduct", "Clustering", "Random")
# Policies that read a target workload (`targetWorkload`, else learned from arriving pods).
WORKLOAD_POLICIES = ("FGD", "FGDPlus")


def build_policy(name: str, args: Mapping[str, Any]) -> Policy:
    """The named policy. FGD's arguments: `targetWorkload` (see `TargetWorkload.from_args`),
    `popularityThreshold`, `quantize`, `scoreLevels`, `measure` (fgd, stranded, blend, cpu),
    `cpuPodMeasure`, `scarcity`, `blendWeight`."""
    workload = args.get("targetWorkload")
    threshold = float(args.get("popularityThreshold", DEFAULT_THRESHOLD))
    target = TargetWorkload.from_args(workload) if workload is not None else None
    if name == "FGD":
        weight = args.get("blendWeight")
        return FGD(
            target,
            threshold=threshold,
            quantize=bool(args.get("quantize", True)),
            levels=int(args.get("scoreLevels", 100)),
            measure=str(args.get("measure", "fgd")),
            cpu_pod_measure=args.get("cpuPodMeasure"),
            scarcity=bool(args.get("scarcity", False)),
            blend_weight=float(weight) if weight is not None else None,
        )
    if name == "FGDPlus":
        return fgd_plus(target, threshold=threshold)
    if name == "BestFit":
        return BestFit()
    if name == "Packing":
        return Packing()
    if name == "DotProduct":
        return DotProduct()
    if name == "Clustering":
        return Clustering()
    if name == "Random":
        return RandomFit()
    raise ValueError(f"unknown GPU placement policy {name!r}; expected one of {', '.join(POLICIES)}")


__all__ = ["POLICIES", "WORKLOAD_POLICIES", "Context", "PodView", "Policy", "build_policy"]

"""Placement policies for shared GPUs, by the name a profile selects them with (`GpuPlacement` args)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allot.scheduling.sharing.policies.base import Context, PodView, Policy
from allot.scheduling.sharing.policies.best_fit import BestFit
from allot.scheduling.sharing.policies.clustering import Clustering
from allot.scheduling.sharing.policies.dot_product import DotProduct
from allot.scheduling.sharing.policies.fgd import FGD
from allot.scheduling.sharing.policies.packing import Packing
from allot.scheduling.sharing.policies.random_fit import RandomFit
from allot.scheduling.sharing.workload import DEFAULT_THRESHOLD, TargetWorkload

POLICIES = ("FGD", "BestFit", "Packing", "DotProduct", "Clustering", "Random")


def build_policy(name: str, args: Mapping[str, Any]) -> Policy:
    """The named policy; `targetWorkload` (FGD) as in `TargetWorkload.from_args`."""
    workload = args.get("targetWorkload")
    threshold = float(args.get("popularityThreshold", DEFAULT_THRESHOLD))
    target = TargetWorkload.from_args(workload) if workload is not None else None
    if name == "FGD":
        secondary_name = args.get("secondary")
        secondary = build_policy(str(secondary_name), {}) if secondary_name else None
        return FGD(
            target,
            threshold=threshold,
            quantize=bool(args.get("quantize", True)),
            secondary=secondary,
            gpu_best_fit=bool(args.get("gpuBestFit", False)),
            levels=int(args.get("scoreLevels", 100)),
            measure=str(args.get("measure", "fgd")),
        )
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


__all__ = ["POLICIES", "Context", "PodView", "Policy", "build_policy"]

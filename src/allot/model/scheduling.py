"""scheduling.k8s.io/v1 PriorityClass and policy/v1 PodDisruptionBudget."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from allot.model.base import LabelSelector, Object, Record


class PriorityClass(Object, frozen=True):
    """Maps a class name to the integer priority pods with that name get."""

    API_GROUP: ClassVar[str] = "scheduling.k8s.io"
    KIND: ClassVar[str] = "PriorityClass"

    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None
    description: str = ""


class PodDisruptionBudgetSpec(Record, frozen=True):
    # Either an absolute pod count or a percentage string such as "50%".
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(Record, frozen=True):
    # Set by the disruption controller once it has counted the budget's pods (0: never counted).
    observed_generation: int = 0
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    # Pods whose eviction the API server granted and the controller has not seen go yet (name ->
    # when): already taken off the allowance.
    disrupted_pods: dict[str, str] = msgspec.field(default_factory=dict)


class PodDisruptionBudget(Object, frozen=True):
    API_GROUP: ClassVar[str] = "policy"
    KIND: ClassVar[str] = "PodDisruptionBudget"
    NAMESPACED: ClassVar[bool] = True

    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)

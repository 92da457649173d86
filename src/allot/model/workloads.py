"""The owners of pods that kube-scheduler's default topology spreading looks at.

PodTopologySpread's system default constraints apply to a pod that a Service
selects or that a ReplicaSet, StatefulSet or ReplicationController controls;
the selector used to count its peers is built from theirs. Only their
selectors are modelled.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec

from allot.model.base import LabelSelector, Object, Record


class ServiceSpec(Record, frozen=True):
    # None: a Service without a selector (its endpoints are managed by hand).
    selector: dict[str, str] | None = None


class Service(Object, frozen=True):
    KIND: ClassVar[str] = "Service"
    NAMESPACED: ClassVar[bool] = True

    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


class ReplicationControllerSpec(Record, frozen=True):
    selector: dict[str, str] | None = None


class ReplicationController(Object, frozen=True):
    KIND: ClassVar[str] = "ReplicationController"
    NAMESPACED: ClassVar[bool] = True

    spec: ReplicationControllerSpec = msgspec.field(default_factory=ReplicationControllerSpec)


class SelectorSpec(Record, frozen=True):
    selector: LabelSelector | None = None


class ReplicaSet(Object, frozen=True):
    API_GROUP: ClassVar[str] = "apps"
    KIND: ClassVar[str] = "ReplicaSet"
    NAMESPACED: ClassVar[bool] = True

    spec: SelectorSpec = msgspec.field(default_factory=SelectorSpec)


class StatefulSet(Object, frozen=True):
    API_GROUP: ClassVar[str] = "apps"
    KIND: ClassVar[str] = "StatefulSet"
    NAMESPACED: ClassVar[bool] = True

    spec: SelectorSpec = msgspec.field(default_factory=SelectorSpec)

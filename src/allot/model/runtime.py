"""node.k8s.io/v1 RuntimeClass, and what its admission plugin adds to the pods that name it.

A pod with `spec.runtimeClassName` runs under that class's handler (Kata, gVisor, NVIDIA's
container runtime). When such a pod is created, the API server's RuntimeClass admission plugin
copies the class's `overhead.podFixed` into `spec.overhead` (which the scheduler adds to the
pod's requests) and merges `scheduling.nodeSelector` and `scheduling.tolerations` into the
pod's own, so the pod lands only where the handler is installed. A dump (`kubectl get -o yaml`)
holds pods already admitted; manifests written by hand do not, and `admit_runtime_class` does
for them what the plugin would. What the plugin would reject (a selector that contradicts the
class's) is reported by `runtime_class_conflicts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

import msgspec
from msgspec.structs import replace

from allot.model.base import Object, Record
from allot.model.core import Pod, ResourceList, Toleration


class Overhead(Record, frozen=True):
    pod_fixed: ResourceList = msgspec.field(default_factory=dict)


class RuntimeScheduling(Record, frozen=True):
    node_selector: dict[str, str] = msgspec.field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


class RuntimeClass(Object, frozen=True):
    API_GROUP: ClassVar[str] = "node.k8s.io"
    KIND: ClassVar[str] = "RuntimeClass"

    handler: str = ""
    overhead: Overhead | None = None
    scheduling: RuntimeScheduling | None = None


def _not_yet_admitted(pod: Pod) -> bool:
    """A pod the plugin has not seen: it names a class but carries none of its overhead."""
    return not pod.spec.overhead and not pod.spec.node_name


def runtime_class_conflicts(pod: Pod, runtime_class: RuntimeClass) -> list[str]:
    """The `spec.nodeSelector` keys on which a pod not yet admitted contradicts its class (the
    API server refuses to create such a pod)."""
    if not _not_yet_admitted(pod) or runtime_class.scheduling is None:
        return []
    own = pod.spec.node_selector
    wanted = runtime_class.scheduling.node_selector
    return sorted(key for key, value in wanted.items() if key in own and own[key] != value)


def admit_runtime_class(pod: Pod, classes: Mapping[str, RuntimeClass]) -> Pod:
    """`pod` as the RuntimeClass admission plugin leaves it: the class's overhead where the pod has
    none, the class's node selector and tolerations merged into the pod's. A pod whose class is
    not among `classes`, or that names none, is returned as it is; so is an admitted one, up to
    what it already holds (a dump's pods come back unchanged)."""
    name = pod.spec.runtime_class_name
    runtime_class = classes.get(name) if name else None
    if runtime_class is None:
        return pod
    spec = pod.spec
    overhead = spec.overhead
    if not overhead and runtime_class.overhead is not None and runtime_class.overhead.pod_fixed:
        overhead = dict(runtime_class.overhead.pod_fixed)
    selector = spec.node_selector
    tolerations = spec.tolerations
    if runtime_class.scheduling is not None:
        # Keys the pod already sets keep its value: an admitted pod already holds the class's, and
        # one that contradicts it is reported by `runtime_class_conflicts`.
        missing = {k: v for k, v in runtime_class.scheduling.node_selector.items() if k not in selector}
        if missing:
            selector = {**selector, **missing}
        extra = tuple(t for t in runtime_class.scheduling.tolerations if t not in tolerations)
        if extra:
            tolerations = (*tolerations, *extra)
    if overhead is spec.overhead and selector is spec.node_selector and tolerations is spec.tolerations:
        return pod
    return replace(
        pod, spec=replace(spec, overhead=overhead, node_selector=selector, tolerations=tolerations)
    )


def admitted_pods(pods: Iterable[Pod], classes: Iterable[RuntimeClass]) -> list[Pod]:
    """Each pod as `admit_runtime_class` leaves it, with these classes."""
    by_name = {c.name: c for c in classes}
    if not by_name:
        return list(pods)
    return [admit_runtime_class(pod, by_name) for pod in pods]

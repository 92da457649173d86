"""Resource amounts as plain integers, and what a pod asks of a node.

Quantities are converted once, here: CPU to millicores, everything else
(memory, storage, pods, extended resources) to whole units rounded up, as
kube-scheduler's resource accounting does. The scheduler's hot paths then
only add and compare integers.

`pod_requests` follows the Kubernetes rule for a pod's effective request:
the sum of the regular containers and the sidecars (init containers with
restartPolicy Always), or the largest init-container phase if that is
bigger, plus the pod overhead; pod-level resources, when set, replace the
container aggregate for the resources they name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from allot.model.core import Container, Pod
from allot.model.quantity import Quantity

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"

# Used for scoring only, for containers that request nothing (kube-scheduler's non-zero requests).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

# Resources a pod-level `spec.resources` may set (PodLevelResources).
POD_LEVEL_RESOURCES = (CPU, MEMORY)

Amounts = dict[str, int]


def amount(name: str, quantity: Quantity) -> int:
    """The integer the scheduler accounts `quantity` of resource `name` in."""
    return quantity.milli_value() if name == CPU else quantity.value()


def amounts(resources: Mapping[str, Quantity]) -> Amounts:
    return {name: amount(name, q) for name, q in resources.items()}


def add_into(total: Amounts, extra: Mapping[str, int]) -> None:
    for name, value in extra.items():
        total[name] = total.get(name, 0) + value


def max_into(total: Amounts, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if value > total.get(name, 0):
            total[name] = value


def _container_requests(container: Container) -> Amounts:
    return amounts(container.resources.requests)


def _non_zero_requests(container: Container) -> Amounts:
    """A container's requests with the CPU and memory it does not ask for counted as kube-scheduler's
    scoring defaults (NonMissingContainerRequests: missing, not zero)."""
    found = amounts(container.resources.requests)
    found.setdefault(CPU, DEFAULT_MILLI_CPU_REQUEST)
    found.setdefault(MEMORY, DEFAULT_MEMORY_REQUEST)
    return found


def _aggregate(pod: Pod, of: Callable[[Container], Amounts], *, pod_level: bool) -> Amounts:
    """The Kubernetes rule (module docstring) over `of` each container's amounts."""
    spec = pod.spec
    requests: Amounts = {}
    for container in spec.containers:
        add_into(requests, of(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.init_containers:
        own = of(container)
        if container.restart_policy == "Always":
            # A sidecar keeps running beside the app containers and the init containers after it.
            add_into(requests, own)
            add_into(sidecars, own)
            phase = dict(sidecars)
        else:
            phase = dict(own)
            add_into(phase, sidecars)
        max_into(init_peak, phase)
    max_into(requests, init_peak)
    if pod_level and spec.resources is not None:
        for name in POD_LEVEL_RESOURCES:
            if name in spec.resources.requests:
                requests[name] = amount(name, spec.resources.requests[name])
    add_into(requests, amounts(spec.overhead))
    return requests


def pod_requests(pod: Pod) -> Amounts:
    """The resources `pod` needs on a node (without the pod slot itself)."""
    return {
        name: value for name, value in _aggregate(pod, _container_requests, pod_level=True).items() if value
    }


def nonzero_cpu_memory(pod: Pod, *, pod_level: bool = True) -> tuple[int, int]:
    """CPU (milli) and memory (bytes) for scoring, as kube-scheduler's non-zero requests: each
    container and init container counts 100m CPU / 200Mi memory for what it does not ask for, then
    the pod's rule as for its requests. Without `pod_level`, pod-level requests are not applied
    (what kube-scheduler v1.36's NodeResourcesFit scores the incoming pod with; the pods already on
    a node count theirs)."""
    found = _aggregate(pod, _non_zero_requests, pod_level=pod_level)
    return found.get(CPU, 0), found.get(MEMORY, 0)

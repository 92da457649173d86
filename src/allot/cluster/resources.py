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

from collections.abc import Iterable, Mapping

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


def _sum(containers: Iterable[Container]) -> Amounts:
    total: Amounts = {}
    for container in containers:
        add_into(total, amounts(container.resources.requests))
    return total


def pod_requests(pod: Pod) -> Amounts:
    """The resources `pod` needs on a node (without the pod slot itself)."""
    spec = pod.spec
    requests = _sum(spec.containers)
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.init_containers:
        own = amounts(container.resources.requests)
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
    if spec.resources is not None:
        for name in POD_LEVEL_RESOURCES:
            if name in spec.resources.requests:
                requests[name] = amount(name, spec.resources.requests[name])
    add_into(requests, amounts(spec.overhead))
    return {name: value for name, value in requests.items() if value}


def nonzero_cpu_memory(pod: Pod) -> tuple[int, int]:
    """CPU (milli) and memory (bytes) for scoring: containers asking nothing count as a small default."""
    cpu = memory = 0
    for container in pod.spec.containers:
        requests = container.resources.requests
        cpu += amount(CPU, requests[CPU]) if CPU in requests else DEFAULT_MILLI_CPU_REQUEST
        memory += amount(MEMORY, requests[MEMORY]) if MEMORY in requests else DEFAULT_MEMORY_REQUEST
    exact = pod_requests(pod)
    return max(cpu, exact.get(CPU, 0)), max(memory, exact.get(MEMORY, 0))

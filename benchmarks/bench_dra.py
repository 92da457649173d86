"""Benchmarks of allot.dra: one figure per line.

    PYTHONPATH=src python benchmarks/bench_dra.py [--quick]

Shapes (devices carry attributes like scheduler_perf's DRA test driver:
model, family, driverVersion, numa, uuid; capacity memory):

Each figure is the best of five rounds (noise on a shared machine only adds
time).

* single-claim N-devices: one single-device claim, class selector on the
  driver only, on a node with N devices. "cold" builds a new SliceIndex and
  CEL environment per allocation (pool gathering, compiling, evaluating);
  "new-node" uses a warm environment on a node not seen before; "warm"
  repeats on the same node (what a scheduler does for pod after pod).
* match-attribute: 8 GPUs + 8 NICs on two PCIe roots, a claim for 2 GPUs
  and 2 NICs with matchAttribute pcieRoot, half the GPUs already allocated.
* partitionable backtracking: MIG-like partitions of one GPU sharing
  counters, a claim whose first choices exhaust the counters.
* pathological #131730: n devices requested where only n-1 fit, on
  distinct devices (symmetry pruning cannot help); time and steps until the
  step budget stops the search, and the same on identical devices with
  symmetry pruning.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from allot.cel import SelectorEnvironment
from allot.dra import AllocatedState, Allocation, Allocator, Features, NoAllocation, SliceIndex
from allot.model import kinds
from allot.model.codec import decode
from allot.model.conversion import to_v1_shape
from allot.model.core import Node
from allot.model.defaults import apply_defaults
from allot.model.resource import DeviceClass, ResourceClaim, ResourceSlice

DRIVER = "gpu.example.com"


def _record(raw: dict[str, Any]) -> Any:
    cls = kinds.lookup(raw["apiVersion"], raw["kind"])
    assert cls is not None
    return apply_defaults(decode(to_v1_shape(raw), cls))


def node(name: str) -> Node:
    result: Node = _record({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    return result


def gpu_class(name: str = "gpu", driver: str = DRIVER, extra: str = "") -> DeviceClass:
    expression = f'device.driver == "{driver}"' + (f" && {extra}" if extra else "")
    result: DeviceClass = _record(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }
    )
    return result


def gpu(index: int, node_name: str, **attributes: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "model": {"string": "A100"},
        "family": {"string": "GPU"},
        "driverVersion": {"version": "1.2.3"},
        "numa": {"int": index // 4},
        "uuid": {"string": f"{node_name}-gpu-{index}"},
    }
    attrs.update(attributes)
    return {"name": f"gpu-{index}", "attributes": attrs, "capacity": {"memory": {"value": "80Gi"}}}


def node_slice(
    node_name: str, devices: list[dict[str, Any]], driver: str = DRIVER, **spec: Any
) -> ResourceSlice:
    result: ResourceSlice = _record(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{driver}"},
            "spec": {
                "driver": driver,
                "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                "nodeName": node_name,
                "devices": devices,
                **spec,
            },
        }
    )
    return result


def claim(name: str, requests: list[dict[str, Any]], **devices: Any) -> ResourceClaim:
    result: ResourceClaim = _record(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": requests, **devices}},
        }
    )
    return result


def measure(fn: Callable[[], object], *, seconds: float, rounds: int = 5) -> tuple[float, int]:
    """Microseconds per call: the best of `rounds` rounds (the machine's noise only adds time)."""
    fn()
    start = time.perf_counter()
    fn()
    per_call = max(time.perf_counter() - start, 1e-7)
    number = max(1, int(seconds / rounds / per_call))
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best * 1e6, number * rounds


def report(label: str, micros: float, unit: str = "alloc", extra: str = "") -> None:
    value = f"{micros / 1000:.2f} ms" if micros >= 10_000 else f"{micros:.1f} us"
    print(f"dra {label:<48} {value}/{unit}{('  ' + extra) if extra else ''}", flush=True)


def single_claim(devices: int, seconds: float) -> None:
    classes = {"gpu": gpu_class()}
    the_claim = claim("c", [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}])
    state = AllocatedState()
    nodes = [node(f"node-{i}") for i in range(2000)]
    slices = [node_slice(n.metadata.name, [gpu(i, n.metadata.name) for i in range(devices)]) for n in nodes]

    def cold() -> object:
        allocator = Allocator(classes, SliceIndex(slices[:1]), selectors=SelectorEnvironment())
        return allocator.allocate(nodes[0], [the_claim], state)

    micros, _ = measure(cold, seconds=seconds)
    report(f"single-claim {devices}-devices cold", micros)

    env = SelectorEnvironment()
    index = SliceIndex(slices)
    allocator = Allocator(classes, index, selectors=env)
    allocator.allocate(nodes[0], [the_claim], state)
    position = [1]

    def new_node() -> object:
        n = nodes[position[0] % len(nodes)]
        position[0] += 1
        return allocator.allocate(n, [the_claim], state)

    micros, _ = measure(new_node, seconds=min(seconds, 0.5))
    report(f"single-claim {devices}-devices new-node", micros)

    def warm() -> object:
        return allocator.allocate(nodes[0], [the_claim], state)

    outcome = warm()
    assert isinstance(outcome, Allocation), outcome
    micros, _ = measure(warm, seconds=seconds)
    report(f"single-claim {devices}-devices warm", micros)

    # Most devices already taken: the search skips them by the cheap in-use test.
    busy = AllocatedState()
    for i in range(devices - 1):
        busy.add_device(f"{DRIVER}/node-0/gpu-{i}")

    def warm_busy() -> object:
        return allocator.allocate(nodes[0], [the_claim], busy)

    assert isinstance(warm_busy(), Allocation)
    micros, _ = measure(warm_busy, seconds=seconds)
    report(f"single-claim {devices}-devices warm, {devices - 1} in use", micros)


def match_attribute(seconds: float) -> None:
    nic_driver = "nic.example.com"
    gpus = [gpu(i, "node-0", pcieRoot={"string": f"pci-{i // 4}"}) for i in range(8)]
    nics = [
        {
            "name": f"nic-{i}",
            "attributes": {"pcieRoot": {"string": f"pci-{i // 4}"}, "uuid": {"string": f"nic-{i}"}},
        }
        for i in range(8)
    ]
    slices = [node_slice("node-0", gpus), node_slice("node-0", nics, driver=nic_driver)]
    classes = {"gpu": gpu_class(), "nic": gpu_class("nic", nic_driver)}
    the_claim = claim(
        "c",
        [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}},
            {"name": "nic", "exactly": {"deviceClassName": "nic", "count": 2}},
        ],
        constraints=[{"matchAttribute": "resource.kubernetes.io/pcieRoot"}],
    )
    # pcieRoot is published unqualified by each driver, so match on the GPU driver's
    # qualified name would only see GPUs; use a common domain instead.
    for s in slices:
        for d in s.spec.devices:
            d.attributes["resource.kubernetes.io/pcieRoot"] = d.attributes.pop("pcieRoot")
    state = AllocatedState()
    for i in (0, 1, 2):
        state.add_device(f"{DRIVER}/node-0/gpu-{i}")
    allocator = Allocator(classes, SliceIndex(slices), selectors=SelectorEnvironment())
    outcome = allocator.allocate(node("node-0"), [the_claim], state)
    assert isinstance(outcome, Allocation), outcome
    micros, _ = measure(lambda: allocator.allocate(node("node-0"), [the_claim], state), seconds=seconds)
    report("match-attribute 8 GPUs + 8 NICs warm", micros, extra=f"steps={outcome.steps}")


def partitionable(seconds: float) -> None:
    # One GPU with 7 compute slices and 8 memory slices, MIG-like partitions.
    profiles = [("7g", 7, 8), ("4g", 4, 4), ("3g", 3, 4), ("2g", 2, 2), ("1g", 1, 1)]
    devices: list[dict[str, Any]] = []
    for name, compute, memory in profiles:
        for copy in range(7 // compute):
            devices.append(
                {
                    "name": f"mig-{name}-{copy}",
                    "attributes": {"profile": {"string": name}, "uuid": {"string": f"mig-{name}-{copy}"}},
                    "consumesCounters": [
                        {
                            "counterSet": "gpu-0",
                            "counters": {
                                "compute": {"value": str(compute)},
                                "memory": {"value": str(memory)},
                            },
                        }
                    ],
                }
            )
    device_slice = node_slice("node-0", devices)
    counters = _record(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "node-0-counters"},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 2},
                "nodeName": "node-0",
                "sharedCounters": [
                    {"name": "gpu-0", "counters": {"compute": {"value": "7"}, "memory": {"value": "8"}}}
                ],
            },
        }
    )
    device_slice = _record(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "node-0-devices"},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 2},
                "nodeName": "node-0",
                "devices": devices,
            },
        }
    )
    classes = {"mig": gpu_class("mig")}
    # 3 + 2 + 2 compute, but the first picks (7g, 4g) exhaust the counters: backtracking.
    the_claim = claim(
        "c",
        [
            {"name": "a", "exactly": {"deviceClassName": "mig", "count": 1}},
            {
                "name": "b",
                "exactly": {
                    "deviceClassName": "mig",
                    "count": 2,
                    "selectors": [
                        {"cel": {"expression": 'device.attributes["gpu.example.com"].profile == "2g"'}}
                    ],
                },
            },
        ],
    )
    for pruning in (False, True):
        allocator = Allocator(
            classes,
            SliceIndex([counters, device_slice]),
            selectors=SelectorEnvironment(),
            symmetry_pruning=pruning,
        )
        outcome = allocator.allocate(node("node-0"), [the_claim], AllocatedState())
        assert isinstance(outcome, Allocation), outcome
        micros, _ = measure(
            lambda a=allocator: a.allocate(node("node-0"), [the_claim], AllocatedState()), seconds=seconds
        )
        label = "partitionable backtracking" + (" (symmetry pruning)" if pruning else "")
        report(label, micros, extra=f"steps={outcome.steps}")
    del device_slice


def pathological(seconds: float) -> None:
    del seconds
    shapes = (
        # (devices, distinct, symmetry pruning): n devices, one taken, n wanted.
        (12, True, False),  # upstream's search: every ordered subset, stopped by the budget
        (12, True, True),  # pruning: subsets instead of sequences (2^11)
        (12, False, True),  # identical devices: one representative per slot
        (24, True, True),  # 2^23 subsets: the budget stops it
    )
    for count, distinct, pruning in shapes:
        devices = []
        for i in range(count):
            attributes: dict[str, Any] = {"model": {"string": "A100"}}
            if distinct:
                attributes["uuid"] = {"string": f"gpu-{i}"}
            devices.append({"name": f"gpu-{i}", "attributes": attributes})
        the_slice = node_slice("node-0", devices)
        classes = {"gpu": gpu_class()}
        the_claim = claim("c", [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count}}])
        state = AllocatedState()
        state.add_device(f"{DRIVER}/node-0/gpu-5")
        allocator = Allocator(
            classes, SliceIndex([the_slice]), selectors=SelectorEnvironment(), symmetry_pruning=pruning
        )
        start = time.perf_counter()
        outcome = allocator.allocate(node("node-0"), [the_claim], state)
        elapsed = (time.perf_counter() - start) * 1e6
        assert isinstance(outcome, NoAllocation)
        what = "distinct" if distinct else "identical"
        label = f"pathological #131730 {count}-of-{count - 1} {what}" + (" pruned" if pruning else "")
        report(
            label,
            elapsed,
            unit="give-up",
            extra=f"steps={outcome.steps} budget_exhausted={outcome.budget_exhausted}",
        )


def scorer(seconds: float) -> None:
    classes = {"gpu": gpu_class()}
    the_claim = claim("c", [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}])
    slices = [node_slice("node-0", [gpu(i, "node-0") for i in range(8)])]
    allocator = Allocator(classes, SliceIndex(slices), selectors=SelectorEnvironment())
    state = AllocatedState()

    def prefer_high_numa(candidate: Any) -> float:
        return float(sum(p.device.attributes["numa"].int_value or 0 for p in candidate.devices()))

    outcome = allocator.allocate(node("node-0"), [the_claim], state, scorer=prefer_high_numa)
    assert isinstance(outcome, Allocation)
    micros, _ = measure(
        lambda: allocator.allocate(node("node-0"), [the_claim], state, scorer=prefer_high_numa),
        seconds=seconds,
    )
    report("scorer 2-of-8 GPUs, every candidate", micros, extra=f"candidates={outcome.candidates}")


def features_off(seconds: float) -> None:
    classes = {"gpu": gpu_class()}
    the_claim = claim("c", [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}])
    slices = [node_slice("node-0", [gpu(i, "node-0") for i in range(8)])]
    allocator = Allocator(
        classes,
        SliceIndex(slices),
        features=Features.none(),
        selectors=SelectorEnvironment(consumable_capacity=False),
    )
    state = AllocatedState()
    assert isinstance(allocator.allocate(node("node-0"), [the_claim], state), Allocation)
    micros, _ = measure(lambda: allocator.allocate(node("node-0"), [the_claim], state), seconds=seconds)
    report("single-claim 8-devices warm, GA features only", micros)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="shorter measurements")
    args = parser.parse_args()
    seconds = 0.3 if args.quick else 1.5
    for devices in (8, 64, 128):
        single_claim(devices, seconds)
    features_off(seconds)
    match_attribute(seconds)
    partitionable(seconds)
    scorer(seconds)
    pathological(seconds)


if __name__ == "__main__":
    main()

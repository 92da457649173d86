"""Random clusters and workloads for differential testing, deterministic from a seed.

`generate(seed)` returns a `Scenario`: the cluster objects (namespaces, PriorityClasses,
DeviceClasses, Nodes with their status, ResourceSlices, claim templates, shared claims), the
pods that run before the recorded part (bound by kube-scheduler first, they are part of the
input), and the pending pods in creation order. Each seed draws a handful of feature families
(device-plugin GPUs; DRA GPUs with NICs, selectors, matchAttribute constraints, firstAvailable,
All mode and device taints; MIG partitions with shared counters; shared GPUs with consumable
capacity; extended resources served by DRA; node taints, cordons and node affinity; priorities
with preemption; pod affinity, anti-affinity, topology spread and host ports; init containers,
sidecars, RuntimeClass overhead, ephemeral storage and nodes that take few pods; local volumes that
wait for their first consumer; disruption budgets over running pods) and sizes the
cluster so that some pods compete and some are left pending.

Every object is valid for the API server of ../shared/k8s (v1.36 with DRA's gates on): the live
test creates them there. Pending pods are created in order of priority (highest first, then
as drawn), so kube-scheduler's queue order (creation order, one pod at a time) is the order in
which allot takes them (priority, then creation). Groups for pod affinity, anti-affinity, spread
and host ports (features.POD_GROUPS) are built so that ignoring the feature changes the outcome: a group with
required anti-affinity has more pods than nodes it may use, and so on (docs/differential.md).

Command line (writes the objects of one scenario as YAML):
    python tests/differential/generate.py SEED [--size small|large]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
POOL_LABEL = "example.com/pool"
MODEL_LABEL = "example.com/gpu-model"
DEDICATED = "example.com/dedicated"
UNHEALTHY = "example.com/unhealthy"
PLUGIN_GPU = "nvidia.com/gpu"
EXTENDED_GPU = "example.com/gpu"
NAMESPACES = ("team-a", "team-b")
PRIORITIES = {"low": 100, "high": 1000}
IMAGE = "registry.k8s.io/pause:3.10"
MODELS = {"a100": "40Gi", "h100": "80Gi", "l40": "48Gi"}
DRIVER_VERSIONS = ("535.104.5", "550.54.15")

# Feature families and the chance a seed draws each.
FAMILIES: dict[str, float] = {
    "device-plugin": 0.35,
    "dra-gpu": 0.7,
    "mig": 0.3,
    "shared-gpu": 0.3,
    "nic": 0.5,
    "selectors": 0.6,
    "constraints": 0.4,
    "first-available": 0.4,
    "all-mode": 0.35,
    "device-taints": 0.3,
    "extended-resource-dra": 0.25,
    "shared-claim": 0.35,
    "node-taints": 0.35,
    "cordoned": 0.1,
    "node-affinity": 0.4,
    "priorities": 0.4,
    "cross-namespace-sharing": 0.4,
    "pod-anti-affinity": 0.07,
    "pod-affinity": 0.07,
    "topology-spread": 0.07,
    "host-ports": 0.07,
}
DEVICE_FAMILIES = ("device-plugin", "dra-gpu", "mig", "shared-gpu")

# How pods ask for their node's resources beyond one container's CPU and memory, drawn from a
# stream of their own (`_Generator.shapes`) so that adding them changed nothing else a seed draws:
# init containers (each one's request a floor), sidecars (restartable init containers, added to
# the pod's sum), pod overhead from a RuntimeClass (added on top by the API server's RuntimeClass
# admission), ephemeral storage, nodes that take only a few pods, and pod-level requests (which
# stand for the containers' sum).
SHAPE_FAMILIES: dict[str, float] = {
    "init-containers": 0.3,
    "sidecars": 0.25,
    "pod-overhead": 0.2,
    "ephemeral-storage": 0.25,
    "max-pods": 0.2,
    "pod-level-resources": 0.15,
}
# What only scores decide (the step comparison holds kube-scheduler's node to allot's best-scored
# ones), drawn from a third stream (`_Generator.soft`): preferred pod affinity and anti-affinity,
# ScheduleAnyway spreading, and images some nodes have cached (ImageLocality).
SOFT_FAMILIES: dict[str, float] = {
    "preferred-pod-affinity": 0.3,
    "soft-spread": 0.25,
    "cached-images": 0.3,
}
# Local volumes (drawn from a stream of their own, `_Generator.storage`, so that they change nothing
# else a seed draws): a StorageClass that waits for the first consumer with no provisioner, a few
# PersistentVolumes pinned to nodes by node affinity (or, one in four, only labelled with a zone),
# and claims that pods use, some too large for any volume and some used by two pods (which then
# share the volume's node).
VOLUME_CHANCE = 0.3
# Disruption budgets over running pods (a fifth stream, `_Generator.budgets`, drawn only with
# priorities): a label on some running pods of one namespace, a budget over it (minAvailable 1,
# maxUnavailable 0 or 50 %), and sometimes a budget with an empty selector in the other namespace,
# which kube-scheduler's preemption reads as covering nothing. No kubelet runs, so no pod is Ready
# and the disruption controller allows no disruption: preemption prefers victims no budget covers.
BUDGET_CHANCE = 0.6
BUDGET_LABEL = "example.com/budget"
LOCAL_CLASS = "local-wffc"
VOLUME_SIZES = ("5Gi", "10Gi", "20Gi")
VOLUME_CLAIM_SIZES = ("4Gi", "8Gi", "8Gi", "16Gi", "30Gi")
# A claim binds only a volume offering its mode; a ReadWriteOncePod claim is used by one pod at a
# time (VolumeRestrictions: a second user waits, or preempts the first).
VOLUME_ACCESS_MODES = ("ReadWriteOnce", "ReadWriteOnce", "ReadWriteOnce", "ReadWriteOncePod")
APPS = ("web", "batch", "cache")
# Image names with the sizes nodes report for them. ImageLocality scores a node by the size of the
# pod's images there times the share of nodes holding them, over 23 MiB to 1000 MiB a container:
# the large one decides between nodes, the small one barely counts.
IMAGES = {
    "example.com/train:1": 2 * 2**30,
    "example.com/serve:1": 800 * 2**20,
    "example.com/tools:1": 60 * 2**20,
}
RUNTIME_CLASS = "sandboxed"
# A VM-sandboxed runtime's overhead; large enough to decide whether a pod fits a tight node.
OVERHEAD = {"cpu": "500m", "memory": "512Mi"}
STORAGE_CHOICES = ("1Gi", "2Gi", "5Gi", "10Gi", "20Gi")
# Init containers often ask more than the app (a build or a data download): their peak decides.
INIT_CPU_CHOICES = ("500m", "1", "2", "4")
INIT_MEMORY_CHOICES = ("512Mi", "1Gi", "4Gi", "8Gi")
# Nodes' CPUs where init containers, sidecars or overhead are drawn, so that CPU is contended.
TIGHT_CPU_CHOICES = (4, 6, 8)

CPU_CHOICES = ("100m", "250m", "500m", "500m", "1", "1", "2", "3")
MEMORY_CHOICES = ("128Mi", "512Mi", "1Gi", "1Gi", "2Gi", "4Gi")

Obj = dict[str, Any]


@dataclass
class Scenario:
    """What the runner creates, in order: `cluster`, then `running` pods, then `pending` pods."""

    name: str
    seed: int
    families: frozenset[str]
    cluster: list[Obj]
    running: list[Obj]
    pending: list[Obj]
    # What `generate` was asked for: the corpus test generates the case again from seed and size.
    size: str = "small"

    def objects(self) -> list[Obj]:
        return [*self.cluster, *self.running, *self.pending]


@dataclass
class _Node:
    name: str
    kind: str  # cpu | plugin | dra | mig | shared
    zone: str
    cpu: int
    memory_gi: int
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[Obj] = field(default_factory=list)
    unschedulable: bool = False
    extended: dict[str, str] = field(default_factory=dict)
    model: str = ""


def _milli(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000


def _mebi(memory: str) -> int:
    return int(memory[:-2]) * 1024 if memory.endswith("Gi") else int(memory[:-2])


def _selector(expression: str) -> Obj:
    return {"cel": {"expression": expression}}


def _attr(name: str, driver: str = GPU_DRIVER) -> str:
    return f'device.attributes["{driver}"].{name}'


class _Generator:
    def __init__(self, seed: int, size: str) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.large = size == "large"
        rng = self.rng
        self.families = {f for f, chance in FAMILIES.items() if rng.random() < chance}
        if not self.families & set(DEVICE_FAMILIES):
            self.families.add(rng.choice(DEVICE_FAMILIES))
        if "dra-gpu" not in self.families:
            self.families -= {"nic", "constraints", "all-mode", "device-taints", "extended-resource-dra"}
        if "shared-gpu" not in self.families:
            self.families.discard("cross-namespace-sharing")
        if not self.families & {"dra-gpu", "mig", "shared-gpu"}:
            self.families -= {"selectors", "first-available", "shared-claim"}
        self.shapes = random.Random(f"pod-shapes:{seed}")
        self.families |= {f for f, chance in SHAPE_FAMILIES.items() if self.shapes.random() < chance}
        self.soft = random.Random(f"soft-constraints:{seed}")
        self.families |= {f for f, chance in SOFT_FAMILIES.items() if self.soft.random() < chance}
        self.storage = random.Random(f"volumes:{seed}")
        if self.storage.random() < VOLUME_CHANCE:
            self.families.add("volumes")
        self.budgets = random.Random(f"budgets:{seed}")
        if self.has("priorities") and self.budgets.random() < BUDGET_CHANCE:
            self.families.add("budgets")
        self.nodes: list[_Node] = []
        self.cluster: list[Obj] = []
        self.templates: dict[tuple[str, str], str] = {}  # (namespace, spec yaml) -> name
        self.template_objects: list[Obj] = []
        self.claims: list[Obj] = []
        self.shared_claims: list[tuple[str, str]] = []  # (namespace, name)
        self.group = 0

    def has(self, family: str) -> bool:
        return family in self.families

    # -- cluster ------------------------------------------------------------------------

    def build_nodes(self) -> None:
        rng = self.rng
        scale = 2 if self.large else 1
        counts = {"cpu": rng.randint(1, 2) * scale}
        if self.has("device-plugin"):
            counts["plugin"] = rng.randint(1, 2) * scale
        if self.has("dra-gpu"):
            counts["dra"] = rng.randint(1, 3) * scale
        if self.has("mig"):
            counts["mig"] = rng.randint(1, 2) * scale
        if self.has("shared-gpu"):
            counts["shared"] = rng.randint(1, 2) * scale
        device_zones = ("zone-a", "zone-b")
        turn = rng.randrange(2)
        for kind, count in counts.items():
            for i in range(count):
                name = f"{kind}-{i}"
                if kind == "cpu":
                    zone = "zone-c"
                else:
                    zone = device_zones[turn % 2]
                    turn += 1
                node = _Node(
                    name=name, kind=kind, zone=zone, cpu=rng.choice((8, 16, 32)),
                    memory_gi=rng.choice((32, 64, 128)),
                )  # fmt: skip
                node.labels = {HOSTNAME: name, ZONE: zone, POOL_LABEL: kind}
                if kind == "plugin":
                    node.extended[PLUGIN_GPU] = str(rng.choice((2, 4, 8)))
                if kind in ("dra", "plugin"):
                    node.model = rng.choice(sorted(MODELS))
                    node.labels[MODEL_LABEL] = node.model
                if kind != "cpu" and self.has("node-taints") and rng.random() < 0.6:
                    node.taints.append({"key": DEDICATED, "value": "gpu", "effect": "NoSchedule"})
                if kind == "cpu" and self.has("node-taints") and rng.random() < 0.5:
                    node.taints.append({"key": "example.com/batch-only", "effect": "PreferNoSchedule"})
                self.nodes.append(node)
        if self.has("cordoned") and len(self.nodes) > 2:
            rng.choice(self.nodes).unschedulable = True

    def node_objects(self) -> list[Obj]:
        objects = []
        for node in self.nodes:
            amounts = {
                "cpu": str(node.cpu), "memory": f"{node.memory_gi}Gi", "pods": "110", **node.extended,
            }  # fmt: skip
            if self.families & {"init-containers", "sidecars", "pod-overhead"}:
                amounts["cpu"] = str(self.shapes.choice(TIGHT_CPU_CHOICES))
            if self.has("max-pods"):
                amounts["pods"] = str(self.shapes.randint(2, 5))
            if self.has("ephemeral-storage"):
                amounts["ephemeral-storage"] = f"{self.shapes.choice((10, 20, 50))}Gi"
            images = []
            if self.has("cached-images"):
                held = [name for name in sorted(IMAGES) if self.soft.random() < 0.5]
                images = [{"names": [name], "sizeBytes": IMAGES[name]} for name in held]
            spec: Obj = {}
            if node.taints:
                spec["taints"] = node.taints
            if node.unschedulable:
                spec["unschedulable"] = True
            objects.append({
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": node.name, "labels": dict(node.labels)},
                "spec": spec,
                "status": {
                    "allocatable": amounts, "capacity": dict(amounts), **({"images": images} if images else {}),
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                    "message": "kubelet is posting ready status"}],
                },
            })  # fmt: skip
        return objects

    def device_classes(self) -> list[Obj]:
        def cls(name: str, expression: str, extended: str = "") -> Obj:
            spec: Obj = {"selectors": [_selector(expression)]}
            if extended:
                spec["extendedResourceName"] = extended
            return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                    "spec": spec}  # fmt: skip

        gpu = f'device.driver == "{GPU_DRIVER}" && {_attr("type")} == '
        classes = [
            cls("gpu.example.com", gpu + '"gpu"'),
            cls("mig.example.com", gpu + '"mig"'),
            cls("shared-gpu.example.com", gpu + '"shared"'),
            cls("nic.example.com", f'device.driver == "{NIC_DRIVER}"'),
        ]
        if self.has("extended-resource-dra"):
            classes.append(cls("ext-gpu.example.com", gpu + '"gpu"', EXTENDED_GPU))
        return classes

    def slices(self) -> list[Obj]:
        objects: list[Obj] = []
        for node in self.nodes:
            if node.kind == "dra":
                objects.extend(self._dra_slices(node))
            elif node.kind == "mig":
                objects.extend(self._mig_slices(node))
            elif node.kind == "shared":
                objects.append(self._shared_slice(node))
        return objects

    @staticmethod
    def _slice(name: str, node: str, driver: str, pool_count: int = 1, **spec: Any) -> Obj:
        return {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": pool_count}, **spec},
        }  # fmt: skip

    def _dra_slices(self, node: _Node) -> list[Obj]:
        rng = self.rng
        count = rng.choice((2, 4, 4, 8))
        version = rng.choice(DRIVER_VERSIONS)
        devices = []
        for i in range(count):
            numa = i * 2 // count
            device: Obj = {
                "name": f"gpu-{i}",
                "attributes": {
                    "type": {"string": "gpu"}, "model": {"string": node.model}, "index": {"int": i},
                    "numa": {"int": numa}, "driverVersion": {"version": version},
                    "resource.kubernetes.io/pcieRoot": {"string": f"pci-{node.name}-{numa}"},
                },
                "capacity": {"memory": {"value": MODELS[node.model]}},
            }  # fmt: skip
            if self.has("device-taints") and rng.random() < 0.25:
                device["taints"] = [{"key": UNHEALTHY, "value": "true", "effect": "NoSchedule"}]
            devices.append(device)
        objects = [self._slice(f"{node.name}-gpus", node.name, GPU_DRIVER, devices=devices)]
        if self.has("nic"):
            nics = [
                {"name": f"nic-{n}", "attributes": {
                    "type": {"string": "nic"}, "numa": {"int": n},
                    "resource.kubernetes.io/pcieRoot": {"string": f"pci-{node.name}-{n}"}}}
                for n in range(2)
            ]  # fmt: skip
            objects.append(self._slice(f"{node.name}-nics", node.name, NIC_DRIVER, devices=nics))
        return objects

    def _mig_slices(self, node: _Node) -> list[Obj]:
        gpus = self.rng.randint(1, 2)
        # Every device of the class carries the attributes selectors read: a selector that fails
        # on one device aborts kube-scheduler's whole cycle (docs/differential.md).
        version = self.rng.choice(DRIVER_VERSIONS)
        counter_sets = []
        devices = []
        for g in range(gpus):
            counters = {f"memory-slice-{s}": {"value": "1"} for s in range(8)}
            counter_sets.append({"name": f"gpu-{g}-counters", "counters": counters})
            placements = [("7g", 0, 8)] + [("3g", s, 4) for s in (0, 4)] + [("2g", s, 2) for s in (0, 2, 4)]
            placements += [("1g", s, 1) for s in range(7)]
            for profile, start, width in placements:
                whole = profile == "7g"
                devices.append({
                    "name": f"gpu-{g}" if whole else f"gpu-{g}-{profile}-{start}",
                    "attributes": {
                        "type": {"string": "gpu" if whole else "mig"}, "model": {"string": "h100"},
                        "profile": {"string": profile}, "parent": {"int": g}, "start": {"int": start},
                        "index": {"int": g}, "numa": {"int": g}, "driverVersion": {"version": version},
                    },
                    "capacity": {"memory": {"value": f"{10 * width}Gi"}},
                    "consumesCounters": [{
                        "counterSet": f"gpu-{g}-counters",
                        "counters": {f"memory-slice-{s}": {"value": "1"} for s in range(start, start + width)},
                    }],
                })  # fmt: skip
        return [
            self._slice(f"{node.name}-counters", node.name, GPU_DRIVER, 2, sharedCounters=counter_sets),
            self._slice(f"{node.name}-devices", node.name, GPU_DRIVER, 2, devices=devices),
        ]

    def _shared_slice(self, node: _Node) -> Obj:
        count = self.rng.randint(1, 3)
        devices = [
            {
                "name": f"shared-{i}",
                "allowMultipleAllocations": True,
                "attributes": {"type": {"string": "shared"}, "model": {"string": "a100"}, "index": {"int": i}},
                "capacity": {
                    "memory": {"value": "40Gi", "requestPolicy": {
                        "default": "40Gi", "validRange": {"min": "1Gi", "max": "40Gi", "step": "1Gi"}}},
                    "cores": {"value": "100", "requestPolicy": {
                        "default": "100", "validRange": {"min": "1", "max": "100", "step": "1"}}},
                },
            }
            for i in range(count)
        ]  # fmt: skip
        return self._slice(f"{node.name}-gpus", node.name, GPU_DRIVER, devices=devices)

    # -- claims ---------------------------------------------------------------------------

    def _gpu_selectors(self) -> list[Obj]:
        if not self.has("selectors") or self.rng.random() < 0.5:
            return []
        models = sorted({n.model for n in self.nodes if n.kind == "dra"} or MODELS)
        choice = self.rng.randrange(5)
        if choice == 0:
            return [_selector(f'{_attr("model")} == "{self.rng.choice(models)}"')]
        if choice == 1:
            amount = self.rng.choice(("40Gi", "48Gi", "64Gi"))
            return [_selector(f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("{amount}")) >= 0')]
        if choice == 2:
            return [_selector(f'{_attr("driverVersion")}.isGreaterThan(semver("540.0.0"))')]
        if choice == 3:
            return [_selector(f"{_attr('index')} < {self.rng.choice((1, 2, 4))}")]
        return [_selector(f'{_attr("model")} in ["{models[0]}", "h100"] && {_attr("numa")} == 1')]

    def _tolerations(self) -> list[Obj]:
        if self.has("device-taints") and self.rng.random() < 0.4:
            return [{"key": UNHEALTHY, "operator": "Exists", "effect": "NoSchedule"}]
        return []

    def _exact(self, cls: str, count: int = 1, selectors: list[Obj] | None = None, **extra: Any) -> Obj:
        request: Obj = {"deviceClassName": cls}
        if selectors:
            request["selectors"] = selectors
        if extra.get("allocationMode") == "All":
            request["allocationMode"] = "All"
        else:
            request["count"] = count
        for key in ("tolerations", "capacity"):
            if extra.get(key):
                request[key] = extra[key]
        return request

    def claim_spec(self) -> Obj | None:
        """A claim spec drawn from the families of this seed, None for a pod without DRA claims."""
        rng = self.rng
        makers: list[Callable[[], Obj]] = []
        if self.has("dra-gpu"):
            makers += [self._gpu_claim, self._gpu_claim]
            if self.has("nic"):
                makers.append(self._gpu_nic_claim)
            if self.has("all-mode"):
                makers.append(self._all_gpus_claim)
                if self.has("nic"):
                    makers.append(self._all_nics_claim)
        if self.has("mig"):
            makers += [self._mig_claim, self._mig_claim]
        if self.has("shared-gpu"):
            makers += [self._shared_claim, self._shared_claim]
        if self.has("first-available") and (self.has("dra-gpu") or self.has("mig")):
            makers.append(self._first_available_claim)
        return {"devices": rng.choice(makers)()} if makers else None

    def _gpu_claim(self) -> Obj:
        count = self.rng.choice((1, 1, 1, 2, 2, 3, 4))
        request = self._exact(
            "gpu.example.com", count, self._gpu_selectors(), tolerations=self._tolerations()
        )
        devices: Obj = {"requests": [{"name": "gpu", "exactly": request}]}
        if count > 1 and self.has("constraints") and self.rng.random() < 0.6:
            devices["constraints"] = [{"requests": ["gpu"], "matchAttribute": f"{GPU_DRIVER}/numa"}]
        return devices

    def _gpu_nic_claim(self) -> Obj:
        devices: Obj = {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": self._exact("gpu.example.com", 1, tolerations=self._tolerations()),
                },
                {"name": "nic", "exactly": self._exact("nic.example.com")},
            ]
        }
        if self.has("constraints") or self.rng.random() < 0.5:
            devices["constraints"] = [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
        return devices

    def _all_nics_claim(self) -> Obj:
        numa = self.rng.randrange(2)
        selectors = [_selector(f"{_attr('numa', NIC_DRIVER)} == {numa}")] if self.rng.random() < 0.5 else []
        return {"requests": [{"name": "nics", "exactly": self._exact("nic.example.com", selectors=selectors,
                                                                      allocationMode="All")}]}  # fmt: skip

    def _all_gpus_claim(self) -> Obj:
        """Every GPU of one NUMA node (All fails when any of them is taken)."""
        selectors = [_selector(f"{_attr('numa')} == {self.rng.randrange(2)}")]
        request = self._exact("gpu.example.com", selectors=selectors, allocationMode="All",
                              tolerations=self._tolerations())  # fmt: skip
        return {"requests": [{"name": "gpus", "exactly": request}]}

    def _mig_claim(self) -> Obj:
        profile = self.rng.choice(("1g", "1g", "2g", "3g"))
        count = self.rng.choice((1, 1, 2))
        selectors = [_selector(f'{_attr("profile")} == "{profile}"')]
        devices: Obj = {
            "requests": [{"name": "mig", "exactly": self._exact("mig.example.com", count, selectors)}]
        }
        if count > 1 and self.has("constraints"):
            devices["constraints"] = [{"requests": ["mig"], "matchAttribute": f"{GPU_DRIVER}/parent"}]
        return devices

    def _shared_claim(self) -> Obj:
        memory = self.rng.choice(("4Gi", "10Gi", "10Gi", "20Gi", "1500Mi", "30Gi"))
        cores = self.rng.choice(("10", "25", "50"))
        capacity = {"requests": {"memory": memory, "cores": cores}}
        return {
            "requests": [{"name": "gpu", "exactly": self._exact("shared-gpu.example.com", capacity=capacity)}]
        }

    def _first_available_claim(self) -> Obj:
        options: list[Obj] = []
        if self.has("dra-gpu"):
            for model in self.rng.sample(sorted(MODELS), 2):
                options.append({"deviceClassName": "gpu.example.com", "count": self.rng.choice((1, 2)),
                                "selectors": [_selector(f'{_attr("model")} == "{model}"')]})  # fmt: skip
        if self.has("mig"):
            options.append({"deviceClassName": "mig.example.com", "count": 1,
                            "selectors": [_selector(f'{_attr("profile")} == "3g"')]})  # fmt: skip
            options.append({"deviceClassName": "mig.example.com", "count": 2,
                            "selectors": [_selector(f'{_attr("profile")} == "1g"')]})  # fmt: skip
        self.rng.shuffle(options)
        chosen = options[: self.rng.randint(2, min(3, len(options)))] if len(options) > 1 else options
        for i, option in enumerate(chosen):
            option["name"] = f"alt{i}"
        return {"requests": [{"name": "gpu", "firstAvailable": chosen}]}

    def template_for(self, namespace: str, spec: Obj) -> str:
        key = (namespace, yaml.safe_dump(spec, sort_keys=True))
        name = self.templates.get(key)
        if name is None:
            name = f"claim-{len(self.templates)}"
            self.templates[key] = name
            self.template_objects.append({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": name, "namespace": namespace}, "spec": {"spec": spec},
            })  # fmt: skip
        return name

    def make_shared_claims(self) -> None:
        if not self.has("shared-claim"):
            return
        for i in range(self.rng.randint(1, 2)):
            spec = self.claim_spec()
            if spec is None:
                return
            name = f"shared-{i}"
            self.shared_claims.append(("team-a", name))
            self.claims.append({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "team-a"}, "spec": spec,
            })  # fmt: skip

    # -- pods -----------------------------------------------------------------------------

    def _pod(self, name: str, namespace: str, *, cpu: str | None = None, memory: str | None = None) -> Obj:
        rng = self.rng
        container: Obj = {
            "name": "main", "image": IMAGE,
            "resources": {"requests": {"cpu": cpu or rng.choice(CPU_CHOICES),
                                       "memory": memory or rng.choice(MEMORY_CHOICES)}},
        }  # fmt: skip
        return {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [container], "terminationGracePeriodSeconds": 0},
        }  # fmt: skip

    @staticmethod
    def _container(pod: Obj) -> Obj:
        container: Obj = pod["spec"]["containers"][0]
        return container

    def _add_claim(self, pod: Obj, entry: Obj) -> None:
        pod["spec"].setdefault("resourceClaims", []).append(entry)
        self._container(pod)["resources"].setdefault("claims", []).append({"name": entry["name"]})

    def _tolerate_dedicated(self, pod: Obj) -> None:
        if self.has("node-taints") and self.rng.random() < 0.8:
            pod["spec"].setdefault("tolerations", []).append(
                {"key": DEDICATED, "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
            )

    def _node_affinity(self, pod: Obj) -> None:
        if not self.has("node-affinity") or self.rng.random() < 0.5:
            return
        rng = self.rng
        choice = rng.randrange(4)
        if choice == 0:
            pod["spec"]["nodeSelector"] = {ZONE: rng.choice(("zone-a", "zone-b", "zone-c"))}
        elif choice == 1:
            models = sorted({n.model for n in self.nodes if n.model} or MODELS)
            pod["spec"]["nodeSelector"] = {MODEL_LABEL: rng.choice(models)}
        elif choice == 2:
            zones = rng.sample(["zone-a", "zone-b", "zone-c"], 2)
            pod["spec"]["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": zones}]}
                        ]
                    }
                }
            }
        else:
            pod["spec"]["affinity"] = {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": rng.choice((10, 50, 100)),
                            "preference": {
                                "matchExpressions": [
                                    {
                                        "key": POOL_LABEL,
                                        "operator": "NotIn",
                                        "values": [rng.choice(["dra", "mig", "plugin"])],
                                    }
                                ]
                            },
                        }
                    ]
                }
            }

    def _priority(self, pod: Obj, running: bool) -> None:
        if not self.has("priorities"):
            return
        if running:
            pod["spec"]["priorityClassName"] = "low"
            return
        choice = self.rng.choice(("high", "high", "low", ""))
        if choice:
            pod["spec"]["priorityClassName"] = choice

    def workload_pod(self, name: str, running: bool) -> Obj:
        """One pod of the plain kinds: CPU only, device-plugin GPUs, DRA claims, extended resources."""
        rng = self.rng
        kinds = ["cpu"]
        if self.has("device-plugin"):
            kinds += ["plugin"] * 3
        if self.has("dra-gpu") or self.has("mig") or self.has("shared-gpu"):
            kinds += ["dra"] * 5
        if self.has("shared-claim") and self.shared_claims:
            kinds += ["named"] * 2
        if self.has("extended-resource-dra"):
            kinds += ["extended"]
        # Low-priority pods that run hold CPU and device-plugin GPUs that high-priority ones may
        # preempt (kube-scheduler preempts for those, not for DRA devices).
        preemptible = running and self.has("priorities") and rng.random() < 0.5
        kind = rng.choice([k for k in kinds if k in ("cpu", "plugin")] if preemptible else kinds)
        namespace = rng.choice(NAMESPACES)
        spec = self.claim_spec() if kind == "dra" else None
        if kind == "dra" and spec is not None:
            shares = any(r.get("exactly", {}).get("capacity") for r in spec["devices"]["requests"])
            if shares and not self.has("cross-namespace-sharing"):
                namespace = "team-a"
        if kind == "named":
            namespace = "team-a"
        pod = self._pod(f"{name}-{kind}", namespace, cpu=rng.choice(("2", "3", "4")) if preemptible else None)
        if kind == "plugin":
            amount = str(rng.choice((1, 1, 2, 4)))
            self._container(pod)["resources"]["limits"] = {PLUGIN_GPU: amount}
            self._container(pod)["resources"]["requests"][PLUGIN_GPU] = amount
        elif kind == "dra" and spec is not None:
            self._add_claim(
                pod, {"name": "gpu", "resourceClaimTemplateName": self.template_for(namespace, spec)}
            )
        elif kind == "named":
            _, claim = rng.choice(self.shared_claims)
            self._add_claim(pod, {"name": "shared", "resourceClaimName": claim})
        elif kind == "extended":
            amount = str(rng.choice((1, 2)))
            self._container(pod)["resources"]["requests"][EXTENDED_GPU] = amount
            self._container(pod)["resources"]["limits"] = {EXTENDED_GPU: amount}
        if kind != "cpu":
            self._tolerate_dedicated(pod)
        self._node_affinity(pod)
        self._priority(pod, running)
        self._shape(pod)
        self._soften(pod)
        return pod

    def _soften(self, pod: Obj) -> None:
        """Preferred pod (anti-)affinity, ScheduleAnyway spreading, cached images (SOFT_FAMILIES)."""
        soft = self.soft
        spec = pod["spec"]
        app = soft.choice(APPS)
        if self.families & {"preferred-pod-affinity", "soft-spread"}:
            pod["metadata"].setdefault("labels", {})["tier"] = app
        if self.has("preferred-pod-affinity") and soft.random() < 0.5:
            kind = soft.choice(("podAffinity", "podAntiAffinity"))
            term = {
                "weight": soft.choice((1, 10, 50, 100)),
                "podAffinityTerm": {
                    "labelSelector": {"matchLabels": {"tier": soft.choice(APPS)}},
                    "topologyKey": soft.choice((HOSTNAME, ZONE)),
                },
            }
            spec.setdefault("affinity", {})[kind] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [term]
            }
        if self.has("soft-spread") and soft.random() < 0.5:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": soft.choice((1, 2)),
                    "topologyKey": soft.choice((HOSTNAME, ZONE)),
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"tier": app}},
                }
            ]
        if self.has("cached-images") and soft.random() < 0.6:
            self._container(pod)["image"] = soft.choice(sorted(IMAGES))

    def _shape(self, pod: Obj) -> None:
        """Init containers, sidecars, a RuntimeClass with overhead, ephemeral storage (SHAPE_FAMILIES)."""
        shapes = self.shapes
        spec = pod["spec"]

        def container(name: str, cpu: tuple[str, ...], memory: tuple[str, ...], **extra: Any) -> Obj:
            requests = {"cpu": shapes.choice(cpu), "memory": shapes.choice(memory)}
            return {"name": name, "image": IMAGE, "resources": {"requests": requests}, **extra}

        init: list[Obj] = []
        if self.has("init-containers") and shapes.random() < 0.5:
            init += [
                container(f"init-{i}", INIT_CPU_CHOICES, INIT_MEMORY_CHOICES)
                for i in range(shapes.randint(1, 2))
            ]
        if self.has("sidecars") and shapes.random() < 0.5:
            # Before or after the plain init containers: a plain one started after a sidecar
            # needs the sidecar's request beside its own.
            sidecar = container("sidecar", CPU_CHOICES, MEMORY_CHOICES, restartPolicy="Always")
            init.insert(shapes.randint(0, len(init)), sidecar)
        if init:
            spec["initContainers"] = init
        if self.has("pod-overhead") and shapes.random() < 0.5:
            spec["runtimeClassName"] = RUNTIME_CLASS
        if self.has("ephemeral-storage") and shapes.random() < 0.6:
            self._container(pod)["resources"]["requests"]["ephemeral-storage"] = shapes.choice(
                STORAGE_CHOICES
            )
        if self.has("pod-level-resources") and not init and shapes.random() < 0.5:
            # At least the containers' own (the API server refuses less); the difference is what a
            # pod-level request adds (room for processes outside the containers' own requests).
            own = self._container(pod)["resources"]["requests"]
            cpu = _milli(own["cpu"]) + shapes.choice((0, 500, 1000, 2000))
            memory = _mebi(own["memory"]) + shapes.choice((0, 512, 1024, 4096))
            spec["resources"] = {"requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}}

    # -- groups that pod affinity, anti-affinity, spread and host ports decide -------------

    def _group_label(self, pod: Obj, value: str) -> None:
        pod["metadata"]["labels"] = {"app": value}

    def _one_per_node_group(self, kind: str, namespace: str) -> tuple[str, list[Obj]]:
        """Small pods for zone C, one or two more than its nodes (a group that may hold one pod per
        node leaves some pending): the app label and the pods."""
        zone_nodes = [n for n in self.nodes if n.zone == "zone-c"]
        self.group += 1
        app = f"{kind}-{self.group}"
        pods = []
        for i in range(len(zone_nodes) + self.rng.randint(1, 2)):
            pod = self._pod(f"p-{app}-{i}", namespace, cpu="100m", memory="128Mi")
            self._group_label(pod, app)
            pod["spec"]["nodeSelector"] = {ZONE: "zone-c"}
            pods.append(pod)
        return app, pods

    def anti_affinity_group(self) -> list[Obj]:
        app, pods = self._one_per_node_group("anti", "team-b")
        for pod in pods:
            term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}
            pod["spec"]["affinity"] = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        return pods

    def affinity_group(self) -> list[Obj]:
        self.group += 1
        anchor_app, app = f"anchor-{self.group}", f"follow-{self.group}"
        target = self.rng.choice([n for n in self.nodes if n.kind == "cpu"])
        anchor = self._pod(f"p-{anchor_app}", "team-b", cpu="1", memory="1Gi")
        self._group_label(anchor, anchor_app)
        # Half the time the anchor cannot run anywhere: then no follower may run either.
        selector = {HOSTNAME: target.name} if self.rng.random() < 0.5 else {POOL_LABEL: "nowhere"}
        anchor["spec"]["nodeSelector"] = selector
        pods = [anchor]
        each = target.cpu // 3 + 1
        for i in range(self.rng.randint(3, 4)):
            pod = self._pod(f"p-{app}-{i}", "team-b", cpu=str(each), memory="1Gi")
            self._group_label(pod, app)
            pod["spec"]["affinity"] = {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": anchor_app}}, "topologyKey": HOSTNAME}
                    ]
                }
            }
            pods.append(pod)
        return pods

    def spread_group(self) -> list[Obj]:
        self.group += 1
        app = f"spread-{self.group}"
        pods = []
        for i in range(self.rng.randint(3, 5)):
            pod = self._pod(f"p-{app}-{i}", "team-a", cpu="100m", memory="128Mi")
            self._group_label(pod, app)
            # Zone C holds only nodes without devices: that empty domain caps the others at maxSkew.
            if self.has("device-plugin"):
                self._container(pod)["resources"]["requests"][PLUGIN_GPU] = "1"
                self._container(pod)["resources"]["limits"] = {PLUGIN_GPU: "1"}
            else:
                self._add_claim(
                    pod,
                    {
                        "name": "gpu",
                        "resourceClaimTemplateName": self.template_for(
                            "team-a",
                            {"devices": {"requests": [{"name": "gpu", "exactly": self._one_device()}]}},
                        ),
                    },
                )
            pod["spec"]["tolerations"] = [{"key": DEDICATED, "operator": "Exists"}]
            pod["spec"]["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": app}},
                }
            ]
            pods.append(pod)
        return pods

    def _one_device(self) -> Obj:
        """One device of whatever kind this seed's nodes have."""
        if self.has("dra-gpu"):
            return self._exact("gpu.example.com")
        if self.has("mig"):
            return self._exact("mig.example.com", 1, [_selector(f'{_attr("profile")} == "1g"')])
        return self._exact("shared-gpu.example.com", capacity={"requests": {"memory": "1Gi", "cores": "1"}})

    def ports_group(self) -> list[Obj]:
        _, pods = self._one_per_node_group("ports", "team-a")
        for pod in pods:
            self._container(pod)["ports"] = [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}]
        return pods

    # -- volumes ------------------------------------------------------------------------------

    def volume_objects(self, pods: list[Obj]) -> list[Obj]:
        """The StorageClass, the local volumes and the claims, and each chosen pod given its claim."""
        storage = self.storage
        objects: list[Obj] = [
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": LOCAL_CLASS},
             "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}
        ]  # fmt: skip
        for node in self.nodes:
            for i in range(storage.choice((0, 1, 1, 2))):
                volume: Obj = {
                    "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{node.name}-{i}"},
                    "spec": {
                        "capacity": {"storage": storage.choice(VOLUME_SIZES)},
                        "accessModes": [storage.choice(VOLUME_ACCESS_MODES)],
                        "persistentVolumeReclaimPolicy": "Retain", "storageClassName": LOCAL_CLASS,
                    },
                }  # fmt: skip
                if storage.random() < 0.25:
                    # A volume of the node's zone, not of the node: binding does not read the zone
                    # label, VolumeZone does once the claim is bound.
                    volume["metadata"]["labels"] = {ZONE: node.zone}
                    volume["spec"]["hostPath"] = {"path": f"/srv/{node.zone}/disk{i}"}
                else:
                    volume["spec"]["local"] = {"path": f"/mnt/disk{i}"}
                    volume["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": HOSTNAME, "operator": "In", "values": [node.name]}]}]}}  # fmt: skip
                objects.append(volume)
        claims: dict[str, list[str]] = {}  # namespace -> claim names made so far
        for pod in pods:
            if storage.random() >= 0.4:
                continue
            namespace = pod["metadata"]["namespace"]
            made = claims.setdefault(namespace, [])
            if made and storage.random() < 0.2:
                name = storage.choice(made)
            else:
                name = f"data-{pod['metadata']['name']}"
                made.append(name)
                objects.append({
                    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {"storageClassName": LOCAL_CLASS, "accessModes": [storage.choice(VOLUME_ACCESS_MODES)],
                             "resources": {"requests": {"storage": storage.choice(VOLUME_CLAIM_SIZES)}}},
                })  # fmt: skip
            pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
        return objects

    # -- disruption budgets ------------------------------------------------------------------

    def budget_objects(self, running: list[Obj]) -> list[Obj]:
        """Budgets over a label given to some running pods of one namespace (see BUDGET_CHANCE)."""
        budgets = self.budgets
        namespace = budgets.choice(NAMESPACES)
        for pod in running:
            if pod["metadata"]["namespace"] == namespace and budgets.random() < 0.6:
                pod["metadata"].setdefault("labels", {})[BUDGET_LABEL] = "keep"
        spec: Obj = budgets.choice(({"minAvailable": 1}, {"maxUnavailable": 0}, {"minAvailable": "50%"}))
        objects: list[Obj] = [
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
             "metadata": {"name": "keep", "namespace": namespace},
             "spec": {**spec, "selector": {"matchLabels": {BUDGET_LABEL: "keep"}}}}
        ]  # fmt: skip
        if budgets.random() < 0.3:
            other = next(n for n in NAMESPACES if n != namespace)
            objects.append(
                {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                 "metadata": {"name": "everything", "namespace": other},
                 "spec": {"minAvailable": 1, "selector": {}}}
            )  # fmt: skip
        return objects

    # -- the whole scenario ------------------------------------------------------------------

    def build(self) -> Scenario:
        rng = self.rng
        self.build_nodes()
        self.make_shared_claims()
        scale = 2 if self.large else 1
        running = [
            self.workload_pod(f"r{i:02d}", running=True)
            for i in range(rng.randint(0, 4) * scale + (3 if self.has("priorities") else 0))
        ]
        pending = [self.workload_pod(f"p{i:02d}", running=False) for i in range(rng.randint(8, 14) * scale)]
        groups = {
            "pod-anti-affinity": self.anti_affinity_group, "pod-affinity": self.affinity_group,
            "topology-spread": self.spread_group, "host-ports": self.ports_group,
        }  # fmt: skip
        for family, make in groups.items():
            if self.has(family):
                # Early, and first in priority: the group meets free nodes and devices, so the
                # feature it tests decides where its pods go.
                at = rng.randint(0, min(2, len(pending)))
                group = make()
                if self.has("priorities"):
                    for pod in group:
                        pod["spec"]["priorityClassName"] = "high"
                pending[at:at] = group
        values = {"": 0, **PRIORITIES}
        pending.sort(key=lambda p: -values[p["spec"].get("priorityClassName", "")])
        # Names sort in creation order (kubectl lists pods by name).
        for i, pod in enumerate(pending):
            pod["metadata"]["name"] = f"p{i:02d}-{pod['metadata']['name'].split('-', 1)[1]}"
        cluster: list[Obj] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in NAMESPACES
        ]
        if self.has("priorities"):
            cluster += [
                {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                 "value": value}
                for name, value in PRIORITIES.items()
            ]  # fmt: skip
        if self.has("pod-overhead"):
            cluster.append(
                {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": RUNTIME_CLASS},
                 "handler": RUNTIME_CLASS, "overhead": {"podFixed": dict(OVERHEAD)}}
            )  # fmt: skip
        cluster += self.device_classes()
        cluster += self.node_objects()
        cluster += self.slices()
        cluster += self.template_objects
        cluster += self.claims
        if self.has("volumes"):
            cluster += self.volume_objects([*running, *pending])
        if self.has("budgets"):
            cluster += self.budget_objects(running)
        return Scenario(
            name=f"case-{self.seed:04d}", seed=self.seed, families=frozenset(self.families),
            cluster=cluster, running=running, pending=pending, size="large" if self.large else "small",
        )  # fmt: skip


def generate(seed: int, *, size: str = "small") -> Scenario:
    """The scenario of `seed` (the same every time); `size` "large" doubles nodes and pods."""
    return _Generator(seed, size).build()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seed", type=int)
    parser.add_argument("--size", choices=("small", "large"), default="small")
    args = parser.parse_args(argv)
    scenario = generate(args.seed, size=args.size)
    sys.stdout.write(yaml.safe_dump_all(scenario.objects(), sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

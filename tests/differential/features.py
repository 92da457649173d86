"""The features a differential case uses, read from its objects, and those allot does not handle yet
(none today).

`features_of(objects)` tags a case by what its objects contain (not by what the generator meant
to make), so the tags hold for recorded dumps from anywhere. `GATED` is the one place that lists
the features allot's scheduler does not implement yet: the corpus test expects cases using them
to fail (strict), so removing a feature from `GATED` once the plugin lands turns those cases into
real checks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Features whose generated pods come as a group built so that ignoring the feature changes the
# outcome (InterPodAffinity, PodTopologySpread, NodePorts; docs/differential.md).
POD_GROUPS: frozenset[str] = frozenset({"pod-affinity", "pod-anti-affinity", "topology-spread", "host-ports"})

# kube-scheduler features allot does not implement yet: none. A feature listed here makes the
# corpus test expect its cases to fail (strict xfail).
GATED: frozenset[str] = frozenset()

# Every tag `features_of` can give, in report order.
ALL_FEATURES: tuple[str, ...] = (
    "cpu-memory",
    "device-plugin",
    "dra",
    "claim-template",
    "shared-claim",
    "selectors",
    "constraints",
    "first-available",
    "all-mode",
    "counters",
    "consumable-capacity",
    "device-taints",
    "extended-resource-dra",
    "node-taints",
    "cordoned",
    "node-affinity",
    "priorities",
    "running-pods",
    "cross-namespace-sharing",
    "pod-affinity",
    "pod-anti-affinity",
    "topology-spread",
    "host-ports",
    "init-containers",
    "sidecars",
    "pod-overhead",
    "ephemeral-storage",
    "max-pods",
    "pod-level-resources",
    "preferred-pod-affinity",
    "soft-spread",
    "cached-images",
    "volumes",
    "budgets",
)
# A node that takes fewer pods than this counts as `max-pods` (kubelet's default is 110).
_FEW_PODS = 20

_TRUSTED_NODE_TAINTS = ("node.kubernetes.io/",)


def _pods(objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [o for o in objects if o.get("kind") == "Pod"]


def _requests(claim_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every request and sub-request of a claim spec."""
    found: list[Mapping[str, Any]] = []
    for request in (claim_spec.get("devices") or {}).get("requests") or []:
        if request.get("exactly"):
            found.append(request["exactly"])
        found.extend(request.get("firstAvailable") or [])
    return found


def _claim_features(spec: Mapping[str, Any], tags: set[str]) -> None:
    devices = spec.get("devices") or {}
    if devices.get("constraints"):
        tags.add("constraints")
    for request in devices.get("requests") or []:
        if request.get("firstAvailable"):
            tags.add("first-available")
    for request in _requests(spec):
        if request.get("selectors"):
            tags.add("selectors")
        if request.get("allocationMode") == "All":
            tags.add("all-mode")
        if request.get("capacity"):
            tags.add("consumable-capacity")


def _pod_features(pod: Mapping[str, Any], tags: set[str]) -> None:
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    for container in containers:
        resources = container.get("resources") or {}
        amounts = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        if "cpu" in amounts or "memory" in amounts:
            tags.add("cpu-memory")
        if any(name.startswith("nvidia.com/") for name in amounts):
            tags.add("device-plugin")
        if any(port.get("hostPort") for port in container.get("ports") or []):
            tags.add("host-ports")
    for container in spec.get("initContainers") or []:
        tags.add("sidecars" if container.get("restartPolicy") == "Always" else "init-containers")
    if spec.get("overhead"):
        tags.add("pod-overhead")
    if (spec.get("resources") or {}).get("requests"):
        tags.add("pod-level-resources")
    if any("ephemeral-storage" in ((c.get("resources") or {}).get("requests") or {}) for c in containers):
        tags.add("ephemeral-storage")
    if spec.get("resourceClaims"):
        tags.add("dra")
    if any(entry.get("resourceClaimTemplateName") for entry in spec.get("resourceClaims") or []):
        tags.add("claim-template")
    affinity = spec.get("affinity") or {}
    if spec.get("nodeSelector") or affinity.get("nodeAffinity"):
        tags.add("node-affinity")
    if (affinity.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"):
        tags.add("pod-affinity")
    if (affinity.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"):
        tags.add("pod-anti-affinity")
    if any(
        (affinity.get(kind) or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
        for kind in ("podAffinity", "podAntiAffinity")
    ):
        tags.add("preferred-pod-affinity")
    if any(
        c.get("whenUnsatisfiable") == "ScheduleAnyway" for c in spec.get("topologySpreadConstraints") or []
    ):
        tags.add("soft-spread")
    if any(
        c.get("whenUnsatisfiable") == "DoNotSchedule" for c in spec.get("topologySpreadConstraints") or []
    ):
        tags.add("topology-spread")
    if spec.get("nodeName"):
        tags.add("running-pods")


def features_of(objects: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The tags of `ALL_FEATURES` that these objects use."""
    objects = list(objects)
    tags: set[str] = set()
    pods = _pods(objects)
    for pod in pods:
        _pod_features(pod, tags)
    classes = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "DeviceClass"}
    extended = {
        c["spec"]["extendedResourceName"] for c in classes.values() if c["spec"].get("extendedResourceName")
    }
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            if set((container.get("resources") or {}).get("requests") or {}) & extended:
                tags.add("extended-resource-dra")
    claim_users: dict[str, set[str]] = {}
    for pod in pods:
        namespace = pod["metadata"].get("namespace", "default")
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            if entry.get("resourceClaimName"):
                claim_users.setdefault(f"{namespace}/{entry['resourceClaimName']}", set()).add(
                    pod["metadata"]["name"]
                )
    if any(len(users) > 1 for users in claim_users.values()):
        tags.add("shared-claim")
    for obj in objects:
        kind = obj.get("kind")
        if kind == "ResourceClaimTemplate":
            _claim_features((obj.get("spec") or {}).get("spec") or {}, tags)
        elif kind == "ResourceClaim":
            _claim_features(obj.get("spec") or {}, tags)
        elif kind == "PersistentVolumeClaim":
            tags.add("volumes")
        elif kind == "PodDisruptionBudget":
            tags.add("budgets")
        elif kind == "ResourceSlice":
            spec = obj.get("spec") or {}
            if spec.get("sharedCounters"):
                tags.add("counters")
            if any(d.get("taints") for d in spec.get("devices") or []):
                tags.add("device-taints")
        elif kind == "Node":
            spec = obj.get("spec") or {}
            if any(not t["key"].startswith(_TRUSTED_NODE_TAINTS) for t in spec.get("taints") or []):
                tags.add("node-taints")
            if spec.get("unschedulable"):
                tags.add("cordoned")
            if (obj.get("status") or {}).get("images"):
                tags.add("cached-images")
            pods_allowed = ((obj.get("status") or {}).get("allocatable") or {}).get("pods")
            if pods_allowed is not None and int(pods_allowed) < _FEW_PODS:
                tags.add("max-pods")
    if len({p["spec"].get("priority", p["spec"].get("priorityClassName", "")) for p in pods}) > 1:
        tags.add("priorities")
    if _cross_namespace_sharing(objects, pods):
        tags.add("cross-namespace-sharing")
    return frozenset(tags)


def _cross_namespace_sharing(objects: list[Mapping[str, Any]], pods: list[Mapping[str, Any]]) -> bool:
    """Pods of two namespaces ask for a share of a device (a claim request with capacity requests):
    allot's GpuIsolation keeps them off the same device, kube-scheduler does not."""
    sharing_specs: dict[tuple[str, str], bool] = {}
    for obj in objects:
        kind = obj.get("kind")
        if kind not in ("ResourceClaim", "ResourceClaimTemplate"):
            continue
        spec = obj.get("spec") or {}
        if kind == "ResourceClaimTemplate":
            spec = spec.get("spec") or {}
        key = (obj["metadata"].get("namespace", "default"), obj["metadata"]["name"])
        sharing_specs[key] = any(r.get("capacity") for r in _requests(spec))
    namespaces = set()
    for pod in pods:
        namespace = pod["metadata"].get("namespace", "default")
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = entry.get("resourceClaimTemplateName") or entry.get("resourceClaimName")
            if sharing_specs.get((namespace, name)):
                namespaces.add(namespace)
    return len(namespaces) > 1


def gated(features: Iterable[str]) -> list[str]:
    """The features of a case that allot does not handle yet, sorted."""
    return sorted(set(features) & GATED)

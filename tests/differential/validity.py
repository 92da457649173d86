"""Check a cluster's placements on their own: would the API server's rules and kube-scheduler's
filters accept every bound pod and every allocated claim?

`problems(objects)` reads plain objects (API form, as in a case or as `allot place -o yaml`
writes them) and returns one line per broken rule, empty when all hold. It does not use
allot's scheduler or allocator: quantities, node affinity, tolerations, pod (anti-)affinity,
topology spread and every DRA rule are evaluated here again. Only CEL selectors go through
`allot.cel` (the CEL environment is not worth writing twice; kube-scheduler's own allocations
pass through the same check, so a selector allot evaluated wrongly shows up there).

Checked per bound pod: its node exists and is schedulable for it (cordon, NoSchedule and
NoExecute taints tolerated), nodeSelector and required node affinity, requests within the
node's allocatable (pods summed per node, init containers and overhead as Kubernetes counts
them), host ports free, required pod affinity and anti-affinity (both directions), and
DoNotSchedule topology spread (max - min per eligible domain within maxSkew). Per allocated
claim: every device exists in a slice that reaches the pod's node, exclusive devices in one
claim only, shared devices' consumed capacity within their capacity and request policy,
counters within their sets, class and request selectors true, counts (ExactCount and All),
one firstAvailable alternative per request, matchAttribute constraints, device taints
tolerated; and every pod's claims allocated. Per PersistentVolumeClaim a pod uses: it exists, and
it is bound to a volume of its class, large enough, claimed by it alone, whose node affinity takes
the pod's node (or, left to dynamic provisioning, annotated with that node).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from functools import cache
from typing import Any

from allot.cel import DeviceInput, default_environment
from allot.model.codec import decode
from allot.model.resource import Device

Obj = Mapping[str, Any]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1, "k": 10**3,
            "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}  # fmt: skip
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$")
TERMINAL = ("Succeeded", "Failed")


def quantity(text: Any) -> Fraction:
    """A Kubernetes quantity as an exact number."""
    return _quantity(str(text).strip())


@cache
def _quantity(text: str) -> Fraction:
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    number, exponent, suffix = match.groups()
    value = Fraction(number)
    if exponent:
        return value * Fraction(10) ** int(exponent[1:])
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    return value * _DECIMAL[suffix or ""]


def key_of(obj: Obj) -> str:
    metadata = obj["metadata"]
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata['name']}" if namespace else str(metadata["name"])


# -- pods and nodes ------------------------------------------------------------------------------


def pod_requests(pod: Obj) -> dict[str, Fraction]:
    """What a pod asks of its node: containers summed, each init container's as a floor (sidecars
    added to both), overhead on top, as the API's resource helpers compute it."""
    spec = pod["spec"]

    def amounts(container: Obj) -> dict[str, Fraction]:
        resources = container.get("resources") or {}
        found = {name: quantity(v) for name, v in (resources.get("requests") or {}).items()}
        for name, value in (resources.get("limits") or {}).items():
            found.setdefault(name, quantity(value))
        return found

    total: dict[str, Fraction] = defaultdict(Fraction)
    for container in spec.get("containers") or []:
        for name, value in amounts(container).items():
            total[name] += value
    sidecars: dict[str, Fraction] = defaultdict(Fraction)
    floor: dict[str, Fraction] = defaultdict(Fraction)
    for container in spec.get("initContainers") or []:
        own = amounts(container)
        if container.get("restartPolicy") == "Always":
            for name, value in own.items():
                sidecars[name] += value
                floor[name] = max(floor[name], sidecars[name])
        else:
            for name, value in own.items():
                floor[name] = max(floor[name], value + sidecars[name])
    for name, value in sidecars.items():
        total[name] += value
    for name, value in floor.items():
        total[name] = max(total[name], value)
    for name, value in (spec.get("overhead") or {}).items():
        total[name] += quantity(value)
    return dict(total)


def _expression_matches(expression: Obj, value: str | None) -> bool:
    operator = expression["operator"]
    values = expression.get("values") or []
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        try:
            number, bound = int(value or ""), int(values[0])
        except ValueError:
            return False
        return number > bound if operator == "Gt" else number < bound
    raise ValueError(f"unknown operator {operator}")


def node_selector_term_matches(term: Obj, node: Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False
    return all(_expression_matches(e, labels.get(e["key"])) for e in expressions) and all(
        _expression_matches(e, fields.get(e["key"])) for e in field_expressions
    )


def node_matches_pod(pod: Obj, node: Obj) -> bool:
    """nodeSelector and required node affinity."""
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return False
    required = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required:
        return any(node_selector_term_matches(t, node) for t in required.get("nodeSelectorTerms") or [])
    return True


def tolerates(tolerations: Iterable[Obj], taint: Obj) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists":
            if not key or key == taint["key"]:
                return True
        elif key == taint["key"] and (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def label_selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expression_matches(e, labels.get(e["key"])) for e in selector.get("matchExpressions") or [])


class _Cluster:
    def __init__(self, objects: Iterable[Obj]) -> None:
        self.nodes: dict[str, Obj] = {}
        self.pods: list[Obj] = []
        self.claims: dict[str, Obj] = {}
        self.classes: dict[str, Obj] = {}
        self.slices: list[Obj] = []
        self.volume_claims: dict[str, Obj] = {}
        self.volumes: dict[str, Obj] = {}
        for obj in objects:
            kind = obj.get("kind")
            if kind == "PersistentVolumeClaim":
                self.volume_claims[key_of(obj)] = obj
            elif kind == "PersistentVolume":
                self.volumes[obj["metadata"]["name"]] = obj
            elif kind == "Node":
                self.nodes[obj["metadata"]["name"]] = obj
            elif kind == "Pod":
                self.pods.append(obj)
            elif kind == "ResourceClaim":
                self.claims[key_of(obj)] = obj
            elif kind == "DeviceClass":
                self.classes[obj["metadata"]["name"]] = obj
            elif kind == "ResourceSlice":
                self.slices.append(obj)
        self.bound = [
            p
            for p in self.pods
            if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") not in TERMINAL
        ]
        self.extended_by_dra = {
            c["spec"]["extendedResourceName"]
            for c in self.classes.values()
            if c["spec"].get("extendedResourceName")
        }

    def node_of(self, pod: Obj) -> Obj | None:
        return self.nodes.get(pod["spec"]["nodeName"])


def _check_node_rules(cluster: _Cluster, pod: Obj, node: Obj, out: list[str]) -> None:
    key = key_of(pod)
    name = node["metadata"]["name"]
    tolerations = pod["spec"].get("tolerations") or []
    if node["spec"].get("unschedulable") and not tolerates(
        tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    ):
        out.append(f"pod {key} on cordoned node {name}")
    for taint in node["spec"].get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            out.append(
                f"pod {key} on node {name} does not tolerate taint {taint['key']}:{taint.get('effect')}"
            )
    if not node_matches_pod(pod, node):
        out.append(f"pod {key} on node {name} that its nodeSelector or node affinity excludes")


def _check_volumes(cluster: _Cluster, out: list[str]) -> None:
    holder: dict[str, str] = {}
    for key, claim in sorted(cluster.volume_claims.items()):
        name = claim["spec"].get("volumeName")
        if not name:
            continue
        volume = cluster.volumes.get(name)
        if volume is None:
            out.append(f"volume claim {key} bound to unknown volume {name}")
            continue
        if name in holder:
            out.append(f"volume {name} bound to claims {holder[name]} and {key}")
        holder[name] = key
        ref = volume["spec"].get("claimRef") or {}
        if ref and f"{ref.get('namespace')}/{ref.get('name')}" != key:
            out.append(f"volume {name} is claimed by {ref.get('namespace')}/{ref.get('name')}, not {key}")
        asked = ((claim["spec"].get("resources") or {}).get("requests") or {}).get("storage", "0")
        if quantity(volume["spec"]["capacity"]["storage"]) < quantity(asked):
            out.append(f"volume {name} is smaller than claim {key} asks ({asked})")
        if (volume["spec"].get("storageClassName") or "") != (claim["spec"].get("storageClassName") or ""):
            out.append(f"volume {name} is not of claim {key}'s class")
    for pod in cluster.bound:
        node = cluster.node_of(pod)
        if node is None:
            continue
        namespace = pod["metadata"].get("namespace", "default")
        for entry in pod["spec"].get("volumes") or []:
            source = entry.get("persistentVolumeClaim")
            if not source:
                continue
            key = f"{namespace}/{source['claimName']}"
            claim = cluster.volume_claims.get(key)
            if claim is None:
                out.append(f"pod {key_of(pod)} bound with its volume claim {key} missing")
                continue
            volume = cluster.volumes.get(claim["spec"].get("volumeName") or "")
            if volume is None:
                selected = (claim["metadata"].get("annotations") or {}).get(
                    "volume.kubernetes.io/selected-node"
                )
                if selected != node["metadata"]["name"]:
                    out.append(f"pod {key_of(pod)} bound with its volume claim {key} unbound")
                continue
            terms = ((volume["spec"].get("nodeAffinity") or {}).get("required") or {}).get(
                "nodeSelectorTerms"
            )
            if terms and not any(node_selector_term_matches(t, node) for t in terms):
                out.append(
                    f"pod {key_of(pod)} on node {node['metadata']['name']}, which its volume "
                    f"{volume['metadata']['name']} (claim {key}) is not reachable from"
                )


def _check_resources(cluster: _Cluster, out: list[str]) -> None:
    used: dict[str, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    count: dict[str, int] = defaultdict(int)
    for pod in cluster.bound:
        node = pod["spec"]["nodeName"]
        count[node] += 1
        for resource, amount in pod_requests(pod).items():
            used[node][resource] += amount
    for node, amounts in used.items():
        if node not in cluster.nodes:
            continue
        allocatable = {
            k: quantity(v)
            for k, v in (cluster.nodes[node].get("status") or {}).get("allocatable", {}).items()
        }
        if count[node] > allocatable.get("pods", Fraction(110)):
            out.append(f"node {node} holds {count[node]} pods, allocatable {allocatable.get('pods')}")
        for resource, amount in sorted(amounts.items()):
            if resource not in allocatable and resource in cluster.extended_by_dra:
                continue  # served by a DRA claim, checked with the claims
            if amount > allocatable.get(resource, Fraction(0)) and amount > 0:
                out.append(f"node {node} over its allocatable {resource}: {float(amount):g} requested")


def _check_ports(cluster: _Cluster, out: list[str]) -> None:
    taken: dict[tuple[str, str, int, str], str] = {}
    for pod in cluster.bound:
        for container in [*(pod["spec"].get("initContainers") or []), *(pod["spec"].get("containers") or [])]:
            for port in container.get("ports") or []:
                if not port.get("hostPort"):
                    continue
                ip = port.get("hostIP") or "0.0.0.0"
                slot = (pod["spec"]["nodeName"], ip, port["hostPort"], port.get("protocol") or "TCP")
                other = taken.get(slot)
                if other is not None and other != key_of(pod):
                    out.append(
                        f"pods {other} and {key_of(pod)} both use host port {slot[2]}/{slot[3]} on {slot[0]}"
                    )
                taken[slot] = key_of(pod)


def _term_namespaces(pod: Obj, term: Obj) -> set[str] | None:
    """The namespaces a pod (anti-)affinity term looks at; None: all."""
    if term.get("namespaceSelector") == {}:
        return None
    names = set(term.get("namespaces") or [])
    return names or {pod["metadata"].get("namespace", "default")}


def _term_matches(owner: Obj, term: Obj, other: Obj) -> bool:
    namespaces = _term_namespaces(owner, term)
    if namespaces is not None and other["metadata"].get("namespace", "default") not in namespaces:
        return False
    return label_selector_matches(term.get("labelSelector"), other["metadata"].get("labels") or {})


def _same_domain(cluster: _Cluster, a: Obj, b: Obj, key: str) -> bool:
    node_a, node_b = cluster.node_of(a), cluster.node_of(b)
    if node_a is None or node_b is None:
        return False
    value = (node_a["metadata"].get("labels") or {}).get(key)
    return value is not None and value == (node_b["metadata"].get("labels") or {}).get(key)


def _check_pod_affinity(cluster: _Cluster, out: list[str]) -> None:
    for pod in cluster.bound:
        affinity = pod["spec"].get("affinity") or {}
        for term in (affinity.get("podAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or []:
            matching = [o for o in cluster.bound if o is not pod and _term_matches(pod, term, o)]
            if any(_same_domain(cluster, pod, o, term["topologyKey"]) for o in matching):
                continue
            # Upstream lets the first pod of a group that matches its own term start anywhere.
            if not matching and _term_matches(pod, term, pod):
                continue
            out.append(
                f"pod {key_of(pod)} has no pod matching its required pod affinity in its {term['topologyKey']}"
            )
        for term in (affinity.get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or []:
            for other in cluster.bound:
                if (
                    other is not pod
                    and _term_matches(pod, term, other)
                    and _same_domain(cluster, pod, other, term["topologyKey"])
                ):
                    out.append(
                        f"pods {key_of(pod)} and {key_of(other)} share a {term['topologyKey']} against anti-affinity"
                    )


def _check_spread(cluster: _Cluster, out: list[str]) -> None:
    for pod in cluster.bound:
        for constraint in pod["spec"].get("topologySpreadConstraints") or []:
            if constraint.get("whenUnsatisfiable") != "DoNotSchedule":
                continue
            key = constraint["topologyKey"]
            honor_affinity = constraint.get("nodeAffinityPolicy", "Honor") == "Honor"
            honor_taints = constraint.get("nodeTaintsPolicy", "Ignore") == "Honor"
            counts: dict[str, int] = {}
            for node in cluster.nodes.values():
                value = (node["metadata"].get("labels") or {}).get(key)
                if value is None or (honor_affinity and not node_matches_pod(pod, node)):
                    continue
                if honor_taints and any(
                    t.get("effect") in ("NoSchedule", "NoExecute")
                    and not tolerates(pod["spec"].get("tolerations") or [], t)
                    for t in node["spec"].get("taints") or []
                ):
                    continue
                counts.setdefault(value, 0)
            for other in cluster.bound:
                node = cluster.node_of(other)
                value = (node["metadata"].get("labels") or {}).get(key) if node else None
                if (
                    value in counts
                    and other["metadata"].get("namespace") == pod["metadata"].get("namespace")
                    and label_selector_matches(
                        constraint.get("labelSelector"), other["metadata"].get("labels") or {}
                    )
                ):
                    counts[value] += 1
            if counts and max(counts.values()) - min(counts.values()) > constraint["maxSkew"]:
                out.append(
                    f"pod {key_of(pod)}: spread over {key} is {dict(sorted(counts.items()))}, maxSkew {constraint['maxSkew']}"
                )


# -- claims and devices ------------------------------------------------------------------------------


def _qualified(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


class _Devices:
    """Every device of the cluster by (driver, pool, name), with its slice; counter sets by pool."""

    def __init__(self, slices: Sequence[Obj]) -> None:
        newest: dict[tuple[str, str], int] = {}
        for s in slices:
            pool = (s["spec"]["driver"], s["spec"]["pool"]["name"])
            newest[pool] = max(newest.get(pool, 0), int(s["spec"]["pool"].get("generation", 0)))
        self.devices: dict[tuple[str, str, str], tuple[Obj, Obj]] = {}
        self.counters: dict[tuple[str, str, str], dict[str, Fraction]] = {}
        for s in slices:
            spec = s["spec"]
            pool = (spec["driver"], spec["pool"]["name"])
            if int(spec["pool"].get("generation", 0)) != newest[pool]:
                continue
            for device in spec.get("devices") or []:
                self.devices[(*pool, device["name"])] = (device, s)
            for counter_set in spec.get("sharedCounters") or []:
                self.counters[(*pool, counter_set["name"])] = {
                    name: quantity(c["value"]) for name, c in (counter_set.get("counters") or {}).items()
                }

    def attribute(self, key: tuple[str, str, str], name: str) -> Any:
        device, _ = self.devices[key]
        driver = key[0]
        for attribute, value in (device.get("attributes") or {}).items():
            if _qualified(attribute, driver) == name:
                return next(iter(value.items()))
        return None


def _device_reaches(device: Obj, slice_: Obj, node: Obj) -> bool:
    spec = slice_["spec"]
    for holder in (device, spec) if spec.get("perDeviceNodeSelection") else (spec,):
        if holder.get("nodeName"):
            return bool(holder["nodeName"] == node["metadata"]["name"])
        if holder.get("allNodes"):
            return True
        if holder.get("nodeSelector"):
            return any(
                node_selector_term_matches(t, node)
                for t in holder["nodeSelector"].get("nodeSelectorTerms") or []
            )
    return False


def _requests_of(claim: Obj) -> dict[str, tuple[Obj, dict[str, Obj]]]:
    """request name -> (request, {sub-request name: sub-request}); plain requests map to themselves."""
    found: dict[str, tuple[Obj, dict[str, Obj]]] = {}
    for request in (claim["spec"].get("devices") or {}).get("requests") or []:
        if request.get("exactly") is not None:
            found[request["name"]] = (request["exactly"], {})
        else:
            found[request["name"]] = (request, {s["name"]: s for s in request.get("firstAvailable") or []})
    return found


class _Selectors:
    def __init__(self) -> None:
        self.environment = default_environment()
        self.inputs: dict[tuple[str, str, str], DeviceInput] = {}

    def match(self, key: tuple[str, str, str], device: Obj, expressions: Sequence[str]) -> str | None:
        """The first expression false (or failing) for the device; None when all are true."""
        found = self.inputs.get(key)
        if found is None:
            # allot's CEL environment caches verdicts by this key for as long as the process runs:
            # it must name the device's content, not only its name (cases reuse names).
            content = ("differential", key[0], json.dumps(device, sort_keys=True))
            found = self.inputs[key] = DeviceInput.from_device(content, key[0], decode(device, Device))
        for expression in expressions:
            try:
                if not self.environment.evaluate(expression, found):
                    return expression
            except Exception as error:  # a CEL runtime error rejects the device, as upstream
                return f"{expression} ({error})"
        return None


def _expressions(selectors: Iterable[Obj] | None) -> list[str]:
    return [s["cel"]["expression"] for s in selectors or [] if s.get("cel")]


def _policy_ok(consumed: Fraction, capacity: Obj) -> bool:
    policy = capacity.get("requestPolicy")
    if not policy:
        return True
    if policy.get("validValues"):
        return consumed in {quantity(v) for v in policy["validValues"]}
    valid_range = policy.get("validRange")
    if valid_range:
        low = quantity(valid_range["min"])
        if consumed < low:
            return False
        if valid_range.get("max") is not None and consumed > quantity(valid_range["max"]):
            return False
        if valid_range.get("step") is not None:
            return (consumed - low) % quantity(valid_range["step"]) == 0
    return True


def _check_claim(
    claim: Obj, node: Obj, devices: _Devices, classes: Mapping[str, Obj], selectors: _Selectors,
    allocated_elsewhere: set[tuple[str, str, str]], out: list[str],
) -> None:  # fmt: skip
    name = key_of(claim)
    allocation = claim["status"]["allocation"]
    node_selector = allocation.get("nodeSelector")
    if node_selector and not any(
        node_selector_term_matches(t, node) for t in node_selector.get("nodeSelectorTerms") or []
    ):
        out.append(f"claim {name}: its nodeSelector excludes node {node['metadata']['name']}")
    requests = _requests_of(claim)
    results = (allocation.get("devices") or {}).get("results") or []
    per_request: dict[str, list[tuple[str, tuple[str, str, str], Obj]]] = defaultdict(list)
    for result in results:
        key = (result["driver"], result["pool"], result["device"])
        request_name, _, sub = result["request"].partition("/")
        per_request[request_name].append((sub, key, result))
        if key not in devices.devices:
            out.append(f"claim {name}: device {'/'.join(key)} is in no ResourceSlice")
            continue
        device, slice_ = devices.devices[key]
        if not _device_reaches(device, slice_, node):
            out.append(f"claim {name}: device {'/'.join(key)} is not on node {node['metadata']['name']}")
        if request_name not in requests:
            out.append(f"claim {name}: result for unknown request {result['request']}")
            continue
        request, subs = requests[request_name]
        if subs:
            if sub not in subs:
                out.append(f"claim {name}: result {result['request']} names no alternative of {request_name}")
                continue
            request = subs[sub]
        elif sub:
            out.append(f"claim {name}: result {result['request']} for a request without alternatives")
        cls = classes.get(request["deviceClassName"])
        if cls is None:
            out.append(f"claim {name}: unknown DeviceClass {request['deviceClassName']}")
            continue
        failed = selectors.match(
            key, device, _expressions(cls["spec"].get("selectors")) + _expressions(request.get("selectors"))
        )
        if failed is not None:
            out.append(f"claim {name}: device {'/'.join(key)} fails selector {failed}")
        for taint in device.get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(
                request.get("tolerations") or [], taint
            ):
                out.append(
                    f"claim {name}: device {'/'.join(key)} has taint {taint['key']} the request does not tolerate"
                )
        if (
            not device.get("allowMultipleAllocations")
            and key in allocated_elsewhere
            and not result.get("adminAccess")
        ):
            out.append(f"claim {name}: exclusive device {'/'.join(key)} is allocated twice")
        wanted = (request.get("capacity") or {}).get("requests") or {}
        for capacity_name, amount in wanted.items():
            if device.get("allowMultipleAllocations"):
                given = (result.get("consumedCapacity") or {}).get(capacity_name)
            else:  # an exclusive device: the request is a filter on what it has
                given = ((device.get("capacity") or {}).get(capacity_name) or {}).get("value")
            if given is None or quantity(given) < quantity(amount):
                out.append(
                    f"claim {name}: device {'/'.join(key)} gives {given} {capacity_name}, {amount} requested"
                )
        for capacity_name, consumed in (result.get("consumedCapacity") or {}).items():
            capacity = (device.get("capacity") or {}).get(capacity_name)
            if capacity is not None and not _policy_ok(quantity(consumed), capacity):
                out.append(
                    f"claim {name}: {consumed} {capacity_name} of {'/'.join(key)} breaks its request policy"
                )
    for request_name, (request, subs) in requests.items():
        got = per_request.get(request_name, [])
        chosen = {sub for sub, _, _ in got}
        if subs and len(chosen) != 1:
            out.append(f"claim {name}: request {request_name} took alternatives {sorted(chosen)}, not one")
            continue
        effective = subs[next(iter(chosen))] if subs else request
        if effective.get("allocationMode") == "All":
            wanted_keys = {
                key for key, (device, slice_) in devices.devices.items()
                if _device_reaches(device, slice_, node)
                and selectors.match(key, device, _expressions(classes.get(effective["deviceClassName"], {}).get("spec", {}).get("selectors"))
                                    + _expressions(effective.get("selectors"))) is None
            }  # fmt: skip
            if {key for _, key, _ in got} != wanted_keys:
                out.append(
                    f"claim {name}: request {request_name} (All) got {len(got)} of {len(wanted_keys)} devices"
                )
        elif len(got) != int(effective.get("count", 1)):
            out.append(
                f"claim {name}: request {request_name} got {len(got)} devices, {effective.get('count', 1)} wanted"
            )
    for constraint in (claim["spec"].get("devices") or {}).get("constraints") or []:
        attribute = constraint.get("matchAttribute")
        if not attribute:
            continue
        scope = set(constraint.get("requests") or requests)
        values = []
        for request_name, entries in per_request.items():
            for sub, key, _ in entries:
                if request_name in scope or f"{request_name}/{sub}" in scope:
                    values.append(devices.attribute(key, attribute) if key in devices.devices else None)
        if None in values or len(set(values)) > 1:
            out.append(f"claim {name}: devices differ in (or lack) {attribute}: {values}")


def _check_claims(cluster: _Cluster, out: list[str]) -> None:
    devices = _Devices(cluster.slices)
    selectors = _Selectors()
    users: dict[str, list[Obj]] = defaultdict(list)
    for pod in cluster.bound:
        namespace = pod["metadata"].get("namespace", "default")
        statuses = {
            s["name"]: s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        }
        for entry in pod["spec"].get("resourceClaims") or []:
            claim_name = entry.get("resourceClaimName") or statuses.get(entry["name"])
            claim = cluster.claims.get(f"{namespace}/{claim_name}") if claim_name else None
            if claim is None or not (claim.get("status") or {}).get("allocation"):
                out.append(
                    f"pod {key_of(pod)} is bound but its claim for entry {entry['name']} is not allocated"
                )
                continue
            users[key_of(claim)].append(pod)
        extended = (pod.get("status") or {}).get("extendedResourceClaimStatus")
        if extended and f"{namespace}/{extended.get('resourceClaimName')}" in cluster.claims:
            users[f"{namespace}/{extended['resourceClaimName']}"].append(pod)
    seen: dict[tuple[str, str, str], int] = defaultdict(int)
    consumed: dict[tuple[str, str, str], dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    charged: set[tuple[str, str, str]] = set()
    counter_use: dict[tuple[str, str, str], dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    allocated = [c for c in cluster.claims.values() if (c.get("status") or {}).get("allocation")]
    for claim in allocated:
        for result in claim["status"]["allocation"]["devices"].get("results") or []:
            key = (result["driver"], result["pool"], result["device"])
            if not result.get("adminAccess"):
                seen[key] += 1
            for capacity_name, amount in (result.get("consumedCapacity") or {}).items():
                consumed[key][capacity_name] += quantity(amount)
            if key in devices.devices and key not in charged and not result.get("adminAccess"):
                charged.add(key)
                device, _ = devices.devices[key]
                for use in device.get("consumesCounters") or []:
                    for counter, value in (use.get("counters") or {}).items():
                        counter_use[(key[0], key[1], use["counterSet"])][counter] += quantity(value["value"])
    twice = {key for key, n in seen.items() if n > 1}
    for claim in allocated:
        pods = users.get(key_of(claim), [])
        nodes = {p["spec"]["nodeName"] for p in pods}
        if len(nodes) > 1:
            out.append(f"claim {key_of(claim)} is used on several nodes: {sorted(nodes)}")
        for node_name in sorted(nodes):
            node = cluster.nodes.get(node_name)
            if node is not None:
                _check_claim(claim, node, devices, cluster.classes, selectors, twice, out)
    for key, amounts in consumed.items():
        if key not in devices.devices:
            continue
        device, _ = devices.devices[key]
        for capacity_name, amount in amounts.items():
            capacity = (device.get("capacity") or {}).get(capacity_name)
            if capacity is not None and amount > quantity(capacity["value"]):
                out.append(
                    f"device {'/'.join(key)}: {float(amount):g} {capacity_name} consumed, capacity {capacity['value']}"
                )
    for set_key, used in counter_use.items():
        available = devices.counters.get(set_key)
        if available is None:
            out.append(f"counter set {'/'.join(set_key)} does not exist")
            continue
        for counter, amount in used.items():
            if amount > available.get(counter, Fraction(0)):
                out.append(
                    f"counter {counter} of {'/'.join(set_key)}: {float(amount):g} consumed, {float(available.get(counter, 0)):g} available"
                )


def problems(objects: Iterable[Obj]) -> list[str]:
    """Every rule the placements in `objects` break (see the module docstring); empty when valid."""
    cluster = _Cluster(objects)
    out: list[str] = []
    for pod in cluster.bound:
        node = cluster.node_of(pod)
        if node is None:
            out.append(f"pod {key_of(pod)} is bound to unknown node {pod['spec']['nodeName']}")
            continue
        _check_node_rules(cluster, pod, node, out)
    _check_resources(cluster, out)
    _check_ports(cluster, out)
    _check_pod_affinity(cluster, out)
    _check_spread(cluster, out)
    _check_claims(cluster, out)
    _check_volumes(cluster, out)
    return out

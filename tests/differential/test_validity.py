"""The placement checker accepts what kube-scheduler did and catches each rule broken on purpose.

A small valid cluster is written out here by hand; each mutation breaks one rule and the checker
must name it. (Every recorded case's end state, kube-scheduler's own decisions, must pass too:
test_corpus.py checks that for each case.)
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from differential.validity import pod_requests, problems, quantity

Obj = dict[str, Any]
DRIVER = "gpu.example.com"


def _node(name: str, **spec: Any) -> Obj:
    amounts = {"cpu": "4", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "2"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": name[-1]}},
        "spec": spec, "status": {"allocatable": amounts},
    }  # fmt: skip


def _pod(name: str, node: str, *, cpu: str = "1", claim: str = "", **spec: Any) -> Obj:
    pod: Obj = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": {"app": "x"}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec},
        "status": {"phase": "Running"},
    }  # fmt: skip
    if claim:
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    return pod


def _result(request: str, device: str, pool: str = "a", **extra: Any) -> Obj:
    return {"request": request, "driver": DRIVER, "pool": pool, "device": device, **extra}


def _claim(name: str, requests: list[Obj], results: list[Obj], node: str = "a", **devices: Any) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ns"},
        "spec": {"devices": {"requests": requests, **devices}},
        "status": {"allocation": {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
            "reservedFor": [{"resource": "pods", "name": "p"}]},
    }  # fmt: skip


def _cluster() -> list[Obj]:
    gpus = [
        {"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}, "numa": {"int": i // 2}},
         "consumesCounters": [{"counterSet": "set", "counters": {"slices": {"value": "1"}}}]}
        for i in range(4)
    ]  # fmt: skip
    shared = {
        "name": "shared-0", "allowMultipleAllocations": True, "attributes": {"type": {"string": "shared"}},
        "capacity": {"memory": {"value": "40Gi", "requestPolicy": {
            "default": "40Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}}},
    }  # fmt: skip
    pool = {"name": "a", "generation": 1, "resourceSliceCount": 2}
    return [
        _node("node-a", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
        _node("node-b"),
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].type == "gpu"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "shared"},
         "spec": {"selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].type == "shared"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "a-counters"},
         "spec": {"driver": DRIVER, "nodeName": "node-a", "pool": pool,
                  "sharedCounters": [{"name": "set", "counters": {"slices": {"value": "3"}}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "a-devices"},
         "spec": {"driver": DRIVER, "nodeName": "node-a", "pool": pool, "devices": [*gpus, shared]}},
        _claim("two", [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}],
               [_result("gpu", "gpu-0"), _result("gpu", "gpu-1")], node="node-a",
               constraints=[{"matchAttribute": f"{DRIVER}/numa"}]),
        _claim("share", [{"name": "gpu", "exactly": {"deviceClassName": "shared",
                                                     "capacity": {"requests": {"memory": "1500Mi"}}}}],
               [_result("gpu", "shared-0", shareID="1", consumedCapacity={"memory": "2Gi"})], node="node-a"),
        _pod("p", "node-a", claim="two", tolerations=[{"key": "gpu", "operator": "Exists"}]),
        _pod("q", "node-a", claim="share", tolerations=[{"key": "gpu", "operator": "Exists"}],
             affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                 {"labelSelector": {"matchLabels": {"app": "y"}}, "topologyKey": "kubernetes.io/hostname"}]}}),
        _pod("r", "node-b", cpu="2",
             topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                         "labelSelector": {"matchLabels": {"app": "x"}}}]),
    ]  # fmt: skip


def _find(objects: list[Obj], kind: str, name: str) -> Obj:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def _add(objects: list[Obj], obj: Obj) -> None:
    objects.append(obj)


Mutation = Callable[[list[Obj]], None]
MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "untolerated taint": (
        lambda o: _find(o, "Pod", "p")["spec"].pop("tolerations"), "does not tolerate taint gpu:NoSchedule"),
    "cordoned node": (lambda o: _find(o, "Node", "node-b")["spec"].update(unschedulable=True), "on cordoned node node-b"),
    "node selector": (lambda o: _find(o, "Pod", "r")["spec"].update(nodeSelector={"zone": "a"}), "nodeSelector"),
    "cpu": (lambda o: _find(o, "Pod", "r")["spec"]["containers"][0]["resources"]["requests"].update(cpu="5"),
            "over its allocatable cpu"),
    "device plugin": (lambda o: _find(o, "Pod", "r")["spec"]["containers"][0]["resources"].update(
        limits={"nvidia.com/gpu": "3"}), "over its allocatable nvidia.com/gpu"),
    "host port": (lambda o: [_find(o, "Pod", n)["spec"]["containers"][0].update(ports=[{"hostPort": 80}])
                             for n in ("p", "q")], "both use host port 80/TCP"),
    "anti-affinity": (lambda o: _find(o, "Pod", "p")["metadata"]["labels"].update(app="y"), "against anti-affinity"),
    "spread": (lambda o: _add(o, _pod("s", "node-a", cpu="100m", tolerations=[{"operator": "Exists"}])),
               "spread over zone is {'a': 3, 'b': 1}, maxSkew 1"),
    "claim not allocated": (lambda o: _find(o, "ResourceClaim", "two").pop("status"), "is not allocated"),
    "device twice": (lambda o: _find(o, "ResourceClaim", "share")["status"]["allocation"]["devices"].update(
        results=[_result("gpu", "gpu-1")]), "exclusive device gpu.example.com/a/gpu-1 is allocated twice"),
    "selector": (lambda o: _find(o, "ResourceClaim", "two")["status"]["allocation"]["devices"]["results"][1].update(
        device="shared-0"), "fails selector"),
    "constraint": (lambda o: _find(o, "ResourceClaim", "two")["status"]["allocation"]["devices"]["results"][1].update(
        device="gpu-2"), "devices differ in (or lack) gpu.example.com/numa"),
    "count": (lambda o: _find(o, "ResourceClaim", "two")["status"]["allocation"]["devices"]["results"].pop(),
              "got 1 devices, 2 wanted"),
    "unknown device": (lambda o: _find(o, "ResourceClaim", "two")["status"]["allocation"]["devices"]["results"][0]
                       .update(device="gpu-9"), "is in no ResourceSlice"),
    "other node": (lambda o: _find(o, "Pod", "p")["spec"].update(nodeName="node-b"), "is not on node node-b"),
    "counters": (lambda o: _add(o, _claim("more", [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}],
                                          [_result("gpu", "gpu-2"), _result("gpu", "gpu-3")])),
                 "counter slices of gpu.example.com/a/set: 4 consumed, 3 available"),
    "capacity": (lambda o: _find(o, "ResourceClaim", "share")["status"]["allocation"]["devices"]["results"][0]
                 .update(consumedCapacity={"memory": "41Gi"}), "memory consumed, capacity 40Gi"),
    "request policy": (lambda o: _find(o, "ResourceClaim", "share")["status"]["allocation"]["devices"]["results"][0]
                       .update(consumedCapacity={"memory": "1500Mi"}), "breaks its request policy"),
}  # fmt: skip


def test_the_hand_written_cluster_is_valid() -> None:
    assert problems(_cluster()) == []


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_broken_rule_is_named(name: str) -> None:
    objects = copy.deepcopy(_cluster())
    mutate, expected = MUTATIONS[name]
    mutate(objects)
    found = problems(objects)
    assert any(expected in p for p in found), found


def test_quantities_and_requests_are_counted_as_kubernetes_does() -> None:
    assert quantity("1500Mi") == 1500 * 2**20
    assert quantity("100m") * 10 == 1
    assert quantity("1e3") == 1000
    pod = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "1"}}},
                {"resources": {"requests": {"cpu": "500m"}}},
            ],
            "initContainers": [
                {"resources": {"requests": {"cpu": "2"}}},
                {"restartPolicy": "Always", "resources": {"requests": {"cpu": "250m"}}},
            ],
            "overhead": {"cpu": "100m"},
        }
    }
    # Containers with the sidecar (1.75) beat the first init container alone (2), plus overhead.
    assert pod_requests(pod)["cpu"] == quantity("2.1")


def _storage(
    volume_node: str, *, capacity: str = "10Gi", asked: str = "5Gi", bound: bool = True
) -> list[Obj]:
    """Node a and b, a pod on a using claim `data`, and a local volume pinned to `volume_node`."""
    volume: Obj = {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
        "spec": {"capacity": {"storage": capacity}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                 "local": {"path": "/mnt"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [volume_node]}]}]}}},
    }  # fmt: skip
    claim: Obj = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ns"},
        "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": asked}}},
    }  # fmt: skip
    if bound:
        claim["spec"]["volumeName"] = "pv"
        volume["spec"]["claimRef"] = {"namespace": "ns", "name": "data"}
    pod = _pod("p", "a", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])
    return [_node("a"), _node("b"), volume, claim, pod]


def test_the_checker_reads_volume_binding() -> None:
    assert problems(_storage("a")) == []
    assert problems(_storage("b")) == [
        "pod ns/p on node a, which its volume pv (claim ns/data) is not reachable from"
    ]
    assert problems(_storage("a", capacity="4Gi")) == ["volume pv is smaller than claim ns/data asks (5Gi)"]
    assert problems(_storage("a", bound=False)) == ["pod ns/p bound with its volume claim ns/data unbound"]
    second = copy.deepcopy(_storage("a")[3])
    second["metadata"]["name"] = "other"
    assert "volume pv bound to claims ns/data and ns/other" in problems([*_storage("a"), second])

"""The model of kube-scheduler's counter leak says yes only where the leak, and nothing else, keeps
a claim off a node (differential.upstream_defects)."""

from __future__ import annotations

from typing import Any

from differential.upstream_defects import counter_leak_explains

Obj = dict[str, Any]
DRIVER = "gpu.example.com"
SLICES = 8  # memory slices per GPU
# profile -> (slices, starts)
PROFILES = {"7g": (8, (0,)), "3g": (4, (0, 4)), "2g": (2, (0, 2, 4)), "1g": (1, tuple(range(7)))}


def _mig_node(gpus: int = 2) -> list[Obj]:
    counters = [
        {
            "name": f"gpu-{g}-counters",
            "counters": {f"memory-slice-{s}": {"value": "1"} for s in range(SLICES)},
        }
        for g in range(gpus)
    ]
    devices = []
    for g in range(gpus):
        for profile, (size, starts) in PROFILES.items():
            for start in starts:
                name = f"gpu-{g}" if profile == "7g" else f"gpu-{g}-{profile}-{start}"
                devices.append({
                    "name": name,
                    "attributes": {
                        "parent": {"int": g}, "profile": {"string": profile},
                        "type": {"string": "gpu" if profile == "7g" else "mig"},
                    },
                    "consumesCounters": [{
                        "counterSet": f"gpu-{g}-counters",
                        "counters": {f"memory-slice-{s}": {"value": "1"} for s in range(start, start + size)},
                    }],
                })  # fmt: skip
    pool = {"name": "mig-1", "generation": 1, "resourceSliceCount": 2}
    return [
        {"kind": "Node", "metadata": {"name": "mig-1", "labels": {}}, "spec": {}, "status": {}},
        {"kind": "ResourceSlice", "metadata": {"name": "mig-1-counters"},
         "spec": {"driver": DRIVER, "pool": pool, "nodeName": "mig-1", "sharedCounters": counters}},
        {"kind": "ResourceSlice", "metadata": {"name": "mig-1-devices"},
         "spec": {"driver": DRIVER, "pool": pool, "nodeName": "mig-1", "devices": devices}},
        {"kind": "DeviceClass", "metadata": {"name": "mig.example.com"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}" && '
                                                      f'device.attributes["{DRIVER}"].type == "mig"'}}]}},
    ]  # fmt: skip


def _claim(
    name: str, count: int, profile: str, *, same_parent: bool, allocated: list[str] | None = None
) -> Obj:
    devices: Obj = {
        "requests": [{
            "name": "mig",
            "exactly": {
                "deviceClassName": "mig.example.com", "allocationMode": "ExactCount", "count": count,
                "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].profile == "{profile}"'}}],
            },
        }],
    }  # fmt: skip
    if same_parent:
        devices["constraints"] = [{"matchAttribute": f"{DRIVER}/parent", "requests": ["mig"]}]
    claim: Obj = {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": "team-a"},
                  "spec": {"devices": devices}, "status": {}}  # fmt: skip
    if allocated:
        claim["status"] = {"allocation": {"devices": {"results": [
            {"request": "mig", "driver": DRIVER, "pool": "mig-1", "device": d} for d in allocated
        ]}}}  # fmt: skip
    return claim


def _pod(claim: str) -> Obj:
    return {
        "kind": "Pod",
        "metadata": {"name": "waiting", "namespace": "team-a"},
        "spec": {
            "containers": [{"name": "main"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }


def _case(*, first_gpu_taken: list[str], same_parent: bool = True, count: int = 2) -> list[Obj]:
    objects = _mig_node()
    if first_gpu_taken:
        objects.append(
            _claim("running", len(first_gpu_taken), "2g", same_parent=False, allocated=first_gpu_taken)
        )
    objects += [_claim("wanted", count, "3g", same_parent=same_parent), _pod("wanted")]
    return objects


def test_two_partitions_of_one_gpu_next_to_a_half_used_gpu_are_what_the_leak_refuses() -> None:
    # gpu-0 keeps one free 3g partition (slices 4-7), gpu-1 is free: gpu-0's partition is taken
    # first, gpu-1's partitions are rejected by the constraint and their counters kept.
    objects = _case(first_gpu_taken=["gpu-0-2g-0", "gpu-0-2g-2"])
    assert counter_leak_explains(objects, "team-a/waiting", "mig-1")


def test_no_leak_matters_where_the_first_gpu_tried_has_room() -> None:
    assert not counter_leak_explains(_case(first_gpu_taken=[]), "team-a/waiting", "mig-1")


def test_without_the_constraint_nothing_is_rejected_so_nothing_leaks() -> None:
    objects = _case(first_gpu_taken=["gpu-0-2g-0", "gpu-0-2g-2"], same_parent=False)
    assert not counter_leak_explains(objects, "team-a/waiting", "mig-1")


def test_a_claim_that_cannot_fit_at_all_is_not_explained_by_the_leak() -> None:
    # Three 3g partitions of one GPU never fit: both searches fail, so it is no upstream defect.
    objects = _case(first_gpu_taken=["gpu-0-2g-0", "gpu-0-2g-2"], count=3)
    assert not counter_leak_explains(objects, "team-a/waiting", "mig-1")


def test_unmodelled_requests_are_never_explained() -> None:
    objects = _case(first_gpu_taken=["gpu-0-2g-0", "gpu-0-2g-2"])
    wanted = next(o for o in objects if o["kind"] == "ResourceClaim" and o["metadata"]["name"] == "wanted")
    request = wanted["spec"]["devices"]["requests"][0]
    request["firstAvailable"] = [dict(request.pop("exactly"), name="any")]
    assert not counter_leak_explains(objects, "team-a/waiting", "mig-1")

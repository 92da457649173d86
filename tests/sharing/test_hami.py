"""HAMi's nvidia.com/gpu* requests become claims on fractional GPUs, as HAMi-DRA's webhook writes them."""

from __future__ import annotations

from msgspec.structs import replace

from allot.cluster import hami
from allot.cluster.state import ClusterState
from allot.model.codec import dump_yaml
from allot.model.core import Pod
from allot.model.loader import Manifests, load_text
from allot.model.presets import gpu_sharing as gs
from allot.plan.planner import plan
from allot.scheduling.scheduler import Placement
from builders import node, pod
from sharing.helpers import devices_of, hami_cluster, hami_pod, hami_slice, scheduler

MIB = 1024 * 1024


def test_pod_with_hami_resources_gets_one_claim_per_container() -> None:
    p = hami_pod("train", cores=30, memory_mib=3000, gpus=2, namespace="ml")
    converted, claims = hami.convert(p)
    (claim,) = claims
    assert claim.name == "ml-train-main-nvidia" and claim.namespace == "ml"
    (request,) = claim.spec.devices.requests
    assert request.name == "gpu" and request.exactly is not None
    assert request.exactly.device_class_name == gs.HAMI_DRIVER
    assert request.exactly.count == 2
    assert request.exactly.capacity is not None
    requests = request.exactly.capacity.requests
    assert requests["cores"].value() == 30 and requests["memory"].value() == 3000 * MIB
    selectors = [s.cel.expression for s in request.exactly.selectors if s.cel is not None]
    assert selectors == [f'device.attributes["{gs.HAMI_DRIVER}"].type == "hami-gpu"']
    container = converted.spec.containers[0]
    assert not any(r.startswith("nvidia.com/") for r in container.resources.requests)
    assert not any(r.startswith("nvidia.com/") for r in container.resources.limits)
    assert [c.name for c in container.resources.claims] == ["ml-train-main-nvidia"]
    assert [(e.name, e.resource_claim_name) for e in converted.spec.resource_claims] == [
        ("ml-train-main-nvidia", "ml-train-main-nvidia")
    ]
    assert converted.metadata.labels[hami.DRA_LABEL] == "true"
    assert claim.metadata.owner_references[0].name == "train"


def test_missing_amounts_are_left_to_the_device_policy() -> None:
    _, (claim,) = hami.convert(hami_pod("whole"))
    request = claim.spec.devices.requests[0].exactly
    assert request is not None and request.capacity is not None and request.capacity.requests == {}


def test_gpu_type_and_uuid_annotations_become_selectors() -> None:
    p = hami_pod(
        "p",
        annotations={hami.USE_TYPE: "A100, H100", hami.NOUSE_UUID: "GPU-1", hami.NOUSE_TYPE: ""},
    )
    _, (claim,) = hami.convert(p)
    request = claim.spec.devices.requests[0].exactly
    assert request is not None
    expressions = [s.cel.expression for s in request.selectors if s.cel is not None]
    attr = f'device.attributes["{gs.HAMI_DRIVER}"]'
    assert f'!({attr}.uuid in ["GPU-1"])' in expressions
    assert f'{attr}.productName in ["A100","H100"]' in expressions
    assert "false" in expressions  # an empty allow-list fails closed, as HAMi-DRA does


def test_memory_percentage_is_a_prioritized_list_over_memory_sizes() -> None:
    _, (claim,) = hami.convert(
        hami_pod("p", percentage=25), memory_sizes=lambda: [16 * 1024 * MIB, 80 * 1024 * MIB]
    )
    request = claim.spec.devices.requests[0]
    assert request.exactly is None
    amounts = [s.capacity.requests["memory"].value() for s in request.first_available if s.capacity]
    assert amounts == [4 * 1024 * MIB, 20 * 1024 * MIB]


def test_mapping_applies_only_where_hamis_class_exists() -> None:
    p = hami_pod("p", cores=50)
    without = ClusterState(nodes=[node("n1", extended={"nvidia.com/gpu": "1"})], pods=[])
    info = without.add_pod(p)
    assert info.requests.get("nvidia.com/gpu") == 1 and not info.claims
    with_class = hami_cluster({"n1": 1})
    info = with_class.add_pod(p)
    assert "nvidia.com/gpu" not in info.requests
    assert [key for _, key in info.claims] == ["default/default-p-main-nvidia"]
    assert "default/default-p-main-nvidia" in with_class.claims


def test_bound_pods_from_manifests_are_left_as_they_are() -> None:
    bound = pod("old", extended={"nvidia.com/gpu": "1"}, node_name="n1")
    state = ClusterState(
        nodes=[node("n1")], slices=[hami_slice("n1", 1)], classes=[gs.hami_device_class()], pods=[bound]
    )
    assert state.pods["default/old"].claims == ()


def test_hami_pods_share_gpus_through_the_scheduler() -> None:
    state = hami_cluster({"n1": 1})
    sched = scheduler(state)
    a = sched.schedule(state.add_pod(hami_pod("a", cores=40, memory_mib=4000)).key)
    b = sched.schedule(state.add_pod(hami_pod("b", cores=60, memory_mib=4000)).key)
    c = sched.schedule(state.add_pod(hami_pod("c", cores=1, memory_mib=1)).key)
    assert devices_of(a) == devices_of(b) == [("n1", "hami-gpu-0")]
    assert not isinstance(c, Placement)


def test_two_gpus_are_two_physical_gpus() -> None:
    # HAMi's nvidia.com/gpu counts physical GPUs: two shares must not land on one GPU.
    state = hami_cluster({"n1": 2})
    outcome = scheduler(state).schedule(state.add_pod(hami_pod("p", cores=10, memory_mib=100, gpus=2)).key)
    assert sorted(d for _, d in devices_of(outcome)) == ["hami-gpu-0", "hami-gpu-1"]
    one = hami_cluster({"n1": 1})
    assert not isinstance(
        scheduler(one).schedule(one.add_pod(hami_pod("p", cores=10, gpus=2)).key), Placement
    )


KUEUE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu, cores]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: "64"}
      - {name: nvidia.com/gpu, nominalQuota: "2"}
      - {name: cores, nominalQuota: "50"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: team}
"""
# GPUs of HAMi's class count as nvidia.com/gpu, their `cores` capacity as cores.
MAPPINGS = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
resources:
  deviceClassMappings:
  - {name: nvidia.com/gpu, deviceClassNames: [hami-core-gpu.project-hami.io]}
  - {name: cores, deviceClassNames: [hami-core-gpu.project-hami.io]}
"""


def queued_hami_cluster(*pods: object, configuration: str = "") -> Manifests:
    """One node with two HAMi GPUs, the queues above, and pods that ask HAMi-style in their limits."""
    limited = []
    for p in pods:
        assert isinstance(p, Pod)
        (container,) = p.spec.containers
        resources = replace(container.resources, limits=dict(container.resources.requests))
        limited.append(
            replace(p, spec=replace(p.spec, containers=(replace(container, resources=resources),)))
        )
    objects = [node("n1", cpu="64", memory="256Gi"), hami_slice("n1", 2), gs.hami_device_class(), *limited]
    return load_text("\n---\n".join([dump_yaml(objects), KUEUE, configuration]))  # type: ignore[arg-type]


QUEUED = {"kueue.x-k8s.io/queue-name": "q"}


def test_hami_requests_under_kueue_are_charged_and_placed() -> None:
    # The claim HAMi's webhook creates exists only in the cluster, not in the manifests.
    manifests = queued_hami_cluster(
        hami_pod("a", cores=30, memory_mib=4000, labels=QUEUED),
        hami_pod("b", cores=30, memory_mib=4000, labels=QUEUED),
        configuration=MAPPINGS,
    )
    result = plan(manifests)
    # Quota holds 50 cores: the first pod is admitted and placed, the second waits on quota.
    assert [b.pod for b in result.bound] == ["default/a"]
    assert result.engine.admission is not None
    usage = {
        r.name: r.total for r in result.engine.admission.status().cluster_queue("team").flavors[0].resources
    }
    assert usage["nvidia.com/gpu"] == 1 and usage["cores"] == 30
    assert "cores" in result.waiting["default/b"]


def test_hami_requests_under_kueue_without_a_mapping_wait_with_the_reason() -> None:
    manifests = queued_hami_cluster(hami_pod("a", cores=30, memory_mib=4000, labels=QUEUED))
    result = plan(manifests)
    assert not result.bound
    assert "deviceClassMappings" in result.waiting["default/a"]
    assert "hami-core-gpu.project-hami.io" in result.waiting["default/a"]

"""Trust domains: a GPU without memory isolation never holds pods of two domains."""

from __future__ import annotations

from collections import defaultdict

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from allot.cluster.state import ClusterState
from allot.engine.engine import Engine, EnginePolicy
from allot.model.base import ObjectMeta
from allot.model.core import Namespace
from allot.scheduling.profile import DEFAULT_FILTERS, Profile, profiles_from_config
from allot.scheduling.registry import known_plugins
from allot.scheduling.scheduler import Outcome, Placement, Scheduler
from allot.scheduling.sharing.domains import parse_trust_domain
from fuzzing import examples
from sharing.helpers import devices_of, hami_cluster, hami_pod, scheduler, sharing_profile


def gpu_domains(state: ClusterState, key: str = "namespace") -> dict[tuple[str, str], set[str]]:
    """(node, GPU) -> the namespaces (or label values) of the pods using it."""
    used: dict[tuple[str, str], set[str]] = defaultdict(set)
    for info in state.bound():
        node = state.nodes.infos[info.node].name if info.node is not None else ""
        domain = info.pod.namespace if key == "namespace" else info.pod.metadata.labels.get(key, "")
        for _, claim_key in info.claims:
            allocation = state.claims[claim_key].status.allocation
            assert allocation is not None
            for result in allocation.devices.results:
                used[(node, result.device)].add(domain)
    return used


def test_another_namespace_never_gets_a_used_gpu() -> None:
    state = hami_cluster({"n1": 1})
    sched = scheduler(state)
    assert devices_of(
        sched.schedule(state.add_pod(hami_pod("a1", cores=30, memory_mib=1000, namespace="a")).key)
    )
    blocked = sched.schedule(state.add_pod(hami_pod("b1", cores=30, memory_mib=1000, namespace="b")).key)
    assert not isinstance(blocked, Placement)
    assert "trust domain" in blocked.message
    same = sched.schedule(state.add_pod(hami_pod("a2", cores=30, memory_mib=1000, namespace="a")).key)
    assert devices_of(same) == [("n1", "hami-gpu-0")]


@pytest.mark.parametrize(
    "profile",
    [
        sharing_profile("BestFit"),
        # kube-scheduler's plugins plus GpuIsolation (the default profile): DynamicResources must
        # steer its allocation away from the other namespace's GPU, not pick it and be refused.
        Profile(plugin_args={"DynamicResources": {"alignment": "preferred"}}),
        Profile(plugin_args={"DynamicResources": {"alignment": "none"}}),
    ],
    ids=["BestFit", "default", "default-first-found"],
)
def test_another_namespace_takes_a_free_gpu_instead(profile: Profile) -> None:
    state = hami_cluster({"n1": 2})
    sched = scheduler(state, profile)

    def small(name: str, namespace: str) -> Outcome:
        return sched.schedule(
            state.add_pod(hami_pod(name, cores=30, memory_mib=1000, namespace=namespace)).key
        )

    first = devices_of(small("a1", "a"))
    second = devices_of(small("b1", "b"))
    assert first != second
    # Best fit would have put it on the used GPU, had the domain allowed it.
    assert devices_of(small("a2", "a")) == first
    assert devices_of(small("b2", "b")) == second
    blocked = small("c1", "c")
    assert not isinstance(blocked, Placement)
    assert "trust domain" in blocked.message


def test_tenant_label_on_pod_or_namespace_is_the_domain() -> None:
    tenant = "example.com/tenant"
    namespaces = [
        Namespace(api_version="v1", kind="Namespace", metadata=ObjectMeta(name=n, labels={tenant: "blue"}))
        for n in ("x", "y")
    ]
    state = hami_cluster({"n1": 1}, namespaces=namespaces)
    sched = scheduler(state, sharing_profile(trust=f"label:{tenant}"))
    assert devices_of(
        sched.schedule(state.add_pod(hami_pod("p1", cores=30, memory_mib=1000, namespace="x")).key)
    )
    # Another namespace of the same tenant shares; a pod labelled for another tenant does not.
    assert devices_of(
        sched.schedule(state.add_pod(hami_pod("p2", cores=30, memory_mib=1000, namespace="y")).key)
    )
    red = hami_pod("p3", cores=30, memory_mib=1000, namespace="y", labels={tenant: "red"})
    assert not isinstance(sched.schedule(state.add_pod(red).key), Placement)


def test_local_queue_is_namespace_and_queue_label() -> None:
    queue = "kueue.x-k8s.io/queue-name"
    state = hami_cluster({"n1": 1})
    sched = scheduler(state, sharing_profile(trust="localQueue"))
    assert devices_of(
        sched.schedule(state.add_pod(hami_pod("p1", cores=30, memory_mib=1000, labels={queue: "q1"})).key)
    )
    other = sched.schedule(state.add_pod(hami_pod("p2", cores=30, memory_mib=1000, labels={queue: "q2"})).key)
    assert not isinstance(other, Placement)
    assert devices_of(
        sched.schedule(state.add_pod(hami_pod("p3", cores=30, memory_mib=1000, labels={queue: "q1"})).key)
    )


def test_any_shares_across_namespaces() -> None:
    state = hami_cluster({"n1": 1})
    sched = scheduler(state, sharing_profile(trust="any"))
    for i, namespace in enumerate("abc"):
        assert devices_of(
            sched.schedule(
                state.add_pod(hami_pod(f"p{i}", cores=30, memory_mib=1000, namespace=namespace)).key
            )
        )


def test_isolation_holds_next_to_plain_dynamic_resources() -> None:
    # DynamicResources does not read the exclusion; GpuIsolation's reserve check still refuses
    # an allocation on another domain's GPU (the pod then waits rather than sharing).
    profile = Profile(percentage_of_nodes_to_score=100)
    assert DEFAULT_FILTERS[-2:] == ("DynamicResources", "GpuIsolation")
    state = hami_cluster({"n1": 2})
    sched = scheduler(state, profile)
    sched.schedule(state.add_pod(hami_pod("a1", cores=30, memory_mib=1000, namespace="a")).key)
    sched.schedule(state.add_pod(hami_pod("b1", cores=30, memory_mib=1000, namespace="b")).key)
    assert all(len(domains) == 1 for domains in gpu_domains(state).values())


@pytest.mark.parametrize("raw", ["label", "tenant", 3, "any:x"])
def test_bad_trust_domains_are_refused(raw: object) -> None:
    with pytest.raises(ValueError, match="trustDomain"):
        parse_trust_domain(raw)


PODS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(min_value=5, max_value=100)),
    min_size=1,
    max_size=30,
)


@settings(max_examples=examples(30))
@given(PODS, st.sampled_from(["FGD", "BestFit", "Packing", "Random", None]))
def test_random_streams_never_mix_domains_and_use_free_gpus(
    pods: list[tuple[str, int]], policy: str | None
) -> None:
    state = hami_cluster({"n1": 2, "n2": 2})
    sched = scheduler(state, sharing_profile(policy, seed=7))
    for i, (namespace, cores) in enumerate(pods):
        free_gpu = any(len(d) == 0 for d in _all_gpus(state).values())
        outcome = sched.schedule(
            state.add_pod(hami_pod(f"p{i}", cores=cores, memory_mib=500, namespace=namespace)).key
        )
        # Safety: no GPU is ever shared by two namespaces.
        assert all(len(domains) == 1 for domains in gpu_domains(state).values())
        # Liveness: with an unused GPU somewhere the pod is placed.
        if free_gpu:
            assert isinstance(outcome, Placement), outcome


def _all_gpus(state: ClusterState) -> dict[tuple[str, str], set[str]]:
    used = gpu_domains(state)
    return {
        (n, f"hami-gpu-{g}"): used.get((n, f"hami-gpu-{g}"), set()) for n in ("n1", "n2") for g in range(2)
    }


def test_mig_partitions_of_one_gpu_serve_several_namespaces() -> None:
    from allot.model.presets import gpu_sharing as gs
    from allot.model.resource import (
        CELDeviceSelector,
        DeviceClaim,
        DeviceRequest,
        DeviceSelector,
        ExactDeviceRequest,
        ResourceClaimSpec,
    )
    from builders import claim_template, node, pod

    selector = DeviceSelector(
        cel=CELDeviceSelector(expression='device.attributes["gpu.nvidia.com"].profile == "3g.40gb"')
    )
    spec = ResourceClaimSpec(
        devices=DeviceClaim(
            requests=(
                DeviceRequest(
                    name="mig",
                    exactly=ExactDeviceRequest(device_class_name="mig.nvidia.com", selectors=(selector,)),
                ),
            )
        )
    )
    state = ClusterState(
        nodes=[node("n1")],
        slices=gs.mig_slices("n1", [("H100-80GB", {})]),
        classes=gs.nvidia_device_classes(),
        templates=[claim_template("half", spec, namespace=ns) for ns in ("a", "b")],
    )
    sched = scheduler(state)
    taken = [
        devices_of(sched.schedule(state.add_pod(pod(f"p-{ns}", namespace=ns, claims={"gpu": "half"})).key))
        for ns in ("a", "b")
    ]
    assert sorted(d for ((_, d),) in taken) == ["gpu-0-mig-3g40gb-9-0", "gpu-0-mig-3g40gb-9-4"]


def test_engine_tells_apart_pods_that_differ_only_in_trust_domain() -> None:
    # The engine skips pods like one that just failed; the trust-domain label must keep them apart.
    tenant = "example.com/tenant"
    state = hami_cluster({"n1": 1})
    profile = sharing_profile(trust=f"label:{tenant}")
    state.add_pod(hami_pod("first", cores=30, memory_mib=1000, labels={tenant: "red"}))
    engine = Engine(state, profiles={profile.scheduler_name: profile}, policy=EnginePolicy(preemption=False))
    assert [d.pod for d in engine.cycle().bound] == ["default/first"]
    state.add_pod(hami_pod("blue", cores=30, memory_mib=1000, labels={tenant: "blue"}))
    state.add_pod(hami_pod("red", cores=30, memory_mib=1000, labels={tenant: "red"}))
    result = engine.cycle()
    assert [d.pod for d in result.bound] == ["default/red"]
    assert [d.pod for d in result.waiting] == ["default/blue"]


def default_scheduler(state: ClusterState, config: str | None = None) -> Scheduler:
    """kube-scheduler's default profile (DynamicResources, no GpuPlacement), or one read from YAML."""
    if config is None:
        return Scheduler(state)
    return Scheduler(state, profiles_from_config(yaml.safe_load(config), known_plugins=known_plugins()))


def test_the_default_profile_keeps_namespaces_apart_on_shared_gpus() -> None:
    # Secure by default: a fractional GPU has no memory isolation, so it holds one namespace.
    state = hami_cluster({"n1": 1})
    sched = default_scheduler(state)
    assert devices_of(
        sched.schedule(state.add_pod(hami_pod("a1", cores=30, memory_mib=1000, namespace="a")).key)
    )
    blocked = sched.schedule(state.add_pod(hami_pod("b1", cores=30, memory_mib=1000, namespace="b")).key)
    assert not isinstance(blocked, Placement)
    assert "trust domain" in blocked.message
    assert devices_of(
        sched.schedule(state.add_pod(hami_pod("a2", cores=30, memory_mib=1000, namespace="a")).key)
    )


OPT_OUTS = {
    "disabled": """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins: {multiPoint: {disabled: [{name: GpuIsolation}]}}
""",
    "any": """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig: [{name: GpuIsolation, args: {trustDomain: any}}]
""",
}


@pytest.mark.parametrize("config", sorted(OPT_OUTS))
def test_a_cluster_opts_out_through_its_profile(config: str) -> None:
    state = hami_cluster({"n1": 1})
    sched = default_scheduler(state, OPT_OUTS[config])
    for namespace in "ab":
        outcome = sched.schedule(
            state.add_pod(hami_pod(f"p-{namespace}", cores=30, memory_mib=1000, namespace=namespace)).key
        )
        assert devices_of(outcome) == [("n1", "hami-gpu-0")]

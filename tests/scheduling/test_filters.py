"""Each filter alone: which nodes it rejects and with which reason."""

from __future__ import annotations

import pytest

from allot.cluster.state import ClusterState
from allot.model.core import Taint, Toleration
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from builders import (
    claim_spec,
    claim_template,
    device_class,
    gpu_slice,
    node,
    pod,
    requirement,
)


def place(state: ClusterState, name: str) -> Placement | Unschedulable:
    return Scheduler(state).place(f"default/{name}")


def test_resources_fit_reports_each_insufficient_resource() -> None:
    state = ClusterState(
        nodes=[node("small", cpu="1", memory="1Gi"), node("big", cpu="16", memory="64Gi")],
        pods=[pod("p", cpu="2", memory="2Gi")],
    )
    outcome = place(state, "p")
    assert isinstance(outcome, Placement) and outcome.node == "big"

    state = ClusterState(nodes=[node("small", cpu="1", memory="1Gi")], pods=[pod("p", cpu="2", memory="2Gi")])
    outcome = place(state, "p")
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."


def test_resources_fit_counts_the_pod_slot() -> None:
    state = ClusterState(
        nodes=[node("n", pods="1")],
        pods=[pod("running", node_name="n"), pod("p")],
    )
    outcome = place(state, "p")
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == "0/1 nodes are available: 1 Too many pods."


def test_device_plugin_extended_resources_are_counted_per_node() -> None:
    state = ClusterState(
        nodes=[node("gpu", extended={"nvidia.com/gpu": "2"}), node("cpu-only")],
        pods=[
            pod("a", extended={"nvidia.com/gpu": "2"}, node_name="gpu"),
            pod("p", extended={"nvidia.com/gpu": "1"}),
        ],
    )
    outcome = place(state, "p")
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


def test_init_containers_and_sidecars_count_as_kubernetes_does() -> None:
    from msgspec.structs import replace

    from allot.cluster.resources import pod_requests
    from allot.model.core import Container, ResourceRequirements

    def container(cpu: str, restart: str | None = None) -> Container:
        from builders import q

        return Container(
            name="c", resources=ResourceRequirements(requests={"cpu": q(cpu)}), restart_policy=restart
        )

    base = pod("p", cpu="1")
    # A plain init container bigger than the app: the init phase dominates.
    spec = replace(base.spec, init_containers=(container("3"),))
    assert pod_requests(replace(base, spec=spec))["cpu"] == 3000
    # A sidecar runs beside the app: it adds to the app containers.
    spec = replace(base.spec, init_containers=(container("500m", "Always"),))
    assert pod_requests(replace(base, spec=spec))["cpu"] == 1500
    # An init container after a sidecar runs with it: 2 + 0.5 = 2.5 > 1 + 0.5.
    spec = replace(base.spec, init_containers=(container("500m", "Always"), container("2")))
    assert pod_requests(replace(base, spec=spec))["cpu"] == 2500


def test_unschedulable_nodes_only_take_pods_that_tolerate_it() -> None:
    state = ClusterState(nodes=[node("cordoned", unschedulable=True)], pods=[pod("p")])
    outcome = place(state, "p")
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == "0/1 nodes are available: 1 node(s) were unschedulable."
    toleration = Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")
    state = ClusterState(
        nodes=[node("cordoned", unschedulable=True)], pods=[pod("p", tolerations=[toleration])]
    )
    assert isinstance(place(state, "p"), Placement)


def test_not_ready_nodes_are_treated_as_tainted_not_ready() -> None:
    state = ClusterState(nodes=[node("down", ready=False), node("up")], pods=[pod("p")])
    outcome = place(state, "p")
    assert isinstance(outcome, Placement) and outcome.node == "up"
    state = ClusterState(nodes=[node("down", ready=False)], pods=[pod("p")])
    outcome = place(state, "p")
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == "0/1 nodes are available: 1 node(s) had untolerated taint(s)."


@pytest.mark.parametrize(
    ("toleration", "placed"),
    [
        (None, False),
        (Toleration(key="gpu", operator="Equal", value="true", effect="NoSchedule"), True),
        (Toleration(key="gpu", operator="Exists"), True),
        (Toleration(key="gpu", operator="Equal", value="false", effect="NoSchedule"), False),
        (Toleration(key="gpu", operator="Exists", effect="NoExecute"), False),
        (Toleration(operator="Exists"), True),
    ],
)
def test_taints_keep_pods_off_unless_tolerated(toleration: Toleration | None, placed: bool) -> None:
    taint = Taint(key="gpu", value="true", effect="NoSchedule")
    tolerations = [toleration] if toleration else []
    state = ClusterState(nodes=[node("gpu-node", taints=[taint])], pods=[pod("p", tolerations=tolerations)])
    outcome = place(state, "p")
    assert isinstance(outcome, Placement) == placed
    if not placed:
        assert isinstance(outcome, Unschedulable)
        assert outcome.message == "0/1 nodes are available: 1 node(s) had untolerated taint(s)."


def test_node_selector_and_required_affinity() -> None:
    nodes = [node("a", labels={"zone": "a", "gpu": "h100"}), node("b", labels={"zone": "b"})]
    state = ClusterState(nodes=nodes, pods=[pod("p", node_selector={"zone": "b"})])
    outcome = place(state, "p")
    assert isinstance(outcome, Placement) and outcome.node == "b"
    state = ClusterState(
        nodes=nodes, pods=[pod("p", required_affinity=[requirement("gpu", "In", "h100", "a100")])]
    )
    outcome = place(state, "p")
    assert isinstance(outcome, Placement) and outcome.node == "a"
    state = ClusterState(
        nodes=nodes, pods=[pod("p", required_affinity=[requirement("zone", "NotIn", "a", "b")])]
    )
    outcome = place(state, "p")
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."


def test_dra_claims_from_templates_are_allocated_per_pod() -> None:
    template = claim_template("one-gpu", claim_spec(("gpu", "gpu.example.com", 1)))
    state = ClusterState(
        nodes=[node("n1"), node("n2")],
        slices=[gpu_slice("n1", 1), gpu_slice("n2", 1)],
        classes=[device_class()],
        templates=[template],
        pods=[pod(f"p{i}", claims={"gpu": "one-gpu"}) for i in range(3)],
    )
    scheduler = Scheduler(state)
    placed = [scheduler.schedule(f"default/p{i}") for i in range(3)]
    assert sorted(o.node for o in placed[:2] if isinstance(o, Placement)) == ["n1", "n2"]
    last = placed[2]
    assert isinstance(last, Unschedulable)
    assert last.message == "0/2 nodes are available: 2 cannot allocate all claims."


def test_missing_device_class_is_unresolvable_before_any_node() -> None:
    template = claim_template("tpl", claim_spec(("tpu", "tpu.example.com", 1)))
    state = ClusterState(nodes=[node("n1")], templates=[template], pods=[pod("p", claims={"x": "tpl"})])
    outcome = place(state, "p")
    assert isinstance(outcome, Unschedulable)
    assert (
        outcome.message
        == "0/1 nodes are available: request tpu: device class tpu.example.com does not exist."
    )


def test_missing_template_is_reported() -> None:
    state = ClusterState(nodes=[node("n1")], pods=[pod("p", claims={"x": "nope"})])
    outcome = place(state, "p")
    assert isinstance(outcome, Unschedulable)
    assert "resourceclaimtemplate default/'nope' not found" in outcome.message

"""NodePorts, NodeName and ImageLocality: host ports, a named node, cached images."""

from __future__ import annotations

from allot.scheduling.plugins.node_name import REASON as NODE_NAME_REASON
from allot.scheduling.plugins.node_ports import REASON as PORTS_REASON
from allot.scheduling.scheduler import Unschedulable
from scheduling.manifests import add, cluster, feasible, node_doc, place, pod_doc, scores

MIB = 1024 * 1024


def ports(*entries: dict[str, object]) -> dict[str, object]:
    return {
        "containers": [
            {"name": "c", "image": "app:1", "ports": [{"containerPort": 80, **e} for e in entries]}
        ]
    }


def test_host_ports_conflict_by_protocol_and_address() -> None:
    taken = pod_doc("taken", node="n1", **ports({"hostPort": 8080, "hostIP": "10.0.0.1"}))
    state = cluster(node_doc("n1"), node_doc("n2"), taken)
    cases = {
        "wildcard": ({"hostPort": 8080}, {"n2"}),
        "same-address": ({"hostPort": 8080, "hostIP": "10.0.0.1"}, {"n2"}),
        "other-address": ({"hostPort": 8080, "hostIP": "10.0.0.2"}, {"n1", "n2"}),
        "udp": ({"hostPort": 8080, "protocol": "UDP"}, {"n1", "n2"}),
        "other-port": ({"hostPort": 9090}, {"n1", "n2"}),
        "no-host-port": ({}, {"n1", "n2"}),
    }
    for name, (port, expected) in cases.items():
        assert feasible(state, add(state, pod_doc(name, **ports(port)))) == expected, name


def test_a_wildcard_port_blocks_every_address_and_sidecars_count() -> None:
    sidecar = {
        "initContainers": [
            {
                "name": "proxy",
                "image": "proxy:1",
                "restartPolicy": "Always",
                "ports": [{"containerPort": 15001, "hostPort": 15001}],
            }
        ]
    }
    state = cluster(node_doc("n1"), pod_doc("mesh", node="n1", **sidecar))
    key = add(state, pod_doc("p", **ports({"hostPort": 15001, "hostIP": "192.168.1.5"})))
    outcome = place(state, key)
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == f"0/1 nodes are available: 1 {PORTS_REASON}."
    # Once the sidecar's pod leaves, the port is free again.
    state.unbind("default/mesh")
    assert feasible(state, key) == {"n1"}


def test_a_pod_naming_a_node_fits_only_that_node() -> None:
    state = cluster(node_doc("n1"), node_doc("n2"))
    key = add(state, pod_doc("pinned", node="gone"))
    outcome = place(state, key)
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == f"0/2 nodes are available: 2 {NODE_NAME_REASON}."


def test_a_pod_taken_off_its_named_node_may_go_elsewhere() -> None:
    # Bound by its nodeName, then moved off (consolidation, a node failure): its controller's new
    # pod would name no node, so the old name does not hold it.
    state = cluster(node_doc("n1"), node_doc("n2"), pod_doc("moved", node="n1"))
    state.unbind("default/moved")
    assert feasible(state, "default/moved") == {"n1", "n2"}


def test_image_locality_scales_by_size_and_spread() -> None:
    images = {"images": [{"names": ["registry.example/model:v1"], "sizeBytes": 600 * MIB}]}
    state = cluster(node_doc("n1", **images), node_doc("n2"))
    key = add(state, pod_doc("p").replace("app:1", "registry.example/model:v1"))
    # On 1 of 2 nodes: 600 MiB x 1/2 = 300 MiB; (300 - 23) / (1000 - 23) MiB x 100 = 28.35 -> 28.
    assert scores(state, key, "ImageLocality") == {"n1": 28.0, "n2": 0.0}


def test_image_names_without_a_tag_mean_latest_and_image_volumes_count() -> None:
    images = {"images": [{"names": ["registry.example/data:latest"], "sizeBytes": 2000 * MIB}]}
    state = cluster(node_doc("n1", **images), node_doc("n2", **images))
    untagged = add(state, pod_doc("p").replace("app:1", "registry.example/data"))
    # On every node, above the 1000 MiB ceiling of a one-container pod: 100.
    assert scores(state, untagged, "ImageLocality") == {"n1": 100.0, "n2": 100.0}
    volume = {"volumes": [{"name": "weights", "image": {"reference": "registry.example/data:latest"}}]}
    mounted = add(state, pod_doc("q", **volume))
    assert scores(state, mounted, "ImageLocality") == {"n1": 100.0, "n2": 100.0}


def test_a_pod_naming_nodes_by_field_is_narrowed_before_any_filter() -> None:
    tainted = node_doc("n2").replace(
        "status:", "spec:\n  taints: [{key: t, value: v, effect: NoSchedule}]\nstatus:"
    )
    state = cluster(node_doc("n1", cpu="2"), tainted, node_doc("n3"))
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    big = {"containers": [{"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "4"}}}]}
    outcome = place(state, add(state, pod_doc("daemon", affinity=affinity, **big)))
    # As kube-scheduler's PreFilterResult: n2 and n3 are out before TaintToleration looks at n2.
    assert isinstance(outcome, Unschedulable)
    assert (
        outcome.message
        == "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )

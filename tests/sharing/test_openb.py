"""The openb trace as shipped: digests, rows, and the Kubernetes objects made from them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from allot.cluster.state import ClusterState
from allot.model.validation import validate_object
from allot.sim.experiments.fragmentation import target_workload, tuned_workload
from allot.sim.openb import (
    EXPERIMENT_TRACES,
    TraceError,
    read_nodes,
    read_pods,
    shipped_checksums,
    templates,
    to_cluster,
    to_pod,
)
from allot.sim.openb.cluster import MEMORY_PER_CORE, claim_template
from allot.sim.openb.trace import sha256_of_shipped


def test_shipped_files_match_the_published_digests() -> None:
    sums = shipped_checksums()
    assert len(sums) == 18 and "openb_node_list_gpu_node.csv" in sums
    for name, digest in sums.items():
        assert sha256_of_shipped(name) == digest, name


def test_node_list() -> None:
    nodes = read_nodes()
    assert len(nodes) == 1213
    assert sum(n.gpus for n in nodes) == 6212
    by_model = Counter(n.model for n in nodes)
    assert by_model == {"G2": 549, "T4": 404, "P100": 134, "V100M16": 55, "G3": 39, "V100M32": 30, "A10": 2}
    assert sum(n.cpu_milli for n in nodes) == 107_018_000


def test_default_pod_list() -> None:
    pods = read_pods("default")
    assert len(pods) == 8152
    assert sum(1 for p in pods if p.num_gpu == 0) == 1088
    assert sum(1 for p in pods if p.num_gpu == 1 and p.gpu_milli < 1000) == 3078
    assert sum(p.gpu_request_milli for p in pods) == 6_086_800
    assert pods[0].qos == "LS" and pods[0].creation_time == 0


ROWS = {
    "cpu050": 7439,
    "cpu100": 7853,
    "cpu200": 8832,
    "cpu250": 9420,
    "multigpu20": 8324,
    "multigpu30": 8508,
    "multigpu40": 8746,
    "multigpu50": 9061,
}  # research/sharing.md 1.1


@pytest.mark.parametrize("trace", EXPERIMENT_TRACES)
def test_every_experiment_trace_loads(trace: str) -> None:
    pods = read_pods(trace)
    assert len(pods) == ROWS.get(trace, 8152)
    if trace.startswith("multigpu"):
        # Five columns only: no GPU-model constraints, times or phases.
        assert all(p.gpu_spec == () and p.creation_time is None for p in pods)
    if trace.startswith("gpuspec"):
        assert any(p.gpu_spec for p in pods)


def test_a_csv_path_and_errors_that_name_the_file(tmp_path: Path) -> None:
    good = tmp_path / "pods.csv"
    good.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,1,500\n")
    assert read_pods(good)[0].gpu_milli == 500
    bad = tmp_path / "bad.csv"
    bad.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,x,10,1,500\n")
    with pytest.raises(TraceError, match=r"bad.csv:2: cpu_milli='x'"):
        read_pods(bad)
    for cell, problem in (("1e400", "is not a number"), ("nan", "is not a number"), ("-5", "is negative")):
        bad.write_text(f"name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,10,1,{cell}\n")
        with pytest.raises(TraceError, match=f"bad.csv:2: gpu_milli='{cell}' {problem}"):
            read_pods(bad)
    with pytest.raises(TraceError, match="missing column"):
        read_nodes(good)
    with pytest.raises(TraceError, match="not a shipped openb trace"):
        read_pods("nonesuch")


def test_nodes_and_slices_are_valid_kubernetes_objects() -> None:
    nodes, slices, classes = to_cluster(read_nodes()[:3])
    for obj in [*nodes, *slices, *classes]:
        assert validate_object(obj, None) == []  # type: ignore[arg-type]
    assert nodes[0].status.allocatable["pods"].value() == 1001
    device = slices[0].spec.devices[0]
    assert device.attributes["model"].string_value == "P100"
    assert device.capacity["cores"].value.value() == 100


def test_pods_ask_for_cores_and_proportional_memory() -> None:
    pods = read_pods("gpuspec33")
    shared = next(p for p in pods if p.num_gpu == 1 and 0 < p.gpu_milli < 1000 and p.gpu_spec)
    request = claim_template(shared).spec.spec.devices.requests[0].exactly
    assert request is not None and request.capacity is not None
    cores = request.capacity.requests["cores"].value()
    assert cores * 10 == shared.gpu_milli
    assert request.capacity.requests["memory"].value() == cores * MEMORY_PER_CORE * 1024 * 1024
    assert any("model in [" in s.cel.expression for s in request.selectors if s.cel is not None)
    multi = next(p for p in pods if p.num_gpu > 1)
    constraints = claim_template(multi).spec.spec.devices.constraints
    assert constraints and constraints[0].distinct_attribute == "hami-core-gpu.project-hami.io/minor"
    cpu_only = next(p for p in pods if p.num_gpu == 0)
    assert to_pod(cpu_only).spec.resource_claims == ()


def test_pods_enter_the_state_with_claims_from_their_templates() -> None:
    nodes, slices, classes = to_cluster(read_nodes()[:2])
    pods = read_pods()[:50]
    state = ClusterState(nodes=nodes, slices=slices, classes=classes, templates=templates(pods))
    for row in pods:
        info = state.add_pod(to_pod(row))
        assert bool(info.claims) == (row.num_gpu > 0)


def test_workload_is_tuned_to_130_percent_of_capacity() -> None:
    pods = read_pods()
    arrivals = tuned_workload(pods, 42, 6_212_000)
    total = sum(p.gpu_request_milli for _, p in arrivals)
    assert 1.29 * 6_212_000 < total <= 1.3 * 6_212_000 + 8000
    assert arrivals[:8152] != [(p.name, p) for p in pods]  # shuffled
    assert any(name.endswith("-tuned-0") for name, _ in arrivals[8152:])
    assert tuned_workload(pods, 42, 6_212_000) == arrivals  # seeded
    over = tuned_workload(read_pods("multigpu50"), 42, 6_212_000)
    assert sum(p.gpu_request_milli for _, p in over) <= 1.3 * 6_212_000


def test_target_workload_covers_95_percent_of_pods() -> None:
    workload = target_workload(read_pods())
    assert len(workload.classes) == 35
    assert abs(sum(c.weight for c in workload.classes) - 1.0) < 1e-9
    top = workload.classes[0]
    assert (
        top.cpu == 3152
        and top.request is not None
        and dict(top.request.capacity_key or ())["cores"] == 81 * 10**9
    )

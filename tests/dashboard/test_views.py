"""The dashboard's snapshots and views, over a recorded simulation and over hand-built snapshots.

The frames of a simulation must say what the simulator's own recorder measured at the same
instants (GPUs allocated, stranded, pending pods): two independent accounts of one run. The node
map must put each GPU where its ResourceSlice says it sits and each pod on the devices its claims
hold; fair shares and ratios follow the report's definition; every query is bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from allot.dashboard.app_view import app_list, app_view
from allot.dashboard.cluster_view import cluster_view, thin
from allot.dashboard.fairness import shares
from allot.dashboard.frames import FrameSource, RecordingError
from allot.dashboard.history import History, Point, totals
from allot.dashboard.model import GpuRecord, NodeRecord, PodRecord, Snapshot
from allot.dashboard.node_view import node_list, node_view
from allot.dashboard.query import MAX_LIMIT, Page, Params, QueryError
from allot.model.resource import ResourceSlice
from allot.sim.records import SimResult
from allot.sim.scenario.build import prepare
from allot.sim.scenario.parse import parse_scenario
from dashboard.scenario import FRAMES, SCENARIO, record


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimResult, FrameSource]]:
    directory = tmp_path_factory.mktemp("frames")
    result = record(directory)
    yield result, FrameSource(directory)


def test_frames_say_what_the_simulator_measured_at_the_same_instants(
    run: tuple[SimResult, FrameSource],
) -> None:
    result, source = run
    times = source.times()
    assert FRAMES <= len(times) <= FRAMES + 2 and times == sorted(times) and times[-1] == result.end
    samples = result.samples
    busy = 0
    for time in times:
        point = totals(source.snapshot(time))
        at = int(np.searchsorted(samples.time, time, side="right")) - 1
        assert point.ready == samples.capacity[at]
        assert point.allocated == pytest.approx(samples.allocated[at], abs=1e-3)
        assert point.fragmented == pytest.approx(samples.fragmented[at], abs=1e-3)
        assert point.pending_pods == samples.pending_pods[at]
        # In a simulation every bound pod runs.
        assert point.in_use == point.allocated
        busy += point.pending_pods > 0 and point.fragmented > 0
    assert busy, "the scenario never had pods waiting beside stranded GPU share"
    assert source.history() == [totals(source.snapshot(t)) for t in times]


def _preset_places(text: str) -> dict[tuple[str, str], tuple[str, int]]:
    """(node, GPU device) -> (PCIe root, NUMA node), as the preset publishes them."""
    manifests = prepare(parse_scenario(text, "x.yaml"), policies=["fair"]).manifests
    places: dict[tuple[str, str], tuple[str, int]] = {}
    for found in manifests.of_kind(ResourceSlice):
        for device in found.spec.devices:
            root = device.attributes.get("resource.kubernetes.io/pcieRoot")
            numa = device.attributes.get("resource.kubernetes.io/numaNode")
            if found.spec.driver == "gpu.nvidia.com" and root is not None and numa is not None:
                assert root.string_value is not None and numa.int_value is not None
                places[(found.spec.node_name or "", device.name)] = (root.string_value, numa.int_value)
    return places


def test_the_node_map_puts_gpus_where_their_slices_say_and_pods_on_what_they_hold(
    run: tuple[SimResult, FrameSource],
) -> None:
    _, source = run
    places = _preset_places(SCENARIO)
    seen = {"whole": 0, "shared": 0, "partition": 0}
    for time in source.times()[::3]:
        snapshot = source.snapshot(time)
        pods = {p.key: p for p in snapshot.pods}
        for node in snapshot.nodes:
            view = node_view(snapshot, node.name)
            held: dict[str, float] = {}
            for numa in view["layout"]:
                for root in numa["roots"]:
                    for gpu in root["gpus"]:
                        where = places.get((node.name, gpu["label"]))
                        if where is not None:
                            assert (root["root"], numa["numa"]) == (where[0], str(where[1]))
                        holders = gpu["holders"] + [h for s in gpu["slices"] for h in s["holders"]]
                        for holder in holders:
                            held[holder["pod"]] = held.get(holder["pod"], 0.0) + holder["share"]
                            seen[gpu["mode"]] += 1
                            if gpu["mode"] == "shared":
                                # 30 % of the cores, 20 of 80 GiB: the pod takes 0.3 of the GPU, trusted by its namespace.
                                assert holder["share"] == pytest.approx(0.3)
                                assert holder["domain"] == "namespace=" + holder["pod"].split("/")[0]
                        assert gpu["allocated"] == pytest.approx(
                            min(1.0, sum(h["share"] for h in holders)), abs=1e-3
                        )
            for pod, share in held.items():
                assert pods[pod].node == node.name
                assert pods[pod].gpus == pytest.approx(share, abs=1e-3)
            assert sorted(p["pod"] for p in view["pods"]) == sorted(
                k for k, p in pods.items() if p.node == node.name
            )
    assert all(seen.values()), seen


def test_the_cluster_and_application_views_of_a_frame(run: tuple[SimResult, FrameSource]) -> None:
    _, source = run
    snapshot = next(
        s for s in map(source.snapshot, reversed(source.times())) if any(not p.node for p in s.pods)
    )
    view = cluster_view(snapshot, source.history(snapshot.time))
    pending = [p for p in snapshot.pods if not p.node]
    assert view["pending"]["pods"] == len(pending)
    assert sum(r["pods"] for r in view["pending"]["reasons"]) <= len(pending)
    assert {p["pod"] for p in view["pending"]["top"]} <= {p.key for p in pending}
    assert sum(m["gpus"] for m in view["byModel"]) == sum(p["gpus"] for p in view["byPool"]) == 24
    assert {p["pool"] for p in view["byPool"]} == {"train", "infer", "mig", "cpu"}
    assert [a["kind"] for a in view["apps"]] == ["namespace", "clusterqueue"]
    assert len(view["history"]) == len(source.history(snapshot.time))
    for queue in snapshot.cluster_queues:
        document = app_view(
            snapshot, "clusterqueue", queue.name, pending_page=Page(0, 5), running_page=Page(0, 5)
        )
        mine = [p for p in snapshot.pods if p.cluster_queue == queue.name]
        assert document["pending"]["total"] == sum(1 for p in mine if not p.node)
        assert document["running"]["total"] == sum(1 for p in mine if p.node)
        assert len(document["pending"]["items"]) <= 5
        assert all(
            item["reason"] and item["reason"] != "not tried yet" for item in document["pending"]["items"]
        )
        assert {q["resource"] for q in document["quota"]} >= {"cpu", "memory"}
        assert document["links"]["cohort"] == "lab"
    listed = app_list(snapshot, "clusterqueue", text="", page=Page(0, 50))
    assert [a["name"] for a in listed["items"]] == sorted(q.name for q in snapshot.cluster_queues)


def test_admissions_and_preemptions_are_the_simulators(run: tuple[SimResult, FrameSource]) -> None:
    result, source = run
    last = source.snapshot()
    for queue in last.cluster_queues:
        admitted = sum(1 for a in result.admissions if a.cluster_queue == queue.name)
        assert last.tallies[f"clusterqueue/{queue.name}"].admissions == admitted
    for tenant in result.tenants:
        preempted = sum(1 for p in result.preemptions if p.tenant == tenant)
        tally = last.tallies.get(f"namespace/{tenant}")
        assert (tally.preemptions if tally is not None else 0) == preempted
    assert sum(a.admissions for a in last.tallies.values()) > 0 and result.preemptions


def _snapshot(pods: list[PodRecord], gpus: int = 4) -> Snapshot:
    node = NodeRecord(
        name="n1", pool="p", gpus=tuple(GpuRecord(label=f"g{i}", mode="whole") for i in range(gpus))
    )
    return Snapshot(time=100.0, source="live", nodes=(node,), pods=tuple(pods))


def test_fair_shares_split_the_ready_gpus_by_weighted_max_min() -> None:
    pods = [
        *(PodRecord(key=f"a/p{i}", node="n1", gpus=1.0) for i in range(3)),
        PodRecord(key="b/p0", node="n1", gpus=1.0),
        PodRecord(key="b/p1", gpus=2.0, created=40.0, reason="no room"),
    ]
    found = {s.name: s for s in shares(_snapshot(pods), "namespace")}
    # 4 GPUs, both ask for 3: 2 each. a holds 3 (1.5 of its share), b holds 1 (0.5).
    assert (found["a"].fair, found["b"].fair) == (2.0, 2.0)
    assert (found["a"].ratio, found["b"].ratio) == (1.5, 0.5)
    view = cluster_view(_snapshot(pods), [])
    assert view["pending"]["gpuHours"] == pytest.approx(2 * 60 / 3600, abs=1e-3)
    assert view["pending"]["top"][0] | {"apps": None} == {
        "pod": "b/p1", "node": "", "phase": "", "gpus": 2.0, "priority": 0, "apps": None, "waited": 60.0,
        "reason": "no room",
    }  # fmt: skip


def test_a_node_list_is_paged_sorted_and_filtered() -> None:
    nodes = tuple(
        NodeRecord(
            name=f"node-{i:02d}",
            pool="a" if i % 2 else "b",
            gpus=(GpuRecord(label="g0", mode="whole", allocated=(i % 5) / 4),),
        )
        for i in range(23)
    )
    snapshot = Snapshot(time=0.0, source="live", nodes=nodes)
    first = node_list(snapshot, text="", pool="", sort="name", descending=False, page=Page(0, 10))
    rest = node_list(snapshot, text="", pool="", sort="name", descending=False, page=Page(20, 10))
    assert first["total"] == 23 and [n["name"] for n in first["items"]][:2] == ["node-00", "node-01"]
    assert [n["name"] for n in rest["items"]] == ["node-20", "node-21", "node-22"]
    busy = node_list(snapshot, text="", pool="a", sort="allocated", descending=True, page=Page(0, 50))
    values = [n["allocated"] for n in busy["items"]]
    assert values == sorted(values, reverse=True) and all(int(n["name"][-2:]) % 2 for n in busy["items"])
    assert (
        node_list(snapshot, text="-1", pool="", sort="name", descending=False, page=Page(0, 50))["total"]
        == 10
    )
    with pytest.raises(QueryError) as missing:
        node_view(snapshot, "node-99")
    assert missing.value.status == 404


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ({"limit": str(MAX_LIMIT + 1)}, 400),
        ({"limit": "0"}, 400),
        ({"offset": "-3"}, 400),
        ({"offset": "ten"}, 400),
        ({"t": "inf"}, 400),
        ({"t": "1e400"}, 400),
        ({"q": "x" * 201}, 400),
        ({"q": "x" * 3000}, 414),
        ({"sort": "weight"}, 400),
        ({"nosuch": "1"}, 400),
    ],
)
def test_a_query_out_of_bounds_is_refused_with_a_4xx(query: dict[str, str], status: int) -> None:
    with pytest.raises(QueryError) as refused:
        params = Params(query, ("offset", "limit", "t", "q", "sort"))
        params.page()
        params.number("t")
        params.text("q")
        params.choice("sort", ("name", "pods"), "name")
    assert refused.value.status == status


def test_history_is_bounded_and_thinned() -> None:
    history = History(interval=10.0, retention=100.0)
    for i in range(50):
        if history.due(i * 5.0):
            history.add(Point(i * 5.0, 1, 0, 0, 0, 0, 0))
    assert len(history.points) == 11 and history.points[-1].time == 240.0
    points = [Point(float(i), 1, 0, 0, 0, 0, 0) for i in range(2000)]
    kept = thin(points, 100)
    assert len(kept) == 100 and kept[0] == points[0] and kept[-1] == points[-1]


def test_a_folder_that_holds_no_recording_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="not found"):
        FrameSource(tmp_path)
    (tmp_path / "frames.json").write_text("{not json")
    with pytest.raises(RecordingError, match="not a frame index"):
        FrameSource(tmp_path)

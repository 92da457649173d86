"""The scenario format: what parses, what it builds, and located errors for what does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from allot.model.errors import ManifestErrors
from allot.model.kueue import ClusterQueue, LocalQueue
from allot.model.kueue_config import Configuration
from allot.model.resource import ResourceClaimTemplate
from allot.sim.scenario.arrivals import Burst, Bursts, Poisson, Times, arrival_times
from allot.sim.scenario.devices import claim_spec, gpu_equivalents
from allot.sim.scenario.parse import load_scenario, parse_scenario
from allot.sim.scenario.reader import parse_duration, parse_rate
from allot.sim.scenario.schema import DeviceSpec, GpuShare

from .cases import SMALL, prepared


def errors_of(text: str) -> list[str]:
    with pytest.raises(ManifestErrors) as caught:
        prepared(text)
    return [str(e) for e in caught.value.errors]


def test_durations_and_rates() -> None:
    assert parse_duration("1h30m") == 5400
    assert parse_duration("250ms") == 0.25
    assert parse_duration(90) == 90
    assert parse_duration("2d") == 172800
    assert parse_duration("soon") is None
    assert parse_duration("1e99999") is None  # infinity is no duration
    assert parse_rate("12/h") == pytest.approx(12 / 3600)
    assert parse_rate("3/s") == 3
    assert parse_rate("fast") is None


def test_arrivals() -> None:
    rng = np.random.default_rng(0)
    assert list(arrival_times(Times((30.0, 10.0)), rng, count=None, horizon=None, cap=1000)) == [10.0, 30.0]
    burst = arrival_times(Bursts((Burst(60.0, 4, 8.0),)), rng, count=None, horizon=None, cap=1000)
    assert list(burst) == [60.0, 62.0, 64.0, 66.0]
    poisson = arrival_times(Poisson(rate=1.0), rng, count=None, horizon=2000.0, cap=10_000)
    assert poisson.max() < 2000 and 1800 < poisson.size < 2200
    assert arrival_times(Poisson(rate=1.0), rng, count=10, horizon=None, cap=1000).size == 10


def test_small_scenario_builds_jobs_tenants_and_kueue_objects() -> None:
    p = prepared(SMALL)
    assert [t for t in p.workload.tenants] == ["alpha", "beta"]
    assert {j.shape for j in p.workload.jobs} == {"train", "infer", "prep"}
    assert all(j.arrival < 7200 for j in p.workload.jobs)
    assert [p.name for p in p.policies] == ["fifo-priority", "fair"]
    queues = {cq.name: cq for cq in p.manifests.of_kind(ClusterQueue)}
    assert set(queues) == {"alpha", "beta"}
    quotas = {
        cq.name: {
            r.name: r.nominal_quota.canonical() if r.nominal_quota is not None else ""
            for r in cq.spec.resource_groups[0].flavors[0].resources
        }
        for cq in queues.values()
    }
    # 8 device-plugin GPUs split 1:2 by weight.
    assert quotas["alpha"]["nvidia.com/gpu"] == "3" and quotas["beta"]["nvidia.com/gpu"] == "5"
    assert {lq.key for lq in p.manifests.of_kind(LocalQueue)} == {"alpha/alpha", "beta/beta"}
    assert p.manifests.of_kind(Configuration)


def test_device_shorthand() -> None:
    pairs = claim_spec(DeviceSpec(gpus=4, nics=2, alignment="pcieRoot"), set())
    assert pairs is not None
    assert [(r.name, r.exactly.count) for r in pairs.devices.requests if r.exactly] == [
        ("gpu-0", 2),
        ("nic-0", 1),
        ("gpu-1", 2),
        ("nic-1", 1),
    ]
    assert [c.match_attribute for c in pairs.devices.constraints] == ["resource.kubernetes.io/pcieRoot"] * 2
    preferred = claim_spec(DeviceSpec(gpus=8, nics=8, alignment="preferred"), set())
    assert preferred is not None and not preferred.devices.constraints
    assert [r.name for r in preferred.devices.requests] == ["gpu", "nic"]
    mig = claim_spec(DeviceSpec(mig="1g.10gb"), set())
    assert mig is not None and mig.devices.requests[0].exactly is not None
    assert mig.devices.requests[0].exactly.device_class_name == "mig.nvidia.com"
    assert gpu_equivalents(DeviceSpec(mig="3g.40gb")) == pytest.approx(0.5)
    share = DeviceSpec(share=GpuShare(30, None))
    assert gpu_equivalents(share) == pytest.approx(0.3)


def test_claim_templates_are_made_per_job_template() -> None:
    text = SMALL.replace(
        "resources: {cpu: 2, memory: 8Gi, nvidia.com/gpu: 1}",
        "resources: {cpu: 2, memory: 8Gi}\n  devices: {gpus: 2}",
    )
    p = prepared(text)
    templates = [o for o in p.workload.objects if isinstance(o, ResourceClaimTemplate)]
    assert [(t.namespace, t.name) for t in templates] == [("alpha", "train")]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("duration: {uniform: [5m, 20m]}", "duration: soon"),
            "test.yaml:17: jobs[0].duration: expected a duration such as 30m, 1h30m or 90 (seconds), got 'soon'",
        ),
        (
            ("tenant: alpha\n  arrival", "tenant: gamma\n  arrival"),
            "test.yaml:14: jobs[0].tenant: unknown tenant 'gamma'; tenants: alpha, beta",
        ),
        (
            ("rate: 12/h", "rate: often"),
            "test.yaml:15: jobs[0].arrival.poisson.rate: expected a positive rate such as 12/h, 0.5/m or 3/s, got 'often'",
        ),
        (("horizon: 2h", "horizon: 2h\ncolour: blue"), "test.yaml:5: colour: unknown field; expected one of"),
        (
            ("{count: 2, cpu: 32,", "{count: two, cpu: 32,"),
            "test.yaml:7: cluster.nodes[0].count: expected an integer, got 'two'",
        ),
        (
            ("weight: 2}", "weight: -1}"),
            "test.yaml:11: tenants[1].weight: expected a number from 0 to 1e+09, got -1",
        ),
        (
            ("horizon: 2h", "horizon: 2h\nthroughput: {cpuNuma: 1.5}"),
            "test.yaml:5: throughput.cpuNuma: expected a number from 0.001 to 1, got 1.5",
        ),
        (
            ("horizon: 2h", "horizon: 2h\nthroughput: {gpuNic: {sameSocket: 0.5}}"),
            "test.yaml:5: throughput.gpuNic.sameSocket: unknown field; expected one of",
        ),
        (
            ("duration: 15m", "duration: 15m\n  runtimeEstimate: 0"),
            "test.yaml:28: jobs[2].runtimeEstimate: expected a positive duration",
        ),
    ],
)
def test_errors_name_file_line_and_field(change: tuple[str, str], expected: str) -> None:
    old, new = change
    assert old in SMALL
    messages = errors_of(SMALL.replace(old, new, 1))
    assert any(m.startswith(expected) for m in messages), messages


def test_every_problem_is_reported_at_once() -> None:
    text = SMALL.replace("duration: 15m", "duration: later").replace("rate: 20/h", "rate: 0/h")
    assert len(errors_of(text)) == 2


def test_unknown_priority_class_and_policy() -> None:
    text = SMALL.replace("  duration: 15m", "  duration: 15m\n  priority: urgent")
    assert any("jobs[2].priority: unknown PriorityClass 'urgent'" in m for m in errors_of(text))
    with pytest.raises(ManifestErrors) as caught:
        prepared(SMALL, policies=["fastest"])
    assert "unknown policy 'fastest'" in str(caught.value)


def test_invalid_yaml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestErrors) as caught:
        parse_scenario("jobs: [\n", "broken.yaml")
    assert str(caught.value).startswith("broken.yaml:")
    with pytest.raises(ManifestErrors) as missing:
        load_scenario(tmp_path / "nope.yaml")
    assert "cannot read" in str(missing.value)


def test_bad_preset_and_bad_inline_kueue_object_are_located() -> None:
    text = SMALL.replace("cluster:\n", "cluster:\n  presets:\n  - {preset: dgx-h100, nodes: zero}\n")
    assert any("cluster.presets[0].nodes: expected a positive integer" in m for m in errors_of(text))
    kueue = (
        SMALL
        + "kueue:\n  objects:\n  - {apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: Bad_Name}}\n"
    )
    assert any("kueue.objects" in m and "ClusterQueue" in m for m in errors_of(kueue))


def test_scenario_files_in_folders_resolve_manifests_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "cluster").mkdir()
    (tmp_path / "cluster" / "nodes.yaml").write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: extra}\nstatus: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n"
    )
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SMALL.replace("cluster:\n", "cluster:\n  manifests: [cluster]\n"))
    loaded = load_scenario(scenario)
    assert "extra" in {o.name for o in loaded.manifests.objects}


def test_quota_holds_are_on_in_fair_and_a_policy_switch_turns_them_off() -> None:
    text = (
        SMALL
        + """
policies:
  fair-no-holds: {base: fair, quotaHolds: false}
  kueue-holds: {base: kueue, quotaHolds: true}
"""
    )
    policies = {p.name: p for p in prepared(text, policies=["fair", "fair-no-holds", "kueue-holds"]).policies}
    assert policies["fair"].quota_holds
    assert not policies["fair-no-holds"].quota_holds and policies["fair-no-holds"].reservations
    assert policies["kueue-holds"].quota_holds
    bad = SMALL + "\npolicies:\n  odd: {base: fair, quotaHolds: maybe}\n"
    assert any("quotaHolds" in e for e in errors_of(bad))

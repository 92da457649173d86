"""KubeSchedulerConfiguration read whole: merging and expansion as kube-scheduler v1.36 does
them, and located errors for what it (or allot) would refuse.

The refusals mirror what kube-scheduler v1.36's own binary answered for the same files.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from allot.scheduling.profile import DEFAULT_FILTERS, DEFAULT_SCORE_WEIGHTS, ProfileError
from allot.scheduling.profile_config import read_config

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def read(body: str) -> Any:
    return read_config(yaml.safe_load(HEAD + body), source="sched.yaml")


def profile(body: str, name: str = "default-scheduler") -> Any:
    return read(body).profiles[name]


def refused(body: str) -> str:
    with pytest.raises(ProfileError) as caught:
        read(body)
    return str(caught.value)


def test_an_empty_configuration_is_kube_schedulers_default_profile() -> None:
    config = read("")
    default = config.profiles["default-scheduler"]
    assert default.filters == DEFAULT_FILTERS
    assert dict(default.score_weights) == dict(DEFAULT_SCORE_WEIGHTS)
    assert default.preemption and default.claims_post_filter
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)


def test_disabling_default_preemption_under_post_filter_turns_preemption_off() -> None:
    found = profile("profiles:\n- plugins:\n    postFilter:\n      disabled: [{name: DefaultPreemption}]\n")
    assert not found.preemption
    assert found.filters == DEFAULT_FILTERS


def test_score_weights_come_from_score_then_multi_point_and_zero_means_one() -> None:
    body = """profiles:
- plugins:
    multiPoint:
      enabled: [{name: InterPodAffinity, weight: 7}, {name: NodeAffinity}]
    score:
      enabled: [{name: PodTopologySpread, weight: 0}, {name: ImageLocality, weight: 9}]
"""
    weights = profile(body).score_weights
    # A multiPoint entry replaces the default in place, with its own weight (none: 1).
    assert weights["InterPodAffinity"] == 7 and weights["NodeAffinity"] == 1
    assert weights["PodTopologySpread"] == 1 and weights["ImageLocality"] == 9
    assert weights["TaintToleration"] == 3


def test_a_plugin_disabled_at_one_point_keeps_the_others() -> None:
    body = "profiles:\n- plugins:\n    score:\n      disabled: [{name: InterPodAffinity}]\n"
    found = profile(body)
    assert "InterPodAffinity" not in found.score_weights
    assert "InterPodAffinity" in found.filters


def test_star_disables_every_default_at_a_point() -> None:
    body = """profiles:
- plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
"""
    assert dict(profile(body).score_weights) == {"NodeResourcesFit": 5}


def test_filter_order_puts_named_plugins_after_multi_point_ones() -> None:
    body = "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: GpuIsolation}]\n    filter:\n      enabled: [{name: GpuPlacement}]\n"
    filters = profile(body).filters
    assert filters[-1] == "GpuPlacement" and "GpuIsolation" not in filters


def test_several_profiles_by_scheduler_name() -> None:
    config = read("profiles:\n- schedulerName: a\n- schedulerName: b\n  percentageOfNodesToScore: 30\n")
    assert set(config.profiles) == {"a", "b"}
    assert config.profiles["b"].percentage_of_nodes_to_score == 30


def test_plugin_config_reaches_the_plugins() -> None:
    body = """profiles:
- pluginConfig:
  - name: InterPodAffinity
    args: {kind: InterPodAffinityArgs, apiVersion: kubescheduler.config.k8s.io/v1, hardPodAffinityWeight: 5}
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 20, minCandidateNodesAbsolute: 5}
"""
    found = profile(body)
    assert found.plugin_args["InterPodAffinity"] == {"hardPodAffinityWeight": 5}
    assert found.preemption_candidates == (20, 5)


@pytest.mark.parametrize(
    ("body", "located"),
    [
        ("bogus: 1\n", "sched.yaml: bogus: unknown field"),
        ("profiles:\n- foo: 1\n", "sched.yaml: profiles[0].foo: unknown field"),
        (
            "profiles:\n- plugins:\n    fooPoint: {}\n",
            "sched.yaml: profiles[0].plugins.fooPoint: unknown field",
        ),
        (
            "profiles:\n- plugins:\n    filter:\n      enabled: [{name: Nope}]\n",
            "sched.yaml: profiles[0].plugins.filter.enabled[0].name: allot has no plugin 'Nope'",
        ),
        (
            "profiles:\n- plugins:\n    filter:\n      enabled: [{name: ImageLocality}]\n",
            "profiles[0].plugins.filter.enabled[0].name: plugin 'ImageLocality' does not extend the filter point",
        ),
        (
            "profiles:\n- plugins:\n    filter:\n      enabled: [{name: NodePorts}, {name: NodePorts}]\n",
            "profiles[0].plugins.filter.enabled[1].name: plugin 'NodePorts' already enabled at filter",
        ),
        (
            "profiles:\n- plugins:\n    score:\n      enabled: [{name: NodeAffinity, weight: -1}]\n",
            "profiles[0].plugins.score.enabled[0].weight: Invalid value: -1",
        ),
        (
            "percentageOfNodesToScore: 101\n",
            "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        ),
        (
            "profiles:\n- percentageOfNodesToScore: 101\n",
            "profiles[0].percentageOfNodesToScore: Invalid value: 101",
        ),
        ('profiles:\n- schedulerName: ""\n', "profiles[0].schedulerName: Required value"),
        (
            "profiles:\n- schedulerName: a\n- schedulerName: a\n",
            "profiles[1].schedulerName: Duplicate value: 'a'",
        ),
        ("parallelism: 0\n", "parallelism: Invalid value: 0: should be an integer value greater than zero"),
        (
            "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
            "podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds",
        ),
        ("extenders:\n- urlPrefix: http://x\n", "extenders: allot calls no scheduler extenders"),
        ("leaderElection: {leaderElect: maybe}\n", "leaderElection.leaderElect: expected true or false"),
        (
            "profiles:\n- pluginConfig:\n  - {name: NodeAffinity, args: {}}\n  - {name: NodeAffinity, args: {}}\n",
            "profiles[0].pluginConfig[1]: Duplicate value: 'NodeAffinity'",
        ),
        (
            "profiles:\n- pluginConfig:\n  - {name: InterPodAffinity, args: {hardPodAffinityWeight: 101}}\n",
            "profiles[0].pluginConfig[0].args: hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
        ),
        (
            "profiles:\n- pluginConfig:\n  - {name: InterPodAffinity, args: {foo: 1}}\n",
            'profiles[0].pluginConfig[0].args: unknown field "foo"',
        ),
        (
            "profiles:\n- pluginConfig:\n  - {name: InterPodAffinity, args: {kind: NodeAffinityArgs}}\n",
            "args for plugin InterPodAffinity were not of type InterPodAffinityArgs",
        ),
        (
            "profiles:\n- pluginConfig:\n  - {name: DefaultPreemption, args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}}\n",
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args: {defaultingType: System, defaultConstraints: [{maxSkew: 1, topologyKey: z, whenUnsatisfiable: DoNotSchedule}]}\n",
            "profiles[0].pluginConfig[0].args: defaultConstraints: Invalid value: when .defaultingType",
        ),
        (
            "profiles:\n- pluginConfig:\n  - {name: NodeResourcesFit, args: {scoringStrategy: {type: Foo}}}\n",
            "scoringStrategy.type: Unsupported value: 'Foo': supported values: \"LeastAllocated\"",
        ),
        (
            "profiles:\n- pluginConfig:\n  - {name: NodeResourcesFit, args: {ignoredResourceGroups: [example.com/bar]}}\n",
            "ignoredResourceGroups[0]: Invalid value: 'example.com/bar': resource group name can't contain '/'",
        ),
        (
            "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Foo}]}]}}}\n",
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
        ),
        (
            "profiles:\n- plugins:\n    queueSort:\n      disabled: [{name: '*'}]\n",
            "profiles[0].plugins.queueSort: only one queue sort plugin required",
        ),
        (
            "profiles:\n- plugins:\n    bind:\n      disabled: [{name: '*'}]\n",
            "at least one bind plugin is needed",
        ),
        (
            "profiles:\n- plugins:\n    preEnqueue:\n      disabled: [{name: SchedulingGates}]\n",
            "allot always honours scheduling gates",
        ),
        (
            "profiles:\n- plugins:\n    preFilter:\n      disabled: [{name: InterPodAffinity}]\n",
            "InterPodAffinity is enabled at filter but disabled at preFilter",
        ),
        (
            "profiles:\n- plugins:\n    reserve:\n      disabled: [{name: VolumeBinding}]\n",
            "VolumeBinding is enabled at filter but disabled at reserve",
        ),
        (
            "profiles:\n- plugins:\n    placementScore:\n      enabled: [{name: NodeResourcesFit}]\n",
            "allot has no placementScore plugins; 'NodeResourcesFit' cannot be enabled there",
        ),
        ("apiVersion: x\n", "apiVersion: expected kubescheduler.config.k8s.io/v1"),
    ],
)
def test_refusals_name_the_file_and_field(body: str, located: str) -> None:
    text = HEAD + body if not body.startswith("apiVersion") else body + "kind: KubeSchedulerConfiguration\n"
    with pytest.raises(ProfileError) as caught:
        read_config(yaml.safe_load(text), source="sched.yaml")
    assert located in str(caught.value)
    assert str(caught.value).startswith("sched.yaml: ")


def test_a_pre_filter_alone_is_kept_without_its_filter() -> None:
    found = profile(
        "profiles:\n- plugins:\n    filter:\n      disabled: [{name: VolumeBinding}]\n    reserve:\n      disabled: [{name: VolumeBinding}]\n    preBind:\n      disabled: [{name: VolumeBinding}]\n"
    )
    assert "VolumeBinding" not in found.filters
    assert found.pre_filter_only == ("VolumeBinding",)


def test_gpu_placement_may_take_the_place_of_dynamic_resources_at_filter() -> None:
    found = profile(
        "profiles:\n- plugins:\n    filter:\n      disabled: [{name: DynamicResources}]\n      enabled: [{name: GpuPlacement}]\n"
    )
    assert "DynamicResources" not in found.filters
    assert "GpuPlacement" in found.filters


def test_process_settings_are_checked_and_accepted() -> None:
    body = """parallelism: 8
leaderElection: {leaderElect: true, leaseDuration: 15s, resourceName: x}
clientConnection: {kubeconfig: /k, qps: 50, burst: 100}
enableProfiling: true
delayCacheUntilActive: false
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
"""
    config = read(body)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2, 20)

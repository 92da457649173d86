"""Quota-tree validation: every message names the object and the field.

The model's own validation (allot.model.validate_kueue) already rejects the
per-object mistakes when manifests are loaded normally; `check_quota_tree`
repeats them for manifests loaded with `validate=False` and adds the
cross-object checks, so these tests load without model validation.
"""

from __future__ import annotations

import pytest

from allot.admission import check_quota_tree
from allot.model.loader import load_text

FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
"""


def errors(text: str) -> list[str]:
    return [str(e) for e in check_quota_tree(load_text(FLAVOR + "---\n" + text, "q.yaml", validate=False))]


def test_valid_tree_has_no_errors() -> None:
    assert (
        errors(
            """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  cohortName: implicit-cohort
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "4", borrowingLimit: "1"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: child}
spec: {parentName: not-declared-is-fine}
"""
        )
        == []
    )


def test_cohort_cycle_is_named() -> None:
    found = errors(
        """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: b}
spec: {parentName: c}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: a}
spec: {parentName: b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: c}
spec: {parentName: a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: below}
spec: {parentName: a}
"""
    )
    assert len(found) == 1
    assert found[0].startswith("q.yaml document 3: Cohort a: spec.parentName: cohort cycle: a -> b -> c -> a")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            """
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: missing, resources: [{name: cpu, nominalQuota: "1"}]}]""",
            "ClusterQueue a: spec.resourceGroups[0].flavors[0].name: ResourceFlavor 'missing' does not exist",
        ),
        (
            """
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "1"}]}]
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "1"}]}]""",
            "ClusterQueue a: spec.resourceGroups[1].coveredResources[0]: resource cpu is already covered by "
            "spec.resourceGroups[0]; each resource may be in only one resource group\n"
            "ClusterQueue a: spec.resourceGroups[1].flavors[0].name: flavor default is already in "
            "spec.resourceGroups[0]; each flavor may be in only one resource group",
        ),
        (
            """
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "1"}]}]
  - coveredResources: [memory]
    flavors: [{name: default, resources: [{name: memory, nominalQuota: "1"}]}]""",
            "ClusterQueue a: spec.resourceGroups[1].flavors[0].name: flavor default is already in "
            "spec.resourceGroups[0]; each flavor may be in only one resource group",
        ),
        (
            """
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors: [{name: default, resources: [{name: memory, nominalQuota: "1"}, {name: cpu, nominalQuota: "1"}]}]""",
            "ClusterQueue a: spec.resourceGroups[0].flavors[0].resources: expected the covered resources in "
            "order (cpu, memory), got (memory, cpu)",
        ),
        (
            """
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "1", borrowingLimit: "1"}]}]""",
            "ClusterQueue a: spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: must be unset "
            "when the ClusterQueue has no cohort",
        ),
        (
            """
  cohortName: c
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default, resources: [{name: cpu, nominalQuota: "1", lendingLimit: "2"}]}]""",
            "ClusterQueue a: spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: must be less than or "
            "equal to nominalQuota (1)",
        ),
        (
            """
  cohortName: c
  preemption: {reclaimWithinCohort: Never, borrowWithinCohort: {policy: LowerPriority}}""",
            "ClusterQueue a: spec.preemption.borrowWithinCohort.policy: reclaimWithinCohort=Never and "
            "borrowWithinCohort.Policy!=Never",
        ),
        (
            """
  flavorFungibility: {whenCanBorrow: MayStopSearch, whenCanPreempt: TryNextFlavor, preference: PreemptionOverBorrowing}""",
            "ClusterQueue a: spec.flavorFungibility.preference: preference 'PreemptionOverBorrowing' requires "
            "both whenCanBorrow and whenCanPreempt to be TryNextFlavor",
        ),
    ],
)
def test_cluster_queue_errors(spec: str, expected: str) -> None:
    found = errors(
        f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: a}}
spec:{spec}
"""
    )
    assert [f.split(": ", 1)[1] for f in found] == expected.split("\n")
    assert found[0].startswith("q.yaml document 2")


def test_local_queue_naming_unknown_cluster_queue() -> None:
    found = errors(
        """
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team}
spec: {clusterQueue: nope}
"""
    )
    assert found == [
        "q.yaml document 2: LocalQueue team/lq: spec.clusterQueue: ClusterQueue 'nope' does not exist"
    ]


def test_configuration_strategy_order() -> None:
    found = errors(
        """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
metadata: {name: kueue}
fairSharing: {preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]}
admissionFairSharing: {usageHalfLifeTime: 10 minutes}
"""
    )
    assert len(found) == 2
    assert "fairSharing.preemptionStrategies: unsupported order" in found[0]
    assert "admissionFairSharing.usageHalfLifeTime: invalid duration '10 minutes'" in found[1]

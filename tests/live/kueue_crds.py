"""Kueue's CustomResourceDefinitions, as far as an API server needs them to serve Kueue's objects.

These are written for the tests: the group, versions, kinds, scopes, plurals, short names and
status subresources of Kueue v0.14's CRDs (v1beta2 served and stored, v1beta1 served), with
schemas that keep every field (the real CRDs validate more; allot validates what it reads).
"""

from __future__ import annotations

import json

GROUP = "kueue.x-k8s.io"
KINDS = (
    # kind, plural, scope, status subresource
    ("ClusterQueue", "clusterqueues", "Cluster", True),
    ("LocalQueue", "localqueues", "Namespaced", True),
    ("Cohort", "cohorts", "Cluster", True),
    ("ResourceFlavor", "resourceflavors", "Cluster", False),
    ("WorkloadPriorityClass", "workloadpriorityclasses", "Cluster", False),
    ("Topology", "topologies", "Cluster", False),
    ("Workload", "workloads", "Namespaced", True),
)
_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(kind: str, plural: str, scope: str, status: bool) -> dict[str, object]:
    versions = []
    for name, storage in (("v1beta2", True), ("v1beta1", False)):
        version: dict[str, object] = {
            "name": name,
            "served": True,
            "storage": storage,
            "schema": {"openAPIV3Schema": _OPEN},
        }
        if status:
            version["subresources"] = {"status": {}}
        versions.append(version)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": versions,
        },
    }


def manifests() -> str:
    return "\n---\n".join(json.dumps(crd(*entry)) for entry in KINDS)


def team_queues(team: str, cohort: str, quotas: dict[str, str]) -> list[dict[str, object]]:
    """A ClusterQueue for the namespace `team` (one flavor, `default-flavor`, these nominal quotas;
    reclaim from the cohort, preempt lower priority within) and its LocalQueue `main`."""
    resources = [{"name": name, "nominalQuota": quota} for name, quota in quotas.items()]
    cluster_queue = {
        "apiVersion": f"{GROUP}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": team},
        "spec": {
            "cohortName": cohort,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team}},
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": list(quotas),
                                "flavors": [{"name": "default-flavor", "resources": resources}]}],
        },
    }  # fmt: skip
    local_queue = {
        "apiVersion": f"{GROUP}/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "main", "namespace": team}, "spec": {"clusterQueue": team},
    }  # fmt: skip
    return [cluster_queue, local_queue]

"""Kueue's Job integration, the API side: the merge patches that start and stop a queued Job.

A Job allot admits (its placeholders placed, `allot.admission.jobs`) is un-suspended with the
admitted flavors' node labels and tolerations in its pod template (what Kueue injects); a Job
allot preempts, or one that started without an admission, is suspended again. Two annotations
carry what must survive a restart:

* `allot.dev/job-admission`: the admission (workload, ClusterQueue, flavor by pod set and
  resource, time) while the Job runs admitted; removed when allot suspends it again;
* `allot.dev/job-original`: the template's node selector and tolerations before allot first
  changed them, so a Job suspended again and re-admitted on another flavor loses the first
  flavor's labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from allot.admission.jobs import ADMISSION_ANNOTATION, ORIGINAL_ANNOTATION, original_placement
from allot.model.batch import Job
from allot.model.codec import to_data
from allot.model.core import Toleration
from allot.model.kueue import ResourceFlavor


def _flavor_placement(
    flavors: Iterable[str], known: Mapping[str, ResourceFlavor]
) -> tuple[dict[str, str], list[Toleration]]:
    labels: dict[str, str] = {}
    tolerations: list[Toleration] = []
    for name in sorted(set(flavors)):
        flavor = known.get(name)
        if flavor is None:
            continue
        labels.update(flavor.spec.node_labels)
        tolerations.extend(t for t in flavor.spec.tolerations if t not in tolerations)
    return labels, tolerations


def unsuspend_patch(
    job: Job,
    *,
    workload: str,
    cluster_queue: str,
    flavors: Mapping[str, str],
    known_flavors: Mapping[str, ResourceFlavor],
    admitted_at: float,
) -> dict[str, Any]:
    """The merge patch that starts an admitted Job: `suspend: false`, the flavors' node labels
    and tolerations added to the original template's, the admission recorded; the Job's
    resourceVersion is the precondition (a Job changed since allot read it is not started)."""
    selector, tolerations = original_placement(job)
    labels, flavor_tolerations = _flavor_placement(flavors.values(), known_flavors)
    wanted = {**selector, **labels}
    current = job.spec.template.spec.node_selector
    node_selector: dict[str, str | None] = {key: None for key in current if key not in wanted}
    node_selector.update(wanted)
    all_tolerations = list(tolerations) + [t for t in flavor_tolerations if t not in tolerations]
    annotations = {
        ADMISSION_ANNOTATION: json.dumps(
            {
                "workload": workload,
                "clusterQueue": cluster_queue,
                "flavors": dict(sorted(flavors.items())),
                "admittedAt": admitted_at,
            },
            sort_keys=True,
        )
    }
    if ORIGINAL_ANNOTATION not in job.metadata.annotations:
        annotations[ORIGINAL_ANNOTATION] = json.dumps(
            {"nodeSelector": selector, "tolerations": [to_data(t) for t in tolerations]}, sort_keys=True
        )
    return {
        "metadata": {"resourceVersion": job.metadata.resource_version, "annotations": annotations},
        "spec": {
            "suspend": False,
            "template": {
                "spec": {"nodeSelector": node_selector, "tolerations": [to_data(t) for t in all_tolerations]}
            },
        },
    }


def suspend_patch(job: Job) -> dict[str, Any]:
    """The merge patch that stops a Job allot no longer admits (its controller deletes its pods);
    the template keeps the flavor's labels until the next admission rewrites them. The Job's uid
    is the precondition: a Job re-created under the same name is not touched."""
    return {
        "metadata": {"uid": job.metadata.uid, "annotations": {ADMISSION_ANNOTATION: None}},
        "spec": {"suspend": True},
    }

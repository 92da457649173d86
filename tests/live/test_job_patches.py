"""A queued Job as placeholder pods, and the patches that start and stop it (no API server)."""

from __future__ import annotations

import json

import yaml

from allot.admission.jobs import (
    ADMISSION_ANNOTATION,
    ORIGINAL_ANNOTATION,
    admission_of,
    controller_job,
    placeholders,
    resource_flavors,
    workload_key,
)
from allot.engine.engine import Engine
from allot.live.cache import LiveCache
from allot.live.job_admission import JobAdmission
from allot.live.jobs import suspend_patch, unsuspend_patch
from allot.live.kinds import JOBS, PODS, Kind, decode_object
from allot.live.webhook import job_patch
from allot.model.batch import Job
from allot.model.core import Pod
from allot.model.kueue import ResourceFlavor
from allot.model.loader import load_text
from allot.model.resource import ResourceClaimTemplate

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  uid: job-uid
  resourceVersion: "41"
  labels: {kueue.x-k8s.io/queue-name: main, kueue.x-k8s.io/priority-class: high}
  annotations: {note: kept}
spec:
  parallelism: 4
  completions: 3
  suspend: true
  template:
    metadata: {labels: {app: train}}
    spec:
      schedulerName: allot
      nodeSelector: {zone: z1}
      tolerations: [{key: dedicated, operator: Exists}]
      restartPolicy: Never
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}, claims: [{name: gpu}]}}]
"""
TEMPLATE = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}
"""
FLAVORS = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
spec:
  nodeLabels: {pool: spot}
  tolerations: [{key: spot, operator: Exists, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: reserved}
spec: {nodeLabels: {pool: reserved, tier: gold}}
"""


def _decode(text: str) -> Job:
    return decode_object(yaml.safe_load(text), Job, "batch/v1")


def _job() -> Job:
    return _decode(JOB)


def _templates() -> dict[str, ResourceClaimTemplate]:
    template = load_text(TEMPLATE).of_kind(ResourceClaimTemplate)[0]
    return {template.key: template}


def _flavors() -> dict[str, ResourceFlavor]:
    return {f.name: f for f in load_text(FLAVORS).of_kind(ResourceFlavor)}


def test_placeholders_are_one_pod_group_of_the_running_count_with_their_own_claims() -> None:
    pods, claims, missing = placeholders(_job(), _templates())
    assert missing == []
    # parallelism 4, completions 3: three pods run at once.
    assert [p.name for p in pods] == ["train.allot-0", "train.allot-1", "train.allot-2"]
    pod = pods[0]
    labels = pod.metadata.labels
    assert labels["kueue.x-k8s.io/pod-group-name"] == "job-train" and workload_key(_job()) == "ml/job-train"
    assert labels["kueue.x-k8s.io/queue-name"] == "main" and labels["kueue.x-k8s.io/priority-class"] == "high"
    assert labels["app"] == "train"
    assert pod.metadata.annotations["kueue.x-k8s.io/pod-group-total-count"] == "3"
    assert controller_job(pod) == ("ml/train", "job-uid")
    # Each placeholder has its own claim, named in its status as the resourceclaim controller does.
    assert len({c.key for c in claims}) == 3
    assert {s.resource_claim_name for p in pods for s in p.status.resource_claim_statuses} == {
        c.name for c in claims
    }


def test_a_missing_claim_template_is_reported() -> None:
    _pods, claims, missing = placeholders(_job(), {})
    assert claims == [] and missing == ["resourceclaimtemplate ml/one-gpu"]


def test_starting_adds_the_flavors_node_labels_and_tolerations_and_records_the_admission() -> None:
    job = _job()
    patch = unsuspend_patch(job, workload="ml/job-train", cluster_queue="cq", flavors={"main/cpu": "spot"},
                            known_flavors=_flavors(), admitted_at=12.5)  # fmt: skip
    assert patch["metadata"]["resourceVersion"] == "41"
    spec = patch["spec"]
    assert spec["suspend"] is False
    assert spec["template"]["spec"]["nodeSelector"] == {"zone": "z1", "pool": "spot"}
    assert spec["template"]["spec"]["tolerations"] == [
        {"key": "dedicated", "operator": "Exists"},
        {"key": "spot", "operator": "Exists", "effect": "NoSchedule"},
    ]
    annotations = patch["metadata"]["annotations"]
    recorded = json.loads(annotations[ADMISSION_ANNOTATION])
    assert recorded == {"workload": "ml/job-train", "clusterQueue": "cq", "flavors": {"main/cpu": "spot"},
                        "admittedAt": 12.5}  # fmt: skip
    assert json.loads(annotations[ORIGINAL_ANNOTATION]) == {
        "nodeSelector": {"zone": "z1"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]}  # fmt: skip


def test_a_job_re_admitted_on_another_flavor_loses_the_first_flavors_labels() -> None:
    first = unsuspend_patch(_job(), workload="ml/job-train", cluster_queue="cq", flavors={"main/cpu": "reserved"},
                            known_flavors=_flavors(), admitted_at=1.0)  # fmt: skip
    # As the Job stands after that start and a later suspension: flavor labels in its template.
    started = _decode(
        JOB.replace(
            "nodeSelector: {zone: z1}", "nodeSelector: {zone: z1, pool: reserved, tier: gold}"
        ).replace(
            "annotations: {note: kept}",
            f"annotations: {{note: kept, {ORIGINAL_ANNOTATION}: '{first['metadata']['annotations'][ORIGINAL_ANNOTATION]}'}}",
        )
    )
    pods, _, _ = placeholders(started, _templates())
    # The placeholders ask for the original placement, not the last flavor's.
    assert pods[0].spec.node_selector == {"zone": "z1"}
    again = unsuspend_patch(started, workload="ml/job-train", cluster_queue="cq", flavors={"main/cpu": "spot"},
                            known_flavors=_flavors(), admitted_at=2.0)  # fmt: skip
    # tier is removed (null in a merge patch), pool replaced.
    assert again["spec"]["template"]["spec"]["nodeSelector"] == {"tier": None, "zone": "z1", "pool": "spot"}
    assert ORIGINAL_ANNOTATION not in again["metadata"]["annotations"]


def test_stopping_suspends_drops_the_admission_and_guards_the_uid() -> None:
    assert suspend_patch(_job()) == {
        "metadata": {"uid": "job-uid", "annotations": {ADMISSION_ANNOTATION: None}},
        "spec": {"suspend": True},
    }


def test_an_unreadable_admission_annotation_counts_as_none() -> None:
    for text in ("not json", "[]", '{"flavors": 3}'):
        job = _decode(
            JOB.replace("annotations: {note: kept}", f"annotations: {{{ADMISSION_ANNOTATION}: '{text}'}}")
        )
        assert admission_of(job) is None
    assert resource_flavors({"main/cpu": "spot", "main/nvidia.com/gpu": "a100"}) == {
        "cpu": "spot", "nvidia.com/gpu": "a100"}  # fmt: skip


def test_only_a_pods_controlling_job_owns_it() -> None:
    pod = load_text("""
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: ml
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: train, uid: u1, controller: false}]
spec: {containers: [{name: c, image: busybox}]}
""").of_kind(Pod)[0]  # fmt: skip
    assert controller_job(pod) is None


def _created(scheduler: str | None, *, queue: str | None = "main") -> dict[str, object]:
    template_spec: dict[str, object] = {"containers": [{"name": "c", "image": "busybox"}]}
    if scheduler:
        template_spec["schedulerName"] = scheduler
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {"metadata": {"name": "j", "labels": labels}, "spec": {"template": {"spec": template_spec}}}


def test_the_webhook_suspends_queued_jobs_for_allot_and_leaves_other_schedulers_jobs_alone() -> None:
    names = ("allot", "allot-gpu")
    suspend = {"op": "add", "path": "/spec/suspend", "value": True}
    assert job_patch(_created(None), scheduler_names=names) == [
        suspend, {"op": "add", "path": "/spec/template/spec/schedulerName", "value": "allot"}]  # fmt: skip
    assert job_patch(_created("allot-gpu"), scheduler_names=names) == [suspend]
    # Another scheduler's Job would never be admitted by allot: it must not be left suspended.
    assert job_patch(_created("volcano"), scheduler_names=names) == []
    assert job_patch(_created(None, queue=None), scheduler_names=names) == []


def test_pods_that_arrive_before_their_job_wait_for_it_and_join_the_state_once_it_is_none_of_allots() -> None:
    pod = load_text("""
apiVersion: v1
kind: Pod
metadata:
  name: plain-x1
  namespace: ml
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: plain, uid: u1, controller: true}]
spec: {schedulerName: allot, containers: [{name: c, image: busybox}]}
""").of_kind(Pod)[0]  # fmt: skip
    plain = _decode(JOB.replace("name: train", "name: plain").replace("uid: job-uid", "uid: u1").replace(
        "labels: {kueue.x-k8s.io/queue-name: main, kueue.x-k8s.io/priority-class: high}", "labels: {}"))  # fmt: skip
    stores: dict[Kind, dict[str, object]] = {PODS: {pod.key: pod}, JOBS: {}}
    jobs: JobAdmission
    cache = LiveCache(stores, is_ours=lambda p: p.spec.scheduler_name == "allot" and not jobs.holds_back(p))  # type: ignore[arg-type]
    jobs = JobAdmission(None, cache, scheduler_names={"allot"})  # type: ignore[arg-type]
    jobs.enabled = True
    state = cache.build()
    # Its Job is not known yet: it might be a queued one allot has not admitted.
    assert pod.key not in state.pods
    stores[JOBS][plain.key] = plain
    jobs.sync(Engine(state), 0.0, {plain.key})
    # A Job without a queue: its pods are scheduled like any.
    assert pod.key in state.pods

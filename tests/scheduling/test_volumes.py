"""VolumeBinding, VolumeZone, NodeVolumeLimits and VolumeRestrictions on claims and disks.

The reasons are kube-scheduler v1.36's words (checked against its binary).
"""

from __future__ import annotations

import yaml

from allot.model.storage import ANN_SELECTED_NODE
from allot.scheduling.plugins.node_volume_limits import REASON as LIMIT_REASON
from allot.scheduling.plugins.volume_binding import BIND_CONFLICT, NODE_CONFLICT, UNBOUND_IMMEDIATE
from allot.scheduling.plugins.volume_restrictions import DISK_CONFLICT, READ_WRITE_ONCE_POD_CONFLICT
from allot.scheduling.plugins.volume_zone import REASON as ZONE_REASON
from allot.scheduling.scheduler import Placement, Scheduler, Unschedulable
from scheduling.manifests import add, cluster, feasible, node_doc, place, pod_doc

ZONE = "topology.kubernetes.io/zone"
NODES = "---\n".join(node_doc(n, {ZONE: z}) for n, z in (("a1", "a"), ("a2", "a"), ("b1", "b")))


def storage_class(name: str, provisioner: str, mode: str = "WaitForFirstConsumer", **extra: object) -> str:
    doc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        **extra,
    }
    return yaml.safe_dump(doc)


def volume(
    name: str, size: str, klass: str, *, host: str = "", labels: dict[str, str] | None = None, **spec: object
) -> str:
    body: dict[str, object] = {
        "capacity": {"storage": size},
        "accessModes": spec.pop("accessModes", ["ReadWriteOnce"]),
        "storageClassName": klass,
        "csi": {"driver": "csi.example.com", "volumeHandle": name},
        **spec,
    }
    if host:
        term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}
        body["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    doc = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": body,
    }
    return yaml.safe_dump(doc)


def claim(name: str, size: str, klass: str, **spec: object) -> str:
    body = {
        "storageClassName": klass,
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
        **spec,
    }
    return yaml.safe_dump(
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": body}
    )


def using(name: str, *claims: str, **spec: object) -> str:
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return pod_doc(name, volumes=volumes, **spec)


def test_a_bound_volumes_node_affinity_keeps_the_pod_with_it() -> None:
    state = cluster(NODES, storage_class("manual", "kubernetes.io/no-provisioner", "Immediate"),
                    volume("pv-1", "5Gi", "manual", host="a2"), claim("data", "1Gi", "manual", volumeName="pv-1"))  # fmt: skip
    # The claim names its volume: the PV controller has bound it (allot plays it for manifests).
    assert state.storage.claims["default/data"].spec.volume_name == "pv-1"
    key = add(state, using("p", "data"))
    assert feasible(state, key) == {"a2"}
    pinned = add(state, using("q", "data", nodeSelector={"kubernetes.io/hostname": "a1"}))
    outcome = place(state, pinned)
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == (
        f"0/3 nodes are available: 1 {NODE_CONFLICT}, 2 node(s) didn't match Pod's node affinity/selector."
    )


def test_unbound_immediate_claims_and_missing_claims_reject_before_any_node() -> None:
    state = cluster(
        NODES, storage_class("fast", "csi.example.com", "Immediate"), claim("pending", "1Gi", "fast")
    )
    outcome = place(state, add(state, using("p", "pending")))
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == f"0/3 nodes are available: {UNBOUND_IMMEDIATE}."
    missing = place(state, add(state, using("q", "nope")))
    assert isinstance(missing, Unschedulable)
    assert missing.message == '0/3 nodes are available: persistentvolumeclaim "nope" not found.'


def test_wait_for_first_consumer_takes_the_smallest_fitting_volume_and_binds_it() -> None:
    state = cluster(
        NODES,
        storage_class("local", "kubernetes.io/no-provisioner"),
        volume("small", "5Gi", "local", host="a1"),
        volume("large", "10Gi", "local", host="b1"),
        volume("larger", "20Gi", "local", host="b1"),
        claim("data", "8Gi", "local"),
    )
    key = add(state, using("p", "data"))
    assert feasible(state, key) == {"b1"}
    scheduler = Scheduler(state)
    outcome = scheduler.schedule(key)
    assert isinstance(outcome, Placement) and outcome.node == "b1"
    bound = state.storage.claims["default/data"]
    assert bound.spec.volume_name == "large" and bound.status.phase == "Bound"
    reference = state.storage.volumes["large"].spec.claim_ref
    assert reference is not None and reference.name == "data"


def test_a_volume_taken_by_one_claim_is_not_offered_to_the_next() -> None:
    state = cluster(NODES, storage_class("local", "kubernetes.io/no-provisioner"),
                    volume("only", "10Gi", "local", host="a1"), claim("one", "1Gi", "local"), claim("two", "1Gi", "local"))  # fmt: skip
    scheduler = Scheduler(state)
    first = scheduler.schedule(add(state, using("p", "one")))
    assert isinstance(first, Placement) and first.node == "a1"
    second = scheduler.schedule(add(state, using("q", "two")))
    assert isinstance(second, Unschedulable)
    assert second.message == f"0/3 nodes are available: 3 {BIND_CONFLICT}."


def test_dynamic_provisioning_follows_allowed_topologies_and_annotates_the_claim() -> None:
    topologies = [{"matchLabelExpressions": [{"key": ZONE, "values": ["b"]}]}]
    state = cluster(
        NODES,
        storage_class("zonal", "csi.example.com", allowedTopologies=topologies),
        claim("data", "1Gi", "zonal"),
    )
    key = add(state, using("p", "data"))
    assert feasible(state, key) == {"b1"}
    outcome = Scheduler(state).schedule(key)
    assert isinstance(outcome, Placement)
    assert state.storage.claims["default/data"].metadata.annotations[ANN_SELECTED_NODE] == "b1"
    # A second pod of the same claim goes where the volume is being provisioned.
    assert feasible(state, add(state, using("q", "data"))) == {"b1"}


def test_a_class_without_provisioner_and_no_volume_fits_nowhere() -> None:
    state = cluster(
        NODES, storage_class("local", "kubernetes.io/no-provisioner"), claim("data", "1Gi", "local")
    )
    outcome = place(state, add(state, using("p", "data")))
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == f"0/3 nodes are available: 3 {BIND_CONFLICT}."


def test_volume_zone_labels_keep_a_pod_in_its_volumes_zone() -> None:
    state = cluster(NODES, storage_class("manual", "kubernetes.io/no-provisioner", "Immediate"),
                    volume("pv-b", "5Gi", "manual", labels={ZONE: "b"}), claim("data", "1Gi", "manual", volumeName="pv-b"))  # fmt: skip
    key = add(state, using("p", "data"))
    outcome = place(state, key)
    assert isinstance(outcome, Placement) and outcome.node == "b1"
    elsewhere = add(state, using("q", "data", nodeSelector={ZONE: "a"}))
    result = place(state, elsewhere)
    assert isinstance(result, Unschedulable)
    assert result.message == (
        f"0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 {ZONE_REASON}."
    )


def test_csi_node_limits_count_attached_volumes_per_driver() -> None:
    csi_node = yaml.safe_dump(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "a1"},
            "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "a1", "allocatable": {"count": 1}}]},
        }
    )
    state = cluster(NODES, csi_node, storage_class("dyn", "csi.example.com"),
                    claim("one", "1Gi", "dyn"), claim("two", "1Gi", "dyn"))  # fmt: skip
    scheduler = Scheduler(state)
    pin = {"nodeSelector": {"kubernetes.io/hostname": "a1"}}
    assert isinstance(scheduler.schedule(add(state, using("p", "one", **pin))), Placement)
    outcome = scheduler.schedule(add(state, using("q", "two", **pin)))
    assert isinstance(outcome, Unschedulable)
    assert outcome.message == (
        f"0/3 nodes are available: 1 {LIMIT_REASON}, 2 node(s) didn't match Pod's node affinity/selector."
    )
    # The volume the node already has does not count again (and its claim waits for a1).
    assert feasible(state, add(state, using("r", "one"))) == {"a1"}
    # A node without a CSINode has no limit.
    assert feasible(state, add(state, using("s", "two"))) == {"a2", "b1"}


def test_read_write_once_pod_claims_admit_one_pod() -> None:
    state = cluster(NODES, storage_class("manual", "kubernetes.io/no-provisioner", "Immediate"),
                    volume("pv", "5Gi", "manual", accessModes=["ReadWriteOncePod"]),
                    claim("solo", "1Gi", "manual", volumeName="pv", accessModes=["ReadWriteOncePod"]))  # fmt: skip
    scheduler = Scheduler(state)
    first = scheduler.schedule(add(state, using("p", "solo")))
    assert isinstance(first, Placement)
    second_key = add(state, using("q", "solo"))
    second = scheduler.place(second_key)
    assert isinstance(second, Unschedulable)
    assert second.message == f"0/3 nodes are available: 3 {READ_WRITE_ONCE_POD_CONFLICT}."
    state.unbind("default/p")
    assert isinstance(scheduler.place(second_key), Placement)


def test_inline_disks_conflict_unless_both_read_only() -> None:
    def disk(name: str, read_only: bool, node: str = "") -> str:
        source = {"gcePersistentDisk": {"pdName": "shared", "readOnly": read_only}}
        return pod_doc(name, node=node, volumes=[{"name": "d", **source}])

    state = cluster(node_doc("n1"), disk("writer", False, "n1"))
    outcome = place(state, add(state, disk("reader", True)))
    assert (
        isinstance(outcome, Unschedulable)
        and outcome.message == f"0/1 nodes are available: 1 {DISK_CONFLICT}."
    )
    readers = cluster(node_doc("n1"), disk("r1", True, "n1"))
    assert feasible(readers, add(readers, disk("r2", True))) == {"n1"}


def test_the_planners_output_carries_the_claims_it_bound_or_sent_to_provisioning() -> None:
    from allot.model.loader import load_text
    from allot.model.storage import PersistentVolume, PersistentVolumeClaim
    from allot.plan.planner import plan, resulting_objects

    text = "\n---\n".join(
        [
            NODES,
            storage_class("local", "kubernetes.io/no-provisioner"),
            storage_class("dyn", "csi.example.com"),
            volume("disk", "10Gi", "local", host="a2"),
            claim("data", "1Gi", "local"),
            claim("scratch", "1Gi", "dyn"),
            using("p", "data", "scratch"),
        ]
    )
    objects = resulting_objects(plan(load_text(text)))
    claims = {o.name: o for o in objects if isinstance(o, PersistentVolumeClaim)}
    assert claims["data"].spec.volume_name == "disk"
    assert claims["scratch"].metadata.annotations[ANN_SELECTED_NODE] == "a2"
    assert [o.name for o in objects if isinstance(o, PersistentVolume)] == ["disk"]

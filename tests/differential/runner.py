"""Play a scenario on a real control plane with kube-scheduler and record what it decided.

`Recorder(plane).record(scenario)` (the plane has etcd, kube-apiserver and the controller
manager running; see `start_plane`). The scheduler that decides is kube-scheduler unless the
recorder is given another `Scheduler` (`differential.allot_run` plays `allot run` the same way):

1. removes what the previous case left, creates the cluster objects (Node status through the
   status subresource, Ready, as no kubelet runs), and restarts kube-scheduler, so that it
   starts on this cluster with nothing queued;
2. creates the pods that already run, one at a time, and waits for each to be bound (one that
   cannot be is deleted: it is not part of the case); then reports them running with start
   times a minute apart, as their kubelet would;
3. reads the cluster back: the case's input, as `kubectl get -o yaml` would show it;
4. creates the pending pods one at a time, in the scenario's order. Each is created with a
   scheduling gate, so that kube-scheduler does not see it before the resourceclaim controller
   has made its claims; once they exist the pod (and its claims) is read into the input, the
   gate is removed, and the runner waits until the pod is bound or marked unschedulable and
   quiet (reason Unschedulable: after a SchedulerError, such as a PreBind that lost a race,
   kube-scheduler tries the pod again, and the runner waits for that). kube-scheduler
   therefore takes the pods in creation order, never from a backlog (whose order is
   arbitrary), at the cost of one scheduling round trip per pod (about 0.1 s);
5. plays the kubelet's part in preemption: a victim that kube-scheduler deletes would wait
   for its kubelet; the runner deletes it at once (grace period 0), as a kubelet would once
   the containers stop;
6. after the last pod, waits until nothing changes and records that too.
"""

from __future__ import annotations

import copy
import http.client
import json
import ssl
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from controlplane import ControlPlane
from differential.case import Case, Changes, Step, key_of
from differential.features import features_of
from differential.generate import NAMESPACES, Scenario

Obj = dict[str, Any]
GATE = "example.com/differential"
KUBE_VERSION = "v1.36.2"
# With no kubelet renewing leases, the node lifecycle controller would taint every node
# unreachable (NoExecute) after 40 s, and the taint-eviction controller would evict pods.
CONTROLLER_ARGS = ("--controllers=-node-lifecycle-controller",)
POLL = 0.02
# How long an unschedulable pod must stay so (no nomination, no victims) to count as decided.
QUIET = 0.15
STEP_TIMEOUT = 30.0

_PATHS = {
    "Namespace": "/api/v1/namespaces",
    "Node": "/api/v1/nodes",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "RuntimeClass": "/apis/node.k8s.io/v1/runtimeclasses",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaimtemplates",
    "ResourceClaim": "/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims",
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/namespaces/{ns}/persistentvolumeclaims",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
}
_CLUSTER_WIDE = ("Node", "PriorityClass", "RuntimeClass", "DeviceClass", "ResourceSlice", "StorageClass",
                 "PersistentVolume")  # fmt: skip
_NAMESPACED = (
    "ResourceClaimTemplate",
    "ResourceClaim",
    "PersistentVolumeClaim",
    "PodDisruptionBudget",
    "Pod",
)
# Objects the API server keeps until a controller lets go (protection finalizers): the reset takes
# the finalizers off.
_PROTECTED = ("ResourceClaim", "PersistentVolumeClaim", "PersistentVolume")


Snapshot = tuple[dict[str, Obj], dict[str, Obj], dict[str, Obj]]


class Scheduler(Protocol):
    """The scheduler a case is played with: started afresh on each case's cluster."""

    @property
    def version(self) -> str:
        """What the case records as the scheduler that decided (`Case.kube`)."""
        ...

    def restart(self) -> None:
        """Stop the one that ran the previous case, start one that has synced this cluster."""
        ...

    def stop(self) -> None: ...


class KubeScheduler:
    """kube-scheduler v1.36 from ../shared/k8s, the oracle."""

    version = KUBE_VERSION

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane

    def restart(self) -> None:
        self.plane.stop_scheduler()
        self.plane.start_scheduler()

    def stop(self) -> None:
        self.plane.stop_scheduler()


class RunnerError(RuntimeError):
    """The control plane did something the runner cannot record (the message says what)."""


def start_plane(workdir: Path) -> ControlPlane:
    """etcd, kube-apiserver and the controller manager (kube-scheduler starts per case)."""
    plane = ControlPlane(workdir)
    plane.start()
    try:
        plane.start_controller_manager(extra_args=CONTROLLER_ARGS)
    except BaseException:
        plane.stop()
        raise
    return plane


class Api:
    """A small JSON client over one kept-alive HTTPS connection, as the plane's admin."""

    def __init__(self, plane: ControlPlane) -> None:
        context = ssl.create_default_context(cafile=str(plane.certs.ca_cert))
        context.load_cert_chain(str(plane.certs.admin_cert), str(plane.certs.admin_key))
        self.port = plane.port
        self.context = context
        self.connection: http.client.HTTPSConnection | None = None

    def call(
        self, method: str, path: str, body: object = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        for attempt in (0, 1):
            if self.connection is None:
                self.connection = http.client.HTTPSConnection(
                    "127.0.0.1", self.port, context=self.context, timeout=30
                )
            try:
                self.connection.request(method, path, body=data, headers=headers)
                response = self.connection.getresponse()
                raw = response.read()
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt:
                    raise
                continue
            return response.status, json.loads(raw) if raw else None
        raise AssertionError("unreachable")

    def ok(self, method: str, path: str, body: object = None, content_type: str = "application/json") -> Any:
        status, answer = self.call(method, path, body, content_type)
        if status >= 300:
            message = answer.get("message") if isinstance(answer, dict) else answer
            raise RunnerError(f"{method} {path}: {status} {message}")
        return answer

    def items(self, kind: str, namespace: str | None = None) -> list[Obj]:
        path = _PATHS[kind].replace("/namespaces/{ns}", f"/namespaces/{namespace}" if namespace else "")
        answer = self.ok("GET", path)
        api_version = answer.get("apiVersion", "v1")
        items: list[Obj] = answer.get("items") or []
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def _path(obj: Mapping[str, Any], name: bool = False) -> str:
    path = _PATHS[obj["kind"]].replace("{ns}", obj["metadata"].get("namespace", "default"))
    return f"{path}/{obj['metadata']['name']}" if name else path


def trim(obj: Obj) -> Obj:
    """An object as the case keeps it: what `kubectl get -o yaml` shows, without bookkeeping."""
    obj = copy.deepcopy(obj)
    metadata = obj.get("metadata") or {}
    for field in ("managedFields", "resourceVersion", "generation"):
        metadata.pop(field, None)
    return obj


def pending_form(pod: Obj) -> Obj:
    """A pod as it stood before scheduling: no node, no gate, status down to its claims."""
    pod = trim(pod)
    pod["spec"].pop("nodeName", None)
    pod["spec"].pop("schedulingGates", None)
    status = pod.get("status") or {}
    kept: Obj = {"phase": "Pending"}
    if status.get("resourceClaimStatuses"):
        kept["resourceClaimStatuses"] = status["resourceClaimStatuses"]
    pod["status"] = kept
    return pod


def running_form(pod: Obj) -> Obj:
    """A pod that runs: its node, its claims; conditions and times dropped."""
    pod = trim(pod)
    status = pod.get("status") or {}
    kept: Obj = {"phase": status.get("phase", "Pending")}
    if status.get("startTime"):
        kept["startTime"] = status["startTime"]
    if status.get("resourceClaimStatuses"):
        kept["resourceClaimStatuses"] = status["resourceClaimStatuses"]
    if status.get("extendedResourceClaimStatus"):
        kept["extendedResourceClaimStatus"] = status["extendedResourceClaimStatus"]
    pod["status"] = kept
    return pod


def _condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled":
            return condition  # type: ignore[no-any-return]
    return None


class Recorder:
    def __init__(self, plane: ControlPlane, scheduler: Scheduler | None = None) -> None:
        self.plane = plane
        self.api = Api(plane)
        self.scheduler = scheduler if scheduler is not None else KubeScheduler(plane)

    # -- cluster ------------------------------------------------------------------------------

    def reset(self) -> None:
        """Delete every object a previous case created (the namespaces stay)."""
        api = self.api
        for namespace in NAMESPACES:
            for pod in api.items("Pod", namespace):
                api.call("DELETE", _path(pod, name=True), {"gracePeriodSeconds": 0})
            for kind in ("ResourceClaim", "PersistentVolumeClaim"):
                for obj in api.items(kind, namespace):
                    self._unprotect(obj)
                    api.call("DELETE", _path(obj, name=True))
            for kind in ("ResourceClaimTemplate", "PodDisruptionBudget"):
                for obj in api.items(kind, namespace):
                    api.call("DELETE", _path(obj, name=True))
        for kind in ("ResourceSlice", "DeviceClass", "Node", "PriorityClass", "RuntimeClass", "PersistentVolume",
                     "StorageClass"):  # fmt: skip
            for obj in api.items(kind):
                if kind == "PriorityClass" and obj["metadata"]["name"].startswith("system-"):
                    continue
                self._unprotect(obj)
                api.call("DELETE", _path(obj, name=True))
        deadline = time.monotonic() + STEP_TIMEOUT
        while any(api.items(kind, ns) for ns in NAMESPACES for kind in ("Pod", *_PROTECTED[:2])) or api.items(
            "PersistentVolume"
        ):
            if time.monotonic() > deadline:
                raise RunnerError("objects of the previous case were not deleted in time")
            time.sleep(0.05)

    def _unprotect(self, obj: Obj) -> None:
        if obj["kind"] in _PROTECTED and obj["metadata"].get("finalizers"):
            self.api.call("PATCH", _path(obj, name=True), {"metadata": {"finalizers": None}},
                          "application/merge-patch+json")  # fmt: skip

    def create(self, obj: Obj) -> Obj:
        body = copy.deepcopy(obj)
        status = body.pop("status", None) if body["kind"] == "Node" else None
        code, answer = self.api.call("POST", _path(body), body)
        if code == 409 and body["kind"] == "Namespace":
            return body
        if code >= 300:
            raise RunnerError(f"create {body['kind']} {key_of(body)}: {code} {answer.get('message', answer)}")
        if status is not None:
            self.api.ok("PATCH", _path(body, name=True) + "/status", {"status": status},
                        "application/merge-patch+json")  # fmt: skip
            # The API server's TaintNodesByCondition admission adds node.kubernetes.io/not-ready;
            # with no node lifecycle controller running, the case's own taints are set back here.
            answer = self.api.ok("PATCH", _path(body, name=True), {"spec": {"taints": body["spec"].get("taints")}},
                                 "application/merge-patch+json")  # fmt: skip
        return answer  # type: ignore[no-any-return]

    def snapshot(self) -> Snapshot:
        """Pods and claims by key; volume claims, volumes and disruption budgets by `Kind:key`."""
        pods: dict[str, Obj] = {}
        claims: dict[str, Obj] = {}
        others: dict[str, Obj] = {}
        for namespace in NAMESPACES:
            pods.update((key_of(p), p) for p in self.api.items("Pod", namespace))
            claims.update((key_of(c), c) for c in self.api.items("ResourceClaim", namespace))
            for kind in ("PersistentVolumeClaim", "PodDisruptionBudget"):
                others.update((f"{kind}:{key_of(o)}", o) for o in self.api.items(kind, namespace))
        others.update((f"PersistentVolume:{key_of(v)}", v) for v in self.api.items("PersistentVolume"))
        return pods, claims, others

    # -- one pod ------------------------------------------------------------------------------

    def _claims_made(self, pod: Obj) -> bool:
        wanted = {
            e["name"] for e in pod["spec"].get("resourceClaims") or [] if e.get("resourceClaimTemplateName")
        }
        made = {s["name"] for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        return wanted <= made

    def create_gated(self, pod: Obj) -> tuple[Obj, list[Obj]]:
        """Create the pod behind a scheduling gate; return it and its claims once they exist."""
        body = copy.deepcopy(pod)
        body["spec"]["schedulingGates"] = [{"name": GATE}]
        self.create(body)
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            current = self.api.ok("GET", _path(pod, name=True))
            if self._claims_made(current):
                break
            if time.monotonic() > deadline:
                raise RunnerError(f"the claims of pod {key_of(pod)} were not created")
            time.sleep(POLL)
        namespace = pod["metadata"]["namespace"]
        claims = []
        for status in (current.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("resourceClaimName"):
                claim = self.api.ok(
                    "GET",
                    f"{_PATHS['ResourceClaim'].replace('{ns}', namespace)}/{status['resourceClaimName']}",
                )
                claims.append(claim)
        return current, claims

    def start(self, pods: list[Obj]) -> None:
        """What their kubelet would report: running, started a minute apart in creation order.
        (kube-scheduler orders preemption victims by start time; a pod without one counts as
        started now, at each look, which would make its choice among equal pods arbitrary.)"""
        first = time.time() - 60 * (len(pods) + 1)
        for i, pod in enumerate(pods):
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(first + 60 * i))
            self.api.ok("PATCH", _path(pod, name=True) + "/status", {"status": {"phase": "Running", "startTime": stamp}},
                        "application/merge-patch+json")  # fmt: skip

    def release(self, pod: Obj) -> None:
        self.api.ok("PATCH", _path(pod, name=True), [{"op": "remove", "path": "/spec/schedulingGates"}],
                    "application/json-patch+json")  # fmt: skip

    def _delete_terminating(self) -> bool:
        """Delete, as their kubelet would, pods that kube-scheduler deleted as preemption victims."""
        found = False
        for namespace in NAMESPACES:
            for pod in self.api.items("Pod", namespace):
                if pod["metadata"].get("deletionTimestamp"):
                    self.api.call("DELETE", _path(pod, name=True), {"gracePeriodSeconds": 0})
                    found = True
        return found

    def wait_decided(self, pod: Obj) -> tuple[str | None, str]:
        """(node, "") once bound; (None, message) once unschedulable (the condition's reason, not a
        scheduler error the pod is retried after) and quiet."""
        deadline = time.monotonic() + STEP_TIMEOUT
        quiet_since: float | None = None
        path = _path(pod, name=True)
        while time.monotonic() < deadline:
            current = self.api.ok("GET", path)
            node = current["spec"].get("nodeName")
            if node:
                return node, ""
            busy = self._delete_terminating() or bool((current.get("status") or {}).get("nominatedNodeName"))
            condition = _condition(current)
            # Only a verdict counts: kube-scheduler marks a pod whose binding cycle failed (a PreBind
            # that found its shared claim deallocated meanwhile, say) SchedulerError and retries it.
            unschedulable = (
                condition is not None
                and condition.get("status") == "False"
                and condition.get("reason") == "Unschedulable"
            )
            if unschedulable and not busy:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= QUIET:
                    return None, str(condition.get("message", "")) if condition else ""
            else:
                quiet_since = None
            time.sleep(POLL)
        raise RunnerError(
            f"pod {key_of(pod)} was neither bound nor marked unschedulable in {STEP_TIMEOUT:.0f} s"
        )

    def settle(self, seconds: float = 1.0) -> None:
        """Wait until no pod is terminating or nominated and nothing changed for `seconds`."""
        deadline = time.monotonic() + STEP_TIMEOUT
        last = None
        since = time.monotonic()
        while time.monotonic() < deadline:
            self._delete_terminating()
            pods, claims, others = self.snapshot()
            view = (
                {
                    k: (p["spec"].get("nodeName"), (p.get("status") or {}).get("nominatedNodeName"))
                    for k, p in pods.items()
                },
                {k: json.dumps(c.get("status"), sort_keys=True) for k, c in claims.items()},
                {k: _state(v) for k, v in others.items()},
            )
            if view != last:
                last, since = view, time.monotonic()
            elif time.monotonic() - since >= seconds:
                return
            time.sleep(0.1)
        raise RunnerError("the cluster did not settle")

    # -- the case -------------------------------------------------------------------------------

    @staticmethod
    def diff(before: Snapshot, after: Snapshot, skip: str = "") -> Changes:
        pods0, claims0, others0 = before
        pods1, claims1, others1 = after
        changes = Changes()
        for key, pod in pods1.items():
            node = pod["spec"].get("nodeName")
            if node and key != skip and (key not in pods0 or not pods0[key]["spec"].get("nodeName")):
                changes.bound[key] = node
        changes.deleted = sorted(k for k in pods0 if k not in pods1)
        for key, claim in claims1.items():
            old = claims0.get(key)
            if old is None or old.get("status") != claim.get("status"):
                changes.claims[key] = trim(claim)
        for key in claims0:
            if key not in claims1:
                changes.claims[key] = None
        for key, obj in others1.items():
            old = others0.get(key)
            if old is None or _state(old) != _state(obj):
                changes.others[key] = trim(obj)
        for key in others0:
            if key not in others1:
                changes.others[key] = None
        return changes

    def record(self, scenario: Scenario) -> Case:
        self.reset()
        for obj in scenario.cluster:
            self.create(obj)
        self.scheduler.restart()
        started = []
        for pod in scenario.running:
            self.create_gated(pod)
            self.release(pod)
            node, _ = self.wait_decided(pod)
            if node is None:
                self.api.call("DELETE", _path(pod, name=True), {"gracePeriodSeconds": 0})
            else:
                started.append(pod)
        self.start(started)
        self.settle(0.3)
        objects = self.read_cluster(scenario)
        pods, claims, _others = self.snapshot()
        objects += [running_form(p) for p in pods.values()]
        objects += [trim(c) for c in claims.values() if c.get("status")]
        steps: list[Step] = []
        for pod in scenario.pending:
            current, made = self.create_gated(pod)
            objects.append(pending_form(current))
            objects += [
                trim(c)
                for c in made
                if c["metadata"].get("annotations", {}).get("resource.kubernetes.io/pod-claim-name")
            ]
            before = self.snapshot()
            self.release(pod)
            node, message = self.wait_decided(pod)
            changes = self.diff(before, self.snapshot(), skip=key_of(pod))
            steps.append(Step(key_of(pod), node, message, changes))
        before = self.snapshot()
        self.settle()
        after = self.diff(before, self.snapshot())
        objects = _unique(objects)
        return Case(
            name=scenario.name, seed=scenario.seed, size=scenario.size,
            kube=self.scheduler.version, features=sorted(features_of(objects)), objects=objects, steps=steps, after=after,
        )  # fmt: skip

    def read_cluster(self, scenario: Scenario) -> list[Obj]:
        """The cluster objects as the API holds them, in the scenario's order (claims without status
        here; allocated ones follow with the running pods)."""
        wanted = [(o["kind"], key_of(o)) for o in scenario.cluster]
        found: dict[tuple[str, str], Obj] = {}
        for kind in ("Namespace", *_CLUSTER_WIDE):
            for obj in self.api.items(kind):
                found[(kind, key_of(obj))] = obj
        for kind in _NAMESPACED[:4]:
            for namespace in NAMESPACES:
                for obj in self.api.items(kind, namespace):
                    found[(kind, key_of(obj))] = obj
        objects = []
        for kind, key in wanted:
            obj = trim(found[(kind, key)])
            if kind == "Namespace":
                obj.pop("status", None)
                obj.pop("spec", None)
            if kind == "ResourceClaim" and obj.get("status"):
                continue  # allocated by a running pod: listed with them
            objects.append(obj)
        return objects

    def close(self) -> None:
        self.scheduler.stop()
        self.api.close()


def _state(obj: Mapping[str, Any]) -> str:
    """What binding and controllers change in a volume claim, a volume or a disruption budget: its
    spec (the claim's volume, the volume's claim), annotations (the selected node, bind-completed)
    and status (a budget's allowance), without the times conditions carry."""
    annotations = obj["metadata"].get("annotations") or {}
    status = dict(obj.get("status") or {})
    status.pop("conditions", None)
    return json.dumps([obj.get("spec"), annotations, status], sort_keys=True)


def _unique(objects: Iterable[Obj]) -> list[Obj]:
    seen: set[tuple[str, str]] = set()
    result = []
    for obj in objects:
        identity = (obj["kind"], key_of(obj))
        if identity not in seen:
            seen.add(identity)
            result.append(obj)
    return result

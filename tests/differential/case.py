"""A recorded differential case: the objects before scheduling and kube-scheduler's decisions.

A case file (`corpus/<name>.yaml.gz`, gzipped YAML) holds:

The features a case uses are read from its objects when it is loaded (`features.features_of`).

* `objects`: the cluster as the API server held it just before the recorded pods were
  scheduled, as `kubectl get -o yaml` shows it (managedFields and resourceVersions dropped):
  Namespaces, PriorityClasses, DeviceClasses, Nodes, ResourceSlices, claim templates, claims,
  the pods that already ran (bound, their claims allocated), then the pending pods in creation
  order with the claims the resourceclaim controller made for them (no status yet).
* `steps`: one per pending pod, in creation order: the node kube-scheduler bound it to, or the
  message of its `PodScheduled=False` condition, and everything else that changed while it was
  scheduled (`changes`: other pods bound, pods deleted as preemption victims, claims as they
  were afterwards, volume claims, volumes and disruption budgets as binding and controllers
  left them).
* `after`: what changed once the last pod was handled, until the cluster was quiet.

`state_before(case, i)` rebuilds the objects as they stood before step `i` (what kube-scheduler
saw when it took that pod); `final(case)` is the end result.
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from differential.features import features_of

Obj = dict[str, Any]
CORPUS = Path(__file__).parent / "corpus"
SUFFIX = ".yaml.gz"

try:
    _Loader: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader, _Dumper = yaml.SafeLoader, yaml.SafeDumper


def key_of(obj: Mapping[str, Any]) -> str:
    """namespace/name, or the name of a cluster-scoped object."""
    metadata = obj["metadata"]
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata['name']}" if namespace else str(metadata["name"])


@dataclass
class Changes:
    """What changed in the cluster during one step, besides the step's own pod."""

    bound: dict[str, str] = field(default_factory=dict)  # pod -> node
    deleted: list[str] = field(default_factory=list)  # pods
    claims: dict[str, Obj | None] = field(default_factory=dict)  # claim -> object afterwards, None: deleted
    # `Kind:key` of other objects that scheduling or controllers changed (volume claims and volumes
    # by volume binding, disruption budgets by the disruption controller) -> object afterwards,
    # None: deleted
    others: dict[str, Obj | None] = field(default_factory=dict)

    def to_data(self) -> Obj:
        data: Obj = {}
        if self.bound:
            data["bound"] = dict(self.bound)
        if self.deleted:
            data["deleted"] = list(self.deleted)
        if self.claims:
            data["claims"] = dict(self.claims)
        if self.others:
            data["others"] = dict(self.others)
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> Changes:
        data = data or {}
        return cls(
            dict(data.get("bound") or {}),
            list(data.get("deleted") or []),
            dict(data.get("claims") or {}),
            dict(data.get("others") or {}),
        )

    def __bool__(self) -> bool:
        return bool(self.bound or self.deleted or self.claims or self.others)


@dataclass
class Step:
    pod: str
    node: str | None
    message: str = ""
    changes: Changes = field(default_factory=Changes)

    def to_data(self) -> Obj:
        data: Obj = {"pod": self.pod, "node": self.node}
        if self.message:
            data["message"] = self.message
        if self.changes:
            data["changes"] = self.changes.to_data()
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Step:
        return cls(
            data["pod"], data.get("node"), data.get("message", ""), Changes.from_data(data.get("changes"))
        )


@dataclass
class Case:
    name: str
    seed: int | None
    size: str
    kube: str
    features: list[str]
    objects: list[Obj]
    steps: list[Step]
    after: Changes = field(default_factory=Changes)

    def to_data(self) -> Obj:
        return {
            "name": self.name, "seed": self.seed, "size": self.size, "kube": self.kube,
            "steps": [s.to_data() for s in self.steps],
            "after": self.after.to_data(), "objects": self.objects,
        }  # fmt: skip

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Case:
        return cls(
            name=data["name"], seed=data.get("seed"), size=data.get("size", "small"), kube=data.get("kube", ""),
            features=sorted(features_of(data["objects"])), objects=list(data["objects"]),
            steps=[Step.from_data(s) for s in data.get("steps") or []], after=Changes.from_data(data.get("after")),
        )  # fmt: skip

    def pods(self) -> list[Obj]:
        return [o for o in self.objects if o.get("kind") == "Pod"]


def save(case: Case, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{case.name}{SUFFIX}"
    text = yaml.dump(case.to_data(), Dumper=_Dumper, sort_keys=False, width=120)
    # mtime=0: the same case gives the same bytes.
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    return path


def load(path: Path) -> Case:
    text = gzip.decompress(path.read_bytes()).decode() if path.name.endswith(".gz") else path.read_text()
    return Case.from_data(yaml.load(text, Loader=_Loader))


def corpus_paths(folder: Path = CORPUS) -> list[Path]:
    return sorted(p for p in folder.glob(f"*{SUFFIX}"))


def _apply(objects: dict[str, Obj], pods_bound: dict[str, str], changes: Changes) -> None:
    for pod, node in changes.bound.items():
        pods_bound[pod] = node
    for pod in changes.deleted:
        objects.pop(f"Pod:{pod}", None)
        pods_bound.pop(pod, None)
    for claim, obj in changes.claims.items():
        if obj is None:
            objects.pop(f"ResourceClaim:{claim}", None)
        else:
            objects[f"ResourceClaim:{claim}"] = obj
    for entry, obj in changes.others.items():
        if obj is None:
            objects.pop(entry, None)
        else:
            objects[entry] = obj


def _ordered(case: Case, upto: int | None) -> tuple[dict[str, Obj], dict[str, str], set[str]]:
    """Objects by kind:key, bound pods, and the recorded pods created so far (steps < upto)."""
    objects = {f"{o['kind']}:{key_of(o)}": o for o in case.objects}
    bound: dict[str, str] = {}
    steps = case.steps if upto is None else case.steps[:upto]
    for step in steps:
        if step.node is not None:
            bound[step.pod] = step.node
        _apply(objects, bound, step.changes)
    if upto is None:
        _apply(objects, bound, case.after)
    created = {s.pod for s in steps}
    return objects, bound, created


def recorded_pods(case: Case) -> list[str]:
    return [s.pod for s in case.steps]


def _claims_of(pod: Obj) -> list[str]:
    namespace = pod["metadata"].get("namespace", "default")
    names = [e.get("resourceClaimName") for e in pod["spec"].get("resourceClaims") or []]
    names += [
        s.get("resourceClaimName") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    ]
    return [f"{namespace}/{n}" for n in names if n]


def _bind(pod: Obj, node: str) -> Obj:
    return {**pod, "spec": {**pod["spec"], "nodeName": node}}


def state_before(case: Case, index: int) -> list[Obj]:
    """The objects as kube-scheduler saw them when it took the pod of step `index`: every pod created
    before and still there (pending ones left out: they hold nothing), that pod pending, the claims
    as they were then. Objects keep the case's order."""
    objects, bound, created = _ordered(case, index)
    target = case.steps[index].pod
    recorded = set(recorded_pods(case))
    keep_pods = {p for p in created if p in bound} | {target}
    result: list[Obj] = []
    skip_claims: set[str] = set()
    for pod in case.pods():
        key = key_of(pod)
        if key in recorded and key not in keep_pods:
            skip_claims.update(c for c in _claims_of(pod) if not _shared(case, c))
    for entry_key, obj in objects.items():
        kind, _, key = entry_key.partition(":")
        if kind == "Pod":
            if key in recorded and key not in keep_pods:
                continue
            result.append(_bind(obj, bound[key]) if key in bound and key != target else obj)
        elif kind == "ResourceClaim" and key in skip_claims:
            continue
        else:
            result.append(obj)
    return result


def _shared(case: Case, claim: str) -> bool:
    """A claim that exists on its own (not made for one pod from a template)."""
    return any(
        o.get("kind") == "ResourceClaim" and key_of(o) == claim and not _generated(o) for o in case.objects
    )


def _generated(claim: Mapping[str, Any]) -> bool:
    return "resource.kubernetes.io/pod-claim-name" in (claim["metadata"].get("annotations") or {})


def state_after(case: Case) -> list[Obj]:
    """The objects at the end of the recording: every pod where kube-scheduler left it."""
    objects, bound, _ = _ordered(case, None)
    out = []
    for entry, obj in objects.items():
        kind, _, key = entry.partition(":")
        out.append(
            _bind(obj, bound[key])
            if kind == "Pod" and key in bound and not obj["spec"].get("nodeName")
            else obj
        )
    return out


@dataclass(frozen=True)
class Outcome:
    """Where every pod ended up: bound pods by node, pods left pending, pods deleted."""

    bound: dict[str, str]
    pending: list[str]
    deleted: list[str]


def final(case: Case) -> Outcome:
    pods = [o for o in state_after(case) if o["kind"] == "Pod"]
    present = {key_of(p) for p in pods}
    return Outcome(
        bound={key_of(p): p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")},
        pending=[key_of(p) for p in pods if not p["spec"].get("nodeName")],
        deleted=[key_of(p) for p in case.pods() if key_of(p) not in present],
    )

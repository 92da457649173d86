"""Run allot's planner on a recorded case and compare with kube-scheduler (docs/differential.md).

Two comparisons, both in-process through `allot.plan.planner.plan` (what `allot place` runs):

* **Step by step** (the decisive one): for every recorded pod, allot plans the cluster exactly
  as kube-scheduler saw it when it took that pod (earlier pods where kube-scheduler put them,
  claims as it allocated them, victims gone; `case.state_before`). Both decided from the same
  state, so "placed or not" must agree; node choice may differ (ties, allot's device choice),
  which is why each step starts again from kube-scheduler's state. A disagreement is intended
  when allot with kube-scheduler's behaviour (`KUBE_EQUIVALENT`) agrees on that step: it comes
  from one of allot's additions (GPU isolation, preemption to free devices). allot's placement at
  each step is checked by `validity.problems`, and where both leave the pod pending their
  reasons must match.
* **Whole run**: allot places every pending pod of the case's input at once, as `allot place`
  on the dump would; the pods holding a node at the end are compared with kube-scheduler's.
  When they differ, the difference is explained if allot with `KUBE_EQUIVALENT` agrees, or if
  allot's own result moves with its tie-break seed (it depends on which of equally good nodes an
  earlier pod took).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from msgspec.structs import replace

from allot.model.base import Object
from allot.model.codec import object_to_data
from allot.model.core import Pod
from allot.model.errors import Location
from allot.model.loader import LoadedObject, Manifests, load_text
from allot.plan.planner import PlanResult, build_engine, dump_time, plan, resulting_objects
from allot.scheduling.plugins.dynamic_resources import CANNOT_ALLOCATE
from allot.scheduling.plugins.gpu_isolation import OTHER_DOMAIN
from allot.scheduling.profile import DEFAULT_FILTERS, DEFAULT_SCORE_WEIGHTS, Profile
from differential.case import Case, final, key_of, state_after, state_before
from differential.features import gated
from differential.upstream_defects import counter_leak_explains
from differential.validity import problems

Obj = dict[str, Any]
SEEDS = (1, 2, 3, 4, 5, 6, 7)

# kube-scheduler's behaviour: allot's GpuIsolation filter and TopologyAlignment score off, upstream's
# first-found devices, and no preemption to free devices.
KUBE_EQUIVALENT = {
    "default-scheduler": Profile(
        filters=tuple(f for f in DEFAULT_FILTERS if f != "GpuIsolation"),
        score_weights={k: v for k, v in DEFAULT_SCORE_WEIGHTS.items() if k != "TopologyAlignment"},
        plugin_args={"DynamicResources": {"alignment": "none", "preemptForDevices": False}},
    )
}
# The documented ways allot differs from kube-scheduler on purpose (docs/differential.md).
ISOLATION = "isolation"
DEVICE_PREEMPTION = "device preemption"
CHOICE = "choice"
# kube-scheduler's allocator wrong where allot is right (`differential.upstream_defects`).
UPSTREAM_COUNTER_LEAK = "kube-scheduler counter leak (kubernetes#140436)"


class Decoded:
    """A case's objects decoded once (through allot's loader, validated as `allot place` does), so
    that each step's cluster is assembled from records instead of parsed again."""

    def __init__(self, case: Case) -> None:
        # Every distinct object the steps can need: the input, and claims as each step left them
        # (one batch per step: a claim appears once in each).
        batches: list[list[Obj]] = [list(case.objects)]
        for changes in [*(s.changes for s in case.steps), case.after]:
            batches.append([c for c in changes.claims.values() if c is not None])
        self.records: dict[int, Object] = {}
        self.pods: dict[str, Pod] = {}
        for batch in batches:
            if not batch:
                continue
            for raw, entry in zip(batch, _load(batch).entries, strict=True):
                self.records[id(raw)] = entry.obj
                if isinstance(entry.obj, Pod):
                    self.pods[key_of(raw)] = entry.obj

    def record(self, obj: Obj) -> Object:
        found = self.records.get(id(obj))
        if found is not None:
            return found
        original = self.pods.get(key_of(obj)) if obj["kind"] == "Pod" else None
        if original is not None and obj["spec"].get("nodeName"):
            # A pending pod of the input, bound where kube-scheduler put it.
            return replace(original, spec=replace(original.spec, node_name=obj["spec"]["nodeName"]))
        return _load([obj]).entries[0].obj

    def manifests(self, objects: Sequence[Obj]) -> Manifests:
        return Manifests([LoadedObject(self.record(o), _WHERE) for o in objects])


_WHERE = Location(file="<case>")


def _load(objects: Sequence[Obj]) -> Manifests:
    manifests = load_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}), "<case>")
    if len(manifests.entries) != len(objects):
        raise ValueError(
            "allot skipped objects of the case: " + ", ".join(f"{s.kind}" for s in manifests.skipped)
        )
    return manifests


def run_allot(
    objects: Sequence[Obj],
    *,
    seed: int = 0,
    profiles: Mapping[str, Profile] | None = None,
    decoded: Decoded | None = None,
) -> PlanResult:
    """`allot place` on these objects, in-process."""
    manifests = decoded.manifests(objects) if decoded is not None else _load(objects)
    return plan(manifests, seed=seed, profiles=profiles)


def after_objects(objects: Sequence[Obj], result: PlanResult) -> list[Obj]:
    """The cluster after allot's plan, as plain objects: placed pods with their node, claims as allot
    allocated them, volume claims and volumes as it bound them, evicted pods gone."""
    evicted = {e.pod for e in result.evicted}
    resulting = [object_to_data(x) for x in resulting_objects(result)]
    placed = {key_of(o): o for o in resulting}
    # Volume claims and volumes as the plan bound them.
    storage = {
        (o["kind"], key_of(o)): o
        for o in resulting
        if o["kind"] in ("PersistentVolumeClaim", "PersistentVolume")
    }
    claims = {c.key: object_to_data(c) for c in result.state.claims.values()}
    out: list[Obj] = []
    for obj in objects:
        key = key_of(obj)
        if (obj["kind"], key) in storage:
            out.append(storage[(obj["kind"], key)])
        elif obj["kind"] == "Pod":
            if key in evicted:
                continue
            out.append(placed.get(key, obj) if not obj["spec"].get("nodeName") else obj)
        elif obj["kind"] == "ResourceClaim":
            owners = {
                f"{obj['metadata'].get('namespace')}/{ref.get('name')}"
                for ref in obj["metadata"].get("ownerReferences") or []
            }
            if key not in claims and owners & evicted:
                continue  # deleted with the victim it was made for
            out.append(claims.pop(key, obj))
        else:
            out.append(obj)
    out.extend(claims.values())  # claims allot made (templates, extended resources)
    return out


_NODES = re.compile(r"^0/(\d+) nodes are available: (.*?)\.(?: |$)")


def reason_parts(message: str) -> tuple[str, ...] | None:
    """The per-node reasons of a "0/N nodes are available: ..." message, sorted; None if not one."""
    match = _NODES.match(message)
    if match is None:
        return None
    return tuple(sorted(part.strip() for part in match.group(2).split(", ")))


def post_filter_part(message: str) -> str:
    """What follows the per-node reasons: the post-filter plugins' account (DynamicResources', then
    preemption's), empty when there is none."""
    match = _NODES.match(message)
    return message[match.end() :].strip() if match is not None else ""


@dataclass
class StepReport:
    pod: str
    kube_node: str | None
    allot_node: str | None
    kube_message: str = ""
    allot_reason: str = ""
    kube_victims: list[str] = field(default_factory=list)
    allot_victims: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    # Set when they disagree but allot with kube-scheduler's behaviour (KUBE_EQUIVALENT) agrees:
    # the difference is one of allot's on purpose, named here.
    intended: str = ""
    # Where both placed the pod without preemption: whether kube-scheduler's node is one allot
    # (with kube-scheduler's behaviour) scores best, alone or tied (kube-scheduler picks among
    # tied nodes at random); None where the step does not tell.
    node_scored_best: bool | None = None

    @property
    def agree(self) -> bool:
        return (self.kube_node is None) == (self.allot_node is None)

    def intended_kind(self) -> str:
        """Which of allot's intended differences this disagreement looks like."""
        if self.kube_node is not None and self.allot_node is None and OTHER_DOMAIN in self.allot_reason:
            return ISOLATION
        if self.kube_node is None and self.allot_node is not None and self.allot_victims:
            return DEVICE_PREEMPTION if CANNOT_ALLOCATE in self.kube_message else "preemption"
        return "allot's plugins"

    @property
    def choice_agrees(self) -> bool | None:
        """Whether allot would have chosen kube-scheduler's node too (None unless both placed the
        pod without preemption)."""
        if self.kube_node is None or self.allot_node is None or self.kube_victims or self.allot_victims:
            return None
        return self.kube_node == self.allot_node or bool(self.node_scored_best)

    @property
    def victims_agree(self) -> bool | None:
        """Whether both preempted the same pods (None unless both placed the pod by preemption)."""
        if not (self.kube_victims and self.allot_victims):
            return None
        return self.kube_victims == self.allot_victims

    @property
    def reasons_agree(self) -> bool | None:
        """Whether both gave the same per-node reasons and the same post-filter account (None unless
        both left the pod pending). Where some node could not allocate the claims, allot's device
        preemption tries it (an intended difference), so only the per-node reasons are compared."""
        if self.kube_node is not None or self.allot_node is not None:
            return None
        if reason_parts(self.kube_message) != reason_parts(self.allot_reason):
            return False
        if CANNOT_ALLOCATE in self.kube_message:
            return True
        return post_filter_part(self.kube_message) == post_filter_part(self.allot_reason)


@dataclass
class CaseReport:
    name: str
    features: list[str]
    steps: list[StepReport] = field(default_factory=list)
    # Pods holding a node at the end: recorded pods bound, running pods not preempted.
    kube_placed: set[str] = field(default_factory=set)
    allot_placed: set[str] = field(default_factory=set)
    # The same with kube-scheduler's behaviour (KUBE_EQUIVALENT): allot's additions off (planned
    # when the whole runs differ, or when asked for).
    equivalent_placed: set[str] | None = None
    # Set when the whole runs differ: why ("choice", "isolation"), or "" if unexplained.
    explanation: str = ""
    invalid: list[str] = field(default_factory=list)  # allot's whole run
    kube_invalid: list[str] = field(default_factory=list)  # kube-scheduler's own result (checker sanity)

    @property
    def gated(self) -> list[str]:
        return gated(self.features)

    @property
    def whole_run_agrees(self) -> bool:
        return self.kube_placed == self.allot_placed

    def failures(self) -> list[str]:
        """Everything that is neither agreement nor a documented, intended difference."""
        out = [f"kube-scheduler's own result breaks a rule (checker bug?): {p}" for p in self.kube_invalid]
        for step in self.steps:
            if not step.agree and not step.intended:
                out.append(
                    f"step {step.pod}: kube-scheduler {_where(step.kube_node, step.kube_message)}, "
                    f"allot {_where(step.allot_node, step.allot_reason)}"
                )
            if step.choice_agrees is False:
                out.append(
                    f"step {step.pod}: kube-scheduler chose {step.kube_node}, which allot with its behaviour "
                    f"does not score best (allot chose {step.allot_node})"
                )
            if step.reasons_agree is False:
                out.append(
                    f"step {step.pod}: reasons differ: kube-scheduler {step.kube_message!r}, allot {step.allot_reason!r}"
                )
            out += [f"step {step.pod}: allot's placement is invalid: {p}" for p in step.invalid]
        if not self.whole_run_agrees and not self.explanation:
            out.append(
                f"whole run: placed only by kube-scheduler {sorted(self.kube_placed - self.allot_placed)}, "
                f"only by allot {sorted(self.allot_placed - self.kube_placed)}"
            )
        out += [f"whole run: allot's placement is invalid: {p}" for p in self.invalid]
        return out


def _where(node: str | None, message: str) -> str:
    return f"placed it on {node}" if node else f"left it pending ({message})"


def compare_step(case: Case, index: int, decoded: Decoded | None = None) -> StepReport:
    step = case.steps[index]
    objects = state_before(case, index)
    result = run_allot(objects, decoded=decoded)
    bound = {b.pod: b.node for b in result.bound}
    report = StepReport(
        pod=step.pod, kube_node=step.node, allot_node=bound.get(step.pod), kube_message=step.message,
        allot_reason=result.waiting.get(step.pod, ""), kube_victims=sorted(step.changes.deleted),
        allot_victims=sorted(e.pod for e in result.evicted),
    )  # fmt: skip
    if not report.agree:
        equivalent = run_allot(objects, profiles=KUBE_EQUIVALENT, decoded=decoded)
        if (step.pod in {b.pod for b in equivalent.bound}) == (step.node is not None):
            report.intended = report.intended_kind()
        elif _upstream_counter_leak(report, objects):
            report.intended = UPSTREAM_COUNTER_LEAK
    if report.kube_node is not None and report.allot_node is not None and not report.kube_victims:
        report.node_scored_best = report.kube_node == report.allot_node or _scored_best(
            objects, step.pod, report.kube_node, decoded
        )
    if report.allot_node is not None or report.allot_victims:
        found = problems(after_objects(objects, result))
        if found:  # only what allot's decision broke (kube-scheduler's own are reported once, per case)
            before = set(problems(objects))
            report.invalid = [p for p in found if p not in before]
    return report


def _upstream_counter_leak(report: StepReport, objects: Sequence[Obj]) -> bool:
    """kube-scheduler could not allocate the claims where allot, without victims, placed the pod,
    and kube-scheduler's known counter leak is what keeps them off allot's node."""
    if report.kube_node is not None or report.allot_node is None or report.allot_victims:
        return False
    if CANNOT_ALLOCATE not in report.kube_message:
        return False
    return counter_leak_explains(objects, report.pod, report.allot_node)


def _scored_best(objects: Sequence[Obj], pod: str, node: str, decoded: Decoded | None) -> bool:
    """Whether `node` is among the nodes allot, with kube-scheduler's behaviour, scores best for
    `pod` on these objects, leaving out the nodes kube-scheduler's counter leak refused
    (`differential.upstream_defects`)."""
    manifests = decoded.manifests(objects) if decoded is not None else _load(objects)
    engine = build_engine(manifests, profiles=KUBE_EQUIVALENT, now=dump_time(manifests))
    scores = engine.scheduler.node_scores(pod)
    if node not in scores:
        return False
    # Nodes kube-scheduler's counter leak kept the pod off were no choice it had.
    better = [n for n, score in scores.items() if score > scores[node]]
    return all(counter_leak_explains(objects, pod, n) for n in better)


def _placed(result: PlanResult, running: set[str]) -> set[str]:
    """Every pod that holds a node after allot's plan: those it bound, and those that ran before
    and were not evicted."""
    return ({b.pod for b in result.bound} | running) - {e.pod for e in result.evicted}


def compare_case(case: Case, *, steps: bool = True, equivalent: bool = False) -> CaseReport:
    """Both comparisons (`steps=False`: the whole run only). `equivalent`: also plan the whole run
    with KUBE_EQUIVALENT when it agrees anyway (for the figures)."""
    running = {key_of(p) for p in case.pods() if p["spec"].get("nodeName")}
    outcome = final(case)
    report = CaseReport(case.name, list(case.features))
    report.kube_placed = set(outcome.bound)
    report.kube_invalid = problems(state_after(case))
    decoded = Decoded(case)
    if steps:
        report.steps = [compare_step(case, i, decoded) for i in range(len(case.steps))]
    result = run_allot(case.objects, decoded=decoded)
    report.allot_placed = _placed(result, running)
    if equivalent or not report.whole_run_agrees:
        kube_like = run_allot(case.objects, profiles=KUBE_EQUIVALENT, decoded=decoded)
        report.equivalent_placed = _placed(kube_like, running)
    report.invalid = problems(after_objects(case.objects, result))
    if not report.whole_run_agrees:
        report.explanation = _explain(case, report, running, decoded, result)
    return report


def _explain(case: Case, report: CaseReport, running: set[str], decoded: Decoded, result: PlanResult) -> str:
    """Why the whole runs differ, if the difference is an intended one or a tie; "" if not.

    allot with kube-scheduler's behaviour (KUBE_EQUIVALENT) placing what kube-scheduler placed
    means the difference is one of allot's additions. Otherwise, if allot's result moves with its
    tie-break seed, which pods fit depends on which of equally scored nodes earlier pods took
    (kube-scheduler picks among those at random): "choice". So it is too if every step of
    kube-scheduler's run is one allot with kube-scheduler's behaviour makes from the same state
    (placed or not alike, kube-scheduler's node among those allot scores best, the same victims):
    the runs then part only where kube-scheduler took another of equally good nodes.
    """

    def placed(profiles: Mapping[str, Profile] | None, seed: int) -> set[str]:
        return _placed(run_allot(case.objects, profiles=profiles, seed=seed, decoded=decoded), running)

    if report.equivalent_placed == report.kube_placed:
        # Name what allot did that kube-scheduler does not, in this run.
        intended = {s.intended for s in report.steps if s.intended}
        if {e.pod for e in result.evicted} - set(final(case).deleted):
            intended.add(DEVICE_PREEMPTION)
        if any(OTHER_DOMAIN in reason for reason in result.waiting.values()):
            intended.add(ISOLATION)
        return ", ".join(sorted(intended)) if intended else "allot's device choice"
    for profiles in (KUBE_EQUIVALENT, None):
        first = placed(profiles, 0)
        if any(placed(profiles, seed) != first for seed in SEEDS):
            return CHOICE
    verdicts = [_step_is_allots(case, i, decoded) for i in range(len(case.steps))]
    if all(verdicts):
        return UPSTREAM_COUNTER_LEAK if UPSTREAM_COUNTER_LEAK in verdicts else CHOICE
    return ""


def _step_is_allots(case: Case, index: int, decoded: Decoded) -> str:
    """Whether allot with kube-scheduler's behaviour, from the state kube-scheduler had, could
    have made kube-scheduler's decision at this step (up to a choice among equally scored nodes):
    CHOICE if so, UPSTREAM_COUNTER_LEAK where only kube-scheduler's counter leak parts them
    (`differential.upstream_defects`), "" if not."""
    step = case.steps[index]
    objects = state_before(case, index)
    result = run_allot(objects, profiles=KUBE_EQUIVALENT, decoded=decoded)
    node = {b.pod: b.node for b in result.bound}.get(step.pod)
    victims = sorted(e.pod for e in result.evicted)
    if step.node is None and node is not None and not victims:
        return UPSTREAM_COUNTER_LEAK if counter_leak_explains(objects, step.pod, node) else ""
    if (node is None) != (step.node is None):
        return ""
    if victims or step.changes.deleted:
        return CHOICE if victims == sorted(step.changes.deleted) and node == step.node else ""
    if step.node is None or node == step.node:
        return CHOICE
    return CHOICE if _scored_best(objects, step.pod, step.node, decoded) else ""

"""allot's planner against kube-scheduler's recorded decisions, on every case of the corpus.

Each case (tests/differential/corpus, recorded by benchmarks/differential.py from a real
kube-scheduler v1.36) is planned step by step from kube-scheduler's own states and as a whole
(docs/differential.md): every pod must be placed or left pending as kube-scheduler did, every
placement allot makes must pass the independent checker, and a whole run may differ only where
the difference is explained. Cases using a feature allot does not implement yet
(features.GATED) are expected to fail, strictly: once the plugin lands, take the feature out of
GATED and they become real checks. No binaries needed.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from differential.case import Case, corpus_paths, key_of, load
from differential.compare import compare_case
from differential.features import ALL_FEATURES, GATED, gated
from differential.generate import generate

PATHS = {p.name.split(".")[0]: p for p in corpus_paths()}


@cache
def _case(name: str) -> Case:
    return load(PATHS[name])


def _params() -> list[object]:
    params = []
    for name in PATHS:
        missing = gated(_case(name).features)
        marks = (
            [pytest.mark.xfail(strict=True, reason=f"allot does not implement {', '.join(missing)} yet")]
            if missing
            else []
        )
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.parametrize("name", _params())
def test_allot_places_what_kube_scheduler_placed(name: str) -> None:
    case = _case(name)
    # A gated case is expected to fail: its whole run usually shows it, so the steps are played
    # only when it does not (and then all of them, to know).
    whole_run_first = bool(gated(case.features))
    report = compare_case(case, steps=not whole_run_first)
    if whole_run_first and not report.failures():
        report = compare_case(case)
    failures = report.failures()
    assert not failures, f"{name} ({', '.join(report.features)}):\n  " + "\n  ".join(failures)


def test_the_corpus_is_large_enough_and_uses_every_feature() -> None:
    cases = [_case(n) for n in PATHS]
    supported = [c for c in cases if not gated(c.features)]
    assert len(supported) >= 50, (
        f"{len(supported)} cases without gated features; record more (docs/differential.md)"
    )
    uses = Counter(f for c in cases for f in c.features)
    assert not [f for f in ALL_FEATURES if uses[f] < 2], f"features used by fewer than 2 cases: {uses}"
    # Each case is what the recording gave: pods pending and placed, some by preemption.
    steps = [s for c in cases for s in c.steps]
    assert sum(s.node is None for s in steps) > len(steps) // 10
    assert sum(bool(s.changes.deleted) for s in steps) >= 3
    assert set(ALL_FEATURES) >= GATED


def test_each_case_was_recorded_from_what_its_seed_generates_now() -> None:
    # The corpus is reproducible: `benchmarks/differential.py record --seeds N` makes the same
    # scenario again (kube-scheduler's choices among equal nodes may differ, its inputs do not).
    for name in PATHS:
        case = _case(name)
        assert case.seed is not None
        scenario = generate(case.seed, size=case.size)
        assert [s.pod for s in case.steps] == [key_of(p) for p in scenario.pending], name
        recorded = {
            key_of(o): _undefaulted(o["spec"]) for o in case.objects if o["kind"] == "ResourceClaimTemplate"
        }
        made = {key_of(o): o["spec"] for o in scenario.cluster if o["kind"] == "ResourceClaimTemplate"}
        assert recorded == made, name


def _undefaulted(value: object) -> object:
    """A spec without what the API server filled in (allocationMode ExactCount, empty metadata)."""
    if isinstance(value, dict):
        return {
            k: _undefaulted(v)
            for k, v in value.items()
            if not (k == "allocationMode" and v == "ExactCount") and not (k == "metadata" and v == {})
        }
    if isinstance(value, list):
        return [_undefaulted(v) for v in value]
    return value

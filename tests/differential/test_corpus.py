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

from differential.case import Case, corpus_paths, load
from differential.compare import compare_case
from differential.features import ALL_FEATURES, GATED, gated

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
    report = compare_case(_case(name))
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

"""Every input kind, fuzzed, through the real `allot` entry point: exit 0-3 with a message, never a
traceback, never past the memory ceiling or the time limit, never a partial file (see runner.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings

from allot.cli.exits import EXIT_INTERNAL
from fuzzing import examples

from .inputs import config_cases, manifest_cases, option_cases, scenario_cases, trace_cases, valid_cases
from .runner import Case, Outcome, Worker, check

FUZZ = settings(
    max_examples=examples(12),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    started = Worker()
    yield started
    started.close()


@FUZZ
@given(case=manifest_cases())
def test_manifests(worker: Worker, case: Case) -> None:
    check(worker, case)


@FUZZ
@given(case=scenario_cases())
def test_scenario_files(worker: Worker, case: Case) -> None:
    check(worker, case)


@FUZZ
@given(case=trace_cases())
def test_traces(worker: Worker, case: Case) -> None:
    check(worker, case)


@FUZZ
@given(case=config_cases())
def test_scheduler_configurations(worker: Worker, case: Case) -> None:
    check(worker, case)


@settings(FUZZ, max_examples=examples(24))
@given(case=option_cases())
def test_command_line_options(worker: Worker, case: Case) -> None:
    check(worker, case)


def test_the_ceiling_is_enforced_in_the_child() -> None:
    """A ceiling below what allot needs makes the run fail, and the harness reports it."""
    tight = Worker(ceiling=64 << 20)
    try:
        outcome = tight.run(valid_cases()[0])
    finally:
        tight.close()
    # Python reports the failed allocation as allot's internal error; a C library may abort instead.
    assert (
        outcome.code == EXIT_INTERNAL and "internal error" in outcome.stderr
    ) or outcome.signal is not None
    assert outcome.problems()


def test_the_inputs_the_fuzzers_start_from_run(worker: Worker) -> None:
    """Unmutated, every input kind runs to the end (exit 0): the mutations, not the base, fail."""
    for case in valid_cases():
        outcome = check(worker, case)
        assert outcome.code == 0, case.describe() + outcome.stderr


def test_the_invariant_flags_tracebacks_silent_failures_and_partial_files() -> None:
    clean = Outcome(1, None, False, 0, "", "error: bad.yaml: ...", [], [])
    assert clean.problems() == []
    traceback = Outcome(1, None, False, 0, "", "Traceback (most recent call last):\n  ...", [], [])
    assert traceback.problems() == ["printed a traceback"]
    silent = Outcome(2, None, False, 0, "", "", [], [])
    assert silent.problems() == ["failed without a message on stderr"]
    partial = Outcome(1, None, False, 0, "", "error: x", ["allot-report/index.html"], [])
    assert partial.problems() == ["failed but wrote ['allot-report/index.html']"]
    bug = Outcome(4, None, False, 0, "", "internal error: OverflowError", [], [])
    assert bug.problems() == ["exit status 4"]

"""The HTML report: every section, self-contained, one figure per policy; the CLI around it."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from allot.cli.simulate_cmd import simulate
from allot.report import ReportData, render, write_report
from allot.report.sections import SECTIONS
from allot.sim.metrics import summarize
from sim.cases import SMALL, run


@pytest.fixture(scope="module")
def page() -> str:
    results = [run(SMALL, policy) for policy in ("fifo-priority", "fair")]
    data = ReportData(
        title="allot simulation: small",
        results=results,
        summaries=[summarize(r) for r in results],
        description="two tenants",
        descriptions={"fifo-priority": "kube-scheduler", "fair": "Kueue fair sharing"},
    )
    return render(data)


def test_every_section_is_there_with_its_figures(page: str) -> None:
    for anchor, _ in SECTIONS:
        assert f'<section id="{anchor}">' in page, anchor
        assert f'href="#{anchor}"' in page
    images = re.findall(r'<img src="([^"]+)"', page)
    # cluster 2, nodes 1, tenants 2, fragmentation 1, alignment 1, admissions 1: per policy.
    assert len(images) == 2 * 8
    assert all(src.startswith("data:image/png;base64,") for src in images)


def test_the_page_is_self_contained(page: str) -> None:
    assert "<script" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert not re.search(r"url\(", page)


def test_numbers_in_the_summary(page: str) -> None:
    assert "GPU allocation" in page and "Jain" in page
    assert "alpha" in page and "beta" in page


def test_write_report_creates_the_folder(tmp_path: Path) -> None:
    result = run(SMALL, "fair")
    path = write_report(ReportData("t", [result], [summarize(result)]), tmp_path / "out")
    assert path == tmp_path / "out" / "index.html"
    assert path.read_text().startswith("<!DOCTYPE html>")


def _scenario(tmp_path: Path, text: str = SMALL) -> str:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return str(path)


def test_cli_table_and_report(tmp_path: Path) -> None:
    report = tmp_path / "report"
    outcome = CliRunner().invoke(
        simulate, [_scenario(tmp_path), "--report-dir", str(report), "-q", "-j", "1"]
    )
    assert outcome.exit_code == 0, outcome.output
    assert "Simulation summary" in outcome.output
    assert "fifo-priority" in outcome.output and "fair" in outcome.output
    assert f"Report: {report / 'index.html'}" in outcome.output.replace("\n", "")
    assert (report / "index.html").exists()


def test_cli_json_output(tmp_path: Path) -> None:
    args = [
        _scenario(tmp_path),
        "--no-report",
        "-o",
        "json",
        "--compare",
        "fair,kueue",
        "--seed",
        "9",
        "-j",
        "2",
    ]
    outcome = CliRunner().invoke(simulate, args)
    assert outcome.exit_code == 0, outcome.output
    payload = json.loads(outcome.output)
    assert payload["seed"] == 9 and payload["report"] is None
    assert [p["policy"] for p in payload["policies"]] == ["fair", "kueue"]
    fair = payload["policies"][0]
    for key in ("allocationPct", "fragmentedPct", "wait", "tenants", "jain", "preemptions", "pendingReasons"):
        assert key in fair
    assert {t["name"] for t in fair["tenants"]} == {"alpha", "beta"}
    assert set(fair["wait"]) == {"count", "p50", "p95", "p99", "mean"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compare", "fastest"], "unknown policy 'fastest'"),
        (["--trace", "philly"], "the CSV file is required"),
        (["--horizon", "soon"], "expected a duration"),
    ],
)
def test_cli_bad_options(tmp_path: Path, args: list[str], message: str) -> None:
    outcome = CliRunner().invoke(simulate, [_scenario(tmp_path), "--no-report", "-j", "1", *args])
    assert outcome.exit_code in (1, 2)
    assert message in outcome.output


def test_cli_bad_scenario_gets_located_errors_and_writes_nothing(tmp_path: Path) -> None:
    report = tmp_path / "report"
    path = _scenario(tmp_path, SMALL.replace("duration: 15m", "duration: later"))
    outcome = CliRunner().invoke(simulate, [path, "--report-dir", str(report)])
    assert outcome.exit_code == 1
    assert f"error: {path}:27: jobs[2].duration: expected a duration" in outcome.output
    assert "Traceback" not in outcome.output
    assert not report.exists()


def test_figures_drawn_where_a_run_ran_are_used_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    from allot.report import plots
    from allot.report.document import draw_figures

    def data(results: list) -> ReportData:  # type: ignore[type-arg]
        return ReportData("t", results, [summarize(r) for r in results])

    early = [run(SMALL, policy) for policy in ("fifo-priority", "fair")]
    # The same runs (their wall times are on the page too), drawn at report time.
    drawn_here = render(data(copy.deepcopy(early)))
    for result in early:
        draw_figures(result)  # what `allot simulate` has each worker do after its run
        assert len(result.figures) == 8

    def no_drawing(*args: object, **kwargs: object) -> str:
        raise AssertionError("a figure was drawn again")

    monkeypatch.setattr(plots, "_png", no_drawing)
    assert render(data(early)) == drawn_here


def test_figures_split_over_two_processes_are_the_figures_one_process_draws() -> None:
    from allot.report.document import draw_figures

    alone = run(SMALL, "fair")
    split = copy.deepcopy(alone)
    draw_figures(alone)
    draw_figures(split, split=True)  # every other figure drawn in a forked helper
    assert len(split.figures) == 8
    assert split.figures == alone.figures


def test_a_failed_figure_helper_leaves_its_figures_to_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    from allot.report import document

    result = run(SMALL, "fair")
    expected = copy.deepcopy(result)
    document.draw_figures(expected)
    real_render_half = document._render_half

    def helper_dies(data: ReportData, half: int) -> None:
        if half == 1:
            raise RuntimeError("the helper dies before it sends anything")
        real_render_half(data, half)

    monkeypatch.setattr(document, "_render_half", helper_dies)
    document.draw_figures(result, split=True)
    assert result.figures == expected.figures

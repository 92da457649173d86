"""Agreement figures over many compared cases, overall and per feature (printed by
benchmarks/differential.py and by the corpus test on failure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from differential.compare import CaseReport
from differential.features import ALL_FEATURES


@dataclass
class Tally:
    cases: int = 0
    steps: int = 0
    steps_agree: int = 0
    steps_intended: int = 0
    whole_agree: int = 0
    whole_explained: int = 0
    whole_equivalent: int = 0
    invalid: int = 0
    reasons: int = 0
    reasons_agree: int = 0
    victims: int = 0
    victims_agree: int = 0
    choices: int = 0
    choices_agree: int = 0
    intended: dict[str, int] = field(default_factory=dict)

    def add(self, report: CaseReport) -> None:
        self.cases += 1
        for step in report.steps:
            self.steps += 1
            self.steps_agree += step.agree
            if not step.agree and step.intended:
                self.steps_intended += 1
                self.intended[step.intended] = self.intended.get(step.intended, 0) + 1
            self.invalid += bool(step.invalid)
            if step.reasons_agree is not None:
                self.reasons += 1
                self.reasons_agree += step.reasons_agree
            if step.victims_agree is not None:
                self.victims += 1
                self.victims_agree += step.victims_agree
            if step.choice_agrees is not None:
                self.choices += 1
                self.choices_agree += step.choice_agrees
        self.whole_agree += report.whole_run_agrees
        self.whole_equivalent += report.equivalent_placed == report.kube_placed  # None: not planned
        if not report.whole_run_agrees and report.explanation:
            self.whole_explained += 1
            self.intended[f"whole run: {report.explanation}"] = (
                self.intended.get(f"whole run: {report.explanation}", 0) + 1
            )
        self.invalid += bool(report.invalid)

    def line(self, label: str) -> str:
        def pct(a: int, b: int) -> str:
            return f"{100 * a / b:5.1f} %" if b else "    - "

        return (
            f"{label:24} {self.cases:4} cases  steps {self.steps_agree:4}/{self.steps:<4} {pct(self.steps_agree, self.steps)}"
            f" (+{self.steps_intended} intended)  whole runs {self.whole_agree:3}/{self.cases:<3}"
            f" {pct(self.whole_agree, self.cases)} (+{self.whole_explained} explained;"
            f" {self.whole_equivalent} with kube's behaviour)"
            f"  invalid {self.invalid}  reasons {self.reasons_agree}/{self.reasons}"
            f"  victims {self.victims_agree}/{self.victims}"
            f"  nodes {self.choices_agree}/{self.choices}"
        )


def table(reports: Sequence[CaseReport]) -> str:
    total = Tally()
    per: dict[str, Tally] = {}
    for report in reports:
        total.add(report)
        for feature in report.features:
            per.setdefault(feature, Tally()).add(report)
    lines = [total.line("all")]
    lines += [per[f].line(f) for f in ALL_FEATURES if f in per]
    if total.intended:
        lines.append(
            "intended differences: " + ", ".join(f"{k} {v}" for k, v in sorted(total.intended.items()))
        )
    return "\n".join(lines)

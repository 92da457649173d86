"""The report's sections, each comparing the policies side by side.

Sections: summary, cluster (GPU allocation over time), nodes (who holds
which GPU when), tenants (share against fair share, queue waits),
fragmentation, alignment, admissions and preemptions, pending reasons.
Each returns HTML; figures come from `allot.report.plots`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar

from allot.report import format as fmt
from allot.report import plots
from allot.report.html import card, esc, figure, grid, section, table
from allot.sim.metrics import Summary, TenantSummary
from allot.sim.records import SimResult

RATIO_TARGET = 0.9

SECTIONS = (
    ("summary", "Summary"),
    ("cluster", "Cluster"),
    ("nodes", "Nodes"),
    ("tenants", "Tenants"),
    ("fragmentation", "Fragmentation"),
    ("alignment", "Alignment"),
    ("admissions", "Admissions & preemptions"),
    ("pending", "Pending reasons"),
)


def _ratio_cell(value: float | None) -> str:
    if value is None:
        return fmt.DASH
    css = "good" if value >= RATIO_TARGET else "bad"
    return f'<span class="{css}">{value:.2f}</span>'


# While set, asked once per figure in the page's order whether to draw it; the figures it
# declines are left out of the page (see `allot.report.document.draw_figures`).
DRAWING_ONLY: ContextVar[Callable[[], bool] | None] = ContextVar("DRAWING_ONLY", default=None)


def _drawn(result: SimResult, name: str, draw: Callable[[SimResult], str]) -> str:
    """A figure of one run, drawn once and kept with the run (`SimResult.figures`)."""
    only = DRAWING_ONLY.get()
    if only is not None and not only():
        return ""
    found = result.figures.get(name)
    if found is None:
        found = result.figures[name] = draw(result)
    return found


def _per_policy(
    results: Sequence[SimResult], draw: Callable[[SimResult], str], alt: str, caption: str
) -> str:
    cards = [card(r.policy, figure(_drawn(r, alt, draw), f"{alt} ({r.policy})")) for r in results]
    return grid(cards) + (f'<p class="note">{esc(caption)}</p>' if caption else "")


def summary(summaries: Sequence[Summary], descriptions: dict[str, str]) -> str:
    rows: list[tuple[str, Callable[[Summary], str]]] = [
        ("Jobs completed / arrived", lambda s: f"{s.completed:,} / {s.jobs:,}"),
        ("GPUs (ready, mean)", lambda s: fmt.num(s.gpus, 0)),
        ("GPU allocation", lambda s: fmt.pct(s.allocation_pct)),
        ("GPUs busy (any share taken)", lambda s: fmt.pct(s.busy_pct)),
        ("GPU compute / memory taken", lambda s: f"{fmt.pct(s.compute_pct)} / {fmt.pct(s.memory_pct)}"),
        ("Unallocated GPUs", lambda s: fmt.pct(s.unallocated_pct)),
        ("Fragmented GPUs", lambda s: fmt.pct(s.fragmented_pct)),
        ("Idle GPUs while work waited", lambda s: fmt.pct(s.idle_while_waiting_pct)),
        ("... that waiting work could use", lambda s: fmt.pct(s.idle_usable_while_waiting_pct)),
        (
            "Queue wait p50 / p95 / p99",
            lambda s: " / ".join(fmt.duration(v) for v in (s.wait.p50, s.wait.p95, s.wait.p99)),
        ),
        ("Completion time p50 / p95", lambda s: " / ".join(fmt.duration(v) for v in (s.jct.p50, s.jct.p95))),
        ("Worst tenant's fair-share ratio", lambda s: _ratio_cell(s.min_fair_share_ratio)),
        ("Jain's index of fair-share ratios", lambda s: fmt.ratio(s.jain)),
        ("... of the GPUs its work can use", lambda s: _ratio_cell(s.min_usable_fair_share_ratio)),
        ("Jain's index, usable fair shares", lambda s: fmt.ratio(s.usable_jain)),
        ("Contended time", lambda s: fmt.duration(s.contended_hours * 3600)),
        ("Preemptions (pods)", lambda s: f"{s.preemptions:,}"),
        ("Admissions (borrowing)", lambda s: f"{s.admissions:,} ({s.borrowing_admissions:,})"),
        ("Aligned GPU+NIC starts", lambda s: fmt.pct(s.aligned_pct)),
        ("Modeled slowdown", lambda s: fmt.pct(s.slowdown_pct)),
        (
            "GPU-hours lost: misalignment / time-slicing",
            lambda s: (
                f"{fmt.num(s.lost_misaligned_gpu_hours, 1)} / {fmt.num(s.lost_time_slicing_gpu_hours, 1)}"
            ),
        ),
        (
            "Simulated / wall time",
            lambda s: f"{fmt.duration(s.simulated_hours * 3600)} / {s.wall_seconds:.1f} s",
        ),
    ]
    body = table(
        ["", *(s.policy for s in summaries)],
        ([name, *(f(s) for s in summaries)] for name, f in rows),
        raw=True,
    )
    policies = "".join(
        f"<li><b>{esc(s.policy)}</b>: {esc(descriptions.get(s.policy, ''))}</li>" for s in summaries
    )
    notes = sorted({n for s in summaries for n in s.notes})
    extra = "".join(f'<p class="note">{esc(n)}</p>' for n in notes)
    lead = (
        "One workload, one cluster, each policy in turn. A fair-share ratio is the GPU time a tenant got over "
        "the GPU time its weighted max-min fair share entitled it to while GPUs were contended; below "
        f"{RATIO_TARGET:.1f} it is marked red."
    )
    return section("summary", "Summary", lead, body + f"<ul>{policies}</ul>" + extra)


def cluster(results: Sequence[SimResult], colors: dict[str, str]) -> str:
    body = _per_policy(
        results, lambda r: plots.gpu_allocation(r, colors), "GPUs held by tenant over time", ""
    )
    body += _per_policy(
        results,
        plots.utilisation,
        "GPU allocation, compute and memory over time",
        "Allocation counts max(compute, memory) of each GPU's taken share; a MIG slice or a fractional GPU counts its share.",
    )
    return section(
        "cluster",
        "Cluster: GPU allocation over time",
        "GPU-equivalents each tenant held (stacked) against the GPUs on ready nodes.",
        body,
    )


def nodes(results: Sequence[SimResult], colors: dict[str, str]) -> str:
    legend = " ".join(
        f'<span class="swatch" style="background:{c}"></span>{esc(t)}' for t, c in colors.items()
    )
    body = _per_policy(
        results,
        lambda r: plots.node_heatmap(r, colors),
        "GPU occupancy per node over time",
        "One row per GPU, grouped by node; colour: the tenant holding most of the GPU in that interval, "
        "paler when only partly used; white: idle.",
    )
    return section(
        "nodes",
        "Nodes: who used which GPU",
        "Per node and GPU over time, the tenant holding it.",
        f"<p>{legend}</p>" + body,
    )


def _tenant_rows(summaries: Sequence[Summary]) -> list[list[str]]:
    rows: list[list[str]] = []
    names = [t.name for t in summaries[0].tenants] if summaries else []
    for name in names:
        for s in summaries:
            t: TenantSummary = s.tenant(name)
            rows.append(
                [
                    esc(name),
                    esc(s.policy),
                    fmt.num(t.weight, 1),
                    f"{t.completed:,} / {t.jobs:,}",
                    fmt.duration(t.wait.p50),
                    fmt.duration(t.wait.p95),
                    fmt.duration(t.wait.p99),
                    fmt.num(t.gpu_hours, 1),
                    fmt.num(t.fair_gpu_hours, 1),
                    _ratio_cell(t.fair_share_ratio),
                    f"{t.preempted:,}",
                ]
            )
    return rows


def tenants(results: Sequence[SimResult], summaries: Sequence[Summary], colors: dict[str, str]) -> str:
    headers = [
        "tenant",
        "policy",
        "weight",
        "jobs done",
        "wait p50",
        "wait p95",
        "wait p99",
        "GPU-h",
        "fair GPU-h",
        "ratio",
        "preempted pods",
    ]
    body = table(headers, _tenant_rows(summaries), raw=True, text_columns=(1,))
    body += _per_policy(
        results,
        lambda r: plots.fair_share(r, colors),
        "GPUs held against fair share",
        "Solid: GPUs held; dashed: the weighted max-min fair share of the GPUs given each tenant's demand (its jobs that arrived and have not finished).",
    )
    body += _per_policy(results, lambda r: plots.wait_cdf(r, colors), "Queue wait distribution", "")
    return section(
        "tenants",
        "Tenants: share against fair share, and waits",
        "GPU-h counted over the whole run; fair GPU-h and the ratio over the contended period only.",
        body,
    )


def fragmentation(results: Sequence[SimResult], summaries: Sequence[Summary]) -> str:
    rows = [
        [
            esc(s.policy),
            fmt.pct(s.unallocated_pct),
            fmt.pct(s.fragmented_pct),
            fmt.pct(s.idle_while_waiting_pct),
            fmt.pct(s.idle_usable_while_waiting_pct),
        ]
        for s in summaries
    ]
    body = table(
        ["policy", "unallocated", "fragmented", "idle while work waited", "idle, usable by waiting work"],
        rows,
        raw=True,
    )
    body += _per_policy(
        results,
        plots.fragmentation,
        "Unallocated and fragmented GPUs over time",
        "Fragmented: the free share of GPUs that are partly taken, usable only by fractional work. Shaded: GPU work was waiting.",
    )
    return section(
        "fragmentation",
        "Fragmentation",
        "Where free GPU capacity went unused, and how much of it was in slivers.",
        body,
    )


def alignment(results: Sequence[SimResult], summaries: Sequence[Summary]) -> str:
    rows = [
        [
            esc(s.policy),
            f"{s.assessed_starts:,}",
            fmt.pct(s.aligned_pct),
            fmt.pct(s.slowdown_pct),
            fmt.num(s.lost_misaligned_gpu_hours, 1),
            fmt.num(s.lost_time_slicing_gpu_hours, 1),
        ]
        for s in summaries
    ]
    body = table(
        [
            "policy",
            "GPU+NIC pod starts",
            "aligned (same PCIe root)",
            "modeled slowdown",
            "GPU-h lost to misalignment",
            "GPU-h lost to time-slicing",
        ],
        rows,
        raw=True,
    )
    cards = []
    for s in summaries:
        slow = [
            [
                esc(p.pod),
                esc(p.tenant),
                fmt.pct(100.0 * p.speed),
                fmt.duration(p.hours * 3600),
                "yes" if p.time_sliced else "",
            ]
            for p in s.slowest
        ]
        inner = (
            table(
                ["pod", "tenant", "mean pace", "ran", "time-sliced"], slow, raw=True, text_columns=(0, 1, 4)
            )
            if slow
            else '<p class="note">Every pod ran at full speed.</p>'
        )
        cards.append(card(f"{s.policy}: slowest pod runs", inner))
    body += grid(cards)
    body += _per_policy(
        results,
        plots.alignment,
        "Pod starts by throughput factor",
        "Throughput factors from allot.scheduling.topology (measured GPU-NIC bandwidth ratios; CPUs on another "
        "NUMA node than their GPUs or NICs 0.71, overridable in the scenario); a job's duration is stretched by "
        "1/factor. Pods on one time-sliced GPU take equal turns: n of them run at 1/n each.",
    )
    return section(
        "alignment",
        "Topology alignment and shared GPUs",
        "How well devices lined up, what misalignment and time-slicing cost, and the pods that ran slowest.",
        body,
    )


def admissions(results: Sequence[SimResult], summaries: Sequence[Summary], colors: dict[str, str]) -> str:
    cards = []
    for s in summaries:
        rows = [[esc(r.reason), f"{r.count:,}"] for r in s.preemption_reasons[:8]]
        inner = (
            table(["reason", "pods"], rows, raw=True, text_columns=(0,))
            if rows
            else '<p class="note">No preemptions.</p>'
        )
        cards.append(card(f"{s.policy}: {s.preemptions:,} preemptions, {s.admissions:,} admissions", inner))
    body = grid(cards)
    body += _per_policy(
        results, lambda r: plots.admissions(r, colors), "Cumulative admissions and preemptions", ""
    )
    return section(
        "admissions",
        "Admissions and preemptions",
        "Kueue admissions (none without queues) and pods taken off their nodes, by reason.",
        body,
    )


def pending(summaries: Sequence[Summary]) -> str:
    cards = []
    for s in summaries:
        rows = [[esc(r.reason), fmt.num(r.pod_hours, 1), f"{r.pods:,}"] for r in s.pending_reasons]
        inner = (
            table(["reason", "pod-hours", "pods"], rows, raw=True)
            if rows
            else '<p class="note">Nothing waited.</p>'
        )
        cards.append(card(s.policy, inner))
    return section(
        "pending",
        "Top pending reasons",
        "Why pods waited, by the time they spent waiting for that reason (names and counts removed so similar reasons group).",
        grid(cards, columns=1),
    )

"""The report's figures: matplotlib (Agg, no display) rendered to PNG data: URIs.

One function per figure, each taking one policy's `SimResult` (and the
tenant colours, the same in every figure and every policy) and returning a
`data:image/png;base64,...` string. Figures are built on `Figure` objects
directly, not through pyplot, so no global state is touched.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from allot.sim.metrics import waits
from allot.sim.records import SimResult
from allot.sim.series import cumulative_counts, fair_shares, occupancy_grid

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
DPI = 100
HOUR = 3600.0


def tenant_colors(tenants: Sequence[str]) -> dict[str, str]:
    return {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(tenants)}


def _png(fig: Figure) -> str:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _axes(width: float = 6.4, height: float = 3.0) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(width, height))
    ax = fig.add_subplot(1, 1, 1)
    ax.grid(True, color="#e3e7ee", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _hours(result: SimResult) -> np.ndarray:
    t = result.samples.time
    return np.append(t, result.end) / HOUR if t.size else np.zeros(1)


def _extend(values: np.ndarray) -> np.ndarray:
    """A step series with its last value repeated to the end of the run."""
    return np.append(values, values[-1:], axis=0) if len(values) else values


def gpu_allocation(result: SimResult, colors: dict[str, str]) -> str:
    """GPU-equivalents held per tenant (stacked) against the GPUs on ready nodes."""
    fig, ax = _axes()
    s = result.samples
    hours = _hours(result)
    if s.time.size:
        stacked = _extend(s.tenant_allocated).T
        ax.stackplot(
            hours,
            stacked,
            labels=result.tenants,
            colors=[colors[t] for t in result.tenants],
            step="post",
            alpha=0.9,
        )
        ax.step(
            hours,
            _extend(s.capacity),
            where="post",
            color="#1d2430",
            linewidth=1.2,
            label="GPUs (ready nodes)",
        )
    ax.set_xlabel("hours")
    ax.set_ylabel("GPUs")
    ax.set_xlim(0, max(hours[-1], 1e-6))
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=8, ncols=4, frameon=False)
    return _png(fig)


def utilisation(result: SimResult) -> str:
    """Allocation, compute and memory as % of the GPUs on ready nodes."""
    fig, ax = _axes(height=2.6)
    s = result.samples
    hours = _hours(result)
    if s.time.size:
        capacity = np.maximum(_extend(s.capacity), 1e-9)
        for values, label, color in (
            (s.allocated, "allocated", "#2f5fb3"),
            (s.compute, "compute", "#59a14f"),
            (s.memory, "memory", "#e15759"),
        ):
            ax.step(
                hours, 100 * _extend(values) / capacity, where="post", label=label, color=color, linewidth=1.1
            )
    ax.set_ylim(0, 105)
    ax.set_xlim(0, max(hours[-1], 1e-6))
    ax.set_xlabel("hours")
    ax.set_ylabel("% of GPUs")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.24), fontsize=8, frameon=False, ncols=3)
    return _png(fig)


def node_heatmap(result: SimResult, colors: dict[str, str], *, bins: int = 240) -> str:
    """One row per GPU, grouped by node: the tenant holding most of it in each time bin."""
    gpus = len(result.gpu_labels)
    height = min(9.0, 1.2 + gpus * 0.022)
    fig, ax = _axes(width=6.4, height=height)
    ax.grid(False)
    if gpus == 0:
        ax.text(0.5, 0.5, "no GPUs in the cluster", ha="center", va="center", transform=ax.transAxes)
        return _png(fig)
    edges, owner, fill = occupancy_grid(result, bins)
    rgb = np.ones((gpus, bins, 3))
    palette = np.array([to_rgb(colors[t]) for t in result.tenants]) if result.tenants else np.zeros((1, 3))
    held = owner >= 0
    alpha = 0.25 + 0.75 * fill[..., None]
    rgb[held] = (1 - alpha[held]) * 1.0 + alpha[held] * palette[owner[held]]
    ax.imshow(rgb, aspect="auto", interpolation="nearest", extent=(0, edges[-1] / HOUR, gpus, 0))
    boundaries = [i for i in range(1, gpus) if result.gpu_nodes[i] != result.gpu_nodes[i - 1]]
    for y in boundaries:
        ax.axhline(y, color="#ffffff", linewidth=0.6)
    starts = [0, *boundaries]
    step = max(1, len(starts) // 24)
    ax.set_yticks([s + 0.5 for s in starts[::step]])
    ax.set_yticklabels([result.nodes[result.gpu_nodes[s]] for s in starts[::step]], fontsize=6)
    ax.set_xlim(0, edges[-1] / HOUR)
    ax.set_xlabel("hours")
    return _png(fig)


def fair_share(result: SimResult, colors: dict[str, str]) -> str:
    """Each tenant's GPUs held (solid) against its weighted max-min fair share (dashed)."""
    fig, ax = _axes()
    s = result.samples
    hours = _hours(result)
    if s.time.size:
        fair = _extend(fair_shares(result))
        held = _extend(s.tenant_allocated)
        for i, tenant in enumerate(result.tenants):
            ax.step(
                hours, held[:, i], where="post", color=colors[tenant], linewidth=1.4, label=f"{tenant} held"
            )
            ax.step(
                hours,
                fair[:, i],
                where="post",
                color=colors[tenant],
                linewidth=1.0,
                linestyle="--",
                label=f"{tenant} fair",
            )
    ax.set_xlabel("hours")
    ax.set_ylabel("GPUs")
    ax.set_xlim(0, max(hours[-1], 1e-6))
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), fontsize=7, frameon=False, ncols=3)
    return _png(fig)


def wait_cdf(result: SimResult, colors: dict[str, str]) -> str:
    """Distribution of queue waits per tenant (jobs still waiting count their wait so far)."""
    fig, ax = _axes(height=2.8)
    for tenant in result.tenants:
        values = np.sort(np.array(waits((j for j in result.jobs if j.tenant == tenant), result.end))) / 60.0
        if values.size == 0:
            continue
        share = np.arange(1, values.size + 1) / values.size
        ax.step(
            np.maximum(values, 0.01), share, where="post", color=colors[tenant], label=tenant, linewidth=1.4
        )
    ax.set_xscale("log")
    ax.set_xlabel("queue wait (minutes, log scale)")
    ax.set_ylabel("share of jobs")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    return _png(fig)


def fragmentation(result: SimResult) -> str:
    """Unallocated and fragmented GPU share over time; shaded where GPU work was waiting."""
    fig, ax = _axes(height=2.8)
    s = result.samples
    hours = _hours(result)
    if s.time.size:
        capacity = np.maximum(_extend(s.capacity), 1e-9)
        free = np.maximum(_extend(s.capacity) - _extend(s.allocated), 0.0)
        waiting = _extend(s.waiting > 1e-9)
        top = 100.0
        ax.fill_between(
            hours, 0, top, where=waiting, step="post", color="#f4d8d6", alpha=0.6, label="GPU work waiting"
        )
        ax.step(
            hours, 100 * free / capacity, where="post", color="#2f5fb3", label="unallocated", linewidth=1.2
        )
        ax.step(
            hours,
            100 * _extend(s.fragmented) / capacity,
            where="post",
            color="#e15759",
            label="fragmented",
            linewidth=1.2,
        )
    ax.set_ylim(0, 100)
    ax.set_xlim(0, max(hours[-1], 1e-6))
    ax.set_xlabel("hours")
    ax.set_ylabel("% of GPUs")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=8, frameon=False, ncols=3)
    return _png(fig)


def alignment(result: SimResult) -> str:
    """Pod starts by modeled throughput factor (1.0 = aligned GPU and NIC)."""
    fig, ax = _axes(height=2.6)
    factors = np.array([b.factor for b in result.binds if b.aligned is not None])
    if factors.size:
        buckets = np.array([0.0, 0.55, 0.7, 0.95, 1.001])
        labels = ["< 0.55", "0.55-0.7", "0.7-0.95", "≥ 0.95"]
        counts, _ = np.histogram(factors, bins=buckets)
        ax.bar(labels, counts, color=["#b3261e", "#e15759", "#edc948", "#59a14f"])
        ax.set_ylabel("pod starts")
        ax.set_xlabel("modeled throughput factor")
    else:
        ax.text(
            0.5, 0.5, "no pod used GPUs and NICs together", ha="center", va="center", transform=ax.transAxes
        )
        ax.set_xticks([])
        ax.set_yticks([])
    return _png(fig)


def admissions(result: SimResult, colors: dict[str, str]) -> str:
    """Cumulative preemptions (by victim tenant, solid) and admissions (dotted)."""
    fig, ax = _axes(height=2.8)
    grid = np.linspace(0.0, max(result.end, 1e-6), 400)
    hours = grid / HOUR
    for tenant in result.tenants:
        victims = cumulative_counts((p.time for p in result.preemptions if p.tenant == tenant), grid)
        ax.plot(hours, victims, color=colors[tenant], label=f"{tenant} preempted", linewidth=1.4)
        if result.admissions:
            admitted = cumulative_counts((a.time for a in result.admissions if a.tenant == tenant), grid)
            ax.plot(
                hours,
                admitted,
                color=colors[tenant],
                linestyle=":",
                linewidth=1.2,
                label=f"{tenant} admitted",
            )
    ax.set_xlabel("hours")
    ax.set_ylabel("count (cumulative)")
    ax.set_xlim(0, hours[-1])
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize=7, frameon=False, ncols=3)
    return _png(fig)

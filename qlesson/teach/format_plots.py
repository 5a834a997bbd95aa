"""Lesson 08's figures: byte maps of two-level formats, the FP4 grid, the format Pareto plot, one block.

Every function returns a matplotlib ``Figure``; pass ``fig=`` to redraw in place (the widget does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from qlesson.quant import kquants, microscaling
from qlesson.quant.minifloat import E2M1_VALUES
from qlesson.teach.plots import COLORS, _figure

# (field, bytes, colour) for one block of each format, from the modules' own constants
FIELD_COLORS = {"scale": COLORS["per-group"], "sub-scales": COLORS["per-channel"], "codes": "#dfe7ec"}


def byte_fields(fmt: str) -> list[tuple[str, int, str]]:
    """The fields of one block of ``fmt`` in storage order: (name, bytes, kind).

    >>> [b for _, b, _ in byte_fields("Q4_K")], sum(b for _, b, _ in byte_fields("MXFP4"))
    ([2, 2, 12, 128], 17)
    """
    s = kquants.SUPER
    layouts = {
        "Q4_K": [("d fp16", 2, "scale"), ("dmin fp16", 2, "scale"), ("sc, m", 12, "sub-scales")]
        + [("256 x 4-bit q", s // 2, "codes")],
        "Q6_K": [("low 4 bits of q", s // 2, "codes"), ("high 2 bits", s // 4, "codes")]
        + [("16 x int8 sc", s // 16, "sub-scales"), ("d fp16", 2, "scale")],
        "MXFP4": [("E8M0 e", 1, "scale"), ("32 x FP4", microscaling.MX_BLOCK // 2, "codes")],
        "NVFP4": [("4 x E4M3", 4, "sub-scales"), ("64 x FP4", microscaling.NV_SUPER // 2, "codes")],
    }
    if fmt not in layouts:
        raise ValueError(f"no byte map for {fmt!r}; use one of {', '.join(layouts)}")
    return layouts[fmt]


def byte_map(fmts: Sequence[str] = ("Q4_K", "Q6_K", "MXFP4", "NVFP4"), *, fig: Figure | None = None) -> Figure:
    """One bar per format, one segment per field, as wide as its bytes, per 256 weights."""
    fig = _figure(fig, size=(10, 0.7 + 0.55 * len(fmts)))
    ax = fig.axes[0]
    for row, fmt in enumerate(fmts):
        elems = kquants.SUPER if fmt.endswith("_K") else (32 if fmt == "MXFP4" else 64)
        repeat = 256 // elems
        x = 0.0
        for i in range(repeat):
            for name, nbytes, kind in byte_fields(fmt):
                ax.add_patch(matplotlib.patches.Rectangle((x, -row), nbytes * 0.98, 0.8, color=FIELD_COLORS[kind]))
                if i == 0 and nbytes >= 12:
                    ax.text(x + nbytes / 2, -row + 0.4, name, ha="center", va="center", fontsize=7)
                x += nbytes
        ax.text(-2, -row + 0.4, f"{fmt}: {x:g} B", ha="right", va="center", fontsize=8)
    ax.set(xlim=(-42, 215), ylim=(-len(fmts) + 0.9, 0.9), yticks=[], xlabel="bytes per 256 weights")
    ax.set_title(
        "Where the bytes go: scales (yellow), small sub-scales (teal), codes (grey)\n"
        "NVFP4 as gguf lays it out; its fp32 tensor scale lies outside the blocks",
        fontsize=10,
    )
    return fig


def grids(*, fig: Figure | None = None) -> Figure:
    """int4's evenly spaced ticks against FP4 E2M1's uneven ones, both reaching 6."""
    fig = _figure(fig, size=(9, 1.9))
    ax = fig.axes[0]
    fp4 = np.concatenate([-E2M1_VALUES[::-1], E2M1_VALUES[1:]])
    int4 = np.arange(-7, 8) * 6 / 7
    for y, ticks, label, color in ((1, int4, "int4 x 6/7", COLORS["per-channel"]), (0, fp4, "FP4 E2M1", "#8d5a97")):
        ax.plot(ticks, np.full_like(ticks, y), "|", ms=18, mew=2, color=color)
        ax.text(-6.9, y + 0.32, f"{label}: {len(np.unique(ticks))} values", fontsize=8, color=color)
    for v in E2M1_VALUES[1:]:
        ax.text(v, -0.45, f"{v:g}", ha="center", fontsize=7)
    ax.set(xlim=(-7, 7), ylim=(-0.7, 1.6), yticks=[], xlabel="value / scale")
    ax.set_title("Same range, different ticks: FP4 is fine near 0 and coarse near the top")
    return fig


# the format families get colours of their own (teal, yellow, purple name granularities elsewhere)
FAMILY_COLORS = {"int4/int8 groups": "#3d5a80", "llama.cpp (Q*)": "#b5651d", "FP4/FP8 (MX, NV, FP8)": "#7b2cbf"}


def _kind(name: str) -> str:
    return (
        next(iter(FAMILY_COLORS))
        if name.startswith("int")
        else ("llama.cpp (Q*)" if name.startswith("Q") else "FP4/FP8 (MX, NV, FP8)")
    )


def _spread_labels(ax: Any, pts: list[tuple[float, float, str]], gap: float, log: bool) -> None:
    """Label points; those below 5.2 bits in one column at x = 5.4, at least ``gap`` apart (log10 units if ``log``),
    spread toward the better end (up for SQNR, down for 1 - cosine), with a thin line to each point."""
    f = np.log10 if log else (lambda v: v)
    inv = (lambda v: 10**v) if log else (lambda v: v)
    step = -gap if log else gap
    low = sorted((p for p in pts if p[0] < 5.2), key=lambda p: f(p[1]), reverse=log)
    at = None
    for x, y, name in low:
        at = f(y) if at is None else (min(f(y), at + step) if log else max(f(y), at + step))
        ax.annotate(
            name,
            (x, y),
            xytext=(5.4, inv(at)),
            fontsize=7,
            va="center",
            arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "#aaaaaa"},
        )
    high = [p for p in pts if p[0] >= 5.2]
    for x, y, name in high:  # two formats at the same bits (Q6_K and Q6_K search): the upper label up, the other down
        twins = [o for o in high if o[0] == x and o[2] != name]
        dy = 0 if not twins else (4 if all(y >= o[1] for o in twins) else -4)
        ax.annotate(name, (x, y), xytext=(5, dy), textcoords="offset points", fontsize=7, va="center")


def format_pareto(
    rows: Sequence[Mapping[str, Any]], y: str = "SQNR dB", front: Sequence[str] = (), *, fig: Figure | None = None
) -> Figure:
    """Left: ``y`` against bits per weight; right: 1 - mean cosine of the embeddings (if the rows have it).

    One labelled point per format, coloured by family (a legend says which); ``front`` joined by a line.
    """
    from matplotlib.lines import Line2D

    panels = [(y, False)] + ([("1 - mean cosine", True)] if "mean cosine" in rows[0] else [])
    fig = _figure(fig, ncols=len(panels), size=(11, 4.6))
    for ax, (key, log) in zip(fig.axes, panels, strict=True):
        value = (lambda r: 1 - r["mean cosine"]) if key == "1 - mean cosine" else (lambda r, k=key: r[k])
        for r in rows:
            ax.plot(r["bits per weight"], value(r), "o", color=FAMILY_COLORS[_kind(r["format"])], ms=5)
        vals = [value(r) for r in rows]
        gap = 0.09 if log else 0.042 * (max(vals) - min(vals))
        _spread_labels(ax, [(r["bits per weight"], value(r), r["format"]) for r in rows], gap, log)
        pts = sorted((r["bits per weight"], value(r)) for r in rows if r["format"] in front)
        handles = [Line2D([], [], marker="o", ls="", color=c, label=k) for k, c in FAMILY_COLORS.items()]
        if pts and not log:
            (line,) = ax.plot(*zip(*pts, strict=True), "-", color="black", lw=0.8, alpha=0.5)
            line.set_label("best per bit (measured, on the means)")
            handles.append(line)
        ax.legend(handles=handles, fontsize=7, frameon=False, loc="lower right" if not log else "upper right")
        ax.set(xlabel="bits per weight (codes + every scale)", ylabel=key, xlim=(3.8, 9.4))
        if log:
            ax.set_yscale("log")
        ax.set_title(f"{key}: {'lower' if log else 'higher'} is better", fontsize=10)
    return fig


def block(values: np.ndarray, reconstructed: np.ndarray, title: str, *, fig: Figure | None = None) -> Figure:
    """One block of weights and its reconstruction, weight by weight."""
    fig = _figure(fig, size=(8, 2.8))
    ax = fig.axes[0]
    idx = np.arange(len(values))
    ax.vlines(idx, 0, values, color=COLORS["original"], lw=2, label="weight")
    ax.plot(idx, reconstructed, "_", ms=10, mew=2, color=COLORS["per-tensor"], label="stored value")
    ax.axhline(0, color="#999999", lw=0.5)
    ax.set(xlabel="position in the row", ylabel="value")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, frameon=False, ncol=2)
    return fig

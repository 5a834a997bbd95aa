"""Figures for the lessons. One colour per method everywhere in the course.

Every function returns a matplotlib ``Figure``. Pass ``fig=`` to redraw an existing figure
in place (the widgets do); without it a new pyplot figure is made, which Jupyter shows.
Importing this module imports matplotlib; ``import qlesson`` alone does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
import torch
from matplotlib.figure import Figure

from qlesson.quant.granularity import Granularity, PerChannel, PerGroup, PerTensor, method_name
from qlesson.quant.metrics import channel_errors
from qlesson.quant.quantize import fake_quantize, qrange
from qlesson.teach.ruler import ruler_for

COLORS = {
    "original": "#30343f",
    "per-tensor": "#d1495b",
    "per-channel": "#00798c",
    "per-group": "#edae49",
    "per-token": "#66a182",
    "smoothed": "#8d5a97",
    "per-block": "#3d5a80",
}
LAYER_COLORS = dict(
    zip(
        ("query", "key", "value", "attention output", "intermediate", "output", "pooler"),
        # blues, purples and browns: never the red, teal, yellow or green that mean a method
        ("#4e79a7", "#a0cbe8", "#b07aa1", "#d4a6c8", "#9d7660", "#5f4b3a", "#bab0ac"),
        strict=True,
    )
)


def plain_log_ticks(ax: Any, axis: str = "y") -> None:
    """Label a log axis 0.01, 0.1, 1, 10, 60 rather than 10^-2 or 6x10^1."""
    from matplotlib.ticker import FuncFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    # minor ticks: label 2x and 5x a power of ten, so a range inside one decade still reads
    target.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "25" else ""))


def method_color(granularity: Granularity) -> str:
    return COLORS[method_name(granularity).split(" ")[0]]


def _figure(fig: Figure | None, ncols: int = 1, nrows: int = 1, size: tuple[float, float] = (8, 3.2)) -> Figure:
    if fig is None:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=size, layout="constrained")
    else:  # a widget's figure, redrawn in place: fixed margins (a constrained layout is slow to re-solve)
        fig.clear()
        fig.subplots_adjust(left=0.1, right=0.97, bottom=0.22, top=0.88, wspace=0.3)
    fig.subplots(nrows, ncols, squeeze=False)
    return fig


def ruler(
    values: Sequence[float] | torch.Tensor,
    bits: int,
    *,
    symmetric: bool = True,
    signed: bool = True,
    scale: float | None = None,
    zero_point: int | None = None,
    fig: Figure | None = None,
) -> Figure:
    """Values above a number line, the ruler's ticks on it, an arrow to the tick each rounds to."""
    fig = _figure(fig, size=(8, 2.6))
    ax = fig.axes[0]
    x = torch.as_tensor(values, dtype=torch.float64).flatten()
    s, zp = ruler_for(x.float(), bits, symmetric=symmetric, signed=signed, scale=scale, zero_point=zero_point)
    qmin, qmax = qrange(bits, symmetric=symmetric, signed=signed)
    lo, hi = (qmin - zp) * s, (qmax - zp) * s
    span = max(hi - lo, float(x.max() - x.min()), 1e-12)
    left, right = min(lo, float(x.min())) - 0.05 * span, max(hi, float(x.max())) + 0.05 * span
    ax.axhline(0, color="0.6", lw=1)
    if qmax - qmin <= 64:
        ticks = (np.arange(qmin, qmax + 1) - zp) * s
        ax.vlines(ticks, -0.15, 0.15, color=COLORS["per-channel"], lw=1)
    if scale is not None:  # a fixed ruler can clip; one fitted to the values cannot
        clip_lo, clip_hi = lo - s / 2, hi + s / 2  # past half a tick beyond the last tick, the clamp changes the code
        left, right = min(left, clip_lo - 0.02 * span), max(right, clip_hi + 0.02 * span)
        ax.axvspan(left, clip_lo, color=COLORS["per-tensor"], alpha=0.2)
        ax.axvspan(clip_hi, right, color=COLORS["per-tensor"], alpha=0.2, label="clipped: the clamp changes the code")
        ax.axvline(clip_lo, color=COLORS["per-tensor"], ls="--", lw=1)
        ax.axvline(clip_hi, color=COLORS["per-tensor"], ls="--", lw=1)
    q = torch.clamp(torch.round(x / s) + zp, qmin, qmax)
    x_hat = (q - zp) * s
    for v, r in zip(x.tolist(), x_hat.tolist(), strict=True):
        ax.annotate("", xy=(r, 0.12), xytext=(v, 0.8), arrowprops={"arrowstyle": "->", "color": "0.45"})
    ax.plot(x, np.full(len(x), 0.85), "o", color=COLORS["original"], label="value x")
    ax.plot(x_hat, np.zeros(len(x)), "D", color=COLORS["per-channel"], label="x_hat on a tick")
    ax.set(xlim=(left, right), ylim=(-0.4, 1.2), yticks=[], xlabel="value (weight units)")
    ax.set_title(f"{bits}-bit ruler: {qmax - qmin + 1} ticks, scale {s:.4f}, zero point {zp}")
    ax.legend(loc="upper left", fontsize=8, ncol=3, frameon=False)
    return fig


def rows_reconstruction(
    x: torch.Tensor,
    bits: int,
    granularities: Sequence[Granularity] = (PerTensor(), PerChannel(0)),
    *,
    symmetric: bool = True,
    fig: Figure | None = None,
) -> Figure:
    """One panel per row: original values and each method's reconstruction."""
    fig = _figure(fig, ncols=x.shape[0], size=(4 * x.shape[0], 3))
    recons = {method_name(g): fake_quantize(x, bits, granularity=g, symmetric=symmetric) for g in granularities}
    idx = np.arange(x.shape[1])
    width = 0.8 / (len(recons) + 1)
    for r, ax in enumerate(fig.axes):
        ax.bar(idx, x[r].numpy(), width, color=COLORS["original"], label="original")
        for k, (name, rec) in enumerate(recons.items(), start=1):
            ax.bar(idx + k * width, rec[r].numpy(), width, color=COLORS[name.split(" ")[0]], label=name)
        ax.axhline(0, color="0.7", lw=0.8)
        ax.set(
            title=f"Row {chr(ord('A') + r)} ({bits}-bit)" if x.shape[0] <= 26 else f"row {r} ({bits}-bit)",
            xlabel="column",
            ylabel="weight value",
            xticks=idx + width * len(recons) / 2,
        )
        ax.set_xticklabels([str(i) for i in idx])
    fig.axes[0].legend(fontsize=8, frameon=False)
    return fig


def layer_spread(weights: Mapping[str, torch.Tensor], *, fig: Figure | None = None) -> Figure:
    """Loudest over median output-channel absmax of every layer, in model order, coloured by layer type."""
    from qlesson.teach.models import layer_type_of_short

    fig = _figure(fig, size=(8, 3.4))
    ax = fig.axes[0]
    names = list(weights)
    ratios = []
    for name in names:
        a = weights[name].abs().amax(1)
        ratios.append(float(a.max() / a.median()))
    kinds = [layer_type_of_short(n) for n in names]
    ax.bar(range(len(names)), ratios, color=[LAYER_COLORS[k] for k in kinds])
    for kind, color in LAYER_COLORS.items():
        if kind in kinds:
            ax.bar([0], [0], color=color, label=kind)
    ax.set(yscale="log", xlabel="Linear layer (model order)", ylabel="loudest / median channel absmax")
    ax.set_ylim(top=4 * max(ratios))  # room for the legend above the bars
    plain_log_ticks(ax)
    ax.set_title("How unequal are the output channels?")
    ax.legend(fontsize=7, ncol=4, frameon=False, loc="upper center")
    return fig


def erased_rows(w: torch.Tensor, bits: int, name: str = "", *, fig: Figure | None = None) -> Figure:
    """Left: the output channels' absmax, sorted, with the one per-tensor absmax and half of its int-``bits``
    tick (rows at or below it round to 0). Right: every output channel's MAE, per-tensor and per-channel."""
    fig = _figure(fig, ncols=2, size=(11, 3.6))
    ax, ax2 = fig.axes
    a = w.abs().amax(1).sort(descending=True).values
    half = float(a.max()) / (2 ** (bits - 1) - 1) / 2
    below = int((a <= half).sum())
    ax.plot(a.numpy(), color="0.2", label=name)
    ax.axhline(float(a.max()), color=COLORS["per-tensor"], ls="--", label="the one per-tensor absmax")
    ax.axhline(half, color="0.3", ls=":", label=f"half an int{bits} tick: {below} of {len(a)} rows at or below")
    ax.set(xlabel="output channel (sorted)", ylabel="channel absmax (weight units)", yscale="log")
    plain_log_ticks(ax)
    ax.set_title(f"{name}: channel absmax, sorted")
    ax.legend(fontsize=8, frameon=False)
    for g in (PerTensor(), PerChannel(0)):
        mae = channel_errors(w, fake_quantize(w, bits, granularity=g)).mae
        ax2.plot(mae.numpy(), lw=0.9, color=method_color(g), label=f"{method_name(g)} (mean {float(mae.mean()):.4f})")
    ax2.set(yscale="log", xlabel="output channel", ylabel="MAE (weight units)")
    plain_log_ticks(ax2)
    ax2.set_title(f"{name} int{bits}: error of every output channel")
    ax2.legend(fontsize=8, frameon=False)
    return fig


def pareto(
    points: Sequence[Mapping[str, Any]],
    *,
    highlight: Mapping[str, Any] | None = None,
    fig: Figure | None = None,
    db: bool = False,
) -> Figure:
    """Error against bits per weight; one marker per (method, bits), lines join one method.

    ``db=True`` draws SQNR in dB (``-20 log10`` of the relative RMSE, higher is better) instead of
    the relative RMSE on a log axis. Group sizes get shades of one colour, darker for smaller
    groups, and a marker each.
    """
    fig = _figure(fig, size=(8, 4))
    ax = fig.axes[0]
    methods = list(dict.fromkeys(p["method"] for p in points))
    groups = [m for m in methods if m.startswith("per-group")]
    cmap = matplotlib.colormaps["YlOrBr"]
    shades = dict(zip(groups, (cmap(x) for x in np.linspace(0.35, 0.95, max(len(groups), 1))), strict=False))
    markers = dict(zip(groups, "osD^vP<>", strict=False))

    def y(p: Mapping[str, Any]) -> float:
        r = p["rmse / rms"]
        return -20 * float(np.log10(r)) if db else r

    for method in methods:
        pts = sorted((p for p in points if p["method"] == method), key=lambda p: p["bits per weight"])
        ax.plot(
            [p["bits per weight"] for p in pts],
            [y(p) for p in pts],
            f"{markers.get(method, 'o')}-",
            color=shades.get(method, COLORS[method.split(" ")[0]]),
            label=method,
        )
    if highlight:
        ax.plot(highlight["bits per weight"], y(highlight), "*", ms=16, color="black", label="you are here")
    ax.set(xlabel="bits per weight (payload + fp16 scales)")
    if db:
        ax.set(ylabel="SQNR dB (higher is better)")
        ax.set_title("Error against storage: upper left is better")
    else:
        ax.set(yscale="log", ylabel="relative RMSE (rmse / rms of weights)")
        plain_log_ticks(ax)
        ax.set_title("Error against storage: lower left is better")
    ax.legend(fontsize=7, ncol=2, frameon=False)
    return fig


def pareto_zoom(
    points: Sequence[Mapping[str, Any]],
    labels: Mapping[tuple[str, int], str],
    *,
    xlim: tuple[float, float],
    fig: Figure | None = None,
) -> Figure:
    """SQNR in dB against bits per weight for the points ``labels`` names (``(method, bits) -> text``),
    each labelled, on ``xlim`` bits per weight (plus room on the right for the labels)."""
    fig = _figure(fig, size=(6, 4))
    zoom = fig.axes[0]
    groups = list(dict.fromkeys(p["method"] for p in points if p["method"].startswith("per-group")))
    cmap = matplotlib.colormaps["YlOrBr"]
    shades = dict(zip(groups, (cmap(x) for x in np.linspace(0.35, 0.95, max(len(groups), 1))), strict=False))
    markers = dict(zip(groups, "osD^vP<>", strict=False))

    def db(p: Mapping[str, Any]) -> float:
        return -20 * float(np.log10(p["rmse / rms"]))

    named = [p for p in points if (p["method"], p["bits"]) in labels]
    for p in named:
        m, x, y = p["method"], p["bits per weight"], db(p)
        zoom.plot(x, y, markers.get(m, "o"), ms=8, color=shades.get(m, COLORS[m.split(" ")[0]]))
        near = [db(o) - y for o in named if o is not p and abs(o["bits per weight"] - x) < 0.05]
        dy = 5 if any(-0.5 < d < 0 for d in near) else -10 if any(0 < d < 0.5 for d in near) else -3
        zoom.annotate(labels[(m, p["bits"])], (x, y), xytext=(7, dy), textcoords="offset points")
    ys = [db(p) for p in named]
    zoom.set(xlim=(xlim[0], xlim[1] + 0.6 * (xlim[1] - xlim[0])), ylim=(min(ys) - 1, max(ys) + 1))
    zoom.set(xlabel="bits per weight (payload + fp16 scales)", ylabel="SQNR dB (higher is better)")
    zoom.set_title("Error against storage: upper left is better")
    return fig


def block_bytes(raw_block: np.ndarray, fmt: str, *, fig: Figure | None = None) -> Figure:
    """One llama.cpp block drawn byte by byte: the fp16 scale(s), then the packed codes."""
    from qlesson.quant import formats

    fig = _figure(fig, size=(11, 1.9))
    ax = fig.axes[0]
    raw = np.asarray(raw_block, dtype=np.uint8).reshape(-1)
    header = 2 if fmt in ("Q8_0", "Q4_0") else 4
    _, codes = formats.codes(raw, fmt)
    for i, byte in enumerate(raw.tolist()):
        is_head = i < header
        color = COLORS["per-group"] if is_head else "#dfe7ec"
        ax.add_patch(matplotlib.patches.Rectangle((i, 0), 0.95, 1, color=color))
        if is_head:
            label = "d" if i < 2 else "m"
        elif fmt == "Q8_0":
            label = f"{int(codes[0, i - header])}"
        else:
            j = i - header
            label = f"{int(codes[0, j])}\n{int(codes[0, j + 16])}"
        ax.text(i + 0.47, 0.5, label, ha="center", va="center", fontsize=6 if fmt == "Q8_0" else 7)
        ax.text(i + 0.47, -0.25, f"{byte:02x}", ha="center", va="center", fontsize=6, family="monospace")
    ax.set(xlim=(0, len(raw)), ylim=(-0.5, 1.05), yticks=[], xlabel="byte offset in the block")
    what = "int8 code per byte" if fmt == "Q8_0" else "low nibble = code j, high nibble = code j+16"
    ax.set_title(f"{fmt}: {len(raw)} bytes for 32 weights ({what}); hex below")
    return fig


def activation_features(acts: torch.Tensor, name: str, *, fig: Figure | None = None) -> Figure:
    """Absmax of every input feature over all tokens: the outlier features stand out."""
    fig = _figure(fig, size=(9, 3.2))
    ax = fig.axes[0]
    absmax = acts.abs().amax(0)
    ax.plot(absmax.numpy(), lw=0.8, color=COLORS["original"])
    top = absmax.topk(3).indices.tolist()
    ax.plot(top, absmax[top].numpy(), "o", color=COLORS["per-tensor"], label=f"largest features {top}")
    ax.axhline(float(absmax.median()), color=COLORS["per-channel"], ls="--", label="median feature")
    ax.set(xlabel="input feature (channel)", ylabel="absmax over tokens")
    ax.set_title(f"{name}: activation magnitude per feature ({acts.shape[0]} tokens)")
    ax.legend(fontsize=8, frameon=False)
    return fig


def token_feature_map(
    acts: torch.Tensor,
    labels: Sequence[tuple[int, int, str]],
    name: str,
    sentences: int = 3,
    *,
    fig: Figure | None = None,
) -> Figure:
    """|x| of every feature on every token of the first ``sentences`` sentences (log colour scale).

    A token outlier is a bright column at one token; an outlier feature is a bright row across
    many tokens.
    """
    from matplotlib.colors import LogNorm

    rows = [i for i, (s, _, _) in enumerate(labels) if s < sentences]
    fig = _figure(fig, size=(10, 3.6))
    ax = fig.axes[0]
    image = ax.imshow(acts[rows].abs().T.numpy() + 1e-3, aspect="auto", cmap="magma", norm=LogNorm(1e-2, 30))
    ax.set_xticks(range(len(rows)), [labels[i][2] for i in rows], rotation=90, fontsize=7)
    ax.set(ylabel="feature", title=f"{name}: |x| per token and feature (first {sentences} sentences)")
    fig.colorbar(image, ax=ax, label="|x| (log scale)", pad=0.01)
    return fig


# Lesson 06's methods get their own colours: red, teal, yellow and green mean a granularity elsewhere.
GEMM_LINES = {
    "fp32 F.linear": ("#30343f", "-"),
    "bfloat16 F.linear": ("#8d99ae", "--"),
    "float16 F.linear": ("#8d99ae", "--"),
    "dequantize per-channel": ("#9c6644", "-"),
    "per-channel scale after GEMM": ("#e09f3e", "-"),
    "scale after GEMM (preallocated": ("#c9a227", "--"),
    "fused int8 weight-only per-channel, bf16": ("#3d5a80", "-"),
    "fused int4 weight-only group 128": ("#7b2cbf", "-"),
    "W8A8": ("#5c946e", "-"),
}
GEMM_LABELS = {  # legend text where a row's name leans on the row above it in the table
    "per-channel scale after GEMM": "scale after GEMM, fresh fp32 copy",
    "scale after GEMM (preallocated": "scale after GEMM (preallocated fp32 buffer)",
}


def gemm_times(rows: Sequence[Any], *, fig: Figure | None = None, rates: bool = True) -> Figure:
    """Median time against M for the key methods (log-log), and at M = 1 the rate each reads its weight.

    The right panel leaves out the scale multiply alone (it reads no weight); its labels are the
    methods' full names. ``rates=False`` draws the times alone, as markers (no M between those timed).
    """
    fig = _figure(fig, ncols=2 if rates else 1, size=(15, 5.8) if rates else (9, 5))
    ax = fig.axes[0]
    for prefix, (color, style) in GEMM_LINES.items():
        pts = sorted((r.m, r.median_ms) for r in rows if r.method.startswith(prefix) and r.median_ms == r.median_ms)
        if pts:
            ls = style if rates else "none"
            ax.plot(*zip(*pts, strict=True), marker="o", ls=ls, color=color, label=GEMM_LABELS.get(prefix, prefix))
    ax.set(xscale="log", yscale="log", xlabel="batch M (tokens)", ylabel="median time (ms)")
    ms = " and ".join(str(m) for m in sorted({r.m for r in rows}))
    ax.set_title(f"Median time of one [M, K] x [K, N] product at M = {ms} (log-log)")
    ax.legend(fontsize=7 if rates else 8, frameon=False)
    if not rates:
        return fig
    ax2 = fig.axes[1]
    m1 = [
        r
        for r in rows
        if r.m == 1
        and r.median_ms == r.median_ms
        and r.gb_per_s > 0
        and not r.method.startswith("per-channel scale alone")
    ]
    ax2.barh(range(len(m1)), [r.gb_per_s for r in m1], color="#9fb3c8")
    ax2.set_yticks(range(len(m1)))
    ax2.set_yticklabels([r.method for r in m1], fontsize=7)
    ax2.invert_yaxis()
    ax2.set(xlabel="stored weight bytes consumed per second (GB/s)")
    ax2.set_title("M = 1: how fast each method reads its weight bytes")
    return fig


def bandwidth_lines(fig: Figure, copy_gb_s: float, read_gb_s: float) -> Figure:
    """Add the measured memory bandwidth (the roofline at M = 1) to :func:`gemm_times`' right panel."""
    ax = fig.axes[1]
    ax.axvline(read_gb_s, color="#6c757d", ls="--", label=f"roofline read bandwidth {read_gb_s:.1f} GB/s")
    ax.axvline(copy_gb_s, color="#6c757d", ls=":", label=f"copy bandwidth {copy_gb_s:.1f} GB/s")
    ax.legend(fontsize=7, frameon=False, loc="center right")
    return fig


__all__ = [
    "COLORS",
    "LAYER_COLORS",
    "PerGroup",
    "activation_features",
    "block_bytes",
    "bandwidth_lines",
    "erased_rows",
    "gemm_times",
    "layer_spread",
    "method_name",
    "pareto",
    "rows_reconstruction",
    "ruler",
]

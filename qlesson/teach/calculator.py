"""The per-tensor vs per-channel calculator (lesson 07), as plain functions.

Paste channels one per line or separated by semicolons, values by commas or spaces:

>>> chans = parse_channels("0.1, -0.2 0.3; 1.0 2.0 -4.0")
>>> [c.tolist() for c in chans]
[[0.10000000149011612, -0.20000000298023224, 0.30000001192092896], [1.0, 2.0, -4.0]]
>>> r = compare(chans, bits=8)
>>> [round(row["per-channel scale"], 5) for row in r.channels]
[0.00236, 0.0315]

Channels may have different lengths: every method here treats a channel on its own, and
per-tensor pools all values. The memory estimate follows the source calculator: the payload
is ``elements * bits / 8`` bytes plus 8 bytes of metadata per scale (an fp32 scale and an
int32 zero point).
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass, field
from typing import Any

import torch

from qlesson.quant.metrics import errors
from qlesson.quant.quantize import qrange, quantize

EXAMPLE = "\n".join(
    [
        "0.12, -0.33, 0.48, -0.05, 0.91",
        "1.20, 0.95, 1.44, 1.10, 0.88",
        "-1.70, -1.22, -0.94, -1.43, -1.11",
        "0.03, 0.08, -0.02, 0.11, -0.06",
    ]
)
METADATA_BYTES_PER_SCALE = 8  # fp32 scale + int32 zero point, as in the source calculator


FLOAT32_MAX = float(torch.finfo(torch.float32).max)


def parse_channels(text: str) -> list[torch.Tensor]:
    """Channels from text; a ValueError says exactly what is wrong and how to fix it.

    Channels are separated by line ends (``\\n``, ``\\r\\n`` or a lone ``\\r``) or ``;``; values by
    commas or spaces. A comma between two digits (``0,5``) is refused rather than guessed:
    it may be a decimal comma.

    >>> [c.tolist() for c in parse_channels("1, 2\\r-3 4")]
    [[1.0, 2.0], [-3.0, 4.0]]
    """
    if text is None or not re.sub(r"[;\s,]", "", str(text)):
        raise ValueError("the box is empty: paste at least two values, one channel per line (or separated by ';')")
    lines = [part.strip() for part in re.split(r"[;\r\n]", str(text)) if part.strip()]
    channels = []
    for i, line in enumerate(lines):  # channels count from 0, as in every lesson
        for word in line.split():
            if re.search(r"\d,\d", word):
                raise ValueError(
                    f"channel {i}: {word!r} has a comma between digits; write decimals with a dot (0.5) and "
                    "separate values with ', ' or spaces"
                )
        tokens = [t for t in re.split(r"[,\s]+", line) if t]
        values = []
        for tok in tokens:
            try:
                v = float(tok)
            except ValueError:
                raise ValueError(f"channel {i}: {tok!r} is not a number; use digits like -0.25 or 1e-3") from None
            if v != v or v in (float("inf"), float("-inf")):
                raise ValueError(f"channel {i}: {tok!r} is not a finite number; remove NaN and inf values")
            if abs(v) > FLOAT32_MAX:
                raise ValueError(
                    f"channel {i}: {tok!r} is beyond float32 (largest {FLOAT32_MAX:.3g}); use smaller values"
                )
            values.append(v)
        if not values:
            raise ValueError(f"channel {i} has no values; remove the empty channel")
        channels.append(torch.tensor(values, dtype=torch.float32))
    if sum(c.numel() for c in channels) < 2:
        raise ValueError("only one value: paste at least two values to compare a shared scale with per-channel ones")
    return channels


@dataclass
class Result:
    bits: int
    signed: bool
    symmetric: bool
    channels: list[dict[str, Any]]
    overall: dict[str, dict[str, float]]
    memory: dict[str, int]
    originals: list[list[float]] = field(repr=False, default_factory=list)
    per_tensor: list[list[float]] = field(repr=False, default_factory=list)
    per_channel: list[list[float]] = field(repr=False, default_factory=list)


def _clipped(x: torch.Tensor, scale: float, zp: int, qmin: int, qmax: int) -> int:
    raw = torch.round(x / scale) + zp
    return int(((raw < qmin) | (raw > qmax)).sum())


def compare(channels: list[torch.Tensor], bits: int = 8, *, signed: bool = True, symmetric: bool = True) -> Result:
    """Per-tensor against per-channel quantization of ``channels``: scales, zero points, errors, bytes."""
    qmin, qmax = qrange(bits, symmetric=symmetric, signed=signed)
    pooled = torch.cat(channels)
    pt = quantize(pooled, bits, symmetric=symmetric, signed=signed)
    pt_scale, pt_zp = float(pt.scale), int(pt.zero_point)
    pt_hat = torch.split(pt.dequantize(), [c.numel() for c in channels])
    rows, pc_hats = [], []
    for i, x in enumerate(channels):  # channels count from 0, as in every lesson
        pc = quantize(x, bits, symmetric=symmetric, signed=signed)
        pc_hat = pc.dequantize()
        pc_hats.append(pc_hat)
        e_t, e_c = errors(x, pt_hat[i]), errors(x, pc_hat)
        rows.append(
            {
                "channel": i,
                "values": x.numel(),
                "min": float(x.min()),
                "max": float(x.max()),
                "per-tensor scale": pt_scale,
                "per-tensor zero point": pt_zp,
                "per-tensor clipped": _clipped(x, pt_scale, pt_zp, qmin, qmax),
                "per-tensor MAE": e_t.mae,
                "per-tensor RMSE": e_t.rmse,
                "per-tensor max error": e_t.max_abs,
                "per-channel scale": float(pc.scale),
                "per-channel zero point": int(pc.zero_point),
                "per-channel clipped": _clipped(x, float(pc.scale), int(pc.zero_point), qmin, qmax),
                "per-channel MAE": e_c.mae,
                "per-channel RMSE": e_c.rmse,
                "per-channel max error": e_c.max_abs,
            }
        )
    overall = {
        "per-tensor": _as_dict(errors(pooled, torch.cat(pt_hat))),
        "per-channel": _as_dict(errors(pooled, torch.cat(pc_hats))),
    }
    payload = (pooled.numel() * bits + 7) // 8
    memory = {
        "payload bytes": payload,
        "per-tensor total bytes": payload + METADATA_BYTES_PER_SCALE,
        "per-channel total bytes": payload + METADATA_BYTES_PER_SCALE * len(channels),
    }
    return Result(
        bits,
        signed,
        symmetric,
        rows,
        overall,
        memory,
        [c.tolist() for c in channels],
        [t.tolist() for t in pt_hat],
        [t.tolist() for t in pc_hats],
    )


def _as_dict(e: Any) -> dict[str, float]:
    return {"MAE": e.mae, "RMSE": e.rmse, "max error": e.max_abs}


def summary_csv(r: Result) -> str:
    """The per-channel table, overall errors and the memory estimate, as CSV text."""
    import csv

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(r.channels[0]))
    for row in r.channels:
        w.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in row.values()])
    w.writerow([])
    w.writerow(["overall", "MAE", "RMSE", "max error"])
    for method, vals in r.overall.items():
        w.writerow([method, *(f"{v:.6g}" for v in vals.values())])
    w.writerow([])
    for k, v in r.memory.items():
        w.writerow([k, v])
    return buf.getvalue()


def plot(r: Result, fig: Any = None, max_panels: int = 8) -> Any:
    """The error ``x_hat - x`` of every value, per-tensor against per-channel, one panel per channel.

    Errors rather than values: at 8 bits both reconstructions sit on top of the original and
    would hide each other. With more than ``max_panels`` channels, the panels show those with
    the largest per-tensor MAE (the title says so), so a pasted layer stays readable and fast.
    """
    from qlesson.teach.plots import COLORS

    n = len(r.originals)
    shown = (
        sorted(range(n), key=lambda i: -r.channels[i]["per-tensor MAE"])[:max_panels] if n > max_panels else range(n)
    )
    shown = list(shown)
    if fig is None:  # a pyplot figure, so Jupyter shows it; widgets pass their own Figure
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(3.2 * len(shown), 2.8), layout="constrained")
    fig.clear()
    axes = fig.subplots(1, len(shown), squeeze=False)[0]
    for ax, i in zip(axes, shown, strict=True):
        x = r.originals[i]
        idx = range(len(x))
        ax.axhline(0.0, color=COLORS["original"], lw=0.8)
        ax.plot(
            idx,
            [h - v for h, v in zip(r.per_tensor[i], x, strict=True)],
            "x",
            ms=7,
            color=COLORS["per-tensor"],
            label="per-tensor",
        )
        ax.plot(
            idx,
            [h - v for h, v in zip(r.per_channel[i], x, strict=True)],
            "+",
            ms=9,
            color=COLORS["per-channel"],
            label="per-channel",
        )
        ax.set(title=f"channel {i}", xlabel="value index", ylabel="error x_hat - x")
    axes[0].legend(fontsize=7, frameon=False)
    if n > max_panels:
        fig.suptitle(f"the {max_panels} channels with the largest per-tensor MAE, of {n}", fontsize=9)
    return fig


def pdf_bytes(r: Result) -> bytes:
    """A two-page PDF: the plot, then the table as text."""
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    from qlesson.teach.report import table

    buf = io.BytesIO()
    with PdfPages(buf) as pdf:
        pdf.savefig(plot(r, Figure(figsize=(3.2 * len(r.originals), 2.8), layout="constrained")))
        page = Figure(figsize=(11, 8.5))
        cols = [
            "channel",
            "per-tensor scale",
            "per-tensor zero point",
            "per-tensor MAE",
            "per-channel scale",
            "per-channel zero point",
            "per-channel MAE",
        ]
        text = table([{c: row[c] for c in cols} for row in r.channels], {c: ".5g" for c in cols})
        text += "\n\n" + "\n".join(f"{k}: {v}" for k, v in r.memory.items())
        page.text(0.02, 0.98, text, family="monospace", fontsize=7, va="top")
        pdf.savefig(page)
    return buf.getvalue()


def data_link(data: bytes, filename: str, mime: str, label: str) -> str:
    """An HTML download link carrying ``data`` inline (works in JupyterLab and Voila, no server)."""
    b64 = base64.b64encode(data).decode()
    return f'<a download="{filename}" href="data:{mime};base64,{b64}" class="ql-download">{label}</a>'

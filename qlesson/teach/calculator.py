"""The per-tensor vs per-channel calculator (lesson 07), as plain functions.

Paste channels one per line or separated by semicolons, values by commas or spaces:

>>> chans = parse_channels("0.1, -0.2 0.3; 1.0 2.0 -4.0")
>>> [c.tolist() for c in chans]
[[0.10000000149011612, -0.20000000298023224, 0.30000001192092896], [1.0, 2.0, -4.0]]
>>> r = compare(chans, bits=8)
>>> [round(row["per-channel scale"], 5) for row in r.channels]
[0.00236, 0.0315]

Channels may have different lengths: every method here treats a channel on its own, and
per-tensor pools all values. The memory estimate: the payload is ``elements * bits / 8``
bytes, plus per scale an fp32 scale (4 bytes) and, for an asymmetric ruler only, an int32 zero
point (4 bytes). A symmetric ruler's zero point is fixed (0, or ``2**(bits-1)`` unsigned), so
nothing is stored for it; the source calculator counts 8 bytes per scale either way.

>>> compare(chans, bits=8, symmetric=True).memory["per-channel total bytes"]  # 6 codes + 2 scales x 4
14
>>> compare(chans, bits=8, symmetric=False).memory["per-channel total bytes"]  # + 2 zero points x 4
22
"""

from __future__ import annotations

import base64
import contextlib
import io
import logging
import math
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from qlesson.quant._checks import magnitude_limit
from qlesson.quant.granularity import PerChannel
from qlesson.quant.metrics import channel_errors
from qlesson.quant.quantize import qrange, quantize

EXAMPLE = "\n".join(
    [
        "0.12, -0.33, 0.48, -0.05, 0.91",
        "1.20, 0.95, 1.44, 1.10, 0.88",
        "-1.70, -1.22, -0.94, -1.43, -1.11",
        "0.03, 0.08, -0.02, 0.11, -0.06",
    ]
)
SCALE_BYTES = 4  # an fp32 scale
ZERO_POINT_BYTES = 4  # an int32 zero point, stored only by an asymmetric ruler


def metadata_bytes_per_scale(symmetric: bool) -> int:
    """Bytes stored beside each scale's codes: the scale, plus the zero point if asymmetric.

    >>> metadata_bytes_per_scale(True), metadata_bytes_per_scale(False)
    (4, 8)
    """
    return SCALE_BYTES + (0 if symmetric else ZERO_POINT_BYTES)


def gelu_row(n: int = 64, seed: int = 0) -> str:
    """A row of ``n`` post-GELU activations as text to paste into the calculator (lesson 07).

    GELU of ``n`` standard-normal pre-activations, rounded to 4 decimals (far below an 8-bit tick).
    NumPy's generator and ``math.erf`` make the same digits on every machine:

    >>> gelu_row(4)
    '0.0692 -0.0591 0.4733 0.0568'
    """
    z = np.random.default_rng(seed).standard_normal(n)
    gelu = (0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in z)
    return " ".join(f"{round(g, 4) + 0.0:.4f}" for g in gelu)  # + 0.0: no "-0.0000"


LIMIT = magnitude_limit(torch.float32)  # values are float32: half its maximum keeps max - min finite
# "0,5" or "-1,25" between spaces: a decimal comma, or two values without a space? Not guessed.
_COMMA_DIGIT = re.compile(r",[0-9]")  # a cheap first look (a literal comma is fast to find): most text has ", "
_DECIMAL_COMMA = re.compile(r"(?<![^\s;])([+-]?\d+),(\d+)(?=,?(?:\s|;|$))")
# "1,000.5" or "1,000,000": a thousands separator, which would split into 1, 0.5 or 1, 0, 0
_THOUSANDS = re.compile(r"(?<![^\s;])[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?=,?(?:\s|;|$))")
# every line end str.splitlines() knows (U+2028, NEL, form feed, ...), and ';'
# "1.000,5" or "-12.345.678,9": '.' between thousands and a decimal comma (German, Italian, ...), which would
# split into 1.000 and 5
_EUROPEAN = re.compile(r"(?<![^\s;])[+-]?\d{1,3}(?:\.\d{3})+,\d+(?=,?(?:\s|;|$))")
_CHANNEL_BREAK = re.compile(r"[;\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_MINUS = str.maketrans({"\u2212": "-", "\ufe63": "-", "\uff0d": "-"})  # typographic minus signs read as '-'


def parse_channels(text: str) -> list[torch.Tensor]:
    """Channels from text; a ValueError says exactly what is wrong and how to fix it.

    Channels are separated by line ends (``\\n``, ``\\r\\n`` or a lone ``\\r``) or ``;``,
    values by commas or white space. A number written with a decimal comma is refused:

    >>> parse_channels("0,5; 1,5")
    Traceback (most recent call last):
    ...
    ValueError: channel 0: '0,5' could be the decimal number 0.5 or the two values 0 and 5; ...
    """
    if text is None or not str(text).strip(string.whitespace + ";,"):
        raise ValueError("the box is empty: paste at least two values, one channel per line (or separated by ';')")
    lines = [part.strip() for part in _CHANNEL_BREAK.split(str(text).translate(_MINUS)) if part.strip()]
    channels = [_parse_line(i, line) for i, line in enumerate(lines)]  # from 0, as in every lesson
    if sum(c.numel() for c in channels) < 2:
        raise ValueError("only one value: paste at least two values to compare a shared scale with per-channel ones")
    return channels


def _parse_line(i: int, line: str) -> torch.Tensor:
    """One channel's float32 values, or a ValueError naming the token that is wrong."""
    t = _THOUSANDS.search(line) if _COMMA_DIGIT.search(line) else None
    if t:
        plain = t.group(0).replace(",", "")
        raise ValueError(
            f"channel {i}: {t.group(0)!r} looks like {plain} written with thousands separators; write {plain} "
            "(no separators) and separate values with a comma and a space, or with spaces"
        )
    e = _EUROPEAN.search(line) if _COMMA_DIGIT.search(line) else None
    if e:
        whole, frac = e.group(0).split(",")
        plain = f"{whole.replace('.', '')}.{frac}"
        two = f", or the two values {whole} and {frac}" if whole.count(".") == 1 else ""
        raise ValueError(
            f"channel {i}: {e.group(0)!r} could be {plain} written with a decimal comma and '.' between "
            f"thousands{two}; write {plain} (a decimal point, no separators) and separate values with a comma "
            "and a space, or with spaces"
        )
    m = _DECIMAL_COMMA.search(line) if _COMMA_DIGIT.search(line) else None
    if m:
        a, b = m.groups()
        raise ValueError(
            f"channel {i}: {m.group(0)!r} could be the decimal number {a}.{b} or the two values {a} and {b}; "
            f"write decimals with a point ({a}.{b}) and separate values with a comma and a space, or with spaces"
        )
    tokens = line.replace(",", " ").split()
    if not tokens:
        raise ValueError(f"channel {i} has no values; remove the empty channel")
    try:
        values = torch.from_numpy(np.fromiter(map(float, tokens), dtype=np.float64, count=len(tokens)))
    except ValueError:
        bad = next(t for t in tokens if not _is_number(t))
        raise ValueError(f"channel {i}: {_shown(bad)} is not a number; use digits like -0.25 or 1e-3") from None
    wrong = ~torch.isfinite(values) | (values.abs() > LIMIT)
    if bool(wrong.any()):
        tok = tokens[int(wrong.nonzero()[0])]
        if tok.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            raise ValueError(f"channel {i}: {_shown(tok)} is not a finite number; remove NaN and inf values")
        raise ValueError(
            f"channel {i}: {_shown(tok)} is beyond +-{LIMIT:.4g}, the largest magnitude the calculator handles "
            "(it computes in float32, and max - min must stay finite); scale your values down"
        )
    return values.to(torch.float32)


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _shown(token: str, width: int = 40) -> str:
    """A token for a message: quoted, and cut short if someone pasted a novel."""
    return repr(token if len(token) <= width else token[:width] + "...")


@dataclass
class Result:
    bits: int
    signed: bool
    symmetric: bool
    channels: list[dict[str, Any]]
    overall: dict[str, dict[str, float]]
    memory: dict[str, int]
    originals: list[torch.Tensor] = field(repr=False, default_factory=list)
    per_tensor: list[torch.Tensor] = field(repr=False, default_factory=list)
    per_channel: list[torch.Tensor] = field(repr=False, default_factory=list)


def _clipped(x: torch.Tensor, scale: torch.Tensor, zp: torch.Tensor, qmin: int, qmax: int) -> torch.Tensor:
    """How many values of each row of ``x`` fall outside the codes before clamping."""
    raw = torch.round(x / scale) + zp
    return ((raw < qmin) | (raw > qmax)).sum(1)


def _by_length(channels: list[torch.Tensor]) -> list[list[int]]:
    """Channel indices grouped by length: each group stacks into one ``[n, length]`` tensor."""
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(channels):
        groups.setdefault(c.numel(), []).append(i)
    return list(groups.values())


def _method_rows(
    method: str, channels: list[torch.Tensor], hats: list[torch.Tensor], qparams: list[tuple[float, int, int]]
) -> list[dict[str, Any]]:
    """One dict per channel: scale, zero point, clipped count and errors under ``method``."""
    rows: list[dict[str, Any]] = [{}] * len(channels)
    for idx in _by_length(channels):
        ce = channel_errors(torch.stack([channels[i] for i in idx]), torch.stack([hats[i] for i in idx]))
        for r, i in enumerate(idx):
            scale, zp, clipped = qparams[i]
            rows[i] = {
                f"{method} scale": scale,
                f"{method} zero point": zp,
                f"{method} clipped": clipped,
                f"{method} MAE": float(ce.mae[r]),
                f"{method} RMSE": float(ce.rmse[r]),
                f"{method} max error": float(ce.max_abs[r]),
            }
    return rows


def _quantize_channels(
    channels: list[torch.Tensor], bits: int, symmetric: bool, signed: bool
) -> tuple[list[torch.Tensor], list[tuple[float, int, int]]]:
    """Each channel on its own ruler (channels of one length in one call): reconstructions and qparams."""
    qmin, qmax = qrange(bits, symmetric=symmetric, signed=signed)
    hats: list[torch.Tensor] = [torch.empty(0)] * len(channels)
    qparams: list[tuple[float, int, int]] = [(0.0, 0, 0)] * len(channels)
    for idx in _by_length(channels):
        x = torch.stack([channels[i] for i in idx])
        qt = quantize(x, bits, granularity=PerChannel(0), symmetric=symmetric, signed=signed)
        x_hat = qt.dequantize()
        clipped = _clipped(x, qt.scale[:, None], qt.zero_point[:, None], qmin, qmax).tolist()
        for r, i in enumerate(idx):
            hats[i] = x_hat[r]
            qparams[i] = (float(qt.scale[r]), int(qt.zero_point[r]), clipped[r])
    return hats, qparams


def _overall(rows: list[dict[str, Any]], method: str) -> dict[str, float]:
    """Whole-tensor errors from the channels' own: MAE and mean square weighted by channel length."""
    n = [row["values"] for row in rows]
    total = sum(n)
    return {
        "MAE": sum(k * row[f"{method} MAE"] for k, row in zip(n, rows, strict=True)) / total,
        "RMSE": math.sqrt(sum(k * row[f"{method} RMSE"] ** 2 for k, row in zip(n, rows, strict=True)) / total),
        "max error": max(row[f"{method} max error"] for row in rows),
    }


def compare(channels: list[torch.Tensor], bits: int = 8, *, signed: bool = True, symmetric: bool = True) -> Result:
    """Per-tensor against per-channel quantization of ``channels``: scales, zero points, errors, bytes.

    Overall errors are those of the pooled values, the same as ``errors(pooled, pooled_hat)``.
    """
    qmin, qmax = qrange(bits, symmetric=symmetric, signed=signed)
    pooled = torch.cat(channels)
    pt = quantize(pooled, bits, symmetric=symmetric, signed=signed)
    pt_hat = list(torch.split(pt.dequantize(), [c.numel() for c in channels]))
    pt_clipped = [int(_clipped(c[None], pt.scale, pt.zero_point, qmin, qmax)[0]) for c in channels]
    pt_params = [(float(pt.scale), int(pt.zero_point), k) for k in pt_clipped]
    pc_hats, pc_params = _quantize_channels(channels, bits, symmetric, signed)
    per_tensor = _method_rows("per-tensor", channels, pt_hat, pt_params)
    per_channel = _method_rows("per-channel", channels, pc_hats, pc_params)
    rows = [
        {
            "channel": i,
            "values": x.numel(),
            "min": float(x.min()),
            "max": float(x.max()),
            **t,
            "per-tensor rounded to 0": int((x_hat == 0).sum()),  # values the shared ruler reconstructs as 0.0
            **c,
        }
        for i, (x, x_hat, t, c) in enumerate(zip(channels, pt_hat, per_tensor, per_channel, strict=True))
    ]
    overall = {"per-tensor": _overall(rows, "per-tensor"), "per-channel": _overall(rows, "per-channel")}
    payload = (pooled.numel() * bits + 7) // 8
    meta = metadata_bytes_per_scale(symmetric)
    memory = {
        "payload bytes": payload,
        "per-tensor total bytes": payload + meta,
        "per-channel total bytes": payload + meta * len(channels),
    }
    return Result(bits, signed, symmetric, rows, overall, memory, list(channels), pt_hat, pc_hats)


GAIN_FORMATS = {
    "absmax": ".3g",
    "own ruler finer by": ".1f",
    "per-tensor MAE": ".4f",
    "per-channel MAE": ".4f",
    "MAE falls by": ".1f",
}


def gain_rows(r: Result, falls: bool = False) -> list[dict[str, Any]]:
    """Lesson 07, section 1: per channel, how much finer its own ruler is and its MAE under each ruler;
    with ``falls``, also how many times its MAE falls (Going deeper).

    "per-tensor rounded to 0" counts the channel's values that the shared ruler rounds to
    its zero point (they reconstruct as 0.0).

    >>> rows = gain_rows(compare(parse_channels("1 -0.3; 0.01 0.02"), 4))
    >>> [(row["per-tensor rounded to 0"], round(row["own ruler finer by"], 1)) for row in rows]
    [(0, 1.0), (2, 50.0)]
    >>> "MAE falls by" in rows[0], "MAE falls by" in gain_rows(compare(parse_channels("1 -0.3"), 4), falls=True)[0]
    (False, True)
    """
    rows = []
    for row in r.channels:
        out = {
            "channel": row["channel"],
            "absmax": max(abs(row["min"]), abs(row["max"])),
            "per-tensor rounded to 0": row["per-tensor rounded to 0"],
            "own ruler finer by": row["per-tensor scale"] / row["per-channel scale"],
            "per-tensor MAE": row["per-tensor MAE"],
            "per-channel MAE": row["per-channel MAE"],
        }
        if falls:
            out["MAE falls by"] = row["per-tensor MAE"] / row["per-channel MAE"] if row["per-channel MAE"] else math.inf
        rows.append(out)
    return rows


def stored_bytes(values: int, bits: int, symmetric: bool) -> int:
    """Bytes of one ruler and its ``values`` codes, as :func:`compare` counts them.

    >>> stored_bytes(64, 4, True), stored_bytes(64, 4, False), stored_bytes(64, 5, True)
    (36, 40, 44)
    """
    return (values * bits + 7) // 8 + metadata_bytes_per_scale(symmetric)


def zero_point_against_a_bit(bits: int, n: int = 64, seeds: range = range(1, 21)) -> str:
    """Lesson 07, section 3: on GELU rows of ``n`` values (one per seed), how many times a zero point and one
    more bit each lower a symmetric per-tensor ruler's MAE at ``bits``: ranges, medians, and the bit's wins.

    >>> zero_point_against_a_bit(4, seeds=range(1, 3)).startswith("4 bits, 2 GELU rows of 64 values: zero point ")
    True
    """
    gains = []
    for seed in seeds:
        row = parse_channels(gelu_row(n, seed=seed))
        mae = [
            compare(row, bits=b, symmetric=sym).overall["per-tensor"]["MAE"]
            for b, sym in ((bits, True), (bits, False), (bits + 1, True))
        ]
        gains.append((mae[0] / mae[1], mae[0] / mae[2]))
    zp, more = np.array(gains).T
    return (
        f"{bits} bits, {len(seeds)} GELU rows of {n} values: zero point {zp.min():.1f} to {zp.max():.1f} times "
        f"(median {np.median(zp):.1f}), one more bit {more.min():.1f} to {more.max():.1f} (median "
        f"{np.median(more):.1f}); one more bit gains more on {(more > zp).sum()} of {len(seeds)} rows"
    )


ZERO_POINT_FORMATS = {"MAE": ".4f", "symmetric's MAE / this": ".2f"}


def zero_point_rows(row: torch.Tensor, bits: int, long_row: int = 384) -> list[dict[str, Any]]:
    """Lesson 07, section 3: one row under one ruler, symmetric against a zero point against one more
    bit, and the control: the zero point on the row mirrored about 0 (each value and its negation).

    The byte column is what each ruler stores beyond the symmetric one on a row of ``long_row`` values.

    >>> [(r["ruler"], r["bytes more, 384 values"]) for r in zero_point_rows(parse_channels(gelu_row())[0], 4)][1:3]
    [('zero point', 4), ('1 more bit', 48)]
    """
    n = row.numel()
    mirrored = torch.cat([row, -row])
    base = compare([row], bits=bits, symmetric=True).overall["per-tensor"]["MAE"]
    out = []
    for values, extra, symmetric, name in (
        (row, 0, True, "symmetric"),
        (row, 0, False, "zero point"),
        (row, 1, True, "1 more bit"),
        (mirrored, 0, False, f"zero point, mirrored ({2 * n} values)"),
    ):
        mae = compare([values], bits=bits + extra, symmetric=symmetric).overall["per-tensor"]["MAE"]
        more = stored_bytes(long_row, bits + extra, symmetric) - stored_bytes(long_row, bits, True)
        out.append(
            {
                "bits": bits + extra,
                "ruler": name,
                "MAE": mae,
                "symmetric's MAE / this": base / mae,
                f"bytes more, {long_row} values": more if values is row else "-",
            }
        )
    return out


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


MAX_PANELS = 6  # up to this many channels: one panel each; more: a summary of every channel
DETAIL = 3  # channels drawn value by value in the summary
ROWS_PER_PAGE = 60


def worst_channels(r: Result, k: int = DETAIL) -> list[int]:
    """Indices of the ``k`` channels per-tensor hurts most: largest per-tensor MAE relative to the channel's absmax.

    >>> worst_channels(compare(parse_channels("1 -1; 0.01 0.02; 0.5 0.2"), 4), 2)
    [1, 2]
    """
    rel = [row["per-tensor MAE"] / max(abs(row["min"]), abs(row["max"]), 1e-300) for row in r.channels]
    return sorted(range(len(rel)), key=lambda i: -rel[i])[:k]


def plot(r: Result, fig: Any = None, sharey: bool = False) -> Any:
    """The error ``x_hat - x`` of every value, per-tensor against per-channel: one panel per
    channel, or for many channels a summary. ``sharey`` draws the channels' panels on one y-scale.

    Errors rather than values: at 8 bits both reconstructions sit on top of the original and
    would hide each other.
    The summary shows every channel's MAE under both methods, then the channels per-tensor
    hurts most value by value, so hundreds of channels draw as fast as four.
    """
    from qlesson.teach.plots import COLORS

    n = len(r.originals)
    shown = list(range(n)) if n <= MAX_PANELS else worst_channels(r)
    if fig is None:  # a pyplot figure, so Jupyter shows it; widgets pass their own Figure
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=plot_size(n), layout="constrained")
    fig.clear()
    axes = list(fig.subplots(1, len(shown) + (n > MAX_PANELS), squeeze=False)[0])
    if n > MAX_PANELS:
        _mae_panel(axes.pop(0), r, shown, COLORS)
    if sharey:
        for ax in axes[1:]:
            ax.sharey(axes[0])
    for i, ax in zip(shown, axes, strict=True):
        x = r.originals[i]
        idx = range(len(x))
        style = {"ms": 3, "rasterized": True} if len(idx) > 64 else {}  # rasterized: a PDF with no 1000s of marks
        ax.axhline(0.0, color=COLORS["original"], lw=0.8)
        for method, hat, mark, ms in (("per-tensor", r.per_tensor, "x", 7), ("per-channel", r.per_channel, "+", 9)):
            ax.plot(idx, hat[i] - x, mark, color=COLORS[method], label=method, **(style or {"ms": ms}))
        ax.set(title=f"channel {i}", xlabel="value index", ylabel="error x_hat - x")
    axes[0].legend(fontsize=7, frameon=False)
    return fig


def plot_size(n_channels: int) -> tuple[float, float]:
    """Figure size for :func:`plot`: 3.2 inches per panel, at most ``MAX_PANELS`` panels wide."""
    return (3.2 * min(n_channels, MAX_PANELS) if n_channels <= MAX_PANELS else 3.2 * (DETAIL + 1.5), 2.8)


def _mae_panel(ax: Any, r: Result, shown: list[int], colors: dict[str, str]) -> None:
    """Every channel's MAE under both methods, the detailed channels marked."""
    idx = range(len(r.channels))
    for method in ("per-tensor", "per-channel"):
        mae = [max(row[f"{method} MAE"], 1e-300) for row in r.channels]
        ax.plot(idx, mae, ".", ms=3, color=colors[method], label=f"{method} MAE", rasterized=len(idx) > 64)
    for i in shown:
        ax.axvline(i, color="0.6", lw=0.8, ls=":")
    ax.set(yscale="log", xlabel="channel", ylabel="MAE", title=f"all {len(r.channels)} channels (dotted: shown)")


def pdf_bytes(r: Result, progress: Any = None) -> bytes:
    """A PDF: the plot, then the table as text, ``ROWS_PER_PAGE`` channels a page.

    ``progress(done, total)`` is called after each page, for a progress bar.
    """
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    from qlesson.teach.report import table

    cols = [
        "channel",
        "per-tensor scale",
        "per-tensor zero point",
        "per-tensor MAE",
        "per-channel scale",
        "per-channel zero point",
        "per-channel MAE",
    ]
    rows = [{c: row[c] for c in cols} for row in r.channels]
    pages = [rows[k : k + ROWS_PER_PAGE] for k in range(0, len(rows), ROWS_PER_PAGE)]
    buf = io.BytesIO()
    with PdfPages(buf) as pdf:
        pdf.savefig(plot(r, Figure(figsize=plot_size(len(rows)), layout="constrained")))
        for k, chunk in enumerate(pages, start=1):
            page = Figure(figsize=(11, 8.5))
            text = table(chunk, {c: ".5g" for c in cols})
            if k == len(pages):
                text += "\n\n" + "\n".join(f"{key}: {v}" for key, v in r.memory.items())
            page.text(0.02, 0.98, text, family="monospace", fontsize=7, va="top")
            with matplotlib.rc_context({"pdf.use14corefonts": True}), _quiet_fonts():  # Courier: 10x faster
                pdf.savefig(page)
            if progress is not None:
                progress(k, len(pages))
    return buf.getvalue()


@contextlib.contextmanager
def _quiet_fonts() -> Iterator[None]:
    """Silence matplotlib's "findfont: ... Courier" lines (the core PDF font has no weight table)."""
    log = logging.getLogger("matplotlib.font_manager")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def data_link(data: bytes, filename: str, mime: str, label: str) -> str:
    """An HTML download link carrying ``data`` inline (works in JupyterLab and Voila, no server)."""
    b64 = base64.b64encode(data).decode()
    return f'<a download="{filename}" href="data:{mime};base64,{b64}" class="ql-download">{label}</a>'

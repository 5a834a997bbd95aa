"""Tables for the small worked examples (lessons 02, 04 and 05).

>>> rows = method_table(torch.tensor([[0.05, -0.08, 0.12, -0.15], [2.0, -3.1, 1.7, -2.6]]), 4)
>>> [r["row 0 q"] for r in rows]
[[0, 0, 0, 0], [2, -4, 6, -7]]
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import torch

from qlesson.quant.granularity import Granularity, PerChannel, PerGroup, PerTensor, method_name, to_blocks
from qlesson.quant.metrics import channel_errors
from qlesson.quant.quantize import qrange, quantize


def method_table(
    x: torch.Tensor,
    bits: int,
    granularities: Sequence[Granularity] = (PerTensor(), PerChannel(0)),
    *,
    symmetric: bool = True,
) -> list[dict[str, Any]]:
    """One row per method: its scale(s), and each row's codes, reconstruction and MAE."""
    out = []
    for g in granularities:
        qt = quantize(x, bits, granularity=g, symmetric=symmetric)
        x_hat = qt.dequantize()
        mae = channel_errors(x, x_hat).mae
        row: dict[str, Any] = {"method": method_name(g), "scale": [round(v, 4) for v in qt.scale.flatten().tolist()]}
        for r in range(x.shape[0]):
            row[f"row {r} q"] = qt.q[r].tolist()
            row[f"row {r} x_hat"] = x_hat[r].tolist()
            row[f"row {r} MAE"] = float(mae[r])
        out.append(row)
    return out


def range_usage(
    x: torch.Tensor, bits: int, granularities: Sequence[Granularity] = (PerTensor(), PerChannel(0))
) -> list[dict[str, Any]]:
    """How much of the integer range each row uses: ``max |q| / qmax`` and distinct codes."""
    qmax = qrange(bits)[1]
    out = []
    for r in range(x.shape[0]):
        row: dict[str, Any] = {"row": r, "absmax": float(x[r].abs().max())}
        for g in granularities:
            q = quantize(x, bits, granularity=g).q[r].int()
            row[f"{method_name(g)} max|q|"] = int(q.abs().max())
            row[f"{method_name(g)} range used"] = f"{100 * int(q.abs().max()) / qmax:.0f}%"
        out.append(row)
    return out


def compare_printed(computed: torch.Tensor, printed: Sequence[Sequence[int]], label: str) -> list[dict[str, Any]]:
    """Entries where a source text's printed integers differ from what qlesson computes."""
    diffs = []
    for r, row in enumerate(printed):
        for c, p in enumerate(row):
            got = int(computed[r, c])
            if got != p:
                diffs.append({"method": label, "row": r, "col": c, "printed": p, "computed": got})
    return diffs


def group_table(x: torch.Tensor, bits: int, group_size: int) -> list[dict[str, Any]]:
    """Per group of row 0..N: scale and max error under per-channel and per-group.

    >>> t = group_table(torch.tensor([[8.1, 0.1, 0.2, -0.3]]), 4, 2)
    >>> [(r["group"], round(r["per-group scale"], 4)) for r in t]
    [(0, 1.1571), (1, 0.0429)]
    """
    pc = quantize(x, bits, granularity=PerChannel(0))
    pg = quantize(x, bits, granularity=PerGroup(group_size))
    err_pc = to_blocks((pc.dequantize() - x).abs(), PerGroup(group_size)).amax((1, 3))
    err_pg = to_blocks((pg.dequantize() - x).abs(), PerGroup(group_size)).amax((1, 3))
    rows = []
    for r in range(x.shape[0]):
        for gi in range(x.shape[1] // group_size):
            rows.append(
                {
                    "row": r,
                    "group": gi,
                    "values": x[r, gi * group_size : (gi + 1) * group_size].tolist(),
                    "per-channel scale": float(pc.scale[r]),
                    "per-channel max err": float(err_pc[r, gi]),
                    "per-group scale": float(pg.scale[r, gi]),
                    "per-group max err": float(err_pg[r, gi]),
                }
            )
    return rows


def zero_point_table(channels: torch.Tensor, bits: int = 8) -> list[dict[str, Any]]:
    """Per channel: the calculator's zero point (range not widened to 0) against qlesson's.

    The calculator computes ``round(qmin - rmin / scale)`` from the channel's own min and
    max; for a channel that does not contain 0 that integer falls outside the code range.
    """
    qmin, qmax = qrange(bits, symmetric=False, signed=False)
    rows = []
    for c in range(channels.shape[0]):
        x = channels[c]
        rmin, rmax = float(x.min()), float(x.max())
        s_raw = (rmax - rmin) / (qmax - qmin)
        zp_raw = round(qmin - rmin / s_raw)
        qt = quantize(x, bits, symmetric=False, signed=False)
        rows.append(
            {
                "channel": c,
                "min": rmin,
                "max": rmax,
                "scale (own min..max)": s_raw,
                "zero point (own min..max)": zp_raw,
                "fits 0..255": "yes" if qmin <= zp_raw <= qmax else "NO",
                "scale (range with 0)": float(qt.scale),
                "zero point (range with 0)": int(qt.zero_point),
            }
        )
    return rows


def channel_ranges(x: torch.Tensor) -> list[dict[str, Any]]:
    """The calculator's example table, recomputed: each channel's min, max and range."""
    return [
        {
            "channel": c,
            "values": x[c].tolist(),
            "min": float(x[c].min()),
            "max": float(x[c].max()),
            "range": float(x[c].max() - x[c].min()),
            "contains 0": bool(x[c].min() <= 0 <= x[c].max()),
        }
        for c in range(x.shape[0])
    ]


def mode_grid(x: torch.Tensor, bits: int) -> list[dict[str, Any]]:
    """MAE of every channel under symmetric/asymmetric x per-tensor/per-channel."""
    rows = []
    for symmetric in (True, False):
        for g in (PerTensor(), PerChannel(0)):
            x_hat = quantize(x, bits, granularity=g, symmetric=symmetric).dequantize()
            mae = channel_errors(x, x_hat).mae
            row: dict[str, Any] = {"method": f"{'symmetric' if symmetric else 'asymmetric'} {method_name(g)}"}
            row.update({f"ch {c} MAE": float(m) for c, m in enumerate(mae)})
            row["mean MAE"] = float(mae.mean())
            rows.append(row)
    return rows


def bits_or_scales(w: torch.Tensor, group_size: int = 16, *, full_range: bool = False) -> dict[str, float]:
    """int3 with groups of ``group_size`` against int4 per-channel on one weight ``[N, K]`` (lesson 04).

    Both cost about 4 bits per weight with fp16 scales at ``group_size = 16``. Also returns how far the
    rows' largest weights stand out: the median row's absmax over its rms. ``full_range=True`` uses all
    ``2**bits`` codes, as Q4_0 (:func:`qlesson.teach.studies.fake_quantize_full_range`), instead of the
    restricted ruler.

    >>> r = bits_or_scales(torch.tensor([[1.0, 0.5, 0.25, 0.25], [1.0, 1.0, 1.0, 1.0]]), group_size=2)
    >>> list(r)
    ['int3 g2 dB', 'int4 per-channel dB', 'row absmax / rms (median)']
    >>> r["int4 per-channel dB"] > r["int3 g2 dB"]  # row 1 is exact at both; row 0's 0.5 lands closer at int4
    True
    """
    from qlesson.quant.metrics import errors
    from qlesson.quant.quantize import fake_quantize
    from qlesson.teach.studies import fake_quantize_full_range

    g = group_size
    grouped, per_row = (
        (fake_quantize_full_range(w, 3, PerGroup(g)), fake_quantize_full_range(w, 4, PerChannel(0)))
        if full_range
        else (fake_quantize(w, 3, granularity=PerGroup(g)), fake_quantize(w, 4, granularity=PerChannel(0)))
    )
    return {
        f"int3 g{g} dB": errors(w, grouped).sqnr_db,
        "int4 per-channel dB": errors(w, per_row).sqnr_db,
        "row absmax / rms (median)": row_standout(w),
    }


def rows_over(w: torch.Tensor, standout: float = 5.0) -> float:
    """The share of rows of ``w`` holding a weight whose |w| is over ``standout`` times the row's rms.

    >>> rows_over(torch.tensor([[4.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]), standout=1.5)  # row 0: rms 2
    0.5
    """
    return float((w.abs().amax(1) > standout * w.pow(2).mean(1).sqrt()).float().mean())


def row_standout(w: torch.Tensor) -> float:
    """How far a row's largest weight stands out: the median over rows of (row's largest |w|) / (row's rms).

    >>> row_standout(torch.tensor([[4.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 1.0, -1.0]]))
    1.0
    """
    return float((w.abs().amax(1) / w.pow(2).mean(1).sqrt()).median())


def median_standout(weights: dict[str, torch.Tensor], names: Sequence[str]) -> float:
    """The median over the layers ``names`` of :func:`row_standout`: lesson 04's clip threshold, in rms.

    >>> ones = torch.ones(2, 4)
    >>> median_standout({"a": ones, "b": 2 * ones, "c": torch.tensor([[4.0, 0, 0, 0]])}, ["a", "b", "c"])
    1.0
    """
    return float(statistics.median(row_standout(weights[name]) for name in names))


def code_bit_vs_groups(
    weights: dict[str, torch.Tensor],
    sets: dict[str, Sequence[str]],
    group_size: int = 128,
    standout: float = 5.0,
    *,
    full_range: bool = False,
) -> list[dict[str, str]]:
    """Lesson 04's per-layer table: one row per named set of layers, each column the range over its layers.

    The columns: int4 per-channel minus int3 g16 (the code bit's lead, dB), int4 with groups of
    ``group_size`` minus int4 per-channel (what the groups add, dB), the share of rows holding a
    weight over ``standout`` times the row's rms (:func:`rows_over`), and the row length ``K``.
    ``full_range=True`` quantizes with all ``2**bits`` codes, as Q4_0.

    >>> w = {"a": torch.randn(8, 64, generator=torch.Generator().manual_seed(0))}
    >>> row = code_bit_vs_groups(w, {"the layer": ["a"]}, group_size=32)[0]
    >>> row["MiniLM"], row["row length"]
    ('the layer (1)', '64')
    """
    from qlesson.quant.metrics import errors
    from qlesson.quant.quantize import fake_quantize
    from qlesson.teach.studies import fake_quantize_full_range

    def span(values: list[float], fmt: str) -> str:
        low, high = f"{min(values):{fmt}}", f"{max(values):{fmt}}"
        return low if low == high else f"{low} to {high}"

    def grouped(w: torch.Tensor) -> torch.Tensor:
        g = PerGroup(group_size)
        return fake_quantize_full_range(w, 4, g) if full_range else fake_quantize(w, 4, granularity=g)

    rows = []
    for label, names in sets.items():
        r = [bits_or_scales(weights[n], full_range=full_range) for n in names]
        pc = [x["int4 per-channel dB"] for x in r]
        gained = [errors(weights[n], grouped(weights[n])).sqnr_db - p for n, p in zip(names, pc, strict=True)]
        rows.append(
            {
                "MiniLM": f"{label} ({len(names)})",
                "int4 per-channel minus int3 g16, dB": span(
                    [p - x["int3 g16 dB"] for p, x in zip(pc, r, strict=True)], "+.2f"
                ),
                f"int4 g{group_size} minus int4 per-channel, dB": span(gained, "+.2f"),
                f"rows with a |w| over {standout:g} x rms": span(
                    [rows_over(weights[n], standout) for n in names], ".1%"
                ),
                "row length": span([weights[n].shape[1] for n in names], "d"),
            }
        )
    return rows

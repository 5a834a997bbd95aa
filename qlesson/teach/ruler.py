"""The ruler, step by step: lesson 01's tables.

>>> rows = steps([0.3, -0.9, 0.0], bits=3)
>>> [r["q"] for r in rows], round(rows[0]["x / scale"], 6)
([1, -3, 0], 1.0)
"""

from __future__ import annotations

from typing import Any

import torch

from qlesson.quant._checks import ArrayLike, as_float_tensor, check_bits
from qlesson.quant.metrics import errors
from qlesson.quant.quantize import qrange, quantize
from qlesson.teach.report import print_table


def ruler_for(
    values: ArrayLike,
    bits: int,
    *,
    symmetric: bool = True,
    signed: bool = True,
    scale: float | None = None,
    zero_point: int | None = None,
) -> tuple[float, int]:
    """The ruler's ``(scale, zero_point)``: fitted to ``values`` unless ``scale`` is given.

    >>> scale, zp = ruler_for([0.3, -0.9], 3)
    >>> round(scale, 6), zp
    (0.3, 0)
    """
    if scale is None:
        qt = quantize(values, bits, symmetric=symmetric, signed=signed)
        return float(qt.scale), int(qt.zero_point)
    if not scale > 0:
        raise ValueError(f"scale={scale!r} must be a positive number (the distance between two ticks)")
    return float(scale), 0 if zero_point is None else int(zero_point)


def steps(values: ArrayLike, bits: int, *, symmetric: bool = True, signed: bool = True, **ruler: Any) -> list[dict]:
    """Each value through divide, round, shift, clamp and back; one dict per value.

    With ``scale`` (and ``zero_point``) given, the ruler is fixed in advance, as when it
    was calibrated on other data, so values outside its range are clipped.
    """
    x = as_float_tensor(values).double().flatten()
    qmin, qmax = qrange(bits, symmetric=symmetric, signed=signed)
    scale, zp = ruler_for(values, bits, symmetric=symmetric, signed=signed, **ruler)
    ratio = x / scale
    rounded = torch.round(ratio)
    rows = []
    for v, r, rd in zip(x.tolist(), ratio.tolist(), rounded.tolist(), strict=True):
        shifted = int(rd) + zp
        q = min(max(shifted, qmin), qmax)
        x_hat = (q - zp) * scale
        rows.append(
            {
                "x": v,
                "x / scale": r,
                "round": int(rd),
                "+ zero point": shifted,
                "q": q,
                "x_hat": x_hat,
                "error": x_hat - v,
                "note": "clipped" if q != shifted else "",
            }
        )
    return rows


def print_steps(values: ArrayLike, bits: int, *, symmetric: bool = True, signed: bool = True, **ruler: Any) -> None:
    """Print :func:`steps` as a table, headed by the ruler's scale, zero point and range."""
    qmin, qmax = qrange(bits, symmetric=symmetric, signed=signed)
    scale, zp = ruler_for(values, bits, symmetric=symmetric, signed=signed, **ruler)
    print(f"{bits}-bit ruler: codes {qmin}..{qmax}, scale {scale:.5f}, zero point {zp}, half a tick {scale / 2:.5f}")
    rows = steps(values, bits, symmetric=symmetric, signed=signed, **ruler)
    print_table(rows, {"x": "+.4f", "x / scale": "+.3f", "x_hat": "+.4f", "error": "+.4f"})


def bits_table(absmax: float, bits: range | list[int] = range(2, 9)) -> list[dict[str, Any]]:
    """What each bit width buys on a symmetric signed ruler reaching ``absmax``."""
    rows = []
    for b in bits:
        qmin, qmax = qrange(check_bits(b))
        scale = absmax / qmax
        rows.append(
            {
                "bits": b,
                "codes 2^b": 2**b,
                "used (restricted)": qmax - qmin + 1,
                "scale": scale,
                "max rounding error": scale / 2,
            }
        )
    return rows


def compare_modes(values: ArrayLike, bits: int) -> list[dict[str, Any]]:
    """The four rulers (symmetric/asymmetric x signed/unsigned) on the same values."""
    x = as_float_tensor(values)
    rows = []
    for symmetric in (True, False):
        for signed in (True, False):
            qt = quantize(x, bits, symmetric=symmetric, signed=signed)
            q = qt.q.int()
            qmin, qmax = qrange(bits, symmetric=symmetric, signed=signed)
            rows.append(
                {
                    "mode": f"{'symmetric' if symmetric else 'asymmetric'} {'signed' if signed else 'unsigned'}",
                    "codes": f"{qmin}..{qmax}",
                    "scale": float(qt.scale),
                    "zero point": int(qt.zero_point),
                    "codes used": f"{int(q.min())}..{int(q.max())}",
                    "distinct codes": int(q.unique().numel()),
                    "mae": errors(x, qt.dequantize()).mae,
                }
            )
    return rows

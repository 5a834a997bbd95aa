"""The ruler, step by step: lesson 01's tables.

>>> rows = steps([0.3, -0.9, 0.0], bits=3)
>>> [r["q"] for r in rows], round(rows[0]["x / scale"], 6)
([1, -3, 0], 1.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np
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
    return _check_scale(scale), _check_zero_point(zero_point, bits, symmetric=symmetric, signed=signed)


SMALLEST_SCALE = float(torch.finfo(torch.float32).tiny)
LARGEST_SCALE = float(torch.finfo(torch.float32).max)


def _check_scale(scale: object) -> float:
    """A fixed ruler's scale: a finite number from float32's smallest normal to its largest.

    >>> _check_scale(float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: scale=inf must be a finite number from 1.17549e-38 to 3.40282e+38 (the distance between two ticks)...
    """
    try:
        value = float("nan") if isinstance(scale, (str, bytes)) else float(scale)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        value = float("nan")
    if not SMALLEST_SCALE <= value <= LARGEST_SCALE:
        raise ValueError(
            f"scale={scale!r} must be a finite number from {SMALLEST_SCALE:.6g} to {LARGEST_SCALE:.6g} "
            "(the distance between two ticks); a subnormal or infinite scale cannot divide the values exactly"
        )
    return value


def _check_zero_point(zero_point: object, bits: int, *, symmetric: bool, signed: bool) -> int:
    if zero_point is None:
        return 0
    qmin, qmax = qrange(bits, symmetric=symmetric, signed=signed)
    if isinstance(zero_point, bool) or not isinstance(zero_point, (int, np.integer)) or not qmin <= zero_point <= qmax:
        raise ValueError(f"zero_point={zero_point!r} must be a whole number from {qmin} to {qmax}, a code of the ruler")
    return int(zero_point)


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


def print_codes(values: ArrayLike, bits: int, *, scale: float) -> None:
    """A symmetric ruler's steps without the zero-point columns: x, x / scale, q, x_hat, error."""
    qmin, qmax = qrange(bits)
    print(f"{bits}-bit ruler: codes {qmin}..{qmax}, scale {scale:.5f}, half a tick {scale / 2:.5f}")
    rows = [{k: r[k] for k in ("x", "x / scale", "q", "x_hat", "error")} for r in steps(values, bits, scale=scale)]
    print_table(rows, {"x": "+.4f", "x / scale": "+.3f", "x_hat": "+.4f", "error": "+.4f"})


def bits_table(absmax: float, bits: range | list[int] = range(2, 9)) -> list[dict[str, Any]]:
    """What each bit width buys on a symmetric signed ruler reaching ``absmax``."""
    if not 0 < float(absmax) <= LARGEST_SCALE:
        raise ValueError(f"absmax={absmax!r} must be a positive finite number (the largest |x| the ruler reaches)")
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
                "rounding bound (scale/2)": scale / 2,
            }
        )
    return rows


def compare_modes(values: ArrayLike, bits: int, modes: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The four rulers (symmetric/asymmetric x signed/unsigned) on the same values.

    ``modes`` keeps only the named rows, e.g. ``("symmetric signed", "asymmetric unsigned")``.
    ``ends`` is the ruler's first and last code read back, ``(qmin - zp) * scale .. (qmax - zp) * scale``.

    >>> [(r["mode"], r["ends"]) for r in compare_modes([-0.17, 2.0], 4, modes=("asymmetric unsigned",))]
    [('asymmetric unsigned', '-0.145..2.025')]
    """
    x = as_float_tensor(values)
    rows = []
    for symmetric in (True, False):
        for signed in (True, False):
            mode = f"{'symmetric' if symmetric else 'asymmetric'} {'signed' if signed else 'unsigned'}"
            if modes is not None and mode not in modes:
                continue
            qt = quantize(x, bits, symmetric=symmetric, signed=signed)
            q = qt.q.int()
            qmin, qmax = qrange(bits, symmetric=symmetric, signed=signed)
            scale, zp = float(qt.scale), int(qt.zero_point)
            rows.append(
                {
                    "mode": mode,
                    "codes": f"{qmin}..{qmax}",
                    "scale": scale,
                    "zero point": zp,
                    "codes used": f"{int(q.min())}..{int(q.max())}",
                    "mae": errors(x, qt.dequantize()).mae,
                    "ends": f"{(qmin - zp) * scale:.3f}..{(qmax - zp) * scale:.3f}",
                }
            )
    return rows

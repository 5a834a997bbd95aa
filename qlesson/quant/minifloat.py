"""Tiny floating-point grids: FP4 E2M1, FP8 E4M3 and the power-of-two E8M0 scale.

Introduced in lesson 08. A minifloat with ``e`` exponent bits, ``m`` mantissa bits and bias
``2**(e-1) - 1`` has, in every binade ``[2**k, 2**(k+1))``, ``2**m`` evenly spaced values;
below the smallest normal ``2**(1 - bias)`` it continues with the same spacing down to 0
(the subnormals). Its ticks are therefore *uneven*: dense near 0, sparse near the top.

======  ====  ====  ====  ==============================  ===================
format  e     m     bias  largest finite                  smallest above 0
======  ====  ====  ====  ==============================  ===================
E2M1    2     1     1     6                               0.5
E4M3    4     3     7     448 (``torch.float8_e4m3fn``)   2**-9 (subnormal)
======  ====  ====  ====  ==============================  ===================

:func:`round_to` rounds to the nearest value of such a grid, ties to the even mantissa
(IEEE's default, what ``torch``'s casts and torchao do), or ties toward zero
(``ties="down"``, what gguf's MXFP4 quantizer does), saturating at the largest finite
value (no inf, no NaN).

>>> E2M1_VALUES.tolist()
[0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
>>> round_to(np.array([0.25, 0.75, 2.5, 5.0, 7.0, -100.0]), "E2M1").tolist()
[0.0, 1.0, 2.0, 4.0, 6.0, -6.0]
>>> round_to(np.array([0.75, 2.5, 5.0]), "E2M1", ties="down").tolist()
[0.5, 2.0, 4.0]
"""

from __future__ import annotations

from typing import Literal

import numpy as np

# name: (exponent bits, mantissa bits, largest finite value)
E2M1_MAX, E4M3_MAX = 6.0, 448.0  # the largest finite values
SPECS = {"E2M1": (2, 1, E2M1_MAX), "E4M3": (4, 3, E4M3_MAX)}
E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E8M0_BIAS = 127

Ties = Literal["even", "down"]


def _spec(fmt: str) -> tuple[int, int, float]:
    if fmt not in SPECS:
        raise ValueError(f"minifloat {fmt!r} is not implemented; use one of {', '.join(SPECS)}")
    return SPECS[fmt]


def round_to(x: np.ndarray, fmt: str, *, ties: Ties = "even") -> np.ndarray:
    """``x`` rounded to the nearest value of minifloat ``fmt`` (float64 result, same shape).

    Values beyond the largest finite value saturate to it (keeping their sign).

    >>> round_to(np.array([240.5, 250.0, 1e-3, 2.0**-10, 1e9]), "E4M3").tolist()
    [240.0, 256.0, 0.001953125, 0.0, 448.0]
    """
    if ties not in ("even", "down"):
        raise ValueError(f"ties={ties!r} must be 'even' (IEEE, torch, torchao) or 'down' (toward zero, as gguf)")
    ebits, mbits, top = _spec(fmt)
    a = np.minimum(np.abs(np.asarray(x, dtype=np.float64)), top)
    emin = 1 - (2 ** (ebits - 1) - 1)  # exponent of the smallest normal value
    _, exp = np.frexp(a)  # a = f * 2**exp with f in [0.5, 1): the binade is 2**(exp - 1)
    quantum = np.ldexp(1.0, np.maximum(exp - 1, emin) - mbits)  # spacing of the ticks around a
    ticks = a / quantum  # exact: dividing by a power of two
    if ties == "even":
        r = np.round(ticks)  # numpy rounds half to even
    else:
        r = np.ceil(ticks - 0.5)  # half toward zero
    return np.copysign(np.minimum(r * quantum, top), np.asarray(x, dtype=np.float64))


def e2m1_code(values: np.ndarray) -> np.ndarray:
    """4-bit E2M1 codes (sign bit 3, then the index into :data:`E2M1_VALUES`) of values on the grid.

    ``-0.0`` gets code 8, the negative zero.

    >>> e2m1_code(np.array([0.0, 0.5, 6.0, -0.5, -6.0, -0.0])).tolist()
    [0, 1, 7, 9, 15, 8]
    """
    v = np.asarray(values, dtype=np.float64)
    idx = np.searchsorted(E2M1_VALUES, np.abs(v))
    if not np.array_equal(E2M1_VALUES[np.minimum(idx, 7)], np.abs(v)):
        raise ValueError(
            "e2m1_code needs values on the E2M1 grid 0, 0.5, 1, 1.5, 2, 3, 4, 6; round_to(x, 'E2M1') first"
        )
    return (idx | (np.signbit(v) << 3)).astype(np.uint8)


def e2m1_value(codes: np.ndarray) -> np.ndarray:
    """float32 values of 4-bit E2M1 codes.

    >>> e2m1_value(np.array([0, 3, 7, 12], dtype=np.uint8)).tolist()
    [0.0, 1.5, 6.0, -2.0]
    """
    c = np.asarray(codes).astype(np.uint8)
    return np.where(c & 8, -1.0, 1.0).astype(np.float32) * E2M1_VALUES[c & 7].astype(np.float32)


def e8m0_value(biased: np.ndarray) -> np.ndarray:
    """The power of two ``2**(e - 127)`` an E8M0 byte stands for (float64: 2**-127 is subnormal in float32).

    >>> e8m0_value(np.array([127, 125, 0])).tolist() == [1.0, 0.25, 2.0**-127]
    True
    """
    e = np.asarray(biased).astype(np.int64)
    return np.ldexp(1.0, e - E8M0_BIAS)


def e4m3_byte(x: np.ndarray) -> np.ndarray:
    """The ``torch.float8_e4m3fn`` bit pattern (uint8) of values already on the E4M3 grid.

    >>> e4m3_byte(np.array([1.0, 448.0, 2.0**-9, -2.0])).tolist()
    [56, 126, 1, 192]
    """
    v = np.asarray(x, dtype=np.float64)
    a = np.abs(v)
    _, exp = np.frexp(a)
    normal = a >= 2.0**-6
    e_field = np.where(normal, exp - 1 + 7, 0)
    m_field = np.where(normal, a / np.ldexp(1.0, exp - 1) * 8 - 8, a * 2.0**9)
    if not np.array_equal(m_field, np.round(m_field)) or (a > 448).any():
        raise ValueError("e4m3_byte needs values on the E4M3 grid; round_to(x, 'E4M3') first")
    return ((np.signbit(v) << 7) | (e_field.astype(np.int64) << 3) | m_field.astype(np.int64)).astype(np.uint8)


def e4m3_value(byte: np.ndarray) -> np.ndarray:
    """float32 values of ``torch.float8_e4m3fn`` bytes (0x7F and 0xFF, its NaNs, give NaN).

    >>> e4m3_value(np.array([56, 126, 1, 192], dtype=np.uint8)).tolist() == [1.0, 448.0, 2.0**-9, -2.0]
    True
    """
    b = np.asarray(byte).astype(np.int64)
    e, m = (b >> 3) & 0xF, b & 7
    mag = np.where(e == 0, m * 2.0**-9, (1 + m / 8) * np.ldexp(1.0, e - 7))
    mag = np.where((b & 0x7F) == 0x7F, np.nan, mag)
    return (np.where(b & 0x80, -mag, mag)).astype(np.float32)

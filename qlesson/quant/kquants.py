"""llama.cpp's K-quants Q4_K and Q6_K: scales of scales, byte for byte.

Introduced in lesson 08. A K-quant cuts each row into *super-blocks* of 256 weights, and
each super-block into sub-blocks with their own scale. The sub-block scales are not fp16:
they are small integers (6 bits in Q4_K, int8 in Q6_K) that multiply one fp16
*super-scale* ``d``, so a sub-block's scale costs 6 or 8 bits instead of 16.

=====  ===========================================================  =====  ===============
name   one super-block of 256 weights                               bytes  bits per weight
=====  ===========================================================  =====  ===============
Q4_K   fp16 d, fp16 dmin, 12 bytes = 8 x (6-bit scale, 6-bit min),  144    4.5
       128 bytes of 4-bit q; 8 sub-blocks of 32:
       ``x = d * sc[j] * q - dmin * m[j]``, q in 0..15
Q6_K   128 bytes low 4 bits of q, 64 bytes high 2 bits of q,        210    6.5625
       16 x int8 scale, fp16 d; 16 sub-blocks of 16:
       ``x = d * sc[j] * (q - 32)``, q in 0..63
=====  ===========================================================  =====  ===============

**How qlesson chooses the scales** by default (one pass, no search):

* *Q4_K*: per sub-block of 32, the minimum ``lo = min(x.min(), 0)`` and maximum ``hi`` give
  a float scale ``s = (hi - lo) / 15`` and a float minimum ``m = -lo >= 0``. The super-scales
  are ``d = max(s) / 63`` and ``dmin = max(m) / 63``, stored as fp16; each sub-block stores
  ``sc = round(s / d)`` and ``m = round(m / dmin)`` as 6-bit integers (0..63). The 4-bit codes
  are then computed from the *stored* scale and minimum, ``q = round((x + dmin * m) / (d * sc))``
  clipped to 0..15, so the rounding of the scales is not paid twice.
* *Q6_K*: per sub-block of 16, the signed value of largest magnitude ``v`` gives
  ``s = v / -32`` (so ``v`` lands exactly on -32, the whole range -32..31 in use, as Q4_0 does
  with -8). ``d = max|s| / 127`` is the fp16 super-scale and ``sc = round(s / d)`` the int8
  sub-scale (-127..127); ``q = round(x / (d * sc))`` clipped to -32..31, stored plus 32.

**How llama.cpp differs** (``search=True`` does what it does, :mod:`qlesson.quant.kquant_search`):
its reference quantizers *search*. For Q4_K, ``make_qkx2_quants`` tries 21 scales
``(14 + 0.1 * is) / (hi - lo)`` for ``is = 0..20`` around the range's ``15 / (hi - lo)``, refits
each by weighted least squares of scale *and* minimum (weights ``rms(x) + |x|``, so large
weights count more) and keeps the fit with the least weighted squared error. For Q6_K,
``make_qx_quants`` tries 19 scales ``-(32 + 0.1 * is) / max`` for ``is = -9..9``, each refit by
least squares with weights ``x**2``; its super-scale is ``-max_scale / 128``, so the largest
sub-scale is stored as -128. Same layout, different bytes, lower error: both are valid
K-quants that llama.cpp (and ``gguf``) read back exactly as :func:`dequantize` does. On
MiniLM's 36 Linear layers the search gains about 0.8 dB (Q4_K) and 0.5 dB (Q6_K) of SQNR
(lesson 08 measures it).

**Limits of the fp16 super-scales**: Q4_K needs a sub-block range ``hi - lo`` of at most
15 x 63 x 65504 (about 6.2e7) and a sub-block minimum of at least -63 x 65504; Q6_K
magnitudes up to 32 x 127 x 65504 (about 2.7e8). Beyond that :func:`quantize` raises a
``ValueError`` naming the super-block, the value and the limit. *Tiny super-blocks*: a
super-scale below fp16's smallest subnormal (2**-24, stored as 0 below 2**-25) makes the whole
super-block read back as zeros (sub-block ranges below about 15 x 63 x 2**-25 = 2.8e-5 in
Q4_K, magnitudes below 32 x 127 x 2**-25 = 1.2e-4 in Q6_K), in llama.cpp too; just above, the
super-scale has few significant bits.

>>> x = np.linspace(-1, 1, 256, dtype=np.float32)
>>> raw = quantize(x, "Q4_K")
>>> raw.shape, SUPER_BYTES["Q4_K"] * 8 / SUPER
((144,), 4.5)
>>> float(np.abs(dequantize(raw, "Q4_K") - x).max()) < 2 / 15
True
"""

from __future__ import annotations

import numpy as np
import torch

from qlesson.quant import kquant_search
from qlesson.quant._blocks import (
    FP16_MAX,
    as_blocks,
    check_finite_fields,
    check_fp16_fields,
    f16,
    f16_bytes,
    raw_blocks,
    read_f16,
)

SUPER = 256
SUB = {"Q4_K": 32, "Q6_K": 16}
SUPER_BYTES = {"Q4_K": 2 + 2 + 12 + SUPER // 2, "Q6_K": SUPER // 2 + SUPER // 4 + SUPER // 16 + 2}
LIMITS = {
    "Q4_K": (15 * 63 * FP16_MAX, "sub-block range max - min", "15 x 63 x 65504, minimum at least -63 x 65504"),
    "Q6_K": (32 * 127 * FP16_MAX, "largest magnitude", "32 x 127 x 65504"),
}


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b`` in float32, 0 where ``b`` is 0 (a sub-block whose stored scale rounded to 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = (a / b).astype(np.float32)
    return np.where(b != 0, out, np.float32(0)).astype(np.float32)


def _q4_k_fields(blocks: np.ndarray, exact: np.ndarray) -> tuple[np.ndarray, ...]:
    """Super-scales d, dmin (float32, as fp16 values), 6-bit sc and m, and 4-bit codes of Q4_K."""
    sub = blocks.reshape(-1, 8, 32)
    lo = np.minimum(sub.min(axis=2), np.float32(0))
    with np.errstate(over="ignore", invalid="ignore"):
        s = ((sub.max(axis=2) - lo) / np.float32(15)).astype(np.float32)
        d = (s.max(axis=1) / np.float32(63)).astype(np.float32)
    dmin = (-lo.min(axis=1) / np.float32(63)).astype(np.float32)
    ex = exact.reshape(-1, 8, 32)
    rng = (ex.max(axis=2) - np.minimum(ex.min(axis=2), 0)).max(axis=1)
    check_fp16_fields(
        "Q4_K",
        SUPER,
        {"super-scale d": d, "super-minimum dmin": dmin},
        {
            "super-scale d": (rng, LIMITS["Q4_K"][1] + "; " + LIMITS["Q4_K"][2]),
            "super-minimum dmin": (np.minimum(ex.min(axis=2), 0).min(axis=1), "sub-block minimum; -63 x 65504"),
        },
    )
    d16, dmin16 = f16(d), f16(dmin)
    sc = np.round(_safe_div(s, d16[:, None])).clip(0, 63).astype(np.uint8)
    m = np.round(_safe_div(-lo, dmin16[:, None])).clip(0, 63).astype(np.uint8)
    scale = (d16[:, None] * sc.astype(np.float32))[:, :, None]
    offset = (dmin16[:, None] * m.astype(np.float32))[:, :, None]
    q = np.round(_safe_div(sub + offset, scale)).clip(0, 15).astype(np.uint8)
    return d, dmin, sc, m, q


def _pack_q4_k_scales(sc: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The 12 bytes holding 8 six-bit scales and 8 six-bit minimums (layout of gguf's get_scale_min)."""
    lo_sc = (sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6)
    lo_m = (m[:, :4] & 63) | ((m[:, 4:] >> 4) << 6)
    hi = (sc[:, 4:] & 15) | ((m[:, 4:] & 15) << 4)
    return np.concatenate([lo_sc, lo_m, hi], axis=1).astype(np.uint8)


def _unpack_q4_k_scales(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b, c = packed[:, 0:4], packed[:, 4:8], packed[:, 8:12]
    sc = np.concatenate([a & 63, (c & 15) | ((a >> 6) << 4)], axis=1)
    m = np.concatenate([b & 63, (c >> 4) | ((b >> 6) << 4)], axis=1)
    return sc, m


def _quantize_q4_k(blocks: np.ndarray, exact: np.ndarray, search: bool) -> np.ndarray:
    d, dmin, sc, m, q = _q4_k_fields(blocks, exact)  # also raises where the fp16 super-scales overflow
    if search:
        d, dmin, sc, m, q = kquant_search.q4_k_fields(blocks)
        _check_search("Q4_K", {"super-scale d": d, "super-minimum dmin": dmin}, exact)
    q = q.reshape(-1, 4, 2, 32)
    qs = (q[:, :, 0] | (q[:, :, 1] << np.uint8(4))).reshape(-1, SUPER // 2)
    return np.concatenate([f16_bytes(d), f16_bytes(dmin), _pack_q4_k_scales(sc, m), qs], axis=1)


def _q6_k_fields(blocks: np.ndarray, exact: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fp16 super-scale d (as float32), int8 sub-scales and signed codes -32..31 of Q6_K."""
    sub = blocks.reshape(-1, 16, 16)
    idx = np.abs(sub).argmax(axis=2)[:, :, None]
    s = (np.take_along_axis(sub, idx, axis=2)[:, :, 0] / np.float32(-32)).astype(np.float32)
    d = (np.abs(s).max(axis=1) / np.float32(127)).astype(np.float32)
    ex = exact.reshape(-1, SUPER)
    big = np.take_along_axis(ex, np.abs(ex).argmax(axis=1)[:, None], axis=1)[:, 0]
    check_fp16_fields(
        "Q6_K", SUPER, {"super-scale d": d}, {"super-scale d": (big, "largest magnitude; 32 x 127 x 65504")}
    )
    d16 = f16(d)
    sc = np.round(_safe_div(s, d16[:, None])).clip(-127, 127).astype(np.int8)
    scale = (d16[:, None] * sc.astype(np.float32))[:, :, None]
    q = np.round(_safe_div(sub, scale)).clip(-32, 31).astype(np.int8)
    return d, sc, q.reshape(-1, SUPER)


def _quantize_q6_k(blocks: np.ndarray, exact: np.ndarray, search: bool) -> np.ndarray:
    d, sc, q = _q6_k_fields(blocks, exact)  # also raises where the fp16 super-scale overflows
    if search:
        d, sc, q = kquant_search.q6_k_fields(blocks)
        _check_search("Q6_K", {"super-scale d": d}, exact)
    u = (q.astype(np.int16) + 32).astype(np.uint8).reshape(-1, 2, 128)
    low, high = (u & 15).reshape(-1, 2, 2, 64), (u >> 4).reshape(-1, 2, 4, 32)
    ql = (low[:, :, 0] | (low[:, :, 1] << 4)).reshape(-1, 128)
    qh = (high[:, :, 0] | (high[:, :, 1] << 2) | (high[:, :, 2] << 4) | (high[:, :, 3] << 6)).reshape(-1, 64)
    return np.concatenate([ql, qh, sc.view(np.uint8), f16_bytes(d)], axis=1).astype(np.uint8)


def _check_format(fmt: str) -> str:
    if not isinstance(fmt, str) or fmt not in SUPER_BYTES:
        raise ValueError(f"K-quant {fmt!r} is not implemented; use one of {', '.join(SUPER_BYTES)}")
    return fmt


def _check_search(fmt: str, fields: dict[str, np.ndarray], exact: np.ndarray) -> None:
    """Raise if a super-scale found by the search overflows fp16 (its scales can exceed the one-pass ones)."""
    big = np.abs(exact.reshape(-1, SUPER)).max(axis=1)
    why = "largest magnitude; a little less than the one-pass limit with search=True (see formats.LIMITS)"
    check_fp16_fields(fmt, SUPER, fields, dict.fromkeys(fields, (big, why)))


def quantize(x: np.ndarray | torch.Tensor, fmt: str, *, search: bool = False) -> np.ndarray:
    """K-quant bytes of ``x``: shape ``x.shape[:-1] + (K // 256 * super_block_bytes,)``.

    ``search=False`` (default): qlesson's one-pass scales, from each sub-block's range.
    ``search=True``: llama.cpp's reference search (:mod:`qlesson.quant.kquant_search`), the same
    layout with different bytes and lower error.

    >>> x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
    >>> err = {s: float(np.square(dequantize(quantize(x, "Q4_K", search=s), "Q4_K") - x).sum()) for s in (False, True)}
    >>> err[True] < err[False]
    True
    """
    fmt = _check_format(fmt)
    if not isinstance(search, (bool, np.bool_)):
        raise ValueError(f"search={search!r}: pass True (llama.cpp's search for scales) or False (one pass)")
    blocks, exact, lead = as_blocks(x, SUPER, fmt)
    out = (_quantize_q4_k if fmt == "Q4_K" else _quantize_q6_k)(blocks, exact, bool(search))
    return out.reshape(*lead, -1)


def fields(raw: np.ndarray, fmt: str) -> dict[str, np.ndarray]:
    """The decoded fields of every super-block: ``d`` (and ``dmin``), ``sc`` (and ``m``), codes ``q``.

    ``q`` has shape ``(n, n_sub, sub)``: Q4_K codes 0..15, Q6_K codes -32..31.

    >>> f = fields(quantize(np.linspace(-1, 1, 256, dtype=np.float32), "Q6_K"), "Q6_K")
    >>> f["sc"].shape, f["q"].shape, int(f["q"].min()), int(f["q"].max()) <= 31
    ((1, 16), (1, 16, 16), -32, True)
    """
    fmt = _check_format(fmt)
    _, b = raw_blocks(raw, SUPER_BYTES[fmt], fmt)
    if fmt == "Q4_K":
        sc, m = _unpack_q4_k_scales(b[:, 4:16])
        qs = b[:, 16:].reshape(-1, 4, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
        q = (qs & 15).reshape(-1, 8, 32)
        return {"d": read_f16(b[:, 0:2]), "dmin": read_f16(b[:, 2:4]), "sc": sc, "m": m, "q": q}
    ql, qh = b[:, :128].reshape(-1, 2, 1, 64), b[:, 128:192].reshape(-1, 2, 1, 32)
    low = (ql >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)) & 15
    high = (qh >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)) & 3
    q = (low.reshape(-1, 256) | (high.reshape(-1, 256) << 4)).astype(np.int16) - 32
    return {"d": read_f16(b[:, 208:210]), "sc": b[:, 192:208].view(np.int8), "q": q.reshape(-1, 16, 16)}


def dequantize(raw: np.ndarray, fmt: str) -> np.ndarray:
    """float32 values from K-quant bytes, computed in the order gguf computes them."""
    arr, _ = raw_blocks(raw, SUPER_BYTES[_check_format(fmt)], fmt)
    f = fields(raw, fmt)
    check_finite_fields(fmt, d=f["d"], **({"dmin": f["dmin"]} if fmt == "Q4_K" else {}))
    scale = (f["d"][:, None] * f["sc"].astype(np.float32))[:, :, None]
    x = scale * f["q"].astype(np.float32)
    if fmt == "Q4_K":
        x = x - (f["dmin"][:, None] * f["m"].astype(np.float32))[:, :, None]
    return x.reshape(*arr.shape[:-1], -1).astype(np.float32)

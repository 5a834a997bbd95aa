"""llama.cpp's search for K-quant scales: ``kquants.quantize(x, fmt, search=True)``.

Introduced in lesson 08. qlesson's default K-quant scales come from each sub-block's range in
one pass (see :mod:`qlesson.quant.kquants`). llama.cpp's reference quantizers
(``quantize_row_q4_K_ref`` and ``quantize_row_q6_K_ref`` in ``ggml-quants.c``, used when no
importance matrix is given) *search* instead. This module follows them operation for
operation in float32, vectorised over sub-blocks; its sums add the terms in C's order.

* **Q4_K** (``make_qkx2_quants(32, 15, x, w, ..., rmin=-1, rdelta=0.1, nstep=20)``), per
  sub-block of 32 with weights ``w = rms(x) + |x|``: start from the range, ``lo = min(x.min(), 0)``,
  scale ``(hi - lo) / 15``. Then try 21 scales ``(14 + 0.1 * is) / (hi - lo)`` for
  ``is = 0..20``: for each, round the codes, then refit scale *and* minimum by weighted least
  squares on those codes (a minimum above 0 is set to 0 and the scale refitted alone), and keep
  the fit whose weighted squared error is lowest. A kept minimum shifts the next tries.
* **Q6_K** (``make_qx_quants(16, 32, x, ..., rmse_type=1)``), per sub-block of 16 with weights
  ``x**2``: try 19 scales ``-(32 + 0.1 * is) / max`` for ``is = -9..9`` (``max`` the signed value
  of largest magnitude), each refit by least squares ``sum(w x l) / sum(w l l)``; keep the best.
* The super-level is the same for both: Q4_K's ``d = max(scale) / 63`` and ``dmin = max(min) / 63``
  with ``sc = round(63 * scale / max(scale))``; Q6_K's ``d = -max_scale / 128``, so the sub-block
  of largest scale stores -128 and the others ``round(-128 * scale / max_scale)`` up to 127. The
  codes are then recomputed from the stored fp16 scales, as qlesson's one pass does.

Same layout, different bytes, lower error: the result is an ordinary K-quant that ``gguf`` reads
back exactly as :func:`qlesson.quant.kquants.dequantize` does.

Differences from the C reference: a (never observed) negative sub-block scale is stored as 0
here, where C's ``uint8_t`` cast wraps it; and C compiled with fused multiply-add (``-march``
with FMA) may round a few sums differently, so its bytes can differ in rare near-ties.

>>> import numpy as np
>>> x = np.random.default_rng(0).standard_normal(256).astype(np.float32)
>>> d, dmin, sc, m, q = q4_k_fields(x.reshape(1, 256))
>>> sc.shape, q.shape, int(q.max()) <= 15
((1, 8), (1, 8, 32), True)
"""

from __future__ import annotations

import numpy as np

from qlesson.quant._blocks import f16

F32 = np.float32
CHUNK = 4096  # sub-blocks per chunk


def _nearest(v: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """C's ``nearest_int`` (round half to even) clipped to ``[lo, hi]``, as float32.

    Like C's bit trick, an infinite ``v`` (a range so tiny that its reciprocal overflows) gives
    ``lo`` and a NaN gives 0.
    """
    with np.errstate(invalid="ignore"):
        out = np.clip(np.rint(v), lo, hi).astype(F32)
    bad = ~np.isfinite(v)
    if bad.any():
        out[bad] = np.where(np.isinf(v[bad]), F32(lo), F32(min(max(0, lo), hi)))
    return out


def _sum(a: np.ndarray) -> np.ndarray:
    """Sum over axis 0, one row after the other: C's ``for`` loop order (numpy adds outer axes in order)."""
    return a.sum(axis=0, dtype=F32)


def _chunked(fn, x: np.ndarray, *args: np.ndarray) -> tuple[np.ndarray, ...]:
    """``fn`` over chunks of columns, so each chunk's arrays stay in the CPU cache (several times faster)."""
    parts = [fn(x[:, i : i + CHUNK], *(a[:, i : i + CHUNK] for a in args)) for i in range(0, x.shape[1], CHUNK)]
    return tuple(np.concatenate(p, axis=-1) for p in zip(*parts, strict=True))


def _qkx2(x: np.ndarray, w: np.ndarray, nmax: int = 15) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``make_qkx2_quants`` for columns of ``x`` (n, N): scale, stored minimum ``-min`` and codes."""
    rmin, rdelta, nstep = F32(-1), F32(0.1), 20
    mn, hi = np.minimum(x.min(axis=0), F32(0)), x.max(axis=0)
    live = hi != mn
    sum_w, sum_x = _sum(w), _sum(w * x)
    iscale = F32(nmax) / np.where(live, hi - mn, F32(1))
    scale = F32(1) / iscale
    L = _nearest(iscale * (x - mn), 0, nmax)
    best = _sum(w * (scale * L + mn - x) ** 2)
    for step in range(nstep + 1):
        span = np.where(live, hi - mn, F32(1))
        la = _nearest((rmin + rdelta * F32(step) + F32(nmax)) / span * (x - mn), 0, nmax)
        wl = w * la
        sl, sl2, sxl = _sum(wl), _sum(wl * la), _sum(wl * x)
        D = sum_w * sl2 - sl * sl
        ok = live & (D > 0)
        Ds = np.where(ok, D, F32(1))
        ts, tm = (sum_w * sxl - sum_x * sl) / Ds, (sl2 * sum_x - sl * sxl) / Ds
        pos = tm > 0
        tm = np.where(pos, F32(0), tm)
        ts = np.where(pos, sxl / np.where(pos, sl2, F32(1)), ts)
        err = _sum(w * (ts * la + tm - x) ** 2)
        better = ok & (err < best)
        best = np.where(better, err, best)
        scale, mn = np.where(better, ts, scale), np.where(better, tm, mn)
        L = np.where(better, la, L)
    return np.where(live, scale, F32(0)).astype(F32), (-mn).astype(F32), np.where(live, L, F32(0))


def q4_k_fields(blocks: np.ndarray) -> tuple[np.ndarray, ...]:
    """Q4_K's fields as ``quantize_row_q4_K_ref`` chooses them: d, dmin (float32), sc, m, codes q.

    ``blocks`` is ``(n, 256)`` float32; ``d`` and ``dmin`` are the values before their fp16 rounding.
    """
    n = blocks.shape[0]
    x = np.ascontiguousarray(blocks.reshape(-1, 32).T)  # (32, n * 8): C's inner loop runs down axis 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        av = np.sqrt(_sum(x * x) / F32(32))
        scales, mins, L = _chunked(_qkx2, x, av + np.abs(x))
        scales, mins = scales.reshape(n, 8), mins.reshape(n, 8)
        max_scale = np.where(scales > 0, scales, F32(0)).max(axis=1)
        max_min = np.where(mins > 0, mins, F32(0)).max(axis=1)
        inv_s = np.where(max_scale > 0, F32(63) / np.where(max_scale > 0, max_scale, F32(1)), F32(0))
        inv_m = np.where(max_min > 0, F32(63) / np.where(max_min > 0, max_min, F32(1)), F32(0))
        sc = _nearest(inv_s[:, None] * scales, 0, 63).astype(np.uint8)
        m = _nearest(inv_m[:, None] * mins, 0, 63).astype(np.uint8)
        d, dmin = (max_scale / F32(63)).astype(F32), (max_min / F32(63)).astype(F32)
        D = (f16(d)[:, None] * sc.astype(F32))[:, :, None]
        DM = (f16(dmin)[:, None] * m.astype(F32))[:, :, None]
        q = _nearest((blocks.reshape(n, 8, 32) + DM) / np.where(D != 0, D, F32(1)), 0, 15)
    q = np.where(D != 0, q, L.T.reshape(n, 8, 32))  # C skips a sub-block whose stored scale is 0
    return d, dmin, sc, m, q.astype(np.uint8)


def _qx(x: np.ndarray, nmax: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """``make_qx_quants(n, nmax, x, L, 1, NULL)`` for columns of ``x`` (n, N): scale and codes ``L`` in 0..2 nmax-1."""
    cols = np.arange(x.shape[1])
    top = x[np.abs(x).argmax(axis=0), cols]
    live = np.abs(top) >= F32(1e-15)
    top = np.where(live, top, F32(1))
    w = x * x
    wx = w * x
    la = _nearest(F32(-nmax) / top * x, -nmax, nmax - 1)
    slx, sl2 = _sum(wx * la), _sum(w * la * la)
    scale = np.where(sl2 != 0, slx / np.where(sl2 != 0, sl2, F32(1)), F32(0))
    best, L = scale * slx, la
    for step in (*range(-9, 0), *range(1, 10)):
        la = _nearest(-(F32(nmax) + F32(0.1) * F32(step)) / top * x, -nmax, nmax - 1)
        a, b = _sum(wx * la), _sum(w * la * la)
        better = (b > 0) & (a * a > best * b)
        new = a / np.where(better, b, F32(1))
        scale, best = np.where(better, new, scale), np.where(better, new * a, best)
        L = np.where(better, la, L)
    return np.where(live, scale, F32(0)).astype(F32), np.where(live, L + F32(nmax), F32(0))


def q6_k_fields(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q6_K's fields as ``quantize_row_q6_K_ref`` chooses them: d (float32, before fp16), int8 sc, codes -32..31."""
    n = blocks.shape[0]
    x = np.ascontiguousarray(blocks.reshape(-1, 16).T)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        scales, L = _chunked(_qx, x)
        scales = scales.reshape(n, 16)
        big = scales[np.arange(n), np.abs(scales).argmax(axis=1)]
        live = np.abs(big) >= F32(1e-15)
        iscale = F32(-128) / np.where(live, big, F32(1))
        d = np.where(live, F32(1) / iscale, F32(0)).astype(F32)
        sc = _nearest(iscale[:, None] * scales, -128, 127)
        sc = np.where(live[:, None], sc, F32(0)).astype(np.int8)
        D = (f16(d)[:, None] * sc.astype(F32))[:, :, None]
        q = _nearest(blocks.reshape(n, 16, 16) / np.where(D != 0, D, F32(1)), -32, 31)
    q = np.where(D != 0, q, L.T.reshape(n, 16, 16) - F32(32))  # C skips a sub-block whose stored scale is 0
    q = np.where(live[:, None, None], q, F32(-32))  # an all-zero super-block: every byte 0
    return d, sc, q.astype(np.int8).reshape(n, 256)

"""llama.cpp's block formats Q8_0, Q4_0 and Q4_1, byte for byte.

Introduced in lesson 04. Each format is per-group quantization with groups of 32 along
the last axis (``PerGroup(32)``) and an fp16 scale stored in front of each block's codes.

======  ===========================================  =====  ===============
format  one block of 32 weights                      bytes  bits per weight
======  ===========================================  =====  ===============
Q8_0    fp16 d, 32 x int8 q                          34     8.5
Q4_0    fp16 d, 16 bytes of 4-bit q (two per byte)   18     4.5
Q4_1    fp16 d, fp16 m, 16 bytes of 4-bit q          20     5.0
======  ===========================================  =====  ===============

Where they differ from :func:`qlesson.quant.quantize` (same block, different ruler):

* **Q8_0** is symmetric with divisor 127 like ``quantize(bits=8)``, but multiplies by the
  reciprocal ``1/d`` and rounds half *away from zero* (C's ``roundf``), not half to even.
  The float32 ``d`` is used to quantize, while the stored (and dequantized) ``d`` is fp16.
* **Q4_0** uses the whole range [-8, 7]: ``d = m / -8`` where ``m`` is the signed value of
  largest magnitude, so that value lands exactly on -8, and ``q = trunc(x / d + 8.5)``
  clipped to [0, 15] (round half *up*), stored with an offset of 8.
* **Q4_1** is asymmetric with a float minimum ``m`` instead of an integer zero point:
  ``x_hat = d * q + m``, so 0.0 is not exactly representable.

Low nibbles hold the first 16 codes of a block, high nibbles the last 16.

>>> raw = quantize(np.linspace(-1, 1, 32, dtype=np.float32), "Q4_0")
>>> raw.shape, raw.dtype, BLOCK_BYTES["Q4_0"]
((18,), dtype('uint8'), 18)
>>> float(np.abs(dequantize(raw, "Q4_0") - np.linspace(-1, 1, 32)).max()) <= 0.125
True
"""

from __future__ import annotations

import numpy as np
import torch

from qlesson.quant.granularity import PerGroup, block_size

BLOCK = 32
BLOCK_BYTES = {"Q8_0": 2 + BLOCK, "Q4_0": 2 + BLOCK // 2, "Q4_1": 2 + 2 + BLOCK // 2}
FORMATS = tuple(BLOCK_BYTES)


def bits_per_weight(fmt: str) -> float:
    """Storage cost of ``fmt`` in bits per weight, from its block layout.

    >>> [bits_per_weight(f) for f in FORMATS]
    [8.5, 4.5, 5.0]
    """
    return BLOCK_BYTES[_check_format(fmt)] * 8 / BLOCK


def _check_format(fmt: str) -> str:
    if fmt not in BLOCK_BYTES:
        raise ValueError(f"format {fmt!r} is not implemented; use one of {', '.join(FORMATS)}")
    return fmt


def _as_blocks(x: np.ndarray | torch.Tensor) -> tuple[np.ndarray, tuple[int, ...]]:
    """float32 array -> (n_blocks, 32) plus the leading shape, via qlesson's PerGroup(32)."""
    from qlesson.quant._checks import as_float_tensor

    t = as_float_tensor(x).to(torch.float32)
    if t.ndim == 0:
        raise ValueError("a block format needs at least one axis of 32 values; got a 0-d scalar")
    block_size(PerGroup(BLOCK), t.shape)  # raises if the last axis is not a multiple of 32
    return t.numpy().reshape(-1, BLOCK), tuple(t.shape[:-1])


def _f16_bytes(d: np.ndarray) -> np.ndarray:
    return d.astype(np.float16).view(np.uint8).reshape(-1, 2)


def _pack_nibbles(q: np.ndarray) -> np.ndarray:
    return (q[:, : BLOCK // 2] | (q[:, BLOCK // 2 :] << np.uint8(4))).astype(np.uint8)


def _unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    return np.concatenate([packed & np.uint8(0x0F), packed >> np.uint8(4)], axis=1)


def _reciprocal(d: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)


def _round_half_away(v: np.ndarray) -> np.ndarray:
    # floor(|v| + 0.5) is off by one for |v| = 0.49999997 in float32; compare the fraction instead.
    a = np.abs(v)
    whole = np.floor(a)
    return np.sign(v) * (whole + (a - whole >= np.float32(0.5)))


F16_MAX = 65504.0
# the largest |value| each format's fp16 fields can carry: d = amax / 127, d = max / -8, and for
# Q4_1 a range (max - min) / 15 and a minimum that must both fit in fp16
LIMITS = {"Q8_0": F16_MAX * 127, "Q4_0": F16_MAX * 8, "Q4_1": F16_MAX}


def _check_fp16_range(blocks: np.ndarray, fmt: str) -> None:
    """A ValueError when a block's scale (or minimum) would overflow fp16 (gguf's own reference
    then stores inf and dequantizes to inf/NaN)."""
    if fmt == "Q4_1":
        lo, span = blocks.min(axis=1), (blocks.max(axis=1) - blocks.min(axis=1)) / np.float32(15)
        bad = np.nonzero((lo < -F16_MAX) | (span > F16_MAX))[0]
        what = "a minimum below -65504 or a range above 65504 * 15"
    else:
        bad = np.nonzero(np.abs(blocks).max(axis=1) > LIMITS[fmt])[0]
        what = f"a magnitude above {LIMITS[fmt]:.6g}"
    if bad.size:
        raise ValueError(
            f"block {int(bad[0])} of {fmt} has {what}: its fp16 scale would overflow (gguf stores inf there); "
            "scale the tensor down first"
        )


def quantize(x: np.ndarray | torch.Tensor, fmt: str) -> np.ndarray:
    """The bytes llama.cpp stores for ``x``: shape ``x.shape[:-1] + (K // 32 * block_bytes,)``.

    A block whose fp16 scale would overflow raises a ``ValueError`` (``LIMITS`` per format).
    """
    fmt = _check_format(fmt)
    blocks, lead = _as_blocks(x)
    _check_fp16_range(blocks, fmt)
    if fmt == "Q8_0":
        d = (np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)).astype(np.float32)
        q = _round_half_away(blocks * _reciprocal(d)).astype(np.int8).view(np.uint8)
        out = np.concatenate([_f16_bytes(d), q], axis=1)
    elif fmt == "Q4_0":
        idx = np.abs(blocks).argmax(axis=1)[:, None]
        d = (np.take_along_axis(blocks, idx, axis=1) / np.float32(-8)).astype(np.float32)
        q = np.trunc(blocks * _reciprocal(d) + np.float32(8.5)).clip(0, 15).astype(np.uint8)
        out = np.concatenate([_f16_bytes(d), _pack_nibbles(q)], axis=1)
    else:  # Q4_1
        lo = blocks.min(axis=1, keepdims=True)
        d = ((blocks.max(axis=1, keepdims=True) - lo) / np.float32(15)).astype(np.float32)
        q = np.trunc((blocks - lo) * _reciprocal(d) + np.float32(0.5)).clip(0, 15).astype(np.uint8)
        out = np.concatenate([_f16_bytes(d), _f16_bytes(lo), _pack_nibbles(q)], axis=1)
    return out.reshape(*lead, -1)


def dequantize(raw: np.ndarray, fmt: str) -> np.ndarray:
    """float32 values from llama.cpp bytes; the last axis shrinks back to ``K``."""
    fmt = _check_format(fmt)
    raw = np.asarray(raw)
    nb = BLOCK_BYTES[fmt]
    if raw.dtype != np.uint8 or raw.ndim == 0 or raw.shape[-1] % nb:
        raise ValueError(
            f"raw has dtype {raw.dtype} and shape {raw.shape}; {fmt} needs uint8 rows whose length "
            f"is a multiple of {nb} bytes, as returned by formats.quantize"
        )
    blocks = raw.reshape(-1, nb)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    if fmt == "Q8_0":
        x = d * blocks[:, 2:].view(np.int8).astype(np.float32)
    elif fmt == "Q4_0":
        x = d * (_unpack_nibbles(blocks[:, 2:]).astype(np.float32) - np.float32(8))
    else:
        m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
        x = d * _unpack_nibbles(blocks[:, 4:]).astype(np.float32) + m
    return x.reshape(*raw.shape[:-1], -1).astype(np.float32)


def codes(raw: np.ndarray, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-block fp16 scales ``(n_blocks,)`` and integer codes ``(n_blocks, 32)`` (Q4 codes offset by -8)."""
    fmt = _check_format(fmt)
    blocks = np.asarray(raw).reshape(-1, BLOCK_BYTES[fmt])
    d = blocks[:, :2].copy().view(np.float16)[:, 0]
    if fmt == "Q8_0":
        return d, blocks[:, 2:].view(np.int8).astype(np.int16)
    start = 2 if fmt == "Q4_0" else 4
    q = _unpack_nibbles(blocks[:, start:]).astype(np.int16)
    return d, (q - 8 if fmt == "Q4_0" else q)

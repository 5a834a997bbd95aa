"""Shared plumbing of the byte formats: input rows as blocks, raw bytes as blocks, fp16 fields.

Used by :mod:`qlesson.quant.kquants` and :mod:`qlesson.quant.microscaling`; every error names
the format, the value and the fix.
"""

from __future__ import annotations

import numpy as np
import torch

FP16_MAX = float(np.finfo(np.float16).max)


def as_blocks(x: np.ndarray | torch.Tensor, block: int, fmt: str) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """``x`` as ``(n_blocks, block)`` float32 blocks, the same in float64, and the leading shape.

    >>> b, _, lead = as_blocks(np.zeros((2, 64), dtype=np.float32), 32, "MXFP4")
    >>> b.shape, lead
    ((4, 32), (2,))
    >>> as_blocks(np.zeros((2, 48), dtype=np.float32), 32, "MXFP4")
    Traceback (most recent call last):
    ...
    ValueError: MXFP4 stores blocks of 32 values along the last axis, which has length 48; ...
    """
    from qlesson.quant._checks import as_float_tensor

    t = as_float_tensor(x)
    if t.ndim == 0:
        raise ValueError(f"{fmt} needs at least one axis of {block} values; got a 0-d scalar")
    k = int(t.shape[-1])
    if k % block:
        raise ValueError(
            f"{fmt} stores blocks of {block} values along the last axis, which has length {k}; "
            f"pad each row with zeros to a multiple of {block} (e.g. {(k // block + 1) * block}) or pick a format "
            "with smaller blocks"
        )
    exact = t.double().numpy().reshape(-1, block)
    with np.errstate(over="ignore"):  # float64 beyond float32 becomes inf: the format's check names it
        blocks = exact.astype(np.float32)
    return blocks, exact, tuple(t.shape[:-1])


def raw_blocks(raw: np.ndarray, nbytes: int, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """``raw`` as a uint8 array and as ``(n_blocks, nbytes)``, or a ValueError saying what fits."""
    arr = np.asarray(raw)
    if arr.dtype != np.uint8 or arr.ndim == 0 or arr.size == 0 or arr.shape[-1] % nbytes:
        raise ValueError(
            f"raw has dtype {arr.dtype} and shape {arr.shape}; {fmt} needs non-empty uint8 rows whose length "
            f"is a multiple of {nbytes} bytes, as returned by formats.quantize (bytes read from a file: "
            "np.frombuffer(data, dtype=np.uint8))"
        )
    return arr, arr.reshape(-1, nbytes)


def f16(d: np.ndarray) -> np.ndarray:
    """The fp16 value of ``d`` as float32 (what a reader of the bytes sees)."""
    with np.errstate(over="ignore"):
        return d.astype(np.float16).astype(np.float32)


def f16_bytes(d: np.ndarray) -> np.ndarray:
    """Little-endian fp16 bytes, one row of 2 per value."""
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(d.astype(np.float16)).view(np.uint8).reshape(-1, 2)


def read_f16(field: np.ndarray) -> np.ndarray:
    """float32 values of ``(n, 2)`` fp16 byte pairs, shape ``(n,)``."""
    return np.ascontiguousarray(field).view(np.float16)[:, 0].astype(np.float32)


def check_fp16_fields(
    fmt: str, block: int, fields: dict[str, np.ndarray], what: dict[str, tuple[np.ndarray, str]]
) -> None:
    """Raise if a super-block's fp16 field overflows, naming the super-block, the value and the limit.

    ``fields`` maps a field name to its float32 value per block; ``what`` maps the same name to
    (the value per block it is computed from, a text naming that value and its limit).
    """
    for name, d in fields.items():
        bad = ~np.isfinite(f16(d))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            value, why = what[name]
            raise ValueError(
                f"{fmt} cannot store super-block {i} (elements {i * block} to {i * block + block - 1} of the "
                f"flattened tensor): its {why.split(';')[0]} {float(value[i]):.6g} needs the fp16 {name} "
                f"{float(d[i]):.6g}, beyond fp16's largest 65504; {fmt} carries up to {why.split(';')[1].strip()}. "
                "Scale the tensor down first (and the dequantized values back up), or use ql.quantize, whose "
                "scales are float32."
            )


def check_finite_fields(fmt: str, **fields: np.ndarray) -> None:
    """Raise if decoded header fields hold inf or NaN (bytes written by an overflowing quantizer)."""
    for name, d in fields.items():
        bad = ~np.isfinite(d.reshape(len(d), -1)).all(axis=1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{fmt} block {i} stores a non-finite {name} ({d.reshape(len(d), -1)[i].tolist()}), so its values "
                "cannot be read back; quantize from values within the format's range (see formats.LIMITS)"
            )

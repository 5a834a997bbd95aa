"""Lesson 08's question: how many bits does a scale need, and where do its bits go?

The same symmetric integer codes (``bits``, codes ``-qmax..qmax``), one scale per block of
``block`` weights along each row; only how that scale is *stored* changes:

* ``fp32``: the ideal ``amax / qmax`` (the reference);
* ``fp16``: rounded to half precision (Q4_0, Q8_0, GPTQ/AWQ checkpoints);
* ``6-bit x fp16``: an unsigned 6-bit integer ``sc`` (1 to 63) times one fp16 super-scale ``d``
  shared by ``super_blocks`` consecutive blocks, ``d = max(amax / qmax) / 63`` (the K-quants' two
  levels, Q4_K's sub-scales); ``4-bit x fp16`` (``sc`` up to 15, Q2_K's width), ``5-bit x fp16``
  (up to 31) and ``int8 x fp16`` (up to 127: Q6_K's signed int8 stores 8 bits, 7 bits of steps) the same
  with other widths;
* ``E4M3 x fp32``: an FP8 number times one fp32 per tensor that puts the largest block scale at
  448 (NVFP4's two levels), rounded to nearest (a block may clip a hair);
* ``E8M0 floor``: the OCP MX specification's rule (torchao's ``ScaleCalculationMode.FLOOR``),
  ``2**(floor(log2 amax) - floor(log2 qmax))``: the block's largest weight lands in [4, 8) ticks
  for int4 and FP4 codes, and whatever lies past the grid's top (7 or 6) clips;
* ``E8M0 rceil``: torchao's ``RCEIL`` (NVIDIA's rule), the power of two at or above the ideal
  scale ``amax / qmax``: never clips, and costs up to half the range.

>>> x = torch.tensor([[0.05, -0.08, 0.12, -0.15], [2.0, -3.1, 1.7, -2.6]])
>>> rows = scale_rows(x, block=4, super_blocks=2)
>>> [r["scale format"] for r in rows][:6]
['fp32', 'fp16', '4-bit x fp16', '5-bit x fp16', '6-bit x fp16', 'int8 x fp16']
>>> [r["scale format"] for r in rows][6:]
['E4M3 x fp32', 'E8M0 floor', 'E8M0 rceil']
>>> rows[4]["scales"]  # the quiet row's 6-bit sub-scale is 3 steps of a super-scale set by the loud row
[0.021091, 0.442921]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import torch

from qlesson.quant._checks import ArrayLike, as_float_tensor, check_bits, check_whole
from qlesson.quant.minifloat import E2M1_MAX, E4M3_MAX, round_to

SUB_BITS = {"4-bit x fp16": 4, "5-bit x fp16": 5, "6-bit x fp16": 6, "int8 x fp16": 8}  # two-level integer formats
# (stored bits)
# the largest sub-scale of each (qlesson's smallest is 1; llama.cpp lets a very quiet sub-block round to 0):
# 2**bits - 1, but 127 for int8 (Q6_K's signed int8 magnitudes: 7 bits of steps)
SUB_MAX = {fmt: min(2**b - 1, 127) for fmt, b in SUB_BITS.items()}
FORMATS = ("fp32", "fp16", *SUB_BITS, "E4M3 x fp32", "E8M0 floor", "E8M0 rceil")


def stored_scales(
    ideal: torch.Tensor, fmt: str, super_blocks: int = 8, amax: torch.Tensor | None = None, qmax: float = 7
) -> torch.Tensor:
    """The scales ``fmt`` stores for ``ideal`` scales ``[rows, blocks]`` (float64, all > 0).

    ``E8M0 floor`` works from the blocks' largest magnitudes ``amax`` (default ``ideal x qmax``) and
    the grid's top ``qmax`` (7 for int4, 6 for FP4: both give the exponent 2).

    >>> stored_scales(torch.tensor([[0.3, 1.0]], dtype=torch.float64), "E8M0 rceil").tolist()
    [[0.5, 1.0]]
    >>> stored_scales(torch.tensor([[1.0, 8 / 7]], dtype=torch.float64), "E8M0 floor").tolist()  # amax 7, 8
    [[1.0, 2.0]]
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt={fmt!r} is not one of {', '.join(FORMATS)}")
    s = ideal.double()
    if fmt == "fp32":
        return s.float().double()
    if fmt == "fp16":
        return s.half().double()
    if fmt == "E8M0 rceil":
        return torch.exp2(torch.ceil(torch.log2(s)))
    if fmt == "E8M0 floor":
        a = s * qmax if amax is None else amax.double()
        e = torch.floor(torch.log2(a)) - math.floor(math.log2(qmax))
        return torch.where(a > 0, torch.exp2(e), s)
    if fmt == "E4M3 x fp32":
        t = float(np.float32(float(s.max()) / E4M3_MAX))
        return torch.from_numpy(round_to((s / t).numpy(), "E4M3")) * t
    # 4- to 8-bit x fp16: super-blocks of `super_blocks` consecutive blocks, row-major (a super-block may span
    # two rows when a row holds fewer blocks, as lesson 08 lays out K-quants on MiniLM's 384-wide rows)
    n = s.numel()
    if n % super_blocks:
        raise ValueError(f"{n} blocks is not a multiple of super_blocks={super_blocks}; pick a divisor of {n}")
    grouped = s.reshape(n // super_blocks, super_blocks)
    top = SUB_MAX[fmt]
    d = (grouped.amax(-1, keepdim=True) / top).half().double()
    sc = torch.round(grouped / d).clamp(1, top)
    return (sc * d).reshape(s.shape)


Codes = Literal["int", "E2M1"]


def _check(x: ArrayLike, block: int, bits: int, codes: str, super_blocks: int, formats: Sequence[str]) -> torch.Tensor:
    t = as_float_tensor(x).double()
    check_bits(bits)
    check_whole(block, "block", 1, "32 as in Q4_0 and MXFP4, 16 as in NVFP4")
    check_whole(super_blocks, "super_blocks", 1, "8 as in Q4_K")
    if codes not in ("int", "E2M1"):
        raise ValueError(f"codes={codes!r} must be 'int' (symmetric integers) or 'E2M1' (FP4, with bits=4)")
    if codes == "E2M1" and bits != 4:
        raise ValueError(f"codes='E2M1' is a 4-bit grid; got bits={bits}: pass bits=4")
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise ValueError(f"formats={list(formats)!r}: pick one or more of {', '.join(FORMATS)}")
    if t.ndim != 2 or t.shape[1] % block:
        raise ValueError(f"x has shape {tuple(t.shape)}; pass [rows, K] with K a multiple of block={block}")
    return t


def _measure(
    t: torch.Tensor, block: int, bits: int, codes: str, super_blocks: int, fmt: str, clip: bool = True
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The ideal and the stored scales ``[rows, blocks]``, and the squared error of the codes under the stored ones
    (``clip=False``: integer codes are rounded but not clamped to ``-qmax..qmax``)."""
    qmax = E2M1_MAX if codes == "E2M1" else 2 ** (bits - 1) - 1
    blocks = t.reshape(t.shape[0], -1, block)
    amax = blocks.abs().amax(-1)
    ideal = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))
    s = stored_scales(ideal, fmt, super_blocks, amax=amax, qmax=qmax)
    v = blocks / s[..., None]
    if codes == "E2M1":  # FP4's nearest value, ties to even, saturating at 6 (as torchao and NVFP4)
        q = torch.from_numpy(round_to(v.numpy(), "E2M1"))
    else:
        q = torch.clamp(torch.round(v), -qmax, qmax) if clip else torch.round(v)
    return ideal, s, float((q * s[..., None] - blocks).square().sum())


def scale_rows(
    x: ArrayLike,
    block: int = 32,
    bits: int = 4,
    super_blocks: int = 8,
    shown_scales: int = 2,
    formats: Sequence[str] = FORMATS,
    codes: Codes = "int",
    clip: bool = True,
) -> list[dict[str, Any]]:
    """One row per scale format: bits per weight, SQNR, worst relative scale error, and the first scales.

    ``x [rows, K]`` is split into blocks of ``block`` along each row (``K`` a multiple of it); the
    codes are symmetric ``bits``-bit integers (``codes="int"``) or FP4 E2M1 values (``"E2M1"``,
    ideal scale ``amax / 6``). ``scale bits / weight`` counts every stored scale (the super-scale
    and the tensor scale too). ``median / worst scale error``: the relative difference between a
    stored and the ideal scale over the blocks; ``top code moves``: how far the block's largest
    weight lands from the grid's top, ``|amax / s - qmax|`` in steps of the stored scale ``s``
    (``qmax |s - ideal| / s``), at the median block (``95th-pct`` and ``worst``: at those blocks;
    ``moves (ticks)``: every block's, as a numpy array);
    for integer codes a step is one tick, and rounding a weight moves it by up to half a tick. ``formats``: which of
    :data:`FORMATS` to measure, in that order. ``clip=False`` is a diagnostic, not a format: integer codes
    are rounded but not clamped to ``-qmax..qmax`` (a block whose stored scale is below the ideal then keeps
    codes past ``qmax``, which would not fit in ``bits``), so the SQNR lost to clipping shows apart from the
    SQNR lost to the scale's rounding.

    >>> x = torch.tensor([[0.4, -0.7, 1.9, 0.1]])  # E8M0 floor: scale 2**(0 - 2) = 1 / 4, so 1.9 is 7.6 ticks
    >>> rows = [scale_rows(x, 4, formats=("E8M0 floor",), clip=c)[0] for c in (True, False)]
    >>> [round(float(r["SQNR dB"]), 2) for r in rows]  # the 1.9 clips to 7 ticks; unclamped it keeps 8
    [19.77, 21.19]
    """
    if not clip and codes != "int":
        raise ValueError("clip=False applies to integer codes; FP4 codes saturate at 6 as the format does")
    t = _check(x, block, bits, codes, super_blocks, formats)
    qmax = E2M1_MAX if codes == "E2M1" else 2 ** (bits - 1) - 1
    numel, n_scales = t.numel(), t.numel() // block
    per_weight = {
        "fp32": 32 * n_scales / numel,
        "fp16": 16 * n_scales / numel,
        "E8M0 floor": 8 * n_scales / numel,
        "E8M0 rceil": 8 * n_scales / numel,
        "E4M3 x fp32": (8 * n_scales + 32) / numel,
    } | {f: (b * n_scales + 16 * n_scales / super_blocks) / numel for f, b in SUB_BITS.items()}
    signal = float(t.square().sum())
    rows = []
    for fmt in formats:
        ideal, s, err = _measure(t, block, bits, codes, super_blocks, fmt, clip)
        rel = (s - ideal).abs() / ideal
        move = qmax * (s - ideal).abs() / s  # where the largest weight lands, amax / s ticks, against qmax
        rows.append(
            {
                "scale format": fmt,
                "scale bits / weight": per_weight[fmt],
                "SQNR dB": 10 * np.log10(signal / err) if err > 0 else float("inf"),
                "median scale error": float(rel.median()),
                "worst scale error": float(rel.max()),
                "top code moves (ticks)": float(move.median()),
                "95th-pct move (ticks)": float(move.quantile(0.95)),
                "worst move (ticks)": float(move.max()),
                "moves (ticks)": move.reshape(-1).numpy(),
                "scales": [round(float(v), 6) for v in s.reshape(-1)[:shown_scales]],
            }
        )
    return rows


def grid_rows(
    weights: Mapping[str, ArrayLike], block: int = 32, formats: Sequence[str] = FORMATS, super_blocks: int = 8
) -> list[dict[str, Any]]:
    """SQNR over all the weights of ``weights`` (one number, not a mean of layers) for each scale format,
    with int4 codes (-7..7) and with FP4 E2M1 codes: the grid's share and the scale's share of the error.

    >>> x = {"a": torch.linspace(-1, 1, 64).reshape(2, 32)}
    >>> [r["scale format"] for r in grid_rows(x, formats=("fp32", "E8M0 rceil"))]
    ['fp32', 'E8M0 rceil']
    """
    if not weights:
        raise ValueError("weights is empty; pass a mapping of layer names to [rows, K] weights")
    tensors = {name: _check(w, block, 4, "int", super_blocks, formats) for name, w in weights.items()}
    signal = sum(float(t.square().sum()) for t in tensors.values())
    rows = []
    for fmt in formats:
        row: dict[str, Any] = {"scale format": fmt}
        for codes, label in (("int", "int4 -7..7"), ("E2M1", "FP4 E2M1")):
            err = sum(_measure(t, block, 4, codes, super_blocks, fmt)[2] for t in tensors.values())
            row[f"{label} SQNR dB"] = 10 * np.log10(signal / err) if err > 0 else float("inf")
        rows.append(row | {"FP4 - int4 dB": row["FP4 E2M1 SQNR dB"] - row["int4 -7..7 SQNR dB"]})
    return rows


def chain(steps: Sequence[tuple[str, float]]) -> str:
    """One line that adds up SQNR steps: the first ``(label, dB)`` is the start, each later one is shown as
    its change from the one before, and the line ends on the last value.

    >>> chain([("int4 g32", 19.85), ("blocks of 16", 21.11), ("FP4 grid", 20.61)])
    'int4 g32 19.85 dB, blocks of 16 +1.26, FP4 grid -0.50: 20.61 dB'
    """
    if len(steps) < 2:
        raise ValueError(f"got {len(steps)} step(s); pass a start and at least one step, as (label, SQNR dB) pairs")
    values = [float(v) for _, v in steps]
    if not all(np.isfinite(values)):
        raise ValueError(f"SQNR values must be finite; got {values}")
    parts = [f"{steps[0][0]} {values[0]:.2f} dB"]
    parts += [f"{label} {v - prev:+.2f}" for (label, _), v, prev in zip(steps[1:], values[1:], values, strict=False)]
    return ", ".join(parts) + f": {values[-1]:.2f} dB"


def rule_rows(
    x: ArrayLike,
    block: int = 32,
    bits: int = 4,
    super_blocks: int = 8,
    formats: Sequence[str] = ("fp16", *SUB_BITS, "E4M3 x fp32"),
) -> list[dict[str, Any]]:
    """Lesson 08's rule against the measurement, one row per scale format (integer codes ``-qmax..qmax``).

    A sub-scale of ``m`` steps (1 to ``m`` times its super-scale) is off by up to half a step,
    ``1 / (2m)`` of the scale in the super-block's loudest block, which moves that block's largest
    code (``qmax`` ticks out) by up to ``qmax / (2m)`` ticks: the ``bound (ticks)`` column (blank for formats
    without integer steps). ``median move``: the same move measured at the median block; ``95th-pct
    move`` and ``worst move``: at the 95th-percentile and the worst block (quieter blocks of a
    super-block have fewer steps and move further); ``past bound %``: the share of blocks that move further
    than the rule (blank where the rule is).
    ``SQNR loss dB``: fp32 scales' SQNR minus this format's; ``clipping dB``: the part of that loss
    that goes away when codes are not clamped to ``-qmax..qmax`` (:func:`scale_rows` with ``clip=False``).

    >>> x = torch.linspace(-1, 1, 512).reshape(4, 128)
    >>> [round(r["bound (ticks)"], 3) for r in rule_rows(x, formats=("6-bit x fp16", "int8 x fp16"))]
    [0.056, 0.028]
    """
    qmax = 2 ** (bits - 1) - 1
    every = ("fp32", *formats)
    kept, free = (
        {r["scale format"]: r for r in scale_rows(x, block, bits, super_blocks, 0, every, clip=c)}
        for c in (True, False)
    )
    rows = []
    for fmt in formats:
        m = SUB_MAX.get(fmt)
        rows.append(
            {
                "scale format": fmt,
                "scale bits / weight": kept[fmt]["scale bits / weight"],
                "steps m": m if m else "",
                "bound (ticks)": qmax / (2 * m) if m else "",
                "median move (ticks)": kept[fmt]["top code moves (ticks)"],
                "95th-pct move": kept[fmt]["95th-pct move (ticks)"],
                "worst move": kept[fmt]["worst move (ticks)"],
                "past bound %": 100 * float((kept[fmt]["moves (ticks)"] > qmax / (2 * m)).mean()) if m else "",
                "SQNR loss dB": kept["fp32"]["SQNR dB"] - kept[fmt]["SQNR dB"],
                "clipping dB": free[fmt]["SQNR dB"] - kept[fmt]["SQNR dB"],
            }
        )
    return rows


def oversized_scale_rows(
    weights: Mapping[str, ArrayLike], block: int = 32, factors: Sequence[float] = (1.0, 1.5, 1.75)
) -> list[dict[str, Any]]:
    """SQNR over all the weights of ``weights`` with every block's scale a fixed ``factor`` times its ideal
    (``amax / 7`` for int4 codes -7..7, ``amax / 6`` for FP4 E2M1 codes): lesson 08's control for why a
    power-of-two scale costs FP4 codes less than int4 codes. A factor of 1 or more never clips, so only the
    grid's response to a scale that is too large is measured.

    >>> x = {"a": torch.linspace(-1, 1, 64).reshape(2, 32)}
    >>> [r["scale"] for r in oversized_scale_rows(x, factors=(1.0, 1.5))]
    ['exact', '1.5x too large']
    """
    if not weights or any(float(f) < 1 for f in factors):
        raise ValueError(f"pass a non-empty mapping of weights and factors of at least 1; got factors={factors}")
    tensors = [_check(w, block, 4, "int", 1, ("fp32",)).reshape(-1, block) for w in weights.values()]
    signal = sum(float(t.square().sum()) for t in tensors)
    rows = []
    for factor in factors:
        row: dict[str, Any] = {"scale": "exact" if factor == 1 else f"{factor:g}x too large"}
        for label, qmax in (("int4 -7..7", 7), ("FP4 E2M1", E2M1_MAX)):
            err = 0.0
            for t in tensors:
                amax = t.abs().amax(-1, keepdim=True)
                s = torch.where(amax > 0, amax / qmax, torch.ones_like(amax)) * factor
                v = t / s
                q = torch.round(v) if qmax == 7 else torch.from_numpy(round_to(v.numpy(), "E2M1"))
                err += float((q * s - t).square().sum())
            row[f"{label} SQNR dB"] = 10 * np.log10(signal / err)
        rows.append(row)
    return rows


def _block_sq_errors(blocks: torch.Tensor, s: torch.Tensor, codes: str) -> torch.Tensor:
    """Each block's squared error ``[n]`` for ``blocks [n, block]`` under scales ``s [n]`` (int4 -7..7 or FP4)."""
    v = blocks / s[:, None]
    q = torch.clamp(torch.round(v), -7, 7) if codes == "int" else torch.from_numpy(round_to(v.numpy(), "E2M1"))
    return (q * s[:, None] - blocks).square().sum(-1)


def pow2_best_row(weights: Mapping[str, ArrayLike], block: int = 32) -> dict[str, Any]:
    """:func:`grid_rows`'s row for a power-of-two scale fitted to each grid: per block, the better (lower squared
    error) of the two powers of two around the grid's ideal scale (``amax / 7`` for int4, ``amax / 6`` for FP4).
    The OCP floor rule aims at FP4's top; this row is a power of two chosen for either grid.

    >>> x = {"a": torch.linspace(-1, 1, 64).reshape(2, 32)}
    >>> pow2_best_row(x)["scale format"]
    'E8M0 best of 2'
    """
    if not weights:
        raise ValueError("weights is empty; pass a mapping of layer names to [rows, K] weights")
    tensors = [_check(w, block, 4, "int", 1, ("fp32",)).reshape(-1, block) for w in weights.values()]
    signal = sum(float(t.square().sum()) for t in tensors)
    row: dict[str, Any] = {"scale format": "E8M0 best of 2"}
    for codes, label, qmax in (("int", "int4 -7..7", 7.0), ("E2M1", "FP4 E2M1", E2M1_MAX)):
        err = 0.0
        for t in tensors:
            amax = t.abs().amax(-1)
            ideal = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))
            low = torch.exp2(torch.floor(torch.log2(ideal)))
            err += float(torch.minimum(_block_sq_errors(t, low, codes), _block_sq_errors(t, 2 * low, codes)).sum())
        row[f"{label} SQNR dB"] = 10 * np.log10(signal / err)
    return row | {"FP4 - int4 dB": row["FP4 E2M1 SQNR dB"] - row["int4 -7..7 SQNR dB"]}


def random_oversized_row(
    weights: Mapping[str, ArrayLike], block: int = 32, up_to: float = 1.5, seed: int = 0
) -> dict[str, Any]:
    """:func:`oversized_scale_rows`'s row with a factor drawn per block, log-uniform in ``[1, up_to]``: a scale too
    large by as much as a power-of-two rule leaves it, without one lucky factor for every block.

    >>> x = {"a": torch.linspace(-1, 1, 64).reshape(2, 32)}
    >>> random_oversized_row(x)["scale"]
    'random 1-1.5x per block'
    """
    if not weights or up_to < 1:
        raise ValueError(f"pass a non-empty mapping of weights and up_to of at least 1; got up_to={up_to}")
    gen = torch.Generator().manual_seed(seed)
    tensors = [_check(w, block, 4, "int", 1, ("fp32",)).reshape(-1, block) for w in weights.values()]
    draws = [torch.rand(t.shape[0], generator=gen, dtype=torch.float64) for t in tensors]
    factors = [torch.exp2(u * math.log2(up_to)) for u in draws]
    signal = sum(float(t.square().sum()) for t in tensors)
    row: dict[str, Any] = {"scale": f"random 1-{up_to:g}x per block"}
    for codes, label, qmax in (("int", "int4 -7..7", 7.0), ("E2M1", "FP4 E2M1", E2M1_MAX)):
        err = 0.0
        for t, f in zip(tensors, factors, strict=True):
            amax = t.abs().amax(-1)
            s = torch.where(amax > 0, amax / qmax, torch.ones_like(amax)) * f
            err += float(_block_sq_errors(t, s, codes).sum())
        row[f"{label} SQNR dB"] = 10 * np.log10(signal / err)
    return row

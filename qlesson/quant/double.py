"""Double quantization: the group scales themselves quantized to 8 bits (QLoRA, K-quants).

Introduced in lesson 08. Per-group int4 with groups of 64 and fp16 scales spends
16 / 64 = 0.25 bits per weight on scales. Storing each scale instead as an unsigned
``scale_bits``-bit code ``c`` under one float32 second-level scale ``s2`` per
``scale_group`` consecutive scales costs ``(scale_bits + 32 / scale_group) / group_size``:
8-bit codes in blocks of 256 give 0.127 bits per weight, QLoRA's number.

How qlesson does it (one pass):

1. float32 group scales ``s = absmax / qmax`` as :func:`qlesson.quant.quantize` (symmetric);
2. the scales, flattened in row-major order, are cut into blocks of ``scale_group``; each
   block's ``s2 = max(s) / (2**scale_bits - 1)`` and ``c = round(s / s2)`` clipped to
   ``[1, 2**scale_bits - 1]`` (never 0, so a group never loses its ruler);
3. the weight codes are computed from the *stored* scale ``c x s2``:
   ``q = clamp(round(x / (c x s2)), qmin, qmax)``, as K-quants do, so a scale rounded down
   clips at most its group's largest value by under half a step of ``s2``.

QLoRA differs in two ways: its scales are quantized to FP8 after subtracting their mean,
and its weight codes (NF4) were computed before the scales were rounded.

>>> w = torch.randn(64, 256, generator=torch.Generator().manual_seed(0))
>>> dq = double_quantize(w, 4, group_size=64, scale_bits=8, scale_group=256)
>>> dq.bits_per_weight, dq.nbytes * 8 / w.numel()
(4.126953125, 4.126953125)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from qlesson.quant._checks import ArrayLike, as_float_tensor, check_bits, check_whole
from qlesson.quant.granularity import PerGroup
from qlesson.quant.quantize import compute_qparams, qrange


@dataclass(frozen=True)
class DoubleQuant:
    """int codes ``q`` (shape of ``x``), scale codes (the group-scale shape) and one float32 per scale block."""

    q: torch.Tensor
    scale_codes: torch.Tensor
    scale_scales: torch.Tensor
    bits: int
    group_size: int
    scale_bits: int
    scale_group: int

    def scales(self) -> torch.Tensor:
        """The group scales as stored: ``c x s2``, shape ``(..., K // group_size)``."""
        c = self.scale_codes.reshape(-1, self.scale_group).float()
        return (c * self.scale_scales[:, None]).reshape(self.scale_codes.shape)

    def dequantize(self) -> torch.Tensor:
        g = self.group_size
        q = self.q.reshape(*self.q.shape[:-1], -1, g).float()
        return (q * self.scales()[..., None]).reshape(self.q.shape)

    @property
    def nbytes(self) -> int:
        """Packed codes, scale codes and float32 second-level scales."""
        payload = (self.q.numel() * self.bits + 7) // 8
        return payload + (self.scale_codes.numel() * self.scale_bits + 7) // 8 + 4 * self.scale_scales.numel()

    @property
    def bits_per_weight(self) -> float:
        """``bits + (scale_bits + 32 / scale_group) / group_size``."""
        return self.bits + (self.scale_bits + 32 / self.scale_group) / self.group_size


def double_quantize(
    x: ArrayLike, bits: int = 4, *, group_size: int = 64, scale_bits: int = 8, scale_group: int = 256
) -> DoubleQuant:
    """Symmetric per-group quantization whose group scales are quantized again, see the module docstring."""
    bits = check_bits(bits)
    scale_bits = check_bits(scale_bits)
    group_size = check_whole(group_size, "group_size", 1, "weights per scale, such as 32 or 64")
    scale_group = check_whole(scale_group, "scale_group", 1, "scales per second-level scale, such as 256")
    t = as_float_tensor(x).float()
    if t.ndim == 0:
        raise ValueError("double_quantize needs at least one axis; got a 0-d scalar")
    s, _ = compute_qparams(t, bits, PerGroup(group_size))  # raises if group_size does not divide K
    s = s.reshape(*t.shape[:-1], -1)
    if s.numel() % scale_group:
        raise ValueError(
            f"there are {s.numel()} group scales (K // group_size = {s.shape[-1]} per row), not a multiple of "
            f"scale_group={scale_group}; pick a scale_group that divides {s.numel()}"
        )
    cmax = 2**scale_bits - 1
    flat = s.reshape(-1, scale_group)
    s2 = flat.amax(dim=1) / cmax
    c = torch.round(flat / s2[:, None]).clamp(1, cmax)
    stored = (c * s2[:, None]).reshape(s.shape)
    qmin, qmax = qrange(bits)
    q = torch.round(t.reshape(*s.shape, group_size) / stored[..., None]).clamp(qmin, qmax)
    return DoubleQuant(
        q=q.reshape(t.shape).to(torch.int8 if bits <= 8 else torch.int16),
        scale_codes=c.reshape(s.shape).to(torch.uint8 if scale_bits <= 8 else torch.int32),
        scale_scales=s2,
        bits=bits,
        group_size=group_size,
        scale_bits=scale_bits,
        scale_group=scale_group,
    )

"""FP8 E4M3 weights with float32 scales per tensor, row, 1 x 128 tile or 128 x 128 block.

Introduced in lesson 08. Each block of the granularity gets the float32 scale
``amax / 448`` (448 is E4M3's largest finite value), and each element is stored as the
E4M3 value nearest to ``x / scale`` (ties to even, saturating), the same value
``(x / scale).to(torch.float8_e4m3fn)`` gives. DeepSeek-V3 stores its weights with
``PerBlock((128, 128))`` and its activations with ``PerGroup(128)`` (1 x 128 tiles).

An all-zero block gets scale 1.0; a scale is never below float32's smallest normal number
(as :func:`qlesson.quant.quantize` does).

>>> w = torch.linspace(-1, 1, 256 * 256).reshape(256, 256)
>>> t = quantize_fp8(w, PerBlock((128, 128)))
>>> t.data.dtype, tuple(t.scale.shape), t.bits_per_weight
(torch.float8_e4m3fn, (2, 2), 8.001953125)
>>> float((t.dequantize() - w).abs().max()) <= 1 / 16
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from qlesson.quant._checks import ArrayLike, as_float_tensor
from qlesson.quant.granularity import (  # noqa: F401 (PerTensor in doctests)
    Granularity,
    PerBlock,
    PerTensor,
    block_dims,
    grid_shape,
    scale_shape,
    to_blocks,
)
from qlesson.quant.minifloat import E4M3_MAX, round_to


@dataclass(frozen=True)
class FP8Tensor:
    """E4M3 elements (``torch.float8_e4m3fn``) and float32 scales of shape ``scale_shape(granularity, shape)``."""

    data: torch.Tensor
    scale: torch.Tensor
    granularity: Granularity

    def _grid(self) -> torch.Tensor:
        grid = grid_shape(self.granularity, self.data.shape)
        return self.scale.reshape([n for g in grid for n in (g, 1)])

    def dequantize(self) -> torch.Tensor:
        """float32 ``e4m3 x scale`` in the input's shape."""
        blocks = to_blocks(self.data.float(), self.granularity)
        return (blocks * self._grid()).reshape(self.data.shape)

    @property
    def bits_per_weight(self) -> float:
        """8 bits per element plus a float32 scale per block."""
        return 8 + 32 * self.scale.numel() / self.data.numel()


DEEPSEEK = PerBlock((128, 128))


def quantize_fp8(x: ArrayLike, granularity: Granularity = DEEPSEEK) -> FP8Tensor:
    """E4M3 with one float32 scale per block of ``granularity`` (default DeepSeek-V3's 128 x 128)."""
    t = as_float_tensor(x)
    top, limit = float(t.abs().max()), float(torch.finfo(torch.float32).max)
    if top > limit:
        raise ValueError(
            f"x holds {top:.6g}, beyond float32's largest {limit:.6g}; FP8's scales are float32, so "
            "scale the tensor down first (e.g. x / 1e30) and keep that factor"
        )
    if top > 0 and float(torch.tensor(top, dtype=torch.float32)) == 0:  # float64 below float32's subnormals
        raise ValueError(
            f"x's largest magnitude, {top:.6g}, rounds to 0 in float32 (its smallest positive number is "
            f"{2.0**-149:.6g}); FP8's scales are float32, so scale the tensor up first (e.g. x * 1e30) and keep "
            "that factor"
        )
    t = t.float()
    if t.ndim == 0:
        raise ValueError("quantize_fp8 needs at least one axis; got a 0-d scalar")
    blocks = to_blocks(t, granularity)
    amax = blocks.abs().amax(dim=block_dims(t.ndim), keepdim=True)
    tiny = torch.finfo(torch.float32).tiny
    scale = torch.where(amax > 0, (amax / E4M3_MAX).clamp_min(tiny), torch.ones_like(amax))
    scaled = (blocks / scale).reshape(t.shape)
    data = torch.from_numpy(round_to(scaled.numpy(), "E4M3").astype(np.float32)).to(torch.float8_e4m3fn)
    return FP8Tensor(data=data, scale=scale.reshape(scale_shape(granularity, t.shape)), granularity=granularity)


def granularity_label(granularity: Granularity) -> str:
    """DeepSeek-style names: per-tensor, per-row, 1x128, 128x128.

    >>> granularity_label(PerTensor()), granularity_label(PerBlock((128, 128)))
    ('per-tensor', '128x128')
    """
    from qlesson.quant.granularity import PerChannel, PerGroup

    if isinstance(granularity, PerBlock):
        return "x".join(str(b) for b in granularity.block_shape)
    if isinstance(granularity, PerGroup):
        return f"1x{granularity.group_size}"
    if isinstance(granularity, PerChannel):
        return "per-row" if granularity.axis in (0, -2) else "per-column"
    return "per-tensor"

"""Bytes on disk and bits per weight, computed from a shape alone.

Introduced in lesson 04. The payload is ``numel * bits`` bits, packed and rounded up to
whole bytes; the metadata is one scale (``scale_bytes``, 2 for fp16) plus one zero point
(``zero_point_bytes``, 0 when symmetric) per block.

>>> fp = footprint((4096, 4096), 4, PerGroup(128))
>>> fp.payload_bytes, fp.metadata_bytes, fp.bits_per_weight
(8388608, 262144, 4.125)
>>> footprint((4096, 4096), 8, PerChannel(0), scale_bytes=4).metadata_bytes
16384
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from qlesson.quant._checks import check_bits
from qlesson.quant.granularity import Granularity, PerChannel, PerGroup, PerTensor, n_blocks  # noqa: F401 (doctests)


@dataclass(frozen=True)
class Footprint:
    """Storage for one quantized tensor."""

    numel: int
    payload_bytes: int
    metadata_bytes: int
    n_scales: int

    @property
    def total_bytes(self) -> int:
        return self.payload_bytes + self.metadata_bytes

    @property
    def bits_per_weight(self) -> float:
        return self.total_bytes * 8 / self.numel

    @property
    def metadata_fraction(self) -> float:
        """Share of the total bytes spent on scales and zero points."""
        return self.metadata_bytes / self.total_bytes


def total_footprint(
    shapes: Sequence[tuple[int, ...]],
    bits: int,
    granularity: Granularity = PerTensor(),
    *,
    scale_bytes: int = 2,
    zero_point_bytes: int = 0,
) -> Footprint:
    """:func:`footprint` summed over many tensors (a whole model's Linear weights).

    >>> total_footprint([(4, 64), (8, 64)], 4, PerChannel(0)).n_scales
    12
    """
    shapes = list(shapes)
    if not shapes:
        raise ValueError("shapes is empty; pass the shape of at least one tensor, e.g. [(4096, 4096)]")
    parts = [
        footprint(s, bits, granularity, scale_bytes=scale_bytes, zero_point_bytes=zero_point_bytes) for s in shapes
    ]
    return Footprint(
        numel=sum(p.numel for p in parts),
        payload_bytes=sum(p.payload_bytes for p in parts),
        metadata_bytes=sum(p.metadata_bytes for p in parts),
        n_scales=sum(p.n_scales for p in parts),
    )


def footprint(
    shape: tuple[int, ...],
    bits: int,
    granularity: Granularity = PerTensor(),
    *,
    scale_bytes: int = 2,
    zero_point_bytes: int = 0,
) -> Footprint:
    """Payload and metadata bytes of a ``shape`` tensor at ``bits`` bits, no tensor needed.

    >>> footprint((2, 4), 4, PerChannel(0)).total_bytes
    8
    """
    bits = check_bits(bits)
    if isinstance(shape, int) or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape):
        raise ValueError(f"shape {shape!r} must be a tuple of whole numbers, e.g. (4096, 4096)")
    shape = tuple(int(s) for s in shape)
    if any(s < 1 for s in shape):
        raise ValueError(f"shape {shape} has an empty dimension; every dimension needs at least one element")
    for name, value in (("scale_bytes", scale_bytes), ("zero_point_bytes", zero_point_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name}={value!r} must be a whole number of bytes >= 0 (2 for fp16, 4 for fp32)")
    numel = math.prod(shape)
    scales = n_blocks(granularity, shape)
    return Footprint(
        numel=numel,
        payload_bytes=math.ceil(numel * bits / 8),
        metadata_bytes=scales * (scale_bytes + zero_point_bytes),
        n_scales=scales,
    )

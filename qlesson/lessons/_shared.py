"""Small tensors and helpers that several lessons' tasks share."""

from __future__ import annotations

import torch

TWO = torch.tensor([[0.05, -0.08, 0.12, -0.15], [2.0, -3.1, 1.7, -2.6]])  # lesson 02's 2x4 example
NEG = torch.tensor([-1.70, -1.22, -0.94, -1.43, -1.11])  # a negative-only channel
POS = torch.tensor([1.20, 0.95, 1.44, 1.10, 0.88])  # a positive-only channel
MIXED = torch.tensor([0.12, -0.33, 0.48, -0.05, 0.91])


def qmax(bits: int) -> int:
    """The largest code of a restricted symmetric signed ruler.

    >>> qmax(4), qmax(8)
    (7, 127)
    """
    return 2 ** (bits - 1) - 1


def weights(gen: torch.Generator, *shape: int, spread: bool = True) -> torch.Tensor:
    """Random weights; with ``spread`` the rows span 1.5 decades of scale, like real layers.

    >>> weights(torch.Generator().manual_seed(0), 3, 4).shape
    torch.Size([3, 4])
    """
    w = torch.randn(*shape, generator=gen)
    if spread and len(shape) >= 2:
        w = w * torch.logspace(-1.5, 0.5, shape[0]).reshape(-1, *[1] * (len(shape) - 1))
    return w


def codes(x: torch.Tensor, scale: torch.Tensor | float) -> torch.Tensor:
    """``x / scale``, with 0 where the scale is 0 (an all-zero row or group: codes 0, as in ``ql.quantize``).

    >>> codes(torch.tensor([[1.0, -2.0], [0.0, 0.0]]), torch.tensor([[0.5], [0.0]])).tolist()
    [[2.0, -4.0], [0.0, 0.0]]
    """
    scale = torch.as_tensor(scale, dtype=x.dtype)
    return torch.where(scale == 0, torch.zeros_like(x), x / torch.where(scale == 0, 1, scale))


def with_zero_row(w: torch.Tensor, row: int = 1) -> torch.Tensor:
    """A copy of ``w`` whose ``row`` is all zeros (a dead channel: an edge case every checker needs)."""
    w = w.clone()
    w[row] = 0
    return w

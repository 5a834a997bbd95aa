"""Where the scales go inside ``y = x @ W.T`` (lesson 06). Plain, small, exact helpers.

For ``W = s[:, None] * q`` (one scale per output channel) the scale is constant along the
reduction axis K and factors out: ``y[:, n] = s[n] * (x @ q[n, :])``. Per-group scales
change along K and must be applied inside the sum.

>>> x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
>>> q = torch.tensor([[1, -2, 3, 0], [2, 2, -1, 1]], dtype=torch.int8)
>>> s = torch.tensor([0.5, 0.25])
>>> scale_after_gemm(x, q, s), dequant_then_gemm(x, q, s)
(tensor([[3.0000, 1.7500]]), tensor([[3.0000, 1.7500]]))
"""

from __future__ import annotations

import torch


def dequant_then_gemm(x: torch.Tensor, q: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Dequantize the whole weight to float, then multiply: ``x @ (s * q).T``."""
    return x @ (q.float() * s[:, None]).T


def scale_after_gemm(x: torch.Tensor, q: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Multiply by the integer codes first, then scale each output column once: ``(x @ q.T) * s``."""
    return (x @ q.float().T) * s


def group_scaled_gemm(x: torch.Tensor, q: torch.Tensor, s: torch.Tensor, group_size: int) -> torch.Tensor:
    """Per-group scales ``s [N, K/g]``: one partial product per group, each scaled, then summed.

    >>> x = torch.ones(1, 4); q = torch.ones(2, 4, dtype=torch.int8); s = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> group_scaled_gemm(x, q, s, 2)
    tensor([[ 6., 14.]])
    """
    m, k = x.shape
    n = q.shape[0]
    xg = x.reshape(m, k // group_size, group_size)  # [M, G, g]
    qg = q.float().reshape(n, k // group_size, group_size)  # [N, G, g]
    partial = torch.einsum("mgk,ngk->mng", xg, qg)  # one partial sum per group
    return (partial * s[None]).sum(-1)


def tile_dequant_gemm(x: torch.Tensor, q: torch.Tensor, s: torch.Tensor, group_size: int) -> torch.Tensor:
    """What fused weight-only kernels do with per-group scales ``s [N, K/g]``: walk K one group
    at a time, scale that tile of codes (in registers, in a real kernel), multiply it at once.

    No dequantized weight is ever stored whole: only one ``[N, g]`` tile exists at a time.
    The result equals dequantize-then-GEMM up to float rounding.

    >>> x = torch.ones(1, 4); q = torch.ones(2, 4, dtype=torch.int8); s = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> tile_dequant_gemm(x, q, s, 2)
    tensor([[ 6., 14.]])
    """
    m, k = x.shape
    acc = torch.zeros(m, q.shape[0], dtype=torch.float32)
    for i, start in enumerate(range(0, k, group_size)):
        tile = q[:, start : start + group_size].float() * s[:, i : i + 1]  # one group's weights, scaled
        acc += x[:, start : start + group_size] @ tile.T  # multiplied while the tile is "in registers"
    return acc


def fold_input_scale(x: torch.Tensor, q: torch.Tensor, s_in: torch.Tensor) -> torch.Tensor:
    """A per-*input*-channel scale ``s_in [K]`` moved onto the activations: ``(x * s_in) @ q.T``.

    Equal to ``x @ (q * s_in).T``: the scale multiplies column k of the weight, which is the same
    as multiplying feature k of every token. That is how AWQ and SmoothQuant apply their scales.

    >>> x = torch.tensor([[1.0, 2.0]]); q = torch.tensor([[3, -1]], dtype=torch.int8); s = torch.tensor([0.5, 4.0])
    >>> fold_input_scale(x, q, s), x @ (q.float() * s).T
    (tensor([[-6.5000]]), tensor([[-6.5000]]))
    """
    return (x * s_in) @ q.float().T


def int_gemm_zero_points(qx: torch.Tensor, zx: int, qw: torch.Tensor, zw: torch.Tensor) -> torch.Tensor:
    """``sum_k (qx - zx)(qw - zw)`` from the product of the raw codes and three correction terms.

    ``= qx @ qw.T - zw * rowsum(qx) - zx * colsum(qw) + K * zx * zw``: the integer GEMM runs on
    the stored codes; a per-token row sum of the activation codes times each channel's weight
    zero point, and a per-channel sum of the weight codes (computed offline) times the
    activation zero point, fix the result. All in int32 (int64 here, to show it is exact).

    >>> qx = torch.tensor([[3, 0, 5]]); qw = torch.tensor([[1, 2, 3], [0, 4, 1]])
    >>> int_gemm_zero_points(qx, 2, qw, torch.tensor([1, 2])), (qx - 2) @ (qw - torch.tensor([[1], [2]])).T
    (tensor([[ 4, -9]]), tensor([[ 4, -9]]))
    """
    qx, qw = qx.long(), qw.long()
    k = qx.shape[1]
    acc = qx @ qw.T
    return acc - zw[None, :] * qx.sum(1, keepdim=True) - zx * qw.sum(1)[None, :] + k * zx * zw[None, :]


def w8a8(x: torch.Tensor, q: torch.Tensor, s_w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token int8 activations times per-channel int8 weights; returns (y, int32 accumulator).

    ``y = acc * s_x[:, None] * s_w[None, :]``: a rank-1 rescale of the int32 accumulator.
    """
    s_x = x.abs().amax(1).clamp_min(1e-12) / 127
    qx = torch.round(x / s_x[:, None]).clamp(-127, 127).to(torch.int8)
    acc = qx.int() @ q.int().T
    return acc.float() * torch.outer(s_x, s_w), acc


def flops_and_bytes(m: int, k: int, n: int, weight_bits: float) -> dict[str, float]:
    """FLOPs of one ``[M, K] x [K, N]`` product and the bytes of its weight, activations, output.

    >>> flops_and_bytes(1, 4096, 4096, 4.5)["weight bytes"]
    9437184.0
    """
    return {
        "FLOPs": 2.0 * m * k * n,
        "weight bytes": k * n * weight_bits / 8,
        "activation bytes": 4.0 * m * k,
        "output bytes": 4.0 * m * n,
        "FLOPs per weight byte": 2.0 * m * k * n / (k * n * weight_bits / 8),
    }

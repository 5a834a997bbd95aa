"""The KV cache: quantizing keys and values per token or per channel, and what the cache costs.

Introduced in lesson 10. A layer's cache holds, for every token seen so far, a key and a value
vector per head: ``[tokens, channels]`` (or ``[heads, tokens, head_dim]``). The granularity
question is the lesson 02 question turned sideways: one scale per *token* (a row, with groups of
``group`` channels) or one per *channel* (a column, with groups of ``group`` tokens). KIVI keeps
keys per channel and values per token; the most recent ``residual`` tokens stay in full
precision, which is also what makes per-channel scales possible while tokens stream in: a
channel's scale over a group of tokens exists only once the group is complete.

>>> k = torch.tensor([[1.0, 10.0], [2.0, -9.0], [-1.0, 11.0], [0.5, -10.0]])
>>> fake_quantize_kv(k, 2, "channel").tolist() == fake_quantize_kv(k, 2, "channel", group=4).tolist()
True
>>> kv_cache_bytes(layers=32, kv_heads=32, head_dim=128, tokens=4096)  # LLaMA-7B-like, fp16: 2 GiB
2147483648
"""

from __future__ import annotations

import math

import torch

from qlesson.quant._checks import ArrayLike, as_float_tensor, check_bits, check_flag, check_magnitude, check_whole
from qlesson.quant.granularity import PerChannel, PerGroup
from qlesson.quant.quantize import fake_quantize

AXES = ("token", "channel")


def _check_axis(axis: str) -> str:
    if axis not in AXES:
        raise ValueError(f"axis={axis!r} must be 'token' (a scale per token) or 'channel' (a scale per channel)")
    return axis


def _check_group(group: int | None) -> int | None:
    """``None`` (one group over the whole axis) or a whole number of at least 1."""
    return None if group is None else check_whole(group, "group", 1, "e.g. 32, or None for one group")


def quantized_tokens(tokens: int, axis: str, group: int | None = None, residual: int = 0) -> int:
    """How many of ``tokens`` are stored quantized; the rest (the newest) stay in full precision.

    Per token, every token but the ``residual`` newest. Per channel with groups of ``group``
    tokens, only whole groups of the older tokens: a group's scale needs all its tokens.

    >>> quantized_tokens(100, "token", residual=32), quantized_tokens(100, "channel", group=32, residual=32)
    (68, 64)
    """
    _check_axis(axis)
    tokens = check_whole(tokens, "tokens", 0, "the number of cached tokens")
    residual = check_whole(residual, "residual", 0, "the newest tokens kept in full precision, e.g. 32")
    older = max(tokens - residual, 0)
    if axis == "channel" and group is not None:
        group = check_whole(group, "group", 1, "e.g. 32 tokens per scale, as KIVI")
        return older // group * group
    return older


def fake_quantize_kv(
    x: ArrayLike,
    bits: int,
    axis: str,
    *,
    group: int | None = None,
    symmetric: bool = False,
    residual: int = 0,
) -> torch.Tensor:
    """``x [..., tokens, channels]`` quantized and dequantized with one scale per token or per channel.

    Args:
        x: keys or values, ``[tokens, channels]`` or ``[heads, tokens, head_dim]``.
        bits: 2 to 8.
        axis: ``"token"`` (a scale, and zero point, per token: groups of ``group`` channels) or
            ``"channel"`` (per channel: groups of ``group`` tokens, or all quantized tokens).
        group: group size along the other axis; ``None`` for one group over the whole axis.
        symmetric: ``False`` (the default, as KIVI) stores each group's minimum as a float and
            spreads the codes from the minimum to the maximum (no widening to include 0, unlike
            :func:`qlesson.quant.quantize.quantize`'s integer zero point); ``True`` is symmetric
            around 0.
        residual: the newest tokens, kept in full precision (see :func:`quantized_tokens`).

    >>> v = torch.tensor([[0.1, 0.2, 0.3, 0.4], [5.0, 6.0, 7.0, 8.0]])
    >>> fake_quantize_kv(v, 8, "token", residual=1)[1].tolist()  # the newest token untouched
    [5.0, 6.0, 7.0, 8.0]
    """
    t = as_float_tensor(x, "x")
    bits = check_bits(bits)
    if not 2 <= bits <= 8:
        raise ValueError(f"bits={bits} is outside the KV cache's usual 2 to 8; pick 2, 3, 4 or 8")
    symmetric = check_flag(symmetric, "symmetric")
    group = _check_group(group)
    if t.ndim < 2:
        raise ValueError(f"x has shape {tuple(t.shape)}; pass [tokens, channels] or [heads, tokens, head_dim]")
    n_tok, n_ch = t.shape[-2], t.shape[-1]
    n_q = quantized_tokens(n_tok, axis, group, residual)
    out = t.clone()
    if n_q == 0:
        return out
    old = t[..., :n_q, :]
    if axis == "token":
        rows = old.reshape(-1, n_ch)
        if group is not None and n_ch % group:
            raise ValueError(f"group={group} does not divide the {n_ch} channels; pick a divisor such as 32")
        out[..., :n_q, :] = _rows(rows, bits, group, symmetric).reshape(old.shape)
    else:
        cols = old.transpose(-1, -2).reshape(-1, n_q)  # one row per channel, along its tokens
        if group is not None and n_q % group:
            raise ValueError(f"group={group} does not divide the {n_q} quantized tokens")
        deq = _rows(cols, bits, group, symmetric)
        out[..., :n_q, :] = deq.reshape(*old.shape[:-2], n_ch, n_q).transpose(-1, -2)
    return out


def _rows(x: torch.Tensor, bits: int, group: int | None, symmetric: bool) -> torch.Tensor:
    """Each row of ``x`` (in groups of ``group``) quantized and dequantized: min/max float-minimum, or symmetric."""
    if symmetric:
        g = PerChannel(0) if group is None else PerGroup(group)
        return fake_quantize(x, bits, granularity=g, symmetric=True)
    blocks = x.reshape(x.shape[0], -1, x.shape[1] if group is None else group)
    lo, hi = blocks.amin(-1, keepdim=True), blocks.amax(-1, keepdim=True)
    check_magnitude(lo, hi, x.dtype)  # beyond half the dtype's maximum, hi - lo overflows to inf
    qmax = 2**bits - 1
    tiny = torch.finfo(x.dtype).tiny  # never a subnormal (or zero) scale, as quantize
    scale = torch.where(hi > lo, ((hi - lo) / qmax).clamp_min(tiny), torch.ones_like(hi))
    return (torch.round((blocks - lo) / scale).clamp(0, qmax) * scale + lo).reshape(x.shape)


def kv_cache_bytes(
    layers: int,
    kv_heads: int,
    head_dim: int,
    tokens: int,
    *,
    bits: int = 16,
    axis: str = "token",
    group: int | None = None,
    symmetric: bool = False,
    residual: int = 0,
    scale_bytes: int = 2,
) -> int:
    """Bytes of a KV cache (keys and values, every layer and head) for one sequence of ``tokens``.

    ``bits=16`` is the fp16 cache. Otherwise the quantized tokens (:func:`quantized_tokens`) cost
    ``bits`` per value plus, per group, a scale of ``scale_bytes`` and (asymmetric) a zero point of
    the same size; the residual tokens stay in fp16. ``group=None`` means one group over the whole
    axis (every channel of a token, or every quantized token of a channel).

    >>> kv_cache_bytes(6, 12, 32, 128)  # MiniLM-shaped, fp16
    1179648
    >>> kv_cache_bytes(1, 1, 32, 64, bits=2, axis="channel", group=32)  # 2 x (64 x 32 x 2 bits + 2 x 32 x 4 B)
    1536
    """
    for name, v in (("layers", layers), ("kv_heads", kv_heads), ("head_dim", head_dim)):
        check_whole(v, name, 1, "a positive whole number")
    tokens = check_whole(tokens, "tokens", 0, "the context length")
    bits = check_bits(bits)
    symmetric = check_flag(symmetric, "symmetric")
    group = _check_group(group)
    scale_bytes = check_whole(scale_bytes, "scale_bytes", 0, "2 for fp16 scales")
    n_q = quantized_tokens(tokens, axis, group, residual)  # checks axis and residual, at 16 bits too
    if bits == 16:
        return 2 * layers * kv_heads * head_dim * tokens * 2
    if axis == "token":
        size = head_dim if group is None else group
        if head_dim % size:
            raise ValueError(f"group={group} does not divide head_dim={head_dim}; pick a divisor such as 32")
        groups = n_q * (head_dim // size)
    else:
        groups = head_dim * (1 if group is None else math.ceil(n_q / group)) if n_q else 0
    meta = groups * scale_bytes * (1 if symmetric else 2)
    per_head = math.ceil(n_q * head_dim * bits / 8) + meta + (tokens - n_q) * head_dim * 2
    return 2 * layers * kv_heads * per_head

"""Lesson 10's studies: MiniLM's keys, queries and values, and what quantizing them does to attention.

Every sentence runs alone (no padding); per layer, its queries, keys and values are the
outputs of the attention's ``query``/``key``/``value`` Linears, ``[tokens, 384]`` = 12 heads of
32 channels. Attention is recomputed from them in float64: ``softmax(q k^T / sqrt(32)) v`` per
head, so the error of a quantized key or value can be measured where it matters, on the
attention probabilities and the attention output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from qlesson.quant.kv import fake_quantize_kv

HEADS, HEAD_DIM = 12, 32
Quantizer = Callable[[torch.Tensor], torch.Tensor]


def capture_qkv(model: Any, sentences: Sequence[str]) -> list[dict[str, torch.Tensor]]:
    """Per layer, a dict ``{"q", "k", "v"}`` of per-sentence tensors ``[heads, tokens, head_dim]`` (float64)."""
    from qlesson.teach.models import embed

    layers = model[0].auto_model.encoder.layer
    got: list[dict[str, list[torch.Tensor]]] = [{"q": [], "k": [], "v": []} for _ in layers]
    hooks = []
    for i, layer in enumerate(layers):
        for name in ("query", "key", "value"):

            def hook(_m: Any, _a: Any, out: torch.Tensor, i: int = i, key: str = name[0]) -> None:
                t = out.detach().reshape(-1, HEADS, HEAD_DIM).transpose(0, 1).double()
                got[i][key].append(t)

            hooks.append(getattr(layer.attention.self, name).register_forward_hook(hook))
    try:
        for s in sentences:
            embed(model, [s], batch_size=1)
    finally:
        for h in hooks:
            h.remove()
    return [{k: v for k, v in layer.items()} for layer in got]  # type: ignore[misc]


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(probs [heads, tokens, tokens], out [heads, tokens, head_dim])`` of one sentence, float64."""
    probs = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
    return probs, probs @ v


def channel_spread(x: torch.Tensor) -> tuple[float, float]:
    """``(channel, token)`` spread of ``[heads, tokens, head_dim]``: the largest over the median absmax.

    A large channel spread means a few channels are loud on every token (per-channel outliers); a
    large token spread means a few tokens are loud.
    """
    a = x.abs()
    per_channel = a.amax(dim=1).reshape(-1)  # per (head, channel), over tokens
    per_token = a.amax(dim=(0, 2))  # per token, over heads and channels
    return float(per_channel.max() / per_channel.median()), float(per_token.max() / per_token.median())


def shuffled(x: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """``x`` with its entries in a random order (fixed seed): the same numbers, no structure."""
    g = torch.Generator().manual_seed(seed)
    return x.reshape(-1)[torch.randperm(x.numel(), generator=g)].reshape(x.shape)


def spread_rows(qkv: Sequence[dict[str, list[torch.Tensor]]]) -> list[dict[str, Any]]:
    """Per layer: keys' and values' channel and token spreads, medians over the sentences.

    ``shuffled`` columns give the channel spread of the same numbers in a random order: what the
    measure shows with no structure at all (a max over many channels exceeds one over few tokens).
    """
    rows = []
    for i, layer in enumerate(qkv):
        row: dict[str, Any] = {"layer": i}
        for name in ("k", "v"):
            spreads = np.array([channel_spread(t) for t in layer[name]])
            null = np.array([channel_spread(shuffled(t, j))[0] for j, t in enumerate(layer[name])])
            label = "keys" if name == "k" else "values"
            row[f"{label} channel max/median"] = float(np.median(spreads[:, 0]))
            row[f"{label} shuffled"] = float(np.median(null))
            row[f"{label} token max/median"] = float(np.median(spreads[:, 1]))
        rows.append(row)
    return rows


def errors_per_sentence(
    qkv: Sequence[dict[str, list[torch.Tensor]]],
    quant_k: Quantizer | None,
    quant_v: Quantizer | None,
    rotary: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence, mean over layers: attention-probability error and relative attention-output error.

    The probability error is the total variation ``0.5 sum |p - p_hat|`` of each query's row,
    averaged over heads and queries; the output error is ``||o - o_hat||^2 / ||o||^2``.
    ``None`` leaves that tensor in full precision. With ``rotary`` the model is given a rotary
    embedding (:func:`rope` on queries and keys) and the keys are quantized ``"post"`` it (what
    a cache of rotated keys stores) or ``"pre"`` it (KVQuant's choice: rotate after dequantizing).
    """
    if rotary not in (None, "pre", "post"):
        raise ValueError(f"rotary={rotary!r} must be None, 'pre' or 'post'")
    n = len(qkv[0]["k"])
    prob_err, out_err = np.zeros(n), np.zeros(n)
    for layer in qkv:
        for s in range(n):
            q, k, v = layer["q"][s], layer["k"][s], layer["v"][s]
            if rotary is None:
                p, o = attention(q, k, v)
                kq = k if quant_k is None else quant_k(k)
            else:
                q = rope(q)
                p, o = attention(q, rope(k), v)
                quant = quant_k or (lambda t: t)
                kq = quant(rope(k)) if rotary == "post" else rope(quant(k))
            vq = v if quant_v is None else quant_v(v)
            p_hat, o_hat = attention(q, kq, vq)
            prob_err[s] += float(0.5 * (p - p_hat).abs().sum(-1).mean())
            out_err[s] += float((o - o_hat).square().sum() / o.square().sum())
    return prob_err / len(qkv), out_err / len(qkv)


def scheme(bits: int, axis: str, group: int | None = None) -> Quantizer:
    """An asymmetric quantizer of ``[heads, tokens, head_dim]`` along ``axis``."""
    return lambda t: fake_quantize_kv(t, bits, axis, group=group)


def rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding of ``[heads, tokens, head_dim]`` (LLaMA's pairing of channel ``i`` with ``i + d/2``).

    Channel pair ``(i, i + d/2)`` of the token at position ``p`` is rotated by the angle
    ``p x base ** (-2 i / d)``: fast for the first pairs, slow for the last.

    >>> x = torch.ones(1, 2, 4, dtype=torch.float64)
    >>> bool(torch.allclose(rope(x)[0, 0], x[0, 0])), bool(torch.allclose(rope(x).norm(dim=-1), x.norm(dim=-1)))
    (True, True)
    """
    d = x.shape[-1]
    half = d // 2
    freq = base ** (-torch.arange(half, dtype=torch.float64) * 2 / d)
    angle = torch.arange(x.shape[-2], dtype=torch.float64)[:, None] * freq[None, :]
    cos, sin = torch.cos(angle), torch.sin(angle)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


# (model, layers, kv heads, head dim)
SHAPES = (("LLaMA-7B-like", 32, 32, 128), ("MiniLM", 6, 12, 32))
# (name, keys: bits/axis/group, values: bits/axis/group, symmetric, residual); fp16 is bits 16
SCHEMES: tuple[tuple[str, tuple[int, str, int | None], tuple[int, str, int | None], bool, int], ...] = (
    ("fp16", (16, "token", None), (16, "token", None), True, 0),
    ("FP8 per tensor (vLLM)", (8, "token", None), (8, "token", None), True, 0),
    ("int4 g64 (g32 on MiniLM), residual 128 (transformers)", (4, "token", 64), (4, "token", 64), False, 128),
    ("KIVI-2: K per-channel g32, V per-token g32, residual 32", (2, "channel", 32), (2, "token", 32), False, 32),
)


def cache_bytes(shape: tuple[str, int, int, int], tokens: int, keys: tuple, values: tuple, sym: bool, res: int) -> int:
    """Bytes of one sequence's cache with separate key and value schemes (each half of :func:`kv_cache_bytes`)."""
    from qlesson.quant.kv import kv_cache_bytes

    _, layers, heads, dim = shape
    total = 0
    for bits, axis, group in (keys, values):
        if bits == 8 and group is None and sym:  # per-tensor FP8: one fp32 scale per layer, 8 bits per value
            total += layers * heads * dim * tokens + 4 * layers
        else:
            if axis == "token" and group is not None:
                group = min(group, dim)  # a group cannot be wider than a head (MiniLM's 32)
            kw = {"bits": bits, "axis": axis, "group": group, "symmetric": sym, "residual": res}
            total += kv_cache_bytes(layers, heads, dim, tokens, **kw) // 2
    return total


def memory_rows(contexts: Sequence[int] = (4096, 32768)) -> list[dict[str, Any]]:
    """KV-cache bytes for one sequence, per model shape, context and scheme, with bits per value."""
    rows = []
    for shape in SHAPES:
        for tokens in contexts:
            for name, keys, values, sym, res in SCHEMES:
                b = cache_bytes(shape, tokens, keys, values, sym, res)
                per_value = 8 * b / (2 * shape[1] * shape[2] * shape[3] * tokens)
                rows.append(
                    {
                        "model": shape[0],
                        "context": tokens,
                        "scheme": name,
                        "MiB": b / 2**20,
                        "bits per value": per_value,
                    }
                )
    return rows


TOOLS = (
    {
        "tool": "KIVI (Liu et al., ICML 2024)",
        "keys": "per-channel, asym, after RoPE",
        "values": "per-token, asym",
        "bits / group": "2 or 4 / 32 (example.py; process_args default 128)",
        "residual": "32 (example.py; default 128): keys in chunks, R newest values",
        "source": "jy-yuan/KIVI example.py, models/llama_kivi.py; arXiv 2402.02750",
    },
    {
        "tool": "KVQuant (Hooper et al., 2024)",
        "keys": "per-channel, before RoPE, scales calibrated offline",
        "values": "per-token, dynamic",
        "bits / group": "2-4, non-uniform; ~1% outliers kept sparse",
        "residual": "none needed; option: first tokens fp16",
        "source": "arXiv 2401.18079; quant/llama_simquant.py",
    },
    {
        "tool": "transformers QuantizedCache",
        "keys": "axis_key=0 (quanto: per token, 64 channels)",
        "values": "axis_value=0 (same)",
        "bits / group": "4 / 64 (q_group_size)",
        "residual": "up to 127 new tokens (residual_length 128)",
        "source": "transformers cache_utils QuantizedLayer defaults; optimum-quanto",
    },
    {
        "tool": "vLLM FP8 KV cache",
        "keys": "per tensor (per head: calibrated, Flash Attention)",
        "values": "per tensor (or per head)",
        "bits / group": "8 (E4M3/E5M2) / whole tensor; scale 1.0 if uncalibrated",
        "residual": "-",
        "source": "docs.vllm.ai features/quantization/quantized_kvcache",
    },
    {
        "tool": "llama.cpp --cache-type-k q8_0",
        "keys": "per token, blocks of 32 channels",
        "values": "same with --cache-type-v (needs flash attention)",
        "bits / group": "8 + fp16 scale / 32 (Q8_0); default f16",
        "residual": "-",
        "source": "ggml-org/llama.cpp common/arg.cpp; ggml Q8_0 block",
    },
)


def axis_rows(qkv: Sequence[dict[str, list[torch.Tensor]]], bits: Sequence[int] = (2, 3, 4)) -> list[dict[str, Any]]:
    """Keys (values in full precision) and values (keys in full precision), per token vs per channel.

    Per row: both schemes' mean attention-output error and (keys) probability error, and the
    per-token minus per-channel difference of the output error with a paired 95% interval over
    the sentences; ``lower`` names the better axis, or ``tie``.
    """
    from qlesson.teach.intervals import paired_bootstrap

    rows = []
    for tensor in ("keys", "values"):
        for b in bits:
            got = {}
            for axis in ("token", "channel"):
                q = scheme(b, axis)
                got[axis] = errors_per_sentence(qkv, q, None) if tensor == "keys" else errors_per_sentence(qkv, None, q)
            d = paired_bootstrap(got["token"][1], got["channel"][1], pairs=True)
            row: dict[str, Any] = {"quantized": tensor, "bits": b}
            if tensor == "keys":
                row |= {"prob err per-token": got["token"][0].mean(), "prob err per-channel": got["channel"][0].mean()}
            else:
                row |= {"prob err per-token": 0.0, "prob err per-channel": 0.0}
            row |= {"out err per-token": got["token"][1].mean(), "out err per-channel": got["channel"][1].mean()}
            row |= {"token - channel": d.diff, "95% CI": [d.lo, d.hi]}
            row["lower"] = d.verdict("per-channel", "per-token").replace(" higher", "")
            rows.append(row)
    return rows


# (label, axis, group along the other axis, symmetric) at a fixed bit width: what a scale costs and buys
VARIANTS: tuple[tuple[str, str, int | None, bool], ...] = (
    ("per-token (32 channels), asym", "token", None, False),
    ("per-token, groups of 8 channels, asym", "token", 8, False),
    ("per-channel, asym", "channel", None, False),
    ("per-token (32 channels), symmetric", "token", None, True),
    ("per-channel, symmetric", "channel", None, True),
)


def variant_bits(bits: int, axis: str, group: int | None, symmetric: bool, head_dim: int = 32) -> float:
    """Bits per stored value with fp16 scales (and minimums): per-channel groups counted as KIVI's 32 tokens.

    >>> variant_bits(2, "token", 8, False), variant_bits(2, "channel", None, False)
    (6.0, 3.0)
    >>> variant_bits(2, "token", None, symmetric=True)
    2.5
    """
    from qlesson.quant.kv import kv_cache_bytes

    tokens = 32 * 64
    group = 32 if axis == "channel" and group is None else group
    b = kv_cache_bytes(1, 1, head_dim, tokens, bits=bits, axis=axis, group=group, symmetric=symmetric)
    return 8 * b / (2 * head_dim * tokens)


def variant_rows(
    qkv: Sequence[dict[str, list[torch.Tensor]]], bits: int = 2
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each :data:`VARIANTS` scheme on keys and on values: bits per value and attention-output error.

    Returns the table and the comparisons the lesson draws from it, each a paired 95% interval
    over the sentences' pairs: finer per-token groups against per-channel keys, finer per-token
    groups of values, and symmetric against asymmetric on each tensor's better axis.
    """
    from qlesson.quant.kv import fake_quantize_kv
    from qlesson.teach.intervals import paired_bootstrap

    err: dict[tuple[str, str], np.ndarray] = {}
    rows = []
    for label, axis, group, sym in VARIANTS:

        def q(t: torch.Tensor, axis: str = axis, group: int | None = group, sym: bool = sym) -> torch.Tensor:
            return fake_quantize_kv(t, bits, axis, group=group, symmetric=sym)

        err[label, "keys"] = errors_per_sentence(qkv, q, None)[1]
        err[label, "values"] = errors_per_sentence(qkv, None, q)[1]
        rows.append(
            {
                "scheme": label,
                "bits per value": variant_bits(bits, axis, group, sym),
                "keys out err": err[label, "keys"].mean(),
                "values out err": err[label, "values"].mean(),
            }
        )
    names = [v[0] for v in VARIANTS]
    tests = (
        ("keys", names[1], names[2]),
        ("values", names[1], names[0]),
        ("keys", names[4], names[2]),
        ("values", names[3], names[0]),
    )
    comparisons = []
    for tensor, a, b in tests:
        d = paired_bootstrap(err[a, tensor], err[b, tensor], pairs=True)
        comparisons.append(
            {
                "tensor": tensor,
                "A": a,
                "B": b,
                "A - B": d.diff,
                "95% CI": [d.lo, d.hi],
                "lower error": d.verdict("B", "A").replace(" higher", ""),
            }
        )
    return rows, comparisons


def cls_value_rows(qkv: Sequence[dict[str, list[torch.Tensor]]], bits: int = 2) -> list[dict[str, Any]]:
    """Per layer, values per channel: the ``[CLS]`` value's error under asymmetric and symmetric rulers.

    Mean over sentences of ``||v_cls - q(v)_cls||`` beside ``||v_cls||`` itself, and the same
    ratio asymmetric / symmetric for the other tokens' values.
    """
    from qlesson.quant.kv import fake_quantize_kv

    rows = []
    for i, layer in enumerate(qkv):
        cls_asym, cls_sym, cls_norm, rest = [], [], [], []
        for v in layer["v"]:
            asym = fake_quantize_kv(v, bits, "channel")
            sym = fake_quantize_kv(v, bits, "channel", symmetric=True)
            cls_asym.append(float((asym[:, 0] - v[:, 0]).norm()))
            cls_sym.append(float((sym[:, 0] - v[:, 0]).norm()))
            cls_norm.append(float(v[:, 0].norm()))
            rest.append(float((asym[:, 1:] - v[:, 1:]).norm() / (sym[:, 1:] - v[:, 1:]).norm()))
        rows.append(
            {
                "layer": i,
                "|[CLS] value|": float(np.mean(cls_norm)),
                "[CLS] error, asym": float(np.mean(cls_asym)),
                "[CLS] error, symmetric": float(np.mean(cls_sym)),
                "other tokens: asym error / symmetric": float(np.mean(rest)),
            }
        )
    return rows


def rope_rows(qkv: Sequence[dict[str, list[torch.Tensor]]], bits: Sequence[int] = (2, 3, 4)) -> list[dict[str, Any]]:
    """With a rotary embedding: keys quantized per channel before vs after it (and per token after it).

    Output error of each, and ``post - pre`` for per-channel keys with a paired 95% interval.
    """
    from qlesson.teach.intervals import paired_bootstrap

    rows = []
    for b in bits:
        pre = errors_per_sentence(qkv, scheme(b, "channel"), None, rotary="pre")[1]
        post = errors_per_sentence(qkv, scheme(b, "channel"), None, rotary="post")[1]
        tok = errors_per_sentence(qkv, scheme(b, "token"), None, rotary="post")[1]
        d = paired_bootstrap(post, pre, pairs=True)
        rows.append(
            {
                "bits": b,
                "per-channel, pre-RoPE": pre.mean(),
                "per-channel, post-RoPE": post.mean(),
                "per-token, post-RoPE": tok.mean(),
                "post - pre": d.diff,
                "95% CI": [d.lo, d.hi],
                "lower": d.verdict("pre", "post").replace(" higher", ""),
            }
        )
    return rows


def token_channel_map(x: torch.Tensor, title: str = "") -> Any:
    """``|x|`` of one sentence's keys or values as a token x channel image (heads side by side, log colour)."""
    from matplotlib.colors import LogNorm

    from qlesson.teach.plots import _figure

    fig = _figure(None, size=(10, 3.2))
    ax = fig.axes[0]
    flat = x.abs().transpose(0, 1).reshape(x.shape[1], -1)  # [tokens, heads x head_dim]
    image = ax.imshow(flat.numpy() + 1e-3, aspect="auto", cmap="magma", norm=LogNorm(1e-2, float(flat.max())))
    for h in range(1, x.shape[0]):
        ax.axvline(h * x.shape[2] - 0.5, color="white", lw=0.3)
    ax.set(xlabel="channel (12 heads of 32, separated by lines)", ylabel="token", title=title)
    fig.colorbar(image, ax=ax, label="|value| (log scale)", pad=0.01)
    return fig


def cls_rows(qkv: Sequence[dict[str, list[torch.Tensor]]]) -> list[dict[str, Any]]:
    """Per layer: the attention the ``[CLS]`` token (position 0) receives, and how long its value vector is.

    ``attention to [CLS]``: the mean over sentences, heads and queries of the probability on
    position 0; ``[CLS] value / median value``: the norm of its value vector over the median
    token's, per head, medians over the sentences.
    """
    rows = []
    for i, layer in enumerate(qkv):
        share, ratio = [], []
        for q, k, v in zip(layer["q"], layer["k"], layer["v"], strict=True):
            p, _ = attention(q, k, v)
            share.append(float(p[..., 0].mean()))
            norms = v.norm(dim=-1)  # [heads, tokens]
            ratio.append(float((norms[:, 0] / norms.median(dim=1).values).median()))
        rows.append(
            {
                "layer": i,
                "attention to [CLS]": float(np.mean(share)),
                "[CLS] value / median value": float(np.median(ratio)),
            }
        )
    return rows

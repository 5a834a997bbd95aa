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


def _check_qkv(qkv: Sequence[dict[str, list[torch.Tensor]]], *, even: bool = False) -> None:
    """Raise a ValueError unless ``qkv`` is what :func:`capture_qkv` returns and every error is defined.

    Every sentence needs ``q``, ``k`` and ``v`` of one shape ``[heads, tokens, head_dim]`` and values that
    are not all 0 (the relative output error divides by the output); ``even``: a rotary embedding pairs
    the channels, so ``head_dim`` must be even.

    >>> _check_qkv([{"q": [torch.ones(1, 2, 3)], "k": [torch.ones(1, 2, 3)], "v": [torch.ones(1, 2, 3)]}], even=True)
    Traceback (most recent call last):
    ...
    ValueError: head_dim=3 is odd; a rotary embedding rotates channel pairs (i, i + head_dim/2), ...
    """
    if not qkv or not all(isinstance(lay, dict) and {"q", "k", "v"} <= set(lay) for lay in qkv):
        raise ValueError("qkv must be a non-empty list of layers, each {'q': [...], 'k': [...], 'v': [...]}")
    n = len(qkv[0]["k"])
    for i, layer in enumerate(qkv):
        if n == 0 or not len(layer["q"]) == len(layer["k"]) == len(layer["v"]) == n:
            raise ValueError(f"layer {i} must hold the same number (at least 1) of q, k and v sentences as layer 0")
        for s, (q, k, v) in enumerate(zip(layer["q"], layer["k"], layer["v"], strict=True)):
            if v.ndim != 3 or not q.shape == k.shape == v.shape or v.numel() == 0:
                raise ValueError(
                    f"layer {i}, sentence {s}: q, k and v must share one shape [heads, tokens, head_dim]; "
                    f"got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
                )
            if not bool(v.any()):
                raise ValueError(
                    f"layer {i}, sentence {s}: every value is 0, so the attention output is 0 and its relative "
                    "error ||o - o_hat||^2 / ||o||^2 is undefined; drop that sentence"
                )
    if even and qkv[0]["k"][0].shape[-1] % 2:
        _odd(qkv[0]["k"][0].shape[-1])


def _odd(head_dim: int) -> None:
    raise ValueError(
        f"head_dim={head_dim} is odd; a rotary embedding rotates channel pairs (i, i + head_dim/2), "
        "so pass an even head_dim"
    )


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


def shuffled(x: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """``x`` with its entries in a random order (fixed seed): the same numbers, no structure."""
    g = torch.Generator().manual_seed(seed)
    return x.reshape(-1)[torch.randperm(x.numel(), generator=g)].reshape(x.shape)


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
    _check_qkv(qkv, even=rotary is not None)
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
    if x.ndim < 2:
        raise ValueError(f"x has shape {tuple(x.shape)}; pass [heads, tokens, head_dim]")
    if x.shape[-1] % 2:
        _odd(x.shape[-1])
    d = x.shape[-1]
    half = d // 2
    freq = base ** (-torch.arange(half, dtype=torch.float64) * 2 / d)
    angle = torch.arange(x.shape[-2], dtype=torch.float64)[:, None] * freq[None, :]
    cos, sin = torch.cos(angle), torch.sin(angle)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


# (model, layers, kv heads, head dim): a grouped-query-attention model, 32 query heads sharing 8 KV heads
SHAPES = (("Llama-3.1-8B-like", 32, 8, 128),)
# (name, keys: bits/axis/group, values: bits/axis/group, symmetric, residual); fp16 is bits 16
SCHEMES: tuple[tuple[str, tuple[int, str, int | None], tuple[int, str, int | None], bool, int], ...] = (
    ("fp16", (16, "token", None), (16, "token", None), True, 0),
    ("FP8 per tensor (vLLM)", (8, "token", None), (8, "token", None), True, 0),
    ("int4 per token g64, window 128 (transformers: at most)", (4, "token", 64), (4, "token", 64), False, 128),
    ("2-bit K per channel g32, V per token g32, fixed window 32", (2, "channel", 32), (2, "token", 32), False, 32),
    ("2-bit as above, fixed window 128", (2, "channel", 32), (2, "token", 32), False, 128),
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


def memory_rows(contexts: Sequence[int] = (8192, 131072)) -> list[dict[str, Any]]:
    """KV-cache bytes for one sequence, per model shape, context and scheme, with bits per value."""
    for tokens in contexts:
        if isinstance(tokens, bool) or not isinstance(tokens, (int, np.integer)) or tokens < 1:
            raise ValueError(f"context {tokens!r} must be a whole number of tokens >= 1, e.g. 8192")
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
        "tool": "llama.cpp --cache-type-k / -v",
        "keys": "per token, blocks of 32 channels",
        "values": "same (a quantized V needs flash attention)",
        "bits / group": "q8_0, q4_0 (symmetric), q4_1, q5_1 (with a minimum) / 32; default f16",
        "residual": "-",
        "source": "ggml-org/llama.cpp common/arg.cpp; ggml block types",
    },
)


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

    Bits per value count an fp16 scale (and minimum) per ruler; a per-channel ruler spans one
    sentence's tokens, so its metadata is spread over the sentences' mean length.

    Returns the table and the comparisons the lesson draws from it, each a paired 95% interval
    over the sentences' pairs: finer per-token groups against per-channel keys, finer per-token
    groups of values, and symmetric against asymmetric on each tensor's better axis.
    """
    _check_qkv(qkv)
    from qlesson.quant.kv import fake_quantize_kv
    from qlesson.teach.intervals import paired_bootstrap

    err: dict[tuple[str, str], np.ndarray] = {}
    rows = []
    for label, axis, group, sym in VARIANTS:

        def q(t: torch.Tensor, axis: str = axis, group: int | None = group, sym: bool = sym) -> torch.Tensor:
            return fake_quantize_kv(t, bits, axis, group=group, symmetric=sym)

        err[label, "keys"] = errors_per_sentence(qkv, q, None)[1]
        err[label, "values"] = errors_per_sentence(qkv, None, q)[1]
        if axis == "channel":  # one ruler per channel over each sentence's tokens, as measured
            meta = 16 if sym else 32
            per_value = bits + meta / float(np.mean([k.shape[1] for k in qkv[0]["k"]]))
        else:
            per_value = variant_bits(bits, axis, group, sym)
        rows.append(
            {
                "scheme": label,
                "bits per value": per_value,
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
    _check_qkv(qkv)
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
    _check_qkv(qkv, even=True)
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
    """One sentence's keys or values as a token x channel image, signed (heads side by side).

    Red is positive, blue negative; the colour range is clipped at the 99th percentile of ``|x|``, so a
    channel that sits at an offset of its own reads as one solid colour down the tokens.
    """
    from qlesson.teach.plots import _figure

    fig = _figure(None, size=(10, 3.2))
    ax = fig.axes[0]
    flat = x.transpose(0, 1).reshape(x.shape[1], -1)  # [tokens, heads x head_dim]
    lim = float(flat.abs().flatten().quantile(0.99))
    image = ax.imshow(flat.numpy(), aspect="auto", cmap="RdBu_r", interpolation="nearest", vmin=-lim, vmax=lim)
    for h in range(1, x.shape[0]):
        ax.axvline(h * x.shape[2] - 0.5, color="black", lw=1)
    ax.set_xticks(range(0, x.shape[0] * x.shape[2] + 1, x.shape[2]))
    heads = f"{x.shape[0]} heads of {x.shape[2]}, separated by lines" if x.shape[0] > 1 else f"one head of {x.shape[2]}"
    ax.set(xlabel=f"channel ({heads})", ylabel="token", title=title)
    fig.colorbar(image, ax=ax, label="value (clipped at the 99th pct of |value|)", pad=0.01)
    return fig


def cls_rows(
    qkv: Sequence[dict[str, list[torch.Tensor]]], bits: int = 2, ruler: str = "channel"
) -> list[dict[str, Any]]:
    """Per layer: the attention the ``[CLS]`` token (position 0) receives, how long its value vector is,
    and how badly each ruler rounds that value.

    ``attention to [CLS]``: the mean over sentences, heads and queries of the probability on
    position 0; ``[CLS] value / median value``: the norm of its value vector over the median
    token's, per head; ``[CLS] error / its size, per channel`` (and ``per token``): the norm of
    ``[CLS]``'s value error, values quantized at ``bits`` bits per channel over one sentence (per
    token), over the norm of its value, per head. Medians over heads, then over sentences. ``ruler``:
    the per-channel ruler, ``"channel"`` (one sentence) or ``"channel32"`` (32 tokens end to end).
    """
    _check_qkv(qkv)
    rows = []
    for i, layer in enumerate(qkv):
        share, ratio = [], []
        rounding: dict[str, list[float]] = {"channel": [], "token": []}
        for q, k, v in zip(layer["q"], layer["k"], layer["v"], strict=True):
            p, _ = attention(q, k, v)
            share.append(float(p[..., 0].mean()))
            norms = v.norm(dim=-1)  # [heads, tokens]
            ratio.append(float((norms[:, 0] / norms.median(dim=1).values).median()))
        for ruler_name, errs in rounding.items():
            kind = ruler if ruler_name == "channel" else "token"
            for v, v_hat in zip(layer["v"], quantize_sentences(layer["v"], bits, kind), strict=True):
                errs.append(float(((v_hat[:, 0] - v[:, 0]).norm(dim=-1) / v[:, 0].norm(dim=-1)).median()))
        rows.append(
            {
                "layer": i,
                "attention to [CLS]": float(np.mean(share)),
                "[CLS] value / median value": float(np.median(ratio)),
                "[CLS] error / its size, per channel": float(np.median(rounding["channel"])),
                "per token": float(np.median(rounding["token"])),
            }
        )
    return rows


# ---- the lesson's main line: where the structure is, keys at equal metadata, values and the sink ----


def _shuffle_within_heads(x: torch.Tensor, seed: int) -> torch.Tensor:
    """``x [heads, tokens, head_dim]`` with each head's entries in a random order (fixed seed)."""
    g = torch.Generator().manual_seed(seed)
    flat = x.reshape(x.shape[0], -1)
    idx = torch.stack([torch.randperm(flat.shape[1], generator=g) for _ in range(x.shape[0])])
    return torch.gather(flat, 1, idx).reshape(x.shape)


def _within_head_spread(x: torch.Tensor, over_heads: str = "median") -> float:
    """Median (or max) over heads of (loudest channel's absmax / median channel's absmax) inside the head."""
    a = x.abs().amax(dim=1)  # [heads, head_dim]
    spread = a.amax(1) / a.median(1).values
    return float(spread.max() if over_heads == "max" else spread.median())


def _channel_mean_share(x: torch.Tensor) -> float:
    """Share of a sentence's variance (per head, summed) that sits in the channels' means over its tokens."""
    centre = x.mean(dim=(1, 2), keepdim=True)
    between = (x.mean(dim=1, keepdim=True) - centre).square().sum() * x.shape[1]
    return float(between / (x - centre).square().sum())


def _loudest_channel(x: torch.Tensor) -> float:
    """Largest over heads of (loudest channel's median ``|x|`` over the tokens / the median channel's)."""
    a = x.abs().median(dim=1).values  # [heads, head_dim]: each channel's typical size
    return float((a.amax(1) / a.median(1).values).max())


def channel_rows(
    qkv: Sequence[dict[str, list[torch.Tensor]]], plant: float = 2.0, channels: Sequence[int] = (0, 11, 27)
) -> list[dict[str, Any]]:
    """Per layer, the keys: outlier channels (large on every token) and the channels' offsets.

    ``loudest channel``: :func:`_loudest_channel` of a sentence's keys over the same of its keys
    shuffled within each head (1 means no channel stands out more than in random numbers);
    ``a channel made x{plant}``: the positive control, the same score with one channel of every head
    multiplied by ``plant`` on every token, the lowest over the planted ``channels`` (each planted in
    turn); ``means' share`` and ``(shuffled)``: the share of the variance that sits in each channel's
    own mean over the sentence's tokens. Medians over the sentences; shuffles with fixed seeds.
    """
    _check_qkv(qkv)
    for i, layer in enumerate(qkv):
        for s, k in enumerate(layer["k"]):
            if not bool(k.abs().median(1).values.median(1).values.gt(0).all()) or not bool(
                k.std(dim=(1, 2)).gt(0).all()
            ):
                raise ValueError(
                    f"layer {i}, sentence {s}: a head's keys are constant (or its median channel is 0), so "
                    "the ratios divide by 0; drop that sentence"
                )
    rows = []
    for i, layer in enumerate(qkv):
        real, share, share_sh = [], [], []
        planted: dict[int, list[float]] = {c: [] for c in channels}
        for j, k in enumerate(layer["k"]):
            mixed = _shuffle_within_heads(k, j)
            real.append(_loudest_channel(k) / _loudest_channel(mixed))
            for c in channels:
                loud = k.clone()
                loud[:, :, c % k.shape[2]] *= plant
                planted[c].append(_loudest_channel(loud) / _loudest_channel(_shuffle_within_heads(loud, j)))
            share.append(_channel_mean_share(k))
            share_sh.append(_channel_mean_share(mixed))
        rows.append(
            {
                "layer": i,
                "loudest channel": float(np.median(real)),
                f"a channel made x{plant:g}": min(float(np.median(p)) for p in planted.values()),
                "means' share": float(np.median(share)),
                "(shuffled)": float(np.median(share_sh)),
            }
        )
    return rows


def cls_key_norms(qkv: Sequence[dict[str, list[torch.Tensor]]]) -> list[dict[str, Any]]:
    """Per layer: the norm of ``[CLS]``'s key (position 0) over the median token's, per head, in the real keys
    and with each channel's mean over the sentence removed. Medians over heads, then over sentences."""
    _check_qkv(qkv)
    rows = []
    for i, layer in enumerate(qkv):
        ratio: dict[str, list[float]] = {"real keys": [], "channel means removed": []}
        for k in layer["k"]:
            for name, x in (("real keys", k), ("channel means removed", k - k.mean(dim=1, keepdim=True))):
                n = x.norm(dim=-1)  # [heads, tokens]
                ratio[name].append(float((n[:, 0] / n.median(dim=1).values).median()))
        rows.append({"layer": i} | {name: float(np.median(r)) for name, r in ratio.items()})
    return rows


def head_rows(qkv: Sequence[dict[str, list[torch.Tensor]]]) -> list[dict[str, Any]]:
    """Per layer, the keys: is the structure in a head, in loud channels, or in channel offsets?

    ``loudest head / median head``: rms of the loudest head's keys over the median head's;
    ``spread, median head``: the loudest channel's absmax over the median channel's, inside one
    head (median over heads; ``spread, widest head``: in the head where it is largest); ``means'
    share``: the share of the keys' variance that sits in each channel's own mean over the
    sentence's tokens. Each measure is followed by its ``(shuffled)`` control (keys padded with
    spaces to stay distinct): the same numbers in a random order inside each head. Medians over
    the sentences.
    """
    _check_qkv(qkv)
    for i, layer in enumerate(qkv):
        for s, k in enumerate(layer["k"]):
            if not bool((k.abs().amax(1).median(1).values > 0).all()) or not bool(k.std(dim=(1, 2)).gt(0).all()):
                raise ValueError(
                    f"layer {i}, sentence {s}: a head's keys are constant (or its median channel is all 0), so "
                    "the spread and share ratios divide by 0; drop that sentence"
                )
    rows = []
    for i, layer in enumerate(qkv):
        ks = layer["k"]
        rms = torch.stack([k.square().mean(dim=(1, 2)).sqrt() for k in ks]).mean(0)
        shuffled_ks = [_shuffle_within_heads(k, j) for j, k in enumerate(ks)]
        rows.append(
            {
                "layer": i,
                "loudest head / median head": float(rms.max() / rms.median()),
                "spread, median head": float(np.median([_within_head_spread(k) for k in ks])),
                "(shuffled)": float(np.median([_within_head_spread(k) for k in shuffled_ks])),
                "spread, widest head": float(np.median([_within_head_spread(k, "max") for k in ks])),
                "(shuffled) ": float(np.median([_within_head_spread(k, "max") for k in shuffled_ks])),
                "means' share": float(np.median([_channel_mean_share(k) for k in ks])),
                "(shuffled)  ": float(np.median([_channel_mean_share(k) for k in shuffled_ks])),
            }
        )
    return rows


def quantize_sentences(
    xs: Sequence[torch.Tensor], bits: int, ruler: str, *, sink_fp16: bool = False, residual: int = 0
) -> list[torch.Tensor]:
    """Each sentence's keys or values ``[heads, tokens, head_dim]`` quantized with one of three rulers.

    ``ruler``: ``"token"`` (per token and head: 32 channels), ``"channel"`` (per channel over one
    sentence's tokens) or ``"channel32"`` (per channel over 32 consecutive tokens of the sentences
    laid end to end, as one long text: 32 values per ruler, as per token). ``sink_fp16`` keeps
    each sentence's first token (``[CLS]``) in full precision, out of every ruler (KVQuant's
    option to keep the first tokens in fp16). ``residual`` keeps each sentence's newest tokens in
    fp16 too, out of every ruler (a full-precision window).
    """
    if ruler not in ("token", "channel", "channel32"):
        raise ValueError(f"ruler={ruler!r} must be 'token', 'channel' or 'channel32'")
    first = 1 if sink_fp16 else 0
    body = [x[:, first : max(x.shape[1] - residual, first)] for x in xs]
    lens = [b.shape[1] for b in body]
    long = torch.cat(body, dim=1)  # every sentence's tokens end to end: one call instead of one per sentence
    if ruler == "token":
        hat = fake_quantize_kv(long, bits, "token")
    else:
        per = torch.arange(long.shape[1]) // 32 if ruler == "channel32" else torch.repeat_interleave(torch.tensor(lens))
        hat = _channel_segments(long, per, bits)
    body = list(torch.split(hat, lens, dim=1))
    return [torch.cat([x[:, :first], b, x[:, first + b.shape[1] :]], dim=1) for x, b in zip(xs, body, strict=True)]


def _channel_segments(x: torch.Tensor, segment: torch.Tensor, bits: int) -> torch.Tensor:
    """``x [heads, tokens, dim]`` with one asymmetric ruler per channel and segment of tokens (``segment[t]``).

    The same arithmetic as :func:`qlesson.quant.kv.fake_quantize_kv` per channel on each segment alone
    (bit for bit), in one pass.
    """
    if segment.numel() and bool((segment[1:] < segment[:-1]).any()):
        raise ValueError("segments must be runs of consecutive tokens")
    n = int(segment.max()) + 1 if segment.numel() else 0
    idx = segment.view(1, -1, 1).expand_as(x)
    shape = (x.shape[0], n, x.shape[2])
    lo = torch.full(shape, float("inf"), dtype=x.dtype).scatter_reduce(1, idx, x, "amin")[:, segment]
    hi = torch.full(shape, float("-inf"), dtype=x.dtype).scatter_reduce(1, idx, x, "amax")[:, segment]
    qmax = 2**bits - 1
    scale = torch.where(hi > lo, (hi - lo) / qmax, torch.ones_like(hi))
    return torch.round((x - lo) / scale).clamp(0, qmax) * scale + lo


def _pad(xs: Sequence[torch.Tensor], tokens: int) -> torch.Tensor:
    """Sentences ``[heads, t_i, dim]`` stacked into ``[sentences, heads, tokens, dim]``, zeros after each one's end."""
    out = torch.zeros(len(xs), xs[0].shape[0], tokens, xs[0].shape[2], dtype=xs[0].dtype)
    for i, x in enumerate(xs):
        out[i, :, : x.shape[1]] = x
    return out


def _masked_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keys: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`attention` on padded sentences: ``keys [sentences, 1, 1, tokens]`` is False at the padding."""
    scores = (q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5).masked_fill(~keys, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return probs, probs @ v


def exact_attention(qkv: Sequence[dict[str, list[torch.Tensor]]]) -> list[dict[str, torch.Tensor]]:
    """Per layer, the sentences padded into one batch, with their full-precision probabilities and outputs.

    Computed once and shared by every ruler (:func:`output_errors`); padded positions are masked out.
    """
    _check_qkv(qkv)
    lens = torch.tensor([k.shape[1] for k in qkv[0]["k"]])
    tokens = int(lens.max())
    valid = torch.arange(tokens)[None, :] < lens[:, None]  # [sentences, tokens]
    keys, rows = valid[:, None, None, :], valid[:, None, :, None]
    out = []
    for layer in qkv:
        q, k, v = (_pad(layer[n], tokens) for n in ("q", "k", "v"))
        p, o = _masked_attention(q, k, v, keys)
        out.append(
            {
                "q": q,
                "k": k,
                "v": v,
                "p": p,
                "o": o,
                "keys": keys,
                "rows": rows,
                "norm": (o * rows).square().sum((1, 2, 3)),
            }
        )
    return out


def output_errors(
    qkv: Sequence[dict[str, list[torch.Tensor]]],
    tensor: str,
    bits: int,
    ruler: str,
    *,
    sink_fp16: bool = False,
    residual: int = 0,
    exact: list[dict[str, torch.Tensor]] | None = None,
) -> np.ndarray:
    """Per sentence, mean over layers: relative attention-output error, ``tensor`` (``"k"`` or ``"v"``) quantized.

    The same error as :func:`errors_per_sentence`, ``||o - o_hat||^2 / ||o||^2``, on all sentences at
    once. ``exact`` (from :func:`exact_attention`) saves recomputing the reference. A value error
    leaves the probabilities as they are, so quantized values only need ``probs @ v_hat``.
    """
    exact = exact if exact is not None else exact_attention(qkv)
    err = torch.zeros(len(qkv[0]["k"]), dtype=torch.float64)
    for layer, ref in zip(qkv, exact, strict=True):
        hat = quantize_sentences(layer[tensor], bits, ruler, sink_fp16=sink_fp16, residual=residual)
        hat = _pad(hat, ref["q"].shape[2])
        if tensor == "k":
            o_hat = _masked_attention(ref["q"], hat, ref["v"], ref["keys"])[1]
        else:
            o_hat = ref["p"] @ hat
        err += ((ref["o"] - o_hat) * ref["rows"]).square().sum((1, 2, 3)) / ref["norm"]
    return (err / len(qkv)).numpy()


def ruler_bits(bits: int, ruler: str, mean_tokens: float, head_dim: int = HEAD_DIM) -> float:
    """Bits per stored value: the codes plus an fp16 scale and an fp16 minimum (32 bits) per ruler.

    >>> ruler_bits(2, "token", 12.5), ruler_bits(2, "channel32", 12.5), round(ruler_bits(2, "channel", 12.5), 2)
    (3.0, 3.0, 4.56)
    """
    per_ruler = {"token": head_dim, "channel": mean_tokens, "channel32": 32}[ruler]
    return bits + 32 / per_ruler


def _shuffled_keys(qkv: Sequence[dict[str, list[torch.Tensor]]]) -> list[dict[str, list[torch.Tensor]]]:
    return [{"q": lay["q"], "k": [shuffled(k, j) for j, k in enumerate(lay["k"])], "v": lay["v"]} for lay in qkv]


RULERS = (
    ("per token (32 channels)", "token"),
    ("per channel (one sentence)", "channel"),
    ("per channel (32 tokens)", "channel32"),
)


def key_rows(qkv: Sequence[dict[str, list[torch.Tensor]]], bits: int = 2) -> tuple[list[dict[str, Any]], list[str]]:
    """Keys: the three :data:`RULERS` on the real keys and on each sentence's keys shuffled.

    Returns the table (values per ruler, bits per value, mean attention-output error on real and
    shuffled keys) and one line per comparison against per-token: the ratio of the mean errors
    and the paired 95% interval of the difference (per-token minus per-channel) over sentence pairs.
    """
    _check_qkv(qkv)
    from qlesson.teach.intervals import paired_bootstrap

    mean_tokens = float(np.mean([k.shape[1] for k in qkv[0]["k"]]))
    data = {"real": qkv, "shuffled": _shuffled_keys(qkv)}
    exact = {d: exact_attention(data[d]) for d in data}
    err = {(d, r): output_errors(data[d], "k", bits, r, exact=exact[d]) for d in data for _, r in RULERS}
    rows = [
        {
            "ruler": label,
            "values per ruler": {"token": 32.0, "channel": mean_tokens, "channel32": 32.0}[r],
            "bits per value": ruler_bits(bits, r, mean_tokens),
            "error, real keys": err["real", r].mean(),
            "error, shuffled keys": err["shuffled", r].mean(),
        }
        for label, r in RULERS
    ]
    lines = []
    for label, r in RULERS[1:]:
        for d in data:
            ci = paired_bootstrap(err[d, "token"], err[d, r], pairs=True)
            ratio = err[d, "token"].mean() / err[d, r].mean()
            lines.append(
                f"{d:>8} keys, per token / {label}: {ratio:.2f}x "
                f"(difference {ci.diff:+.4f}, 95% CI [{ci.lo:+.4f}, {ci.hi:+.4f}])"
            )
    return rows, lines


def value_rows(
    qkv: Sequence[dict[str, list[torch.Tensor]]], bits: Sequence[int] = (2, 3, 4)
) -> tuple[list[dict[str, Any]], list[str]]:
    """Values per token vs per channel, with ``[CLS]`` quantized like any token or kept in fp16.

    Per row: the mean attention-output error per token, per channel over one sentence and per
    channel over 32 tokens (equal metadata with per token), and ``token - channel`` (one sentence)
    with its paired 95% interval over sentence pairs; ``lower`` names the better ruler, or ``tie``.
    The lines compare per token with per channel over 32 tokens (equal metadata), ``[CLS]`` in fp16.
    """
    _check_qkv(qkv)
    from qlesson.teach.intervals import paired_bootstrap

    rows, lines = [], []
    exact = exact_attention(qkv)
    for sink in (False, True):
        for b in bits:
            tok, ch = (output_errors(qkv, "v", b, r, sink_fp16=sink, exact=exact) for r in ("token", "channel"))
            ch32 = output_errors(qkv, "v", b, "channel32", sink_fp16=sink, exact=exact)
            d = paired_bootstrap(tok, ch, pairs=True)
            rows.append(
                {
                    "[CLS] value": "fp16" if sink else "quantized",
                    "bits": b,
                    "per token": tok.mean(),
                    "per channel": ch.mean(),
                    "per channel (32 tokens)": ch32.mean(),
                    "token - channel": d.diff,
                    "95% CI": [d.lo, d.hi],
                    "lower": d.verdict("per-channel", "per-token").replace(" higher", ""),
                }
            )
            if sink:
                e = paired_bootstrap(tok, ch32, pairs=True)
                lines.append(
                    f"[CLS] in fp16, {b} bits, per token - per channel (32 tokens): {e.diff:+.4f}, "
                    f"95% CI [{e.lo:+.4f}, {e.hi:+.4f}]"
                )
    return rows, lines


def _random_words(lens: Sequence[int], n: int, seed: int) -> list[list[int]]:
    """Per sentence of ``t`` tokens, ``n`` distinct positions drawn among its words (not the first or last token)."""
    if any(t - 2 < n for t in lens):
        raise ValueError(f"every sentence needs at least {n} tokens between its first and last, got {min(lens)} tokens")
    g = torch.Generator().manual_seed(seed)
    return [sorted((1 + torch.randperm(t - 2, generator=g)[:n]).tolist()) for t in lens]


def kept_key_errors(
    qkv: Sequence[dict[str, list[torch.Tensor]]],
    bits: int,
    ruler: str,
    kept: Sequence[Sequence[int]],
    exact: list[dict[str, torch.Tensor]] | None = None,
) -> np.ndarray:
    """:func:`output_errors` for keys, with the one or two tokens ``kept[s]`` of sentence ``s`` in fp16, out of
    every ruler.

    The first kept token is moved to the front and a second one to the end, the others keep their order,
    so :func:`quantize_sentences` with ``sink_fp16=True`` (and ``residual=1`` for a second token) leaves
    exactly those out (its ``channel32`` rulers then run over the same tokens as when they are removed);
    then the keys move back. Every sentence keeps the same number of tokens.
    """
    exact = exact if exact is not None else exact_attention(qkv)
    lens = [k.shape[1] for k in qkv[0]["k"]]
    n_kept = {len(p) for p in kept}
    if len(n_kept) != 1 or not n_kept <= {1, 2}:
        raise ValueError(f"keep one or two tokens in every sentence, got {sorted(n_kept)}")
    order = [[p[0], *(j for j in range(t) if j not in p), *p[1:]] for t, p in zip(lens, kept, strict=True)]
    back = [torch.argsort(torch.tensor(o)) for o in order]
    err = torch.zeros(len(lens), dtype=torch.float64)
    for layer, ref in zip(qkv, exact, strict=True):
        moved = [k[:, o] for k, o in zip(layer["k"], order, strict=True)]
        hat = quantize_sentences(moved, bits, ruler, sink_fp16=True, residual=len(kept[0]) - 1)
        hat = _pad([h[:, i] for h, i in zip(hat, back, strict=True)], ref["q"].shape[2])
        o_hat = _masked_attention(ref["q"], hat, ref["v"], ref["keys"])[1]
        err += ((ref["o"] - o_hat) * ref["rows"]).square().sum((1, 2, 3)) / ref["norm"]
    return (err / len(qkv)).numpy()


def centred_key_rows(
    qkv: Sequence[dict[str, list[torch.Tensor]]], bits: int = 2, seed: int = 0
) -> tuple[list[dict[str, Any]], list[str]]:
    """Keys per token against per channel over 32 tokens (equal metadata): the offsets' and ``[CLS]``'s share.

    Rows: the real keys; each channel's mean over its sentence removed (the attention is unchanged:
    the softmax ignores a shift common to all of a query's scores); ``[CLS]`` kept in fp16 in both
    rulers; both; and the control: means removed, one random word per sentence (fixed ``seed``) kept
    in fp16 instead. Columns: the mean attention-output errors and their ratio. The line: per token
    minus per channel with both suspects removed, and its paired 95% interval.
    """
    _check_qkv(qkv)
    from qlesson.teach.intervals import paired_bootstrap

    centred = [{"q": lay["q"], "k": [k - k.mean(dim=1, keepdim=True) for k in lay["k"]], "v": lay["v"]} for lay in qkv]
    rows, lines = [], []
    exact = {"real": exact_attention(qkv), "channel means removed": exact_attention(centred)}
    words = _random_words([k.shape[1] for k in qkv[0]["k"]], 1, seed)
    for kept in ("none", "[CLS]", "a random word"):
        for name, data in (("real", qkv), ("channel means removed", centred)):
            if kept == "a random word":
                tok, ch = (kept_key_errors(data, bits, r, words, exact[name]) for r in ("token", "channel32"))
            else:
                kw = {"sink_fp16": kept != "none", "exact": exact[name]}
                tok, ch = (output_errors(data, "k", bits, r, **kw) for r in ("token", "channel32"))
            rows.append(
                {
                    "keys": name,
                    "kept in fp16": kept,
                    "per token": float(tok.mean()),
                    "per channel (32 tokens)": float(ch.mean()),
                    "token - channel": float(tok.mean() - ch.mean()),
                }
            )
            if kept == "[CLS]" and name != "real":
                ci = paired_bootstrap(tok, ch, pairs=True)
                lines.append(
                    f"means removed, [CLS] in fp16, per token - per channel (32 tokens): {ci.diff:+.4f}, "
                    f"95% CI [{ci.lo:+.4f}, {ci.hi:+.4f}]"
                )
    one = {
        name: float(output_errors(data, "k", bits, "channel").mean())
        for name, data in (("real", qkv), ("centred", centred))
    }
    lines.append(
        f"per channel over one sentence: real keys {one['real']:.4f}, channel means removed {one['centred']:.4f}"
    )
    return rows, lines


def kept_token_rows(
    qkv: Sequence[dict[str, list[torch.Tensor]]], bits: int = 2, seed: int = 0, ruler: str = "channel"
) -> list[dict[str, Any]]:
    """Values per token against per channel (``ruler``: ``"channel"``, one sentence, or ``"channel32"``, 32 tokens
    end to end), with one token per sentence kept in fp16.

    The kept token is none, ``[CLS]`` (the first), ``[SEP]`` (the last) or a word drawn at random
    (fixed seed); it stays exact and out of every ruler. Columns: mean attention-output errors.
    """
    _check_qkv(qkv)
    exact = exact_attention(qkv)
    lens = [v.shape[1] for v in qkv[0]["v"]]
    g = torch.Generator().manual_seed(seed)
    word = [int(torch.randint(1, t - 1, (1,), generator=g)) for t in lens]
    kept = {"none": [None] * len(lens), "[CLS]": [0] * len(lens), "[SEP]": [t - 1 for t in lens], "a random word": word}
    rows = []
    for name, idx in kept.items():
        # move the kept token to the front (neither ruler depends on the tokens' order), keep it as the sink
        order = [
            list(range(t)) if i is None else [i, *(j for j in range(t) if j != i)]
            for t, i in zip(lens, idx, strict=True)
        ]
        back = [torch.argsort(torch.tensor(o)) for o in order]
        row: dict[str, Any] = {"kept in fp16": name}
        for label, kind in (("per token", "token"), ("per channel", ruler)):
            err = torch.zeros(len(lens), dtype=torch.float64)
            for layer, ref in zip(qkv, exact, strict=True):
                moved = [v[:, o] for v, o in zip(layer["v"], order, strict=True)]
                hat = quantize_sentences(moved, bits, kind, sink_fp16=name != "none")
                hat = [h[:, b] for h, b in zip(hat, back, strict=True)]
                o_hat = ref["p"] @ _pad(hat, ref["q"].shape[2])
                err += ((ref["o"] - o_hat) * ref["rows"]).square().sum((1, 2, 3)) / ref["norm"]
            row[label] = float((err / len(qkv)).mean())
        row["lower"] = "per token" if row["per token"] < row["per channel"] else "per channel"
        rows.append(row)
    return rows


def window_errors(qkv: Sequence[dict[str, list[torch.Tensor]]], bits: int = 2, residual: int = 4) -> dict[str, float]:
    """Per-channel keys: no window; the ruler over all tokens then the newest restored; the ruler over the rest."""
    _check_qkv(qkv)
    exact = exact_attention(qkv)
    restored = []
    for layer in qkv:
        hat = quantize_sentences(layer["k"], bits, "channel")
        for h, k in zip(hat, layer["k"], strict=True):
            h[:, -residual:] = k[:, -residual:]
        restored.append({"q": layer["q"], "k": hat, "v": layer["v"]})
    err = torch.zeros(len(qkv[0]["k"]), dtype=torch.float64)
    for layer, ref in zip(restored, exact, strict=True):
        hat = _pad(layer["k"], ref["q"].shape[2])
        o_hat = _masked_attention(ref["q"], hat, ref["v"], ref["keys"])[1]
        err += ((ref["o"] - o_hat) * ref["rows"]).square().sum((1, 2, 3)) / ref["norm"]
    return {
        "no window": float(output_errors(qkv, "k", bits, "channel", exact=exact).mean()),
        "newest exact, ruler over all": float((err / len(qkv)).mean()),
        "newest exact, ruler over the rest": float(
            output_errors(qkv, "k", bits, "channel", residual=residual, exact=exact).mean()
        ),
    }


def _full_bits(bits: int, ruler: str, n_tok: float, sink: bool) -> float:
    """Bits per value, every bit counted, on sentences of ``n_tok`` tokens; ``sink``: ``[CLS]`` in fp16, out of the
    rulers. A ruler over one sentence is paid once per channel and sentence, a 32-token ruler once per 32
    quantized tokens, so an fp16 ``[CLS]`` pays no share of it.

    >>> round(_full_bits(2, "channel", 12.5, True), 2), round(_full_bits(2, "channel32", 12.5, True), 3)
    (5.68, 4.04)
    """
    if not sink:
        return ruler_bits(bits, ruler, n_tok)
    quantized = n_tok - 1
    rulers = {"token": quantized * 32 / HEAD_DIM, "channel": 32.0, "channel32": quantized * 32 / 32}[ruler]
    return (bits * quantized + rulers + 16) / n_tok


def full_cost_rows(qkv: Sequence[dict[str, list[torch.Tensor]]]) -> list[dict[str, Any]]:
    """Keys and values at about 4 bits per value, every bit counted: codes, each ruler's fp16 minimum
    and scale (:func:`ruler_bits`), and for an fp16 ``[CLS]`` its 32 values per head at 16 bits
    instead of ``b`` (spread over a sentence's tokens). Columns: bits per value and mean output error.
    """
    _check_qkv(qkv)
    n_tok = float(np.mean([k.shape[1] for k in qkv[0]["k"]]))
    label = {r: lab for lab, r in RULERS}
    exact = exact_attention(qkv)
    rows = []
    for tensor, b, ruler, sink in (
        ("keys", 3, "token", False),
        ("keys", 2, "channel", False),
        ("keys", 3, "channel32", False),
        ("values", 3, "token", False),
        ("values", 2, "channel", True),
        ("values", 2, "channel32", True),
    ):
        err = output_errors(qkv, tensor[0], b, ruler, sink_fp16=sink, exact=exact).mean()
        rows.append(
            {
                "tensor": tensor,
                "ruler": label[ruler],
                "[CLS]": "fp16" if sink else "quantized",
                "bits": b,
                "bits per value, all costs": _full_bits(b, ruler, n_tok, sink),
                "error": float(err),
            }
        )
    return rows


def value_cost_rows(qkv: Sequence[dict[str, list[torch.Tensor]]]) -> tuple[list[dict[str, Any]], str]:
    """Lesson 10 section 5: values per token at 3 bits with ``[CLS]`` quantized against per channel over 32
    tokens at 2 bits with an fp16 ``[CLS]``, codes and metadata counted (:func:`full_cost_rows`'s two value rows), and
    the paired 95% interval of the difference of their attention-output errors."""
    from qlesson.teach.intervals import paired_bootstrap

    _check_qkv(qkv)
    n_tok = float(np.mean([k.shape[1] for k in qkv[0]["k"]]))
    label = {r: lab for lab, r in RULERS}
    exact = exact_attention(qkv)
    rows, errors = [], []
    for b, ruler, sink in ((3, "token", False), (2, "channel32", True)):
        err = output_errors(qkv, "v", b, ruler, sink_fp16=sink, exact=exact)
        errors.append(err)
        rows.append(
            {
                "ruler": label[ruler],
                "[CLS]": "fp16" if sink else "quantized",
                "bits": b,
                "bits per value, all costs": _full_bits(b, ruler, n_tok, sink),
                "error": float(err.mean()),
            }
        )
    d = paired_bootstrap(*errors, pairs=True)
    return (
        rows,
        f"per token, 3 bits - per channel, 2 bits, fp16 [CLS]: {d.diff:+.4f}, 95% CI [{d.lo:+.4f}, {d.hi:+.4f}]",
    )

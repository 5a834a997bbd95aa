"""Lesson 10 · Which axis? The KV cache: the exercise tasks and the recall questions.

Sources: ``notebooks/10_which_axis.py`` (the lesson) and
``exercises/solutions/10_which_axis.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import INTERVIEW, LESSON, Numeric, Question, choice

_G = torch.Generator().manual_seed(1234 + 10)

# ---- task 1: the bytes of a KV cache -----------------------------------------------------------


def _kv_bytes(layers: int, kv_heads: int, head_dim: int, tokens: int, bytes_per_value: float) -> float:
    return 2 * layers * kv_heads * head_dim * tokens * bytes_per_value


# ---- task 2: keys per channel, asymmetric --------------------------------------------------------


def _keys_per_channel(k: torch.Tensor, bits: int, axis: int = 0, symmetric: bool = False) -> torch.Tensor:
    """Asymmetric per-channel fake quantization of ``k [tokens, channels]``: min and max over the tokens."""
    qmax = 2**bits - 1
    if symmetric:
        s = k.abs().amax(axis, keepdim=True) / (2 ** (bits - 1) - 1)
        return torch.round(k / s).clamp(-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1) * s
    lo, hi = k.amin(axis, keepdim=True), k.amax(axis, keepdim=True)
    s = (hi - lo) / qmax
    return torch.round((k - lo) / s).clamp(0, qmax) * s + lo


def _keys(tokens: int, channels: int, shift: float = 0.0) -> torch.Tensor:
    k = torch.randn(tokens, channels, generator=_G, dtype=torch.float64)
    k = k * torch.linspace(0.2, 3.0, channels, dtype=torch.float64) + shift  # channels of different sizes
    return k


# ---- task 3: how many tokens are quantized -------------------------------------------------------


def _quantized_tokens(tokens: int, residual: int, group: int) -> int:
    return max(tokens - residual, 0) // group * group


TASKS: list[Task] = [
    Task(
        "10.kv_bytes",
        "the bytes of a KV cache",
        _kv_bytes,
        [
            Case((32, 32, 128, 4096, 2), "LLaMA-7B-like, 4k tokens, fp16"),
            Case((6, 12, 32, 256, 2), "MiniLM-shaped, 256 tokens, fp16"),
            Case((80, 8, 128, 32768, 1), "80 layers, 8 KV heads (GQA), 32k tokens, FP8"),
            Case((1, 1, 64, 10, 0.5), "one layer, one head, 4-bit values"),
        ],
        "every layer stores two tensors per head for every token; count them all",
        [
            Mistake(
                "counted keys only (or values only): the cache holds both", lambda L, H, D, T, b: L * H * D * T * b
            ),
            Mistake("forgot the layers: every layer has its own cache", lambda L, H, D, T, b: 2 * H * D * T * b),
            Mistake("forgot the heads", lambda L, H, D, T, b: 2 * L * D * T * b),
        ],
    ),
    Task(
        "10.keys_per_channel",
        "quantize keys per channel, asymmetric",
        _keys_per_channel,
        [
            Case((_keys(16, 8), 2), "16 tokens x 8 channels, 2 bits"),
            Case((_keys(10, 4, shift=2.0), 3), "shifted keys (all one sign in some channels), 3 bits"),
            Case((_keys(24, 6), 4), "24 tokens x 6 channels, 4 bits"),
        ],
        "one ruler per channel (column), fitted to that channel's minimum and maximum over the tokens",
        [
            Mistake(
                "quantized per token (one ruler per row): the wrong axis for keys",
                lambda k, b: _keys_per_channel(k, b, axis=1),
            ),
            Mistake(
                "symmetric rulers: a channel that is all one sign wastes half its codes",
                lambda k, b: _keys_per_channel(k, b, symmetric=True),
            ),
        ],
    ),
    Task(
        "10.quantized_tokens",
        "how many cached tokens are quantized",
        _quantized_tokens,
        [
            Case((100, 32, 32), "100 tokens, residual 32, groups of 32"),
            Case((100, 20, 32), "100 tokens, residual 20, groups of 32"),
            Case((128, 32, 32), "128 tokens"),
            Case((20, 32, 32), "20 tokens: shorter than the residual window"),
            Case((1000, 128, 64), "1000 tokens, residual 128, groups of 64"),
        ],
        "the newest tokens stay in full precision; of the rest, only complete groups have a scale",
        [
            Mistake("no residual window: the newest tokens are quantized too", lambda t, r, g: t // g * g),
            Mistake(
                "quantized a partial group: its per-channel scale needs all its tokens", lambda t, r, g: max(t - r, 0)
            ),
            Mistake("subtracted the residual after rounding to groups", lambda t, r, g: max(t // g * g - r, 0)),
        ],
    ),
]

RECALL: tuple[Question, ...] = (
    choice(
        "KIVI quantizes keys per channel and values per token. Why keys per channel?",
        (
            "Key outliers sit in a few channels on every token: a scale per channel isolates them",
            True,
            "Lesson 10 measured it on MiniLM: per-channel keys gave the lower attention error at 2, 3 and 4 bits.",
        ),
        ("Keys are smaller than values", False, "Size is not the reason; where the large values sit is."),
        (
            "Per-channel scales can be computed as each token arrives",
            False,
            "The opposite: a channel's scale computed from the data needs a group of tokens, hence the "
            "residual window (KVQuant avoids it with scales calibrated offline).",
        ),
        source=LESSON,
    ),
    choice(
        "Why does a per-channel key cache, with scales computed from the data, keep the newest tokens "
        "in full precision?",
        (
            "A per-channel scale over a group of tokens exists only once the group is complete",
            True,
            "Until then the keys wait in full precision. (KIVI keeps its newest values in fp16 too, for "
            "accuracy, although per-token values could be quantized at once.)",
        ),
        ("The newest tokens matter least", False, "In causal LLMs recent tokens get much of the attention."),
        ("To save memory", False, "Full precision costs more memory, not less."),
        source=LESSON,
    ),
    Numeric(
        "LLaMA-7B-like: 32 layers, 32 KV heads of 128 channels. MiB of its fp16 KV cache for 4096 tokens?",
        2048,
        "2 (keys and values) x 32 x 32 x 128 x 4096 x 2 bytes = 2 GiB.",
        tol=0.5,
        mistakes=((1024, "that counts keys or values only; the cache stores both"),),
    ),
    choice(
        "Interview: vLLM's FP8 KV cache uses one scale per tensor. Why is that enough when 2-bit needs more?",
        (
            "FP8 carries an exponent per value, so one scale only has to place the range, not resolve it",
            True,
            "An integer code has a fixed step; a float code's step scales with the value.",
        ),
        ("Attention ignores small errors", False, "Attention is sensitive to key errors (lesson 10 measured it)."),
        ("FP8 values have no outliers", False, "The outliers are in the keys, whatever the format."),
        source=INTERVIEW,
    ),
)

"""Lesson 10 · Which axis? The KV cache: the exercise tasks and the recall questions.

Sources: ``notebooks/10_which_axis.py`` (the lesson) and
``exercises/solutions/10_which_axis.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import math

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import LESSON, Numeric, Question, choice

_G = torch.Generator().manual_seed(1234 + 10)

# ---- task 1: the bytes of a KV cache -----------------------------------------------------------


def _kv_bytes(layers: int, kv_heads: int, head_dim: int, tokens: int, bytes_per_value: float) -> float:
    return 2 * layers * kv_heads * head_dim * tokens * bytes_per_value


# ---- task 2: keys per channel, asymmetric --------------------------------------------------------


def _keys_per_channel(
    k: torch.Tensor,
    bits: int,
    axis: int = 0,
    symmetric: bool = False,
    levels: int | None = None,
    add_lo: bool = True,
    rounding=torch.round,  # noqa: ANN001
    guard: bool = True,
) -> torch.Tensor:
    """Asymmetric per-channel fake quantization of ``k [tokens, channels]``: min and max over the tokens.

    A channel whose values are all equal (one token, or a constant) comes back exact: its scale is 0.
    ``levels``, ``add_lo``, ``symmetric``, ``rounding`` and ``guard=False`` (0 / 0 on a constant channel) are
    the named mistakes' variants.
    """
    qmax = 2**bits - 1
    if symmetric:
        s = k.abs().amax(axis, keepdim=True) / (2 ** (bits - 1) - 1)
        return torch.round(k / s).clamp(-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1) * s
    lo, hi = k.amin(axis, keepdim=True), k.amax(axis, keepdim=True)
    scale = (hi - lo) / (levels or qmax)
    step = torch.where(scale > 0, scale, torch.ones_like(scale)) if guard else scale
    codes = rounding((k - lo) / step).clamp(0, qmax)
    return codes * scale + (lo if add_lo else 0)


def _keys_widened(k: torch.Tensor, bits: int) -> torch.Tensor:
    """Lesson 05's asymmetric ruler: the range widened to include 0, with an integer zero point."""
    qmax = 2**bits - 1
    lo, hi = k.amin(0, keepdim=True).clamp(max=0), k.amax(0, keepdim=True).clamp(min=0)
    scale = torch.where(hi > lo, (hi - lo) / qmax, torch.ones_like(hi))
    zero = torch.round(-lo / scale)
    return (torch.round(k / scale) + zero).clamp(0, qmax).sub(zero) * scale


def _keys_integer_zero(k: torch.Tensor, bits: int) -> torch.Tensor:
    """An integer zero point round(-lo / scale) on the channel's own range: the grid no longer starts at lo."""
    qmax = 2**bits - 1
    lo, hi = k.amin(0, keepdim=True), k.amax(0, keepdim=True)
    scale = torch.where(hi > lo, (hi - lo) / qmax, torch.ones_like(hi))
    zero = torch.round(-lo / scale)
    return (torch.round(k / scale) + zero).clamp(0, qmax).sub(zero) * scale


def _keys(tokens: int, channels: int, shift: float = 0.0) -> torch.Tensor:
    k = torch.randn(tokens, channels, generator=_G, dtype=torch.float64)
    k = k * torch.linspace(0.2, 3.0, channels, dtype=torch.float64) + shift  # channels of different sizes
    return k


def _with_constant_channel(tokens: int, channels: int) -> torch.Tensor:
    k = _keys(tokens, channels)
    k[:, 1] = 0.75  # a channel with one value on every token: hi == lo
    return k


# ---- task 3: the most keys in fp16 at once ------------------------------------------------------


def _quantized_tokens(tokens: int, residual: int, group: int) -> int:
    """Keys quantized per channel after ``tokens`` tokens: whole groups of the tokens older than the window."""
    return max(tokens - residual, 0) // group * group


def _fp16_keys(tokens: int, residual: int, group: int) -> int:
    return tokens - _quantized_tokens(tokens, residual, group)


def _peak_fp16_keys(tokens: int, residual: int, group: int) -> int:
    """The most keys in fp16 at once while the cache grows one token at a time up to ``tokens``."""
    return max(_fp16_keys(t, residual, group) for t in range(tokens + 1))


# ---- task 4: choose the axis by measuring ---------------------------------------------------------


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scaled: bool = True) -> torch.Tensor:
    return torch.softmax(q @ k.T / (k.shape[1] ** 0.5 if scaled else 1.0), dim=-1) @ v


def _axis_errors(  # noqa: PLR0913
    q,
    k,
    v,
    which: str,
    bits: int,
    on_output: bool = True,
    scaled: bool = True,
    on_probs: bool = False,  # noqa: ANN001
    both: bool = False,
    largest: bool = False,
) -> dict[str, float]:
    """Squared error of each axis's quantization of ``which``: on the attention output, or on the tensor.

    ``on_probs=True`` measures a key's error on the attention probabilities (total variation) instead of
    the output, ``scaled=False`` leaves out the scores' ``1 / sqrt(dim)``, and ``both=True`` quantizes keys
    and values on the same axis (the cache stores only ``which``), ``largest=True`` takes the output's largest
    absolute error instead of the summed squares: four named mistakes.
    """
    o = _attention(q, k, v, scaled)
    x = k if which == "k" else v
    errors = {}
    for axis, dim in (("token", 1), ("channel", 0)):
        x_hat = _keys_per_channel(x, bits, axis=dim)  # dim 1: a ruler per token (over its channels)
        if not on_output:
            errors[axis] = float((x - x_hat).square().sum())
            continue
        if on_probs and which == "k":
            p, p_hat = (torch.softmax(q @ kk.T / k.shape[1] ** 0.5, dim=-1) for kk in (k, x_hat))
            errors[axis] = float((p - p_hat).abs().sum() / 2)
            continue
        if both:
            o_hat = _attention(q, _keys_per_channel(k, bits, axis=dim), _keys_per_channel(v, bits, axis=dim), scaled)
        else:
            o_hat = _attention(q, x_hat, v, scaled) if which == "k" else _attention(q, k, x_hat, scaled)
        errors[axis] = float((o - o_hat).abs().max()) if largest else float((o - o_hat).square().sum())
    return errors


def _choose_axis(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, which: str, bits: int) -> str:
    errors = _axis_errors(q, k, v, which, bits)
    return min(errors, key=errors.get)


def _head(kind: str, seed: int, tokens: int = 48, dim: int = 16) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One toy head ``(q, k, v)``, each ``[tokens, dim]``, with one kind of structure."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(tokens, dim, generator=g, dtype=torch.float64) for _ in range(3))
    if kind == "loud key channel":
        k[:, 2] = k[:, 2] * 10 + 20
    elif kind == "value sink":  # every query leans on token 0, whose value is tiny
        q, k[0] = q + 1.0, 0.9
        v = v * torch.linspace(0.2, 5.0, dim, dtype=torch.float64)
        v[0] = 0.01 * torch.randn(dim, generator=g, dtype=torch.float64)
    elif kind == "value sink, offsets":  # channels offset (per channel fits the tensor) and a leaned-on tiny token 0
        q, k[0] = q + 1.5, 0.9
        v = v + torch.linspace(-2.0, 2.0, dim, dtype=torch.float64)
        v[0] = 0.01 * torch.randn(dim, generator=g, dtype=torch.float64)
    elif kind == "value offsets":
        v = v + torch.linspace(-6.0, 6.0, dim, dtype=torch.float64)
    elif kind == "key token offsets":
        k = k + 6 * torch.randn(tokens, 1, generator=g, dtype=torch.float64)
    elif kind == "loud key tokens":
        k[[3, 9, 20]] *= 10
    elif kind == "loud unread key channels":  # the queries read two channels; the others are loud
        q[:, 2:] = 0.0
        k[:, 2:] *= 8
        k[[3, 9, 20, 30]] *= 4
    return q, k, v


def _case4(kind: str, seed: int, which: str, bits: int, hidden: bool = False) -> Case:
    return Case(lambda: (*_head(kind, seed), which, bits), f"{kind}, {bits} bits", hidden=hidden)


# ---- task 5: what a key cache really costs --------------------------------------------------------


def _key_bits(  # noqa: PLR0913
    bits: int, group: int, tokens: int, residual: int, minimum: bool = True, window: bool = True, float_bits: int = 16
) -> float:
    """Mean bits per cached key: codes, an fp16 scale (and minimum) per group of tokens, the fp16 window."""
    n_q = _quantized_tokens(tokens, residual if window else 0, group)
    meta = (2 if minimum else 1) * float_bits * n_q / group
    return (n_q * bits + meta + (tokens - n_q) * 16) / tokens


# ---- task 6: where the value verdict flips -------------------------------------------------------


def sink_head(shift: float, seed: int = 3, tokens: int = 48, dim: int = 16) -> tuple[torch.Tensor, ...]:
    """Task 6's head ``(q, k, v)``: values whose channels sit at offsets -4..4 (spread 1 around them) and a tiny
    token 0, which the queries lean on by ``shift`` (0: about 2% of the attention, 2: about three quarters)."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(tokens, dim, generator=g, dtype=torch.float64) for _ in range(3))
    q, k[0] = q + shift, 0.9
    v = v + torch.linspace(-4.0, 4.0, dim, dtype=torch.float64)[torch.randperm(dim, generator=g)]
    v[0] = 0.01 * torch.randn(dim, generator=g, dtype=torch.float64)
    return q, k, v


def _sink_share(shift: float) -> float:
    q, k, _ = sink_head(shift)
    return float(torch.softmax(q @ k.T / k.shape[1] ** 0.5, dim=-1)[:, 0].mean())


def _sink_margin(shift: float, bits: int) -> float:
    """Per token's output error minus per channel's (squared, summed): positive while per channel wins."""
    q, k, v = sink_head(shift)
    o = _attention(q, k, v)
    token, channel = (
        float((o - _attention(q, k, _keys_per_channel(v, bits, axis=dim))).square().sum()) for dim in (1, 0)
    )
    return token - channel


def _flip_shift(bits: int) -> float:
    """Measured: the shift of token 0's key where per token starts to beat per channel (bisection)."""
    lo, hi = 0.0, 4.0  # per channel wins at shift 0, per token at shift 4
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _sink_margin(mid, bits) > 0 else (lo, mid)
    return hi


def _flip_share(bits: int) -> float:
    """Measured: the share of attention on token 0 where per token starts to beat per channel."""
    return _sink_share(_flip_shift(bits))


def _sink_flip(bits: int = 2) -> float:
    """The measured flip point, graded within ``_SINK_RTOL`` of itself."""
    return _flip_share(bits)


_SINK_RTOL = 0.2  # a read between two shifts 0.1 apart lands within 10% of the flip
_SINK_FAR_LOW = "on this head per channel still wins at that share; sample larger shifts, between 0.5 and 1.5"
_SINK_NEAR_LOW = (
    "per channel still wins at that share on this head: the verdict changes at a somewhat larger share; sample "
    "shifts closer together just above the one you read"
)
_SINK_NEAR_HIGH = (
    "per token already wins at that share on this head: sample shifts closer together and report the share where "
    "the verdict first changes"
)
_SINK_SHIFT = (
    "on this head it flips well before 90% (a shift of about 1 is not a share: give the share of attention token 0 "
    "takes at the flip)"
)
_SINK_PERCENT = "give the share as a fraction of 1, not in percent"


def _judge_sink_flip(answer: object, bits: int) -> str | None:
    """None when ``answer`` is within ``_SINK_RTOL`` of the measured flip; else which side of it the answer lies."""
    try:
        x = float(answer)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "give one number: the share of attention on token 0 where the verdict flips"
    if not math.isfinite(x) or x <= 0:
        return "give a share of attention between 0 and 1"
    flip = _flip_share(bits)
    if abs(x - flip) <= _SINK_RTOL * flip:
        return None
    if x > 1.5:
        return _SINK_PERCENT
    if x >= 0.75:
        return _SINK_SHIFT
    if x > flip:
        return _SINK_NEAR_HIGH
    return _SINK_NEAR_LOW if x >= 0.1 else _SINK_FAR_LOW


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
        "every layer stores two tensors per head for every token; count them all, in bytes",
        [
            Mistake(
                "counted keys only (or values only): the cache holds both", lambda L, H, D, T, b: L * H * D * T * b
            ),
            Mistake("forgot the layers: every layer has its own cache", lambda L, H, D, T, b: 2 * H * D * T * b),
            Mistake("forgot the heads", lambda L, H, D, T, b: 2 * L * D * T * b),
            Mistake(
                "returned bits, not bytes: bytes_per_value is already in bytes",
                lambda L, H, D, T, b: 8 * _kv_bytes(L, H, D, T, b),
            ),
            Mistake(
                "divided by 8: bytes_per_value is already in bytes",
                lambda L, H, D, T, b: _kv_bytes(L, H, D, T, b) / 8,
            ),
            Mistake(
                "returned KiB (divided by 1024): the task asks for bytes",
                lambda L, H, D, T, b: _kv_bytes(L, H, D, T, b) / 1024,
            ),
            Mistake(
                "returned MiB (divided by 2**20): the task asks for bytes",
                lambda L, H, D, T, b: _kv_bytes(L, H, D, T, b) / 2**20,
            ),
            Mistake(
                "returned GiB (divided by 2**30): the task asks for bytes",
                lambda L, H, D, T, b: _kv_bytes(L, H, D, T, b) / 2**30,
            ),
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
            Case((_keys(1, 5), 3), "one token: every channel's minimum is its maximum", hidden=True),
            Case((_with_constant_channel(12, 4), 2), "a channel that is constant", hidden=True),
            Case((_keys(7, 3, shift=-1.5), 4), "another shape, 4 bits", hidden=True),
        ],
        "one ruler per channel (column) from that channel's minimum to its maximum over the tokens, with "
        "2**bits codes, each value sent to its nearest code; a channel whose values are all equal must come "
        "back exact",
        [
            Mistake(
                "quantized per token (one ruler per row): the wrong axis for keys",
                lambda k, b: _keys_per_channel(k, b, axis=1),
            ),
            Mistake(
                "symmetric rulers: a channel that is all one sign wastes half its codes",
                lambda k, b: _keys_per_channel(k, b, symmetric=True),
            ),
            Mistake(
                "the step is (hi - lo) / 2**bits: 2**bits codes have 2**bits - 1 steps between them, so the "
                "maximum is never reached",
                lambda k, b: _keys_per_channel(k, b, levels=2**b),
            ),
            Mistake(
                "forgot to add the minimum back: a code counts steps up from the channel's minimum",
                lambda k, b: _keys_per_channel(k, b, add_lo=False),
            ),
            Mistake(
                "rounded down (floor): a value goes to its nearest code, so round",
                lambda k, b: _keys_per_channel(k, b, rounding=torch.floor),
            ),
            Mistake(
                "widened the range to include 0 (lesson 05's integer zero point): KIVI's ruler starts at the "
                "channel's own float minimum, so an offset channel keeps all its codes",
                lambda k, b: _keys_widened(k, b),
            ),
            Mistake(
                "rounded the zero point to an integer: KIVI keeps the float minimum, so the lowest code sits "
                "exactly on the channel's minimum",
                lambda k, b: _keys_integer_zero(k, b),
            ),
            Mistake(
                "a channel whose values are all equal came back NaN: its scale is 0, so (k - lo) / scale is 0 / 0; "
                "give such a channel code 0",
                lambda k, b: _keys_per_channel(k, b, guard=False),
            ),
        ],
        keeps_inputs=True,
        minutes=5,
    ),
    Task(
        "10.peak_fp16_keys",
        "the most keys a streaming cache holds in fp16 at once",
        _peak_fp16_keys,
        [
            Case((100, 32, 32), "up to 100 tokens, window 32, groups of 32"),
            Case((128, 32, 32), "up to 128 tokens: the last token completes a group"),
            Case((100, 20, 32), "window 20"),
            Case((1000, 128, 64), "up to 1000 tokens, window 128, groups of 64"),
            Case((20, 32, 32), "20 tokens: shorter than the window"),
            Case((4096, 32, 1), "groups of one token", hidden=True),
            Case((10, 0, 4), "no window, groups of 4", hidden=True),
            Case((300, 16, 128), "groups longer than the window", hidden=True),
            Case((64, 0, 64), "no window, one group of 64", hidden=True),
        ],
        "follow the cache token by token: when does a group's last token arrive, and how many older tokens "
        "are waiting just before it does?",
        [
            Mistake(
                "that is the count after the last token; the most can come earlier, just before a group fills",
                lambda t, r, g: _fp16_keys(t, r, g),
            ),
            Mistake(
                "that is the window only: older tokens wait in fp16 too until their group is complete",
                lambda t, r, g: min(r, t),
            ),
            Mistake(
                "a group is quantized as soon as its last token arrives, so at most group - 1 older tokens wait "
                "beside the window, not a whole group",
                lambda t, r, g: min(t, r + g),
            ),
            Mistake(
                "a cache of fewer tokens than the window plus a group holds only the tokens it has",
                lambda t, r, g: r + g - 1,
            ),
        ],
        minutes=5,
    ),
    Task(
        "10.choose_axis",
        "choose a cache axis by measuring",
        _choose_axis,
        [
            _case4("loud key channel", 0, "k", 3),
            _case4("value sink", 0, "v", 2),
            _case4("value offsets", 1, "v", 3, hidden=True),
            _case4("key token offsets", 2, "k", 2, hidden=True),
            _case4("loud key tokens", 2, "k", 3, hidden=True),
            _case4("value sink", 3, "v", 2, hidden=True),
            _case4("loud unread key channels", 0, "k", 3, hidden=True),
            _case4("value sink, offsets", 3, "v", 2, hidden=True),
            _case4("value sink, offsets", 2, "v", 3, hidden=True),
            _case4("value offsets", 0, "k", 2, hidden=True),  # keys cached; values that favour the other axis
            _case4("loud key tokens", 3, "k", 3, hidden=True),
            _case4("value sink", 1, "k", 2, hidden=True),
        ],
        "quantize the tensor both ways, leave the other one exact, and compare where the cache's error "
        "lands: the squared error of what the head computes from it",
        [
            Mistake(
                "applied KIVI's rule (keys per channel, values per token) instead of measuring this head",
                lambda q, k, v, which, b: "channel" if which == "k" else "token",
            ),
            Mistake(
                "your measure picks a different axis than the error in the head's output does here: measure "
                "what the head computes from the cache",
                lambda q, k, v, which, b: min((e := _axis_errors(q, k, v, which, b, on_output=False)), key=e.get),
            ),
            Mistake(
                "your choices match measuring how far the attention probabilities move: measure what the head outputs",
                lambda q, k, v, which, b: min((e := _axis_errors(q, k, v, which, b, on_probs=True)), key=e.get),
            ),
            Mistake(
                "your choices match a head without the 1 / sqrt(dim) on its scores: scale the scores before the "
                "softmax, as the head does",
                lambda q, k, v, which, b: min((e := _axis_errors(q, k, v, which, b, scaled=False)), key=e.get),
            ),
            Mistake(
                "your choices match the largest single error in the output: one entry decides a max; sum the "
                "squared errors over every entry",
                lambda q, k, v, which, b: min((e := _axis_errors(q, k, v, which, b, largest=True)), key=e.get),
            ),
            Mistake(
                "your choices match quantizing both tensors: the cache stores only `which`; keep the other one "
                "exact, or its errors can decide the axis",
                lambda q, k, v, which, b: min((e := _axis_errors(q, k, v, which, b, both=True)), key=e.get),
            ),
            Mistake(
                "your choices are the axis with the larger error: a min over dim 0 of a [tokens, dim] tensor "
                "spans the tokens, so it is a ruler per channel; check which ruler each name gets",
                lambda q, k, v, which, b: max((e := _axis_errors(q, k, v, which, b)), key=e.get),
            ),
        ],
        minutes=8,
    ),
    Task(
        "10.key_bits",
        "the bits a per-channel key cache really costs",
        _key_bits,
        [
            Case((2, 32, 4096, 32), "2-bit keys, 4096 tokens, fixed window 32"),
            Case((2, 32, 100, 32), "100 tokens, fixed window 32"),
            Case((4, 64, 1000, 128), "4 bits, groups of 64, window 128"),
            Case((2, 32, 95, 32), "95 tokens, window 32: one token short of a second group"),
            Case((2, 32, 20, 32), "shorter than the window", hidden=True),
            Case((3, 1, 50, 0), "groups of one token, no window", hidden=True),
            Case((2, 32, 131072, 128), "131,072 tokens, window 128", hidden=True),
        ],
        "count every bit stored for the keys of one channel (codes, each group's metadata, the tokens left "
        "in fp16) and divide by the number of keys",
        [
            Mistake(
                "counted a scale but no minimum: an asymmetric ruler stores both",
                lambda b, g, t, r: _key_bits(b, g, t, r, minimum=False),
            ),
            Mistake(
                "quantized the window too: the newest tokens stay in fp16",
                lambda b, g, t, r: _key_bits(b, g, t, r, window=False),
            ),
            Mistake("counted the codes only: each group also stores its ruler", lambda b, g, t, r: float(b)),
            Mistake(
                "counted 32-bit floats: the scale and minimum are fp16, 32 bits per group together",
                lambda b, g, t, r: _key_bits(b, g, t, r, float_bits=32),
            ),
            Mistake(
                "left out each group's minimum and scale: every quantized group stores 32 bits of metadata",
                lambda b, g, t, r: (_quantized_tokens(t, r, g) * b + (t - _quantized_tokens(t, r, g)) * 16) / t,
            ),
            Mistake(
                "quantized the partial group: a per-channel ruler needs all its tokens",
                lambda b, g, t, r: (max(t - r, 0) * (b + 32 / g) + min(r, t) * 16) / t,
            ),
            Mistake(
                "left out the incomplete group: its tokens wait in fp16 too, until the group is full",
                lambda b, g, t, r: (_quantized_tokens(t, r, g) * (b + 32 / g) + min(r, t) * 16) / t,
            ),
            Mistake(
                "charged every key a share of a ruler: the window and any incomplete group stay in fp16",
                lambda b, g, t, r: b + 32 / g,
            ),
            Mistake(
                "charged each quantized key a whole ruler's 32 bits: one scale and minimum serve the group's keys "
                "together",
                lambda b, g, t, r: (_quantized_tokens(t, r, g) * (b + 32) + (t - _quantized_tokens(t, r, g)) * 16) / t,
            ),
        ],
        minutes=5,
    ),
]
TASKS.append(
    Task(
        "10.sink_flip",
        "find where the attention on a tiny token flips a value cache's axis",
        _sink_flip,
        [
            Case((2,), "the head described, 2 bits"),  # one answer, so one case: the one the task asks about
        ],
        "measure the better axis at shifts close together, and the share of attention token 0 takes at each; "
        "answer with the share where the verdict changes",
        [
            Mistake(_SINK_FAR_LOW, lambda *_: 0.05),
            Mistake(_SINK_NEAR_LOW, lambda *_: 0.15),
            Mistake(_SINK_NEAR_HIGH, lambda *_: 0.5),
            Mistake(_SINK_SHIFT, lambda *_: 0.9),
            Mistake(_SINK_PERCENT, lambda *_: 100 * _flip_share(2)),
        ],
        rtol=_SINK_RTOL,
        atol=0.0,
        is_value=True,
        judge=_judge_sink_flip,  # says on which side of the flip a wrong share lies
        minutes=6,  # a sweep over shifts, read off where the verdict changes
    )
)
PREDICT = {
    "shuffled_keys": choice(
        "On MiniLM's keys at 2 bits, per channel (one ruler per channel over one sentence) beats per token "
        "(one ruler per token over 32 channels) 2.6 times over. Shuffle each sentence's keys at random. "
        "What does per channel do on the shuffled keys?",
        (
            "It ties with per token",
            False,
            "Tempting if the win came only from the keys' channels, which shuffling destroys; but a per-channel "
            "ruler here also spans fewer values (about 12.5 against 32) and stores more metadata, and that helps "
            "on any numbers.",
        ),
        (
            "It still wins clearly",
            True,
            "A ruler over a dozen values fits a tighter range than one over 32, structure or not: the maximum "
            "minus the minimum of 12 random numbers is smaller than of 32. The extra scales cost 1.56 more bits "
            "per value. Only at equal metadata does the structure show.",
        ),
        (
            "It loses to per token",
            False,
            "Tempting if a row's 32 values, with more values to average over, shared a range better than a "
            "column's; but a ruler's step follows its range, and a range over more values is wider, not "
            "narrower.",
        ),
    ),
    "kept_token": choice(
        "Values at 2 bits, per token against per channel over 32 tokens. Keep [CLS] in fp16, out of every "
        "ruler: whose error drops?",
        (
            "Per channel's, several-fold; per token's barely moves",
            True,
            "Per channel falls from 0.519 to 0.083, about six-fold; per token from 0.111 to 0.109. [CLS] was "
            "costing the per-channel rulers, not the per-token ones.",
        ),
        (
            "Per token's: [CLS] sits in a ruler of its own, so that ruler's error goes away",
            False,
            "Tempting, since a per-token ruler covers [CLS] alone; but per token moves only from 0.111 to 0.109, "
            "while per channel falls from 0.519 to 0.083.",
        ),
        (
            "Both, about equally: one token fewer in every ruler",
            False,
            "Tempting if one exact token helped every ruler alike; but per token moves only from 0.111 to 0.109, "
            "while per channel falls about six-fold, from 0.519 to 0.083.",
        ),
    ),
}

RECALL: tuple[Question, ...] = (
    choice(
        "KIVI quantizes keys per channel. What did KIVI observe in LLaMA-family models that motivates it?",
        (
            "A few key channels are far larger than the rest, on every token",
            True,
            "That is KIVI's measurement on LLaMA-family models (KVQuant reports it too). MiniLM's keys have no "
            "such channel; their per-channel win at equal metadata is mostly offsets and [CLS]'s key (Going "
            "deeper).",
        ),
        (
            "The largest keys are the ones attention uses most, so they deserve scales of their own",
            False,
            "Tempting because loud sounds important; but the argument is about ranges, not importance: a few "
            "channels large on every token stretch every per-token ruler, whatever attention does with them.",
        ),
        (
            "A few value channels are far larger than the rest too, so keys and values both take per-channel scales",
            False,
            "Tempting because keys and values come from the same kind of projection; but KIVI and KVQuant find "
            "the outlier channels in the keys only, and KIVI gives the values per-token scales.",
        ),
        source=LESSON,
    ),
    choice(
        "Values at 2 bits: keeping [CLS] alone in fp16 cuts the per-channel error about six-fold and barely "
        "moves the per-token one, while [SEP] or a random word changes little. Why does [CLS], one token in "
        "about 12.5, decide it?",
        (
            "It takes much of the attention, and its tiny value is rounded badly by rulers the words size",
            True,
            "Section 4's table: in layers 1 to 4 over half of the attention lands on [CLS], its value is a few "
            "hundredths of a word's, and a per-channel ruler's error on it is 9 to 11 times its size. A per-token "
            "ruler is sized by [CLS] itself.",
        ),
        (
            "Its value is much larger than the words': it stretches every per-channel ruler, like lesson 02's loud row",
            False,
            "Tempting, because a loud outlier is what stretched lesson 02's shared ruler. But [CLS]'s value is a "
            "few hundredths of a word's: here it is the quiet one, rounded coarsely by rulers the words set.",
        ),
        (
            "Attention alone: a rounding error on a token that takes half the attention is amplified, whatever "
            "the ruler",
            False,
            "Tempting, since the attention does multiply the error; but the per-token ruler's error on [CLS] is "
            "multiplied by the same attention and barely matters. What differs is each ruler's error relative to "
            "[CLS]'s tiny value.",
        ),
        source=LESSON,
    ),
    choice(
        "Lesson 08: a KV cache stored in FP8 can use one scale per tensor, where a 2-bit integer cache needs many. "
        "Why?",
        (
            "Each FP8 value carries its own exponent, so one scale only places the range",
            True,
            "An integer code has a fixed step; a float code's step scales with the value.",
        ),
        (
            "An FP8 cache is converted to fp16 before attention, so its scale never reaches the product",
            False,
            "Tempting, since kernels do upcast; but converting multiplies by the scale, so a scale too coarse for "
            "some channel leaves its error in the fp16 values all the same.",
        ),
        (
            "FP8 has 256 codes against the 2-bit cache's 4, so one range has levels enough for every channel",
            False,
            "Tempting because 256 is many; but an int8 ruler has 256 codes too, all one step apart, and a channel "
            "far quieter than the loudest still falls between a few of them. FP8's step shrinks with the value.",
        ),
        source=LESSON,
    ),
)

EXERCISE_RECALL: tuple[Question, ...] = (
    choice(
        "MiniLM: per-channel keys (a ruler per sentence) beat per-token keys 2.6x. What separates structure "
        "from ruler size?",
        (
            "Compare at equal metadata (32 values per ruler both ways), on the real and on shuffled keys",
            True,
            "Shuffled keys keep 1.9x with one-sentence rulers but only a small edge (1.06x) at equal metadata; "
            "the real keys keep 1.7x there: that part is structure.",
        ),
        (
            "Repeat at 4 bits: if per channel still wins, the win is structure",
            False,
            "Tempting because a result that survives a new setting feels robust; but at 4 bits a per-channel "
            "ruler still spans about 12.5 values and a per-token one 32, so the smaller group comes along and "
            "can win on its own.",
        ),
        (
            "Use more sentences: a narrower interval settles the cause",
            False,
            "Tempting because the interval is how lesson 09 judged a difference; but it says how sure the "
            "difference is, not what causes it: more sentences still pit rulers of 12.5 values against rulers "
            "of 32.",
        ),
        (
            "Shuffle the keys: per channel's win on the shuffled keys is the structure's share",
            False,
            "Tempting because the shuffle is the right control; but shuffled keys have no structure left, so "
            "their 1.9x is what the smaller group alone buys. The structure is what the real keys keep beyond "
            "that, seen cleanly once both rulers span 32 values.",
        ),
        source=LESSON,
    ),
    Numeric(
        "A 10-token sentence's values, one 2-bit ruler per channel over the sentence, [CLS] in fp16: bits per value?",
        6.6,
        "Per channel: 9 codes of 2 bits + 32 bits of ruler + 16 bits for [CLS] = 66 bits over 10 values.",
        tol=0.05,
        mistakes=(
            (5.0, "that leaves out the 16 bits of the fp16 [CLS]"),
            (6.8, "that also gives [CLS] a 2-bit code; it is kept in fp16, out of the ruler"),
            (2.0, "that counts the codes only; the ruler and the fp16 token are stored too"),
            (
                4.3,
                "that spreads each ruler's 32 bits over 32 tokens, as section 4's rulers do; here each channel's "
                "ruler covers this sentence only",
            ),
        ),
    ),
)

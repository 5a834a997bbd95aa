"""Lesson 04 · Groups and formats: the exercise tasks and the recall questions.

Sources: ``notebooks/04_groups_and_formats.py`` (the lesson) and
``exercises/solutions/04_groups_and_formats.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import numpy as np
import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import LESSON, Numeric, Question, choice
from qlesson.lessons._shared import codes, qmax, weights
from qlesson.lessons.l02_one_ruler_or_many import _per_channel_scale, _quantize_per_channel
from qlesson.quant import formats

_G = torch.Generator().manual_seed(1234 + 4)


def _w(*shape: int, spread: bool = True) -> torch.Tensor:
    return weights(_G, *shape, spread=spread)


def _quantize_per_group(
    w: torch.Tensor, bits: int, g: int, divisor: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = wg.abs().amax(-1) / (divisor or qmax(bits))
    q = torch.clamp(torch.round(codes(wg, s[..., None])), -qmax(bits), qmax(bits))
    return q.reshape(n, k), s


def _full_range_per_group(w: torch.Tensor, bits: int, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The full signed range: absmax / 2**(bits-1), codes clamped to [-2**(bits-1), 2**(bits-1) - 1]."""
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = wg.abs().amax(-1) / 2 ** (bits - 1)
    q = torch.clamp(torch.round(codes(wg, s[..., None])), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return q.reshape(n, k), s


def _naive_per_group(w: torch.Tensor, bits: int, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = wg.abs().amax(-1) / qmax(bits)
    return torch.clamp(torch.round(wg / s[..., None]), -qmax(bits), qmax(bits)).reshape(n, k), s


def _signed_max_per_group(w: torch.Tensor, bits: int, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The scale from each group's largest value (amax without abs)."""
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = wg.amax(-1) / qmax(bits)
    q = torch.clamp(torch.round(codes(wg, s[..., None])), -qmax(bits), qmax(bits))
    return q.reshape(n, k), s


def _half_away_per_group(w: torch.Tensor, bits: int, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = wg.abs().amax(-1) / qmax(bits)
    c = codes(wg, s[..., None])
    q = torch.clamp(torch.sign(c) * torch.floor(c.abs() + 0.5), -qmax(bits), qmax(bits))
    return q.reshape(n, k), s


def _half_up_per_group(w: torch.Tensor, bits: int, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = wg.abs().amax(-1) / qmax(bits)
    q = torch.clamp(torch.floor(codes(wg, s[..., None]) + 0.5), -qmax(bits), qmax(bits))
    return q.reshape(n, k), s


def _truncated_per_group(w: torch.Tensor, bits: int, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = wg.abs().amax(-1) / qmax(bits)
    q = torch.clamp(torch.trunc(codes(wg, s[..., None])), -qmax(bits), qmax(bits))
    return q.reshape(n, k), s


def _per_group_with(
    w: torch.Tensor, bits: int, g: int, *, divisor: float, top: int, rule=torch.round
) -> tuple[torch.Tensor, torch.Tensor]:
    """A learner's variant: the absmax divided by ``divisor``, codes from ``rule`` clamped to [-top, top]."""
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = wg.abs().amax(-1) / divisor
    return torch.clamp(rule(codes(wg, s[..., None])), -top, top).reshape(n, k), s


def _unsigned_qmax_per_group(w: torch.Tensor, bits: int, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The unsigned count of steps, 2**bits - 1, used as a signed qmax: codes up to +-(2**bits - 1)."""
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    m = 2**bits - 1
    s = wg.abs().amax(-1) / m
    return torch.clamp(torch.round(codes(wg, s[..., None])), -m, m).reshape(n, k), s


def _fp16_scale_per_group(w: torch.Tensor, bits: int, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The scales rounded to fp16, as a runtime stores them, and the codes computed with them."""
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = (wg.abs().amax(-1) / qmax(bits)).half().float()
    q = torch.clamp(torch.round(codes(wg, s[..., None])), -qmax(bits), qmax(bits))
    return q.reshape(n, k), s


def _strided_per_group(w: torch.Tensor, bits: int, g: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Groups of g weights taken every K / g along the row (reshape(n, g, K // g)), not contiguous runs."""
    n, k = w.shape
    wg = w.reshape(n, g, k // g)
    s = wg.abs().amax(1) / qmax(bits)
    q = torch.clamp(torch.round(codes(wg, s[:, None, :])), -qmax(bits), qmax(bits))
    return q.reshape(n, k), s


def _block_bytes(block: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(block).to(torch.uint8).reshape(18)


def _q4_0_parts(block: torch.Tensor, *, d_fp32: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(d, low nibbles, high nibbles) of one 18-byte Q4_0 block."""
    b = _block_bytes(block)
    d = b[:4].view(torch.float32) if d_fp32 else b[:2].view(torch.float16).float()
    qs = b[2:].to(torch.int32)
    return d, qs & 15, qs >> 4


def _dequantize_q4_0_block(block: torch.Tensor) -> torch.Tensor:
    """32 weights: element j in byte j's low nibble, element j + 16 in its high nibble, each stored as code + 8."""
    d, low, high = _q4_0_parts(block)
    return d * (torch.cat([low, high]) - 8).float()


def _q4_0_mistake(
    block: torch.Tensor,
    *,
    order: str = "halves",
    offset: bool = True,
    d_fp32: bool = False,
    abs_d: bool = False,
    signed_nibbles: bool = False,
    offset_by: int = 8,
    big_endian: bool = False,
    uint8_offset: bool = False,
) -> torch.Tensor:
    d, low, high = _q4_0_parts(block, d_fp32=d_fp32)
    if uint8_offset:  # the nibbles taken and offset in the bytes' own dtype: 0 - 8 wraps to 248
        qs = _block_bytes(block)[2:]
        return d * (torch.cat([qs & 15, qs >> 4]) - 8).float()
    if big_endian:
        d = _block_bytes(block)[:2].flip(0).contiguous().view(torch.float16).float()
    if order == "halves":
        q = torch.cat([low, high])
    elif order == "swapped":
        q = torch.cat([high, low])
    else:  # neighbours: elements 2j and 2j + 1 share byte j
        q = torch.stack([low, high], dim=1).reshape(-1)
    if signed_nibbles:
        q = torch.where(q >= 8, q - 16, q)
    elif offset:
        q = q - offset_by
    return (d.abs() if abs_d else d) * q.float()


def _q4_0_int8_bytes(block: torch.Tensor) -> torch.Tensor:
    """The bytes read as int8: the arithmetic shift drags the sign bit into the high nibble."""
    b = _block_bytes(block)
    qs = b[2:].view(torch.int8).to(torch.int32)
    return b[:2].view(torch.float16).float() * (torch.cat([qs & 15, qs >> 4]) - 8).float()


def _q4_0_unshifted_high(block: torch.Tensor) -> torch.Tensor:
    """The high nibble masked with 0xF0 but not shifted down: 16 times its value."""
    b = _block_bytes(block)
    qs = b[2:].to(torch.int32)
    return b[:2].view(torch.float16).float() * (torch.cat([qs & 15, qs & 0xF0]) - 8).float()


def _q4_0_in_fp16(block: torch.Tensor) -> torch.Tensor:
    """The right reading, but d kept as fp16: the product is computed and returned in fp16."""
    b = _block_bytes(block)
    qs = b[2:].to(torch.int32)
    return b[:2].view(torch.float16) * (torch.cat([qs & 15, qs >> 4]) - 8)


def _q4_0_block(values: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(formats.quantize(np.asarray(values, dtype=np.float32).reshape(1, 32), "Q4_0")[0].copy())


_G2 = np.random.default_rng(4040)
_NEG_MAX = _G2.normal(0, 0.02, 32).astype(np.float32)
_NEG_MAX[5] = -0.09  # the largest magnitude is negative: d > 0
_POS_MAX = _G2.normal(0, 0.5, 32).astype(np.float32)
_POS_MAX[20] = 2.75  # the largest magnitude is positive: d < 0
_EVERY_CODE = np.concatenate([np.arange(-8, 8), np.arange(7, -9, -1)]).astype(np.float32) * -0.25  # codes -8..7 twice


# ---- the central result on a new case: spend a bit budget ---------------------------------------


def _mse(w: torch.Tensor, bits: int, g: int) -> float:
    q, s = _quantize_per_group(w, bits, g)
    n, k = w.shape
    return float(((q.reshape(n, k // g, g) * s[..., None]).reshape(n, k) - w).double().square().mean())


def _pick(w: torch.Tensor, budget: float, settings: list, cost) -> tuple[int, int]:
    fits = [(b, g) for b, g in settings if cost(b, g) <= budget + 1e-12]
    return min(fits, key=lambda s: _mse(w, *s))


def _by_worst_error(w: torch.Tensor, budget: float, settings: list) -> tuple[int, int]:
    def worst(bits: int, g: int) -> float:
        q, s = _quantize_per_group(w, bits, g)
        n, k = w.shape
        return float(((q.reshape(n, k // g, g) * s[..., None]).reshape(n, k) - w).abs().max())

    return min([(b, g) for b, g in settings if b + 16 / g <= budget + 1e-12], key=lambda s: worst(*s))


def _by_mae(w: torch.Tensor, budget: float, settings: list) -> tuple[int, int]:
    def mae(bits: int, g: int) -> float:
        q, s = _quantize_per_group(w, bits, g)
        n, k = w.shape
        return float(((q.reshape(n, k // g, g) * s[..., None]).reshape(n, k) - w).abs().mean())

    return min([(b, g) for b, g in settings if b + 16 / g <= budget + 1e-12], key=lambda s: mae(*s))


def _by_codes_error(w: torch.Tensor, budget: float, settings: list) -> tuple[int, int]:
    """The error measured between the integer codes and w, without multiplying the codes by their scales."""

    def codes_mse(bits: int, g: int) -> float:
        q, _ = _quantize_per_group(w, bits, g)
        return float((q - w).double().square().mean())

    return min([(b, g) for b, g in settings if b + 16 / g <= budget + 1e-12], key=lambda s: codes_mse(*s))


def _best_setting(w: torch.Tensor, budget: float, settings: list) -> tuple[int, int]:
    """The (bits, group_size) that fits ``budget`` bits per weight with fp16 scales and has the smallest MSE."""
    return _pick(w, budget, settings, lambda b, g: b + 16 / g)


def _strictly_under(w: torch.Tensor, budget: float, settings: list) -> tuple[int, int]:
    fits = [(b, g) for b, g in settings if b + 16 / g < budget]
    return min(fits, key=lambda s: _mse(w, *s))


def _most_bits(w: torch.Tensor, budget: float, settings: list) -> tuple[int, int]:
    fits = [(b, g) for b, g in settings if b + 16 / g <= budget]
    return max(fits, key=lambda s: (s[0], -s[1]))


def _smallest_group(w: torch.Tensor, budget: float, settings: list) -> tuple[int, int]:
    fits = [(b, g) for b, g in settings if b + 16 / g <= budget]
    return min(fits, key=lambda s: (s[1], -s[0]))


def _outlier_rows(n: int, k: int, mag: float, seed: int) -> torch.Tensor:
    """Gaussian weights with one outlier of magnitude ``mag`` at a random place in every row."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=gen)
    cols = torch.randint(k, (n,), generator=gen)
    signs = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0)
    w[torch.arange(n), cols] = mag * signs
    return w


_PLAIN = torch.randn(16, 256, generator=torch.Generator().manual_seed(4041))
_SPIKED = _outlier_rows(16, 256, 40.0, 4042)
_PLAIN_384 = torch.randn(8, 384, generator=torch.Generator().manual_seed(4043))
_SPIKED_384 = _outlier_rows(8, 384, 50.0, 4044)
_MENU = [(3, 16), (4, 256), (4, 128), (4, 32)]


_TIES = torch.tensor([[7.0, 2.5, -0.5, 1.5, 0.7, -3.5, 1.0, 0.5]])  # group 1: scale 1, exact halves
_ZERO_GROUP = _w(3, 6)
_ZERO_GROUP[1, 2:4] = 0.0

_Q4_0_HINT = (
    "the first two bytes are the fp16 scale (little-endian); each later byte holds two codes, from the two "
    "halves of the block, each stored with an offset that makes it unsigned; return float32 or float64, "
    "not fp16"
)
_Q4_0_MISTAKES = [
    Mistake(
        "your values match d * codes computed in fp16: each is rounded to fp16 and misses by up to 1 part in "
        "2048, though it prints the same; convert d with .float() before multiplying",
        _q4_0_in_fp16,
    ),
    Mistake(
        "read d big-endian (byte 1 first); llama.cpp stores it little-endian, as .view(torch.float16) reads it",
        lambda b: _q4_0_mistake(b, big_endian=True),
    ),
    Mistake(
        "subtracted 7: a nibble holds code + 8, so 0..15 stands for -8..7",
        lambda b: _q4_0_mistake(b, offset_by=7),
    ),
    Mistake(
        "swapped the nibbles: element j is in the low nibble of byte j, element j + 16 in the high one",
        lambda b: _q4_0_mistake(b, order="swapped"),
    ),
    Mistake(
        "paired neighbours (2j, 2j + 1) in byte j; Q4_0 pairs element j with element j + 16",
        lambda b: _q4_0_mistake(b, order="neighbours"),
    ),
    Mistake("forgot the offset: a nibble holds code + 8", lambda b: _q4_0_mistake(b, offset=False)),
    Mistake(
        "subtracted 8 in uint8, where 0 - 8 wraps around to 248; convert the bytes to int before subtracting",
        lambda b: _q4_0_mistake(b, uint8_offset=True),
    ),
    Mistake(
        "read the bytes as int8: the shift drags the sign bit into the high nibble; read them as uint8 or int32",
        _q4_0_int8_bytes,
    ),
    Mistake(
        "masked the high nibble with 0xF0 but did not shift it down: it is (byte >> 4), 0 to 15",
        _q4_0_unshifted_high,
    ),
    Mistake(
        "read a nibble as a signed 4-bit number; it holds code + 8, from 0 to 15",
        lambda b: _q4_0_mistake(b, signed_nibbles=True),
    ),
    Mistake(
        "read d as fp32 from the first four bytes; it is fp16, two bytes",
        lambda b: _q4_0_mistake(b, d_fp32=True),
    ),
    Mistake(
        "dropped d's sign: d is negative when the largest magnitude is positive",
        lambda b: _q4_0_mistake(b, abs_d=True),
    ),
]


TASKS: list[Task] = [
    Task(
        "04.quantize_per_group",
        "per-group quantization along in_features",
        _quantize_per_group,
        [
            Case((_w(8, 16), 4, 8), "int4, [8, 16], groups of 8"),
            Case((_w(12, 12), 3, 4), "int3, [12, 12], groups of 4"),
            Case((_w(2, 8), 8, 8), "int8, group = whole row"),
            Case((_ZERO_GROUP, 4, 2), "int4, [3, 6], groups of 2, one all-zero group (codes 0)"),
            Case((_TIES, 4, 4), "int4, scale 1: 2.5, -0.5 and 1.5 are ties, rounded half to even"),
        ],
        "split each row into runs of g along in_features, one scale per run (scales [N, K // g]); restricted range, "
        "round half to even; an all-zero group has scale 0 and codes 0",
        [
            Mistake(
                "returned scales of shape [N, K // g, 1] (amax with keepdim=True); return them as [N, K // g]",
                lambda w, b, g: (lambda q, s: (q, s[..., None]))(*_quantize_per_group(w, b, g)),
            ),
            Mistake(
                "returned the scales transposed, [K // g, N], as GPTQ checkpoints store them; this task asks for "
                "[N, K // g], one row of scales per output row",
                lambda w, b, g: (lambda q, s: (q, s.T))(*_quantize_per_group(w, b, g)),
            ),
            Mistake(
                "used 2**bits - 1 as the largest code: that counts the steps of an unsigned ruler; a symmetric "
                "signed ruler reaches only 2**(bits-1) - 1 on each side",
                _unsigned_qmax_per_group,
            ),
            Mistake(
                "took every (K // g)-th weight into a group (reshape(n, g, K // g)); a group is g neighbours, a "
                "contiguous run along the row",
                _strided_per_group,
            ),
            Mistake(
                "formed groups along the wrong axis (down the columns)",
                lambda w, b, g: tuple(t.T for t in _quantize_per_group(w.T.contiguous(), b, g)),
            ),
            Mistake(
                "used one scale per row (per-channel) where per-group was asked",
                lambda w, b, g: (
                    _quantize_per_channel(w, b)[0],
                    _per_channel_scale(w, b)[:, None].expand(-1, w.shape[1] // g),
                ),
            ),
            Mistake(
                "divided the absmax by 2**(bits-1), which is not a code of the restricted ruler: the group's absmax "
                "should land exactly on the ruler's largest code",
                lambda w, b, g: _quantize_per_group(w, b, g, divisor=2 ** (b - 1)),
            ),
            Mistake(
                "used 2**(bits-1) for both the scale and the clamp: a group's absmax lands on code 2**(bits-1) "
                "(+8 at int4), one past the restricted ruler's largest code",
                lambda w, b, g: _per_group_with(w, b, g, divisor=2 ** (b - 1), top=2 ** (b - 1)),
            ),
            Mistake(
                "used the group's absmax itself as the scale, so every code is -1, 0 or 1: the absmax should land "
                "on the ruler's largest code, not on 1",
                lambda w, b, g: _per_group_with(w, b, g, divisor=1.0, top=qmax(b)),
            ),
            Mistake(
                "rounded down (floor); round to the nearest code, half to even",
                lambda w, b, g: _per_group_with(w, b, g, divisor=qmax(b), top=qmax(b), rule=torch.floor),
            ),
            Mistake(
                "did not round: codes are integers; round to the nearest code, half to even",
                lambda w, b, g: _per_group_with(w, b, g, divisor=qmax(b), top=qmax(b), rule=lambda c: c),
            ),
            Mistake(
                "used the full signed range, with one more code below 0 than above it (as Q4_0 does); this task "
                "asks for the restricted ruler, as many codes above 0 as below it",
                _full_range_per_group,
            ),
            Mistake(
                "divided by a zero scale: an all-zero group gives NaN codes (0 / 0); give it codes 0",
                lambda w, b, g: _naive_per_group(w, b, g),
            ),
            Mistake(
                "took each group's largest value, not its largest magnitude: use abs() before amax, or a group "
                "whose largest weight is negative gets a ruler too short (or negative)",
                _signed_max_per_group,
            ),
            *(
                Mistake(
                    "kept the scale away from 0 with a small epsilon; an all-zero group's scale is exactly 0 "
                    "(and its codes 0): leave the scale alone and guard only the division",
                    lambda w, b, g, eps=eps: (lambda q, s: (q, s.clamp_min(eps)))(*_quantize_per_group(w, b, g)),
                )
                for eps in (1e-8, torch.finfo(torch.float32).eps)
            ),
            Mistake(
                "rounded the scales to fp16, as a runtime stores them (section 2); this task asks for the exact "
                "float32 scales, and the check compares them exactly",
                _fp16_scale_per_group,
            ),
            Mistake("used int4 whatever the bits (4 hard-coded)", lambda w, b, g: _quantize_per_group(w, 4, g)),
            Mistake(
                "returned the dequantized weights (codes times scale); return the integer codes themselves",
                lambda w, b, g: (lambda q, s: ((q.reshape(*s.shape, g) * s[..., None]).reshape(w.shape), s))(
                    *_quantize_per_group(w, b, g)
                ),
            ),
            Mistake("rounded halves away from zero; torch.round rounds half to even", _half_away_per_group),
            Mistake("rounded halves up (floor(x + 0.5)); torch.round rounds half to even", _half_up_per_group),
            Mistake(
                "truncated toward zero (int() or torch.trunc); round to the nearest code, half to even",
                _truncated_per_group,
            ),
        ],
        atol=0.0,  # an all-zero group's scale is exactly 0, not a small number
        minutes=5,
    ),
    Task(
        "04.q5_0_bits_per_weight",
        "the bits per weight of a block read from its C struct: Q5_0",
        lambda: (2 + 4 + 16) * 8 / 32,
        [Case((), "one Q5_0 block of 32 weights")],
        "add up the bytes of every field (a uint8_t is one byte, a ggml_half two), turn them into bits, and "
        "divide by the QK5_0 weights the block holds",
        [
            Mistake("left out the fp16 scale", lambda: 5.0),
            Mistake("that is bytes per weight; a byte is 8 bits", lambda: 0.6875),
            Mistake("counted the fp16 scale as 2 bits; it is 2 bytes, 16 bits", lambda: 5.0625),
            Mistake("left out the fifth bits (qh): that is Q4_0", lambda: 4.5),
            Mistake("counted qh[4] as 4 bits; it is 4 bytes, 32 bits: one fifth bit per weight", lambda: 4.625),
            Mistake("counted qs as 32 bytes; QK5_0 / 2 = 16 bytes, two 4-bit codes per byte", lambda: 9.5),
            Mistake("that is bits per block; divide by the QK5_0 = 32 weights it holds", lambda: 176.0),
            Mistake("gave each fifth bit a byte of its own; 32 bits pack into 4 bytes", lambda: 12.5),
            Mistake("24 bytes: a ggml_half is 2 bytes, and the struct has no padding", lambda: 6.0),
            Mistake("counted the scale for a group of 128, but a Q5_0 block holds 32", lambda: 5.125),
            Mistake("that is bytes per block; divide its bits by the 32 weights", lambda: 22.0),
        ],
        is_value=True,
    ),
    Task(
        "04.dequantize_q4_0_block",
        "read one Q4_0 block",
        _dequantize_q4_0_block,
        [
            Case((_q4_0_block(_NEG_MAX),), "a block whose largest magnitude is negative"),
            Case((_q4_0_block(_POS_MAX),), "a block whose largest magnitude is positive"),
            Case((_q4_0_block(_EVERY_CODE),), "every code from -8 to 7, twice", hidden=True),
            Case((_q4_0_block(np.zeros(32)),), "an all-zero block", hidden=True),
            Case((_q4_0_block(_G2.normal(0, 3.0, 32)),), "a random block", hidden=True),
        ],
        _Q4_0_HINT,
        _Q4_0_MISTAKES,
        minutes=8,
    ),
    Task(
        "04.budget_prediction",
        "predict the winner on plain and on spiked weights",
        lambda: (_best_setting(_PLAIN, 4.2, _MENU), _best_setting(_SPIKED, 4.2, _MENU)),
        [Case((), "(plain winner, spiked winner) at 4.2 bits per weight, settings " + str(_MENU))],
        "first price each setting and drop those over 4.2 bits per weight; then ask what one outlier per row does "
        "to a scale shared by 256 or 128 weights, and what it does to one shared by 16",
        [
            Mistake(
                "the outlier did not change your pick: one weight 40x the others sets its group's scale, so in a "
                "large group almost every other weight rounds to 0; weigh what each menu item does with it",
                lambda: ((4, 128), (4, 128)),
            ),
            Mistake(
                "small groups do not always win: on plain Gaussian weights int3's steps, 7/3 times coarser, cost "
                "more than groups of 16 buy back",
                lambda: ((3, 16), (3, 16)),
            ),
            Mistake(
                "look again at your plain-weight pick and your spiked-weight pick: which weight has the outlier, "
                "and what does it do to a scale shared by 128 weights?",
                lambda: ((3, 16), (4, 128)),
            ),
            *(
                Mistake("(4, 32) costs 4 + 16/32 = 4.5 bits per weight: over the budget", lambda pair=pair: pair)
                for pair in [(a, b) for a in _MENU for b in _MENU if (4, 32) in (a, b)]
            ),
            Mistake(
                "(4, 256) fits, but so does (4, 128) at 4.125 bits: a smaller group that still fits is a finer ruler",
                lambda: ((4, 256), (3, 16)),
            ),
            Mistake(
                "on the spiked weights the largest group lets each outlier coarsen the most weights, 255 of them; "
                "and on the plain ones (4, 128) fits too, a finer ruler",
                lambda: ((4, 256), (4, 256)),
            ),
            *(
                Mistake(
                    "on the spiked weights the largest group lets each outlier coarsen the most weights, 255 of "
                    "them: weigh what a scale shared by fewer weights does",
                    lambda pair=pair: pair,
                )
                for pair in (((4, 128), (4, 256)), ((3, 16), (4, 256)))
            ),
        ],
        is_value=True,
    ),
    Task(
        "04.best_setting",
        "spend a bits-per-weight budget",
        _best_setting,
        [
            Case((_PLAIN, 4.2, _MENU), "[16, 256] Gaussian weights, budget 4.2, settings " + str(_MENU)),
            Case((_SPIKED, 4.2, _MENU), "the same shape with one outlier (40x) in every row, budget 4.2"),
            Case((_PLAIN_384, 4.125, [(3, 64), (4, 128), (4, 64), (5, 384)]), "budget exactly met", hidden=True),
            Case((_SPIKED_384, 4.0, [(3, 16), (3, 32), (4, 384), (3, 384)]), "outliers, budget 4.0", hidden=True),
            Case((_PLAIN, 4.1, [(4, 16), (4, 64), (4, 256), (3, 16)]), "Gaussian, budget 4.1", hidden=True),
            Case((_PLAIN_384, 4.0, [(3, 32), (3, 16), (4, 384)]), "per-channel is 16 / K over the budget", hidden=True),
            Case((_PLAIN_384, 4.14, [(3, 32), (4, 128), (3, 16)]), "groups of 128 fit by 0.015 bits", hidden=True),
            Case(
                (_outlier_rows(8, 384, 20.0, 5000), 4.5, [(4, 16), (4, 64), (3, 16), (4, 128)]),
                "one outlier (20x) per row, budget 4.5",
                hidden=True,
            ),
        ],
        "count every bit a setting stores, keep the settings within the budget, then measure each one's error "
        "on this weight: which setting wins depends on the weight (if no setting fits under your pricing, check "
        "how you count the scale)",
        [
            Mistake(
                "returned a setting over the budget: keep only the settings whose bits per weight, code bits plus "
                "16 / g for the fp16 scale, stay within it",
                lambda w, b, s: min(s, key=lambda x: _mse(w, *x)),
            ),
            Mistake(
                "left out the scales: a setting costs more than its code bits",
                lambda w, b, s: _pick(w, b, s, lambda bits, g: bits),
            ),
            Mistake(
                "counted each scale as 32 bits; the runtime stores fp16 scales, 16 bits",
                lambda w, b, s: _pick(w, b, s, lambda bits, g: bits + 32 / g),
            ),
            Mistake(
                "counted the fp16 scale as 2 bits per group; it is 16 bits",
                lambda w, b, s: _pick(w, b, s, lambda bits, g: bits + 2 / g),
            ),
            Mistake(
                "priced per-channel's scale as free; one fp16 scale per row still costs 16 / K bits per weight",
                lambda w, b, s: _pick(w, b, s, lambda bits, g: bits if g == w.shape[1] else bits + 16 / g),
            ),
            Mistake(
                "priced a 4-bit zero point beside each scale; this runtime stores only the fp16 scale",
                lambda w, b, s: _pick(w, b, s, lambda bits, g: bits + 20 / g),
            ),
            Mistake("treated a setting that exactly meets the budget as over it", _strictly_under),
            Mistake(
                "compared the integer codes with w; multiply each code by its group's scale before measuring the error",
                _by_codes_error,
            ),
            Mistake("ranked the settings by their worst error; rank them by mean squared error", _by_worst_error),
            Mistake("ranked the settings by mean absolute error; rank them by mean squared error", _by_mae),
            Mistake(
                "took the most code bits that fit without measuring: an outlier can make smaller groups win", _most_bits
            ),
            Mistake(
                "took the smallest group that fits without measuring: on plain weights more bits can win",
                _smallest_group,
            ),
        ],
        shows_expected=False,  # its first case's answer is the budget prediction's
        minutes=5,
    ),
]

RECALL: tuple[Question, ...] = (
    choice(
        "One weight in a row of 4096 is 50x the others. At int4 with groups of 32, which weights does it coarsen?",
        (
            "Only the 32 weights of the outlier's group",
            True,
            "Each group's scale is set by its own 32 weights; the row's other 127 groups never see the outlier.",
        ),
        (
            "The whole row, as with per-channel",
            False,
            "Tempting because lesson 03 blamed whole channels; but per-group gives this row 128 scales, and only "
            "one of them is set by the outlier.",
        ),
        (
            "None: groups of 32 remove the outlier's damage",
            False,
            "Tempting because the error drops so much; but the outlier still sets its own group's scale, and that "
            "group's other 31 weights mostly round to 0.",
        ),
        source=LESSON,
    ),
    Numeric(
        "Bits per weight of int4 with groups of 128 and fp16 scales?",
        4.125,
        "4 bits of code plus 16 bits of fp16 scale shared by 128 weights: 4 + 16/128.",
        tol=0.006,
        mistakes=(
            (4.0, "that counts only the code bits; every group stores its scale beside them"),
            (4.5, "that is the cost for groups of 32 (Q4_0); here four times as many weights share each scale"),
            (4.015625, "that spreads the scale's 2 bytes as if they were 2 bits; a byte is 8 bits"),
        ),
    ),
    choice(
        "A new layer's rows are near-Gaussian: a row's largest |w| is about 3.3 times its rms. At about 4 bits "
        "per weight, with restricted rulers, which has the higher SQNR: int3 with groups of 16, or int4 "
        "per-channel?",
        (
            "int4 per-channel, by a few dB",
            True,
            "Without a few weights far above the rest, one ruler per row is stretched little, and the code bit makes "
            "every step 7/3 times finer: on MiniLM's 31 such layers it won by 2 to 4 dB.",
        ),
        (
            "int3 g16: a ruler per 16 weights fits these rows more closely",
            False,
            "Tempting because smaller groups helped in section 1; but int3's steps are 7/3 times coarser, and on "
            "rows without standout weights groups of 16 buy back only part of that.",
        ),
        (
            "A tie, as on the six FFN outputs",
            False,
            "Tempting because they tied on the six FFN outputs; but there 22 to 48% of rows hold a weight over 5 "
            "times their rms, which stretches the per-channel ruler. Without such weights the code bit wins.",
        ),
        source=LESSON,
    ),
)

EXERCISE_RECALL: tuple[Question, ...] = (
    choice(
        "GPTQ, int4, group size 128: a Linear weight [4096, 11008] ([out, in]) has scales [86, 4096]. Which "
        "weights share one?",
        (
            "128 consecutive inputs of one output row",
            True,
            "GPTQ and AWQ store the scales as [K / g, N]: 11008 / 128 = 86 groups along in_features for each of "
            "the 4096 output rows, the same groups as lesson 04's [N, K / g].",
        ),
        (
            "128 consecutive output rows, one scale per input",
            False,
            "Tempting because 'group' can be read as a group of rows; but runs of 128 rows "
            "would give 4096 / 128 = 32 groups, each with one scale per input: [32, 11008], not [86, 4096].",
        ),
        (
            "86 consecutive inputs of one row",
            False,
            "Tempting because 86 is the number in the shape; but 86 is how many groups a row has. A row of 11008 "
            "in 86 groups puts 128 weights behind each scale.",
        ),
        source=LESSON,
    ),
)

PREDICT = {
    "equal_bits": choice(
        "On MiniLM's six FFN output layers taken together, with lesson 01's restricted rulers ([-3, 3] and "
        "[-7, 7]): int3 with groups of 16 (4.000 bits per weight) or int4 per-channel (4.010)? Which has the "
        "higher SQNR?",
        (
            "int4 per-channel, by several dB: a code bit makes every step more than twice as fine",
            False,
            "On these six layers, no: groups of 16 give each row 96 rulers, each fitted to 16 weights, and buy back "
            "about what the bit gives. On most other MiniLM layers it is the answer: this section's last table "
            "shows which.",
        ),
        (
            "int3 g16, by several dB: 16 weights per ruler fit far more closely",
            False,
            "Tempting because each halving of the group helps (section 1); but from int4 to int3 every step "
            "grows 7/3 times, and the groups only about win that back.",
        ),
        (
            "The two land within a few tenths of a dB: the groups buy back about what the code bit gives",
            True,
            "At equal storage neither the code bit nor the bit of scales wins by much here.",
        ),
    ),
    "control": choice(
        "Int3 g16 against int4 per-channel, at about 4 bits per weight each, on four weights: L0.output, "
        "a Gaussian in L0.output's shape, that Gaussian with two large weights per row, and "
        "L0.output with its largest weights clipped. Across the four, which SQNR moves by several dB?",
        (
            "int3 g16's: the groups are what adapts to each weight",
            False,
            "Tempting because groups are the scheme built to follow the weights; but a group of 16 already fits its "
            "few weights closely, so int3 g16 lands near 14 dB on all four.",
        ),
        (
            "int4 per-channel's",
            True,
            "One ruler per row is set by the row's largest weight: where a few weights stand far above the rest "
            "they stretch it and pull int4 per-channel down; without them it rises by 3 to 4 dB.",
        ),
        (
            "Both, by about the same: a harder weight is harder for every scheme",
            False,
            "Tempting because some weights are simply harder to quantize; but what makes these four differ is a "
            "few large weights per row, and those coarsen a whole row's ruler, not a group of 16's.",
        ),
    ),
    "axis": choice(
        "MiniLM's L0.intermediate is [1536, 384], at int4. Scheme A lets 128 consecutive whole output rows "
        "(128 × 384 weights) share one scale; scheme B lets 128 consecutive inputs share one "
        "(GPTQ/AWQ checkpoints). "
        "Against per-channel (one scale per row), which is right?",
        (
            "Both beat per-channel: grouping is the finer scheme",
            False,
            "Tempting because 'group quantization' is sold as finer than per-channel; but A gives the layer 12 "
            "scales where per-channel has 1536: coarser.",
        ),
        (
            "A loses to per-channel, B beats it",
            True,
            "A: 12 scales, each over 128 x 384 weights. B: 4608 scales, each over 128 weights. What counts is how "
            "many weights share a ruler, not the word 'group'.",
        ),
        (
            "Both lose: any sharing across 128 of something is coarser than one scale per row",
            False,
            "Tempting because both schemes share a scale; but a per-channel scale covers all 384 inputs of its "
            "row, and B's covers only 128 of them.",
        ),
    ),
}

"""Lesson 08 · Scales of scales: the exercise tasks and the recall questions.

Sources: ``notebooks/08_scales_of_scales.py`` (the lesson) and
``exercises/solutions/08_scales_of_scales.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import math

import numpy as np

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import LESSON, Numeric, Question, choice
from qlesson.quant import formats

FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)


def _block(seed: int, scale: float, shift: float = 0.0) -> np.ndarray:
    """17 bytes of one MXFP4 block (gguf's layout) of random weights."""
    rng = np.random.default_rng(800 + seed)
    x = (rng.standard_normal(32) * scale + shift).astype(np.float32)
    return formats.quantize(x, "MXFP4")


def _decode(
    raw: np.ndarray, *, order: str = "halves", signed_int: bool = False, bias: int = 127, sign: bool = True
) -> np.ndarray:
    raw = np.asarray(raw, dtype=np.uint8)
    lo, hi = raw[1:] & 15, raw[1:] >> 4
    codes = {
        "halves": lambda: np.concatenate([lo, hi]),
        "high first": lambda: np.concatenate([hi, lo]),
        "interleaved": lambda: np.stack([lo, hi], axis=1).reshape(-1),
    }[order]()
    if signed_int:  # two's complement int4 times the scale
        vals = np.where(codes >= 8, codes.astype(np.float32) - 16, codes.astype(np.float32))
    else:
        vals = np.where(((codes & 8) > 0) & sign, -1.0, 1.0).astype(np.float32) * FP4[codes & 7]
    return vals.astype(np.float64) * 2.0 ** (int(raw[0]) - bias)  # exact: an FP4 value times a power of two


def _decode_uint8_wrap(raw: np.ndarray) -> np.ndarray:
    """The exponent computed on a numpy uint8: ``raw[0] - 127`` wraps around 256 below e = 127."""
    raw = np.asarray(raw, dtype=np.uint8)
    with np.errstate(over="ignore"):
        wrapped = int(raw[0] - np.uint8(127))  # a uint8 scalar: 120 - 127 gives 249
    return _decode(raw) * 2.0 ** (wrapped - (int(raw[0]) - 127))


def _kquant_bits(code_bits: int, sub_block: int, sub_scale_bits: int, has_min: bool) -> float:
    fields = 2 if has_min else 1  # a scale (and a minimum) per sub-block, an fp16 d (and dmin) per 256
    return code_bits + fields * sub_scale_bits / sub_block + fields * 16 / 256


def _e8m0_floor(amax: float) -> int:
    if amax == 0:
        return 0
    return max(math.floor(math.log2(amax)) - 2 + 127, 0)


def _sub_scales(ideal, bits: int, *, steps=None, fp16: bool = True, rounding=np.round, lowest: int = 1) -> np.ndarray:
    """One super-block's stored scales: an integer 1..m (m = 2**bits - 1) times one fp16 super-scale."""
    s = np.asarray(ideal, dtype=np.float64)
    m = 2**bits - 1 if steps is None else steps(bits)
    d = s.max() / m
    d = float(np.float16(d)) if fp16 else d
    return np.clip(rounding(s / d), lowest, m) * d


def _ideal(seed: int, n: int, quiet: float = 0.0) -> np.ndarray:
    """n block scales of one super-block (positive), the first one ``quiet`` times the loudest when given."""
    rng = np.random.default_rng(880 + seed)
    s = rng.uniform(0.2, 1.0, n) * 10.0 ** rng.uniform(-3, 0)
    if quiet:
        s[0] = quiet * s.max()
    return s


def _fewest_bits(code_bits: int, max_ticks: float, *, step: float = 0.5, levels=None, qmax=None) -> int:
    q = 2 ** (code_bits - 1) - 1 if qmax is None else qmax(code_bits)
    for b in range(1, 33):
        m = 2**b - 1 if levels is None else levels(b)
        if q * step / m <= max_ticks:
            return b
    raise ValueError(f"max_ticks={max_ticks} needs more than 32 bits")


def _fewest_bits_strict(code_bits: int, max_ticks: float) -> int:
    q = 2 ** (code_bits - 1) - 1
    return next(b for b in range(1, 33) if q / (2 * (2**b - 1)) < max_ticks)


_AMAX = [5.0, 6.0, 0.75, 448.0, 1e-3, 2.0**-10, 1e-39, 0.0]  # 1e-39 (a float32 subnormal): below 2**-125, e is 0

TASKS: list[Task] = [
    Task(
        "08.sub_scales",
        "store a super-block's block scales as small integers under one fp16 super-scale",
        lambda ideal, bits: _sub_scales(ideal, bits),
        [
            Case((_ideal(0, 8), 6), "8 blocks, 6-bit sub-scales (Q4_K's width)"),
            Case((_ideal(1, 16), 8), "16 blocks, 8-bit sub-scales"),
            Case((_ideal(2, 8, quiet=0.004), 6), "a very quiet block beside loud ones"),
            Case((_ideal(3, 8), 4), "4-bit sub-scales (Q2_K's width)"),
            Case((_ideal(4, 8, quiet=0.01), 4), "4-bit sub-scales, a quiet block", hidden=True),
            Case((_ideal(5, 16), 5), "16 blocks, 5-bit sub-scales", hidden=True),
            Case((_ideal(6, 8, quiet=0.02), 8), "8-bit sub-scales, a quiet block", hidden=True),
        ],
        "the super-scale is a float16 number set so that the loudest block gets the largest integer the bits hold; "
        "every block then gets the nearest integer number of super-scales, and (this course's convention; llama.cpp "
        "lets a very quiet block round to 0) no block gets less than 1",
        [
            Mistake(
                "let a quiet block's integer round to 0: its weights would all decode to 0; in this course's "
                "convention the smallest integer is 1",
                lambda ideal, bits: _sub_scales(ideal, bits, lowest=0),
            ),
            Mistake(
                "used 2**bits as the largest integer: a bits-bit unsigned integer stops at 2**bits - 1",
                lambda ideal, bits: _sub_scales(ideal, bits, steps=lambda b: 2**b),
            ),
            Mistake(
                "kept the super-scale in float64: it is stored as float16, and the integers fit the stored one",
                lambda ideal, bits: _sub_scales(ideal, bits, fp16=False),
            ),
            Mistake(
                "truncated (floor) instead of rounding to the nearest integer: every scale comes out low",
                lambda ideal, bits: _sub_scales(ideal, bits, rounding=np.floor),
            ),
        ],
        rtol=1e-9,
        atol=0.0,
    ),
    Task(
        "08.fewest_scale_bits",
        "how many bits a block scale needs",
        lambda code_bits, max_ticks: _fewest_bits(code_bits, max_ticks),
        [
            Case((4, 0.1), "int4 codes, the largest code may move 0.1 tick"),
            Case((6, 0.1), "6-bit codes, 0.1 tick"),
            Case((4, 0.5), "int4 codes, half a tick (at most half: equal is fine)"),
            Case((8, 0.1), "int8 codes, 0.1 tick"),
            Case((5, 0.1), "5-bit codes, 0.1 tick", hidden=True),
            Case((6, 0.3), "6-bit codes, 0.3 tick", hidden=True),
            Case((3, 0.05), "3-bit codes, 0.05 tick", hidden=True),
            Case((2, 0.1), "2-bit codes, 0.1 tick", hidden=True),
            Case((4, 0.45), "int4 codes, 0.45 tick", hidden=True),
        ],
        "the sub-scale is rounded to the nearest step; in the loudest block of its super-block a step is the "
        "whole scale divided by the largest integer; the block's largest code sits at the codes' top, qmax ticks out",
        [
            Mistake(
                "counted a whole step of the sub-scale: rounding to the nearest is off by at most half a step",
                lambda c, t: _fewest_bits(c, t, step=1.0),
            ),
            Mistake(
                "bounded the scale's relative error, not the move of the largest code: multiply by qmax, the number "
                "of ticks between 0 and the largest code",
                lambda c, t: _fewest_bits(c, t, qmax=lambda b: 1),
            ),
            Mistake(
                "took 2**bits steps: a bits-bit sub-scale runs from 1 to 2**bits - 1",
                lambda c, t: _fewest_bits(c, t, levels=lambda b: 2**b),
            ),
            Mistake(
                "used 2**code_bits - 1 as the codes' top: symmetric signed codes run to 2**(code_bits - 1) - 1",
                lambda c, t: _fewest_bits(c, t, qmax=lambda b: 2**b - 1),
            ),
            Mistake(
                "took 2**(code_bits - 1) as the codes' top (Q4_0's -8): symmetric codes stop at "
                "2**(code_bits - 1) - 1, 7 for int4",
                lambda c, t: _fewest_bits(c, t, qmax=lambda b: 2 ** (b - 1)),
            ),
            Mistake(
                "asked for a move strictly below max_ticks: the task says at most",
                _fewest_bits_strict,
            ),
        ],
    ),
    Task(
        "08.decode_mxfp4",
        "decode one MXFP4 block by hand",
        lambda raw: _decode(raw),
        [
            Case((_block(0, 0.05),), "weights around 0.05"),
            Case((_block(1, 3.0, 1.0),), "larger weights, shifted"),
            Case((_block(2, 1e-4),), "tiny weights: a small exponent"),
            Case((_block(3, 40.0),), "large weights: exponent above 127"),
        ],
        "byte 0 is e (scale 2**(e - 127)); bytes 1-16 hold codes, low nibbles weights 0-15, high nibbles 16-31; "
        "a code's bit 3 is the sign, bits 0-2 index 0, 0.5, 1, 1.5, 2, 3, 4, 6; "
        "turn e into a Python int (int(raw[0])) before subtracting: on a numpy uint8, raw[0] - 127 wraps around",
        [
            Mistake(
                "computed the exponent on a numpy uint8: raw[0] - 127 wraps around 256 when e < 127 "
                "(120 - 127 gives 249); use int(raw[0]) - 127",
                _decode_uint8_wrap,
            ),
            Mistake(
                "swapped the nibble halves (high nibbles first): gguf puts the low nibbles (weights 0-15) first",
                lambda raw: _decode(raw, order="high first"),
            ),
            Mistake(
                "interleaved the nibbles (byte j as weights 2j and 2j+1): gguf puts low nibbles first, then high",
                lambda raw: _decode(raw, order="interleaved"),
            ),
            Mistake(
                "dropped the sign bit: bit 3 of a code makes the value negative",
                lambda raw: _decode(raw, sign=False),
            ),
            Mistake(
                "read a code as a two's complement int4; FP4 is sign + E2M1 magnitude (0, 0.5, 1, 1.5, 2, 3, 4, 6)",
                lambda raw: _decode(raw, signed_int=True),
            ),
            Mistake("forgot the E8M0 bias: the scale is 2**(e - 127), not 2**e", lambda raw: _decode(raw, bias=0)),
        ],
    ),
    Task(
        "08.kquant_bits",
        "K-quant bits per weight from its fields",
        _kquant_bits,
        [
            Case((4, 32, 6, True), "Q4_K: 4-bit codes, sub-blocks of 32, 6-bit scales and minimums"),
            Case((6, 16, 8, False), "Q6_K: 6-bit codes, sub-blocks of 16, int8 scales"),
            Case((3, 16, 6, False), "Q3_K: 3-bit codes, sub-blocks of 16, 6-bit scales"),
            Case((2, 16, 4, True), "Q2_K: 2-bit codes, sub-blocks of 16, 4-bit scales and minimums"),
        ],
        "add the code bits, each sub-block's scale (and minimum) bits spread over its weights, and the fp16 "
        "super-scale(s) spread over 256 weights",
        [
            Mistake("left out the fp16 super-scale(s)", lambda c, s, b, m: c + (2 if m else 1) * b / s),
            Mistake(
                "counted one fp16 super-scale even with minimums (dmin is a second one)",
                lambda c, s, b, m: c + (2 if m else 1) * b / s + 16 / 256,
            ),
            Mistake("left out the minimums' bits", lambda c, s, b, m: c + b / s + (2 if m else 1) * 16 / 256),
            Mistake(
                "counted the sub-scales as fp16 (16 bits), the cost a second level avoids",
                lambda c, s, b, m: _kquant_bits(c, s, 16, m) - (2 if m else 1) * 16 / 256,
            ),
        ],
    ),
    Task(
        "08.e8m0_floor",
        "the E8M0 exponent byte of an MXFP4 block (floor rule)",
        _e8m0_floor,
        [
            Case((a,), f"amax = {a:g}" + (" (below 2**-125: the byte stops at 0)" if 0 < a < 2.0**-125 else ""))
            for a in _AMAX
        ],
        "the power of two that puts amax between 4 and 8 times the scale (FP4's largest value, 6, is 1.5 * 2**2), "
        "stored as its exponent plus the bias; an all-zero block gets 0 and the byte never goes below 0",
        [
            Mistake(
                "forgot to subtract FP4's largest exponent 2",
                lambda a: max(math.floor(math.log2(a)) + 127, 0) if a else 0,
            ),
            Mistake("forgot the bias 127", lambda a: math.floor(math.log2(a)) - 2 if a else 0),
            Mistake(
                "used ceil, not floor (torchao's ceil rule)",
                lambda a: max(math.ceil(math.log2(a)) - 2 + 127, 0) if a else 0,
            ),
            Mistake(
                "that is rceil (NVIDIA's rule, the power of two at or above amax / 6); the floor rule works from "
                "floor(log2 amax) - 2",
                lambda a: max(math.ceil(math.log2(a / 6)) + 127, 0) if a else 0,
            ),
            Mistake(
                "divided by 6 first: the floor rule uses the grid's largest power of two, 4 (2**2), not its top "
                "value 6",
                lambda a: max(math.floor(math.log2(a / 6)) + 127, 0) if a else 0,
            ),
            Mistake(
                "did not clamp at 0: for amax below 2**-125 the exponent would be negative, and E8M0 stops at 0",
                lambda a: math.floor(math.log2(a)) - 2 + 127 if a else 0,
            ),
        ],
    ),
]

PREDICT = {
    "six_bit_sub_scale": choice(
        "Q4_K stores each block's scale as a 6-bit integer (1 to 63) times an fp16 super-scale, instead of a whole "
        "fp16 number. On L0.output (int4 codes, blocks of 32), how much SQNR does that lose against exact fp32 scales?",
        (
            "under a hundredth of a dB",
            True,
            "The sub-scale is off by at most 1/126 in the loudest block, which moves that block's largest code, 7 "
            "ticks out, by at most 7/126 of a tick (a few hundredths at the median block): lost beside the half tick "
            "that rounding already costs every weight.",
        ),
        (
            "about 1 dB: 6 bits are far coarser than fp16's 11 significant bits",
            False,
            "Tempting when bits feel like precision lost one for one; but what counts is how far the rounded scale "
            "moves the codes, and 7/126 of a tick is small beside half a tick.",
        ),
        (
            "about 0.5 dB, like doubling the group size in lesson 04",
            False,
            "Tempting because group sizes moved the SQNR by tenths of a dB; but here every block keeps its own scale, "
            "only rounded a little.",
        ),
        (
            "nothing: an integer times an fp16 number is exact",
            False,
            "The integer is the nearest whole number of super-scales, off by up to half a step: the loss is small, "
            "not zero.",
        ),
    ),
    "six_bit_codes": choice(
        "Now 6-bit codes (-31..31) on the same layer, in Q6_K's layout: blocks of 16, super-blocks of 16. How much "
        "SQNR do the same 6-bit sub-scales (Q4_K's) lose against fp32 scales here?",
        (
            "under a hundredth of a dB, as with int4 codes",
            False,
            "Tempting: the sub-scale is the same number, as precise as before. But its error is relative, and the "
            "largest code moves by qmax times it: 31 ticks out instead of 7.",
        ),
        (
            "less than with int4 codes: finer codes make up for a coarser scale",
            False,
            "Tempting if more code bits feel like more slack; but finer ticks turn the same scale error into more "
            "ticks.",
        ),
        (
            "about a sixth of a dB",
            True,
            "The largest code sits 31 ticks out instead of 7, so the same relative error moves it 31/7, about 4.4 "
            "times as far (up to 31/126, a quarter tick, in the loudest block); in blocks of 16 that largest weight "
            "is also one weight in 16 rather than in 32. About 0.17 dB: the order of what 4-bit sub-scales cost "
            "int4 codes.",
        ),
        (
            "several dB: the scale is now far too coarse and the codes clip",
            False,
            "Tempting after section 2's clipping column; but clipping needs a move past half a tick, and a quarter "
            "tick is the most the loudest block moves.",
        ),
    ),
}

RECALL: tuple[Question, ...] = (
    Numeric(
        "Bits per weight spent on scales alone with one fp16 scale per 16 weights?",
        1.0,
        "16 bits shared by 16 weights: 1 bit per weight, a quarter of an int4 payload.",
        tol=0.001,
        mistakes=(
            (0.125, "that is 2 bytes per 16 weights; count bits: 16 / 16"),
            (0.5, "that is groups of 32"),
        ),
    ),
    Numeric(
        "A 5-bit sub-scale (1 to 31) times an fp16 super-scale, in the loudest block of its super-block, int4 codes "
        "(-7..7). At most how many ticks can rounding the sub-scale move the block's largest code?",
        7 / 62,
        "The sub-scale is off by at most half a step, 1/62 of the scale; the largest code sits 7 ticks out, so it "
        "moves by up to 7/62, about 0.11 of a tick.",
        tol=0.002,
        mistakes=(
            (7 / 31, "that is a whole step; rounding to the nearest is off by at most half of one"),
            (1 / 62, "that is the scale's relative error; the largest code sits 7 ticks out: multiply by 7"),
            (7 / 64, "a 5-bit sub-scale runs from 1 to 31, not 32: half a step is 1/62"),
        ),
    ),
    choice(
        "6-bit codes: 4-bit sub-scales lose about 1.5 dB, mostly gone when codes are not clamped to -31..31. Why?",
        (
            "The scale's rounding moves the top code most of a tick; rounded down, it lands past 31.5 and clips",
            True,
            "Same rule, further out: 31 / (2 x 15) is about a tick. Below half a tick the move only adds error to the "
            "largest weight; past it, a scale rounded down clips.",
        ),
        (
            "A scale rounded up clips the largest weight",
            False,
            "Tempting, since rounding is what moves the top code; but a larger scale pulls every code inward, toward "
            "0. Only a scale rounded down pushes the largest code past 31.",
        ),
        (
            "The 4-bit sub-scale overflows and wraps around",
            False,
            "Tempting from integer overflow elsewhere; but the sub-scale is clamped to 1..15 by construction, and the "
            "loudest block gets 15 exactly.",
        ),
        source=LESSON,
    ),
    choice(
        "A block's scale is rounded up to a power of two. Why does that cost FP4 codes less than int4 codes?",
        (
            "Halving every value moves it down one binade of the float grid, where the relative step is the same",
            True,
            "Only values pushed to the bottom ticks (0 and 0.5) lose; int4's even ticks lose half their precision.",
        ),
        (
            "FP4 has more values than int4",
            False,
            "FP4 and symmetric int4 (-7..7) both have 15 distinct values (FP4's 16th code is a negative zero).",
        ),
        ("FP4 never saturates", False, "FP4 saturates at 6 x scale; rounding the scale up avoids saturation for both."),
        source=LESSON,
    ),
    Numeric(
        "MXFP4 floor rule (the OCP spec's): a block's largest magnitude is 5.0. What is its scale?",
        1.0,
        "2**(floor(log2 5) - 2) = 2**(2 - 2) = 1: 5.0 / 1 = 5 lies in [4, 8); 5.0 itself is a tie between 4 and 6.",
        tol=0.0001,
        mistakes=(
            (2.0, "that is torchao's ceil rule: 2**(ceil(log2 5) - 2)"),
            (4.0, "subtract FP4's largest exponent, 2: the scale is 2**(2 - 2)"),
            (5.0 / 6.0, "an absmax / 6 scale is NVFP4's (before E4M3 rounding); MXFP4 scales are powers of two"),
        ),
    ),
    choice(
        "Why does NVFP4 store an fp32 tensor scale above its FP8 block scales?",
        (
            "E4M3's normal numbers span only 2**-6 to 448, so the tensor scale moves that window onto the "
            "tensor's range",
            True,
            "The block scales are E4M3 numbers relative to it. On MiniLM's L0.intermediate it buys about a tenth of a "
            "dB; on the same layer divided by 100 every block scale falls below 2**-6 without it, and the weights "
            "round to zero. llama.cpp's own NVFP4 quantizer stores no tensor scale.",
        ),
        ("Because FP4 values need an exponent of their own", False, "E2M1 elements have their exponent bits."),
        ("To store the block's zero point", False, "NVFP4 is symmetric: no zero point."),
        source=LESSON,
    ),
    choice(
        "Lesson 04 revisited: int4 codes with one fp16 scale per group; the group shrinks from 32 to 16 weights. "
        "What happens to the bits per weight?",
        (
            "they grow by 0.5",
            True,
            "The scales cost 16 / g bits per weight: 0.5 at g = 32, 1 at g = 16. That growth is what small-block "
            "formats avoid with cheaper scales.",
        ),
        (
            "they grow by 1",
            False,
            "1 bit per weight is the scales' whole cost at g = 16; at g = 32 they already cost 0.5, so the growth is "
            "0.5.",
        ),
        (
            "they grow by 0.25",
            False,
            "That is the growth with one-byte scales (MXFP4's E8M0: 8/16 - 8/32); fp16 scales are 16 bits.",
        ),
        (
            "they stay the same: the same scale bits are shared by fewer weights",
            False,
            "Tempting if one pictures the same scales; but halving the group doubles the number of scales.",
        ),
        source=LESSON,
    ),
)

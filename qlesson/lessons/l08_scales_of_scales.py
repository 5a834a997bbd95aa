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
    raw: np.ndarray,
    *,
    order: str = "halves",
    signed_int: bool = False,
    bias: int = 127,
    sign: bool = True,
    even: bool = False,
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
        mags = (codes & 7).astype(np.float32) * 0.5 if even else FP4[codes & 7]
        vals = np.where(((codes & 8) > 0) & sign, -1.0, 1.0).astype(np.float32) * mags
    return vals.astype(np.float64) * 2.0 ** (int(raw[0]) - bias)  # exact: an FP4 value times a power of two


def _decode_uint8_wrap(raw: np.ndarray) -> np.ndarray:
    """The exponent computed on a numpy uint8: ``raw[0] - 127`` wraps around 256 below e = 127."""
    raw = np.asarray(raw, dtype=np.uint8)
    with np.errstate(over="ignore"):
        wrapped = int(raw[0] - np.uint8(127))  # a uint8 scalar: 120 - 127 gives 249
    return _decode(raw) * 2.0 ** (wrapped - (int(raw[0]) - 127))


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


def _quiet_bits(
    code_bits: int, r: float, max_ticks: float, *, step: float = 0.5, levels=None, qmax=None, quiet=None
) -> int:
    """Fewest sub-scale bits that keep the top code of a block ``r`` times quieter than its super-block's
    loudest within ``max_ticks`` ticks: that block's scale spans ``m / r`` steps of the super-scale."""
    q = 2 ** (code_bits - 1) - 1 if qmax is None else qmax(code_bits)
    k = r if quiet is None else quiet(r)
    for b in range(1, 41):
        m = 2**b - 1 if levels is None else levels(b)
        if q * step * k / m <= max_ticks:
            return b
    raise ValueError(f"max_ticks={max_ticks} needs more than 40 bits")


def _quiet_bits_strict(code_bits: int, r: float, max_ticks: float) -> int:
    q = 2 ** (code_bits - 1) - 1
    return next(b for b in range(1, 41) if q * r / (2 * (2**b - 1)) < max_ticks)


def _quiet_bits_exact(code_bits: int, r: float, max_ticks: float) -> int:
    """The move under a scale rounded down by half a step, exactly: qmax / (2m / r - 1)."""
    q = 2 ** (code_bits - 1) - 1
    return next(b for b in range(1, 41) if 2 * (2**b - 1) / r > 1 and q / (2 * (2**b - 1) / r - 1) <= max_ticks)


def _sub_scales_mixed(ideal, bits: int) -> np.ndarray:
    """Rounded with the float64 super-scale, multiplied back by the stored float16 one."""
    s = np.asarray(ideal, dtype=np.float64)
    m = 2**bits - 1
    d = s.max() / m
    return np.clip(np.round(s / d), 1, m) * float(np.float16(d))


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
        "every block then gets the nearest integer number of super-scales, and no block gets less than 1",
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
                "rounded with the float64 super-scale but multiplied by the float16 one: a few blocks get a "
                "different integer than the stored super-scale gives them (the values differ in the 4th or 5th "
                "significant digit)",
                _sub_scales_mixed,
            ),
            Mistake(
                "truncated (floor) instead of rounding to the nearest integer: every scale comes out low",
                lambda ideal, bits: _sub_scales(ideal, bits, rounding=np.floor),
            ),
            Mistake(
                "rounded up (ceil) instead of to the nearest integer: every scale comes out high",
                lambda ideal, bits: _sub_scales(ideal, bits, rounding=np.ceil),
            ),
            Mistake(
                "returned the integers: the task asks for the scales as stored, each integer times the super-scale",
                lambda ideal, bits: _sub_scales(ideal, bits) / float(np.float16(np.max(ideal) / (2**bits - 1))),
            ),
            Mistake(
                "returned float16 values: only the super-scale is stored as float16; the integer times it is a "
                "float64 product, which float16 would round again",
                lambda ideal, bits: _sub_scales(ideal, bits).astype(np.float16),
            ),
        ],
        rtol=1e-9,
        atol=0.0,
    ),
    Task(
        "08.quiet_block_bits",
        "how many bits a quiet block's scale needs",
        lambda code_bits, r, max_ticks: _quiet_bits(code_bits, r, max_ticks),
        [
            Case((4, 1, 0.1), "int4 codes, the loudest block itself (r = 1), 0.1 tick"),
            Case((4, 4, 0.1), "int4 codes, a block 4 times quieter, 0.1 tick"),
            Case((6, 2, 0.25), "6-bit codes, a block twice as quiet, a quarter tick"),
            Case((3, 4, 0.375), "3-bit codes, 4 times quieter, 0.375 tick"),
            Case((3, 5, 0.5), "3-bit codes, 5 times quieter, half a tick (at most: equal is fine)"),
            Case((4, 10, 0.5), "int4 codes, 10 times quieter, half a tick"),
            Case((8, 3, 0.1), "int8 codes, 3 times quieter, 0.1 tick", hidden=True),
            Case((4, 100, 0.25), "int4 codes, 100 times quieter, a quarter tick", hidden=True),
            Case((5, 1.5, 0.1), "5-bit codes, 1.5 times quieter, 0.1 tick", hidden=True),
            Case((3, 8, 0.05), "3-bit codes, 8 times quieter, 0.05 tick", hidden=True),
            Case((6, 16, 0.2), "6-bit codes, 16 times quieter, 0.2 tick", hidden=True),
            Case((4, 6, 0.7), "int4 codes, 6 times quieter, 0.7 tick", hidden=True),
        ],
        "all blocks of a super-block share one super-scale, the step of their integers; the loudest block's "
        "scale is the largest integer's worth of steps, a block r times quieter has r times fewer; count the worst "
        "rounding, then what that does to the block's largest code",
        [
            Mistake(
                "that is the answer for the loudest block: a quieter block's scale spans fewer steps of the "
                "super-scale, so the same half step is a larger part of it",
                lambda c, r, t: _quiet_bits(c, 1, t),
            ),
            Mistake(
                "made the quiet block's move smaller than the loudest's: its scale is smaller, but the step (the "
                "super-scale) is the same, so its relative error is larger",
                lambda c, r, t: _quiet_bits(c, r, t, quiet=lambda k: 1 / k),
            ),
            Mistake(
                "counted a whole step of the sub-scale: rounding to the nearest is off by at most half a step",
                lambda c, r, t: _quiet_bits(c, r, t, step=1.0),
            ),
            Mistake(
                "bounded the scale's relative error, not the move of the largest code: that code sits qmax ticks out",
                lambda c, r, t: _quiet_bits(c, r, t, qmax=lambda b: 1),
            ),
            Mistake(
                "took 2**bits steps: a bits-bit sub-scale runs from 1 to 2**bits - 1",
                lambda c, r, t: _quiet_bits(c, r, t, levels=lambda b: 2**b),
            ),
            Mistake(
                "used 2**code_bits - 1 as the codes' top: symmetric signed codes stop at 2**(code_bits - 1) - 1",
                lambda c, r, t: _quiet_bits(c, r, t, qmax=lambda b: 2**b - 1),
            ),
            Mistake(
                "took 2**(code_bits - 1) as the codes' top (Q4_0's -8): symmetric codes stop one short of it",
                lambda c, r, t: _quiet_bits(c, r, t, qmax=lambda b: 2 ** (b - 1)),
            ),
            Mistake("asked for a move strictly below max_ticks: the task says at most", _quiet_bits_strict),
        ],
        also_correct=(_quiet_bits_exact,),  # the exact worst case, qmax / (2m / r - 1), is right too
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
        "check one thing at a time against the task's layout: which weights the low nibbles hold, the sign bit, "
        "the FP4 magnitude a code's low 3 bits pick (section 4 lists FP4's ticks), and the bias of byte 0",
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
            Mistake("used 128 as the bias: E8M0's bias is 127 (section 1)", lambda raw: _decode(raw, bias=128)),
            Mistake(
                "read the 3 magnitude bits as evenly spaced steps of 0.5: FP4's ticks are not even (section 4)",
                lambda raw: _decode(raw, even=True),
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
        "which power of two puts amax between 4 and 8 times the scale (section 4)? then store it as E8M0 stores an "
        "exponent (section 1), and mind what one byte can hold",
        [
            Mistake(
                "forgot to subtract FP4's largest exponent 2",
                lambda a: max(math.floor(math.log2(a)) + 127, 0) if a else 0,
            ),
            Mistake("forgot the bias 127", lambda a: math.floor(math.log2(a)) - 2 if a else 0),
            Mistake(
                "used int(log2(amax)), which truncates toward zero: below amax = 1 the logarithm is negative and "
                "int() rounds it up (int(-0.4) is 0, where floor gives -1); use math.floor",
                lambda a: max(int(math.log2(a)) - 2 + 127, 0) if a else 0,
            ),
            Mistake(
                "rounded log2(amax) to the nearest integer: the floor rule rounds it down",
                lambda a: max(round(math.log2(a)) - 2 + 127, 0) if a else 0,
            ),
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
                "divided by int4's 7: FP4's grid has no 7; the floor rule uses its largest power of two, 4 (2**2)",
                lambda a: max(math.floor(math.log2(a / 7)) + 127, 0) if a else 0,
            ),
            Mistake(
                "returned the scale 2**(e - 127): the task asks for the byte e that E8M0 stores",
                lambda a: 2.0 ** (math.floor(math.log2(a)) - 2) if a else 0,
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
            "In a block about as loud as the loudest, the sub-scale is off by at most 1/126, which moves the block's "
            "largest code, 7 ticks out, by about 7/126 of a tick (a few hundredths at the median block): lost "
            "beside the half tick that rounding already costs every weight.",
        ),
        (
            "about 1 dB: 6 bits are far coarser than fp16's 11 significant bits",
            False,
            "Tempting when bits feel like precision lost one for one; but what counts is how far the rounded scale "
            "moves the codes, and 7/126 of a tick is small beside half a tick.",
        ),
        (
            "about half a dB, like a change of group size in lesson 04",
            False,
            "Tempting because lesson 04's group sizes moved the SQNR by about a dB per doubling; but here every "
            "block keeps its own scale, only rounded a little.",
        ),
        (
            "nothing: an integer times an fp16 number is exact",
            False,
            "The integer is the nearest whole number of super-scales, off by up to half a step: the loss is small, "
            "not zero.",
        ),
    ),
    "six_bit_codes": choice(
        "Now 6-bit codes (-31..31) on the same layer, in the same blocks of 32 under super-blocks of 8. How much "
        "SQNR do the same 6-bit sub-scales lose against fp32 scales here?",
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
            "several hundredths of a dB, about what a 4- or 5-bit sub-scale costs int4 codes",
            True,
            "The largest code sits 31 ticks out instead of 7, so the same relative error moves it 31/7, about 4.4 "
            "times as far: as far as a sub-scale with 4.4 times fewer steps (about 14, a 4-bit one) moves int4's. "
            "The loss follows the move.",
        ),
        (
            "several dB: the scale is now far too coarse and the codes clip",
            False,
            "Tempting, since the move grew 4.4 times; but clipping needs a move past half a tick, and the rule gives "
            "at most a quarter tick.",
        ),
    ),
    "oversized_scale": choice(
        "Every block's scale 1.5 times too large (so nothing clips), all 36 MiniLM layers, blocks of 32. With exact "
        "scales int4 (-7..7) and FP4 (E2M1) codes score about the same SQNR. What does the too-large scale do?",
        (
            "int4 loses several dB, FP4 under one",
            True,
            "On int4's even ticks every value's step grows 1.5 times. FP4's values move down toward the next binade, "
            "where its ticks are finer, so their relative step stays about the same; only values pushed to the "
            "bottom ticks lose.",
        ),
        (
            "both lose the same, a few dB: the scale makes every tick 1.5 times coarser",
            False,
            "Tempting: the scale multiplies every tick on both grids. But on a float grid a value that shrinks "
            "lands among finer ticks, so its relative error barely grows.",
        ),
        (
            "FP4 loses more: its top ticks are 2 apart (4 to 6), coarser than int4's",
            False,
            "Tempting, since FP4 is coarse at the top; but a too-large scale pushes values away from the top, "
            "to where FP4's ticks are fine.",
        ),
        (
            "neither loses: a larger scale clips nothing",
            False,
            "Tempting if clipping is the only error one pictures; but rounding error grows with the step, and on "
            "int4 every step grows.",
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
            (0.125, "that counts bytes (2 per 16 weights); the question asks for bits"),
            (0.5, "that is groups of 32"),
        ),
    ),
    Numeric(
        "A 5-bit sub-scale (1 to 31) times an fp16 super-scale, in a block about as loud as its super-block's "
        "loudest, int4 codes (-7..7). To first order, at most how many ticks can rounding the sub-scale move the "
        "block's largest code?",
        7 / 62,
        "The sub-scale is off by at most half a step, 1/62 of the scale; the largest code sits 7 ticks out, so it "
        "moves by up to 7/62, about 0.11 of a tick.",
        tol=0.002,
        mistakes=(
            (7 / 31, "that is a whole step; rounding to the nearest is off by at most half of one"),
            (1 / 62, "that is the scale's relative error, not the move of the largest code, which sits 7 ticks out"),
            (7 / 64, "that takes 32 steps; a 5-bit sub-scale runs from 1 to 31"),
        ),
    ),
    choice(
        "6-bit codes under 4-bit sub-scales lose about 0.6 dB, most of it gone when codes are not clamped. Why?",
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
        "A block's scale is a power of two, off by up to a factor of 1.5 (FP4) to 1.75 (int4) from the ideal. "
        "Why does that cost FP4 codes less than int4 codes?",
        (
            "A value pushed down toward the next binade of the float grid meets about the same relative step",
            True,
            "Only values pushed to the bottom ticks (0 and 0.5) lose; on int4's evenly spaced ticks every value's "
            "step grows with the scale. Section 4's control: a scale 1.5 times too large costs int4 several dB, "
            "FP4 under one.",
        ),
        (
            "FP4's ticks are finer than int4's everywhere",
            False,
            "Tempting from its 0.5 steps near zero; but near the top FP4's ticks are 2 apart (4 to 6), coarser than "
            "int4's 1. What helps is that a halved value keeps its relative step.",
        ),
        (
            "A power of two is exact in binary, so it adds no rounding to FP4's codes",
            False,
            "Tempting: multiplying by a power of two is exact. But the scale itself can be up to 1.75 times too "
            "large for the block; the grids differ in what that does to the values.",
        ),
        source=LESSON,
    ),
    Numeric(
        "MXFP4 floor rule (the OCP spec's): a block's largest magnitude is 5.0. What is its scale?",
        1.0,
        "2**(floor(log2 5) - 2) = 2**(2 - 2) = 1: 5.0 / 1 = 5 lies in [4, 8); 5.0 itself is a tie between 4 and 6.",
        tol=0.0001,
        mistakes=(
            (2.0, "that is torchao's ceil rule, which rounds log2 amax up; the OCP rule rounds it down"),
            (
                4.0,
                "that is 2**floor(log2 5), the power of two at or below amax: 5 would land at 1.25, at the bottom "
                "of FP4's grid; the rule leaves room for the grid's own largest power of two",
            ),
            (5.0 / 6.0, "an absmax / 6 scale is NVFP4's (before E4M3 rounding); MXFP4 scales are powers of two"),
        ),
    ),
    choice(
        "Why does NVFP4 store an fp32 tensor scale above its FP8 block scales?",
        (
            "E4M3's normal numbers span only 2**-6 to 448, so the tensor scale moves that window onto the "
            "tensor's range",
            True,
            "The block scales are E4M3 numbers relative to it. On MiniLM's L0.intermediate as stored it buys little "
            "(a tenth of a dB against scales clamped at 2**-6); on the same layer divided by 100 every block "
            "scale falls below E4M3's range without it, and the weights round to "
            "zero.",
        ),
        (
            "E4M3's 3 mantissa bits are too coarse, and the fp32 tensor scale adds precision to every block scale",
            False,
            "Tempting, since fp32 is precise; but one number per tensor cannot refine each block's rounding: E4M3's "
            "relative step is the same wherever the tensor scale puts its window.",
        ),
        (
            "The tensor cores need an fp32 scale to accumulate the products in fp32",
            False,
            "Tempting from the hardware; but the accumulator is fp32 whatever the scales are. The tensor scale is "
            "applied once per output, after the GEMM.",
        ),
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

"""Lesson 08 · Scales of scales: the exercise tasks and the recall questions.

Sources: ``notebooks/08_scales_of_scales.py`` (the lesson) and
``exercises/solutions/08_scales_of_scales.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import math

import numpy as np

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import INTERVIEW, LESSON, Numeric, Question, choice
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


def _double_bits(bits: int, group_size: int, scale_bits: int, scale_group: int) -> float:
    return bits + (scale_bits + 32 / scale_group) / group_size


_AMAX = [5.0, 6.0, 0.75, 448.0, 1e-3, 2.0**-10, 1e-39, 0.0]  # 1e-39 (a float32 subnormal): below 2**-125, e is 0

TASKS: list[Task] = [
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
        "the power of two that brings the block's amax within FP4's range (its largest value, 6, is 1.5 * 2**2), "
        "plus the bias; an all-zero block gets 0 and e never goes below 0",
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
                "did not clamp at 0: for amax below 2**-125 the exponent would be negative, and E8M0 stops at 0",
                lambda a: math.floor(math.log2(a)) - 2 + 127 if a else 0,
            ),
        ],
    ),
    Task(
        "08.double_quant_bits",
        "bits per weight with double-quantized group scales",
        _double_bits,
        [
            Case((4, 64, 8, 256), "QLoRA: int4 g64, 8-bit scales, one fp32 per 256 scales"),
            Case((4, 32, 8, 64), "int4 g32, 8-bit scales, one fp32 per 64"),
            Case((3, 16, 6, 128), "int3 g16, 6-bit scales, one fp32 per 128"),
        ],
        "each scale is shared by the weights under it: a group's scale code by its group_size weights, a 32-bit "
        "second-level scale by scale_group whole groups",
        [
            Mistake("left out the fp32 second-level scales", lambda b, g, sb, sg: b + sb / g),
            Mistake(
                "shared the fp32 scale by scale_group weights, not scale_group groups",
                lambda b, g, sb, sg: b + sb / g + 32 / sg,
            ),
            Mistake("kept fp16 group scales (no double quantization)", lambda b, g, sb, sg: b + 16 / g),
        ],
    ),
]

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
        "Bits per weight of llama.cpp's Q4_K (144 bytes per 256 weights)?",
        4.5,
        "144 x 8 / 256 = 4.5: 4-bit codes, 12 bytes of 6-bit scales and minimums, fp16 d and dmin.",
        tol=0.001,
        mistakes=(
            (4.0, "the scales, minimums and super-scales are stored too"),
            (4.375, "that leaves out the two fp16 super-scales (d and dmin)"),
        ),
    ),
    Numeric(
        "Bits per weight of MXFP4 (32 FP4 values and one E8M0 byte per block)?",
        4.25,
        "4 + 8 / 32 = 4.25: the scale is one byte, an exponent only.",
        tol=0.001,
        mistakes=((4.5, "that is a 16-bit scale per 32, or NVFP4's 8-bit scale per 16"),),
    ),
    choice(
        "Which magnitudes does FP4 E2M1 represent?",
        ("0, 0.5, 1, 1.5, 2, 3, 4, 6", True, "Two per binade: the steps double from 0.5 to 2."),
        ("0 to 7 in steps of 1", False, "That is an unsigned 3-bit integer grid, evenly spaced."),
        ("0, 1, 2, 4, 8, 16, 32, 64", False, "Those are powers of two, E8M0-like, no mantissa bit."),
        source=LESSON,
    ),
    Numeric(
        "MXFP4 floor rule: a block's largest magnitude is 5.0. What is its scale?",
        1.0,
        "2**(floor(log2 5) - 2) = 2**(2 - 2) = 1: 5.0 / 1 = 5 lies in [4, 8); 5.0 itself is a tie between 4 and 6.",
        tol=0.0001,
        mistakes=(
            (2.0, "that is the ceil rule: 2**(ceil(log2 5) - 2)"),
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
            "The block scales are E4M3 numbers relative to it. On MiniLM's L0.intermediate it buys only about a tenth "
            "of a dB. Where block maxima lie below about 0.1, block scales turn subnormal and lose precision (below "
            "about 0.006 they flush to zero); above about 2,700 (6 x 448) they overflow: there it decides whether "
            "block scales work at all.",
        ),
        ("Because FP4 values need an exponent of their own", False, "E2M1 elements have their exponent bits."),
        ("To store the block's zero point", False, "NVFP4 is symmetric: no zero point."),
        source=LESSON,
    ),
    choice(
        "Interview: 'K-quants are just per-group int4 with groups of 32'. What is missing?",
        (
            "The second level: 4- to 8-bit integer sub-scales (and minimums in Q2_K and Q4_K/Q5_K) "
            "under fp16 super-scales per 256 weights",
            True,
            "That is how Q4_K gets a 6-bit minimum per 32 weights for Q4_0's 4.5 bits, and Q6_K an int8 scale per 16.",
        ),
        (
            "Nothing: they store an fp16 scale per 32 like Q4_0",
            False,
            "Common wrong answer: the sub-block scales are small integers (6-bit in Q4_K, int8 in Q6_K).",
        ),
        ("K-quants use floating-point codes", False, "The codes are integers; MXFP4 and NVFP4 use FP4 codes."),
        source=INTERVIEW,
    ),
    Numeric(
        "A 6-bit sub-scale near the top of its range (63) is off by at most half a step. What is that, in percent?",
        100 / 126,
        "Half of 1/63 is 1/126, about 0.79%: at a block's largest int4 code, 7 ticks out, about 0.06 of a tick.",
        tol=0.02,
        mistakes=(
            (100 / 63, "that is a whole step; rounding to the nearest is off by at most half of one"),
            (
                100 / 64,
                "in this lesson's model a sub-scale runs from 1 to 63: steps are 1/63 of the super-block's largest, "
                "half a step is 1/126",
            ),
        ),
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
)

"""Lesson 08 · Scales of scales: the exercise tasks and the recall questions.

Sources: ``notebooks/08_scales_of_scales.py`` (the lesson) and
``exercises/solutions/08_scales_of_scales.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import math

import numpy as np

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import LESSON, Numeric, Question, choice

FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)


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


def _quiet_bits_round_up(code_bits: int, r: float, max_ticks: float) -> int:
    """The move under a scale rounded *up* by half a step, exactly: qmax / (2m / r + 1) (the smaller move)."""
    q = 2 ** (code_bits - 1) - 1
    return next(b for b in range(1, 41) if q / (2 * (2**b - 1) / r + 1) <= max_ticks)


def _quiet_bits_strict(code_bits: int, r: float, max_ticks: float) -> int:
    q = 2 ** (code_bits - 1) - 1
    return next(b for b in range(1, 41) if q * r / (2 * (2**b - 1)) < max_ticks)


def _quiet_bits_exact(code_bits: int, r: float, max_ticks: float) -> int:
    """The move under a scale rounded down by half a step, exactly: qmax / (2m / r - 1)."""
    q = 2 ** (code_bits - 1) - 1
    return next(b for b in range(1, 41) if 2 * (2**b - 1) / r > 1 and q / (2 * (2**b - 1) / r - 1) <= max_ticks)


def _quiet_bits_bit_length(code_bits: int, r: float, max_ticks: float) -> int:
    """The bit length of the step count the block needs, floor(log2(qmax r / (2 max_ticks))) + 1."""
    q = 2 ** (code_bits - 1) - 1
    return max(1, int(math.log2(q * r / (2 * max_ticks))) + 1)


def _quiet_bits_int_steps(code_bits: int, r: float, max_ticks: float) -> int:
    """The quiet block's sub-scale taken as the integer k = round(m / r), its move as qmax / (2k)."""
    q = 2 ** (code_bits - 1) - 1
    return next(b for b in range(1, 41) if q / (2 * max(1, round((2**b - 1) / r))) <= max_ticks)


def _sub_scales_f32(ideal, bits: int) -> np.ndarray:
    """The super-scale kept in float32 instead of float16."""
    s = np.asarray(ideal, dtype=np.float64)
    m = 2**bits - 1
    d = float(np.float32(s.max() / m))
    return np.clip(np.round(s / d), 1, m) * d


def _sub_scales_fp16_max(ideal, bits: int) -> np.ndarray:
    """The loudest scale rounded to float16 first, then divided by m: the super-scale is not a float16 number."""
    s = np.asarray(ideal, dtype=np.float64)
    m = 2**bits - 1
    d = float(np.float16(s.max())) / m
    return np.clip(np.round(s / d), 1, m) * d


def _sub_scales_mixed(ideal, bits: int) -> np.ndarray:
    """Rounded with the float64 super-scale, multiplied back by the stored float16 one (llama.cpp's order)."""
    s = np.asarray(ideal, dtype=np.float64)
    m = 2**bits - 1
    d = s.max() / m
    return np.clip(np.round(s / d), 1, m) * float(np.float16(d))


def _floor_top(
    amax: float,
    grid: str,
    *,
    rule: str = "floor",
    clip: bool = True,
    even: bool = False,
    codes_only: bool = False,
    truncate: bool = False,
    half_up: bool = False,
    fp4_tie_up: bool = False,
) -> float:
    """The value a block stores for its largest magnitude ``amax`` under an E8M0 scale, on FP4's grid or int4's."""
    top = 6.0 if grid == "FP4" else 7.0
    e = {
        "floor": math.floor(math.log2(amax)) - 2,
        "ceil": math.ceil(math.log2(amax)) - 2,
        "round": math.floor(math.log2(amax) + 0.5) - 2,
        "rceil": math.ceil(math.log2(amax / top)),
        "ideal floor": math.floor(math.log2(amax / top)),
        "ideal floor 6": math.floor(math.log2(amax / 6.0)),
        "amax floor": math.floor(math.log2(amax)),
    }[rule]
    v = amax / 2.0**e
    if grid == "FP4" and not even:
        ticks = np.append(FP4, 8.0) if not clip else FP4
        dist = np.abs(ticks - v)
        q = float(ticks[len(ticks) - 1 - np.argmin(dist[::-1])] if fp4_tie_up else ticks[np.argmin(dist)])
    else:
        q = float(np.floor(v) if truncate else np.floor(v + 0.5) if half_up else np.round(v))
        q = min(q, top) if clip else q
    return q if codes_only else q * 2.0**e


TASKS: list[Task] = [
    Task(
        "08.sub_scales",
        "store a super-block's block scales as small integers under one fp16 super-scale",
        lambda ideal, bits: _sub_scales(ideal, bits),
        [
            Case((_ideal(0, 8), 6), "8 blocks, 6-bit sub-scales (Q4_K's width)"),
            Case((_ideal(1, 16), 8), "16 blocks, 8-bit sub-scales, unsigned like Q4_K's (not Q6_K's signed int8)"),
            Case((_ideal(2, 8, quiet=0.004), 6), "a very quiet block beside loud ones"),
            Case((_ideal(3, 8), 4), "4-bit sub-scales (Q2_K's width)"),
            Case((_ideal(4, 8, quiet=0.01), 4), "4-bit sub-scales, a quiet block", hidden=True),
            Case((_ideal(5, 16), 5), "16 blocks, 5-bit sub-scales", hidden=True),
            Case((_ideal(6, 8, quiet=0.02), 8), "8-bit unsigned sub-scales, a quiet block", hidden=True),
        ],
        "reread section 2 of the lesson: what is stored as float16, which block sets it, and which integers "
        "a sub-scale can take",
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
                "gave the sub-scale a signed range, as Q6_K's int8 has: Q4_K's sub-scales, which this task "
                "stores, are unsigned and use every one of their bits",
                lambda ideal, bits: _sub_scales(ideal, bits, steps=lambda b: 2 ** (b - 1) - 1),
            ),
            Mistake(
                "kept the super-scale in float64: it is stored as float16, and each stored scale is an integer times "
                "the stored one",
                lambda ideal, bits: _sub_scales(ideal, bits, fp16=False),
            ),
            Mistake(
                "kept the super-scale in float32: it is stored as float16, and each stored scale is an integer times "
                "the stored one",
                _sub_scales_f32,
            ),
            Mistake(
                "rounded the loudest scale to float16 before dividing by the largest integer: the super-scale "
                "itself, that quotient, is the float16 number",
                _sub_scales_fp16_max,
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
        also_correct=(_sub_scales_mixed,),  # llama.cpp's quantize_row_q4_K_ref: rounds against the unrounded d
        rtol=1e-9,
        atol=0.0,
        minutes=3,
    ),
    Task(
        "08.quiet_block_bits",
        "how many bits a quiet block's scale needs",
        lambda code_bits, r, max_ticks: _quiet_bits(code_bits, r, max_ticks),
        [
            Case((4, 1, 0.1), "int4 codes, a block about as loud as the loudest (r = 1), 0.1 tick"),
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
            Case((4, 16, 0.8), "int4 codes, 16 times quieter, 0.8 tick", hidden=True),
            Case((3, 12, 0.5), "3-bit codes, 12 times quieter, half a tick", hidden=True),
            Case((4, 1, 0.11), "int4 codes, r = 1, 0.11 tick", hidden=True),
        ],
        "all blocks of a super-block share one super-scale, the step of their integers: how many of those steps "
        "make up the quiet block's scale? Count the worst rounding, then what that does to the block's largest code. "
        "When r is 1 the block is the lesson's own case: compare with section 2's bound",
        [
            Mistake(
                "that is the answer for a block about as loud as the loudest: a block r times quieter has r times "
                "fewer steps of the super-scale, so the same half step is a larger part of its scale",
                lambda c, r, t: _quiet_bits(c, 1, t),
            ),
            Mistake(
                "made the quiet block's move smaller than the loudest's: its scale is smaller, but the step (the "
                "super-scale) is the same, so its relative error is larger",
                lambda c, r, t: _quiet_bits(c, r, t, quiet=lambda k: 1 / k),
            ),
            Mistake(
                "counted a whole step of the sub-scale, or gave it half its steps: your worst rounding is twice too "
                "large; rounding to the nearest is off by at most half a step, and the sub-scales are unsigned, "
                "as in Task 1: 1 to 2**bits - 1",
                lambda c, r, t: _quiet_bits(c, r, t, step=1.0),
            ),
            Mistake(
                "bounded the scale's relative error, not the move of the largest code: that code sits qmax ticks out",
                lambda c, r, t: _quiet_bits(c, r, t, qmax=lambda b: 1),
            ),
            Mistake(
                "rounded the quiet block's step count to an integer first: the worst case is over any scale between "
                "two integers, so the block spans m / r steps, and rounding to the nearest is off by half a step",
                _quiet_bits_int_steps,
            ),
            Mistake(
                "took 2**bits steps, as ceil(log2 steps) does: a bits-bit sub-scale runs from 1 to 2**bits - 1",
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
            Mistake(
                "counted the scale rounded up: that pulls the largest code inward, the smaller move; the worst case "
                "is the scale rounded down, which pushes it outward",
                _quiet_bits_round_up,
            ),
            Mistake("asked for a move strictly below max_ticks: the task says at most", _quiet_bits_strict),
            Mistake(
                "took the bit length of the step count the block needs: a bits-bit sub-scale stops at "
                "2**bits - 1, so a count between 2**bits - 1 and 2**bits (31.8, say) needs one bit more",
                _quiet_bits_bit_length,
            ),
        ],
        also_correct=(_quiet_bits_exact,),  # the exact worst case, qmax / (2m / r - 1), is right too
        minutes=10,  # a derivation: how many steps a quieter block's scale spans
    ),
    Task(
        "08.floor_top",
        "what MXFP4's floor rule stores for a block's largest weight, on FP4's grid and on int4's",
        lambda amax, grid: _floor_top(amax, grid),
        [
            Case((1.1, "FP4"), "FP4, amax 1.1"),
            Case((11.2, "FP4"), "FP4, amax 11.2"),
            Case((0.05625, "FP4"), "FP4, amax 0.05625"),
            Case((0.3, "int4"), "int4, amax 0.3"),
            Case((1.68, "int4"), "int4, amax 1.68"),
            Case((7.6, "int4"), "int4, amax 7.6"),
            Case((12.6, "int4"), "int4, amax 12.6"),
            Case((0.3, "FP4"), "FP4, amax 0.3 (the int4 case above, on FP4)"),
            Case((2.0**-3, "FP4"), "FP4, amax a power of two", hidden=True),
            Case((0.62, "FP4"), "FP4, just below a boundary", hidden=True),
            Case((0.63, "FP4"), "FP4, just above a boundary", hidden=True),
            Case((11.92, "FP4"), "FP4, just below another boundary", hidden=True),
            Case((7.44, "int4"), "int4, just below the top", hidden=True),
            Case((1.9 * 2.0**-6, "int4"), "int4, a small amax past the top", hidden=True),
            Case((35.2, "int4"), "int4, a large amax", hidden=True),
            Case((0.8, "int4"), "int4, amax 0.8", hidden=True),
            Case((1.125, "int4"), "int4, amax 1.125: a tie between two codes", hidden=True),
            Case((1.25, "FP4"), "FP4, amax 1.25: a tie between 4 and 6", hidden=True),
        ],
        "the floor rule's power of two puts amax between 4 and 8 times the scale; the block stores the grid's "
        "nearest value to amax / scale (FP4's values are not evenly spaced), and a grid holds nothing past its top",
        [
            Mistake(
                "returned amax itself: that is what an exact scale (amax over the grid's top) stores; the floor "
                "rule's power of two puts amax between 4 and 8 times the scale",
                lambda amax, grid: float(amax),
            ),
            Mistake(
                "used FP4's values on int4's grid too: int4's codes are the integers -7 to 7",
                lambda amax, grid: _floor_top(amax, "FP4"),
            ),
            Mistake(
                "did not clip: a grid holds nothing past its top (6 on FP4, 7 on int4); a largest weight that rounds "
                "past it is stored as the top",
                lambda amax, grid: _floor_top(amax, grid, clip=False),
            ),
            Mistake(
                "did not clip on int4's grid: it holds nothing past 7, so a largest weight that rounds to 8 is "
                "stored as 7",
                lambda amax, grid: _floor_top(amax, grid, clip=grid == "FP4"),
            ),
            Mistake(
                "rounded on evenly spaced ticks: FP4 has no 5 (its values are 0, 0.5, 1, 1.5, 2, 3, 4, 6)",
                lambda amax, grid: _floor_top(amax, grid, even=True),
            ),
            Mistake(
                "used the ceil rule (log2 amax rounded up): the floor rule rounds it down, so amax lands between 4 "
                "and 8 times the scale, not between 2 and 4",
                lambda amax, grid: _floor_top(amax, grid, rule="ceil"),
            ),
            Mistake(
                "rounded log2 amax to the nearest integer: the floor rule rounds it down, so amax lands between 4 "
                "and 8 times the scale",
                lambda amax, grid: _floor_top(amax, grid, rule="round"),
            ),
            Mistake(
                "used rceil (the power of two at or above the ideal scale): it never clips, but it is not the "
                "floor rule",
                lambda amax, grid: _floor_top(amax, grid, rule="rceil"),
            ),
            Mistake(
                "took the power of two at or below the ideal scale (amax over the grid's top): the floor rule "
                "starts from amax's own power of two and leaves room for the grid's largest power of two, 4, so "
                "amax lands between 4 and 8 times the scale",
                lambda amax, grid: _floor_top(amax, grid, rule="ideal floor"),
            ),
            Mistake(
                "took the power of two at or below amax / 6 on both grids: that is not the floor rule, which starts "
                "from amax's own power of two, so amax lands between 4 and 8 times the scale on either grid",
                lambda amax, grid: _floor_top(amax, grid, rule="ideal floor 6"),
            ),
            Mistake(
                "took 2**floor(log2 amax), the power of two at or below amax, as the scale: amax lands at 1 to 2 "
                "times it, at the bottom of the grid; the rule leaves room for the grid's own largest power of two, 4",
                lambda amax, grid: _floor_top(amax, grid, rule="amax floor"),
            ),
            Mistake(
                "truncated amax / scale to an int4 code: the block stores the nearest code (5.8 ticks is stored "
                "as 6, not 5)",
                lambda amax, grid: _floor_top(amax, grid, truncate=True),
            ),
            Mistake(
                "rounded a tie (4.5 ticks) up: like `round` and `np.round` everywhere in this course, a tie goes "
                "to the even code",
                lambda amax, grid: _floor_top(amax, grid, half_up=True),
            ),
            Mistake(
                "rounded FP4's tie up: 5 units of the scale lie halfway between 4 and 6, and a tie goes to the even "
                "code, 4 (E2M1 code 0110; 6 is 0111)",
                lambda amax, grid: _floor_top(amax, grid, fp4_tie_up=True),
            ),
            Mistake(
                "returned the code (in ticks): the task asks for the value stored, the code times the scale",
                lambda amax, grid: _floor_top(amax, grid, codes_only=True),
            ),
        ],
        minutes=8,
    ),
]

PREDICT = {
    "loss_per_bit": choice(
        "Sub-scales of 6, 5 and 4 bits (integers 1 to 63, 31, 15) times an fp16 super-scale: each bit fewer "
        "doubles the step, so it doubles how far rounding can move the block's top code. On L0.output (symmetric "
        "int4 codes -7..7, blocks of 32 under super-blocks of 8), by about what factor does the SQNR lost against "
        "exact fp32 scales grow per bit fewer?",
        (
            "about 2: the loss follows the move",
            False,
            "Tempting: twice the move, twice the error. But SQNR counts squared error: a top code moved twice as "
            "far carries about four times the added squared error.",
        ),
        (
            "about 4: the loss grows as the square of the move",
            True,
            "SQNR counts squared error, so twice the move adds about four times as much. The table's loss column "
            "grows by a little under 4 per bit, while the move stays well under half a tick.",
        ),
        (
            "about 10: below 6 bits the scale falls apart",
            False,
            "Tempting if a bit feels like a cliff; but even 4-bit sub-scales move a block's top code less than "
            "half a tick near the loudest block, so nothing breaks: the loss grows smoothly with the move.",
        ),
        (
            "not at all: while the move stays under half a tick, every code rounds to the same integer",
            False,
            "Tempting, since rounding absorbs small moves of a code; but the stored value is the code times the "
            "scale, so a rounded scale shifts every weight's value, and the top weight's most.",
        ),
    ),
    "six_bit_codes": choice(
        "Now 6-bit codes (-31..31) on the same layer, in the same blocks of 32 under super-blocks of 8, with the "
        "same 6-bit sub-scales. By about what factor does the bound grow against int4 codes (the most a "
        "near-loudest block's top code can move, in ticks)?",
        (
            "1: the same sub-scale has the same relative error, so the same move",
            False,
            "Tempting: the sub-scale is the same number, as precise as before. But its error is relative, and the "
            "largest code moves by qmax times it: 31 ticks out instead of 7.",
        ),
        (
            "2: two more code bits",
            False,
            "Tempting: two more bits. But each code bit about doubles the ticks, so the top code sits 31 ticks "
            "out instead of 7, over 4 times as far.",
        ),
        (
            "about 4.4: the top code sits 31 ticks out instead of 7",
            True,
            "The bound is qmax / (2m): 31/126 against 7/126, so 31/7, about 4.4 times as far. That is as far as a "
            "sub-scale with 4.4 times fewer steps (about 14, a 4-bit one) moves int4's top code, so expect a loss "
            "of several hundredths of a dB.",
        ),
        (
            "about 16: four times finer codes, squared",
            False,
            "Tempting if the move and the loss blur: the loss grows about as the square of the move (section 2). "
            "The move itself grows only as the top code's distance, 31/7.",
        ),
    ),
    "pow2_scale": choice(
        "The floor rule costs int4 codes 2.33 dB over MiniLM's 36 layers (the answer above). If each block "
        "instead took the better of the two powers of two around its ideal scale, how much SQNR would int4 codes "
        "(-7..7) lose against exact fp32 scales?",
        (
            "almost nothing: the floor rule was written for FP4",
            False,
            "Tempting, since the rule aims at FP4's grid; but a power of two still has no steps between one power "
            "and the next, so even the better power can leave a block's top code whole ticks from 7.",
        ),
        (
            "about 1.5 dB: most of the loss is the missing steps between powers",
            True,
            "The better power per block wins back under a dB. The rest is a bare power of two: the ideal scale "
            "lies anywhere between two powers, and a block's top code lands up to a few whole ticks from 7.",
        ),
        (
            "the same 2.33 dB: the rule already picks the best power",
            False,
            "Tempting, since it is the specification's rule; but it picks from amax alone, aiming at FP4's grid, so "
            "on int4's grid it puts the top code 4 to 8 ticks out and clips past 7.5, where the other power "
            "is often better.",
        ),
        (
            "more than 2.33 dB",
            False,
            "Tempting if a second power feels like a second chance to go wrong; but the floor rule's power is "
            "always one of the two around the ideal scale, so taking the better of the two per block never loses "
            "more.",
        ),
    ),
    "top_weight": choice(
        "MXFP4's floor rule, first block of row 0: the block's largest weight is f x 2**k with f = 1.50 on "
        "L4.output and f = 1.97 on L0.intermediate, and the scale is 2**(k - 2). FP4's magnitudes are 0, 0.5, 1, "
        "1.5, 2, 3, 4, 6. Which layer stores that weight more than 10% low?",
        (
            "L4.output only: f = 1.50 sits halfway between powers of two",
            False,
            "Tempting: 1.5 looks furthest from a power of two. But the weight lands at 4 x 1.50 = 6.0 units of the "
            "scale, exactly FP4's top: stored within 1%.",
        ),
        (
            "L0.intermediate only: its weight lands past FP4's top, 6, and clips",
            True,
            "4 x 1.97 = 7.9 units of the scale, past FP4's top, 6: clipped to 6, about a quarter low (-23.9%). "
            "L4.output's lands at 6.0, on the grid.",
        ),
        (
            "both: neither f is a power of two",
            False,
            "Tempting: a power-of-two scale can only be exact for powers of two. But FP4's codes have steps of their "
            "own: 4 x 1.50 = 6.0 lands on FP4's top exactly.",
        ),
        (
            "neither: the floor rule keeps every block's largest weight within FP4's range",
            False,
            "Tempting: the rule aims at FP4's top. But it puts the largest weight anywhere from 4 to 8 units of the "
            "scale, and FP4 stops at 6: 4 x 1.97 = 7.9 clips to 6.",
        ),
    ),
}

RECALL: tuple[Question, ...] = (
    choice(
        "An E8M0 block scale (MX's) and a 6-bit sub-scale under an fp16 super-scale both cost 0.25 bits per weight "
        "in blocks of 32. On int4 codes, E8M0 under the floor rule lost over 2 dB over MiniLM's 36 layers; the "
        "6-bit sub-scale lost 0.003 dB over the same 36 layers. Why the difference?",
        (
            "The byte holds only an exponent: the scale moves in factors of 2, so the block's top code can land "
            "up to 3 ticks from 7",
            True,
            "A 6-bit sub-scale is off by at most 1/126 near the loudest block (7/126 of a tick); a power of two can "
            "be off by up to 1.75 times int4's ideal, putting the largest weight anywhere from 4 to 8 ticks out.",
        ),
        (
            "The floor rule rounds every scale down, so every block's largest weight clips",
            False,
            "Tempting, since the rule rounds down; but it puts a block's largest weight 4 to 8 ticks out, and "
            "int4 clips it only from 7.5 up. Below that, the top code lands up to 3 ticks inward.",
        ),
        (
            "The floor rule is written for FP4; the best power of two for int4 would lose almost nothing",
            False,
            "Tempting, since the rule aims at FP4's grid; but even the better of the two powers of two around "
            "each block's ideal scale still loses int4 codes 1.55 dB: the scale has no steps between powers.",
        ),
        (
            "E8M0 cannot reach the small scales MiniLM's blocks need",
            False,
            "Tempting from E4M3's narrow range (NVFP4's reason for a tensor scale); but E8M0 spans 2**-127 to "
            "2**127, far beyond any weight's.",
        ),
        source=LESSON,
    ),
    Numeric(
        "MXFP4 floor rule (the OCP spec's): a block's largest magnitude is 5.0. What is its scale?",
        1.0,
        "2**(floor(log2 5) - 2) = 2**(2 - 2) = 1: 5.0 / 1 = 5 lies in [4, 8).",
        tol=0.0001,
        mistakes=(
            (
                2.0,
                "that is the ceil rule (one of torchao's options), which rounds log2 amax up; the OCP rule "
                "rounds it down",
            ),
            (
                4.0,
                "that is 2**floor(log2 5), the power of two at or below amax: 5 would land at 1.25, at the bottom "
                "of FP4's grid; the rule leaves room for the grid's own largest power of two",
            ),
            (
                0.5,
                "power of two at or below amax / 6: the floor rule starts from amax's own power of two, so 5 lands "
                "in [4, 8)",
            ),
            (5.0 / 6.0, "an absmax / 6 scale is NVFP4's (before E4M3 rounding); MXFP4 scales are powers of two"),
        ),
    ),
    choice(
        "Lesson 04 revisited: at about 4 bits per weight on MiniLM, with restricted rulers, int3 codes with one "
        "fp16 scale per 16 weights against int4 codes with one scale per channel. Which wins on most layers?",
        (
            "int4 per-channel, by 2 to 4 dB: fp16 scales per 16 weights cost a whole bit, more than the finer "
            "groups buy",
            True,
            "Lesson 04 measured it: the code bit won by 2 to 4 dB on the layers outside the six FFN outputs. A bit "
            "per weight of fp16 scales is dear; that is the price this lesson's cheaper scales cut.",
        ),
        (
            "int3 g16: finer groups always win",
            False,
            "Tempting, since at the same int4 codes groups of 128 beat per-channel on every layer; but here the "
            "groups cost a code bit, and int3's ruler has 3 ticks a side where int4's has 7.",
        ),
        (
            "they tie everywhere: the same bits buy the same SQNR",
            False,
            "Tempting: 4.000 against 4.01 to 4.04 bits per weight. But they tie only on the six FFN outputs, "
            "whose rows often hold a weight far above their rms; on the other layers the code bit wins.",
        ),
        (
            "int3 g16, because an outlier stays inside its group",
            False,
            "Tempting: a group's own scale does confine an outlier, which is why the two tie on the six FFN "
            "outputs. Most layers' rows hold few such weights, so the code bit wins there.",
        ),
        source=LESSON,
    ),
)

EXERCISE_RECALL: tuple[Question, ...] = (
    choice(
        "int8 codes (-127..127), 8-bit sub-scales (1 to 255): is a near-loudest block's top code within a tenth "
        "of a tick?",
        (
            "No: it can move up to 127/510 of a tick, about a quarter",
            True,
            "Half a step is 1/510 of the scale, and the top code sits 127 ticks out: 127/510, about 0.25 tick. "
            "A tenth of a tick needs about 5 x 127 steps, about 10 bits, which fp16 scales have.",
        ),
        (
            "Yes: 255 steps are four times Q4_K's 63, which kept int4's move near 0.06 tick",
            False,
            "Tempting, since more steps shrink the move; but int8's top code sits 127 ticks out, 18 times further "
            "than int4's 7, so 4 times the steps still leaves a 4.5 times larger move.",
        ),
        (
            "Yes: the scale is off by at most 1/510, far under a tenth",
            False,
            "Tempting: 1/510 is the scale's relative error. But the top code sits 127 ticks out, so it moves "
            "127 times that.",
        ),
        (
            "No: it can move a whole tick, so the top code clips",
            False,
            "Tempting if the rounding counts a whole step; but rounding to the nearest is off by half a step, "
            "about a quarter tick here, which does not reach the half tick where clipping starts.",
        ),
        source=LESSON,
    ),
    choice(
        "Lesson 04 revisited: int4 codes, 6-bit sub-scales; a super-block's block 0 has a weight 20 times any "
        "other. Who loses?",
        (
            "All 8: block 0's codes get a coarse ruler, and the other 7 scales span 3 super-scale steps or fewer",
            True,
            "The super-scale is set by the loudest block, so each other block's sub-scale rounds to 63/20, about "
            "3, or less: off by up to a sixth, which moves its top code by up to 7/6 of a tick. A super-block spreads "
            "lesson 04's outlier cost across its 8 blocks.",
        ),
        (
            "Block 0 only: each block has its own scale, so the outlier stays inside its block",
            False,
            "Tempting from lesson 04, where each group's fp16 scale kept the outlier's damage inside the group; but "
            "here the blocks share the super-scale, whose step the loudest block sets.",
        ),
        (
            "The whole row: the super-scale is shared along the row, like a per-channel scale",
            False,
            "Tempting from per-channel scales (lesson 02); but a super-scale covers one super-block, 256 weights, "
            "not the row.",
        ),
        (
            "None: a 6-bit sub-scale has room for a factor of 20",
            False,
            "Tempting: 63 steps span a factor of 63. But the quiet blocks keep only the bottom 3 or so of them, "
            "and half a step of 3 is a sixth of the scale.",
        ),
        source=LESSON,
    ),
)

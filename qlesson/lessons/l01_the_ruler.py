"""Lesson 01 · The ruler: the exercise tasks and the recall questions.

Sources: ``notebooks/01_the_ruler.py`` (the lesson) and
``exercises/solutions/01_the_ruler.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import Numeric, Question, choice
from qlesson.lessons._shared import MIXED, NEG, POS, qmax

_G = torch.Generator().manual_seed(1234 + 1)


def _sym_scale(x: torch.Tensor, bits: int) -> torch.Tensor:
    return x.abs().max() / qmax(bits)


def _asym_qparams_steps(x: torch.Tensor, bits: int, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    rmin, rmax = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (rmax - rmin) / steps
    zp = torch.clamp(0 - torch.round(rmin / scale), 0, 2**bits - 1)
    return scale, zp


def _asym_qparams(x: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _asym_qparams_steps(x, bits, 2**bits - 1)


def _clip_limits(
    calibration: torch.Tensor,
    bits: int,
    shift: float = 0.5,
    zp_used: bool = True,
    half_up: bool = False,
    floor_zp: bool = False,
    top: int | None = None,
):
    """Where the given asymmetric unsigned ruler, fitted to ``calibration``, starts to clip: ``(below, above)``.

    The named mistakes' variants: ``half_up`` or ``floor_zp`` (the zero point rounded halves up, or down),
    ``top`` (the last code taken as ``top`` instead of ``2**bits - 1``).
    """
    scale, zp = _asym_qparams(calibration, bits)
    if half_up or floor_zp:  # the mistakes: halves up instead of torch.round's halves to even, or floor
        zp = torch.clamp(
            torch.floor(-torch.clamp(calibration.min(), max=0) / scale + (0.5 if half_up else 0)), 0, 2**bits - 1
        )
    zp = zp if zp_used else torch.zeros_like(zp)
    return (-zp - shift) * scale, ((2**bits - 1 if top is None else top) - zp + shift) * scale


def _range_limits(calibration: torch.Tensor, bits: int, widened: bool = True):
    """The mistake: half a tick past rmin and rmax, as if the rounded zero point did not move the ruler
    (``widened=False``: past the data's own min and max, the range not widened to include 0)."""
    scale, _ = _asym_qparams(calibration, bits)
    lo, hi = calibration.min(), calibration.max()
    if widened:
        lo, hi = torch.clamp(lo, max=0), torch.clamp(hi, min=0)
    return lo - scale / 2, hi + scale / 2


def _sym_limits(calibration: torch.Tensor, bits: int):
    top = (qmax(bits) + 0.5) * _sym_scale(calibration, bits)
    return -top, top


def _split(
    calibration: torch.Tensor,
    x: torch.Tensor,
    bits: int,
    beyond_tick: bool = False,
    signed: bool = False,
    power: int = 1,
    reduce: str = "sum",
    full_range: bool = False,
    ticks: bool = False,
    pytorch_rule: bool = False,
    asymmetric: bool = False,
    no_abs: bool = False,
    trunc: bool = False,
):
    if asymmetric:  # the mistake: the given asymmetric_qparams ruler, codes 0 .. 2**bits - 1
        scale, zp = _asym_qparams(calibration, bits)
        r = torch.round(x / scale) + zp
        q = torch.clamp(r, 0, 2**bits - 1)
        err = ((q - zp) * scale - x).abs()
        return err[r == q].sum(), err[r != q].sum()
    top = 2 ** (bits - 1) if full_range or pytorch_rule else qmax(bits)
    span = calibration.max() if no_abs else calibration.abs().max()
    scale = span / ((2**bits - 1) / 2 if pytorch_rule else top)
    r = torch.trunc(x / scale) if trunc else torch.round(x / scale)
    q = torch.clamp(r, -top, qmax(bits))
    err = q * scale - x if signed else (q * scale - x).abs() ** power
    if ticks:
        err = (q - x / scale).abs()
    clipped = (x.abs() > qmax(bits) * scale) if beyond_tick else (r != q)
    parts = err[~clipped], err[clipped]
    if reduce == "mean":
        return tuple(p.mean() if p.numel() else p.sum() for p in parts)
    return parts[0].sum(), parts[1].sum()


_CALIB = torch.randn(1000, generator=_G)  # a calibration batch; the new batch below has outliers
_NEW = torch.cat([torch.randn(1000, generator=_G), torch.tensor([6.0, -7.5, 9.0, 5.2, -6.1])])


def _takes_over(calibration: torch.Tensor, x: torch.Tensor) -> int:
    """The smallest bit width (2 to 16) at which Task 2's clipping part exceeds its rounding part, else 17."""
    for bits in range(2, 17):
        rounding, clipping = _split(calibration, x, bits)
        if clipping > rounding:
            return bits
    return 17


def _task3_batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Task 3's calibration batch and new batch, drawn as the exercise draws them."""
    gen = torch.Generator().manual_seed(7)
    calibration = torch.randn(1000, generator=gen)
    return calibration, torch.cat([torch.randn(1000, generator=gen), torch.tensor([6.0, -7.5, 7.8, 5.2, -6.1])])


_TASK3 = _task3_batch()


TASKS: list[Task] = [
    Task(
        "01.clip_start",
        "where does an asymmetric ruler start to clip?",
        _clip_limits,
        [
            Case((torch.tensor([-1.0, 2.0, 0.5]), 3), "uint3: -rmin / scale = 2.33, zero point 2"),
            Case((POS, 4), "uint4, positive-only calibration"),
            Case((MIXED, 3), "uint3, mixed signs", hidden=True),
            Case((NEG, 4), "uint4, negative-only calibration", hidden=True),
            Case((MIXED, 8), "uint8", hidden=True),
            Case((torch.tensor([-0.3, 1.0, 2.6]), 2), "uint2, the zero point rounds down to 0", hidden=True),
            Case((_CALIB, 5), "uint5, 1000 calibration values", hidden=True),
            Case((torch.tensor([-0.5, 2.5]), 2), "uint2: -rmin / scale = 0.5, a tie: zero point 0", hidden=True),
        ],
        "the ruler's ends are its first and last codes read back, not necessarily rmin and rmax; which values does "
        "round() still send onto them? (if you scan for them, steps of 1e-4 are fine enough; 1e-3 are not)",
        [
            Mistake(
                "went half a tick past rmin and rmax; the rounded zero point moves the ruler, so its end ticks are "
                "not exactly rmin and rmax",
                _range_limits,
            ),
            Mistake(
                "went half a tick past the data's min and max; the ruler's range is widened to include 0, and the "
                "rounded zero point moves it, so its end ticks are neither",
                lambda c, b: _range_limits(c, b, widened=False),
            ),
            Mistake(
                "returned the end ticks; a value a little past them still rounds onto them",
                lambda c, b: _clip_limits(c, b, shift=0.0),
            ),
            Mistake(
                "went a whole tick past the end ticks; rounding already jumps to the next code half-way there",
                lambda c, b: _clip_limits(c, b, shift=1.0),
            ),
            Mistake(
                "left out the zero point: code q reads back as (q - zero_point) x scale",
                lambda c, b: _clip_limits(c, b, zp_used=False),
            ),
            Mistake("returned (above, below): below comes first", lambda c, b: _clip_limits(c, b)[::-1]),
            Mistake(
                "rounded the zero point halves up; asymmetric_qparams uses torch.round, which sends a tie to the even "
                "code: use the ruler it returns",
                lambda c, b: _clip_limits(c, b, half_up=True),
            ),
            Mistake("used a symmetric signed ruler; this one is the asymmetric one of asymmetric_qparams", _sym_limits),
            Mistake(
                "took the zero point with floor; asymmetric_qparams rounds it to the nearest code: use the ruler "
                "it returns",
                lambda c, b: _clip_limits(c, b, floor_zp=True),
            ),
            Mistake(
                "took 2**bits as the top code; b bits give codes 0 to 2**bits - 1",
                lambda c, b: _clip_limits(c, b, top=2**b),
            ),
        ],
        shows_expected=False,  # a failure would print both limits
        rtol=1e-3,  # a limit found by scanning values in steps of 1e-4 is as good as one computed
        atol=2e-4,  # (the tightest hidden case, uint8, has half a tick of 0.0025)
        minutes=6,
    ),
    Task(
        "01.rounding_or_clipping",
        "rounding or clipping: which costs more?",
        _split,
        [
            Case(
                (MIXED, torch.tensor([0.1, -0.5, 1.0, 1.6, -2.0]), 3), "int3: 1.0 lies beyond 0.91 but is not clipped"
            ),
            Case((POS, torch.tensor([0.3, 1.44, -1.2, 0.05]), 4), "int4: nothing is clipped"),
            Case((_CALIB, _NEW, 8), "int8, five outliers among 1005 new values", hidden=True),
            Case((_CALIB, _NEW, 3), "int3, the same data", hidden=True),
            Case((NEG, torch.tensor([-1.8, 1.75, -0.3, 2.5]), 2), "int2, negative-only calibration", hidden=True),
        ],
        "the ruler comes from the calibration data, not from x; each part is a sum of absolute errors; a value is "
        "clipped when the clamp changes its code",
        [
            Mistake(
                "fitted the ruler to x instead of the calibration data, so nothing ever clips",
                lambda c, x, b: _split(x, x, b),
            ),
            Mistake(
                "called every value beyond the last tick clipped; up to half a tick beyond, round() still lands on it",
                lambda c, x, b: _split(c, x, b, beyond_tick=True),
            ),
            Mistake("returned (clipping, rounding): rounding comes first", lambda c, x, b: _split(c, x, b)[::-1]),
            Mistake(
                "summed signed errors, so errors of opposite sign cancel; sum their sizes",
                lambda c, x, b: _split(c, x, b, signed=True),
            ),
            Mistake(
                "summed squared errors; the task asks for the summed absolute error",
                lambda c, x, b: _split(c, x, b, power=2),
            ),
            Mistake("took the mean of each part; sum them", lambda c, x, b: _split(c, x, b, reduce="mean")),
            Mistake(
                "measured the error in ticks (q - x / scale); multiply back by the scale: |x_hat - x|",
                lambda c, x, b: _split(c, x, b, ticks=True),
            ),
            Mistake(
                "used the full range [-2**(bits-1), 2**(bits-1) - 1]; the fitted ruler is the restricted one from "
                "the lesson",
                lambda c, x, b: _split(c, x, b, full_range=True),
            ),
            Mistake(
                "used the full-range rule absmax / ((2**bits - 1) / 2) (PyTorch's default, codes [-128, 127]); the "
                "restricted ruler puts absmax exactly on the last code",
                lambda c, x, b: _split(c, x, b, pytorch_rule=True),
            ),
            Mistake(
                "used the asymmetric ruler of asymmetric_qparams; this task's ruler is the lesson's restricted "
                "symmetric one, codes -qmax .. qmax",
                lambda c, x, b: _split(c, x, b, asymmetric=True),
            ),
            Mistake(
                "took the calibration's max, not its largest |value|; on mostly negative data that ruler is far too "
                "short (or points the wrong way)",
                lambda c, x, b: _split(c, x, b, no_abs=True),
            ),
            Mistake(
                "cut off the fraction (trunc) instead of rounding to the nearest tick; round() is the ruler's rule",
                lambda c, x, b: _split(c, x, b, trunc=True),
            ),
        ],
        minutes=5,
    ),
    Task(
        "01.clipping_takes_over",
        "predict the width at which clipping takes over",
        lambda: _takes_over(*_TASK3),
        [Case((), "Task 3's printed batch: five outliers among 1005 new values")],
        "bits barely move the clipping part; see by how much one more bit shrank the rounding part from int3 to "
        "int4, and why, then follow it bit by bit until it drops below the clipping part",
        [
            Mistake(
                "halved the rounding part per bit; it follows the tick, and the ticks per side go 3, 7, 15, 31, 63: "
                "from int3 to int4 it fell to about 3/7 of itself (279.8 to 124.7), not 1/2, and each later bit "
                "takes it a little below half",
                lambda: 8,
            ),
            Mistake(
                "at that width the rounding part is still the larger one; compare the two parts width by width",
                lambda: 6,
            ),
            Mistake(
                "clipping does overtake: bits barely move the clipping part (about 15), while every bit shrinks the "
                "rounding part",
                lambda: 17,
            ),
        ],
        is_value=True,
        minutes=5,
    ),
]


_ASYMMETRIC_WORTH = choice(
    "When is an asymmetric ruler worth its zero point (the same bits as a symmetric one)?",
    (
        "When the data sits on one side of 0 or is lopsided",
        True,
        "The symmetric ruler spends about half its codes on values that never occur; the asymmetric one puts "
        "every code where the data is.",
    ),
    (
        "Always: it is never coarser, so always take it",
        False,
        "Tempting because it is true that its step is never coarser (a range no wider, one more code). But on "
        "data centred on 0 the gain is small, while the zero point adds correction terms to every integer "
        "matrix multiply (lesson 06's Going deeper derives them).",
    ),
    (
        "When a few outliers sit on both sides of 0",
        False,
        "Tempting because asymmetric 'fits' the data; but with outliers on both sides min and max are both "
        "far from 0, so the asymmetric ruler is barely finer.",
    ),
)


RECALL: tuple[Question, ...] = (
    Numeric(
        "An int8 symmetric ruler (codes [-127, 127]) has scale 0.01. What is the largest value it can give back "
        "(reconstruct)?",
        1.27,
        "The last code times the scale: the ruler gives back nothing beyond its last tick.",
        tol=0.004,
        mistakes=(
            (1.28, "that is 128 x 0.01; the restricted symmetric int8 ruler ends at 127"),
            (2.55, "that is 255 x 0.01, the unsigned count; a signed ruler spends half its codes on negatives"),
            (
                1.275,
                "that is where clipping starts (half a tick past the last tick); a value up to there comes back as "
                "the last tick, not as itself",
            ),
        ),
    ),
    Numeric(
        "A symmetric 3-bit ruler (ticks -3..3) is fitted to values whose largest magnitude is 2.0. From which "
        "positive value on does it clip?",
        2.3333,
        "The tick is 2.0 / 3; up to half a tick past the last tick, round() still lands on tick 3, so clipping "
        "starts half a tick past it.",
        tol=0.04,
        mistakes=(
            (2.0, "that is the last tick; a value a little beyond it still rounds onto it"),
            (2.6667, "that is a whole tick beyond the last; rounding already jumps half-way there"),
            (2.1429, "that uses the tick of a 4-bit ruler, 2.0 / 7; 3 bits give ticks -3..3"),
        ),
    ),
    choice(
        "Many toolchains keep symmetric int8 weights in codes [-127, 127], not all of [-128, 127]. Why?",
        (
            "So +x and -x get mirror-image codes under one scale, absmax / 127",
            True,
            "-128 has no positive partner. TFLite, ExecuTorch's XNNPACKQuantizer and llama.cpp's Q8_0 "
            "(d = amax / 127) keep int8 weights in [-127, 127]; PyTorch's default observer and llama.cpp's 4-bit "
            "Q4_0 use the extra code.",
        ),
        (
            "Because -128 cannot be stored in 8 bits",
            False,
            "Tempting if you think of sign-magnitude numbers; but two's complement int8 holds -128, and activations "
            "use it.",
        ),
        (
            "To leave room for the zero point",
            False,
            "Tempting because asymmetric rulers do need a zero point; but the symmetric zero point is 0, "
            "already a code.",
        ),
        (
            "So that 0.0 can be stored exactly",
            False,
            "Tempting because a zero point exists to store 0.0 exactly; but on a symmetric ruler 0.0 is code 0 "
            "with [-127, 127] and with [-128, 127] alike.",
        ),
    ),
)


# asked in the exercises, not in the quiz (numbered after it): 4 applies the clipping rule to an int4 ruler; 5 (the
# asymmetric predict again) is 02's spaced recall; 6 (02-04's) recalls the lesson's first predict; 7 carries it
# to a new pair of widths (exercise 01's own); 8 is lesson 00's spaced recall
EXERCISE_RECALL: tuple[Question, ...] = (
    choice(
        "A fixed int4 ruler (scale 0.1, ticks -7..7) meets 0.74 and 2.0. Which of them does it clip?",
        (
            "Only 2.0: 0.74 still rounds onto tick 7",
            True,
            "0.74 / 0.1 = 7.4 rounds to 7, a code the ruler has, so the clamp changes nothing; 2.0 rounds to 20, "
            "the clamp keeps 7, and the error is 1.3.",
        ),
        (
            "Both: each lies beyond the last tick, 0.7",
            False,
            "Tempting because the last tick looks like the ruler's end; but round() runs first and sends 0.74 "
            "onto tick 7, so its error stays below half a tick.",
        ),
        (
            "Neither: the ruler stretches to fit them",
            False,
            "Tempting because a freshly fitted ruler always fits its data; a calibrated ruler is fixed, and new "
            "data must live with it.",
        ),
    ),
    _ASYMMETRIC_WORTH,
    choice(
        "What does one more bit buy on a symmetric ruler with the same absmax?",
        (
            "About twice as many ticks per side, so a little under half the scale and the worst rounding error",
            True,
            "2^b - 1 codes become 2^(b+1) - 1; from 3 to 4 bits the scale drops to 3/7 of its value.",
        ),
        (
            "One more tick",
            False,
            "Tempting if bits feel like a counter; but codes double with each bit.",
        ),
        (
            "A wider range, so less clipping",
            False,
            "Tempting because more codes sound like more room; but the range is set by absmax (or calibration), and "
            "bits only set how finely it is cut.",
        ),
    ),
    choice(
        "A symmetric int4 ruler becomes an int8 one with the same absmax. By what factor does its tick shrink?",
        (
            "About 18.1",
            True,
            "The tick is absmax / qmax: int4 has 7 ticks per side, int8 127, so it shrinks 127 / 7, about 18 times.",
        ),
        (
            "Exactly 16",
            False,
            "Tempting because four more bits multiply the code count by 2^4; but the tick follows the ticks per "
            "side, 7 then 127, and 127 / 7 is more than 16.",
        ),
        (
            "2",
            False,
            "Tempting because int8 has twice int4's bits; but each bit about doubles the ticks, and four bits were "
            "added.",
        ),
        (
            "About 17",
            False,
            "Tempting because the codes grow from 15 to 255, and 255 / 15 is 17; but the tick follows the steps "
            "per side, 7 then 127, so 127 / 7.",
        ),
    ),
    Numeric(
        "Lesson 00 revisited: torch.nn.Linear(384, 1536) gets one symmetric int8 ruler per output channel. "
        "How many scales?",
        1536,
        "Linear(in, out) stores its weight as [out, in] = [1536, 384]; a channel is an output row, so 1,536 rulers.",
        tol=0.5,
        mistakes=(
            (384, "384 is in_features, the first argument; the weight is stored [out, in], one ruler per output row"),
            (1, "one ruler for the whole weight is per-tensor, not per-channel"),
            (
                4608,
                "that is 1536 x 384 / 128: per-group with groups of 128; per-channel gives each whole row one ruler",
            ),
        ),
    ),
)


PREDICT = {
    "one_more_bit": choice(
        "The six values get a 4-bit ruler instead of a 3-bit one (same absmax, 0.91). The bound on the rounding "
        "error (half a tick)...",
        (
            "drops to a little less than half",
            True,
            "3 ticks per side become 7: the scale goes from 0.91 / 3 to 0.91 / 7, and the half-tick bound with it, "
            "a factor 3/7.",
        ),
        (
            "halves exactly, as every extra bit does",
            False,
            "Tempting because the code count doubles; but the restricted ruler has 2^(b-1) - 1 ticks per side, 3 then "
            "7, so the ratio is 3/7. It nears one half only at higher bits.",
        ),
        (
            "shrinks a little: one more bit adds one more tick",
            False,
            "Tempting if bits feel like a counter; but each bit doubles the number of codes.",
        ),
        (
            "stays the same: absmax still sets the ruler",
            False,
            "Absmax sets the range, which indeed stays [-0.91, 0.91]; the bits set how finely that range is cut.",
        ),
    ),
    "beyond_the_ruler": choice(
        "The 3-bit ruler fitted to the six values (scale 0.91 / 3, ticks -3..3) meets 1.6. What comes back?",
        (
            "0.91: the clamp stores tick 3, and the error is 0.69",
            True,
            "1.6 / scale = 5.3 rounds to 5, which the ruler lacks; the clamp keeps 3, and 3 x scale = 0.91.",
        ),
        (
            "about 1.52: it rounds to tick 5",
            False,
            "Tempting because rounding alone would give 5; but the ruler has no tick 5, and the clamp runs after the "
            "rounding.",
        ),
        (
            "1.6 itself: a value beyond the ruler is kept aside at full precision",
            False,
            "Tempting because some schemes do keep outliers aside in 16 bits; but this ruler has only its codes, "
            "and the clamp silently picks the last one.",
        ),
        (
            "-0.91: the code wraps around to the other end",
            False,
            "Tempting if you know integer overflow; quantizers clamp (saturate), they do not wrap.",
        ),
    ),
    "asymmetric_tick": choice(
        "Seven GELU-like values from -0.17 to 2.0, at 4 bits. The asymmetric ruler's tick, against the "
        "restricted symmetric ruler's, is...",
        (
            "About half as wide: its steps cover only -0.17 to 2.0",
            True,
            "2.17 / 15 = 0.145 against 2.0 / 7 = 0.286: about half, because the symmetric ruler's negative codes "
            "cover down to -2.0, where the values barely go.",
        ),
        (
            "The same: both rulers have 4 bits",
            False,
            "Tempting, since the bits set the number of codes; but the tick is the range over the steps, and the "
            "two rulers cut different ranges into different numbers of steps.",
        ),
        (
            "Wider: the zero point takes codes away from the values",
            False,
            "Tempting, but the zero point is stored beside the codes, not in them: all 16 codes still cover the "
            "data, and the asymmetric range, 2.17, is much shorter than symmetric's 4.0.",
        ),
    ),
}

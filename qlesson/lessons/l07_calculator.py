"""Lesson 07 · Calculator: the predictions, the recall questions and the exercise tasks.

Source: ``notebooks/07_calculator.py``; the exercise ``exercises/solutions/07_calculator.py``.
"""

from __future__ import annotations

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import LESSON, Numeric, Question, choice
from qlesson.lessons._shared import qmax

PREDICT = {
    "quiet": choice(
        "The example's four channels, one symmetric 4-bit ruler for all of them (fit to 1.70, codes -7 to 7): "
        "how many of channel 3's five values (0.03, 0.08, -0.02, 0.11, -0.06) get a nonzero code?",
        (
            "None: all five round to 0, and the channel is erased",
            True,
            "A shared tick is 1.70 / 7, about 0.24; half of it, 0.12, is more than channel 3's largest |value|, "
            "0.11, so every value lies nearer 0 than the first tick. Its own ruler, fit to 0.11, gives them codes "
            "2, 5, -1, 7 and -4.",
        ),
        (
            "One: 0.11, the largest, gets code 1",
            False,
            "It tempts because a fitted ruler gives the largest value the top code. But this ruler is fit to the "
            "tensor's 1.70, not to channel 3: 0.11 is less than half a tick (0.12) from 0, so it rounds to 0.",
        ),
        (
            "All five: rounding keeps a value's sign, so each gets at least code 1 or -1",
            False,
            "It tempts because no value is exactly 0. But rounding goes to the nearest tick, and for all five "
            "that tick is 0: half a tick, 0.12, is more than 0.11.",
        ),
        (
            "Two: 0.08 and 0.11, the largest",
            False,
            "It tempts because those two are clearly larger than the rest. But the cut between code 0 and code 1 "
            "is half a tick, 1.70 / 7 / 2, about 0.12, and all five are below it.",
        ),
    ),
    "gelu": choice(
        "64 post-GELU values (from -0.17 up to 1.91), one symmetric 4-bit ruler with codes -7 to 7: how many "
        "of those 15 codes can some number between the row's lowest and highest value round to?",
        (
            "All 15: the ruler is fitted to this row",
            False,
            "It tempts because the scale is computed from the data. But symmetric fits only the largest "
            "|value|, 1.91, and mirrors it to -1.91, where no value lies.",
        ),
        (
            "8: codes 0 to 7, because the row is nearly one-sided",
            False,
            "It tempts because the row is nearly one-sided. But a tick is 1.91 / 7, about 0.27, and -0.17 is "
            "more than half a tick below 0, so it rounds to code -1.",
        ),
        (
            "9: codes -1 to 7",
            True,
            "A tick is 1.91 / 7, about 0.27; -0.17 is about -0.6 ticks and rounds to -1. Codes -7 to -2 stay "
            "out of reach: 6 of the 15. Asymmetric spends all 16 of its codes on [-0.17, 1.91].",
        ),
        (
            "About 12: GELU's negative dip uses most of the negative codes",
            False,
            "It tempts because GELU does go below 0. But its dip ends at -0.17, less than one tick, while "
            "the ruler's negative side reaches -1.91.",
        ),
    ),
}

RECALL: tuple[Question, ...] = (
    Numeric(
        "The example has 4 channels. With symmetric rulers, how many metadata bytes does per-channel store "
        "(fp32 scales)?",
        16,
        "4 scales x 4 bytes; a symmetric ruler's zero point is fixed, so none is stored.",
        tol=0.01,
        mistakes=(
            (32, "that also counts an int32 zero point per channel; a symmetric ruler stores none"),
            (4, "that is per-tensor: one scale for the whole tensor"),
            (8, "that is one scale and one zero point: per-tensor, asymmetric"),
        ),
        source=LESSON,
    ),
    choice(
        "A ReLU row (all values >= 0, max 3.0) goes to signed int8. What does asymmetric buy over symmetric?",
        (
            "A tick about half as wide: symmetric's negative codes are out of the row's reach",
            True,
            "Symmetric spans [-3, 3] with 255 codes; asymmetric spans [0, 3] with 256.",
        ),
        (
            "Nothing: there are no negative values to clip",
            False,
            "It tempts because nothing is clipped either way. The loss is resolution: half of symmetric's "
            "codes cover values that never occur.",
        ),
        (
            "An exact 0.0, which symmetric cannot store",
            False,
            "It tempts because zero points are said to store 0 exactly. Symmetric stores 0.0 exactly too, as code 0.",
        ),
        source=LESSON,
    ),
    Numeric(
        "Symmetric: a tensor's largest |value| is 2.4, a channel's is 0.3. How many times finer is its own ruler?",
        8,
        "Each symmetric scale is its absmax / qmax, so the ratio of the scales is 2.4 / 0.3 = 8, at any bit width.",
        tol=0.01,
        mistakes=(
            (0.125, "that is the shared ruler's tick over the channel's: inverted"),
            (2.1, "that is the difference of the two magnitudes; the scales are in their ratio"),
            (1, "that would be the channel that holds the tensor's largest |value|; this one is quieter"),
        ),
        source=LESSON,
    ),
    choice(
        "Lesson 01: why does an asymmetric ruler's range always include 0?",
        (
            "So the zero point is a code inside the range and 0.0 is stored exactly",
            True,
            "The zero point is the code that 0.0 maps to; if 0 were outside the range, that code would be "
            "outside the codes.",
        ),
        (
            "So that negative values are not clipped",
            False,
            "It tempts because widening looks like making room. But for all-positive data there is nothing "
            "negative to clip; the range reaches 0 only so that 0.0 has a code.",
        ),
        (
            "Because symmetric quantization requires it",
            False,
            "It tempts because symmetric rulers are centred on 0. They have zero point 0 already; the "
            "widening is for asymmetric ones.",
        ),
    ),
    Numeric(
        "Lesson 04: how many bytes of codes does one channel of 1536 values take at 4 bits?",
        768,
        "Two 4-bit codes share a byte: 1536 / 2.",
        tol=0.01,
        mistakes=(
            (1536, "one byte per value; 4-bit codes are packed two to a byte"),
            (6144, "that is the number of bits, 1536 x 4"),
        ),
    ),
)


EXERCISE_RECALL: tuple[Question, ...] = (
    Numeric(
        "A tensor has 6 channels. Asymmetric rulers: how many metadata bytes does per-channel store (fp32, int32)?",
        48,
        "6 rulers x (4-byte scale + 4-byte zero point).",
        tol=0.01,
        mistakes=(
            (24, "that counts the scales only; an asymmetric ruler also stores its int32 zero point"),
            (8, "that is per-tensor: one scale and one zero point for the whole tensor"),
            (30, "that gives the zero point 1 byte; this calculator stores it as int32, 4 bytes"),
        ),
        source=LESSON,
    ),
    Numeric(
        "Symmetric: a tensor's largest |value| is 2.4; a channel's own ruler is 6 times finer. Its largest |value|?",
        0.4,
        "The scales' ratio is the absmaxes' ratio: 2.4 / absmax = 6, so absmax = 2.4 / 6 = 0.4.",
        tol=0.01,
        mistakes=(
            (14.4, "that multiplies; a finer ruler belongs to a quieter channel, so divide"),
            (2.4, "that is the channel holding the tensor's largest |value|, whose ruler is not finer"),
        ),
        source=LESSON,
    ),
    Numeric(
        "Lesson 04: Q4_0 stores one fp16 scale per block of 32 4-bit codes. Bits per weight, the scale included?",
        4.5,
        "4 bits of code, plus a 16-bit scale shared by 32 weights: 4 + 16 / 32 = 4.5.",
        tol=0.01,
        mistakes=(
            (4, "that leaves out the scale; it is small per weight but not zero"),
            (5, "that counts an fp32 scale, this calculator's convention; Q4_0 stores an fp16 one"),
            (20, "that gives every weight its own 16-bit scale; one scale serves a block of 32"),
        ),
    ),
)


def _finer_by(w: torch.Tensor) -> torch.Tensor:
    """Symmetric: the tensor's largest |value| over each channel's (the lesson's rule)."""
    return w.abs().max() / w.abs().amax(dim=1)


def _widened(lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    """The width of the range [lo, hi] widened to include 0: what an asymmetric ruler spans."""
    return hi.clamp(min=0) - lo.clamp(max=0)


def _finer_by_asym(w: torch.Tensor) -> torch.Tensor:
    """Asymmetric: both rulers have the same codes, so the ratio of the scales is that of the widened ranges."""
    return _widened(w.min(), w.max()) / _widened(w.amin(dim=1), w.amax(dim=1))


def _unreachable_codes(row: torch.Tensor, bits: int) -> int:
    scale = row.abs().max() / qmax(bits)
    lo, hi = int(torch.round(row.min() / scale)), int(torch.round(row.max() / scale))
    return 2 * qmax(bits) + 1 - (hi - lo + 1)


def _row(seed: int, n: int, act: str) -> torch.Tensor:
    x = torch.randn(n, generator=torch.Generator().manual_seed(seed))
    y = {"silu": torch.nn.functional.silu, "relu": torch.relu, "gelu": torch.nn.functional.gelu}[act](x)
    return torch.round(y * 100) / 100


def _metadata_share(rows: int, cols: int, bits: int, symmetric: bool) -> float:
    meta = rows * (4 if symmetric else 8)
    return meta / (meta + rows * cols * bits / 8)


_W = torch.tensor(
    [
        [0.40, -0.10, 0.25, -0.30, 0.05, 0.12],
        [-2.40, -1.10, -0.70, -1.90, -0.20, -0.90],  # the tensor's largest |value| is negative
        [0.02, -0.06, 0.04, 0.01, -0.03, 0.05],
    ]
)
_EXAMPLE = torch.tensor(  # the lesson's four channels
    [
        [0.12, -0.33, 0.48, -0.05, 0.91],
        [1.20, 0.95, 1.44, 1.10, 0.88],
        [-1.70, -1.22, -0.94, -1.43, -1.11],
        [0.03, 0.08, -0.02, 0.11, -0.06],
    ]
)
_SPANS = torch.tensor(  # row 1 spans the tensor's whole range: it alone gains nothing
    [[0.30, 0.10, 0.90, 0.40], [-0.80, 0.20, 1.60, 0.05], [-0.20, -0.70, -0.10, -0.40], [0.60, 1.20, 0.80, 1.00]]
)
_TIED = torch.tensor([[1.5, -0.2, 0.3, 0.9], [-1.5, 0.7, 0.1, -0.4], [0.6, 0.2, -0.3, 0.1]])
_SPREAD = torch.randn(6, 32, generator=torch.Generator().manual_seed(7)) * torch.logspace(0, -2, 6)[:, None]

TASKS: list[Task] = [
    Task(
        "07.finer_by",
        "how much finer each channel's own ruler is with zero points",
        _finer_by_asym,
        [
            Case((_W,), "[3, 6], row 1 all negative"),
            Case((_SPREAD,), "[6, 32], rows from loud to 100 times quieter"),
            Case((_EXAMPLE,), "the lesson's four channels, asymmetric", hidden=True),
            Case((_SPANS,), "[4, 4]: one row spans the tensor's range", hidden=True),
            Case((_SPREAD.abs()[:, :7] + 0.5,), "[6, 7], every value positive", hidden=True),
            Case((-_SPREAD[:, :5],), "[6, 5], signs flipped", hidden=True),
        ],
        "an asymmetric ruler is set by the range it must cover, not by a magnitude; which range exactly (lesson 01)? "
        "Both rulers have the same codes",
        [
            Mistake("used the largest |value|, the symmetric rule; an asymmetric ruler is set by a range", _finer_by),
            Mistake(
                "used each range as it is; an asymmetric ruler's range is widened to include 0",
                lambda w: (w.max() - w.min()) / (w.amax(dim=1) - w.amin(dim=1)),
            ),
            Mistake("inverted: the channel's scale over the shared one", lambda w: 1 / _finer_by_asym(w)),
            Mistake(
                "reduced over the wrong axis (one number per column)",
                lambda w: _widened(w.min(), w.max()) / _widened(w.amin(dim=0), w.amax(dim=0)),
            ),
            Mistake(
                "widened each channel's range to include 0 but not the tensor's; the shared ruler spans the tensor's "
                "range widened to include 0 too",
                lambda w: (w.max() - w.min()) / _widened(w.amin(dim=1), w.amax(dim=1)),
            ),
            Mistake(
                "widened the tensor's range to include 0 but not each channel's; a channel's own ruler spans its "
                "range widened to include 0 too",
                lambda w: _widened(w.min(), w.max()) / (w.amax(dim=1) - w.amin(dim=1)),
            ),
            Mistake(
                "compared the largest values only; a range has a bottom too",
                lambda w: w.max().clamp(min=0) / w.amax(dim=1).clamp(min=0),
            ),
        ],
    ),
    Task(
        "07.unreachable_codes",
        "the symmetric codes a row cannot reach",
        _unreachable_codes,
        [
            Case((_row(1, 64, "silu"), 4), "64 SiLU outputs, 4 bits"),
            Case((torch.tensor([-1.0, 0.3, 0.9, -0.4]), 3), "both signs, 3 bits"),
            Case((_row(2, 48, "relu"), 8), "48 ReLU outputs (all >= 0), 8 bits", hidden=True),
            Case((-_row(3, 40, "gelu"), 4), "a negated GELU row: the long side is negative", hidden=True),
            Case((_row(4, 64, "gelu"), 8), "64 GELU outputs, 8 bits", hidden=True),
            Case((_row(5, 32, "silu"), 6), "32 SiLU outputs, 6 bits", hidden=True),
        ],
        "first the ruler (symmetric: its scale comes from the row's largest |value|), then ask which code the "
        "row's most negative and most positive values land on",
        [
            Mistake(
                "assumed every negative code is out of reach when the row is mostly positive",
                lambda r, b: qmax(b),
            ),
            Mistake(
                "counted only the codes below the smallest value (the out-of-reach side can be the top)",
                lambda r, b: int(torch.round(r.min() / (r.abs().max() / qmax(b)))) + qmax(b),
            ),
            Mistake(
                "counted the codes the row's own values use; the span from its smallest to its largest value counts",
                lambda r, b: 2 * qmax(b) + 1 - len(torch.round(r / (r.abs().max() / qmax(b))).unique()),
            ),
            Mistake(
                "one code too many: either counted out of 2**bits codes (the symmetric ruler has 2**bits - 1), "
                "or took the number of codes from the lowest to the highest as their difference, one short",
                lambda r, b: _unreachable_codes(r, b) + 1,
            ),
            Mistake(
                "truncated toward zero instead of rounding",
                lambda r, b: (
                    2 * qmax(b)
                    - int((r.max() / (r.abs().max() / qmax(b))).trunc() - (r.min() / (r.abs().max() / qmax(b))).trunc())
                ),
            ),
        ],
    ),
    Task(
        "07.metadata_share",
        "the share of a layer's bytes that per-channel rulers take",
        _metadata_share,
        [
            Case((4096, 4096, 4, True), "[4096, 4096] int4, symmetric"),
            Case((1536, 384, 8, False), "[1536, 384] int8, asymmetric"),
            Case((10, 6, 8, True), "[10, 6] int8, symmetric: a toy", hidden=True),
            Case((384, 1536, 2, False), "[384, 1536] int2, asymmetric", hidden=True),
            Case((32, 64, 16, True), "[32, 64] 16-bit codes, symmetric", hidden=True),
            Case((100, 792, 4, True), "[100, 792] int4, symmetric: where the rulers reach 1%", hidden=True),
        ],
        "count the bytes of the codes at the given width and the bytes each row's ruler stores in this calculator; "
        "the share is of the whole layer",
        [
            Mistake(
                "stored a zero point for a symmetric ruler too",
                lambda r, c, b, s: 8 * r / (8 * r + r * c * b / 8),
            ),
            Mistake(
                "forgot the asymmetric ruler's zero point",
                lambda r, c, b, s: 4 * r / (4 * r + r * c * b / 8),
            ),
            Mistake(
                "used a real format's 2-byte fp16 scale; this calculator stores an fp32 scale (4 bytes)",
                lambda r, c, b, s: r * (2 if s else 6) / (r * (2 if s else 6) + r * c * b / 8),
            ),
            Mistake(
                "used a real format's 1-byte zero point; this calculator stores an int32 zero point (4 bytes)",
                lambda r, c, b, s: r * (4 if s else 5) / (r * (4 if s else 5) + r * c * b / 8),
            ),
            Mistake(
                "used a real format's fp16 scale and 1-byte zero point; this calculator stores fp32 and int32",
                lambda r, c, b, s: r * (2 if s else 3) / (r * (2 if s else 3) + r * c * b / 8),
            ),
            Mistake("counted one byte per code whatever the bits", lambda r, c, b, s: _metadata_share(r, c, 8, s)),
            Mistake(
                "counted bits, not bytes: a code of b bits takes b/8 bytes",
                lambda r, c, b, s: r * (4 if s else 8) / (r * (4 if s else 8) + r * c * b),
            ),
            Mistake("returned a percent; return a fraction", lambda r, c, b, s: 100 * _metadata_share(r, c, b, s)),
            Mistake(
                "divided by the codes' bytes, not by the whole layer's",
                lambda r, c, b, s: r * (4 if s else 8) / (r * c * b / 8),
            ),
        ],
    ),
]

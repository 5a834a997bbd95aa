"""Lesson 07 · Calculator: the predictions, the recall questions and the exercise tasks.

Source: ``notebooks/07_calculator.py``; the exercise ``exercises/solutions/07_calculator.py``.
"""

from __future__ import annotations

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import LESSON, Numeric, Question, choice
from qlesson.lessons._shared import qmax
from qlesson.quant import PerChannel, PerTensor, fake_quantize

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


def _tanh_quiz_row() -> tuple[float, float, float]:
    """Quiz 1's row: tanh of 64 standard-normal draws. Its lowest and highest value, and how many times a
    zero point lowers its symmetric 4-bit per-tensor MAE."""
    row = torch.round(torch.tanh(torch.randn(64, generator=torch.Generator().manual_seed(10))) * 100) / 100
    mae = [
        float((fake_quantize(row, 4, granularity=PerTensor(), symmetric=sym) - row).abs().mean())
        for sym in (True, False)
    ]
    return float(row.min()), float(row.max()), mae[0] / mae[1]


_TANH_LO, _TANH_HI, _TANH_GAIN = _tanh_quiz_row()

RECALL: tuple[Question, ...] = (
    choice(
        f"A 4-bit row holds tanh of 64 standard-normal draws: {_TANH_LO:.2f} to {_TANH_HI:.2f}, both signs about "
        "equally. What does a zero point buy it, against one symmetric ruler?",
        (
            "About nothing: every symmetric code is already within reach",
            True,
            f"Its lowest value gets code -7 and its highest 7, so no code is out of reach: on this row the zero "
            f"point lowers the MAE only {_TANH_GAIN:.2f} times. Its gain on the GELU row came from codes the "
            "symmetric ruler could not reach.",
        ),
        (
            "About 2 times lower MAE, as on the GELU row",
            False,
            "It tempts because the zero point did that on the GELU row. But there 6 of 15 codes were out of reach; "
            f"this row reaches codes -7 to 7, and the zero point gains {_TANH_GAIN:.2f} times.",
        ),
        (
            "A little worse: the zero point's rounding moves 0.0 off a tick",
            False,
            "It tempts because the zero point is itself rounded. But it is rounded to a whole code, the code 0.0 "
            f"maps to (lesson 01), so 0.0 stays exactly on a tick; on this row the MAE falls {_TANH_GAIN:.2f} times.",
        ),
        source=LESSON,
    ),
    Numeric(
        "One symmetric ruler shared by a tensor whose largest |value| is 2.1. A quiet channel's largest |value| is "
        "0.14. At how many bits, at the fewest, does that value get a nonzero code?",
        5,
        "It needs more than half a tick: 2.1 / (2 x qmax) < 0.14, so qmax > 7.5. At 4 bits (qmax 7) half a tick "
        "is 0.15 and the whole channel rounds to 0; at 5 bits (qmax 15) it is 0.07.",
        tol=0.01,
        mistakes=(
            (6, "that asks for a whole tick below 0.14; rounding gives code 1 to anything past half a tick"),
            (4, "at 4 bits half a tick is 2.1 / 7 / 2 = 0.15, more than 0.14: the value rounds to 0"),
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
            "So that the zero point is 0, as on a symmetric ruler",
            False,
            "It tempts because 0 is the range's anchor. But the zero point is the code 0.0 maps to, "
            "qmin - round(rmin / scale); on an all-positive row it is qmin, not 0. Widening only makes "
            "sure that code is one of the codes.",
        ),
    ),
)


EXERCISE_RECALL: tuple[Question, ...] = (
    choice(
        "6 channels, asymmetric rulers: how many metadata bytes does per-channel store in this course's calculator?",
        ("48", True, "6 rulers x (4-byte fp32 scale + 4-byte int32 zero point)."),
        (
            "24",
            False,
            "It tempts because a scale is what a ruler is fit by. But an asymmetric ruler also stores its int32 "
            "zero point: 6 x (4 + 4).",
        ),
        ("8", False, "It tempts because 4 + 4 is one ruler's cost. But that is per-tensor: per-channel stores 6."),
        (
            "30",
            False,
            "It tempts because many formats store a 1-byte zero point. This calculator stores it as int32, 4 bytes.",
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
    choice(
        "Lesson 04: Q4_0 stores one fp16 scale per block of 32 4-bit codes. Bits per weight, the scale included?",
        ("4.5", True, "4 bits of code, plus a 16-bit scale shared by 32 weights: 4 + 16 / 32 = 4.5."),
        ("4", False, "It tempts because the codes are 4-bit. But the scale is small per weight, not zero."),
        ("5", False, "It tempts because this calculator stores fp32 scales: 4 + 32 / 32. Q4_0 stores an fp16 one."),
        ("20", False, "It tempts because every weight needs a scale. But one 16-bit scale serves a block of 32."),
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


def _ends(row: torch.Tensor, top: int, cut=torch.round) -> tuple[int, int]:
    """The codes the row's lowest and highest value land on, on its own symmetric ruler with top code ``top``."""
    scale = row.abs().max() / top
    return int(cut(row.min() / scale)), int(cut(row.max() / scale))


def _ends_on(row: torch.Tensor, scale: torch.Tensor) -> tuple[int, int]:
    """The codes the row's lowest and highest value land on, on a ruler of tick ``scale``."""
    return int(torch.round(row.min() / scale)), int(torch.round(row.max() / scale))


def _out_of_reach(rows: torch.Tensor, bits: int) -> torch.Tensor:
    """Per row: the codes of its own symmetric ruler beyond its lowest and its highest value's codes."""
    q = qmax(bits)
    return torch.tensor([2 * q + 1 - (hi - lo + 1) for lo, hi in (_ends(row, q) for row in rows)])


def _per_row(fn):
    """A per-row count ``fn(row, bits)`` as the 1-D tensor the task returns."""
    return lambda rows, bits: torch.tensor([fn(row, bits) for row in rows])


def _unused_codes(row: torch.Tensor, bits: int) -> int:
    codes = torch.round(row / (row.abs().max() / qmax(bits)))
    return 2 * qmax(bits) + 1 - len(codes.unique())


def _fractional(row: torch.Tensor, bits: int) -> float:
    scale = row.abs().max() / qmax(bits)
    return float(2 * qmax(bits) - (row.max() - row.min()) / scale)


def _top_as_power(row: torch.Tensor, bits: int) -> int:
    top = 2 ** (bits - 1)
    lo, hi = _ends(row, top)
    return 2 * top + 1 - (hi - lo + 1)


_ACTS = {"silu": torch.nn.functional.silu, "relu": torch.relu, "gelu": torch.nn.functional.gelu, "tanh": torch.tanh}


def _act(seed: int, n: int, act: str) -> torch.Tensor:
    x = torch.randn(n, generator=torch.Generator().manual_seed(seed))
    return torch.round(_ACTS[act](x) * 100) / 100


def _outliers(seed: int, n: int, low: float, k: int) -> torch.Tensor:
    """``n`` positive values, the first ``k`` of them set to ``low``: few values below 0, reaching far."""
    x = torch.randn(n, generator=torch.Generator().manual_seed(seed)).abs()
    x[:k] = low
    return torch.round(x * 100) / 100


def _stack(*rows: torch.Tensor) -> torch.Tensor:
    return torch.stack(rows)


def _errors(w: torch.Tensor, bits: int, err, against_symmetric: bool = False, axis: int = 0) -> tuple[float, float]:
    """``err`` of per-channel symmetric rulers along ``axis``, then of one shared ruler (asymmetric unless
    ``against_symmetric``)."""
    pc = fake_quantize(w, bits, granularity=PerChannel(axis), symmetric=True)
    pt = fake_quantize(w, bits, granularity=PerTensor(), symmetric=against_symmetric)
    return float(err(pc - w)), float(err(pt - w))


def _winner(err, against_symmetric: bool = False, flip: bool = False, axis: int = 0):
    """The choice whose ``err`` is lower, as the task returns it (``flip``: the other one)."""

    def pick(w: torch.Tensor, bits: int) -> str:
        pc, pt = _errors(w, bits, err, against_symmetric, axis)
        return "per-channel" if (pc < pt) != flip else "zero point"

    return pick


def _mae(e: torch.Tensor) -> torch.Tensor:
    return e.abs().mean()


def _row_vote(w: torch.Tensor, bits: int) -> str:
    """A wrong answer: the choice whose per-row MAE is lower on more than half the rows."""
    pc = (fake_quantize(w, bits, granularity=PerChannel(0), symmetric=True) - w).abs().mean(dim=1)
    pt = (fake_quantize(w, bits, granularity=PerTensor(), symmetric=False) - w).abs().mean(dim=1)
    return "per-channel" if 2 * int((pc < pt).sum()) > len(pc) else "zero point"


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
_TICKS = torch.tensor(  # 4 bits, a tick of 0.5: -0.3 is 0.6 ticks below 0, -0.2 is 0.4; 0.8 is 1.6 ticks
    [[-0.3, 0.4, 1.1, 2.0, 2.9, 3.5], [-0.2, 0.5, 1.2, 1.9, 2.6, 3.5], [-3.5, -2.2, -1.0, 0.1, 0.4, 0.8]]
)
_TIED = torch.tensor([[1.5, -0.2, 0.3, 0.9], [-1.5, 0.7, 0.1, -0.4], [0.6, 0.2, -0.3, 0.1]])
_SPREAD = torch.randn(6, 32, generator=torch.Generator().manual_seed(7)) * torch.logspace(0, -2, 6)[:, None]
_LOUD_ROW = (
    torch.rand(6, 32, generator=torch.Generator().manual_seed(9))
    * torch.tensor([1, 0.3, 0.1, 0.03, 0.01, 0.003])[:, None]
)
_LOUD_ROW[0] = 0.8 + 0.2 * torch.rand(32, generator=torch.Generator().manual_seed(10))  # loud in every column
_GELUS = _stack(_act(61, 64, "gelu"), _act(62, 64, "gelu"), _act(63, 64, "gelu"))


def _silu_pair() -> tuple[torch.Tensor, torch.Tensor]:
    """Task 3's two new tensors: four SiLU rows about equally loud, and four SiLU rows each about 3 times
    quieter than the last (the exercise builds them the same way)."""
    g = torch.Generator().manual_seed(11)
    similar = torch.nn.functional.silu(torch.randn(4, 64, generator=g))
    quieter = torch.tensor([1, 0.3, 0.1, 0.03])[:, None]
    loud_to_quiet = torch.nn.functional.silu(torch.randn(4, 64, generator=g)) * quieter
    return similar, loud_to_quiet


def _predicted_winners(pick=None) -> tuple[str, str]:
    pick = pick or _winner(_mae)
    return tuple(pick(w, 4) for w in _silu_pair())  # type: ignore[return-value]


_PREDICTION_HINT = (
    "for each tensor, ask how much error each row carries under one shared ruler and how much its own "
    "symmetric ruler would take off; and how many codes a symmetric ruler leaves out of reach on rows that "
    "barely go below 0"
)


def _one_winner(answer: object) -> str | None:
    """None when ``answer`` is 'per-channel' or 'zero point'; else how to write it."""
    if answer in ("per-channel", "zero point"):
        return None
    return f"return exactly 'per-channel' or 'zero point' (yours returned {answer!r})"


def _pair_of_winners(answer: object) -> str | None:
    """None when ``answer`` is a pair of winners spelt as the task asks; else how to write it.

    >>> _pair_of_winners(("per-channel", "zero point")) is None, _pair_of_winners("per-channel")[:13]
    (True, 'give a pair o')
    """
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2 and all(isinstance(a, str) for a in answer)):
        return "give a pair of two strings: (winner on the similar rows, winner on the loud-to-quiet rows)"
    if any(a not in ("per-channel", "zero point") for a in answer):
        return f"spell each winner exactly 'per-channel' or 'zero point' (you gave {tuple(answer)!r})"
    return None


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
            Mistake(
                "rounded the ratio; how many times finer need not be a whole number",
                lambda w: _finer_by_asym(w).round(),
            ),
        ],
        minutes=6,
    ),
    Task(
        "07.out_of_reach",
        "how many codes each row leaves its own symmetric ruler out of reach",
        _out_of_reach,
        [
            Case(
                (_stack(_act(11, 64, "gelu"), _outliers(12, 64, -1.0, 3), _act(13, 64, "tanh")), 4),
                "4 bits: row 0 GELU (30 of 64 below 0), row 1 three values at -1.0 and the rest positive, row 2 tanh",
            ),
            Case((_TICKS, 4), "4 bits, a tick of 0.5: lowest values -0.3 and -0.2, then a row whose highest is 0.8"),
            Case(
                (_stack(_act(21, 48, "tanh"), _outliers(23, 48, -0.9, 2), _act(22, 48, "silu")), 8),
                "8 bits: row 0 tanh, row 1 two values at -0.9 and the rest positive, row 2 SiLU",
            ),
            Case(
                (_stack(_act(32, 40, "tanh"), _outliers(33, 40, -1.2, 3), -_act(31, 40, "relu")), 4),
                "4 bits: tanh, three values at -1.2, a negated ReLU row",
                hidden=True,
            ),
            Case(
                (_stack(_outliers(41, 32, -0.6, 4), -_act(42, 32, "gelu"), _act(43, 32, "tanh")), 6),
                "6 bits: four values at -0.6, a negated GELU row, tanh",
                hidden=True,
            ),
            Case(
                (_stack(_act(52, 64, "tanh"), _act(51, 64, "relu"), _outliers(53, 64, -0.5, 6)), 3),
                "3 bits: tanh, ReLU, six values at -0.5",
                hidden=True,
            ),
        ],
        "for each row, on its own symmetric ruler: which codes do its lowest and its highest value land on, and how "
        "many codes lie beyond them?",
        [
            Mistake(
                "truncated toward 0 instead of rounding: a value 0.6 ticks below 0 lands on code -1, not 0",
                _per_row(lambda row, b: 2 * qmax(b) - (lambda e: e[1] - e[0])(_ends(row, qmax(b), torch.trunc))),
            ),
            Mistake(
                "rounded down (floor), not to the nearest code: a value 0.4 ticks below 0 rounds to code 0, not -1",
                _per_row(lambda row, b: 2 * qmax(b) - (lambda e: e[1] - e[0])(_ends(row, qmax(b), torch.floor))),
            ),
            Mistake(
                "counted fractional ticks; a value lands on the whole code it rounds to",
                _per_row(_fractional),
            ),
            Mistake(
                "used 2**(bits-1) as the top code; a symmetric ruler's codes stop one short of it, at 2**(bits-1) - 1",
                _per_row(_top_as_power),
            ),
            Mistake(
                "one too many: the codes from the lowest value's to the highest's include both ends, and a symmetric "
                "ruler has one code fewer than 2**bits",
                lambda r, b: _out_of_reach(r, b) + 1,
            ),
            Mistake(
                "counted the codes no value uses; every code from the lowest value's to the highest's is within reach",
                _per_row(_unused_codes),
            ),
            Mistake(
                "counted only the codes below the lowest value's; on a row whose largest |value| is negative, the "
                "codes out of reach are at the top",
                _per_row(lambda row, b: qmax(b) + _ends(row, qmax(b))[0]),
            ),
            Mistake(
                "used one ruler for all rows, fit to the whole tensor; each row has its own symmetric ruler",
                lambda r, b: torch.tensor(
                    [2 * qmax(b) - (hi - lo) for lo, hi in (_ends_on(row, r.abs().max() / qmax(b)) for row in r)]
                ),
            ),
            Mistake(
                "rounded up (ceil), not to the nearest code: a value 0.6 ticks below 0 lands on code -1, not 0",
                _per_row(lambda row, b: 2 * qmax(b) - (lambda e: e[1] - e[0])(_ends(row, qmax(b), torch.ceil))),
            ),
            Mistake(
                "one too few: a symmetric ruler has 2**bits - 1 codes, from -(2**(bits-1) - 1) to 2**(bits-1) - 1 "
                "with 0 among them",
                lambda r, b: _out_of_reach(r, b) - 1,
            ),
            Mistake(
                "returned the codes within reach; the task asks for those out of reach",
                _per_row(lambda row, b: (lambda e: e[1] - e[0] + 1)(_ends(row, qmax(b)))),
            ),
        ],
        minutes=5,
    ),
    Task(
        "07.lower_error_prediction",
        "predict the winner on two new SiLU tensors",
        _predicted_winners,
        [Case((), "(winner on the similar rows, winner on the loud-to-quiet rows) at 4 bits")],
        _PREDICTION_HINT,
        [],  # four possible answers: any named mistake would give the right one away
        is_value=True,
        form=_pair_of_winners,  # a misspelt winner is told so, not given the hint for a wrong idea
        shows_expected=False,
        minutes=4,
    ),
    Task(
        "07.lower_error",
        "which lowers a tensor's MAE more: per-channel symmetric rulers or one shared ruler with a zero point",
        _winner(_mae),
        [
            Case((_GELUS, 4), "4 bits: three GELU rows of 64 values"),
            Case((_SPREAD, 4), "4 bits: [6, 32], rows from loud to 100 times quieter"),
            Case((_EXAMPLE, 8), "8 bits: the lesson's four channels", hidden=True),
            Case((_stack(*(_act(71 + i, 48, "relu") for i in range(4))), 8), "8 bits: four ReLU rows", hidden=True),
            Case(
                (_GELUS * torch.tensor([[1.0], [0.1], [1.0]]), 4),
                "4 bits: GELU rows, one 10 times quieter",
                hidden=True,
            ),
            Case(
                (torch.stack([_act(100 + i, 32, "gelu") for i in range(6)]) * torch.logspace(0, -1, 6)[:, None], 4),
                "4 bits: six GELU rows, from loud to 10 times quieter",
                hidden=True,
            ),
            Case((_W, 4), "4 bits: [3, 6], row 1 all negative", hidden=True),
            Case(
                (_LOUD_ROW, 4),
                "4 bits: [6, 32] all positive, row 0 near 1 in every column, the other rows 0.3 down to 0.003 at most",
                hidden=True,
            ),
            Case(
                (
                    torch.stack([_act(312 + i, 64, "gelu") for i in range(4)])
                    * torch.tensor([1, 0.4, 0.4, 0.4])[:, None],
                    4,
                ),
                "4 bits: four GELU rows, the last three scaled by 0.4",
                hidden=True,
            ),
        ],
        "measure both: quantize and dequantize the tensor each way, and compare the mean absolute errors",
        [
            Mistake("returned the other one; the answer is the choice whose MAE is lower", _winner(_mae, flip=True)),
            Mistake(
                "gave each column its own ruler (PerChannel(1)); a channel is a row of w, PerChannel(0)",
                _winner(_mae, axis=1),
            ),
            Mistake(
                "answered per-channel on every case, as comparing per-channel with a shared symmetric ruler does (or "
                "per-channel rulers with zero points too): the other choice is one shared ruler with a zero point",
                _winner(_mae, against_symmetric=True),
            ),
            Mistake(
                "compared the largest errors; the task asks for the mean absolute error",
                _winner(lambda e: e.abs().max()),
            ),
            Mistake(
                "compared RMSE; the task asks for the mean absolute error", _winner(lambda e: e.pow(2).mean().sqrt())
            ),
            Mistake("compared per-row MAEs (a vote or a median); the task compares the whole tensor's MAE", _row_vote),
        ],
        form=_one_winner,
        minutes=5,
    ),
]

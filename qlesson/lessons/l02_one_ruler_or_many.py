"""Lesson 02 · One ruler or many: the exercise tasks and the recall questions.

Sources: ``notebooks/02_one_ruler_or_many.py`` (the lesson) and
``exercises/solutions/02_one_ruler_or_many.py`` (the exercise, with solutions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import INTERVIEW, LESSON, Numeric, Question, choice
from qlesson.lessons._shared import TWO, codes, qmax, weights, with_zero_row

_G = torch.Generator().manual_seed(1234 + 2)


def _w(*shape: int, spread: bool = True) -> torch.Tensor:
    return weights(_G, *shape, spread=spread)


def _per_channel_scale(w: torch.Tensor, bits: int) -> torch.Tensor:
    return w.abs().amax(dim=1) / qmax(bits)


def _quantize_per_channel(w: torch.Tensor, bits: int, rnd: Callable = torch.round) -> tuple[torch.Tensor, torch.Tensor]:
    s = _per_channel_scale(w, bits)
    return torch.clamp(rnd(codes(w, s[:, None])), -qmax(bits), qmax(bits)), s


def _per_tensor(w: torch.Tensor, bits: int, divisor: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    s = w.abs().max() / (divisor or qmax(bits))
    return torch.clamp(torch.round(codes(w, s)), -qmax(bits), qmax(bits)), s


def _half_away_per_channel(w: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    s = _per_channel_scale(w, bits)
    c = codes(w, s[:, None])
    return torch.clamp(torch.sign(c) * torch.floor(c.abs() + 0.5), -qmax(bits), qmax(bits)), s


def _row_maes(w: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    q_t, s_t = _per_tensor(w, bits)
    q, s = _quantize_per_channel(w, bits)
    return (q_t * s_t - w).abs().mean(1), (q * s[:, None] - w).abs().mean(1)


def _row_maes_by_column(w: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    q_t, s_t = _per_tensor(w, bits)
    s = w.abs().amax(dim=0, keepdim=True) / qmax(bits)
    q = torch.clamp(torch.round(codes(w, s)), -qmax(bits), qmax(bits))
    return (q_t * s_t - w).abs().mean(1), (q * s - w).abs().mean(1)


def _rescued(w: torch.Tensor, bits: int, divisor: float | None = None, half_up: bool = False) -> torch.Tensor:
    s = w.abs().max() / (divisor or qmax(bits))
    x = codes(w, s)
    q = torch.floor(x.abs() + 0.5) if half_up else torch.round(x)
    return ((q == 0).all(dim=1) & (w != 0).any(dim=1)).long()  # 1 = rescued (a bool tensor is as good)


def _rescued_signed_max(w: torch.Tensor, bits: int) -> torch.Tensor:
    erased = (torch.round(codes(w, w.max() / qmax(bits))) == 0).all(dim=1)
    return (erased & (w != 0).any(dim=1)).long()


def _rescued_by_column(w: torch.Tensor, bits: int) -> torch.Tensor:
    erased = (torch.round(codes(w, w.abs().max() / qmax(bits))) == 0).all(dim=1)
    own = w.abs().amax(dim=0, keepdim=True) / qmax(bits)
    return (erased & ~(torch.round(codes(w, own)) == 0).all(dim=1)).long()


_EDGES = torch.tensor(
    [
        [7.0, -3.0, 2.0, 1.0],
        [0.5, -0.5, 0.2, 0.0],
        [0.6, 0.1, 0.0, -0.2],
        [0.0, 0.0, 0.0, 0.0],
        [0.9, -0.3, 0.1, 0.4],
        [0.45, -0.1, 0.0, 0.2],
        [0.6, -0.6, 0.0, 0.0],
    ]
)  # int4, shared scale 1: a tie at 0.5, rows past half a tick but below one tick, a dead row, codes that cancel
_ONE_LOUD = weights(torch.Generator().manual_seed(202), 6, 5) * torch.tensor(
    [[1.0], [30.0], [1.0], [1.0], [1.0], [1.0]]
)
_NEG_W = -_w(4, 3).abs()  # a negative-only weight
_BASE = torch.randn(8, 64, generator=torch.Generator().manual_seed(5))
_ABSMAX = torch.where(torch.arange(8) == 0, 1.0, 1.1 * 0.5 ** torch.arange(8.0))  # 1, then 1.1 x 0.5**i
_LAYER = _BASE / _BASE.abs().amax(1, keepdim=True) * _ABSMAX[:, None]


def _erased_rows(divisor: Callable[[int], float]) -> tuple[list[int], ...]:
    """The rows of ``_LAYER`` erased at int3, int4 and int8 when the shared scale is absmax / divisor(bits)."""
    return tuple(_rescued(_LAYER, b, divisor=divisor(b)).nonzero().flatten().tolist() for b in (3, 4, 8))


def _near_loud(seed: int, rows: int, cols: int) -> torch.Tensor:
    """Rows whose absmax is 0.6 to 1 times the loudest's, values to 0.01: some lose with their own scale."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, cols, generator=g)
    w = w / w.abs().amax(1, keepdim=True) * (0.6 + 0.4 * torch.rand(rows, 1, generator=g))
    return (w * 100).round() / 100


def _worse(w: torch.Tensor, bits: int, err: Callable = lambda e: e.abs().mean(1), axis: int = 1) -> torch.Tensor:
    """1 where a row's error under its own scale is larger than under the shared one."""
    q_t, s_t = _per_tensor(w, bits)
    s = w.abs().amax(dim=axis, keepdim=True) / qmax(bits)
    q = torch.clamp(torch.round(codes(w, s)), -qmax(bits), qmax(bits))
    return (err(q * s - w) > err(q_t * s_t - w)).long()  # 1 = worse with its own scale (a bool tensor is as good)


_ERASED_MISTAKES = (
    Mistake(
        "called a row erased when its largest value is below one shared tick (as trunc or int() does); just past "
        "half a tick it rounds to +-1 (exactly half rounds to the even code, 0)",
        lambda: tuple((_LAYER.abs().amax(1) < 1 / qmax(b)).nonzero().flatten().tolist() for b in (3, 4, 8)),
    ),
    Mistake(
        "divided by 2**(bits-1) instead of 2**(bits-1) - 1; the symmetric ruler ends at code 2**(bits-1) - 1",
        lambda: _erased_rows(lambda b: 2 ** (b - 1)),
    ),
    Mistake(
        "numbered the rows from 1; Python numbers them from 0, and the loudest row is row 0",
        lambda: tuple([r + 1 for r in rows] for rows in _erased_rows(qmax)),
    ),
    Mistake(
        "used 2**bits - 1 steps, the unsigned range; a symmetric ruler has 2**(bits-1) - 1 on each side of 0",
        lambda: _erased_rows(lambda b: 2**b - 1),
    ),
)


def _judge_erased(answer: Any) -> str | None:
    """None when the three lists of erased rows are right (in any order; () for none); else a named mistake,
    or which of the three lists is off, without its rows."""
    shape = "give a tuple of three lists of row indices: (rows at int3, rows at int4, rows at int8)"
    try:
        given = tuple(sorted(int(r) for r in part) for part in answer)
    except (TypeError, ValueError):
        return shape
    if len(given) != 3:
        return shape
    for m in _ERASED_MISTAKES:
        if given == tuple(sorted(part) for part in m.fn()):
            return m.description
    names = ("int3", "int4", "int8")
    off = [n for n, g, r in zip(names, given, _erased_rows(qmax), strict=True) if g != r]
    if not off:
        return None
    if len(off) == 3:
        return "all three of your lists are off"
    right = [n for n in names if n not in off]
    said = f"your {' and '.join(off)} list{'s are' if len(off) > 1 else ' is'} off"
    return f"{said}; your {' and '.join(right)} list{'s are' if len(right) > 1 else ' is'} right"


_NEW_ROWS = torch.tensor(
    [
        [7.0, -4.0, 2.0, 1.0],
        [6.0, 2.0, -4.0, 4.0],
        [6.0, 2.5, -1.5, 4.0],
        [0.4, -0.3, 0.2, 0.1],
        [1.0, -1.0, 0.0, 1.0],
        [5.0, 4.0, 1.0, -3.0],
    ]
)  # int4, row 0 sets the shared scale to 1: rows on the whole numbers lose unless they sit on their own ticks too


def _worse_listed() -> list[int]:
    return _worse(_NEW_ROWS, 4).nonzero().flatten().tolist()


_WORSE_MISTAKES = (
    (
        [],
        "none: but a finer ruler shrinks only the bound, half a tick; a row whose values sat on the shared ticks had "
        "no error to lose",
    ),
    (
        [0, 1, 4, 5],
        "you also listed rows whose error does not change: a row that sets the shared scale keeps its codes, and a "
        "row whose values sit on its own ticks keeps an error of 0; worse means strictly larger",
    ),
    ([1, 4, 5], "one row you listed keeps an error of 0 under both rulers (its values sit on its own ticks too)"),
    ([0, 1, 5], "one row you listed sets the shared scale, so its own scale is the same and its codes do not change"),
    ([2, 3], "every row you listed gets better with its own scale; the task asks which get worse"),
    ([3], "the row you listed is the quiet row the shared scale erases: its own scale helps it most"),
    (
        [1, 2, 5],
        "one row you listed has values half-way between shared ticks, so the shared ruler already costs it much; "
        "compare that with its own ruler's error",
    ),
)


def _is_mask(answer: Any) -> bool:
    """True when the answer looks like one True/False (or 1/0) entry per row rather than a list of row indices."""
    if isinstance(answer, torch.Tensor) and answer.dtype == torch.bool:
        return True
    try:
        given = answer.tolist() if hasattr(answer, "tolist") else list(answer)
    except TypeError:
        return False
    if any(isinstance(v, bool) for v in given):
        return True
    return len(given) == len(_NEW_ROWS) and all(v in (0, 1) for v in given)


def _judge_worse(answer: Any) -> str | None:
    """None when the list of rows that lose is right (in any order); else a named mistake, or how many rows are off."""
    if _is_mask(answer):
        return "give the row indices (a list such as [0, 4]), not a True/False mask with one entry per row"
    try:
        given = sorted({int(r) for r in answer})
    except (TypeError, ValueError):
        return "give a list of row indices, [] for none"
    for wrong, why in _WORSE_MISTAKES:
        if given == wrong:
            return why
    right = set(_worse_listed())
    extra, missed = len(set(given) - right), len(right - set(given))
    if not extra and not missed:
        return None
    return (
        f"{extra} of the rows you listed {'does' if extra == 1 else 'do'} not lose; you missed {missed} that "
        f"{'does' if missed == 1 else 'do'} (counts, not row numbers). "
        "Where does each row sit on the two rulers?"
    )


_SECTION_4 = torch.tensor([[3.0, 1.05, -2.0, 2.0], [7.0, -5.0, 1.0, 2.0], [3.0, 1.25, -2.3, 1.8]])

_INDICES = (
    "returned the indices of the erased rows; return one True/1 or False/0 per row (shape [out_features]), not "
    "the row indices"
)

_TIES_AND_ZERO = torch.cat([torch.tensor([[3.0, 0.5, 1.5, -2.5, 0.25]]), torch.zeros(1, 5), _w(2, 5)])

TASKS: list[Task] = [
    Task(
        "02.per_channel_scale",
        "one scale per output channel",
        _per_channel_scale,
        [
            Case((TWO, 4), "int4, the 2x4 example"),
            Case((_w(5, 7), 3), "int3, 5x7 weight"),
            Case((with_zero_row(_w(3, 6)), 8), "int8, row 1 is all zeros (its scale is 0)"),
        ],
        "one scale per output channel, a row of [out, in]: each row's symmetric scale, as lesson 01 computes it "
        "for a whole tensor",
        [
            Mistake(
                "divided by 2**bits - 1, the unsigned range; a symmetric ruler has 2**(bits-1) - 1 steps on each side "
                "of 0",
                lambda w, b: w.abs().amax(1) / (2**b - 1),
            ),
            Mistake("used each row's max instead of its largest |value|", lambda w, b: w.amax(1) / qmax(b)),
            Mistake(
                "used one scale for the whole tensor (per-tensor) where per-channel was asked",
                lambda w, b: w.abs().max() / qmax(b),
            ),
            Mistake(
                "reduced over the wrong axis (one scale per input column)",
                lambda w, b: w.abs().amax(dim=0) / qmax(b),
            ),
            Mistake(
                "kept the reduced dimension (keepdim=True): the axis is right, but return one scale per row as a 1-D "
                "tensor of shape [N]",
                lambda w, b: w.abs().amax(dim=1, keepdim=True) / qmax(b),
            ),
            Mistake("divided by 2**(bits-1) instead of 2**(bits-1) - 1", lambda w, b: w.abs().amax(1) / 2 ** (b - 1)),
            Mistake("divided by 7 whatever the bits (int4 hard-coded)", lambda w, b: w.abs().amax(1) / 7),
            Mistake(
                "gave an all-zero row a scale of 1 (as ql.quantize does, to avoid dividing by 0); this task asks for "
                "the row's own absmax scale, 0",
                lambda w, b: torch.where(w.abs().amax(1) > 0, w.abs().amax(1) / qmax(b), torch.ones(())),
            ),
        ],
        minutes=2,
    ),
    # not in exercise 02 (it is the lesson's own three-line cell); lesson 04's checks use it as the per-channel answer
    Task(
        "02.quantize_per_channel",
        "symmetric per-channel quantization of [N, K]",
        _quantize_per_channel,
        [
            Case((TWO, 4), "int4, the 2x4 example"),
            Case((_w(6, 9), 8), "int8, 6x9 weight"),
            Case((_TIES_AND_ZERO, 3), "int3, row 0 has exact ties (0.5, 1.5, -2.5 at scale 1), row 1 is all zeros"),
        ],
        "return (q, scale): each row gets its own scale, broadcast against its row; an all-zero row has scale 0 and "
        "codes 0",
        [
            Mistake(
                "used per-tensor quantization where per-channel was asked",
                lambda w, b: (lambda q, s: (q, s * torch.ones(w.shape[0])))(*_per_tensor(w, b)),
            ),
            Mistake(
                "used per-tensor quantization where per-channel was asked",
                lambda w, b: _per_tensor(w, b),
            ),
            Mistake(
                "divided by 2**(bits-1) instead of 2**(bits-1) - 1",
                lambda w, b: (
                    torch.clamp(torch.round(codes(w, w.abs().amax(1, keepdim=True) / 2 ** (b - 1))), -qmax(b), qmax(b)),
                    w.abs().amax(1) / 2 ** (b - 1),
                ),
            ),
            Mistake(
                "divided by a zero scale: an all-zero row gives NaN codes (0 / 0); give it codes 0",
                lambda w, b: (
                    torch.clamp(torch.round(w / _per_channel_scale(w, b)[:, None]), -qmax(b), qmax(b)),
                    _per_channel_scale(w, b),
                ),
            ),
            Mistake(
                "rounded halves away from zero (0.5 to 1, -2.5 to -3); torch.round sends a half to the even code",
                _half_away_per_channel,
            ),
            Mistake(
                "truncated toward zero (trunc, or int()) instead of rounding to the nearest code",
                lambda w, b: _quantize_per_channel(w, b, rnd=torch.trunc),
            ),
            Mistake(
                "rounded down (floor) instead of to the nearest code",
                lambda w, b: _quantize_per_channel(w, b, rnd=torch.floor),
            ),
        ],
    ),
    # not in exercise 02 (Task 2 asks which rows lose instead); kept as the checked per-row MAE reference
    Task(
        "02.row_maes",
        "apply now: a shared scale against one per row",
        _row_maes,
        [
            Case((TWO, 4), "int4, quiet and loud rows"),
            Case((torch.tensor([[0.01, -0.02, 0.03], [5.0, -4.0, 2.0]]), 8), "int8, your own pair"),
            Case((_w(5, 6), 3), "int3, 5x6 weight"),
        ],
        "return two per-row mean |error| tensors: one after fake-quantizing with the one shared scale, one with "
        "per-row scales",
        [
            Mistake("returned the two results in the wrong order (per-row first)", lambda w, b: _row_maes(w, b)[::-1]),
            Mistake(
                "took the mean over the whole tensor instead of per row",
                lambda w, b: tuple(m.mean() * torch.ones(w.shape[0]) for m in _row_maes(w, b)),
            ),
            Mistake("used int4 whatever the bits (4 hard-coded)", lambda w, b: _row_maes(w, 4)),
            Mistake(
                "gave each input column its own scale (reduced over the rows, axis 0); a row's scale comes from "
                "that row",
                lambda w, b: _row_maes_by_column(w, b),
            ),
        ],
    ),
    # not in exercise 02 (its Task 2 predicts the rows instead); kept as the checked reference for which rows lose
    Task(
        "02.worse_rows",
        "which rows lose with their own ruler?",
        _worse,
        [
            Case((_SECTION_4, 4), "int4, the lesson's section 4 rows"),
            Case((_near_loud(10, 6, 8), 3), "int3, 6x8 weight, every row at least 0.6 of the loudest"),
            Case((_near_loud(29, 6, 8), 3), "int3, 6x8 weight", hidden=True),
            Case((_near_loud(5, 8, 16), 8), "int8, 8x16 weight", hidden=True),
            Case((_near_loud(35, 8, 16), 8), "int8, 8x16 weight", hidden=True),
        ],
        "compare each row's mean absolute error under the one shared scale with its mean absolute error under its "
        "own scale; the row that sets the shared scale keeps exactly the same codes",
        [
            Mistake(
                "counted a row whose error did not change (the loudest row, which sets the shared scale) as worse; "
                "worse means strictly larger",
                lambda w, b: (lambda s, o: (o >= s).long())(*_row_maes(w, b)),
            ),
            Mistake(
                "flagged the rows that get better with their own scale, not worse",
                lambda w, b: (lambda s, o: (o < s).long())(*_row_maes(w, b)),
            ),
            Mistake(
                "compared root-mean-square errors; the task asks for the mean absolute error",
                lambda w, b: _worse(w, b, err=lambda e: e.pow(2).mean(1).sqrt()),
            ),
            Mistake(
                "compared each row's largest |error| (the bound the lesson talks about); the task asks for the "
                "mean absolute error",
                lambda w, b: _worse(w, b, err=lambda e: e.abs().amax(1)),
            ),
            Mistake(
                "averaged signed errors, so over- and undershoots cancel; take |error| first, then the mean",
                lambda w, b: _worse(w, b, err=lambda e: e.mean(1)),
            ),
            Mistake(
                "gave each input column its own scale (reduced over the rows, axis 0); a row's scale comes from "
                "that row",
                lambda w, b: _worse(w, b, axis=0),
            ),
            Mistake("used int4 whatever the bits (4 hard-coded)", lambda w, b: _worse(w, 4)),
        ],
    ),
    Task(
        "02.worse_prediction",
        "predict which rows lose with their own ruler",
        _worse_listed,
        [Case((), "the rows that get a higher mean |error| with their own int4 scale, for the 6 printed rows")],
        "row 0 sets one shared int4 scale for all six rows; a row's own scale changes where its ticks fall",
        (),
        is_value=True,
        judge=_judge_worse,
        minutes=6,
    ),
    Task(
        "02.erased_prediction",
        "predict which rows a shared scale erases",
        lambda: _erased_rows(qmax),
        [Case((), "(rows erased at int3, at int4, at int8) for the 8-row layer whose absmaxes are printed")],
        "the loudest row sets one shared tick for all eight rows; how far from zero must a value be to round to "
        "code 1 rather than 0?",
        _ERASED_MISTAKES,
        is_value=True,
        judge=_judge_erased,
    ),
    Task(
        "02.rescued_rows",
        "which rows does a row's own scale rescue?",
        _rescued,
        [
            Case((TWO, 4), "int4, the 2x4 example"),
            Case((_EDGES, 4), "int4, loud row 0 sets the shared scale to 1; row 3 is all zeros"),
            Case((_ONE_LOUD, 3), "int3, 6x5 weight, row 1 is 30x louder"),
            Case((_w(8, 16), 4), "int4, 8x16 weight, rows spread over 1.5 decades", hidden=True),
            Case((_w(8, 16), 8), "int8, 8x16 weight", hidden=True),
            Case((_w(5, 12) * torch.tensor([[1.0], [1.0], [1.0], [1.0], [12.0]]), 2), "int2, row 4 loud", hidden=True),
        ],
        "a row is erased when every one of its codes under the one shared scale is 0; per-channel can only save a row "
        "that holds something",
        [
            Mistake(
                "called a row erased when its values are below one shared tick (as trunc or int() does); just past "
                "half a tick a value rounds to +-1 (exactly half rounds to the even code, 0)",
                lambda w, b: ((w.abs().amax(1) < w.abs().max() / qmax(b)) & (w != 0).any(1)).long(),
            ),
            Mistake(
                "took the shared scale from the signed largest value (w.max()); the loudest value may be negative, so "
                "use the largest magnitude, w.abs().max()",
                lambda w, b: _rescued_signed_max(w, b),
            ),
            Mistake(
                "gave each input column its own scale (reduced over the rows, axis 0); a row's own scale comes from "
                "that row",
                lambda w, b: _rescued_by_column(w, b),
            ),
            Mistake(
                "counted an all-zero row as rescued; its own scale gives it zero codes too",
                lambda w, b: (torch.round(codes(w, w.abs().max() / qmax(b))) == 0).all(1).long(),
            ),
            Mistake(
                "treated a value exactly half a tick from 0 as reaching code +-1 (a strict < or rounding halves "
                "up); torch.round sends a tie to the even code, 0",
                lambda w, b: _rescued(w, b, half_up=True),
            ),
            Mistake(
                "divided by 2**(bits-1) instead of 2**(bits-1) - 1",
                lambda w, b: _rescued(w, b, divisor=2 ** (b - 1)),
            ),
            Mistake(
                "divided by 2**bits - 1, the unsigned range; a symmetric ruler has 2**(bits-1) - 1 steps on each side "
                "of 0",
                lambda w, b: _rescued(w, b, divisor=2**b - 1),
            ),
            Mistake(
                "summed the codes, so +1 and -1 cancel; a row is erased only when every code is 0",
                lambda w, b: ((torch.round(codes(w, w.abs().max() / qmax(b))).sum(1) == 0) & (w != 0).any(1)).long(),
            ),
            Mistake("used int4 whatever the bits (4 hard-coded)", lambda w, b: _rescued(w, 4)),
            Mistake(_INDICES, lambda w, b: _rescued(w, b).nonzero().flatten()),
            Mistake(_INDICES, lambda w, b: _rescued(w, b).nonzero()),  # nonzero() without flatten: [k, 1]
        ],
        minutes=6,
    ),
]


RECALL: tuple[Question, ...] = (
    choice(
        "Interview: why prefer per-channel over per-tensor absmax scales for many weight matrices?",
        (
            "Because channels differ in magnitude, and a shared scale leaves quiet ones few codes or none",
            True,
            "A shared absmax scale is set by the loudest channel: at int4 the quiet row is erased, at int8 it "
            "keeps only a few small codes (section 2).",
        ),
        (
            "Because the loudest channel would otherwise be clipped by a shared scale fitted to the typical channel",
            False,
            "Tempting if you picture the shared scale set by typical values; but an absmax scale is set by the "
            "loudest value, so nothing is clipped. The cost falls on the quiet channels instead.",
        ),
        (
            "Because per-channel removes quantization error entirely",
            False,
            "Common wrong answer: it only fits each ruler to its row; rounding error remains.",
        ),
        (
            "Because per-channel scales are free: it costs no extra storage",
            False,
            "Tempting because one scale is small next to a row of weights; but it is not free: per-channel stores "
            "one scale per row instead of one per tensor (lesson 04 counts the bytes).",
        ),
        source=INTERVIEW,
    ),
    Numeric(
        "Per-tensor int3; Row B sets the scale (absmax 3.10). From what factor m does Row A (absmax 0.15) get a "
        "nonzero code?",
        3.44,
        "Row A's largest magnitude must pass half a shared tick: 0.15 m > (3.10 / 3) / 2, so m > 3.44.",
        tol=0.04,  # the slider's first step past 3.444 (3.47) is the same answer
        mistakes=(
            (6.89, "that is where 0.15 m reaches a whole shared tick; from just past half a tick it rounds to 1"),
            (2.58, "that uses the tick 3.10 / 4; the restricted int3 ruler ends at code 3, so the tick is 3.10 / 3"),
            (1.48, "that is the int4 threshold from the widget; int3 has 3 positive codes, so the tick is 3.10 / 3"),
        ),
    ),
    choice(
        "A row's per-channel scale is never larger than the shared one. What does that guarantee?",
        (
            "Its worst-case rounding error, half its tick, is never larger",
            True,
            "Lesson 01's bound is half a tick, and the row's tick can only shrink. Its actual error can still rise, "
            "as the row near the shared ticks in section 4 shows.",
        ),
        (
            "Its mean absolute error is never larger",
            False,
            "Tempting because a finer ruler sounds better everywhere; but a row whose values sat near the shared "
            "ticks (section 4) gets more error from its own ruler.",
        ),
        (
            "Its error on every value is never larger",
            False,
            "Tempting because the bound shrinks for every value; but a value that sat on a shared tick had error 0, "
            "and its own ticks can miss it (section 4's row 0).",
        ),
        source=LESSON,
    ),
)


PREDICT = {
    "quiet_row": choice(
        "Row A = [0.05, -0.08, 0.12, -0.15] on the shared int8 ruler (scale 3.10 / 127). Its codes?",
        (
            "[0, 0, 0, 0]",
            False,
            "Tempting because the loud row sets the scale; but at int8 the tick is 0.0244, and even 0.05 is two "
            "ticks. A row collapses only when all its values lie at or below half a tick.",
        ),
        (
            "[2, -3, 5, -6]",
            True,
            "0.05 / 0.0244 = 2.05 and 0.15 / 0.0244 = 6.1: Row A survives, but uses codes up to 6 of 127.",
        ),
        (
            "[42, -68, 102, -127]",
            False,
            "Tempting if you picture every row stretched to fit; those are Row A's codes on its own int8 ruler "
            "(0.15 / 127). The shared ruler is set by Row B.",
        ),
        (
            "[0, 0, 0, -1]",
            False,
            "Tempting if you expect only the loudest value to escape 0; but at int8 half a tick is 0.0122, and all "
            "four values pass it.",
        ),
    ),
    "row0_own_ruler": choice(
        "Row 0 = [3, 1.05, -2, 2]; on the shared int4 ruler (scale 1) its MAE is 0.0125. With its own scale, 3 / 7, "
        "its MAE is about...",
        (
            "about 0.12",
            True,
            "Its own ticks are 3/7 apart: 3 stays exact, 1.05 is missed by 0.19, -2 and 2 by 0.14 each; the mean is "
            "0.12. The finer ruler lowers the cap on the error (0.5 to 0.21), not an error that was already near 0.",
        ),
        (
            "about 0.005",
            False,
            "Tempting because the bound, half a tick, does shrink 2.3x; but the bound caps the error, and row 0's "
            "errors were already far below the old cap.",
        ),
        (
            "0.0125, unchanged",
            False,
            "Tempting because 3 is exact under both rulers; but 2 and -2 are not multiples of 3/7, so they move off "
            "their ticks.",
        ),
        (
            "about 0.05",
            False,
            "Tempting if you follow only the value that was off a tick; but the whole numbers 2 and -2 lose their "
            "ticks too: the nearest, 5 x 3/7 = 2.14, is 0.14 away.",
        ),
    ),
}

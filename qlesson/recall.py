"""Recall questions for every lesson: multiple choice with an explanation for every option,
and short numeric questions checked with a tolerance.

In a notebook :func:`quiz` renders a lesson's questions as widgets (options, a Check button,
feedback). Without widgets, :func:`answer` checks one response and prints the feedback, so
an exercise notebook graded by nbval can use it:

>>> answer("04", 3, 4.125)
✓ correct: 4 bits of code plus 16 bits of fp16 scale shared by 128 weights: 4 + 16/128.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .checking import CheckFailed, NotAttempted


@dataclass(frozen=True)
class Option:
    text: str
    correct: bool
    why: str


@dataclass(frozen=True)
class Choice:
    prompt: str
    options: tuple[Option, ...]
    source: str = ""


@dataclass(frozen=True)
class Numeric:
    prompt: str
    answer: float
    why: str
    rel_tol: float = 0.01
    source: str = ""


Question = Choice | Numeric


def _c(prompt: str, *options: tuple[str, bool, str], source: str = "") -> Choice:
    return Choice(prompt, tuple(Option(*o) for o in options), source)


LESSON = "lesson (source: Pause and recall)"
INTERVIEW = "interview question (common wrong answer included)"

BANK: dict[str, tuple[Question, ...]] = {
    "01": (
        Numeric(
            "An int8 symmetric ruler has scale 0.01. What is the largest value it can store?",
            1.27,
            "The last tick is 127, and 127 * 0.01 = 1.27.",
        ),
        Numeric(
            "Same ruler (scale 0.01): the worst rounding error inside the range?",
            0.005,
            "Rounding moves a value by at most half a tick: 0.01 / 2.",
        ),
        _c(
            "Why does symmetric signed int4 use [-7, 7] and not [-8, 7]?",
            (
                "So +x and -x round to mirror images with one scale absmax / 7",
                True,
                "-8 has no positive partner; the restricted range keeps the ruler symmetric.",
            ),
            ("Because -8 cannot be stored in 4 bits", False, "Two's complement 4-bit does hold -8 (Q4_0 uses it)."),
            ("To leave room for the zero point", False, "The symmetric zero point is 0, which is already a code."),
        ),
        _c(
            "A value falls beyond the last tick of a fixed ruler. What happens?",
            (
                "It is clamped to qmax and its error can exceed half a tick",
                True,
                "Clipping error is the distance beyond the end of the ruler: unbounded.",
            ),
            (
                "It rounds to the nearest tick with error at most half a tick",
                False,
                "That bound holds only inside the range.",
            ),
            ("It wraps around to the negative end", False, "Quantizers saturate (clamp); they do not wrap."),
        ),
        _c(
            "When does an asymmetric ruler beat a symmetric one with the same bits?",
            (
                "When the data sits on one side of 0 or is lopsided",
                True,
                "The symmetric ruler spends half its codes on values that never occur.",
            ),
            (
                "Always: asymmetric is strictly more accurate",
                False,
                "On data centred on 0 both use the same range; asymmetric adds a zero point for nothing.",
            ),
            ("Only for weights, never activations", False, "It matters most for activations (ReLU outputs)."),
        ),
        _c(
            "What does one more bit buy on a symmetric ruler?",
            (
                "About twice as many ticks, so roughly half the scale and half the worst rounding error",
                True,
                "2^(b+1) - 1 codes instead of 2^b - 1.",
            ),
            ("One more tick", False, "Codes double with each bit; they do not grow by one."),
            ("A wider range", False, "The range is set by absmax; bits set how finely it is divided."),
        ),
    ),
    "02": (
        _c(
            "What is the core difference between per-tensor and per-channel quantization?",
            (
                "Per-tensor uses one scale for everything; per-channel one per channel, from that channel's range",
                True,
                "That is the whole contrast.",
            ),
            (
                "Per-channel uses more bits per weight for the codes",
                False,
                "The codes have the same bits; only the number of scales changes.",
            ),
            ("Per-tensor is asymmetric and per-channel symmetric", False, "Either can be symmetric or asymmetric."),
            source=LESSON,
        ),
        _c(
            "Why did Row A collapse to zeros under the shared int4 scale?",
            (
                "Its largest magnitude, 0.15, is below half a shared tick (0.4429 / 2)",
                True,
                "Every |x / scale| < 0.5 rounds to 0.",
            ),
            ("Row A had too many values", False, "The count is irrelevant; the magnitude relative to the tick is not."),
            ("int4 cannot represent negative numbers", False, "Symmetric int4 spans -7..7."),
            source=LESSON,
        ),
        _c(
            "Why did per-channel rescue Row A without changing Row B?",
            (
                "Row B's own scale equals the old shared one, since Row B set the shared absmax",
                True,
                "Row B's codes and reconstruction are identical.",
            ),
            ("Per-channel gives Row B more bits", False, "Both rows keep 4-bit codes."),
            ("Row B was re-quantized more finely too", False, "Its absmax, and so its scale, did not change."),
            source=LESSON,
        ),
        _c(
            "Interview: why prefer per-channel over per-tensor for many weight matrices?",
            (
                "Channels live at different magnitudes; one shared scale erases the quiet ones",
                True,
                "This is the answer interviewers look for.",
            ),
            (
                "Because per-channel removes quantization error entirely",
                False,
                "Common wrong answer: it only fits each ruler to its row; rounding error remains.",
            ),
            ("Because per-channel needs no scale metadata", False, "It needs one scale per channel."),
            source=INTERVIEW,
        ),
        _c(
            "Interview: why do channels need different scales instead of one global ruler?",
            (
                "Learned channels represent features of very different strength and range",
                True,
                "Different roles, different magnitudes.",
            ),
            (
                "All channels should have similar magnitudes in a well-trained model",
                False,
                "Common wrong answer: training does not equalise channels (lesson 03 measures it).",
            ),
            ("Because of rounding to even", False, "Rounding mode is unrelated to magnitude differences."),
            source=INTERVIEW,
        ),
        Numeric(
            "In the 3x4 int8 note example, what code does 1.8 get under the shared scale 2.0 / 127?",
            114,
            "1.8 / (2.0 / 127) = 114.3, which rounds to 114 (the note prints 115).",
            rel_tol=0,
        ),
    ),
    "03": (
        Numeric(
            "A Conv2d weight is [64, 3, 3, 3]. How many per-output-channel scales does it have?",
            64,
            "One per output channel; each covers 3 * 3 * 3 = 27 weights.",
            rel_tol=0,
        ),
        _c(
            "Why is the output axis the usual channel for weight scales?",
            (
                "A per-output scale is constant along the reduction axis and can be applied after the product",
                True,
                "y[:, n] = s[n] * (x @ q[n, :]).",
            ),
            ("Output channels have more weights", False, "Row length is in_features; that is not the reason."),
            ("PyTorch stores weights column-major", False, "Linear weights are [out, in], row-major."),
        ),
        _c(
            "In all-MiniLM-L6-v2, which Linear layers have the most uneven output channels?",
            ("The FFN output layers [384, 1536]", True, "One channel is tens of times louder than the median."),
            ("The query projections", False, "Their channels are within a few x of each other."),
            ("The pooler", False, "It is the most even layer (and unused by the embedding)."),
        ),
        _c(
            "Per-tensor int4 on MiniLM's L0.output: what happens to most channels?",
            (
                "Their codes fall into a few values around 0",
                True,
                "One outlier channel sets a scale far coarser than the other channels need.",
            ),
            ("They clip at +-7", False, "Clipping hits only values beyond the absmax, and there are none."),
            ("Nothing: the error is the same as per-channel", False, "The lesson measures a large gap."),
        ),
        _c(
            "Interview: per-channel int8 weights are 'almost lossless'. What is the honest qualifier?",
            (
                "It depends on the model and metric; measure it (here: embeddings nearly unchanged)",
                True,
                "Claims from other models are claims until reproduced.",
            ),
            ("It is exact", False, "Rounding error remains."),
            ("It only works with per-channel activations too", False, "Weights-only quantization is measured here."),
        ),
    ),
    "04": (
        _c(
            "What trade-off does group-wise quantization balance?",
            (
                "Local fit (error) against metadata bytes and kernel regularity",
                True,
                "Smaller groups: less error, more scales.",
            ),
            ("Speed of rounding against speed of clamping", False, "Both are trivial elementwise ops."),
            ("Signed against unsigned codes", False, "Unrelated to granularity."),
            source=LESSON,
        ),
        _c(
            "Interview: why use group-wise instead of pure per-channel everywhere?",
            (
                "At low bits it keeps much more accuracy for a small metadata cost, with regular kernels",
                True,
                "Groups are finer than channels along K.",
            ),
            (
                "Because groups are mathematically exact and channels are not",
                False,
                "Common wrong answer: both round; neither is exact.",
            ),
            ("Because per-channel is not supported by any hardware", False, "Per-channel is widely supported."),
            source=INTERVIEW,
        ),
        Numeric(
            "Bits per weight of int4 with groups of 128 and fp16 scales?",
            4.125,
            "4 bits of code plus 16 bits of fp16 scale shared by 128 weights: 4 + 16/128.",
        ),
        Numeric(
            "Bits per weight of llama.cpp's Q4_0 (32 weights per block)?",
            4.5,
            "An 18-byte block (2-byte fp16 scale + 16 bytes of codes) for 32 weights: 18 * 8 / 32.",
        ),
        _c(
            "Interview: 'scale metadata is wasted memory'. What is the better view?",
            ("A little metadata can protect a lot of model quality", True, "Per-channel costs under 0.1% here."),
            ("Scale metadata is always wasted memory", False, "Common wrong answer to avoid."),
            ("Metadata is free because it is not stored", False, "Scales are stored next to the codes."),
            source=INTERVIEW,
        ),
        Numeric(
            "A [4, 1024] weight with group size 128: how many scales?",
            32,
            "1024 / 128 = 8 groups per channel, times 4 channels.",
            rel_tol=0,
        ),
    ),
    "05": (
        _c(
            "Why must the zero point be an integer inside [qmin, qmax]?",
            (
                "So 0.0 maps exactly to a stored code, in the same integer type",
                True,
                "Padding and ReLU zeros must come back exactly 0.",
            ),
            ("Because floats cannot be added to integers", False, "They can; the point is exactness of 0.0."),
            ("To make the scale smaller", False, "The zero point does not change the scale."),
        ),
        Numeric(
            "A uint8 channel spans [-1.70, -0.94]. After widening to include 0, what is its zero point?",
            255,
            "rmin = -1.70, rmax = 0: scale = 1.70 / 255, zero point = round(1.70 / scale) = 255.",
            rel_tol=0,
        ),
        _c(
            "Why are per-token activation scales usable in an int8 GEMM, but per-feature scales are not?",
            (
                "A per-token scale is constant along the reduction axis; a per-feature one changes inside the sum",
                True,
                "Per-token factors out of the product like per-channel weight scales.",
            ),
            ("Per-feature scales need more bits", False, "Bits are not the issue; the algebra is."),
            ("Per-token scales are always larger", False, "Size is irrelevant; position in the sum matters."),
        ),
        _c(
            "What does SmoothQuant change, and what stays the same?",
            (
                "Activation features are divided and weight columns multiplied by s_j; the float product is unchanged",
                True,
                "Only what gets rounded changes.",
            ),
            ("It quantizes activations per feature", False, "It keeps per-tensor or per-token activation scales."),
            ("It removes the need to quantize weights", False, "Weights are still quantized, now with the outliers."),
        ),
        _c(
            "Per-tensor or per-channel for activations in mainstream serving?",
            (
                "Per-tensor or per-token; per-feature does not fit an integer GEMM",
                True,
                "Hardware and kernels want scales constant along K.",
            ),
            ("Per-feature, because it is most accurate", False, "Most accurate, but it cannot leave the sum."),
            ("No activation quantization is ever used", False, "W8A8 quantizes activations."),
        ),
    ),
    "06": (
        _c(
            "Why can a per-output-channel scale be applied after the GEMM?",
            ("It is constant along K, so it factors out of the sum", True, "y[:, n] = s[n] * (x @ q[n, :])."),
            ("Because the GEMM is linear in x", False, "Linearity in x is not what lets s[n] move."),
            ("It cannot; it must be applied to the weight first", False, "Lesson 06 shows both orders agree."),
        ),
        Numeric(
            "Applying per-channel scales to a [256, 4096] output: how many multiplies?",
            256 * 4096,
            "One per output element: M x N.",
            rel_tol=0,
        ),
        _c(
            "At M = 1, why is dequantize-then-matmul slower than fp32?",
            (
                "It writes and re-reads a full fp32 copy of the weight: more bytes than fp32 alone",
                True,
                "Batch-1 GEMMs are memory bound.",
            ),
            ("int8 arithmetic is slower than fp32", False, "No int8 arithmetic happens in that path."),
            ("Because of rounding", False, "Rounding happened offline."),
        ),
        _c(
            "In W8A8 with per-token and per-channel scales, the rescale of the int32 accumulator is...",
            ("An [M, N] rank-1 matrix: the outer product of the two scale vectors", True, "s_x s_w^T."),
            ("A scalar", False, "Only for per-tensor activations and weights."),
            ("A full-rank [M, N] matrix", False, "It is an outer product: rank 1."),
        ),
        _c(
            "The note claims per-channel dequantization adds under 5% to a GEMM. When does that hold?",
            (
                "When the scales are applied after an integer or fused GEMM",
                True,
                "N multiplies per output row is tiny next to the product.",
            ),
            ("Always", False, "Not for dequantize-then-matmul, which costs a multiple of the GEMM at small M."),
            ("Never", False, "The epilogue multiply is measured well under 5%."),
        ),
    ),
}


def questions(lesson: str) -> tuple[Question, ...]:
    """The questions of ``lesson`` ("01" to "06")."""
    if lesson not in BANK:
        raise ValueError(f"no recall questions for lesson {lesson!r}; use one of {', '.join(BANK)}")
    return BANK[lesson]


def feedback(q: Question, response: Any) -> tuple[bool, str]:
    """(correct?, explanation) for a response: an option letter ("a", "b", ...) or a number."""
    if isinstance(q, Numeric):
        try:
            value = float(response)
        except (TypeError, ValueError):
            return False, f"{response!r} is not a number; answer with a number such as 0.5"
        ok = math.isclose(value, q.answer, rel_tol=q.rel_tol, abs_tol=1e-12)
        return ok, q.why if ok else f"{value:g} is not it. {q.why}"
    letters = "abcdefgh"[: len(q.options)]
    key = str(response).strip().lower()
    if key not in letters:
        return False, f"{response!r} is not an option; answer with one of {', '.join(letters)}"
    opt = q.options[letters.index(key)]
    return opt.correct, opt.why


def answer(lesson: str, number: int, response: Any) -> None:
    """Check one response (question ``number`` counts from 1); prints feedback, raises if wrong."""
    qs = questions(lesson)
    if not 1 <= number <= len(qs):
        raise ValueError(f"lesson {lesson} has questions 1 to {len(qs)}, not {number}")
    if response is None or response is Ellipsis:
        raise NotAttempted(f"recall {lesson}.{number}: not attempted yet")
    ok, why = feedback(qs[number - 1], response)
    if not ok:
        print(f"✗ {why}")
        raise CheckFailed(f"recall {lesson}.{number}: {why}")
    print(f"✓ correct: {why}")


def text(lesson: str) -> str:
    """The questions as plain text, with lettered options (for a page without widgets)."""
    lines = []
    for i, q in enumerate(questions(lesson), start=1):
        lines.append(f"{i}. {q.prompt}")
        if isinstance(q, Choice):
            lines += [f"   {'abcdefgh'[j]}) {o.text}" for j, o in enumerate(q.options)]
    return "\n".join(lines)


def quiz(lesson: str) -> Any:
    """A widget with every question of ``lesson``: options or a number box, Check, and feedback."""
    import ipywidgets as W

    boxes = []
    for i, q in enumerate(questions(lesson), start=1):
        if isinstance(q, Choice):
            pick = W.RadioButtons(
                options=[(o.text, "abcdefgh"[j]) for j, o in enumerate(q.options)],
                value=None,
                layout=W.Layout(width="auto"),
            )
        else:
            pick = W.FloatText(value=None, description="answer")
        button = W.Button(description="Check")
        out = W.HTML()

        def on_click(_b: Any, q: Question = q, pick: Any = pick, out: Any = out) -> None:
            if pick.value is None:
                out.value = "Pick an answer first."
                return
            ok, why = feedback(q, pick.value)
            out.value = f"{'✓ correct' if ok else '✗ not quite'}: {why}"

        button.on_click(on_click)
        boxes.append(W.VBox([W.HTML(f"<b>{i}. {q.prompt}</b>"), pick, W.HBox([button, out])]))
    return W.VBox(boxes)

"""Lesson 07 · Calculator: the predictions and recall questions (the lesson has no exercise of its own).

Source: ``notebooks/07_calculator.py``.
"""

from __future__ import annotations

from qlesson.course.recall import LESSON, Numeric, Question, choice

PREDICT = {
    "none": choice(
        "The example's four channels, symmetric, 4 bits: whose error does its own ruler not reduce at all?",
        (
            "Channel 2, because it holds the tensor's largest |value| (-1.70)",
            True,
            "The shared symmetric scale is set by the largest |value| in the tensor. That value is in channel "
            "2, so channel 2's own scale is the shared one: same codes, same error.",
        ),
        (
            "Channel 3: its values are already tiny",
            False,
            "It tempts because tiny values have tiny errors. But the shared ruler's ticks are far wider than "
            "channel 3's values, and its own ruler, fit to 0.11, is about 15 times finer.",
        ),
        (
            "Channel 1: it is one-sided, so it wastes codes either way",
            False,
            "It tempts because a positive-only row leaves a symmetric ruler's negative codes empty. That is "
            "true of both rulers, but its own ruler still reaches only 1.44 instead of 1.70, so it is a little "
            "finer.",
        ),
        (
            "None: its own ruler always helps",
            False,
            "It tempts if per-channel is a fixed improvement. A channel's own ruler is finer only by the "
            "tensor's largest |value| over the channel's, and for one channel that ratio is 1.",
        ),
    ),
    "gelu": choice(
        "64 post-GELU values (from -0.17 up to 1.91), one ruler: how does symmetric's MAE compare with "
        "asymmetric's at 4 bits and at 8 bits?",
        (
            "About 2 to 3 times asymmetric's at both widths",
            True,
            "Symmetric must reach -1.91 to reach +1.91, so close to half its codes lie below -0.17 and stay "
            "empty at any width; each tick is about twice as wide, and the MAE follows the tick.",
        ),
        (
            "About 2 to 3 times at 4 bits, nearly equal at 8 bits",
            False,
            "It tempts because 255 codes feel like plenty. But the empty codes are a fixed fraction of them, "
            "so at 8 bits symmetric's tick is still about twice asymmetric's.",
        ),
        (
            "Only about 10% higher at both: asymmetric gains just one code, -8",
            False,
            "It tempts because 16 codes against 15 is the visible difference. The larger loss is the "
            "negative codes symmetric leaves empty: 6 of its 15 at 4 bits on this row.",
        ),
        (
            "About equal at both: the negative side is tiny",
            False,
            "It tempts because few values are far below 0. But symmetric spends its negative codes on the "
            "mirror image of the positive side, where no value lies.",
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
        "A ReLU output row (every value >= 0, max 3.0) is quantized to signed int8. What does an asymmetric "
        "ruler buy over a symmetric one?",
        (
            "A tick about half as wide: symmetric leaves its negative codes empty",
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
        "Symmetric rulers. A tensor's largest |value| is 2.4, and one of its channels has largest |value| "
        "0.3. How many times finer is that channel's own ruler than the shared one?",
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
            "To make the scale finer",
            False,
            "It tempts because widening sounds like an improvement. Widening can only make the scale coarser.",
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

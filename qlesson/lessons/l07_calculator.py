"""Lesson 07 · Calculator: the predictions and recall questions (the lesson has no exercise of its own).

Source: ``notebooks/07_calculator.py``.
"""

from __future__ import annotations

from qlesson.course.recall import LESSON, Numeric, Question, choice

PREDICT = {
    "none": choice(
        "The example's four channels, symmetric, 4 bits: whose error does its own ruler not reduce at all?",
        (
            "Channel 0",
            False,
            "It tempts because channel 0 spans both signs and so uses both halves of the ruler. But its "
            "largest |value| is 0.91, against the tensor's 1.70, so its own ruler is about 1.9 times finer.",
        ),
        (
            "Channel 1: it holds the tensor's largest value, 1.44",
            False,
            "It tempts because 1.44 is the largest number on the page. But a symmetric ruler is set by the "
            "largest |value|, and -1.70 in channel 2 is larger in magnitude, so channel 1's own ruler is "
            "1.70 / 1.44, about 1.2 times, finer.",
        ),
        (
            "Channel 2",
            True,
            "The shared symmetric scale is set by the tensor's largest |value|, -1.70, which is in channel 2, "
            "so channel 2's own scale is the shared one: same codes, same error.",
        ),
        (
            "Channel 3",
            False,
            "It tempts because tiny values have tiny errors. But the shared ruler's ticks are far wider than "
            "channel 3's values, and its own ruler, fit to 0.11, is about 15 times finer.",
        ),
        (
            "None",
            False,
            "It tempts if per-channel is a fixed improvement. A channel's own ruler is finer only by the "
            "tensor's largest |value| over the channel's, and for one channel that ratio is 1.",
        ),
    ),
    "gelu": choice(
        "64 post-GELU values (from -0.17 up to 1.91), one symmetric 4-bit ruler with codes -7 to 7: how many "
        "of those 15 codes can a value of this row round to?",
        (
            "All 15: the ruler is fitted to this row",
            False,
            "It tempts because the scale is computed from the data. But symmetric fits only the largest "
            "|value|, 1.91, and mirrors it to -1.91, where no value lies.",
        ),
        (
            "8: codes 0 to 7, because the row is one-sided",
            False,
            "It tempts because the row is nearly one-sided. But a tick is 1.91 / 7, about 0.27, and -0.17 is "
            "more than half a tick below 0, so it rounds to code -1.",
        ),
        (
            "9: codes -1 to 7",
            True,
            "A tick is 1.91 / 7, about 0.27; -0.17 is about -0.6 ticks and rounds to -1. Codes -7 to -2 stay "
            "empty: 6 of the 15. Asymmetric spends all 16 of its codes on [-0.17, 1.91].",
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

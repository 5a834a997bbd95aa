"""Lesson 07 · Calculator: the predictions and recall questions (the lesson has no exercise of its own).

Source: ``notebooks/07_calculator.py``.
"""

from __future__ import annotations

from qlesson.course.recall import LESSON, Numeric, Question, choice

PREDICT = {
    "gain": choice(
        "The example's four channels at 4 bits, asymmetric: whose error falls most when it gets its own ruler?",
        (
            "Channel 3, the tiny-range one",
            True,
            "Its range is many times narrower than the tensor's, so its own ruler is that many times finer; "
            "under the shared ruler it has about one tick across all of its values.",
        ),
        (
            "Channel 2, the negative-only one",
            False,
            "It tempts because it is the odd one out, all below 0. But its range is the widest of the four, "
            "so its own ruler is the least fine.",
        ),
        (
            "Channel 0, the one that crosses 0",
            False,
            "It tempts because it uses both signs, as the tensor does. Its range is still a good part of the "
            "tensor's, so its own ruler is only a few times finer.",
        ),
        (
            "All four about equally",
            False,
            "It tempts if per-channel is a fixed improvement. The gain is the ratio of the tensor's range to "
            "the channel's own, and these ratios differ a lot.",
        ),
    ),
    "gelu": choice(
        "64 post-GELU values (from -0.17 up to about 2) at 4 bits: which ruler gives the lower MAE, and by "
        "about how much?",
        (
            "Asymmetric, about 2 to 3 times lower",
            True,
            "Symmetric must reach -max to reach +max, so the codes below -0.17 stay empty and each tick is "
            "about twice as wide; the many values near 0 lose a little more.",
        ),
        (
            "About equal: the negative side is tiny",
            False,
            "It tempts because few values are far below 0. But symmetric spends half its codes on the mirror "
            "image of the positive side, where no value lies.",
        ),
        (
            "Symmetric: it has no zero point to get wrong",
            False,
            "It tempts because the zero point looks like one more thing to round. It is an integer, and 0.0 "
            "is exact under both rulers; the loss is symmetric's empty codes.",
        ),
        (
            "Asymmetric, 10 times lower or more",
            False,
            "It tempts if asymmetric seems to fix everything. It gains at most the codes symmetric leaves "
            "empty: about twice the ticks, not ten times.",
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
    choice(
        "With symmetric rulers, one channel's per-channel scale equals the per-tensor scale. Why?",
        (
            "It holds the tensor's largest |value|, so its own absmax is the tensor's",
            True,
            "The shared scale is set by that channel; its codes and error are the same either way.",
        ),
        (
            "It is the quietest channel",
            False,
            "It tempts because a quiet channel is the one per-channel is for. But the quietest channel gets "
            "the finest scale of all.",
        ),
        (
            "Per-channel scales always equal the per-tensor scale",
            False,
            "It tempts if 'per-channel' is read as one scale copied to every channel. Each channel's scale is "
            "its own absmax / qmax; only the loudest channel's equals the shared one.",
        ),
        source=LESSON,
    ),
    choice(
        "Lesson 05: why does the calculator widen each range to include 0 before computing the zero point?",
        (
            "So the zero point is a code inside the range and 0.0 is stored exactly",
            True,
            "Without it a one-sided channel gets a zero point outside the codes (lesson 05).",
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
        source=LESSON,
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

"""Lesson 07 · Calculator: the recall questions (the lesson has no exercise of its own).

Source: ``notebooks/07_calculator.py``.
"""

from __future__ import annotations

from qlesson.course.recall import LESSON, Numeric, Question, choice

RECALL: tuple[Question, ...] = (
    choice(
        "In the calculator's example, which channel gains most from its own scale?",
        (
            "The tiny-range channel",
            True,
            "Under the shared range its values fall inside a tick or two; its own ruler is far finer.",
        ),
        ("The moderate channel", False, "Its range is close to the tensor's, so its own scale barely changes."),
        (
            "The negative-only channel",
            False,
            "It gains from an asymmetric range, but its span is not far below the tensor's.",
        ),
        source=LESSON,
    ),
    Numeric(
        "The page counts an fp32 scale and an int32 zero point per scale. How many metadata bytes does "
        "per-channel store for the 4 example channels?",
        32,
        "4 channels x (4 + 4) bytes.",
        tol=0.01,
        mistakes=(
            (8, "that is per-tensor: one scale and one zero point for the whole tensor"),
            (16, "that counts only the fp32 scales; the int32 zero points are stored too"),
        ),
    ),
    choice(
        "Why does the calculator widen each range to include 0 before computing the zero point?",
        (
            "So the zero point is a code inside the range and 0.0 is stored exactly",
            True,
            "Without it a one-sided channel gets a zero point outside the codes (lesson 05).",
        ),
        ("To make the scale finer", False, "Widening can only make the scale coarser."),
        ("Because symmetric quantization requires it", False, "Symmetric rulers have zero point 0 already."),
        source=LESSON,
    ),
    Numeric(
        "How many bytes of codes does one channel of 1536 values take at 4 bits?",
        768,
        "Two 4-bit codes share a byte: 1536 / 2.",
        tol=0.01,
        mistakes=(
            (1536, "one byte per value; 4-bit codes are packed two to a byte"),
            (6144, "that is the number of bits, 1536 x 4"),
        ),
    ),
    choice(
        "A channel's MAE is about the same per-tensor and per-channel. What does that tell you?",
        (
            "Its own range is close to the whole tensor's range",
            True,
            "Then its own scale is close to the shared one and nothing changes.",
        ),
        ("Per-channel is broken for that channel", False, "Both rulers simply coincide."),
        ("The channel is all zeros", False, "An all-zero channel has zero error under both."),
        source=LESSON,
    ),
)

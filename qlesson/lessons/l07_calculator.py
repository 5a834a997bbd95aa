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
            "Its own range is more than ten times narrower than the tensor's, so its own ruler is that much "
            "finer (at 4 bits the shared ruler has less than one tick across the whole channel).",
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
        "With symmetric rulers, one channel's per-channel scale equals the per-tensor scale. Why?",
        (
            "It holds the tensor's largest |value|, so its own absmax is the tensor's",
            True,
            "The shared scale is set by that channel; its codes and error are the same either way.",
        ),
        ("It is the quietest channel", False, "The quietest channel gets the finest scale of all."),
        (
            "Per-channel scales are always equal to the per-tensor scale",
            False,
            "Each channel's scale is its own absmax / qmax; only the loudest channel's equals the shared one.",
        ),
        source=LESSON,
    ),
)

"""Lesson 00 · Start here: two practice predictions, and nothing else (no exercise, no recall).

Source: ``notebooks/00_start_here.py``.
"""

from __future__ import annotations

from qlesson.course.recall import choice

PREDICT = {
    "count_scales": choice(
        "A Linear weight of shape [4096, 4096] gets per-group scales, groups of 128 along each row. "
        "How many scales does it need?",
        (
            "32",
            False,
            "Tempting because one row of 4,096 weights holds 32 groups of 128; but that is one row. Every one of "
            "the 4,096 rows is cut into its own 32 groups: a group never spans two rows.",
        ),
        (
            "128",
            False,
            "Tempting if 128 reads as the number of groups; it is the number of weights in each group. A row of "
            "4,096 holds 4,096 / 128 = 32 groups.",
        ),
        (
            "4,096",
            False,
            "Tempting because a group lies along a row, as per-channel's ruler does; but per-channel gives a whole "
            "row one scale, and per-group gives each run of 128 in it a scale of its own.",
        ),
        (
            "131,072",
            True,
            "Each row of 4,096 weights is cut into 4,096 / 128 = 32 groups, each with its own scale, and there are "
            "4,096 rows: 32 × 4,096 = 131,072, one scale for every 128 weights.",
        ),
    ),
    "channel_axis": choice(
        "MiniLM's first feed-forward layer is torch.nn.Linear(384, 1536). With per-channel scales, how many scales "
        "does its weight get?",
        (
            "384",
            False,
            "Tempting: 384 is the first argument. But Linear(in, out) stores its weight as [out, in] = [1536, 384], "
            "and a channel is an output row.",
        ),
        ("1,536", True, "The weight is stored [out, in] = [1536, 384]: one scale per output row."),
        (
            "4,608",
            False,
            "That is 1536 × 384 / 128: per-group with groups of 128. Per-channel gives each whole row one scale.",
        ),
        (
            "589,824",
            False,
            "That is one scale per weight (1536 × 384): nothing shared, and each scale takes as many bytes as the "
            "float weight it was meant to shrink.",
        ),
    ),
}

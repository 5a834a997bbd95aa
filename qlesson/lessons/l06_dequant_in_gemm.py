"""Lesson 06 · Dequantization inside a GEMM: the exercise tasks and the recall questions.

Sources: ``notebooks/06_dequant_in_gemm.py`` (the lesson) and
``exercises/solutions/06_dequant_in_gemm.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import Numeric, Question, choice
from qlesson.lessons._shared import weights

_G = torch.Generator().manual_seed(1234 + 6)


def _w(*shape: int, spread: bool = True) -> torch.Tensor:
    return weights(_G, *shape, spread=spread)


def _scale_after(x: torch.Tensor, q: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return (x @ q.T) * s


def _group_gemm(x: torch.Tensor, q: torch.Tensor, s: torch.Tensor, g: int) -> torch.Tensor:
    n, k = q.shape
    deq = (q.reshape(n, k // g, g) * s[..., None]).reshape(n, k)
    return x @ deq.T


def _w8a8_rescale(acc: torch.Tensor, s_x: torch.Tensor, s_w: torch.Tensor) -> torch.Tensor:
    return acc * s_x[:, None] * s_w[None, :]


def _codes(n: int, k: int, bits: int = 4) -> torch.Tensor:
    return torch.randint(-(2 ** (bits - 1) - 1), 2 ** (bits - 1), (n, k), generator=_G).float()


def _gemm_case(m: int, k: int, n: int) -> Case:
    return Case((_w(m, k), _codes(n, k), torch.rand(n, generator=_G) + 0.05), f"M={m}, K={k}, N={n}")


def _group_case(m: int, k: int, n: int, g: int) -> Case:
    return Case((_w(m, k), _codes(n, k), torch.rand(n, k // g, generator=_G) + 0.05, g), f"M={m}, K={k}, N={n}, g={g}")


def _acc_case(m: int, n: int) -> Case:
    acc = torch.randint(-9000, 9000, (m, n), generator=_G).float()
    return Case((acc, torch.rand(m, generator=_G) + 0.05, torch.rand(n, generator=_G) + 0.05), f"M={m}, N={n}")


TASKS: list[Task] = [
    Task(
        "06.scale_after_gemm",
        "apply per-channel scales after the product",
        _scale_after,
        [_gemm_case(3, 8, 5), _gemm_case(1, 4, 2), _gemm_case(6, 16, 3)],
        "multiply the integer product by the scales afterwards: which axis of the output does each scale belong to?",
        [
            Mistake("divided by the scales instead of multiplying", lambda x, q, s: (x @ q.T) / s),
            Mistake("forgot the scales", lambda x, q, s: x @ q.T),
        ],
    ),
    Task(
        "06.group_gemm",
        "a GEMM with per-group weight scales",
        _group_gemm,
        [_group_case(2, 8, 3, 4), _group_case(1, 12, 2, 3), _group_case(4, 16, 5, 8)],
        "the scales change along K, so they cannot all wait until after the sum: handle each group on its own",
        [
            Mistake(
                "applied one scale per row after the product (only valid for per-channel)",
                lambda x, q, s, g: (x @ q.T) * s.mean(1),
            ),
            Mistake(
                "expanded the group scales with repeat instead of repeat_interleave (groups are contiguous)",
                lambda x, q, s, g: x @ (q * s.repeat(1, g)).T,
            ),
            Mistake("forgot the scales", lambda x, q, s, g: x @ q.T),
        ],
    ),
    Task(
        "06.w8a8_rescale",
        "rescale an int32 accumulator",
        _w8a8_rescale,
        [_acc_case(3, 4), _acc_case(1, 2), _acc_case(5, 3)],
        "each output element needs its row's activation scale and its column's weight scale",
        [
            Mistake("used only the weight scales", lambda a, sx, sw: a * sw[None, :]),
            Mistake("used only the activation scales", lambda a, sx, sw: a * sx[:, None]),
            Mistake("divided by the scales instead of multiplying", lambda a, sx, sw: a / sx[:, None] / sw[None, :]),
        ],
    ),
]


RECALL: tuple[Question, ...] = (
    choice(
        "Why can a per-output-channel scale be applied after the GEMM?",
        ("It is constant along K, so it factors out of the sum", True, "y[:, n] = s[n] * (x @ q[n, :])."),
        ("Because the GEMM is linear in x", False, "Linearity in x is not what lets s[n] move."),
        ("It cannot; it must be applied to the weight first", False, "Lesson 06 shows both orders agree."),
    ),
    Numeric(
        "Applying per-channel scales to a [256, 4096] output: how many multiplies?",
        256 * 4096,
        "One per output element: M x N.",
        tol=0.01,
        mistakes=(
            (4096, "that is one per output channel; each of the 256 rows of the output is scaled"),
            (256 * 4096 * 4096, "that counts the GEMM's multiplies; the scales touch each output once"),
        ),
    ),
    choice(
        "At M = 1, why is dequantize-then-matmul slower than fp32?",
        (
            "It writes and re-reads a full fp32 copy of the weight: more bytes than fp32 alone",
            True,
            "Batch-1 GEMMs are memory bound.",
        ),
        ("int8 arithmetic is slower than fp32", False, "No int8 arithmetic happens in that path."),
        ("Because of rounding", False, "Rounding happened offline."),
    ),
    choice(
        "In W8A8 with per-token and per-channel scales, the rescale of the int32 accumulator is...",
        ("An [M, N] rank-1 matrix: the outer product of the TWO scale vectors", True, "s_x s_w^T."),
        ("A scalar", False, "Only for per-tensor activations and weights."),
        ("A full-rank [M, N] matrix", False, "It is an outer product: rank 1."),
    ),
    choice(
        "Interview notes say per-channel scales add under 5% to a GEMM's time. Where does that hold on any machine?",
        (
            "Applied in the GEMM's epilogue, to the accumulator tile in registers",
            True,
            "N multiplies per output row, on values already in registers, next to N x K multiply-adds per row.",
        ),
        (
            "As a separate multiply kernel after the GEMM, on a GPU at M = 1",
            False,
            "The stored H100 run, timed call by call: nearly the same microseconds at every M (a fixed cost per "
            "call), a large share of a GEMM that small; even with launches queued ahead, a separate kernel costs "
            "a few microseconds, far above 5% of it.",
        ),
        (
            "As a dequantize pass that writes an fp32 weight before the GEMM",
            False,
            "That pass writes and re-reads a full fp32 weight: a multiple of the GEMM's time at small M.",
        ),
    ),
)

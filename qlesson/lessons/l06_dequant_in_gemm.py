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


def _zero_point_gemm(acc, rowsum_x, colsum_w, zx, zw, k):
    return acc - zw[None, :] * rowsum_x[:, None] - zx * colsum_w[None, :] + k * zx * zw[None, :]


def _zp_case(m: int, k: int, n: int, zx: int, label: str, hidden: bool = False) -> Case:
    qx = torch.randint(0, 256, (m, k), generator=_G).float()
    qw = torch.randint(-8, 8, (n, k), generator=_G).float()
    zw = torch.randint(-3, 4, (n,), generator=_G).float()
    return Case((qx @ qw.T, qx.sum(1), qw.sum(1), float(zx), zw, k), label, hidden)


def _dequant_first_bytes(n: int, k: int, code_bits: int) -> float:
    codes, scales, fp32_weight = n * k * code_bits / 8, 4 * n, 4 * n * k
    return codes + scales + fp32_weight + fp32_weight  # read codes and scales, write the copy, GEMM reads it


def _compute_bound_from(peak_gflops: float, read_gb_s: float, weight_bits: float) -> float:
    ridge = peak_gflops / read_gb_s  # FLOPs per byte
    return ridge * weight_bits / 16  # 2 M K N FLOPs over K N bits / 8 bytes = 16 M / bits FLOPs per byte


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
    Task(
        "06.zero_point_gemm",
        "the zero-point product from sums alone",
        _zero_point_gemm,
        [
            _zp_case(2, 8, 3, 128, "uint8 activations around 128, three channels"),
            _zp_case(1, 4, 2, 0, "activation zero point 0"),
            _zp_case(3, 16, 4, 200, "a zero point near the top of the range", hidden=True),
            _zp_case(5, 32, 1, 17, "one output channel", hidden=True),
        ],
        "expand the product of two differences, then ask which sum each term needs and which terms do not "
        "depend on k at all",
        [
            Mistake(
                "left out the constant term K * zx * zw",
                lambda a, r, c, zx, zw, k: a - zw[None, :] * r[:, None] - zx * c[None, :],
            ),
            Mistake(
                "subtracted the constant term K * zx * zw instead of adding it",
                lambda a, r, c, zx, zw, k: a - zw[None, :] * r[:, None] - zx * c[None, :] - k * zx * zw[None, :],
            ),
            Mistake(
                "paired each zero point with its own operand's sum (zx with the activations' row sums)",
                lambda a, r, c, zx, zw, k: a - zx * r[:, None] - zw[None, :] * c[None, :] + k * zx * zw[None, :],
            ),
            Mistake("returned the product of the raw codes", lambda a, r, c, zx, zw, k: a),
        ],
    ),
    Task(
        "06.dequant_first_bytes",
        "the weight bytes a dequantize-first call moves",
        _dequant_first_bytes,
        [
            Case((4096, 4096, 8), "int8 codes, a 4096 x 4096 weight"),
            Case((1024, 512, 4), "int4 codes"),
            Case((11008, 4096, 4), "an FFN-sized int4 weight", hidden=True),
            Case((3, 64, 2), "int2 codes, three channels", hidden=True),
        ],
        "count every read and every write of weight data in the two steps, the scales included; the lesson "
        "says where this path loses",
        [
            Mistake(
                "left out the write of the fp32 copy",
                lambda n, k, b: n * k * b / 8 + 4 * n + 4 * n * k,
            ),
            Mistake("left out the scales", lambda n, k, b: n * k * b / 8 + 8 * n * k),
            Mistake("counted the codes in bits, not bytes", lambda n, k, b: n * k * b + 4 * n + 8 * n * k),
            Mistake("counted only the compact codes", lambda n, k, b: n * k * b / 8 + 4 * n),
        ],
    ),
    Task(
        "06.compute_bound_from",
        "from which M a kernel is compute bound",
        _compute_bound_from,
        [
            Case((1000.0, 50.0, 16.0), "a bf16 kernel: 1000 GFLOP/s, 50 GB/s"),
            Case((400.0, 40.0, 4.25), "an int4 kernel with bf16 scales and zeros"),
            Case((989_000.0, 3350.0, 16.0), "an H100-like bf16 GEMM", hidden=True),
            Case((150.0, 42.6, 8.0), "a slow int8 kernel", hidden=True),
        ],
        "count the FLOPs of a [M, K] x [K, N] product and the bytes of its weight, and find the M at which "
        "their ratio reaches the kernel's peak over the bandwidth",
        [
            Mistake("counted one FLOP per multiply-add instead of two", lambda p, bw, b: p / bw * b / 8),
            Mistake("used bits per weight where bytes belong", lambda p, bw, b: p / bw * b / 2),
            Mistake("inverted the ridge (bandwidth over peak)", lambda p, bw, b: bw / p * b / 16),
            Mistake("returned the ridge point itself (FLOPs per byte), not M", lambda p, bw, b: p / bw),
        ],
        rtol=1e-6,
    ),
]


RECALL: tuple[Question, ...] = (
    choice(
        "Why can a per-output-channel scale be applied after the GEMM?",
        ("It is constant along K, so it factors out of the sum", True, "y[:, n] = s[n] * (x @ q[n, :])."),
        (
            "Because the GEMM is linear in x",
            False,
            "Tempting, since linearity is what moves things around in algebra; but a per-group scale is just as "
            "linear and still cannot leave the sum. What matters is that s[n] does not change with k.",
        ),
        (
            "It cannot; the weight must be dequantized first",
            False,
            "Tempting if you picture the formula W = s * q literally; but section 1 prints both orders: equal.",
        ),
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
        "At M = 1, why is dequantize-then-matmul slower than the fp32 GEMM?",
        (
            "It writes and re-reads a full fp32 copy of the weight: more bytes than fp32 alone",
            True,
            "At M = 1 the GEMM is bound by the bytes it moves, and this path moves more than fp32's.",
        ),
        (
            "int8 arithmetic is slower than fp32 arithmetic",
            False,
            "Tempting, since the codes are int8; but no int8 arithmetic happens on that path: the codes are "
            "converted to fp32 first and the GEMM is an fp32 one.",
        ),
        (
            "It is not slower: it reads a quarter of the weight bytes",
            False,
            "Tempting, since int8 is a quarter of fp32; but the fp32 copy it writes is read again by the GEMM, so "
            "the total traffic is larger, not smaller.",
        ),
    ),
    choice(
        "In W8A8 with per-token and per-channel scales, the rescale of the int32 accumulator is...",
        ("An [M, N] rank-1 matrix: the outer product of the two scale vectors", True, "s_x s_w^T."),
        (
            "A scalar",
            False,
            "Tempting if you think of one scale per tensor; with per-token and per-channel scales each output "
            "element gets its own product s_x[m] s_w[n].",
        ),
        (
            "A full-rank [M, N] matrix",
            False,
            "It is [M, N], but every entry is s_x[m] times s_w[n]: an outer product, rank 1.",
        ),
    ),
    choice(
        "Per-channel scales are said to add under 5% to a GEMM's time. Which placement adds the least work?",
        (
            "In the GEMM's epilogue, on the accumulator tile while it is in registers",
            True,
            "M x N multiplies next to M x N x K multiply-adds, and no extra pass over memory.",
        ),
        (
            "As a separate multiply after the GEMM",
            False,
            "Same multiplies, but one more pass over the [M, N] output and one more operator call (a kernel launch "
            "on a GPU): on the stored H100 run that fixed cost is far above 5% of a small GEMM.",
        ),
        (
            "By dequantizing the weight before the GEMM",
            False,
            "Tempting because it looks simplest; it costs N x K multiplies and writes and re-reads a full weight "
            "copy: a multiple of the GEMM's time at small M.",
        ),
    ),
    Numeric(
        "From lesson 04: int4 codes, one fp16 scale per group of 128. How many bits per weight does the kernel read?",
        4.125,
        "4 bits of code plus 16 bits of scale shared by 128 weights: 4 + 16/128.",
        tol=0.001,
        mistakes=(
            (4.0, "the scales are read too: 16 bits per group of 128"),
            (4.25, "that counts a zero point as well (a bf16 scale and zero, as PyTorch's int4 kernel stores)"),
            (20.0, "the scale is shared by the 128 weights of its group, not paid by each"),
        ),
    ),
)


PREDICT = {
    "group_after": choice(
        "The weight has one scale per group of 2 along K. You multiply x @ q.T on the codes, then scale each "
        "output by its row's mean scale. What comes out?",
        (
            "A wrong result: the scale changes inside the sum, so no one number per row stands for it",
            True,
            "The sum mixes products at different scales; only a scale that is constant along K can leave it.",
        ),
        (
            "The exact result: scaling is linear",
            False,
            "Tempting, because per-channel worked; but linearity lets a constant leave the sum, and this scale is "
            "not constant along k.",
        ),
        (
            "The exact result up to float rounding",
            False,
            "The gap is not rounding: it is the difference between each group's scale and the row's mean.",
        ),
    ),
    "dequant_first": choice(
        "At M = 1, int8 codes are dequantized to an fp32 weight and then multiplied. Against the plain fp32 GEMM, "
        "that takes...",
        (
            "More time: it writes a full fp32 weight and reads it again",
            True,
            "At M = 1 the time follows the bytes moved, and this path moves the codes, the fp32 copy (written and "
            "read) and more: several times fp32's traffic.",
        ),
        (
            "Less time: it reads a quarter of the weight bytes",
            False,
            "Tempting, since the stored weight is a quarter of fp32; but what the GEMM reads is the fp32 copy.",
        ),
        (
            "About the same: the GEMM dominates",
            False,
            "At M = 1 the GEMM does 2 FLOPs per weight; the extra conversion passes are as large as the GEMM itself.",
        ),
    ),
}

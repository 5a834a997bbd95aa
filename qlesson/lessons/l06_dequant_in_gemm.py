"""Lesson 06 · Dequantization inside a GEMM: the exercise tasks and the recall questions.

Sources: ``notebooks/06_dequant_in_gemm.py`` (the lesson) and
``exercises/solutions/06_dequant_in_gemm.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import numpy as np
import torch

from qlesson.course.checking import Case, Mistake, Task, same
from qlesson.course.recall import Numeric, Question, choice
from qlesson.lessons._shared import weights

_G = torch.Generator().manual_seed(1234 + 6)


def _w(*shape: int, spread: bool = True) -> torch.Tensor:
    return weights(_G, *shape, spread=spread)


def _kernel_scales(s: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # W[n, k] = s[n] q[n, k] / a[k]: 1 / a[k] follows feature k of x, s[n] follows output n
    return 1 / a, s


_KERNEL_HINT = "ask which index of W each factor follows, n or k, and whether that index survives the sum over k"
_KERNEL_MISTAKES = (
    Mistake("multiplied by AWQ's factor where the stored weight divides by it", lambda s, a: (a, s)),
    Mistake("swapped the two sides", lambda s, a: (s, 1 / a)),
    Mistake("left AWQ's factor out", lambda s, a: (torch.ones_like(a), s)),
)


def _kernel_y(uv, x: torch.Tensor, q: torch.Tensor, flat: bool = False) -> torch.Tensor | None:
    """The kernel's ((x * u) @ q.T) * v, or None where (u, v) are not a K-vector and an N-vector
    (``flat``: any shapes holding K and N values)."""
    if not isinstance(uv, (tuple, list)) or len(uv) != 2:
        return None
    try:
        u, v = (torch.as_tensor(np.asarray(t, dtype=np.float64)) for t in uv)
    except (TypeError, ValueError, RuntimeError):
        return None
    if flat and (u.numel(), v.numel()) == (q.shape[1], q.shape[0]):
        u, v = u.reshape(-1), v.reshape(-1)
    if u.shape != (q.shape[1],) or v.shape != (q.shape[0],):
        return None
    return ((x * u) @ q.T) * v


def _judge_kernel_scales(got, s: torch.Tensor, a: torch.Tensor) -> str | None:
    """Grade the kernel's output: any (u, v) whose y equals x @ W.T on a random x and codes q passes."""
    g = torch.Generator().manual_seed(len(a) * 1000 + len(s))
    x = torch.rand(3, len(a), generator=g, dtype=torch.float64) + 0.5  # positive: no cancellation in the sums
    q = torch.randint(1, 8, (len(s), len(a)), generator=g).double()
    y = _kernel_y(got, x, q)
    if y is not None and same(y, x @ (s.double()[:, None] * q / a.double()).T, 1e-5, 1e-6):
        return None
    for m in _KERNEL_MISTAKES:
        wrong = m.fn(s, a)
        if same(got, wrong, 1e-5, 1e-6) or (y is not None and same(y, _kernel_y(wrong, x, q), 1e-5, 1e-6)):
            return m.description
    flat = _kernel_y(got, x, q, flat=True)
    if y is None and flat is not None and same(flat, x @ (s.double()[:, None] * q / a.double()).T, 1e-5, 1e-6):
        return f"shape: the values are right, but u must have shape ({len(a)},) and v shape ({len(s)},)"
    if y is None:
        return "return two vectors (u, v): u with one value per feature of x (K), v one per output (N)"
    return _KERNEL_HINT


def _group_partials(x: torch.Tensor, q: torch.Tensor, g: int) -> torch.Tensor:
    m, k = x.shape
    n = q.shape[0]
    return torch.einsum("mgk,ngk->mng", x.reshape(m, k // g, g), q.reshape(n, k // g, g))


def _codes(n: int, k: int, bits: int = 4) -> torch.Tensor:
    return torch.randint(-(2 ** (bits - 1) - 1), 2 ** (bits - 1), (n, k), generator=_G).float()


def _scales_case(k: int, n: int, label: str, hidden: bool = False) -> Case:
    s = torch.rand(n, generator=_G, dtype=torch.float64) * 0.1 + 0.01
    a = torch.rand(k, generator=_G, dtype=torch.float64) * 3 + 0.5
    return Case((s, a), f"{label}: N={n}, K={k}", hidden)


def _group_case(m: int, k: int, n: int, g: int, hidden: bool = False) -> Case:
    return Case((_w(m, k), _codes(n, k), g), f"M={m}, K={k}, N={n}, group of {g}", hidden)


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


# The stored H200 run (notebooks/results/roofline_nvidia_h200.json and gemm_nvidia_h200.csv, written by
# `python -m qlesson.bench gemm --gpu-only`), to one decimal: bf16 GEMM TFLOP/s (lesson 06 prints it, Going deeper),
# fp32 GEMM TFLOP/s, read GB/s, and tinygemm's TFLOP/s at M = 256. Kept as numbers so that the task module reads no
# file (a clean room grades without the results folder); tests/test_lesson06_gpu.py recomputes them from the stored
# files.
_H200_BF16, _H200_FP32, _H200_BW, _H200_INT4 = 737.1, 51.0, 4129.3, 28.4


def _int4_loses_from(dense_tflops: float, dense_bytes: float, read_gb_s: float, int4_tflops: float) -> float:
    # the dense GEMM reads K N dense_bytes per call (memory bound below its ridge); the int4 kernel, compute bound,
    # takes 2 M K N / int4 rate: equal at M = rate / bandwidth * dense_bytes / 2 (TFLOP/s over GB/s: x 1000)
    return int4_tflops * 1000 / read_gb_s * dense_bytes / 2


TASKS: list[Task] = [
    Task(
        "06.kernel_scales",
        "an output scale and an AWQ factor on one weight",
        _kernel_scales,
        [
            _scales_case(4, 4, "a square weight"),
            _scales_case(6, 3, "more inputs than outputs"),
            _scales_case(2, 5, "more outputs than inputs"),
            _scales_case(8, 8, "a square weight", hidden=True),
            _scales_case(16, 7, "a wide weight", hidden=True),
        ],
        _KERNEL_HINT,
        _KERNEL_MISTAKES,
        judge=_judge_kernel_scales,  # many right answers: (c / a, s / c) for any c
        shows_expected=False,  # the expected v is the input s itself: a failure would show the answer
    ),
    Task(
        "06.group_partials",
        "each group's partial sum on the codes",
        _group_partials,
        [
            _group_case(2, 8, 3, 4),
            _group_case(1, 12, 2, 3),
            _group_case(4, 16, 5, 8, hidden=True),
            _group_case(3, 6, 2, 1, hidden=True),
        ],
        "a group is group_size neighbouring k; every [m, n] gets one sum per group, and the groups stay apart",
        [
            Mistake(
                "took every (K // group_size)-th k as a group: the groups are contiguous runs of k",
                lambda x, q, g: torch.einsum(
                    "mkg,nkg->mng", x.reshape(x.shape[0], g, -1), q.reshape(q.shape[0], g, -1)
                ),
            ),
            Mistake(
                "put the group axis in the middle: the shape is [M, N, groups]",
                lambda x, q, g: _group_partials(x, q, g).permute(0, 2, 1),
            ),
            Mistake(
                "put the group axis first: the shape is [M, N, groups]",
                lambda x, q, g: _group_partials(x, q, g).permute(2, 0, 1),
            ),
            Mistake("added the groups together: that is x @ q.T, one sum per [m, n]", lambda x, q, g: x @ q.T),
        ],
    ),
    Task(
        "06.zero_point_gemm",
        "the zero-point product from sums alone (from Going deeper)",
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
                "added zx * zw once: the constant is summed over all K terms",
                lambda a, r, c, zx, zw, k: a - zw[None, :] * r[:, None] - zx * c[None, :] + zx * zw[None, :],
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
        minutes=7,
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
        "follow the weight through both steps and count every read and every write of weight data, the scales included",
        [
            Mistake(
                "counted the fp32 copy only once",
                lambda n, k, b: n * k * b / 8 + 4 * n + 4 * n * k,
            ),
            Mistake(
                "counted two dequantize passes (q.float(), then * s), as eager PyTorch runs them: the statement's "
                "dequantize is one kernel",
                lambda n, k, b: n * k * b / 8 + 4 * n + 16 * n * k,
            ),
            Mistake(
                "copied the lesson's 17 bytes per int8 weight (two dequantize passes, scales left out): the "
                "statement's dequantize is one kernel, and its scales are weight data too",
                lambda n, k, b: n * k * b / 8 + 16 * n * k,
            ),
            Mistake(
                "counted 2-byte scales: the statement's scales are fp32 (4 bytes each)",
                lambda n, k, b: n * k * b / 8 + 2 * n + 8 * n * k,
            ),
            Mistake("left out the scales", lambda n, k, b: n * k * b / 8 + 8 * n * k),
            Mistake("counted the codes in bits, not bytes", lambda n, k, b: n * k * b + 4 * n + 8 * n * k),
            Mistake("counted only the compact codes", lambda n, k, b: n * k * b / 8 + 4 * n),
        ],
        minutes=4,
        shows_expected=False,  # expected / (N K) is the bytes per weight the task asks for
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
            Mistake(
                "off by a factor of 2: counted one FLOP per multiply-add (there are two), or a weight's bytes other "
                "than weight_bits / 8",
                lambda p, bw, b: p / bw * b / 8,
            ),
            Mistake(
                "off by a factor of 2 the other way (half the right M): counted a weight's bytes as less than "
                "weight_bits / 8, or more than two FLOPs per multiply-add",
                lambda p, bw, b: p / bw * b / 32,
            ),
            Mistake("used bits per weight where bytes belong", lambda p, bw, b: p / bw * b / 2),
            Mistake("inverted the ridge (bandwidth over peak)", lambda p, bw, b: bw / p * b / 16),
            Mistake(
                "returned the ridge point itself (FLOPs per byte), not M, or ignored weight_bits",
                lambda p, bw, b: p / bw,
            ),
        ],
        rtol=1e-6,
        shows_expected=False,  # a shown value could be back-solved into the formula
    ),
    Task(
        "06.int4_loses_from",
        "from which M a fused int4 kernel loses to a dense GEMM",
        _int4_loses_from,
        [
            Case(
                (_H200_BF16, 2.0, _H200_BW, _H200_INT4),
                "the stored H200 run: its bf16 GEMM peak, read bandwidth and tinygemm's rate at M = 256",
            ),
            Case((_H200_FP32, 4.0, _H200_BW, _H200_INT4), "the same H200 against its fp32 GEMM"),
            Case((989.0, 2.0, 3350.0, 40.0), "a faster int4 kernel on another GPU", hidden=True),
            Case((0.0185, 4.0, 11.7, 0.0137), "a 2-core CPU: fp32 against its int4 kernel", hidden=True),
        ],
        "at small M the dense GEMM's time is set by one thing and the int4 kernel's by another as soon as it is "
        "compute bound: find the M where those two times meet",
        [
            Mistake("mixed TFLOP/s with GB/s (a factor of 1000)", lambda p, b, bw, r: r / bw * b / 2),
            Mistake(
                "returned where the int4 kernel turns compute bound (its own ridge), or used the int4 weight's bytes "
                "where the dense weight's belong: matched against the wrong product's time",
                lambda p, b, bw, r: r / bw * 4.25 / 16 * 1000,
            ),
            Mistake(
                "returned where the dense GEMM turns compute bound",
                lambda p, b, bw, r: p / bw * b / 2 * 1000,
            ),
            Mistake("counted one FLOP per multiply-add instead of two", lambda p, b, bw, r: r / bw * b * 1000),
            Mistake(
                "used the dense format's bits per weight where its bytes belong (a factor of 8)",
                lambda p, b, bw, r: r / bw * b * 4 * 1000,
            ),
            Mistake(
                "added the int4 kernel's own read time to its arithmetic: its measured rate already includes its "
                "reads, which overlap the arithmetic at this M",
                lambda p, b, bw, r: (b - 0.53125) / bw * r / 2 * 1000,
            ),
            Mistake("left out the dense format's bytes per weight", lambda p, b, bw, r: r / bw * 1000),
        ],
        rtol=1e-3,
        minutes=10,
        shows_expected=False,  # case 1's expected value is the crossover the exercise discusses after the task
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
            "Because it is the same for every token",
            False,
            "Tempting, since a per-output scale does not change with the token; but a per-input-channel scale is "
            "the same for every token too, and it cannot go after the GEMM. What matters is the k axis.",
        ),
    ),
    choice(
        "A weight has one scale per INPUT channel, W[n, k] = s_in[k] * q[n, k]. Where can that scale go, short of "
        "dequantizing the weight?",
        (
            "Onto the activations: (x * s_in) @ q.T, or folded offline into the op that made x, where that op allows",
            True,
            "s_in[k] multiplies feature k of every token, so it moves to x, before the sum.",
        ),
        (
            "After the GEMM, one multiply per output",
            False,
            "Tempting, since per-output-channel scales go there; but s_in changes with k, so it cannot leave the sum.",
        ),
        (
            "Nowhere: it changes along K like a group scale, so it must act inside the reduction",
            False,
            "It does change along K, but it is the same for every output row n, so the whole column k of the "
            "product can carry it: on x, before the sum.",
        ),
    ),
    Numeric(
        "From lesson 04: int4 codes, one fp16 scale per group of 128. How many bits per weight does the kernel read?",
        4.125,
        "4 bits of code plus 16 bits of scale shared by 128 weights: 4 + 16/128.",
        tol=0.001,
        mistakes=(
            (4.0, "that counts the codes alone; the kernel reads the scales too"),
            (4.25, "that counts a zero point as well (a bf16 scale and zero, as PyTorch's int4 kernel stores)"),
            (20.0, "the scale is shared by the 128 weights of its group, not paid by each"),
        ),
    ),
)


PREDICT = {
    "group_after": choice(
        "The weight has one scale per group of 2 along K, s_group = [[0.5, 1.0], [0.25, 2.0]]. Multiply all the "
        "codes, x @ q.T, then scale each output by its row's mean scale (0.75 and 1.125). Against the exact y, "
        "that shortcut comes out...",
        (
            "Exact: the mean scale stands for both groups",
            False,
            "Tempting, because per-channel worked this way; but the mean weighs both groups' partial sums equally, "
            "and they differ, so the result is exact only when the partial sums happen to be equal.",
        ),
        (
            "Too small for both outputs: averaging pulls the large scale down",
            False,
            "Tempting if you picture the mean shrinking the larger scale; but whether an output comes out too big or "
            "too small depends on which group carries its larger partial sum.",
        ),
        (
            "Off in both directions: one output too small, the other too big",
            True,
            "Row 0's partial sums are -3 and 9: the larger sits in the group with the larger scale, so the mean "
            "scale shrinks it (4.5 against 7.5). Row 1's are 6 and 1: the larger sits in the group with the "
            "smaller scale, so the mean inflates it (7.875 against 3.5).",
        ),
    ),
    "int4_at_1_h200": choice(
        "On the stored H200 run at M = 1, PyTorch's int4 g128 weight is 0.27x fp16's bytes. Its time against "
        "fp16 F.linear's is...",
        (
            "About 0.27x: at M = 1 the time is the time to read the weight",
            False,
            "Tempting: at M = 1 the bytes set a floor. But a floor is not a time: fp16 takes 22 us against its "
            "8 us read floor, so neither call runs at the bandwidth and their ratio need not be the bytes'.",
        ),
        (
            "Faster, but well short of what its bytes allow",
            True,
            "int4 takes 12 us to fp16's 22, about 0.57x. Part of that gap is fp16's, not int4's bytes: fp32 "
            "F.linear in the same run reads twice fp16's bytes in 25 us, and at fp32's read rate fp16 would take "
            "about 13 us, int4's time.",
        ),
        (
            "About the same as fp16: the cost of a call swamps both reads",
            False,
            "Tempting, since both read floors (8 and 2 us) are small for a GPU call; but the times still differ: "
            "fp16 takes 22 us, int4 12 us.",
        ),
        (
            "Slower than fp16: it must unpack its codes first",
            False,
            "Tempting, since unpacking is extra work; but the codes are converted in registers, tile by tile, "
            "and at M = 1 int4 still comes out ahead.",
        ),
    ),
    "int4_at_1_cpu": choice(
        "At M = 1 the int4 g128 weight is 4.25 / 32 = 0.13x fp32's bytes. On your CPU, against fp32 F.linear, "
        "PyTorch's fused int4 kernel takes...",
        (
            "About 0.13x: at M = 1 the time is the time to read the weight",
            False,
            "Tempting, since the bytes set a floor; but a floor is not a time: reading its bytes is not all the "
            "kernel does, and your int4 row's `x fp32` lands above 0.13x.",
        ),
        (
            "More than 0.13x: its bytes set only a floor under its time",
            True,
            "Your int4 row's `x fp32` says how far above 0.13x it landed, and whether it beat fp32 at all on your "
            "CPU at its current load.",
        ),
        (
            "Several times fp32's time: its codes must first become an fp32 weight, written to memory and read back",
            False,
            "That is dequantize-then-matmul, a row of its own in the table; a fused kernel converts each tile "
            "of codes in registers and never writes an fp32 copy.",
        ),
    ),
    "int4_at_128_cpu": choice(
        "At M = 128 a fused int4 kernel still reads about 0.13x fp32's weight bytes, but each byte now serves "
        "128 rows of x. On your CPU, its time against its read floor (the benchmark's last line) is...",
        (
            "About its read floor: it still reads only its codes and scales",
            False,
            "Tempting, since at M = 1 the bytes set the floor; but at M = 128 each int4 weight byte serves about "
            "480 FLOPs (2 x 128 / 0.53), far past the kernel's ridge point (5.3 for int4 in the stored run), so "
            "the arithmetic, not the read, sets the time.",
        ),
        (
            "A few times its floor: unpacking the codes adds some work to the read",
            False,
            "Tempting, since unpacking is the work a float weight skips; but the floor counts only the read, and "
            "each weight now also serves 128 rows of multiply-adds. The last line puts the time tens of times "
            "above the floor (about 90 times in the stored run).",
        ),
        (
            "Tens of times its floor, or more: its own arithmetic sets it, not its bytes",
            True,
            "Each int4 weight byte now serves about 480 FLOPs, far past the kernel's ridge point, so the time is the "
            "kernel's work; the stored run put int8 and int4 about 50 and 90 times above their floors. Whether "
            "that work beats fp32's is a separate question: your int4 row's `x fp32` at M = 128 answers it for "
            "your CPU.",
        ),
    ),
}


EXERCISE_RECALL: tuple[Question, ...] = (
    choice(
        "Group scales (g = 64, K = 4096) applied to each group's partial sum: scale multiplies per output y[m, n]?",
        ("64: one per group, K / 64", True, "Each of the 4096 / 64 = 64 partial sums is scaled once, then added."),
        (
            "1, as a per-channel scale",
            False,
            "Tempting, since a scale per output channel needs one; but a group scale changes along K, so it cannot "
            "leave the whole sum, only each group's.",
        ),
        (
            "4096: one per weight",
            False,
            "That is dequantizing each weight before multiplying; within a group the scale is constant, so it "
            "leaves the group's partial sum and is applied once per group.",
        ),
    ),
    choice(
        "Dequantize-first takes several times fp32's time at M = 1 on a CPU. F.linear(x, q.float()) * s instead "
        "takes...",
        (
            "Less than dequantize-first, more than fp32: it still writes and re-reads an fp32 copy",
            True,
            "It drops one pass (9 bytes per int8 weight against 17) but keeps the fp32 copy, so it stays above "
            "fp32's 4 bytes.",
        ),
        (
            "About fp32's time: the scale now costs only M x N multiplies",
            False,
            "Tempting, since the scale itself became nearly free; but q.float() still writes a full fp32 copy that "
            "the GEMM reads back.",
        ),
        (
            "About the same as dequantize-first: the scale multiply was never the cost",
            False,
            "The scale multiply over the weight was one of the passes: a read and a write of a full fp32 copy.",
        ),
    ),
)

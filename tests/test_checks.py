"""The exercise checks accept right answers and reject typical wrong ones, naming the mistake."""

import math
import re

import numpy as np
import pytest
import torch

from qlesson.course.checking import CheckFailed, NotAttempted, evaluate
from qlesson.course.recall import LETTERS, Choice, Numeric, bank, feedback
from qlesson.course.tasks import check, tasks


# Wrong answers written the way learners write them (not the checker's own mistake functions).
def per_tensor_scale_for_channels(w, bits):
    return torch.full((w.shape[0],), float(w.abs().max())) / (2 ** (bits - 1) - 1)


def _errors_02(w, bits, err):
    """Lesson 02's worse rows, judged by ``err`` of each row's error instead of its mean |error|."""
    qmax = 2 ** (bits - 1) - 1
    shared = w.abs().max() / qmax
    own = w.abs().amax(1, keepdim=True) / qmax
    return err((w / own).round().clamp(-qmax, qmax) * own - w) > err(
        (w / shared).round().clamp(-qmax, qmax) * shared - w
    )


def _split_01(c, x, bits, part, full=False, signed_max=False, rule=torch.round):
    """Lesson 01's error split with each part reduced by ``part``; ``full``: on the range [-2^(b-1), 2^(b-1) - 1];
    ``signed_max``: the scale from c.max() (no abs); ``rule``: the rounding function."""
    top = 2 ** (bits - 1) if full else 2 ** (bits - 1) - 1
    scale = (c.max() if signed_max else c.abs().max()) / top
    r = rule(x / scale)
    q = torch.clamp(r, -top, 2 ** (bits - 1) - 1)
    e = (q * scale - x).abs()
    return part(e[r == q]), part(e[r != q])


def _clip_start_half_up(c, bits):  # lesson 01, task 1: the zero point rounded halves up, not to even
    lo, hi = c.min().clamp(max=0), c.max().clamp(min=0)
    scale = (hi - lo) / (2**bits - 1)
    zp = torch.floor(-lo / scale + 0.5).clamp(0, 2**bits - 1)
    return (-zp - 0.5) * scale, (2**bits - 1 - zp + 0.5) * scale


def _unwidened_01(c, bits):  # lesson 01, task 1: half a tick past the data's own min and max
    scale = (c.max().clamp(min=0) - c.min().clamp(max=0)) / (2**bits - 1)
    return c.min() - scale / 2, c.max() + scale / 2


def _clip_start_ruler_01(c, bits, rnd, top):  # lesson 01, task 1: the zero point by `rnd`, `top` as the last code
    lo, hi = c.min().clamp(max=0), c.max().clamp(min=0)
    scale = (hi - lo) / (2**bits - 1)
    zp = rnd(-lo / scale).clamp(0, 2**bits - 1)
    return (-zp - 0.5) * scale, (top - zp + 0.5) * scale


WRONG = {
    "01.clip_start": [
        (lambda c, bits: _unwidened_01(c, bits), "data's min and max"),
        (lambda c, bits: (c.min().clamp(max=0), c.max().clamp(min=0)), "None"),
        (
            lambda c, bits: (
                c.min().clamp(max=0) - (c.max().clamp(min=0) - c.min().clamp(max=0)) / (2**bits - 1) / 2,
                c.max().clamp(min=0) + (c.max().clamp(min=0) - c.min().clamp(max=0)) / (2**bits - 1) / 2,
            ),
            "half a tick past rmin and rmax",
        ),
        (
            lambda c, bits: (
                -c.abs().max() / (2 ** (bits - 1) - 1) * (2 ** (bits - 1) - 0.5),
                c.abs().max() / (2 ** (bits - 1) - 1) * (2 ** (bits - 1) - 0.5),
            ),
            "used a symmetric signed ruler",
        ),
        (lambda c, bits: _clip_start_half_up(c, bits), "halves up"),
        (lambda c, bits: _clip_start_ruler_01(c, bits, torch.floor, 2**bits - 1), "with floor"),
        (lambda c, bits: _clip_start_ruler_01(c, bits, torch.round, 2**bits), "as the top code"),
    ],
    "01.rounding_or_clipping": [
        (
            lambda c, x, bits: (
                ((x / (x.abs().max() / (2 ** (bits - 1) - 1))).round() * (x.abs().max() / (2 ** (bits - 1) - 1)) - x)
                .abs()
                .sum(),
                torch.tensor(0.0),
            ),
            "fitted the ruler to x",
        ),
        (lambda c, x, bits: tuple(reversed(_good("01.rounding_or_clipping")(c, x, bits))), "(clipping, rounding)"),
        (lambda c, x, bits: _split_01(c, x, bits, lambda e: (e**2).sum()), "squared errors"),
        (lambda c, x, bits: _split_01(c, x, bits, lambda e: e.mean() if e.numel() else e.sum()), "mean of each part"),
        (lambda c, x, bits: _split_01(c, x, bits, torch.sum, full=True), "used the full range"),
        (lambda c, x, bits: _split_01(c, x, bits, torch.sum, signed_max=True), "calibration's max"),
        (lambda c, x, bits: _split_01(c, x, bits, torch.sum, rule=torch.trunc), "trunc"),
    ],
    "01.clipping_takes_over": [
        (8, "halved the rounding part per bit"),
        (6.0, "the rounding part is still the larger"),
        (17, "clipping does overtake"),
        (5, "None"),
    ],
    "02.per_channel_scale": [
        (per_tensor_scale_for_channels, "per-tensor"),
        (lambda w, bits: w.abs().max(dim=0).values / (2 ** (bits - 1) - 1), "wrong axis"),
        (lambda w, bits: w.abs().amax(1) / 2 ** (bits - 1), "2**(bits-1) instead"),
        (lambda w, bits: w.abs().amax(1) / 7, "int4 hard-coded"),
        (lambda w, bits: w.abs().amax(1, keepdim=True) / (2 ** (bits - 1) - 1), "keepdim"),
        (lambda w, bits: w.abs().amax(1) / (2**bits - 1), "the unsigned range"),
        (lambda w, bits: w.amax(1) / (2 ** (bits - 1) - 1), "largest |value|"),
        (lambda w, bits: (w.abs().amax(1) / (2 ** (bits - 1) - 1)).masked_fill(w.abs().amax(1) == 0, 1), "scale of 1"),
    ],
    "02.quantize_per_channel": [
        (
            lambda w, bits: (
                (w / (w.abs().max() / (2 ** (bits - 1) - 1)))
                .round()
                .clamp(-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1),
                w.abs().max() / (2 ** (bits - 1) - 1) * torch.ones(w.shape[0]),
            ),
            "per-tensor",
        ),
        (
            lambda w, bits: (
                (w / (w.abs().amax(1, keepdim=True) / (2 ** (bits - 1) - 1)))
                .round()
                .clamp(-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1),
                w.abs().amax(1) / (2 ** (bits - 1) - 1),
            ),
            "divided by a zero scale",
        ),
        (
            lambda w, bits: (
                torch.nan_to_num(w / (w.abs().amax(1, keepdim=True) / 2 ** (bits - 1)))  # zero rows handled
                .round()
                .clamp(-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1),
                w.abs().amax(1) / 2 ** (bits - 1),
            ),
            "2**(bits-1) instead",
        ),
        (
            lambda w, bits: (
                torch.nan_to_num(w / (w.abs().amax(1, keepdim=True) / (2 ** (bits - 1) - 1))).int().float(),
                w.abs().amax(1) / (2 ** (bits - 1) - 1),
            ),
            "truncated toward zero",
        ),
    ],
    "02.worse_rows": [
        (lambda w, bits: (lambda s, o: o >= s)(*_good("02.row_maes")(w, bits)), "strictly larger"),
        (lambda w, bits: (lambda s, o: o < s)(*_good("02.row_maes")(w, bits)), "get better"),
        (lambda w, bits: _errors_02(w, bits, lambda e: e.mean(1)), "signed errors"),
        (lambda w, bits: _errors_02(w, bits, lambda e: e.pow(2).mean(1)), "root-mean-square"),
        (lambda w, bits: _errors_02(w, bits, lambda e: e.abs().amax(1)), "largest |error|"),
    ],
    "02.row_maes": [
        (lambda w, bits: tuple(reversed(_good("02.row_maes")(w, bits))), "wrong order"),
        (
            lambda w, bits: tuple(torch.full((w.shape[0],), float(m.mean())) for m in _good("02.row_maes")(w, bits)),
            "whole tensor",
        ),
        (lambda w, bits: _good("02.row_maes")(w, 4), "4 hard-coded"),
        (
            lambda w, bits: (
                _good("02.row_maes")(w, bits)[0],
                (_good("02.quantize_per_channel")(w.T, bits)[0].T * w.abs().amax(0) / (2 ** (bits - 1) - 1) - w)
                .abs()
                .mean(1),
            ),
            "input column",
        ),
    ],
    "02.rescued_rows": [
        (lambda w, bits: (w / (w.abs().max() / (2 ** (bits - 1) - 1))).round().eq(0).all(1), "all-zero row"),
        (
            lambda w, bits: (w.abs().amax(1) < w.abs().max() / (2 ** (bits - 1) - 1)) & (w.abs().amax(1) > 0),
            "below one shared tick",
        ),
        (lambda w, bits: (w / (w.max() / (2 ** (bits - 1) - 1))).round().eq(0).all(1) & w.ne(0).any(1), "signed"),
        (
            lambda w, bits: (
                (w / (w.abs().max() / (2 ** (bits - 1) - 1))).round().eq(0).all(1)
                & (w / (w.abs().amax(0) / (2 ** (bits - 1) - 1))).round().ne(0).any(1)
            ),
            "input column",
        ),
        (lambda w, bits: _good("02.rescued_rows")(w, 4), "4 hard-coded"),
        (lambda w, bits: (w / (w.abs().max() / (2**bits - 1))).round().eq(0).all(1) & w.ne(0).any(1), "unsigned"),
        (
            lambda w, bits: (w / (w.abs().max() / (2 ** (bits - 1) - 1))).round().sum(1).eq(0) & w.ne(0).any(1),
            "summed the codes",
        ),
        (
            lambda w, bits: torch.where(
                (w / (w.abs().max() / (2 ** (bits - 1) - 1))).round().eq(0).all(1) & w.ne(0).any(1)
            )[0],
            "not the row indices",
        ),
    ],
    "02.worse_prediction": [
        ([], "shrinks only the bound"),
        ([0, 1, 4, 5], "strictly larger"),
        ([2, 3], "gets better"),
        ([1, 2], "you missed 1 that do"),
        ([1, 2, 5], "half-way between shared ticks"),
    ],
    "02.erased_prediction": [
        (([2, 3, 4, 5, 6, 7], [3, 4, 5, 6, 7], []), "one shared tick"),
        (([4, 5, 6, 7], [5, 6, 7], []), "2**(bits-1) instead"),
        (([4, 5, 6, 7, 8], [5, 6, 7, 8], []), "numbered the rows from 1"),
        (([3, 4, 5, 6, 7], [4, 5, 6, 7], [4, 5, 6, 7]), "your int8 list is off"),
        (([4, 5, 6, 7], [4, 5, 6, 7], []), "your int3 list is off; your int4 and int8 lists are right"),
    ],
    "03.guess_bits": [
        (7, "counted a whole tick"),  # the quietest row past a whole shared tick, not half of one
        (5, "2**bits - 1"),  # 2**bits - 1 steps: 31 > 29.8 looks enough at 5 bits
        (31, "largest code"),  # the largest code of the right width typed in place of the width
        (30, "largest code"),  # 29.8 rounded up: the code the quietest row needs, not the bits
        (8, "None"),  # int8, the usual width
    ],
    "03.min_bits": [
        (  # torch.trunc: a row survives only once its largest weight reaches a whole tick
            lambda w: next(
                b for b in range(2, 17) if (torch.trunc(w / (w.abs().max() / (2 ** (b - 1) - 1))) != 0).any(1).all()
            ),
            "truncated instead of rounding",
        ),
        (  # looped over columns, the input channels of nn.Linear
            lambda w: next(
                b for b in range(2, 17) if (torch.round(w / (w.abs().max() / (2 ** (b - 1) - 1))) != 0).any(0).all()
            ),
            "checked the columns",
        ),
        (lambda w: 4, "None"),  # int4 hard-coded, the lesson's bit width
    ],
    "03.einsum_scales": [
        (lambda w, bits: torch.ones(w.shape[2]) * w.abs().max() / (2 ** (bits - 1) - 1), "per-tensor"),
        (lambda w, bits: w.abs().amax(dim=(1, 2)) / (2 ** (bits - 1) - 1), "one scale per head"),
        (lambda w, bits: w.reshape(-1, w.shape[2]).abs().amax(1) / (2 ** (bits - 1) - 1), "nn.Linear habit"),
        (lambda w, bits: w.abs().amax(dim=(0, 1)) / 127, "int8 hard-coded"),
        (lambda w, bits: w.abs().amax(dim=(0, 1)) / ((2**bits - 1) / 2), "half the asymmetric step count"),
        (lambda w, bits: (w.abs().amax(dim=(0, 1)) / (2 ** (bits - 1) - 1)).half(), "rounded to fp16"),  # .half() alone
    ],
    "04.quantize_per_group": [
        (
            lambda w, bits, g: (
                _good("02.quantize_per_channel")(w, bits)[0],
                _good("02.per_channel_scale")(w, bits).unsqueeze(1).repeat(1, w.shape[1] // g),
            ),
            "per-channel",
        ),
        (
            lambda w, bits, g: tuple(t.T for t in _good("04.quantize_per_group")(w.T.contiguous(), bits, g)),
            "wrong axis",
        ),
        (lambda w, bits, g: _good("04.quantize_per_group")(w, bits, 8), "None"),
        (lambda w, bits, g: _fp16_scales_04(w, bits, g), "rounded the scales to fp16"),
        (lambda w, bits, g: _plus8_04(w, bits, g), "used 2**(bits-1) for both"),
        (lambda w, bits, g: _floor_04(w, bits, g), "rounded down (floor)"),
    ],
    "04.q5_0_bits_per_weight": [
        (5.0, "left out the fp16 scale"),
        (4.5, "fifth bits"),
        (4.625, "counted qh[4] as 4 bits"),
        (6.0, "ggml_half is 2 bytes"),
        (5.25, "None"),
    ],
    "04.budget_prediction": [
        (((4, 128), (4, 128)), "outlier"),
        (((4, 256), (4, 256)), "largest group"),
        (((4, 128), (4, 256)), "255 of them"),
        (((4, 256), (4, 128)), "None"),
    ],
    "05.asymmetric_roundtrip": [
        (lambda x, bits: _roundtrip(x, bits, x.min(), x.max()), "did not widen"),
        (lambda x, bits: _roundtrip(x, bits, min(x.min(), 0), x.max()) if x.any() else x.clone(), "only one end"),
        (lambda x, bits: _roundtrip(x, bits, x.min(), max(x.max(), 0)) if x.any() else x.clone(), "only one end"),
        (lambda x, bits: _roundtrip(x, bits, min(x.min(), 0), max(x.max(), 0), sign=+1), "wrong sign"),
        (lambda x, bits: _symmetric_roundtrip(x, bits), "symmetric signed ruler"),
        (lambda x, bits: _roundtrip(x, 8, min(x.min(), 0), max(x.max(), 0)), "None"),
        (lambda x, bits: _float_min_codes_05(x, bits), "float minimum) but mapped back with the integer zero point"),
    ],
    "05.per_token_scales": [
        (lambda x, bits: x.abs().amax(0) / (2 ** (bits - 1) - 1), "per feature"),
        (lambda x, bits: x.abs().max().repeat(x.shape[0]) / (2 ** (bits - 1) - 1), "per-tensor"),
        (lambda x, bits: x.abs().amax(1) / 127, "int8 hard-coded"),
    ],
    "05.smooth_factors": [
        (lambda x, w, a: x.abs().amax(0) ** (1 - a) / w.abs().amax(0) ** a, "swapped alpha"),
        (lambda x, w, a: x.abs().amax(0) ** a / w.abs().amax(1).mean() ** (1 - a), "rows of w"),
        (lambda x, w, a: x.abs().amax(0) ** 0.5 / w.abs().amax(0) ** 0.5, "alpha 0.5 whatever"),
        (lambda x, w, a: (x.abs().max() ** a / w.abs().max() ** (1 - a)).repeat(x.shape[1]), "whole tensor"),
        (lambda x, w, a: x.abs().max() ** a / w.abs().max() ** (1 - a), "whole tensor"),
        (lambda x, w, a: x.max(dim=0).values ** a / w.max(dim=0).values ** (1 - a), "not its largest |value|"),
        (lambda x, w, a: x.amax(0) ** a / w.abs().amax(0) ** (1 - a), "not its largest |value|"),
        (lambda x, w, a: w.abs().amax(0) ** (1 - a) / x.abs().amax(0) ** a, "inverted the factor"),
        (lambda x, w, a: 1 / (x.abs().amax(0) ** a / w.abs().amax(0) ** (1 - a)), "inverted the factor"),
    ],
    "06.kernel_scales": [
        (lambda s, a: (a, s), "divides by it"),
        (lambda s, a: (s, 1 / a), "swapped"),
        (lambda s, a: (torch.ones_like(a), s), "left AWQ's factor out"),
        (lambda s, a: (1 / a, s * s), "which index of W"),  # graded by its output: the hint is the judge's
    ],
    "06.group_partials": [
        (
            lambda x, q, g: torch.einsum("mkg,nkg->mng", x.reshape(x.shape[0], g, -1), q.reshape(q.shape[0], g, -1)),
            "contiguous runs of k",
        ),
        (lambda x, q, g: _group_partials06(x, q, g).permute(0, 2, 1), "group axis in the middle"),
        (lambda x, q, g: x @ q.T, "added the groups together"),
        (lambda x, q, g: 2 * _group_partials06(x, q, g), "None"),
    ],
    "06.zero_point_gemm": [
        (lambda a, r, c, zx, zw, k: a - zw * r[:, None] - zx * c, "constant term"),
        (lambda a, r, c, zx, zw, k: a - zw * r[:, None] - zx * c + zx * zw, "summed over all K"),
        (lambda a, r, c, zx, zw, k: a - zw * r[:, None] - zx * c - k * zx * zw, "subtracted the constant"),
    ],
    "06.dequant_first_bytes": [
        (lambda n, k, b: n * k * b / 8 + 4 * n + 4 * n * k, "fp32 copy only once"),
        (lambda n, k, b: n * k * b / 8 + 2 * n + 8 * n * k, "scales are fp32"),
        (lambda n, k, b: n * k * b / 8 + 8 * n * k, "left out the scales"),
        (lambda n, k, b: n * k * b / 8 + 16 * n * k, "17 bytes per int8 weight"),
        (lambda n, k, b: n * k + 4 * n + 8 * n * k, "None"),
    ],
    "06.compute_bound_from": [
        (lambda p, bw, b: 2 * p / bw * b / 16, "one FLOP per multiply-add"),
        (lambda p, bw, b: p / bw, "the ridge point itself"),
        (lambda p, bw, b: p / bw * b / 32, "the other way"),
        (lambda p, bw, b: p / bw * 16 / b, "None"),
    ],
    "06.int4_loses_from": [
        (lambda p, b, bw, r: r / bw * b / 2, "factor of 1000"),
        (lambda p, b, bw, r: 1000 * p / bw * b / 2, "dense GEMM turns compute bound"),
        (lambda p, b, bw, r: 1000 * r / bw * 4.25 / 16, "its own ridge"),
        (lambda p, b, bw, r: 1000 * r / bw * b, "one FLOP per multiply-add"),
        (lambda p, b, bw, r: 1000 * r / bw * (8 * b) / 2, "bits per weight where its bytes belong"),
        (lambda p, b, bw, r: 1000 * r * b / bw / 8, "None"),
    ],
    "09.push_error": [
        (lambda w, j, q, hinv: _push(w, j, q, hinv, divide=False), "divide the error"),
        (lambda w, j, q, hinv: _push(w, j, q, hinv, start=0), "columns before j"),
    ],
    "09.gptq_per_channel": [
        (lambda w, x, s, bits: _gptq(w, x, bits, feedback=False, scale=s), "RTN"),
        (lambda w, x, s, bits: _gptq(w, x, bits, shrink=False, scale=s), "full inverse Hessian"),
        (lambda w, x, s, bits: _gptq(w, x, bits, scale=s, ticks=True), "in ticks"),
    ],
    "09.fewest_tokens": [
        (lambda w, xc, xh, ns, b: _fewest_09(w, xc, ns, b, lambda n: xc[:n]), "calibration tokens"),
        (lambda w, xc, xh, ns, b: next(n for n in ns if n >= w.shape[1]), "rule of thumb"),
        (lambda w, xc, xh, ns, b: _fewest_09(w, xc, ns, b, lambda n: xh, group=32), "compared with RTN g32"),
        (lambda w, xc, xh, ns, b: ns[len(ns) // 2], "None"),
        # calibrated on all of x_cal at every count, judged on x_held
        (lambda w, xc, xh, ns, b: _fewest_09(w, xc, [ns[0]], b, lambda n: xh), "all of x_cal"),
    ],
    "09.calib_text": [
        (lambda w, a, b, h, bits: _calib_09(w, a, b, h, bits, judge="cal"), "own calibration set"),
        (lambda w, a, b, h, bits: _calib_09(w, a, b, h, bits, base="channel"), "per-channel"),
        (lambda w, a, b, h, bits: _calib_09(w, a, b, h, bits, judge="energy"), "larger total energy"),
        (lambda w, a, b, h, bits: _calib_09(w, a, b, h, bits, judge="owncal"), "own calibration error"),
        (lambda w, a, b, h, bits: _calib_cat_09(w, a, b, h, bits), "anything but the set you chose"),
        (lambda w, a, b, h, bits: ("a", True), "None"),
        # the shortcut: the set whose normalised mean|x| profile is nearest x_held's, with no GPTQ fit to choose
        (
            lambda w, a, b, h, bits: _loudness_09(w, a, b, h, bits, lambda x: (_profile_09(x) - _profile_09(h)).norm()),
            "None",
        ),
        # the set whose normalised input correlation is nearest x_held's, with no GPTQ fit to choose
        (lambda w, a, b, h, bits: _loudness_09(w, a, b, h, bits, lambda x: (_corr_09(x) - _corr_09(h)).norm()), "None"),
        (lambda *args: _gap_09(*args), "None"),  # the set whose GPTQ error grows least from calibration to x_held
        (lambda *args: _margin_09(*args), "margin over groups of 32"),
    ],
    "09.pick": [
        (lambda w, xc, xh, b: ("gptq", b + 16 / w.shape[1]), "per-channel GPTQ, on every layer"),
        (lambda w, xc, xh, b: ("rtn_g32", b + 0.5), "groups of 32, on every layer"),
        (lambda w, xc, xh, b: _pick_09(w, xh, xh, b), "after calibrating on it"),
    ],
    "03.erased_channels": [
        (lambda w, bits: int((torch.round(w / (w.abs().max() / (2 ** (bits - 1) - 1))) == 0).all(dim=1).sum()), "rows"),
        (lambda w, bits: int((w.abs() < w.abs().max() / (2 ** (bits - 1) - 1)).all(dim=0).sum()), "whole tick"),
        (lambda w, bits: 0, "one scale per channel"),
    ],
    "10.kv_bytes": [
        (lambda L, H, D, T, b: L * H * D * T * b, "keys only"),
        (lambda L, H, D, T, b: 2 * H * D * T * b, "layers"),
    ],
    "10.keys_per_channel": [
        (lambda k, b: _kv_minmax(k, b, dim=1), "wrong axis"),
        (lambda k, b: _kv_sym(k, b), "symmetric"),
        (lambda k, b: _kv_minmax(k, b), "came back NaN"),
        (lambda k, b: _kv_int_zero(k, b), "zero point to an integer"),
    ],
    "10.peak_fp16_keys": [
        (lambda t, r, g: t - _kv_quantized(t, r, g), "after the last token"),
        (lambda t, r, g: min(r, t), "window only"),
        (lambda t, r, g: min(t, r + g), "group - 1"),
        (lambda t, r, g: r + g - 1, "only the tokens it has"),
    ],
    "10.choose_axis": [
        (lambda q, k, v, which, bits: "channel" if which == "k" else "token", "KIVI's rule"),
        (lambda q, k, v, which, bits: "token", "None"),
        (lambda q, k, v, which, bits: _both_axes(q, k, v, which, bits), "quantizing both tensors"),
        (lambda q, k, v, which, bits: _largest_error_axis(q, k, v, which, bits), "largest single error"),
    ],
    "10.sink_flip": [
        (0.5, "per token already wins"),
        (0.38, "per token already wins"),
        (1.03, "is not a share"),
        (0.9, "well before 90%"),
        (0.05, "per channel still wins"),
        (0.15, "somewhat larger share"),
        (25, "fraction of 1"),
    ],
    "10.key_bits": [
        (lambda b, g, t, r: (_kv_quantized(t, r, g) * (b - 16) + t * 16) / t, "minimum and scale"),
        (lambda b, g, t, r: _good("10.key_bits")(b, g, t, r) * 0 + b, "codes only"),
        (
            lambda b, g, t, r: (_kv_quantized(t, r, g) * (b + 16 / g) + (t - _kv_quantized(t, r, g)) * 16) / t,
            "no minimum",
        ),
        (lambda b, g, t, r: b + 32 / g, "share of a ruler"),
        (
            lambda b, g, t, r: (_kv_quantized(t, r, g) * (b + 32) + (t - _kv_quantized(t, r, g)) * 16) / t,
            "a whole ruler's 32 bits",
        ),
        (
            lambda b, g, t, r: (_kv_quantized(t, r, g) * (b + 64 / g) + (t - _kv_quantized(t, r, g)) * 16) / t,
            "32-bit floats",
        ),
        (
            lambda b, g, t, r: (max(t - r, 0) // g * g * (b + 32 / g) + min(r, t) * 16) / t,
            "incomplete group",
        ),
    ],
}


def _kv_quantized(t, r, g):
    """Keys quantized per channel after ``t`` tokens: whole groups older than the ``r``-token window."""
    return max(t - r, 0) // g * g


def _kv_minmax(k, b, dim=0):
    lo, hi = k.amin(dim, keepdim=True), k.amax(dim, keepdim=True)
    s = (hi - lo) / (2**b - 1)
    return torch.round((k - lo) / s).clamp(0, 2**b - 1) * s + lo


def _kv_int_zero(k, b):
    lo, hi = k.amin(0, keepdim=True), k.amax(0, keepdim=True)
    s = torch.where(hi > lo, (hi - lo) / (2**b - 1), torch.ones_like(hi))
    z = torch.round(-lo / s)
    return ((torch.round(k / s) + z).clamp(0, 2**b - 1) - z) * s


def _largest_error_axis(q, k, v, which, b):
    """Task 10.4 measured by the output's largest absolute error instead of its summed squares."""

    def head(k, v):
        return torch.softmax(q @ k.T / k.shape[1] ** 0.5, dim=-1) @ v

    err = {}
    for a, d in (("token", 1), ("channel", 0)):
        t = k if which == "k" else v
        lo, hi = t.amin(d, keepdim=True), t.amax(d, keepdim=True)
        s = ((hi - lo) / (2**b - 1)).clamp_min(1e-30)  # a constant ruler (token 0 of a sink head) keeps its value
        x = torch.round((t - lo) / s).clamp(0, 2**b - 1) * s + lo
        err[a] = float((head(k, v) - (head(x, v) if which == "k" else head(k, x))).abs().max())
    return min(err, key=err.get)


def _both_axes(q, k, v, which, b):
    """Task 10.4 with keys and values both quantized on each axis (the cache stores only ``which``)."""

    def head(k, v):
        return torch.softmax(q @ k.T / k.shape[1] ** 0.5, dim=-1) @ v

    err = {
        a: float((head(k, v) - head(_kv_minmax(k, b, d), _kv_minmax(v, b, d))).square().sum())
        for a, d in (("token", 1), ("channel", 0))
    }
    return min(err, key=err.get)


def _kv_sym(k, b):
    s = k.abs().amax(0, keepdim=True) / (2 ** (b - 1) - 1)
    return torch.round(k / s).clamp(-(2 ** (b - 1) - 1), 2 ** (b - 1) - 1) * s


def _push(w, j, q, hinv, divide=True, start=None):
    """One GPTQ error-feedback step, written like a learner would (for wrong answers)."""
    out = w.clone()
    e = out[:, j] - q
    if divide:
        e = e / hinv[j, j]
    first = j if start is None else start
    out[:, first:] = out[:, first:] - torch.outer(e, hinv[j, first:])
    return out


def _calib_09(*args, **kwargs):
    """Lesson 09's calib_text with one step done wrong (``judge="cal"`` or ``"energy"``, or ``base="channel"``)."""
    from qlesson.lessons.l09_smarter_rounding import _calib_text

    return _calib_text(*args, **kwargs)


def _calib_cat_09(w, x_a, x_b, x_held, bits):
    """Lesson 09's calib_text choosing the set on x_held, then calibrating GPTQ on both sets to decide ``beats``."""
    import qlesson as ql
    from qlesson.lessons.l09_smarter_rounding import _calib_text, _relative_output_error
    from qlesson.quant.gptq import gptq

    best, _ = _calib_text(w, x_a, x_b, x_held, bits)
    fit = gptq(w, torch.cat([x_a, x_b]), bits).dequantize()
    rtn = ql.fake_quantize(w, bits, granularity=ql.PerGroup(32))
    return best, _relative_output_error(x_held, w, fit) < _relative_output_error(x_held, w, rtn)


def _loudness_09(w, x_a, x_b, x_held, bits, score):
    """Lesson 09's calib_text choosing the set with the lower ``score`` of its inputs alone (for shortcuts)."""
    import qlesson as ql

    def err(w_hat):
        return float((x_held @ (w - w_hat).T).square().sum())

    name, x = min((("a", x_a), ("b", x_b)), key=lambda nx: float(score(nx[1])))
    g32 = ql.quantize(w, bits, granularity=ql.PerGroup(32)).dequantize()
    return name, err(ql.gptq(w, x, bits).dequantize()) < err(g32)


def _corr_09(x):
    """The inputs' normalised correlation matrix: the feature mix without the loudness."""
    c = x.T @ x
    d = c.diagonal().sqrt()
    return c / d[:, None] / d[None, :]


def _gap_09(w, x_a, x_b, x_held, bits):
    """Lesson 09's calib_text choosing the set whose GPTQ fit loses least from its calibration set to x_held."""
    import qlesson as ql

    def rel(x, w_hat):
        return float((x @ (w - w_hat).T).square().sum() / (x @ w.T).square().sum())

    fits = {n: (x, ql.gptq(w, x, bits).dequantize()) for n, x in (("a", x_a), ("b", x_b))}
    name = min(fits, key=lambda n: rel(x_held, fits[n][1]) - rel(*fits[n]))
    g32 = ql.quantize(w, bits, granularity=ql.PerGroup(32)).dequantize()
    return name, rel(x_held, fits[name][1]) < rel(x_held, g32)


def _margin_09(w, x_a, x_b, x_held, bits):
    """Lesson 09's calib_text choosing the set where GPTQ beats groups of 32 by most on that set's own tokens."""
    import qlesson as ql

    def rel(x, w_hat):
        return float((x @ (w - w_hat).T).square().sum() / (x @ w.T).square().sum())

    g32 = ql.quantize(w, bits, granularity=ql.PerGroup(32)).dequantize()
    fits = {n: (x, ql.gptq(w, x, bits).dequantize()) for n, x in (("a", x_a), ("b", x_b))}
    name = min(fits, key=lambda n: rel(fits[n][0], fits[n][1]) - rel(fits[n][0], g32))
    return name, rel(x_held, fits[name][1]) < rel(x_held, g32)


def _pick_09(w, x_fit, x_judge, bits):
    """Lesson 09's pick with GPTQ calibrated on ``x_fit`` and both judged on ``x_judge`` (for wrong answers)."""
    import qlesson as ql

    def rel(w_hat):
        return float((x_judge @ (w - w_hat).T).square().sum() / (x_judge @ w.T).square().sum())

    gptq = rel(ql.gptq(w, x_fit, bits).dequantize())
    g32 = rel(ql.quantize(w, bits, granularity=ql.PerGroup(32)).dequantize())
    return ("gptq", bits + 16 / w.shape[1]) if gptq < g32 else ("rtn_g32", bits + 16 / 32)


def _profile_09(x):
    """Each input feature's mean |x|, as a share of their sum: the feature mix without the loudness."""
    p = x.abs().mean(0)
    return p / p.sum()


def _gptq(w, x, bits, feedback=True, shrink=True, scale=None, ticks=False):
    """Per-channel GPTQ with the explicit inverse Hessian, written like a learner would."""
    w, top = w.clone(), 2 ** (bits - 1) - 1
    scale = w.abs().max(dim=1).values / top if scale is None else scale
    h = 2 * x.T @ x / len(x)
    hinv = torch.linalg.inv(h + 0.01 * h.diag().mean() * torch.eye(len(h), dtype=h.dtype))
    q = torch.zeros_like(w)
    for j in range(w.shape[1]):
        q[:, j] = (w[:, j] / scale).round().clamp(-top, top)
        if feedback:
            w = _push(w, j, q[:, j] if ticks else q[:, j] * scale, hinv)  # ticks: a slip, codes for values
        if shrink:
            hinv = hinv - torch.outer(hinv[:, j], hinv[j, :]) / hinv[j, j]
    return q


def _fewest_09(w, x_cal, ns, bits, judge_on, group=None):
    """The first n whose GPTQ beats RTN on the tokens ``judge_on(n)`` (for wrong answers); ``group``: RTN with
    groups of that many columns (the last one shorter where it does not divide)."""
    import qlesson as ql

    rtn = ql.quantize(w, bits, granularity=ql.PerChannel(0)).dequantize()
    if group:
        parts = [ql.quantize(c, bits, granularity=ql.PerChannel(0)).dequantize() for c in w.split(group, dim=1)]
        rtn = torch.cat(parts, dim=1)
    for n in ns:
        x, w_hat = judge_on(n), ql.gptq(w, x_cal[:n], bits).dequantize()
        if (x @ (w - w_hat).T).square().sum() < (x @ (w - rtn).T).square().sum():
            return n
    return ns[-1]


def _roundtrip(x, bits, lo, hi, sign=-1):
    """An independently written asymmetric round trip with a chosen range (for wrong answers)."""
    scale = (hi - lo) / (2**bits - 1)
    zp = torch.round(sign * lo / scale)
    if sign > 0:
        zp = zp.clamp(0, 2**bits - 1)
    q = torch.clamp(torch.round(x / scale) + zp, 0, 2**bits - 1)
    return (q - zp) * scale


def _float_min_codes_05(x, bits):
    """Codes of x - rmin, mapped back with the rounded zero point: wrong wherever -rmin / scale is not a code."""
    lo, hi = min(x.min(), 0), max(x.max(), 0)
    scale = (hi - lo) / (2**bits - 1)
    if scale == 0:
        return torch.zeros_like(x)
    q = torch.clamp(torch.round((x - lo) / scale), 0, 2**bits - 1)
    return (q - torch.round(-lo / scale)) * scale


def _symmetric_roundtrip(x, bits):
    scale = x.abs().max() / (2 ** (bits - 1) - 1)
    return torch.zeros_like(x) if scale == 0 else torch.round(x / scale) * scale


def _good(task_id):
    return tasks()[task_id].reference


# Lesson 08, written as a learner would: a table of FP4 magnitudes, a loop for the nearest one.
_FP4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def _top_by_hand(amax, grid, *, clip=True, fp4_as_int=False, exponent=None, trunc_int=False, half_up=False):
    e = math.floor(math.log2(amax)) - 2 if exponent is None else exponent(amax)
    v = amax / 2**e
    if grid == "FP4" and not fp4_as_int:
        best = min(_FP4 + ([] if clip else [8.0]), key=lambda t: abs(t - v))
    else:
        best = math.floor(v) if trunc_int else math.floor(v + 0.5) if half_up else round(v)
        best = min(best, 6 if grid == "FP4" else 7) if clip else best
    return best * 2**e


WRONG_08 = {
    "08.floor_top": [
        (lambda a, g: _top_by_hand(a, g, clip=False), "did not clip"),
        (lambda a, g: _top_by_hand(a, g, clip=g == "FP4"), "int4's grid"),
        (lambda a, g: _top_by_hand(a, g, exponent=lambda x: math.floor(math.log2(x / 6))), "amax / 6 on both"),
        (lambda a, g: _top_by_hand(a, g, exponent=lambda x: math.floor(math.log2(x))), "at or below amax, as the"),
        (lambda a, g: _top_by_hand(a, g, fp4_as_int=True), "evenly spaced ticks"),
        (lambda a, g: _top_by_hand(a, g, exponent=lambda x: math.ceil(math.log2(x)) - 2), "ceil rule"),
        (lambda a, g: _top_by_hand(a, g, exponent=lambda x: round(math.log2(x)) - 2), "rounded log2 amax"),
        (
            lambda a, g: _top_by_hand(a, g, exponent=lambda x: math.floor(math.log2(x / (6 if g == "FP4" else 7)))),
            "at or below the ideal scale",
        ),
        (lambda a, g: a, "returned amax itself"),
        (lambda a, g: _top_by_hand(a, g, trunc_int=True), "truncated amax / scale"),
        (lambda a, g: _top_by_hand(a, g, half_up=True), "rounded a tie"),
        (lambda a, g: 2.0 ** (math.floor(math.log2(a)) - 2), "None"),  # returned the scale
    ],
    "08.sub_scales": [
        (lambda s, b: _sub_by_hand(s, b, lowest=0), "let a quiet block"),
        (lambda s, b: _sub_by_hand(s, b, fp16=False), "kept the super-scale in float64"),
        (lambda s, b: _sub_by_hand(s, b, fp16=False, f32=True), "kept the super-scale in float32"),
        (lambda s, b: _sub_by_hand(s, b, rnd=np.floor), "truncated"),
        (lambda s, b: _sub_by_hand(s, b, fp16_max=True), "rounded the loudest scale to float16"),
        (lambda s, b: _sub_by_hand(s, b, top=np.mean), "None"),
        (lambda s, b: _sub_by_hand(s, b, signed=True), "signed range"),
    ],
    "08.quiet_block_bits": [
        (lambda c, r, t: _bits_by_hand(c, t), "answer for a block about as loud"),
        (lambda c, r, t: _bits_by_hand(c, t / r, step=1.0), "counted a whole step"),
        (lambda c, r, t: _bits_signed_sub_scale(c, r, t), "counted a whole step"),
        (lambda c, r, t: _bits_by_hand(c, t / r, qmax=1), "bounded the scale's relative error"),
        (lambda c, r, t: _bits_by_hand(c, t * r), "made the quiet block's move smaller"),
        (lambda c, r, t: _bits_by_hand(c, t / r, strict=True), "strictly below"),
        (lambda c, r, t: _bits_rounded_up(c, r, t), "counted the scale rounded up"),
        (lambda c, r, t: _bits_integer_steps(c, r, t), "rounded the quiet block's step count"),
        (lambda c, r, t: int((2 ** (c - 1) - 1) * r / (2 * t)).bit_length(), "took the bit length"),
        (lambda c, r, t: _bits_by_hand(c, t) + int(math.log2(r)), "None"),
    ],
}
WRONG |= WRONG_08


def _bits_signed_sub_scale(code_bits, r, max_ticks):
    """Lesson 08, task 2 with a signed sub-scale: 2**(bits - 1) - 1 steps."""
    qmax = 2 ** (code_bits - 1) - 1
    return next(b for b in range(2, 41) if qmax * r / (2 * (2 ** (b - 1) - 1)) <= max_ticks)


def _sub_by_hand(
    ideal, bits, *, lowest=1, fp16=True, rnd=np.round, top=np.max, mixed=False, signed=False, f32=False, fp16_max=False
):
    """Lesson 08's sub-scales as a learner might write them, one block at a time."""
    m = 2 ** (bits - 1) - 1 if signed else 2**bits - 1
    if fp16_max:  # the loudest scale rounded to float16 before the division
        d = float(np.float16(top(ideal))) / m
        return np.array([min(max(rnd(s / d), lowest), m) * d for s in ideal])
    d = top(ideal) / m
    d = float(np.float32(d)) if f32 else d
    d16 = float(np.float16(d)) if fp16 else float(d)
    step = float(d) if mixed else d16  # mixed: rounds with the float64 super-scale, stores the float16 one
    return np.array([min(max(rnd(s / step), lowest), m) * d16 for s in ideal])


def _bits_integer_steps(code_bits, r, max_ticks):
    """Lesson 08's quiet block with its sub-scale taken as the integer round(m / r)."""
    q, b = 2 ** (code_bits - 1) - 1, 1
    while q / (2 * max(1, round((2**b - 1) / r))) > max_ticks:
        b += 1
    return b


def _bits_rounded_up(code_bits, r, max_ticks):
    """Lesson 08's quiet block, counted exactly but for a scale rounded up by half a step."""
    q, b = 2 ** (code_bits - 1) - 1, 1
    while q / (2 * (2**b - 1) / r + 1) > max_ticks:
        b += 1
    return b


def _bits_by_hand(code_bits, max_ticks, *, step=0.5, qmax=None, strict=False):
    q = 2 ** (code_bits - 1) - 1 if qmax is None else qmax
    b = 1
    while not (q * step / (2**b - 1) < max_ticks if strict else q * step / (2**b - 1) <= max_ticks):
        b += 1
    return b


def _q4_0_by_hand(block, *, neighbours=False, d_bytes=2):
    """Lesson 04's block read the way a learner might write it, with a loop over the 16 code bytes."""
    b = [int(x) for x in block]
    d = float(np.frombuffer(bytes(b[:d_bytes]), dtype=np.float16 if d_bytes == 2 else np.float32)[0])
    lows, highs = [x & 15 for x in b[2:]], [x >> 4 for x in b[2:]]
    q = [c for pair in zip(lows, highs, strict=True) for c in pair] if neighbours else lows + highs
    return torch.tensor([d * (c - 8) for c in q], dtype=torch.float32)


def _fp16_scales_04(w, bits, g):
    """Lesson 04's task 1 with the scales kept in fp16, as a runtime stores them; the codes divide by them."""
    n, k, qm = *w.shape, 2 ** (bits - 1) - 1
    groups = w.reshape(n, k // g, g)
    s = (groups.abs().amax(-1) / qm).half()
    q = torch.clamp(torch.round(groups / torch.where(s == 0, 1.0, s)[..., None]), -qm, qm)
    return q.reshape(n, k), s


def _plus8_04(w, bits, g):
    """Lesson 04's task 1 with qmax = 2**(bits-1) for the scale and the clamp, written as a learner would."""
    qmax = 2 ** (bits - 1)
    groups = w.reshape(w.shape[0], -1, g)
    scale = groups.abs().amax(-1) / qmax
    q = (groups / torch.where(scale == 0, 1.0, scale)[..., None]).round().clamp(-qmax, qmax)
    return q.reshape(w.shape), scale


def _floor_04(w, bits, g):
    """Lesson 04's task 1 rounding down, written as a learner would."""
    qmax = 2 ** (bits - 1) - 1
    groups = w.reshape(w.shape[0], -1, g)
    scale = groups.abs().amax(-1) / qmax
    q = torch.floor(groups / torch.where(scale == 0, 1.0, scale)[..., None]).clamp(-qmax, qmax)
    return q.reshape(w.shape), scale


def _mse_04(w, bits, g):
    q, s = _good("04.quantize_per_group")(w, bits, g)
    return float(((q.reshape(w.shape[0], -1, g) * s[..., None]).reshape(w.shape) - w).pow(2).mean())


WRONG_04 = {
    "04.dequantize_q4_0_block": [
        (lambda b: _q4_0_by_hand(b, neighbours=True), "paired neighbours"),
        (lambda b: _q4_0_by_hand(b, d_bytes=4), "read d as fp32"),
        (lambda b: _q4_0_by_hand(b) + 8 * float(np.frombuffer(bytes(b[:2].tolist()), np.float16)[0]), "offset"),
        (lambda b: _q4_0_by_hand(b).flip(0), "None"),
    ],
    "04.best_setting": [
        (lambda w, budget, s: min((x for x in s if x[0] <= budget), key=lambda x: _mse_04(w, *x)), "left out"),
        (lambda w, budget, s: max((x for x in s if x[0] + 16 / x[1] <= budget), key=lambda x: _mse_04(w, *x)), "None"),
        (lambda w, budget, s: min(s, key=lambda x: abs(x[0] + 16 / x[1] - budget)), "without measuring"),
        (  # the error of the integer codes against w, the scales never applied
            lambda w, budget, s: min(
                (x for x in s if x[0] + 16 / x[1] <= budget),
                key=lambda x: float((_good("04.quantize_per_group")(w, *x)[0] - w).pow(2).mean()),
            ),
            "integer codes",
        ),
    ],
}
WRONG |= WRONG_04


def _trunc_07(row, top):  # lesson 07, task 2: the ends' codes truncated, not rounded
    scale = row.abs().max() / top
    return 2 * top - (int(row.max() / scale) - int(row.min() / scale))


def _reach_07(row, top, cut=torch.round):  # lesson 07, task 2: the highest end's code minus the lowest's, rounded
    scale = row.abs().max() / top
    return int(cut(row.max() / scale)) - int(cut(row.min() / scale))


def _by_max_07(w, bits):  # lesson 07, task 3: the two rulers' largest errors compared, not their MAE
    from qlesson import PerChannel, fake_quantize

    pc = (fake_quantize(w, bits, granularity=PerChannel(0)) - w).abs().max()
    return "per-channel" if pc < (fake_quantize(w, bits, symmetric=False) - w).abs().max() else "zero point"


WRONG_07 = {
    "07.finer_by": [
        (lambda w: w.abs().max() / w.abs().amax(dim=1), "the symmetric rule"),
        (lambda w: (w.max() - w.min()) / (w.amax(dim=1) - w.amin(dim=1)), "widened to include 0"),
        (lambda w: (w.amax(1).clamp(min=0) - w.amin(1).clamp(max=0)) / (max(w.max(), 0) - min(w.min(), 0)), "inverted"),
        (
            lambda w: (max(w.max(), 0) - min(w.min(), 0)) / (w.amax(0).clamp(min=0) - w.amin(0).clamp(max=0)),
            "wrong axis",
        ),
        (
            lambda w: (max(w.max(), 0) - min(w.min(), 0)) / (w.amax(dim=1) - w.amin(dim=1)),
            "not each channel's",
        ),
        (
            lambda w: ((max(w.max(), 0) - min(w.min(), 0)) / (w.amax(1).clamp(min=0) - w.amin(1).clamp(max=0))).round(),
            "rounded",
        ),
    ],
    "07.out_of_reach": [
        (lambda r, b: [_trunc_07(row, 2 ** (b - 1) - 1) for row in r], "truncated toward 0"),
        (lambda r, b: [int((r[i] < 0).sum()) for i in range(len(r))], "None"),
        (lambda r, b: [2**b - _reach_07(row, 2 ** (b - 1)) for row in r], "2**(bits-1)"),
        (lambda r, b: [_trunc_07(row, 2 ** (b - 1) - 1) + 1 for row in r], "None"),
        (lambda r, b: [2 * (2 ** (b - 1) - 1) - _reach_07(row, 2 ** (b - 1) - 1, torch.ceil) for row in r], "ceil"),
        (lambda r, b: [2 * (2 ** (b - 1) - 1) - 1 - _reach_07(row, 2 ** (b - 1) - 1) for row in r], "one too few"),
    ],
}


def _choice_07(w, bits, axis=0):  # lesson 07, task 3 with per-channel rulers along another axis
    from qlesson import PerChannel, fake_quantize

    pc = (fake_quantize(w, bits, granularity=PerChannel(axis)) - w).abs().mean()
    return "per-channel" if pc < (fake_quantize(w, bits, symmetric=False) - w).abs().mean() else "zero point"


def _vote_07(w, bits):  # lesson 07, task 3: a majority vote over the rows' own MAEs, not the tensor's MAE
    from qlesson import PerChannel, fake_quantize

    pc = (fake_quantize(w, bits, granularity=PerChannel(0)) - w).abs().mean(dim=1)
    pt = (fake_quantize(w, bits, symmetric=False) - w).abs().mean(dim=1)
    return "per-channel" if (pc < pt).sum() > len(pc) / 2 else "zero point"


def _median_07(w, bits):  # lesson 07, task 3: the rows' median MAEs compared, not the tensor's MAE
    from qlesson import PerChannel, fake_quantize

    pc = (fake_quantize(w, bits, granularity=PerChannel(0)) - w).abs().mean(dim=1)
    pt = (fake_quantize(w, bits, symmetric=False) - w).abs().mean(dim=1)
    return "per-channel" if pc.median() < pt.median() else "zero point"


WRONG_07["07.lower_error"] = [
    (lambda w, b: _choice_07(w, b, axis=1), "each column"),
    (lambda w, b: "per-channel", "shared symmetric ruler"),
    (lambda w, b: "zero point", "None"),
    (lambda w, b: _by_max_07(w, b), "largest errors"),
    (lambda w, b: _vote_07(w, b), "a vote or a median"),
    (lambda w, b: _median_07(w, b), "a vote or a median"),
    (lambda w, b: "zero-point", "return exactly"),
    (
        lambda w, b: {"per-channel": "zero point"}.get(tasks()["07.lower_error"].reference(w, b), "per-channel"),
        "other one",
    ),
]
WRONG_07["07.lower_error_prediction"] = [
    (("per-channel", "per-channel"), "None"),
    (("zero point", "zero point"), "None"),
    (("per-channel", "zero point"), "None"),
    (("Per-channel", "zero-point"), "spell each winner exactly"),
    ("per-channel", "a pair of two strings"),
]
WRONG |= WRONG_07


def _max_only_05(lo, hi):  # the symmetric step from the max, ignoring the negative side
    top, bottom = float(hi.max()), min(float(lo.min()), 0.0)
    absmax = torch.maximum(lo.abs(), hi.abs())
    token = "per-token" if max(-bottom, top) >= 1.5 * float(absmax.median()) else "per-tensor"
    return ("asymmetric" if top / 127 >= 1.5 * (top - bottom) / 255 else "symmetric", token)


def _token_rule_05(lo, hi, token_top, typical, reverse=False):  # the right asymmetric answer, a wrong per-token rule
    bottom, top = min(float(lo.min()), 0.0), max(float(hi.max()), 0.0)
    plain, token = max(-bottom, top) / 127, float(typical(token_top)) / 127
    wins = token >= 1.5 * plain if reverse else plain >= 1.5 * token
    return ("asymmetric" if plain >= 1.5 * (top - bottom) / 255 else "symmetric", "per-token" if wins else "per-tensor")


WRONG_05 = {
    "05.loudest_after_smoothing": [
        (lambda x, w, a: int(x.abs().max(dim=0).values.argmax()), "loudest feature before smoothing"),
        (lambda x, w, a: int(w.abs().max(dim=0).values.argmax()), "weight column is loudest"),
        (lambda x, w, a: int((x.abs().amax(0) / w.abs().amax(0)).argmax()), "what s_j grows with"),
        (
            lambda x, w, a: int((x * (x.abs().amax(0) ** a / w.abs().amax(0) ** (1 - a))).abs().amax(0).argmax()),
            "multiplied x by s",
        ),
        (lambda x, w, a: int((x / (x.abs().amax(0) ** a / w.abs().amax(0) ** (1 - a))).abs().argmax()), "None"),
        (
            lambda x, w, a: int((x / (x.abs().amax(0) ** a / w.abs().amax(0) ** (1 - a))).max(dim=0).values.argmax()),
            "largest |value|",
        ),
        (
            lambda x, w, a: int(
                (x / (x.max(dim=0).values ** a / w.abs().max(dim=0).values ** (1 - a))).abs().amax(0).argmax()
            ),
            "NaN factor",
        ),
    ],
    "05.which_tool": [
        (
            lambda x: "smooth" if float(x.abs().amax(0).max()) > 5 * float(x.abs().amax(0).median()) else "per-token",
            "one token in six",
        ),
        (
            lambda x: "smooth" if float(x.abs().mean(0).max()) > 4 * float(x.abs().mean(0).median()) else "per-token",
            "mean |x| over tokens",
        ),
        (
            lambda x: "per-token" if float(x.abs().amax(1).max()) > 3 * float(x.abs().amax(1).median()) else "smooth",
            "answered per-token on every case",
        ),
    ],
    "05.choose_ruler": [
        (lambda lo, hi: ("asymmetric", "per-token"), "None"),
        (lambda lo, hi: ("symmetric", "per-tensor"), "None"),
        (_max_only_05, "max only"),
        (lambda lo, hi: _token_rule_05(lo, hi, hi.abs(), torch.median), "its max only"),
        (lambda lo, hi: _token_rule_05(lo, hi, hi - lo, torch.median), "its range"),
        (lambda lo, hi: _token_rule_05(lo, hi, torch.maximum(lo.abs(), hi.abs()), torch.mean), "the mean"),
        (lambda lo, hi: _token_rule_05(lo, hi, torch.maximum(lo.abs(), hi.abs()), torch.median, True), "never"),
    ],
}
WRONG |= WRONG_05


def _nbits_by_hand_11(B, scales, g, *, halves=False, offset=8):
    n, blocks, _ = B.shape
    pairs = (B & 15, B >> 4)
    u = np.concatenate(pairs, axis=-1) if halves else np.stack(pairs, axis=-1).reshape(n, blocks, g)
    return torch.from_numpy(((u.astype(np.float32) - offset) * scales.reshape(n, blocks, 1)).reshape(n, -1))


def _nbits_uint8_minus_8_11(B, scales, g):
    n, blocks, _ = B.shape
    lo, hi = (B & 0x0F) - 8, (B >> 4) - 8  # still uint8: a code below 8 wraps to 248 and up
    q = np.stack([lo, hi], axis=-1).reshape(n, blocks, g)
    return torch.from_numpy((q * scales.reshape(n, blocks, 1)).reshape(n, -1).astype(np.float32))


def _bytes_by_hand_11(linears, others, plan, scale_bytes=2, tensor_scales_per_row=False):
    total = 4 * sum(math.prod(s) for s in others.values())
    for name, (out, inp) in linears.items():
        s = plan.get(name, "float")
        if s == "float":
            total += 4 * out * inp + 4 * out
            continue
        bits = int(s[3])
        groups = (
            (out if tensor_scales_per_row else 1)
            if "tensor" in s
            else out
            if "channel" in s
            else out * inp // int(s.split("-g")[1].split("-")[0])
        )
        total += out * math.ceil(inp * bits / 8) + scale_bytes * groups + (groups if "asym" in s else 0) + 4 * out
    return total


WRONG_11 = {
    "11.read_matmulnbits": [
        (lambda B, s, g: _nbits_by_hand_11(B, s, g, halves=True), "Q4_0 order"),
        (lambda B, s, g: _nbits_by_hand_11(B, s, g, offset=0), "plus 8"),
        (lambda B, s, g: _nbits_by_hand_11(B, s, g).T.contiguous(), "None"),
        (_nbits_uint8_minus_8_11, "uint8 arithmetic"),
    ],
    "11.file_bytes": [
        (lambda a, b, p: _bytes_by_hand_11(a, b, p, scale_bytes=4), "fp32"),
        (lambda a, b, p: _bytes_by_hand_11(a, {}, p), "embedding table"),
        (lambda a, b, p: _bytes_by_hand_11(a, b, p, tensor_scales_per_row=True), "one scale per row"),
    ],
    "11.plan": [
        ({"*": "int4-g32-asym"}, "over the budget"),
        ({"*": "int4-g128"}, "does not beat"),
        ({"*": "int4-g32"}, "does not beat"),
        ({"pooler": "int8-channel", "*": "int4-g64"}, "cannot be packed"),
    ],
}
WRONG |= WRONG_11


def test_every_task_has_at_least_two_wrong_answers():
    assert set(WRONG) == set(tasks())
    assert all(len(v) >= 2 for v in WRONG.values())


FUNCTION_TASKS = sorted(k for k, t in tasks().items() if not t.is_value)


def _fingerprint(value):
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), tuple(value.flatten()[:16].tolist()))
    return value


@pytest.mark.parametrize("task_id", FUNCTION_TASKS)
def test_cases_vary_every_argument(task_id):
    """At least three cases, and no argument (bits, group size, shape...) is the same in all of them,
    so a constant hard-coded from one case fails another."""
    t = tasks()[task_id]
    inputs = [c.resolve() for c in t.cases]
    assert len(inputs) >= 3
    for i in range(len(inputs[0])):
        assert len({repr(_fingerprint(args[i])) for args in inputs}) >= 2, f"argument {i} never varies"


@pytest.mark.parametrize(("task_id", "k"), [(t, k) for t in sorted(tasks()) for k in range(len(tasks()[t].mistakes))])
def test_each_named_mistake_fires_on_its_own_mistake_only(task_id, k):
    t = tasks()[task_id]
    m = t.mistakes[k]
    v = evaluate(t, m.fn() if t.is_value else m.fn)
    assert v.status == "fail" and v.mistake == m.description, (v.status, v.mistake)


@pytest.mark.parametrize("task_id", FUNCTION_TASKS)
def test_computing_in_float64_is_not_a_false_failure(task_id):
    """The tie cases are exact halves in any precision, so an answer computed in float64 passes."""
    t = tasks()[task_id]

    def in_float64(*args):
        out = t.reference(*[a.double() if isinstance(a, torch.Tensor) else a for a in args])
        return tuple(o.float() if isinstance(o, torch.Tensor) else o for o in out) if isinstance(out, tuple) else out

    assert evaluate(t, in_float64).passed


@pytest.mark.parametrize("task_id", FUNCTION_TASKS)
def test_plain_lists_are_accepted(task_id):
    t = tasks()[task_id]

    def as_lists(*args):
        out = t.reference(*args)
        if isinstance(out, tuple):
            return tuple(o.tolist() if isinstance(o, torch.Tensor) else o for o in out)
        return out.tolist() if isinstance(out, torch.Tensor) else out

    assert evaluate(t, as_lists).passed


def test_a_mistake_is_not_named_for_an_answer_that_matches_it_once():
    """Per head agrees with 'forgot abs()' on no case; an answer wrong in two ways names neither."""
    t = tasks()["03.einsum_scales"]
    v = evaluate(t, lambda w, bits: w.amax(dim=(1, 2)) / (2 ** (bits - 1) - 1))  # forgot abs AND one scale per head
    assert v.status == "fail" and v.mistake is None


# ---- recall -----------------------------------------------------------------------------------

CHOICES = [(lesson, q) for lesson, qs in bank().items() for q in qs if isinstance(q, Choice)]
NUMERICS = [(lesson, q) for lesson, qs in bank().items() for q in qs if isinstance(q, Numeric)]


def test_the_correct_letter_varies():
    letters = [q.correct_letter() for _, q in CHOICES]
    assert len(letters) >= 20
    for letter in "abc":
        assert letters.count(letter) <= len(letters) / 2, letters
        assert letter in letters
    for lesson in bank():
        mine = [q.correct_letter() for le, q in CHOICES if le == lesson]
        assert len(mine) < 2 or len(set(mine)) >= 2, (lesson, mine)


def test_answering_a_everywhere_fails_most_questions():
    right = sum(feedback(q, "a")[0] for _, q in CHOICES)
    assert right <= len(CHOICES) / 2


@pytest.mark.parametrize(("lesson", "q"), NUMERICS, ids=lambda v: v if isinstance(v, str) else v.prompt[:30])
def test_numeric_tolerance_rejects_every_named_mistake(lesson, q):
    assert q.mistakes, "name the wrong values the lesson warns about"
    assert feedback(q, q.answer)[0]
    for value, why in q.mistakes:
        ok, said = feedback(q, value)
        assert not ok and why in said


def test_a_numeric_mistake_inside_the_tolerance_is_refused():
    with pytest.raises(ValueError, match="lies within tol"):
        Numeric("?", 1.27, "", tol=0.02, mistakes=((1.28, "128 x 0.01"),))


@pytest.mark.parametrize(("lesson", "q"), CHOICES[:1])
def test_letters_follow_the_shown_order(lesson, q):
    shown = q.shown()
    for j, option in enumerate(shown):
        ok, why = feedback(q, LETTERS[j])
        assert ok == option.correct and why == option.why


@pytest.mark.parametrize("task_id", sorted(WRONG))
def test_reference_passes(task_id, capsys):
    t = tasks()[task_id]
    check(task_id, t.reference() if t.is_value else t.reference)
    out = capsys.readouterr().out
    assert out.count("✓") == len(t.cases)


@pytest.mark.parametrize(("task_id", "k"), [(t, k) for t, v in sorted(WRONG.items()) for k in range(len(v))])
def test_wrong_answer_fails_and_names_the_mistake(task_id, k, capsys):
    answer, words = WRONG[task_id][k]
    with pytest.raises(CheckFailed) as err:
        check(task_id, answer)
    message = str(err.value)
    out = capsys.readouterr().out
    if words == "None":  # a wrong answer no known mistake explains: it fails without a (wrong) name
        assert "mistake:" not in out, out
    else:
        assert "mistake:" in out and words in message, message
    assert ("hint:" in out) == ("mistake:" not in out), out  # the hint only where no mistake is named
    if "failed: a hidden case" in out:  # a hidden case shows neither what came back nor what was expected
        assert "came back:" not in out and "expected:" not in out
        return
    assert "came back:" in out
    task = tasks()[task_id]  # a value task's expected value is its answer; some tasks' answer a prediction
    assert ("expected:" in out) == (not task.is_value and task.shows_expected)


@pytest.mark.parametrize("stub", [None, ..., lambda *a: None, lambda *a: ...])
def test_stubs_are_not_attempted(stub):
    with pytest.raises(NotAttempted, match="not attempted yet"):
        check("02.per_channel_scale", stub)


def test_not_implemented_is_not_attempted():
    def stub(w, bits):
        raise NotImplementedError

    with pytest.raises(NotAttempted):
        check("02.per_channel_scale", stub)


def test_unknown_task_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown task 'nope'"):
        check("nope", 1)


def test_friendly_errors_render_without_traceback():
    with pytest.raises(CheckFailed) as err:
        check("04.q5_0_bits_per_weight", 5.0)
    rendered = err.value._render_traceback_()
    assert rendered[0].startswith("CheckFailed: 04.q5_0_bits_per_weight left out the fp16 scale [case 1")


# ---- plausible shortcuts: each must fail on at least one case (named or not) ----------------------


def _qm(bits):
    return 2 ** (bits - 1) - 1


def _away(v):  # round half away from zero, the other common rounding rule
    return torch.sign(v) * torch.floor(v.abs() + 0.5)


SHORTCUTS = {
    "02.per_channel_scale": [
        lambda w, b: w.norm(dim=1) / _qm(b),
        lambda w, b: w.abs().amax(1) / (2**b - 1),
    ],
    "02.quantize_per_channel": [
        lambda w, b: (torch.nan_to_num(_away(w / (w.abs().amax(1, keepdim=True) / _qm(b)))), w.abs().amax(1) / _qm(b)),
    ],
    "03.min_bits": [
        lambda w: math.ceil(math.log2(float(w.abs().max() / w.abs().amax(1).min()))) + 1,  # ratio in bits, no half tick
        lambda w: 8,  # int8 is always enough
    ],
    "04.quantize_per_group": [
        lambda w, b, g: _rows_as_groups(w, b, g),
    ],
    "05.asymmetric_roundtrip": [
        lambda x, b: _roundtrip(x, b, min(x.min(), 0), max(x.max(), 0)).clamp(min=x.min().item()),
        lambda x, b: _roundtrip(x, b, min(x.min(), 0), max(x.max(), 0), sign=-1) * (2**b - 1) / 2**b,
    ],
    "05.per_token_scales": [lambda x, b: x.abs().mean(1) / _qm(b), lambda x, b: x.norm(dim=1) / _qm(b)],
    "06.group_partials": [lambda x, q, g: _group_partials06(x, q, 4)],  # the first case's group size, hard-coded
    "09.calib_text": [  # the set chosen by loudness alone: the quieter one, or the one as loud per token as x_held
        lambda w, a, b, h, bits: _loudness_09(w, a, b, h, bits, lambda x: x.square().sum()),
        lambda w, a, b, h, bits: _loudness_09(w, a, b, h, bits, lambda x: (x.square().mean() - h.square().mean()) ** 2),
    ],
}


def _group_partials06(x, q, g):
    m, k = x.shape
    return torch.einsum("mgk,ngk->mng", x.reshape(m, k // g, g), q.reshape(q.shape[0], k // g, g))


def _rows_as_groups(w, b, g):
    n, k = w.shape
    s = w.abs().amax(1, keepdim=True) / _qm(b)
    q = torch.nan_to_num(torch.round(w / s)).clamp(-_qm(b), _qm(b))
    return q, s.expand(n, k // g)


@pytest.mark.parametrize(("task_id", "k"), [(t, k) for t, v in sorted(SHORTCUTS.items()) for k in range(len(v))])
def test_plausible_shortcuts_fail(task_id, k):
    assert not evaluate(tasks()[task_id], SHORTCUTS[task_id][k]).passed


def _qparams_ceil(x, bits):
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = (hi - lo) / (2**bits - 1)
    return torch.tensor(scale), torch.tensor(float(math.ceil(-lo / scale)))


def _clip_start_ceil(c, bits):
    """Lesson 01's clip limits from a zero point rounded up (ceil)."""
    scale, zp = _qparams_ceil(c, bits)
    return (-zp - 0.5) * scale, (2**bits - 1 - zp + 0.5) * scale


def _groups_half_away(w, bits, g):
    wg = w.reshape(w.shape[0], -1, g)
    scale = wg.abs().amax(-1) / (2 ** (bits - 1) - 1)
    c = torch.where(scale[..., None] == 0, 0.0, wg / scale[..., None].clamp_min(1e-30))
    q = torch.sign(c) * torch.floor(c.abs() + 0.5)
    return q.clamp(-(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1).reshape(w.shape), scale


def _roundtrip_no_clamp(x, bits):
    lo, hi = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (hi - lo) / (2**bits - 1)
    if scale == 0:
        return torch.zeros_like(x)
    zp = torch.round(-lo / scale)
    return (torch.round(x / scale) + zp - zp) * scale


def _roundtrip_textbook(x, bits):
    lo, hi = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (hi - lo) / (2**bits - 1)
    if scale == 0:
        return torch.zeros_like(x)
    zp = torch.round(-lo / scale)
    return (torch.clamp(torch.round(x / scale + zp), 0, 2**bits - 1) - zp) * scale


@pytest.mark.parametrize(
    ("task_id", "wrong"),
    [
        ("01.clip_start", _clip_start_ceil),
        ("04.quantize_per_group", _groups_half_away),
        ("05.asymmetric_roundtrip", _roundtrip_no_clamp),
    ],
    ids=["ceil zero point", "half away from zero", "no clamp"],
)
def test_a_common_mistake_that_the_old_cases_let_through_fails(task_id, wrong):
    assert evaluate(tasks()[task_id], wrong).status == "fail"


def test_llama_cpps_order_for_sub_scales_is_accepted():
    """Lesson 08, task 1: rounding against the unrounded super-scale (quantize_row_q4_K_ref) passes too."""
    assert evaluate(tasks()["08.sub_scales"], lambda s, b: _sub_by_hand(s, b, mixed=True)).passed


def test_the_textbook_order_clamp_round_plus_zero_point_is_accepted():
    t = tasks()["05.asymmetric_roundtrip"]
    assert evaluate(t, _roundtrip_textbook).passed
    # the orders differ only on ties; no case has one, so a textbook-order answer with another mistake
    # is reported at the case that is really wrong (and its mistake is named)
    inputs = [c.resolve() for c in t.cases]
    assert all(torch.equal(_roundtrip_textbook(*args), t.reference(*args)) for args in inputs)


@pytest.mark.parametrize("task_id", sorted(tasks()))
def test_a_hint_points_without_writing_the_solution(task_id):
    """No assignment (``scale = ...``) and no method-call code (``w.abs().amax(dim=1)``) in a hint."""
    hint = tasks()[task_id].hint
    assert not re.search(r"\b\w+ = |\.\w+\(", hint), hint


def test_a_check_cell_fails_an_in_place_change_unless_the_task_asks_for_one():
    """The notebook's own check (a local function, no sandbox) sees the change on the arguments it passed."""
    import torch

    from qlesson.course import checking

    def add_one_in_place(x):
        x += 1
        return x

    task = checking.Task("t.add", "add one", lambda x: x + 1, [checking.Case((torch.zeros(3),), "3 zeros")], "add 1")
    v = checking.evaluate(task, add_one_in_place)
    assert v.status == "fail" and v.mistake == "changed its input in place", v
    assert checking.evaluate(task, lambda x: x + 1).passed
    in_place = checking.Task(**{**task.__dict__, "keeps_inputs": False})
    assert checking.evaluate(in_place, add_one_in_place).passed


def _changes_its_first_array(t):
    def answer(*args):
        out = t.reference(*args)  # the right value, computed before the change
        a = next(a for a in args if isinstance(a, (torch.Tensor, np.ndarray)))
        a[(0,) * a.ndim] += 1
        return out

    return answer


@pytest.mark.parametrize(
    "task_id",
    [
        k
        for k in FUNCTION_TASKS
        if any(isinstance(a, (torch.Tensor, np.ndarray)) for a in tasks()[k].cases[0].resolve())
    ],
)
def test_every_task_fails_an_answer_that_changes_its_input(task_id):
    """Today's 02, 04, 05, 10 answers that work in place would otherwise pass; the case's own inputs stay intact."""
    t = tasks()[task_id]
    before = [[a.clone() if isinstance(a, torch.Tensor) else a for a in c.resolve()] for c in t.cases]
    v = evaluate(t, _changes_its_first_array(t))
    assert v.status == "fail" and v.mistake == "changed its input in place", v
    for c, b in zip(t.cases, before, strict=True):
        assert all(not isinstance(x, torch.Tensor) or torch.equal(x, y) for x, y in zip(c.resolve(), b, strict=True))


def test_a_function_that_prints_instead_of_returning_is_told_so():
    import torch

    from qlesson.course import checking

    task = checking.Task("t.add", "add one", lambda x: x + 1, [checking.Case((torch.zeros(3),), "3 zeros")], "add 1")
    v = checking.evaluate(task, lambda x: print(x + 1))
    assert v.status == "not attempted" and "a print instead of a return?" in v.summary, v
    assert "returns the stub" in checking.evaluate(task, lambda x: ...).summary


# ---- issue 31: messages a learner can act on, and cases that catch what used to pass ------------------


@pytest.mark.parametrize("task_id", FUNCTION_TASKS)
def test_tuples_are_as_good_as_lists(task_id):
    t = tasks()[task_id]

    def as_tuples(*args):
        out = t.reference(*args)
        if isinstance(out, tuple):
            return tuple(tuple(o.tolist()) if isinstance(o, torch.Tensor) and o.ndim == 1 else o for o in out)
        return tuple(out.tolist()) if isinstance(out, torch.Tensor) and out.ndim == 1 else out

    assert evaluate(t, as_tuples).passed


def _first_case_output_is_array(t):
    out = t.reference(*t.cases[0].resolve())
    parts = out if isinstance(out, tuple) else (out,)
    return any(isinstance(o, (torch.Tensor, np.ndarray)) and o.ndim >= 1 and o.size != 1 for o in parts)


@pytest.mark.parametrize("task_id", [k for k in FUNCTION_TASKS if _first_case_output_is_array(tasks()[k])])
def test_right_values_in_an_extra_dimension_are_said_to_be_a_shape_problem(task_id):
    t = tasks()[task_id]

    def extra_dim(*args):
        out = t.reference(*args)
        grow = lambda o: torch.as_tensor(o).unsqueeze(-1) if isinstance(o, (torch.Tensor, np.ndarray)) else o  # noqa: E731
        return tuple(grow(o) for o in out) if isinstance(out, tuple) else grow(out)

    v = evaluate(t, extra_dim)
    assert v.status == "fail" and "shape: the values are right" in v.detail, v
    if v.mistake is None:  # a named mistake (02's keepdim) says it in its own words
        assert "right values in shape" in v.summary and t.hint not in v.summary, v.summary


@pytest.mark.parametrize("task_id", FUNCTION_TASKS)
def test_none_on_one_case_names_that_case(task_id):
    t = tasks()[task_id]
    calls = []

    def forgets_one_return(*args):  # called once per case, in order: the last case falls through
        calls.append(1)
        return None if len(calls) == len(t.cases) else t.reference(*args)

    v = evaluate(t, forgets_one_return)
    n = len(t.cases)
    assert v.status == "fail" and f"case {n} ({t.cases[-1].shown_label()}) returned None" in v.summary, v
    assert evaluate(t, lambda *a: None).status == "not attempted"


def test_a_verdict_passes_only_when_its_status_is_pass():
    t = tasks()["01.clip_start"]
    raising = evaluate(t, lambda x, bits: 1 / 0)
    stub = evaluate(t, None)
    assert raising.status == "error" and not raising.passed
    assert stub.status == "not attempted" and not stub.passed
    assert evaluate(t, t.reference).passed


def _fake_quantize_torch(x, bits):
    """05's round trip with PyTorch's own fake quantization (which multiplies by 1 / scale)."""
    lo, hi = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = float((hi - lo) / (2**bits - 1))
    if scale == 0:
        return torch.zeros_like(x)
    zp = int(torch.round(-lo / scale).clamp(0, 2**bits - 1))
    return torch.fake_quantize_per_tensor_affine(x, scale, zp, 0, 2**bits - 1)


def test_pytorchs_fake_quantize_passes_the_round_trip():
    t = tasks()["05.asymmetric_roundtrip"]
    assert evaluate(t, _fake_quantize_torch).passed
    tie = [
        c.resolve() for c in t.cases if not torch.equal(_fake_quantize_torch(*c.resolve()), t.reference(*c.resolve()))
    ]
    assert tie, "no case has a tie that 1 / scale moves, so this test shows nothing"
    assert evaluate(t, _roundtrip_no_clamp).status == "fail"  # the extra form lets no wrong answer through


def test_a_zero_point_that_rounds_its_tie_up_fails():
    def half_up(x, bits):
        lo, hi = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
        scale = (hi - lo) / (2**bits - 1)
        return scale, torch.floor(-lo / scale + 0.5)

    def clip_start(c, bits):
        scale, zp = half_up(c, bits)
        return (-zp - 0.5) * scale, (2**bits - 1 - zp + 0.5) * scale

    v = evaluate(tasks()["01.clip_start"], clip_start)
    assert v.status == "fail" and "a hidden case" in v.summary, v.summary


@pytest.mark.parametrize("shift", [+1, -1])
def test_a_residual_window_one_token_off_fails(shift):
    def quantized(t, r, g):
        return max(t - r + shift, 0) // g * g

    def key_bits(b, g, t, r):
        n = quantized(t, r, g)
        return (n * (b + 32 / g) + (t - n) * 16) / t

    def peak(t, r, g):
        return max(u - quantized(u, r, g) for u in range(t + 1))

    assert evaluate(tasks()["10.peak_fp16_keys"], peak).status == "fail"
    assert evaluate(tasks()["10.key_bits"], key_bits).status == "fail"


def test_an_array_with_negative_strides_is_compared_not_crashed():
    """``v[::-1]`` is a view numpy walks backwards; torch cannot wrap it without a copy."""
    from qlesson.course.checking import same

    assert same(np.arange(3.0)[::-1], torch.tensor([2.0, 1.0, 0.0]), 1e-6, 1e-9)
    assert not same(np.arange(3.0)[::-1], torch.tensor([0.0, 1.0, 2.0]), 1e-6, 1e-9)


def test_a_failure_whose_previews_agree_points_at_the_first_difference():
    """The preview shows 8 values; an answer wrong only in the tenth gets the position that differs."""
    from qlesson.course.checking import Case, Task

    task = Task("xx.demo", "demo", lambda x: x * 2, [Case((torch.arange(12.0),), "twelve values")], "double it")

    def wrong(x):
        y = x * 2
        y[9] = 0.0
        return y

    v = evaluate(task, wrong)
    assert v.status == "fail"
    assert "first difference at index (9,): came back 0, expected 18" in v.detail, v.detail


def test_a_number_given_as_text_is_named_not_hinted():
    value_tasks = [t for t in tasks().values() if t.is_value and isinstance(t.reference(), int)]
    assert value_tasks  # e.g. lesson 01's clipping_takes_over
    for t in value_tasks:
        v = evaluate(t, str(t.reference()))
        assert v.status == "fail" and "without quotes" in (v.mistake or ""), (t.task_id, v.summary)

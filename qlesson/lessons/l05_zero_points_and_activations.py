"""Lesson 05 · Activations: zero points, per-token scales, smoothing: the exercise tasks and the recall questions.

Sources: ``notebooks/05_zero_points_and_activations.py`` (the lesson) and
``exercises/solutions/05_zero_points_and_activations.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import Numeric, Question, choice
from qlesson.lessons._shared import MIXED, POS, codes, qmax, weights
from qlesson.lessons.l01_the_ruler import _asym_qparams

_G = torch.Generator().manual_seed(1234 + 5)
_G_STATS = torch.Generator().manual_seed(5005)
_G_SMOOTH = torch.Generator().manual_seed(5055)  # its own stream: the other tasks' cases stay as they were
_G_MIXED = torch.Generator().manual_seed(5001)  # Task 1's random hidden case: its own stream too


def _w(*shape: int, spread: bool = True) -> torch.Tensor:
    return weights(_G, *shape, spread=spread)


def _roundtrip(x: torch.Tensor, scale: torch.Tensor, zp: torch.Tensor, bits: int) -> torch.Tensor:
    q = torch.clamp(torch.round(codes(x, scale)) + zp, 0, 2**bits - 1)
    return (q - zp) * scale


def _asym_roundtrip(x: torch.Tensor, bits: int) -> torch.Tensor:
    scale, zp = _asym_qparams(x, bits)
    return _roundtrip(x, scale, torch.nan_to_num(zp), bits)


def _clamp_after_adding(x: torch.Tensor, bits: int) -> torch.Tensor:
    """The textbook order ``clamp(round(x / scale + zp))``: differs from ours only on exact ties."""
    scale, zp = _asym_qparams(x, bits)
    zp = torch.nan_to_num(zp)
    q = torch.clamp(torch.round(codes(x, scale) + zp), 0, 2**bits - 1)
    return (q - zp) * scale


def _unclamped(x: torch.Tensor, bits: int) -> torch.Tensor:
    scale, zp = _asym_qparams(x, bits)
    zp = torch.nan_to_num(zp)
    return (torch.round(codes(x, scale)) + zp - zp) * scale


def _not_widened(x: torch.Tensor, bits: int, guarded: bool = True) -> torch.Tensor:
    scale = (x.max() - x.min()) / (2**bits - 1)
    if guarded and scale == 0:  # the statement's all-zeros rule (unguarded: 0 / 0 gives NaN)
        return torch.zeros_like(x)
    return _roundtrip(x, scale, torch.round(-x.min() / scale), bits)


def _one_end_widened(x: torch.Tensor, bits: int, lower: bool = True) -> torch.Tensor:
    """The range widened to 0 at one end only (``lower``: ``rmin`` only; else ``rmax`` only)."""
    lo = torch.clamp(x.min(), max=0) if lower else x.min()
    hi = x.max() if lower else torch.clamp(x.max(), min=0)
    scale = (hi - lo) / (2**bits - 1)
    if scale == 0:
        return torch.zeros_like(x)
    return _roundtrip(x, scale, torch.round(-lo / scale), bits)


def _truncated_zero_point(x: torch.Tensor, bits: int, added_first: bool = False) -> torch.Tensor:
    scale, _ = _asym_qparams(x, bits)
    zp = torch.trunc(-torch.clamp(x.min(), max=0) / scale) if scale > 0 else torch.zeros(())
    if added_first:  # round(x / scale + zp): differs from round(x / scale) + zp on the ties of the last case
        return (torch.clamp(torch.round(codes(x, scale) + zp), 0, 2**bits - 1) - zp) * scale
    return _roundtrip(x, scale, zp, bits)


def _half_up(x: torch.Tensor, bits: int, added_first: bool = False) -> torch.Tensor:
    """Round half up, ``floor(v + 0.5)``: as close as round-half-to-even, it differs only on exact ties."""
    scale, zp = _asym_qparams(x, bits)
    zp = torch.nan_to_num(zp)
    v = codes(x, scale)
    q = torch.floor(v + zp + 0.5) if added_first else torch.floor(v + 0.5) + zp
    return (torch.clamp(q, 0, 2**bits - 1) - zp) * scale


def _ceil_zero_point(x: torch.Tensor, bits: int) -> torch.Tensor:
    scale, _ = _asym_qparams(x, bits)
    zp = torch.ceil(-torch.clamp(x.min(), max=0) / scale) if scale > 0 else torch.zeros(())
    return _roundtrip(x, scale, zp, bits)


def _no_zero_guard(x: torch.Tensor, bits: int) -> torch.Tensor:
    """No scale-0 guard: an all-zero x gives 0 / 0 = NaN (elsewhere the right answer)."""
    if x.abs().max() == 0:
        return torch.full_like(x, float("nan"))
    return _asym_roundtrip(x, bits)


def _range_over_2_pow_bits(x: torch.Tensor, bits: int) -> torch.Tensor:
    rmin, rmax = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (rmax - rmin) / 2**bits
    if scale == 0:
        return torch.zeros_like(x)
    return _roundtrip(x, scale, torch.round(-rmin / scale), bits)


def _wrong_sign(x: torch.Tensor, bits: int) -> torch.Tensor:
    scale, _ = _asym_qparams(x, bits)
    zp = torch.clamp(torch.round(torch.clamp(x.min(), max=0) / scale), 0, 2**bits - 1)
    return _roundtrip(x, scale, zp, bits)


def _float_zero_point(x: torch.Tensor, bits: int) -> torch.Tensor:
    rmin, rmax = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (rmax - rmin) / (2**bits - 1)
    zp = -rmin / scale if scale > 0 else torch.zeros(())
    q = torch.clamp(torch.round(codes(x, scale) + zp), 0, 2**bits - 1)
    return (q - zp) * scale


def _float_zero_point_added_after(x: torch.Tensor, bits: int) -> torch.Tensor:
    """A float zero point, added after rounding: ``round(x / scale) + zp``."""
    rmin, rmax = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (rmax - rmin) / (2**bits - 1)
    zp = -rmin / scale if scale > 0 else torch.zeros(())
    q = torch.clamp(torch.round(codes(x, scale)) + zp, 0, 2**bits - 1)
    return (q - zp) * scale


def _float_minimum(x: torch.Tensor, bits: int) -> torch.Tensor:
    d = (x.max() - x.min()) / (2**bits - 1)
    return torch.round(codes(x - x.min(), d)) * d + x.min()


def _shifted_by_float_minimum(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Codes ``round((x - rmin) / scale)``, mapped back with the rounded zero point ``round(-rmin / scale)``."""
    rmin, rmax = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (rmax - rmin) / (2**bits - 1)
    if scale == 0:
        return torch.zeros_like(x)
    q = torch.clamp(torch.round(codes(x - rmin, scale)), 0, 2**bits - 1)
    return (q - torch.round(-rmin / scale)) * scale


def _symmetric(x: torch.Tensor, bits: int) -> torch.Tensor:
    s = x.abs().max() / qmax(bits)
    return torch.clamp(torch.round(codes(x, s)), -qmax(bits), qmax(bits)) * s


def _codes_only(x: torch.Tensor, bits: int) -> torch.Tensor:
    scale, zp = _asym_qparams(x, bits)
    return torch.clamp(torch.round(codes(x, scale)) + zp, 0, 2**bits - 1)


def _no_zp_back(x: torch.Tensor, bits: int) -> torch.Tensor:
    scale, zp = _asym_qparams(x, bits)
    return _codes_only(x, bits) * scale


def _per_token_scales(x: torch.Tensor, bits: int) -> torch.Tensor:
    return x.abs().amax(dim=1) / qmax(bits)


def _smooth_factors(x: torch.Tensor, w: torch.Tensor, alpha: float) -> torch.Tensor:
    return x.abs().amax(0) ** alpha / w.abs().amax(0) ** (1 - alpha)


def _steps(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[float, float, torch.Tensor]:
    """int8 steps: symmetric per-tensor, asymmetric per-tensor, symmetric per-token."""
    lo, hi = float(tmin.min()), float(tmax.max())
    absmax = torch.maximum(tmin.abs(), tmax.abs())
    return max(-lo, hi) / 127, (max(hi, 0.0) - min(lo, 0.0)) / 255, absmax / 127


def _choose_ruler(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    sym, asym, token = _steps(tmin, tmax)
    return (
        "asymmetric" if sym >= 1.5 * asym else "symmetric",
        "per-token" if sym >= 1.5 * float(token.median()) else "per-tensor",
    )


def _choose_max_not_absmax(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    lo, hi = float(tmin.min()), float(tmax.max())
    sym, asym = hi / 127, (max(hi, 0.0) - min(lo, 0.0)) / 255
    return ("asymmetric" if sym >= 1.5 * asym else "symmetric", _choose_ruler(tmin, tmax)[1])


def _choose_any_imbalance(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    unequal = abs(float(tmin.min()) + float(tmax.max())) > 1e-9
    return ("asymmetric" if unequal else "symmetric", _choose_ruler(tmin, tmax)[1])


def _choose_largest_token(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    sym, _, token = _steps(tmin, tmax)
    return (_choose_ruler(tmin, tmax)[0], "per-token" if sym >= 1.5 * float(token.max()) else "per-tensor")


def _choose_any_spread(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    _, _, token = _steps(tmin, tmax)
    return (_choose_ruler(tmin, tmax)[0], "per-token" if float(token.max() - token.min()) > 0 else "per-tensor")


def _choose_token_max_only(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    sym, _, _ = _steps(tmin, tmax)
    token = tmax.abs() / 127
    return (_choose_ruler(tmin, tmax)[0], "per-token" if sym >= 1.5 * float(token.median()) else "per-tensor")


def _choose_token_range(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    sym, _, _ = _steps(tmin, tmax)
    token = (tmax - tmin) / 127
    return (_choose_ruler(tmin, tmax)[0], "per-token" if sym >= 1.5 * float(token.median()) else "per-tensor")


def _choose_mean_token(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    sym, _, token = _steps(tmin, tmax)
    return (_choose_ruler(tmin, tmax)[0], "per-token" if sym >= 1.5 * float(token.mean()) else "per-tensor")


def _choose_half_side(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    lo, hi = abs(min(float(tmin.min()), 0.0)), max(float(tmax.max()), 0.0)
    return ("asymmetric" if min(lo, hi) < 0.5 * max(lo, hi) else "symmetric", _choose_ruler(tmin, tmax)[1])


def _choose_asym_token(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    sym, _, _ = _steps(tmin, tmax)
    token = (tmax.clamp(min=0) - tmin.clamp(max=0)) / 255
    return (_choose_ruler(tmin, tmax)[0], "per-token" if sym >= 1.5 * float(token.median()) else "per-tensor")


def _choose_against_chosen(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    sym, asym, token = _steps(tmin, tmax)
    first = _choose_ruler(tmin, tmax)[0]
    base = asym if first == "asymmetric" else sym
    return (first, "per-token" if base >= 1.5 * float(token.median()) else "per-tensor")


def _choose_quietest_token(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    sym, _, token = _steps(tmin, tmax)
    return (_choose_ruler(tmin, tmax)[0], "per-token" if sym >= 1.5 * float(token.min()) else "per-tensor")


def _choose_any_loud_token(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    _, _, token = _steps(tmin, tmax)
    loud = float(token.max()) > 2 * float(token.median())
    return (_choose_ruler(tmin, tmax)[0], "per-token" if loud else "per-tensor")


def _loudest_after_smoothing(x: torch.Tensor, w: torch.Tensor, alpha: float) -> int:
    return int((x / _smooth_factors(x, w, alpha)).abs().amax(0).argmax())


def _smoothing_case(
    tokens: int,
    features: int,
    out: int,
    x_gain: dict[int, float],
    w_gain: dict[int, float],
    negative: tuple[int, ...] = (),
) -> tuple[torch.Tensor, torch.Tensor]:
    """Activations ``[tokens, features]`` and a weight ``[out, features]``: feature ``j`` of x is
    ``x_gain[j]`` on one token, weight column ``j`` ``w_gain[j]`` times louder (the whole column).
    The features in ``negative`` lie in ``[-3, -2]`` on every token."""
    x = torch.rand(tokens, features, generator=_G_SMOOTH, dtype=torch.float64) * 2 - 1
    w = (torch.rand(out, features, generator=_G_SMOOTH, dtype=torch.float64) * 2 - 1) * 0.1
    for j in negative:
        x[:, j] = -x[:, j].abs() - 2
    for j, g in x_gain.items():
        x[tokens // 2, j] = g
    for j, g in w_gain.items():
        w[:, j] *= g
    return x, w


def _cases_loudest_after_smoothing() -> list[Case]:
    return [
        Case(
            (*_smoothing_case(10, 8, 4, {2: 20.0, 5: 6.0}, {5: 8.0}), 0.5),
            "alpha 0.5: feature 2 is 20 with a quiet weight column, feature 5 is 6 with a loud one",
        ),
        Case(
            (*_smoothing_case(12, 6, 5, {1: 10.0}, {4: 4.0}), 0.75), "alpha 0.75: feature 1 loud, weight column 4 loud"
        ),
        Case((*_smoothing_case(9, 10, 3, {7: 12.0}, {7: 9.0}), 0.5), "alpha 0.5: feature 7 loud in both"),
        Case(
            (*_smoothing_case(16, 12, 6, {0: 10.0, 4: 6.0}, {4: 0.05}), 0.5),
            "feature 4 has a near-silent weight column",
            hidden=True,
        ),
        Case((*_smoothing_case(14, 9, 4, {3: 30.0, 8: 5.0}, {8: 12.0}), 0.25), "alpha 0.25", hidden=True),
        Case((*_smoothing_case(8, 7, 5, {6: 8.0, 2: 3.0}, {2: 5.0, 6: 0.5}), 0.9), "alpha 0.9", hidden=True),
        Case(
            (*_smoothing_case(12, 8, 4, {3: -15.0, 6: 5.0}, {}), 0.5),
            "feature 3 is -15 on one token (a negative spike)",
            hidden=True,
        ),
        Case(
            (*_smoothing_case(12, 8, 4, {5: 12.0}, {}, negative=(2,)), 0.5),
            "feature 2 is negative on every token",
            hidden=True,
        ),
    ]


def _which_tool(x: torch.Tensor) -> str:
    typical = x.abs().median(dim=0).values  # each feature on a typical token
    return "smooth" if float(typical.max()) >= 4 * float(typical.median()) else "per-token"


def _which_by_column_absmax(x: torch.Tensor) -> str:
    a = x.abs().amax(dim=0)
    return "smooth" if float(a.max()) >= 4 * float(a.median()) else "per-token"


def _which_by_column_mean(x: torch.Tensor) -> str:
    m = x.abs().mean(dim=0)
    return "smooth" if float(m.max()) >= 4 * float(m.median()) else "per-token"


def _acts(tokens: int, features: int) -> torch.Tensor:
    return torch.randn(tokens, features, generator=_G_STATS, dtype=torch.float64)


def _cls_spike(tokens: int, features: int, every: int, feature: int, value: float) -> torch.Tensor:
    x = _acts(tokens, features)
    x[::every, feature] = value  # one loud value on the first token of every sentence
    return x


def _loud_features(tokens: int, features: int, loud: dict[int, float], share: float = 1.0) -> torch.Tensor:
    x = _acts(tokens, features)
    on = torch.arange(tokens) < round(share * tokens)
    for j, gain in loud.items():
        x[on, j] *= gain
    return x


def _loud_tokens(tokens: int, features: int, rows: list[int], gain: float) -> torch.Tensor:
    x = _acts(tokens, features)
    x[rows] *= gain
    return x


def _cases_which_tool() -> list[Case]:
    return [
        Case((_cls_spike(24, 16, 6, 3, 30.0),), "4 sentences of 6 tokens, feature 3 is 30 on each first token"),
        Case((_loud_features(20, 12, {5: 20.0}),), "feature 5 twenty times louder on every token"),
        Case((_loud_tokens(18, 10, [4, 11], 12.0),), "tokens 4 and 11 twelve times louder on every feature"),
        Case(
            (_loud_features(30, 16, {2: 15.0, 9: 10.0}, share=0.8),), "features 2, 9 loud on 80% of tokens", hidden=True
        ),
        Case((_cls_spike(36, 20, 12, 7, 25.0),), "feature 7 at 25 on one token in twelve", hidden=True),
        Case((_loud_tokens(15, 24, [0], 40.0),), "one token forty times louder", hidden=True),
    ]


def _choose_one_sided(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    lo, hi = float(tmin.min()), float(tmax.max())
    one_sided = max(-lo, 0.0) < 0.1 * max(hi, 0.0) or max(hi, 0.0) < 0.1 * max(-lo, 0.0)
    return ("asymmetric" if one_sided else "symmetric", _choose_ruler(tmin, tmax)[1])


def _choose_strictly_one_sided(tmin: torch.Tensor, tmax: torch.Tensor) -> tuple[str, str]:
    lo, hi = float(tmin.min()), float(tmax.max())
    return ("asymmetric" if lo >= 0 or hi <= 0 else "symmetric", _choose_ruler(tmin, tmax)[1])


def _token_stats(n: int, lo: tuple[float, float], hi: tuple[float, float], loud: dict[int, tuple[float, float]]):
    """Per-token (min, max) for ``n`` tokens drawn in the given bands, a few tokens set by ``loud``."""
    tmin = lo[0] + (lo[1] - lo[0]) * torch.rand(n, generator=_G_STATS, dtype=torch.float64)
    tmax = hi[0] + (hi[1] - hi[0]) * torch.rand(n, generator=_G_STATS, dtype=torch.float64)
    for i, (a, b) in loud.items():
        tmin[i], tmax[i] = a, b
    return tmin, tmax


# Task 1's first case: no value sits on a rounding tie, so round(x / s) + zp and round(x / s + zp) agree
# on every case (they differ only on ties), and a failure is reported at the case that is really wrong.
_NEG_NO_TIES = torch.tensor([-1.64, -1.22, -0.94, -1.43, -1.11])
ACTS = _w(12, 16, spread=False)
ACTS[:, 5] *= 20  # an outlier feature
_ZERO_TOKEN = _w(4, 6, spread=False)
_ZERO_TOKEN[2] = 0.0


TASKS: list[Task] = [
    Task(
        "05.asymmetric_roundtrip",
        "asymmetric fake quantization with the range widened to 0",
        _asym_roundtrip,
        [
            Case((_NEG_NO_TIES, 8), "uint8, negative-only channel"),
            Case((POS, 4), "uint4, positive-only channel"),
            Case((MIXED, 3), "uint3, mixed signs"),
            Case((torch.tensor([0.0, -1.2, -0.3, 0.0]), 2), "uint2, exact zeros must come back as 0.0"),
            Case((torch.zeros(4), 8), "uint8, all zeros (scale 0: return zeros)"),
            Case((torch.tensor([-3.5, 11.5, 0.25]), 4), "uint4, scale 1, zp 4: 11.5 rounds to code 16, clamped to 15"),
            Case((torch.tensor([-0.1, 1.0, 0.4]), 2), "uint2, a small negative side", hidden=True),
            Case((torch.randn(32, generator=_G_MIXED), 8), "uint8, 32 random values of both signs", hidden=True),
        ],
        "lesson 01's asymmetric ruler (range widened to 0), then quantize, clamp to the unsigned codes and map back "
        "to real values",
        [
            Mistake("did not widen the range to include 0 (used [x.min(), x.max()])", _not_widened),
            Mistake(
                "did not widen the range to include 0 (used [x.min(), x.max()])",
                lambda x, b: _not_widened(x, b, guarded=False),
            ),
            Mistake(
                "widened only one end of the range to 0: a negative-only x needs rmax = 0 too, a positive-only x "
                "rmin = 0",
                _one_end_widened,
            ),
            Mistake(
                "widened only one end of the range to 0: a negative-only x needs rmax = 0 too, a positive-only x "
                "rmin = 0",
                lambda x, b: _one_end_widened(x, b, lower=False),
            ),
            Mistake("zero point has the wrong sign (+rmin / scale)", _wrong_sign),
            Mistake("returned the codes q, not the reconstruction (q - zp) * scale", lambda x, b: _codes_only(x, b)),
            Mistake("mapped back as q * scale: subtract the zero point first", _no_zp_back),
            Mistake("used the symmetric signed ruler instead of an asymmetric one", _symmetric),
            Mistake("forgot to clamp the codes to [0, 2**bits - 1]", _unclamped),
            Mistake("truncated the zero point (int() or floor): round it to the nearest code", _truncated_zero_point),
            Mistake(
                "truncated the zero point (int() or floor): round it to the nearest code",
                lambda x, b: _truncated_zero_point(x, b, added_first=True),
            ),
            Mistake("rounded the zero point up (ceil): round it to the nearest code", _ceil_zero_point),
            Mistake("an all-zero x gives scale 0, and 0 / 0 is NaN: return zeros when the scale is 0", _no_zero_guard),
            Mistake(
                "divided the range by 2**bits: b-bit codes 0 .. 2**bits - 1 have 2**bits - 1 steps",
                _range_over_2_pow_bits,
            ),
            Mistake(
                "kept the zero point as a float (-min / scale): it must be an integer code, or 0.0 does not come "
                "back exactly",
                _float_zero_point,
            ),
            Mistake(
                "kept the zero point as a float (-min / scale): it must be an integer code, or 0.0 does not come "
                "back exactly",
                _float_zero_point_added_after,
            ),
            Mistake(
                "stored a float minimum (x = d * q + min, as llama.cpp's Q4_1): the task's ruler has an integer "
                "zero point and a range widened to include 0",
                _float_minimum,
            ),
            Mistake(
                "quantized x - rmin (a float minimum) but mapped back with the integer zero point: round x / scale, "
                "then add the zero point",
                _shifted_by_float_minimum,
            ),
        ],
        also_correct=[_clamp_after_adding, _half_up, lambda x, b: _half_up(x, b, added_first=True)],
    ),
    Task(
        "05.per_token_scales",
        "per-token activation scales",
        _per_token_scales,
        [
            Case((ACTS, 8), "[12 tokens, 16 features] with an outlier feature"),
            Case((_w(3, 5, spread=False), 4), "int4, [3, 5]"),
            Case((_ZERO_TOKEN, 3), "int3, token 2 is all zeros (its scale is 0)"),
        ],
        "one scale per token, a row of [tokens, features]: reduce over the features",
        [
            Mistake(
                "computed one scale per feature (column) instead of per token",
                lambda x, b: x.abs().amax(0) / qmax(b),
            ),
            Mistake(
                "used one scale for everything (per-tensor)",
                lambda x, b: x.abs().max() / qmax(b) * torch.ones(x.shape[0]),
            ),
            Mistake("divided by 127 whatever the bits (int8 hard-coded)", lambda x, b: x.abs().amax(dim=1) / 127),
            Mistake(
                "used a spread (such as 3 standard deviations): a symmetric scale must cover the token's largest |x|",
                lambda x, b: 3 * x.std(dim=1) / qmax(b),
            ),
            Mistake(
                "used a spread (such as 3 standard deviations): a symmetric scale must cover the token's largest |x|",
                lambda x, b: 3 * x.std(dim=1, unbiased=False) / qmax(b),
            ),
            Mistake(
                "divided by 2**bits - 1, the unsigned code count of task 1: a symmetric int-b ruler has "
                "2**(bits-1) - 1 steps on each side of 0",
                lambda x, b: x.abs().amax(dim=1) / (2**b - 1),
            ),
            Mistake(
                "took each token's max, not its largest |value|: a negative value can be the loudest",
                lambda x, b: x.amax(dim=1) / qmax(b),
            ),
            Mistake(
                "divided by 2**(bits-1); symmetric int-b uses the codes -(2**(bits-1) - 1) .. 2**(bits-1) - 1",
                lambda x, b: x.abs().amax(dim=1) / 2 ** (b - 1),
            ),
            Mistake(
                "used each token's range (max - min) over 2**bits - 1, an asymmetric scale; the task asks for "
                "symmetric scales",
                lambda x, b: (x.amax(dim=1) - x.amin(dim=1)) / (2**b - 1),
            ),
        ],
    ),
    Task(
        "05.smooth_factors",
        "SmoothQuant's per-feature factors",
        _smooth_factors,
        [
            Case((ACTS, _w(6, 16), 0.5), "alpha 0.5, x [12, 16], w [6, 16]"),
            Case((ACTS, _w(6, 16), 0.75), "alpha 0.75"),
            Case((_w(5, 4, spread=False), _w(3, 4), 0.25), "alpha 0.25, x [5, 4], w [3, 4]"),
        ],
        "one factor per input feature j, from column j of the activations and column j of the weights, balanced by "
        "alpha (lesson 05, section 3)",
        [
            Mistake("swapped alpha and 1 - alpha", lambda x, w, a: _smooth_factors(x, w, 1 - a)),
            Mistake(
                "took one factor for the whole tensor (x's and w's largest |value| overall); each input feature j "
                "gets its own s_j, from column j of x and of w",
                lambda x, w, a: (x.abs().max() ** a / w.abs().max() ** (1 - a)).expand(x.shape[1]),
            ),
            Mistake(
                "used the rows of w instead of its columns (input features)",
                lambda x, w, a: x.abs().amax(0) ** a / w.abs().amax(1).mean() ** (1 - a),
            ),
            Mistake("used alpha 0.5 whatever alpha is (hard-coded)", lambda x, w, a: _smooth_factors(x, w, 0.5)),
            Mistake(
                "multiplied by the weight term instead of dividing: the weights' part is in the denominator",
                lambda x, w, a: x.abs().amax(0) ** a * w.abs().amax(0) ** (1 - a),
            ),
            Mistake(
                "inverted the factor (the weights' term over the activations'): s_j divides feature j, so it must "
                "grow with the feature's max|x_j|",
                lambda x, w, a: w.abs().amax(0) ** (1 - a) / x.abs().amax(0) ** a,
            ),
            Mistake(
                "used alpha on both sides: the weights' exponent is 1 - alpha",
                lambda x, w, a: x.abs().amax(0) ** a / w.abs().amax(0) ** a,
            ),
            Mistake(
                "used each column's largest value, not its largest |value|: a negative value can be the loudest",
                lambda x, w, a: x.amax(0) ** a / w.amax(0) ** (1 - a),
            ),
            Mistake(
                "used each column's largest value, not its largest |value|: a negative value can be the loudest",
                lambda x, w, a: x.amax(0) ** a / w.abs().amax(0) ** (1 - a),
            ),
            Mistake(
                "used each column's largest value, not its largest |value|: a negative value can be the loudest",
                lambda x, w, a: x.abs().amax(0) ** a / w.amax(0) ** (1 - a),
            ),
        ],
    ),
    Task(
        "05.loudest_after_smoothing",
        "which feature sets the static scale after smoothing",
        _loudest_after_smoothing,
        _cases_loudest_after_smoothing(),
        "one static scale is set by the single largest |value| left once each feature is divided by its own "
        "factor, which depends on its weight column too",
        [
            Mistake(
                "ranked features by max|x_j| / max|w_j|, which is what s_j grows with; the feature is divided by "
                "s_j, so a loud weight column keeps it loud",
                lambda x, w, a: int((x.abs().amax(0) / w.abs().amax(0)).argmax()),
            ),
            Mistake(
                "ranked features by their mean |x_j| / s_j: one static scale is set by the single largest |value|",
                lambda x, w, a: int((x.abs().mean(0) / _smooth_factors(x, w, a)).argmax()),
            ),
            Mistake(
                "returned the loudest feature before smoothing (or computed s without the weights): each feature "
                "is divided by its own factor, so the order can change",
                lambda x, w, a: int(x.abs().amax(0).argmax()),
            ),
            Mistake(
                "returned a token index: reduce over the tokens (dim 0), then pick the loudest feature",
                lambda x, w, a: int((x / _smooth_factors(x, w, a)).abs().amax(1).argmax()),
            ),
            Mistake(
                "returned the feature whose weight column is loudest",
                lambda x, w, a: int(w.abs().amax(0).argmax()),
            ),
            Mistake(
                "multiplied x by s instead of dividing: the activations are divided, the weights multiplied",
                lambda x, w, a: int((x * _smooth_factors(x, w, a)).abs().amax(0).argmax()),
            ),
            Mistake(
                "took each feature's largest value, not its largest |value|: a negative spike is loud too",
                lambda x, w, a: int((x / _smooth_factors(x, w, a)).amax(0).argmax()),
            ),
            Mistake(
                "computed the factors from each feature's largest value, not its largest |value|: a feature "
                "that is negative on every token gets a NaN factor",
                lambda x, w, a: int((x / (x.amax(0) ** a / w.abs().amax(0) ** (1 - a))).abs().amax(0).argmax()),
            ),
        ],
        rtol=0,
        atol=0,
    ),
    Task(
        "05.which_tool",
        "per-token scales or smoothing for an activation's outliers",
        _which_tool,
        _cases_which_tool(),
        '"per-token" or "smooth": which tokens carry the loud values, and would a per-token scale keep them out of '
        "a typical token's ruler?",
        [
            Mistake(
                "answered smooth for a case whose loud value may sit on one token in six (a [CLS] spike): would a "
                "per-token scale keep it out of the other tokens' rulers?",
                _which_by_column_absmax,
            ),
            Mistake(
                "judged by each feature's mean |x| over tokens (or another statistic over all its tokens, such as "
                "its largest |x| against a high threshold): a spike on a few tokens can pass it; ask whether the "
                "feature is loud on a typical token",
                _which_by_column_mean,
            ),
            Mistake("always answered smooth", lambda x: "smooth"),
            Mistake(
                "answered per-token on every case, including those with a feature loud on most tokens",
                lambda x: "per-token",
            ),
        ],
        rtol=0,
        atol=0,
        minutes=6,  # a design task: the learner picks a criterion
    ),
    Task(
        "05.choose_ruler",
        "choose an activation's int8 ruler from its per-token statistics",
        _choose_ruler,
        [
            Case(_token_stats(13, (-0.17, -0.15), (2.5, 4.0), {0: (-0.17, 25.0)}), "13 tokens, mins near -0.17"),
            Case(_token_stats(11, (-4.0, -3.0), (3.0, 4.0), {0: (-26.0, 28.0)}), "11 tokens, both signs, token 0 loud"),
            Case(_token_stats(13, (0.0, 0.1), (4.5, 5.5), {}), "13 tokens, all in [0, 5.5]"),
            Case(_token_stats(11, (-4.3, -3.7), (3.7, 4.3), {}), "11 tokens, both signs, even ranges"),
            Case(_token_stats(13, (-3.0, -2.0), (0.0, 0.1), {3: (-20.0, 0.05)}), "13 tokens, maxes near 0"),
            Case(_token_stats(11, (1.0, 1.5), (5.5, 6.0), {}), "shifted up, no loud token", hidden=True),
            Case(
                _token_stats(13, (-1.2, -0.8), (0.8, 1.2), {2: (-9.0, 8.0), 7: (-7.0, 9.5)}),
                "two loud tokens",
                hidden=True,
            ),
            Case(_token_stats(11, (-0.9, -0.5), (5.0, 6.0), {}), "small negative side", hidden=True),
            Case(_token_stats(13, (-3.0, -2.0), (0.0, 0.1), {}), "13 tokens, maxes near 0, no loud token"),
            Case(
                _token_stats(11, (-1.2, -1.0), (1.0, 1.2), {4: (-2.2, 2.2)}),
                "both signs, one token a little louder",
                hidden=True,
            ),
            Case(
                _token_stats(11, (-6.0, -5.5), (5.5, 6.0), {i: (-10.0, 10.0) for i in (1, 3, 5, 7, 9)}),
                "five loud tokens of eleven",
                hidden=True,
            ),
            Case(
                _token_stats(13, (-4.2, -3.8), (3.8, 4.2), {3: (-0.5, 0.4), 8: (-0.3, 0.5)}),
                "two near-silent tokens among even ones",
                hidden=True,
            ),
            Case(
                _token_stats(13, (-1.1, -0.9), (0.9, 1.1), {6: (-2.6, 2.5)}),
                "one token 2.5 times the others",
                hidden=True,
            ),
            Case(  # the asymmetric step is 1.38 times finer: below the 1.5 threshold
                _token_stats(13, (-2.6, -2.0), (5.0, 5.9), {0: (-2.7, 6.0)}),
                "both signs, the negative side 0.45 of the positive",
                hidden=True,
            ),
            Case(  # a typical token's step is 1.33 times finer: below the 1.5 threshold
                _token_stats(11, (-4.0, -3.0), (4.4, 4.6), {5: (-6.0, 6.0)}),
                "both signs, a typical token 0.75 of the loudest",
                hidden=True,
            ),
            Case(  # separates judging per-token against the asymmetric step from the symmetric one
                _token_stats(13, (-0.12, -0.08), (3.8, 5.0), {0: (-0.1, 8.0)}),
                "mins near -0.1, maxes 3.8 to 5, one token at 8",
                hidden=True,
            ),
            Case(  # |min| is about 0.29 of max: the asymmetric step is still over 1.5 times finer
                _token_stats(13, (-1.4, -1.2), (4.5, 5.0), {}),
                "mins -1.4 to -1.2, maxes 4.5 to 5",
                hidden=True,
            ),
        ],
        "work out the step each ruler gives (lesson 01's rulers over the range these statistics allow), "
        "then compare each upgrade's step with the symmetric per-tensor step; a typical token is one that "
        "a few loud tokens cannot move",
        [
            Mistake("the symmetric step came from the max only: the negative side counts too", _choose_max_not_absmax),
            Mistake(
                "chose asymmetric whenever the two sides differ at all, not where it makes the step finer",
                _choose_any_imbalance,
            ),
            Mistake(
                "your rule never chooses per-token: a typical token's step must be 1.5 times *smaller* than the "
                "per-tensor step (and the largest token's step is the per-tensor step itself)",
                _choose_largest_token,
            ),
            Mistake(
                "a token's symmetric step came from its max only: a loud negative side counts too",
                _choose_token_max_only,
            ),
            Mistake(
                "a token's symmetric step came from its range (max - min): a symmetric ruler spans [-absmax, absmax]",
                _choose_token_range,
            ),
            Mistake(
                "the typical token was the mean: a few loud tokens pull the mean up",
                _choose_mean_token,
            ),
            Mistake(
                "judged per-token with asymmetric per-token rulers: the question is whether symmetric per-token "
                "scales alone pay off",
                _choose_asym_token,
            ),
            Mistake(
                "chose asymmetric only where the data is (nearly) one-sided: a small negative side still nearly "
                "halves the step; compare the steps, not the signs",
                _choose_one_sided,
            ),
            Mistake(
                "chose asymmetric only where no value is negative (or none positive): a small negative side, like "
                "GELU's -0.17, still leaves the negative codes nearly empty; compare the steps, not the signs",
                _choose_strictly_one_sided,
            ),
            Mistake(
                "chose asymmetric when one side is under half the other: compare the two steps, not the sides",
                _choose_half_side,
            ),
            Mistake("chose per-token whenever the tokens' ranges differ at all", _choose_any_spread),
            Mistake(
                "compared the per-token step with the upgraded (asymmetric) step: judge each upgrade against the "
                "symmetric per-tensor step, separately",
                _choose_against_chosen,
            ),
            Mistake(
                "judged per-token by the quietest token: a typical token is the median, which a few silent tokens "
                "cannot move either",
                _choose_quietest_token,
            ),
            Mistake(
                "chose per-token whenever one token is louder than twice the median: a loud token is not enough, "
                "compare the typical token's step with the per-tensor step",
                _choose_any_loud_token,
            ),
        ],
        minutes=8,  # a design task: the learner picks a criterion
    ),
]

PREDICT = {
    "one_sided": choice(
        "On the GELU output, per-tensor, the zero point roughly halves the step. With per-token (dynamic) "
        "scales each token already gets a ruler fitted to its own values: what does the zero point gain there?",
        (
            "About as much as per-tensor, nearly one bit",
            True,
            "Every token's minimum is GELU's -0.17 while its maximum is positive, so a symmetric ruler wastes "
            "half its codes on every row, and the zero point about halves every row's step. Halving the step is "
            "6 dB; the table shows a little less.",
        ),
        (
            "Nothing",
            False,
            "Tempting, because per-token scales already fit each token. But a symmetric per-token ruler fits "
            "each token's absmax, not its range: it still spans [-max, +max] while the token uses [-0.17, max].",
        ),
        (
            "Less than per-tensor, but something",
            False,
            "Tempting, since per-token and per-tensor gains usually overlap. But they fix different waste: "
            "per-token fixes loud rows, the zero point fixes the empty negative side, and every row has one.",
        ),
        (
            "Far more than per-tensor",
            False,
            "Tempting, because small tokens get a tiny step that the zero point halves again. But a gain in dB "
            "is a ratio of steps: halving a small step gains the same 6 dB as halving a large one.",
        ),
    ),
    "outlier_token": choice(
        "On FC1's input, per-token scales gain about 9.5 dB over one per-tensor scale. The control gives only "
        "the [CLS] rows (one per sentence) their own scales; every other row shares one scale. How much of the "
        "9.5 dB does it recover?",
        (
            "Almost none",
            False,
            "It tempts because [CLS] is one row in twelve. But feature 99's 28 on those rows sets the shared "
            "scale for every row; once they have their own scales, the shared scale of the rest drops to the "
            "ordinary tokens' range, and every ordinary row gains.",
        ),
        (
            "About two thirds",
            True,
            "The spike sets the shared scale: isolating the [CLS] rows lets the other rows share a scale fitted "
            "to ordinary tokens, about 6.5 of the 9.5 dB. The rest comes from fitting each ordinary token on its own.",
        ),
        (
            "All of it, or more",
            False,
            "It tempts because the [CLS] spike dominates the plot, as if feature 99 were the only outlier. But "
            "the control still gives all ordinary tokens one shared scale, and per-token scales fit each of them "
            "on its own too.",
        ),
    ),
    "smooth_99": choice(
        "QKV input, static per-tensor scale: smoothing every feature gains about 3.5 dB. Given the loudest "
        "features printed above, smooth only feature 99, the [CLS] spike (every other s_j set to 1). How much "
        "of the 3.5 dB does that give?",
        (
            "Nearly all of it",
            False,
            "It tempts because the spike dominated FC1's input in section 2. But on the QKV input feature 63 is "
            "nearly as loud: shrink the spike, and 63 still sets the static scale.",
        ),
        (
            "About half",
            False,
            "It tempts as a fair split between two loud features. But one static scale is set by the single "
            "largest value: shrinking one of two near-equal maxima barely moves it.",
        ),
        (
            "Nothing, or a little less",
            True,
            "Feature 63 is nearly as loud as the spike, so it sets the static scale once 99 is smoothed, and the "
            "step barely changes; meanwhile weight column 99 grows, which costs a little. Only smoothing both "
            "lowers the scale.",
        ),
    ),
}

RECALL: tuple[Question, ...] = (
    choice(
        "QKV input, one static per-tensor scale: smooth only features 99 and 63, which leaves both below 2 "
        "(every other s_j is 1). Which feature now sets the scale?",
        (
            "Feature 157",
            True,
            "One static scale is set by the largest |x| left. With 99 and 63 below 2, the loudest unsmoothed "
            "feature, 157 at 3.1, sets it.",
        ),
        (
            "Feature 99: still the spike",
            False,
            "Tempting, as if smoothing kept the features' order. But 99 is divided by its own s_j and now lies "
            "below 2, under 157's 3.1.",
        ),
        (
            "Feature 63",
            False,
            "Tempting, since 63 took over when 99 alone was smoothed (section 4). But 63 is divided by its own "
            "s_j, 4.4, and lies at 1.3: the largest value left, 157's 3.1, sets the scale.",
        ),
        (
            "None: smoothing makes every feature equal",
            False,
            "Tempting: SmoothQuant is said to balance the features, but only those it smooths. Only 99 and 63 "
            "were smoothed here; the other features keep their values, and the largest of them, 157's 3.1, sets "
            "the scale.",
        ),
    ),
    Numeric(
        "Lesson 01's asymmetric ruler, uint8, data in [-0.17, 24.7]: what is its zero point?",
        2,
        "scale = (24.7 + 0.17) / 255 = 0.0975; zero point = round(0.17 / 0.0975) = round(1.74) = 2: "
        "the code that stands for 0.0 sits two steps above the bottom.",
        mistakes=(
            (0, "the ruler must reach down to -0.17, so 0.0 is not the lowest code"),
            (-2, "wrong sign: the zero point is round(-min / scale), and min is negative"),
            (128, "that is a symmetric ruler written in unsigned codes"),
            (1, "truncated 1.74 to 1: round it to the nearest code"),
            (1.74, "a zero point is an integer code: round it"),
        ),
    ),
    choice(
        "Why can per-token activation scales be applied after an int8 GEMM, but per-feature scales cannot?",
        (
            "A per-token scale is constant along the reduction axis; a per-feature one changes inside the sum",
            True,
            "A constant factors out of the sum, like a per-channel weight scale; a factor that changes with k "
            "does not.",
        ),
        (
            "Per-token scales are dynamic, so they can only be applied after the GEMM",
            False,
            "Tempting, since they are computed at run time. But each is computed from its row of x before the "
            "GEMM, which divides x by it; it can be multiplied back after only because it is constant along k.",
        ),
        (
            "Per-feature scales change with every input, so they cannot be known before the GEMM",
            False,
            "Tempting, since activations arrive at run time. But per-token scales change with every input too, "
            "and per-feature scales could be calibrated ahead; the problem is algebra: a factor that changes "
            "with k cannot be pulled out of the sum.",
        ),
    ),
)

EXERCISE_RECALL: tuple[Question, ...] = (  # in the order the exercise asks them
    choice(
        "SmoothQuant, alpha 0.5: feature j has max|x_j| = 16, its weight column max|w_j| = 4. What is max|x_j| / s_j?",
        (
            "8",
            True,
            "s_j = 16**0.5 / 4**0.5 = 2, so 16 / 2 = 8, the geometric mean of 16 and 4. The weight column grows to "
            "4 * 2 = 8 too: alpha 0.5 leaves both sides at 8.",
        ),
        ("2", False, "That is s_j itself; the question asks for the feature's absmax after dividing by it."),
        (
            "4",
            False,
            "That is 16**0.5 alone. But s_j also divides by max|w_j|**0.5, so a loud weight column keeps the "
            "feature loud.",
        ),
        ("16", False, "Tempting, since x @ w.T is unchanged. But the feature itself is divided by s_j = 2."),
    ),
    choice(
        "Task 4, for any alpha below 1: what decides which feature sets the static scale after smoothing?",
        (
            "The product max|x_j| max|w_j|, so the same feature whatever alpha is",
            True,
            "max|x_j| / s_j = (max|x_j| max|w_j|)^(1 - alpha): for alpha below 1 it grows with the product, "
            "so alpha changes how loud the features are, not their order.",
        ),
        (
            "max|x_j| at a small alpha, max|w_j| at a large one",
            False,
            "Tempting, since alpha weighs the two sides in s_j. But after dividing, both maxima enter as one "
            "product raised to 1 - alpha: no alpha below 1 reorders the features.",
        ),
        (
            "The ratio max|x_j| / max|w_j|",
            False,
            "That ratio is what s_j grows with. The feature is divided by s_j, which leaves the product.",
        ),
        (
            "max|x_j| alone: smoothing divides every feature by about the same factor",
            False,
            "Each feature gets its own s_j, and a loud weight column makes it small: Task 4's cases with a "
            "loud weight column change the order.",
        ),
    ),
    choice(
        "Lesson 04: smoothing triples weight column j, now each row's largest. Int4, groups of 32 along K: "
        "what coarsens?",
        (
            "In each row, the 32 weights of the group that holds column j",
            True,
            "A group's scale is set by its own largest |w|, and column j sits in one group per row: the other "
            "groups of the row keep their steps. With one scale per output channel (section 4), the whole row "
            "would coarsen.",
        ),
        (
            "Every weight of the tensor",
            False,
            "That is one per-tensor scale. Groups of 32 each have their own scale, so only the groups that "
            "hold column j see it.",
        ),
        (
            "Only column j's own weights",
            False,
            "Tempting, since only that column grew. But its weights share a scale with the other 31 weights "
            "of their group, and that scale now fits the grown value.",
        ),
        (
            "The 32 rows around row j",
            False,
            "Groups run along the input axis, inside a row, not across rows: column j meets one group in every row.",
        ),
    ),
)

"""Lesson 09 · Smarter rounding (GPTQ against groups): the exercise tasks and the recall questions.

Sources: ``notebooks/09_smarter_rounding.py`` (the lesson) and
``exercises/solutions/09_smarter_rounding.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import LESSON, Numeric, Question, choice
from qlesson.lessons._shared import qmax

_G = torch.Generator().manual_seed(1234 + 9)


def _x(tokens: int, features: int, corr: float = 0.8) -> torch.Tensor:
    """float64 inputs whose neighbouring features move together (so errors have somewhere to go)."""
    base = torch.randn(tokens, features, generator=_G, dtype=torch.float64)
    return base + corr * base.roll(1, dims=1)


def _w(n: int, k: int) -> torch.Tensor:
    return torch.randn(n, k, generator=_G, dtype=torch.float64)


def _spd_inverse(k: int) -> torch.Tensor:
    x = _x(4 * k, k)
    return torch.linalg.inv(2 * x.T @ x / x.shape[0])


# ---- task 1: one error-feedback step ----------------------------------------------------------


def _push_error(w: torch.Tensor, j: int, q_col: torch.Tensor, hinv: torch.Tensor, sign: float = 1.0) -> torch.Tensor:
    w = w.clone()
    err = (w[:, j] - q_col) / hinv[j, j]
    w[:, j:] -= sign * err[:, None] * hinv[j, j:][None, :]
    return w


def _push_no_divide(w: torch.Tensor, j: int, q_col: torch.Tensor, hinv: torch.Tensor) -> torch.Tensor:
    w = w.clone()
    w[:, j:] -= (w[:, j] - q_col)[:, None] * hinv[j, j:][None, :]
    return w


def _push_everywhere(w: torch.Tensor, j: int, q_col: torch.Tensor, hinv: torch.Tensor) -> torch.Tensor:
    w = w.clone()
    w -= ((w[:, j] - q_col) / hinv[j, j])[:, None] * hinv[j][None, :]
    return w


def _push_later_only(w: torch.Tensor, j: int, q_col: torch.Tensor, hinv: torch.Tensor) -> torch.Tensor:
    w = w.clone()
    w[:, j + 1 :] -= ((w[:, j] - q_col) / hinv[j, j])[:, None] * hinv[j, j + 1 :][None, :]
    return w


def _push_case(n: int, k: int, j: int) -> tuple:
    w = _w(n, k)
    q_col = torch.round(w[:, j] * 2) / 2  # rounded to a ruler with ticks of 0.5
    return (w, j, q_col, _spd_inverse(k))


# ---- task 2: GPTQ per channel, column by column -----------------------------------------------


def _gptq_codes(
    w: torch.Tensor,
    x: torch.Tensor,
    scale: torch.Tensor,
    bits: int,
    damp: float = 0.01,
    shrink: bool = True,
    feedback: bool = True,
    clamp: bool = True,
    push_unclamped: bool = False,
    per_entry_damp: bool = False,
    trace_damp: bool = False,
    low: int | None = None,
    ticks: bool = False,
) -> torch.Tensor:
    w, s = w.clone(), scale
    h = 2 * x.T @ x / x.shape[0]
    if per_entry_damp:  # a misreading: 1% of each diagonal entry instead of 1% of their mean
        h = h + damp * torch.diag(torch.diagonal(h))
    elif trace_damp:  # a misreading: 1% of the trace (the diagonal's sum) instead of its mean
        h = h + damp * torch.diagonal(h).sum() * torch.eye(h.shape[0], dtype=h.dtype)
    else:
        h = h + damp * torch.diagonal(h).mean() * torch.eye(h.shape[0], dtype=h.dtype)
    hinv = torch.linalg.inv(h)
    codes = torch.zeros_like(w)
    for j in range(w.shape[1]):
        r = torch.round(w[:, j] / s)
        q = torch.clamp(r, -qmax(bits) if low is None else low, qmax(bits)) if clamp else r
        codes[:, j] = q
        if feedback:
            stored = r if push_unclamped else q
            err = (w[:, j] - (stored if ticks else stored * s)) / hinv[j, j]  # ticks: a slip, codes for values
            w[:, j:] -= err[:, None] * hinv[j, j:][None, :]
        if shrink:
            hinv = hinv - torch.outer(hinv[:, j], hinv[j]) / hinv[j, j]
    return codes


def _gptq_case(n: int, k: int, tokens: int, bits: int, clip: float = 1.0) -> tuple:
    """Per-row scales ``clip * max|w| / qmax``: below 1, a clipped ruler (some weights lie past the last tick)."""
    w = _w(n, k)
    return (w, _x(tokens, k, corr=0.95), clip * w.abs().amax(1) / qmax(bits), bits)


def _damping_case(loudness: tuple[float, ...] = (1, 1, 1, 1, 1, 1)) -> tuple:
    """[4, 6] with 7 tokens: H is invertible but ill-conditioned, and 1% damping changes codes.

    ``loudness`` scales the input features: unequal ones make 1% of the mean diagonal differ from 1% of each entry.
    """
    g = torch.Generator().manual_seed(8)
    w = torch.randn(4, 6, generator=g, dtype=torch.float64)
    base = torch.randn(7, 6, generator=g, dtype=torch.float64)
    x = (base + 0.95 * base.roll(1, dims=1)) * torch.tensor(loudness, dtype=torch.float64)
    return (w, x, w.abs().amax(1) / qmax(4), 4)


def _gptq_own_scales(w: torch.Tensor, x: torch.Tensor, scale: torch.Tensor, bits: int) -> torch.Tensor:
    return _gptq_codes(w, x, w.abs().amax(1) / qmax(bits), bits)


# ---- task 3: how many calibration tokens before GPTQ wins -------------------------------------


def _relative_output_error(x: torch.Tensor, w: torch.Tensor, w_hat: torch.Tensor) -> float:
    return float((x @ (w - w_hat).T).square().sum() / (x @ w.T).square().sum())


def _fewest_tokens(
    w: torch.Tensor,
    x_cal: torch.Tensor,
    x_held: torch.Tensor,
    ns: tuple,
    bits: int,
    score_on: str = "held",
    pick: str = "first",
    base: str = "channel",
) -> int:
    from qlesson.quant.gptq import gptq
    from qlesson.quant.granularity import PerChannel
    from qlesson.quant.quantize import fake_quantize

    rtn = fake_quantize(w, bits, granularity=PerChannel(0))
    if base == "g32":  # a slip: RTN with groups of 32 along in_features (a shorter last group where 32 does not divide)
        rtn = torch.cat([fake_quantize(c, bits, granularity=PerChannel(0)) for c in w.split(32, dim=1)], dim=1)
    gaps = []
    for n in ns:
        x = {"held": x_held, "held_n": x_held[:n], "both": torch.cat([x_cal, x_held])}.get(score_on, x_cal[:n])
        w_hat = gptq(w, x_cal[:n], bits).dequantize()
        gaps.append(_relative_output_error(x, w, w_hat) - _relative_output_error(x, w, rtn))
    if pick == "least":
        return ns[min(range(len(ns)), key=lambda i: gaps[i])]
    return next((n for n, gap in zip(ns, gaps, strict=True) if gap < 0), 0)


def _rule_of_thumb(w: torch.Tensor, x_cal: torch.Tensor, x_held: torch.Tensor, ns: tuple, bits: int) -> int:
    return next(n for n in ns if n >= w.shape[1])


def _tokens_case(seed: int, n_out: int, k: int, ns: tuple, bits: int, held: int = 4) -> tuple:
    """A layer ``[n_out, k]`` and inputs whose features are mixed (so GPTQ has errors to move), from one source;
    ``held * max(ns)`` held-out tokens."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n_out, k, generator=g, dtype=torch.float64)
    mix = torch.eye(k, dtype=torch.float64) + torch.randn(k, k, generator=g, dtype=torch.float64) / k**0.5

    def draw(tokens: int) -> torch.Tensor:
        base = torch.randn(tokens, k, generator=g, dtype=torch.float64)
        return (base + 0.9 * base.roll(1, dims=1)) @ mix

    return (w, draw(max(ns)), draw(held * max(ns)), ns, bits)


TASKS: list[Task] = [
    Task(
        "09.push_error",
        "push one column's rounding error onto the later columns",
        _push_error,
        [
            Case(_push_case(3, 5, 0), "[3, 5], column 0"),
            Case(_push_case(4, 6, 2), "[4, 6], column 2"),
            Case(_push_case(2, 4, 3), "[2, 4], the last column"),
        ],
        "quantizing column j leaves an error; spread it onto the columns from j on, scaled by row j of the inverse "
        "Hessian; work on a copy of w",
        [
            Mistake("forgot to divide the error by hinv[j, j]", _push_no_divide),
            Mistake("added the correction instead of subtracting it", lambda w, j, q, h: _push_error(w, j, q, h, -1.0)),
            Mistake("also moved the columns before j, which are already rounded", _push_everywhere),
            Mistake("updated only the later columns: column j should become q_col", _push_later_only),
        ],
        keeps_inputs=True,  # the task text asks for a new w: the caller's w must stay as it was
    ),
    Task(
        "09.gptq_per_channel",
        "GPTQ with per-channel scales, column by column",
        _gptq_codes,
        [
            Case(_gptq_case(4, 6, 40, 4, clip=0.8), "int4, [4, 6], 40 tokens, scales clipped to 0.8 of max|w|"),
            Case(_gptq_case(6, 8, 64, 3), "int3, [6, 8], 64 tokens, RTN's scales"),
            Case(_gptq_case(3, 5, 4, 4, clip=0.9), "int4, [3, 5], 4 tokens for 5 features (rank deficient)"),
            Case(_damping_case(), "int4, [4, 6], 7 tokens for 6 features: the damping changes codes"),
            Case(_gptq_case(5, 10, 100, 2, clip=0.7), "int2, [5, 10], 100 tokens, clipped scales"),
            Case(_gptq_case(6, 12, 80, 4, clip=0.75), "int4, [6, 12], 80 tokens, clipped scales", hidden=True),
            Case(_damping_case((1, 1, 10, 0.1, 1, 3)), "int4, [4, 6], 7 tokens, unequal features", hidden=True),
        ],
        "GPTQ with the given scales, never changed, on the course's symmetric ruler, and the paper's damping; the "
        "codes in the order of the columns",
        [
            Mistake(
                "rounded to nearest (no error feedback): that is RTN",
                lambda w, x, s, b: _gptq_codes(w, x, s, b, feedback=False),
            ),
            Mistake(
                "kept the full inverse Hessian at every step: remove each rounded column from it",
                lambda w, x, s, b: _gptq_codes(w, x, s, b, shrink=False),
            ),
            Mistake("used int4 whatever the bits (4 hard-coded)", lambda w, x, s, b: _gptq_codes(w, x, s, 4)),
            Mistake(
                "left out the damping: add 1% of H's mean diagonal to its diagonal before inverting",
                lambda w, x, s, b: _gptq_codes(w, x, s, b, damp=0.0),
            ),
            Mistake(
                "damped each diagonal entry by 1% of itself: the paper adds 1% of the *mean* diagonal to every entry",
                lambda w, x, s, b: _gptq_codes(w, x, s, b, per_entry_damp=True),
            ),
            Mistake(
                "damped by 1% of H's trace (the sum of its diagonal): the paper adds 1% of the diagonal's *mean*",
                lambda w, x, s, b: _gptq_codes(w, x, s, b, trace_damp=True),
            ),
            Mistake(
                "clamped to [-qmax - 1, qmax] (int4: [-8, 7], every code of a signed int): the course's symmetric "
                "ruler runs from -qmax to qmax (int4: [-7, 7])",
                lambda w, x, s, b: _gptq_codes(w, x, s, b, low=-qmax(b) - 1),
            ),
            Mistake(
                "did not clamp the codes to [-qmax, qmax]: with a clipped ruler, and after the pushes, a weight can "
                "lie past the last tick",
                lambda w, x, s, b: _gptq_codes(w, x, s, b, clamp=False),
            ),
            Mistake(
                "pushed the rounding error before clamping: push the error of the value actually stored, "
                "w - clamp(round(w / s)) * s",
                lambda w, x, s, b: _gptq_codes(w, x, s, b, push_unclamped=True),
            ),
            Mistake(
                "pushed the error in ticks (w - code): push the error of the value stored, w - code * scale, in the "
                "weights' units",
                lambda w, x, s, b: _gptq_codes(w, x, s, b, ticks=True),
            ),
            Mistake(
                "computed the scales from w (max|w| / qmax, as ql.gptq does) instead of using the given ones",
                _gptq_own_scales,
            ),
        ],
        minutes=12,
    ),
]

TASKS.append(
    Task(
        "09.fewest_tokens",
        "how many calibration tokens before GPTQ really wins",
        _fewest_tokens,
        [
            Case(_tokens_case(0, 16, 32, (4, 8, 16, 24, 32, 64, 128), 4), "[16, 32], int4"),
            Case(_tokens_case(0, 24, 48, (6, 12, 24, 36, 48, 96, 192), 3), "[24, 48], int3"),
            Case(_tokens_case(1, 16, 32, (8, 16, 24, 32, 48, 96), 4), "[16, 32], int4, another layer"),
            Case(_tokens_case(3, 32, 40, (5, 10, 15, 25, 40, 80, 160), 4), "[32, 40], int4", hidden=True),
            Case(_tokens_case(4, 8, 64, (16, 32, 48, 64, 128, 256), 4), "[8, 64], int4", hidden=True),
            Case(_tokens_case(18, 16, 32, (4, 8, 16, 24, 32, 64, 128), 4, held=2), "[16, 32], int4", hidden=True),
        ],
        "GPTQ fits the tokens it is calibrated on; judge it where that fit cannot help it, with the lesson's "
        "measure of a layer's error. Every case has an answer: if your loop finds none, look at what it measures",
        [
            Mistake(
                "GPTQ won at no count (0 on every case): judged on the weights themselves? There RTN, the nearest "
                "tick, always wins; GPTQ is judged on the layer's output",
                lambda w, xc, xh, ns, b: 0,
            ),
            Mistake(
                "GPTQ 'won' at the first count in every case: judged on its own calibration tokens (there it beats "
                "RTN with almost any count), calibrated on all of x_cal at every count (take its first n tokens), or "
                "not per-channel like RTN (groups win at once)? Judge like with like, on tokens GPTQ never saw",
                lambda w, xc, xh, ns, b: _fewest_tokens(w, xc, xh, ns, b, score_on="calib"),
            ),
            Mistake(
                "judged on only as many held-out tokens as calibration tokens: use all of x_held",
                lambda w, xc, xh, ns, b: _fewest_tokens(w, xc, xh, ns, b, score_on="held_n"),
            ),
            Mistake(
                "judged on the calibration and held-out tokens together: the calibration tokens, where GPTQ's fit "
                "flatters it, still count. Judge on the held-out tokens only",
                lambda w, xc, xh, ns, b: _fewest_tokens(w, xc, xh, ns, b, score_on="both"),
            ),
            Mistake(
                "compared with RTN g32: the task compares per-channel GPTQ with per-channel RTN, the same bits",
                lambda w, xc, xh, ns, b: _fewest_tokens(w, xc, xh, ns, b, base="g32"),
            ),
            Mistake(
                "used the rule of thumb (as many tokens as inputs) instead of measuring",
                _rule_of_thumb,
            ),
            Mistake(
                "returned a larger count than the first with which GPTQ wins: the count with the least error? Return "
                "the fewest tokens with which it beats RTN",
                lambda w, xc, xh, ns, b: _fewest_tokens(w, xc, xh, ns, b, pick="least"),
            ),
        ],
        minutes=5,
        shows_expected=False,  # the expected count would let a learner tune by trial
    )
)

# ---- task 4: per-channel GPTQ or RTN with groups of 32 -------------------------------------------


def _pick(
    w: torch.Tensor,
    x_cal: torch.Tensor,
    x_held: torch.Tensor,
    bits: int,
    judge: str = "held",
    scales: bool | str = True,
) -> tuple[str, float]:
    from qlesson.quant.gptq import gptq
    from qlesson.quant.granularity import PerGroup
    from qlesson.quant.quantize import fake_quantize

    g32 = fake_quantize(w, bits, granularity=PerGroup(32))
    gp = gptq(w, x_cal, bits).dequantize()
    if judge == "weights":
        gptq_wins = bool((w - gp).square().mean() < (w - g32).square().mean())
    else:
        x = {"held": x_held, "cal": x_cal, "both": torch.cat([x_cal, x_held])}[judge]
        gptq_wins = _relative_output_error(x, w, gp) < _relative_output_error(x, w, g32)
    scale_bits = 32 if scales == "fp32" else 16 + bits if scales == "zp" else 16 if scales else 0
    if gptq_wins:
        per_row = w.shape[0] if scales == "rows" else w.shape[1]
        return ("gptq", float(bits) + scale_bits / per_row)
    return ("rtn_g32", float(bits) + scale_bits / 32)


def _pick_case(
    seed: int, n_out: int, k: int, tokens: int, bits: int, big: int = 0, corr: float = 0.9, held: int = 2000
) -> tuple:
    """A layer and its inputs; ``big`` weights of size 4 per row stretch a per-row ruler, ``corr`` mixes features."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n_out, k, generator=g, dtype=torch.float64)
    if big:
        where = torch.randint(0, k, (n_out, big), generator=g)
        w.scatter_(1, where, 4 * torch.randn(n_out, big, generator=g, dtype=torch.float64).sign())
    mix = torch.eye(k, dtype=torch.float64) + corr * torch.randn(k, k, generator=g, dtype=torch.float64) / k**0.5

    def draw(n: int) -> torch.Tensor:
        base = torch.randn(n, k, generator=g, dtype=torch.float64)
        return (base + corr * base.roll(1, dims=1)) @ mix

    return (w, draw(tokens), draw(held), bits)


TASKS.append(
    Task(
        "09.pick",
        "per-channel GPTQ or round-to-nearest with groups of 32?",
        _pick,
        [
            Case(_pick_case(0, 16, 64, 512, 4), "[16, 64], int4, 512 calibration tokens"),
            Case(_pick_case(1, 16, 64, 48, 4), "[16, 64], int4, 48 calibration tokens"),
            Case(_pick_case(6, 16, 64, 1024, 3), "[16, 64], int3, 1024 calibration tokens"),
            Case(_pick_case(12, 16, 256, 2048, 4, big=1, corr=0.5), "[16, 256], int4, long rows", hidden=True),
            Case(_pick_case(3, 24, 64, 256, 4), "[24, 64], int4, 256 calibration tokens", hidden=True),
            Case(_pick_case(10, 16, 128, 1024, 4, big=1, corr=0.3), "[16, 128], int4", hidden=True),
            Case(_pick_case(35, 16, 64, 64, 4, big=1, held=100), "[16, 64], int4, 64 calibration tokens", hidden=True),
        ],
        "judge the two as lesson 09 judged them, on the layer's output; count the codes and the fp16 scales",
        [
            Mistake(
                "judged GPTQ on the tokens it was calibrated on, where its fit flatters it: on x_cal, or on x_held "
                "after calibrating on it? Calibrate on x_cal, and judge on text GPTQ never saw",
                lambda w, xc, xh, b: _pick(w, xc, xh, b, judge="cal"),
            ),
            Mistake(
                "the same answer, groups of 32, on every layer (block 3's mean in the lesson, or judged by the error "
                "of the weights themselves, where RTN always wins): some layers favour per-channel GPTQ. Measure each "
                "layer's output error on the held-out tokens",
                lambda w, xc, xh, b: ("rtn_g32", b + 0.5),
            ),
            Mistake(
                "the same answer, per-channel GPTQ, on every layer: on some layers groups of 32 win on held-out "
                "tokens (if you ran GPTQ with groups of 32, it wins everywhere, but the task compares GPTQ with one "
                "scale per row). Measure each layer's output error on the held-out tokens",
                lambda w, xc, xh, b: ("gptq", b + 16 / w.shape[1]),
            ),
            Mistake(
                "decided by the token count (GPTQ once there are as many calibration tokens as inputs) instead of "
                "measuring: on some layers groups win however many tokens there are",
                lambda w, xc, xh, b: ("gptq", b + 16 / w.shape[1]) if len(xc) >= w.shape[1] else ("rtn_g32", b + 0.5),
            ),
            Mistake(
                "judged on the calibration and held-out tokens together: the calibration tokens, where GPTQ's fit "
                "flatters it, still count. Judge on the held-out tokens only",
                lambda w, xc, xh, b: _pick(w, xc, xh, b, judge="both"),
            ),
            Mistake(
                "left out the fp16 scales from the bits per weight",
                lambda w, xc, xh, b: _pick(w, xc, xh, b, scales=False),
            ),
            Mistake(
                "one scale per row covers the row's in_features weights: 16 / in_features bits per weight, not "
                "16 / out_features",
                lambda w, xc, xh, b: _pick(w, xc, xh, b, scales="rows"),
            ),
            Mistake(
                "counted 32 bits per scale (fp32, or an fp16 scale plus a 16-bit zero point): the course stores one "
                "fp16 scale, 16 bits, and a symmetric ruler has no zero point",
                lambda w, xc, xh, b: _pick(w, xc, xh, b, scales="fp32"),
            ),
            Mistake(
                "counted a zero point of `bits` bits beside each scale (as AutoGPTQ's qzeros): a symmetric ruler "
                "stores only its fp16 scale",
                lambda w, xc, xh, b: _pick(w, xc, xh, b, scales="zp"),
            ),
        ],
        minutes=5,
        shows_expected=False,  # the expected pair would hand over the bits and the choice
    )
)

# ---- task 5: which calibration text? ------------------------------------------------------------


def _calib_text(
    w: torch.Tensor,
    x_a: torch.Tensor,
    x_b: torch.Tensor,
    x_held: torch.Tensor,
    bits: int,
    judge: str = "held",
    base: str = "g32",
) -> tuple[str, bool]:
    from qlesson.quant.gptq import gptq
    from qlesson.quant.granularity import PerChannel, PerGroup
    from qlesson.quant.quantize import fake_quantize

    cal = {"a": x_a, "b": x_b}
    fits = {name: gptq(w, x, bits).dequantize() for name, x in cal.items()}
    if judge == "fitheld":  # the set chosen on x_held, but GPTQ calibrated on x_held itself to decide `beats`
        best, _ = _calib_text(w, x_a, x_b, x_held, bits)
        fits[best] = gptq(w, x_held, bits).dequantize()
        judge = "held"
        errs = {best: 0.0}
    else:
        errs = {}
    if judge == "energy":  # the set with the larger total energy x.square().sum(), judged on x_held
        errs = {n: -float(x.square().sum()) for n, x in cal.items()}
        judge = "held"
    if judge == "margin":  # the set where GPTQ beats groups of 32 by most on its own tokens, judged on x_held
        g32 = fake_quantize(w, bits, granularity=PerGroup(32))
        errs = {n: _relative_output_error(x, w, fits[n]) - _relative_output_error(x, w, g32) for n, x in cal.items()}
        judge = "held"
    if judge == "cov":  # the set whose input covariance is nearest x_held's, judged on x_held
        c_held = x_held.T @ x_held / len(x_held)
        errs = {n: float(torch.linalg.matrix_norm(x.T @ x / len(x) - c_held)) for n, x in cal.items()}
        judge = "held"
    # "mixed": chosen on x_held, judged on cal; "owncal": chosen on cal, judged on x_held
    on = {name: cal[name] if judge in ("cal", "owncal") else x_held for name in cal}
    errs = errs or {name: _relative_output_error(on[name], w, w_hat) for name, w_hat in fits.items()}
    best = min(errs, key=lambda name: errs[name])
    x = x_held if judge in ("held", "owncal") else cal[best]
    rtn = fake_quantize(w, bits, granularity=PerGroup(32) if base == "g32" else PerChannel(0))
    return best, _relative_output_error(x, w, fits[best]) < _relative_output_error(x, w, rtn)


def _calib_case(
    seed: int,
    n_out: int,
    k: int,
    tokens: int,
    bits: int,
    like_first: bool,
    big: int = 0,
    corr: float = 0.9,
    loud: float | None = None,
    gain: float = 1.0,
    distinct: int | None = None,
) -> tuple:
    """A layer, two calibration sets of ``tokens`` each (one from the held-out source, one with half its features
    quietened: a different feature mix), held-out tokens, bits. ``like_first``: the held-out-like set is ``x_a``.

    ``loud``: the shifted set is rescaled to ``loud`` times the other's total energy (GPTQ's codes do not change with
    a global scale of its inputs), so that neither the louder nor the quieter set is always the right one; ``gain``
    scales the held-out-like set, so that its loudness alone does not tell it from the other either. ``distinct``:
    the held-out-like set repeats its first ``distinct`` tokens, so that it has the right mix but too few different
    tokens, and the other set can be the better one to calibrate on."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n_out, k, generator=g, dtype=torch.float64)
    if big:
        where = torch.randint(0, k, (n_out, big), generator=g)
        w.scatter_(1, where, 4 * torch.randn(n_out, big, generator=g, dtype=torch.float64).sign())
    mix = torch.eye(k, dtype=torch.float64) + corr * torch.randn(k, k, generator=g, dtype=torch.float64) / k**0.5
    quiet = torch.ones(k, dtype=torch.float64)
    quiet[torch.randperm(k, generator=g)[: k // 2]] = 0.1

    def draw(n: int, scale: torch.Tensor | None = None) -> torch.Tensor:
        base = torch.randn(n, k, generator=g, dtype=torch.float64)
        base = base if scale is None else base * scale
        return (base + corr * base.roll(1, dims=1)) @ mix

    like, shifted, held = gain * draw(tokens), draw(tokens, quiet), draw(2000)
    if distinct is not None:  # the held-out-like set is its first `distinct` tokens repeated: the right mix, few tokens
        like = like[:distinct].repeat(-(-tokens // distinct), 1)[:tokens]
    if loud is not None:
        shifted = shifted * (loud * like.square().sum() / shifted.square().sum()).sqrt()
    return (w, *((like, shifted) if like_first else (shifted, like)), held, bits)


TASKS.append(
    Task(
        "09.calib_text",
        "which calibration text, and does per-channel GPTQ then beat groups of 32?",
        _calib_text,
        [
            Case(_calib_case(0, 16, 64, 128, 4, True, loud=2.0), "[16, 64], int4, 128 tokens in each set"),
            Case(_calib_case(2, 16, 128, 256, 4, False, big=1, corr=0.5), "[16, 128], int4, 256 tokens in each set"),
            Case(_calib_case(4, 16, 64, 96, 3, False, loud=0.25, gain=2.0), "[16, 64], int3, 96 tokens in each set"),
            Case(
                _calib_case(1, 16, 64, 256, 4, False, loud=1.5), "[16, 64], int4, 256 tokens in each set", hidden=True
            ),
            Case(_calib_case(5, 16, 128, 512, 4, True, big=1, corr=0.3), "[16, 128], int4", hidden=True),
            Case(_calib_case(7, 16, 256, 512, 4, False, big=1, corr=0.5), "[16, 256], int4", hidden=True),
            Case(_calib_case(6, 24, 64, 200, 4, True), "[24, 64], int4, 200 tokens in each set", hidden=True),
            Case(_calib_case(0, 16, 64, 48, 4, True), "[16, 64], int4, 48 tokens in each set", hidden=True),
            Case(  # the held-out-like set repeats 16 tokens: the right mix, but the other set calibrates better
                _calib_case(10, 16, 64, 128, 3, True, distinct=16),
                "[16, 64], int3, 128 tokens in each set",
                hidden=True,
            ),
            Case(  # 32 repeated tokens: their input correlation is far from x_held's, yet they calibrate better
                _calib_case(55, 16, 64, 128, 4, False, distinct=32),
                "[16, 64], int4, 128 tokens in each set",
                hidden=True,
            ),
            Case(  # the set with the smaller held-out minus calibration gap is not the one with the smaller error
                _calib_case(66, 16, 64, 128, 4, True, big=1, corr=0.5, distinct=16),
                "[16, 64], int4, 128 tokens in each set",
                hidden=True,
            ),
        ],
        "judge each choice where the layer will serve, not where GPTQ was fitted",
        [
            Mistake(
                "judged each GPTQ on its own calibration set: the set GPTQ fits best there is not the one that "
                "serves the held-out text. Judge both on x_held",
                lambda w, a, b, h, bits: _calib_text(w, a, b, h, bits, judge="cal"),
            ),
            Mistake(
                "chose each set by its own calibration error: the set GPTQ fits best there is not the one that "
                "serves the held-out text. Choose by the error on x_held",
                lambda w, a, b, h, bits: _calib_text(w, a, b, h, bits, judge="owncal"),
            ),
            Mistake(
                "chose the set on x_held, but judged GPTQ against groups of 32 on the calibration set it was fitted "
                "to, where its fit flatters it",
                lambda w, a, b, h, bits: _calib_text(w, a, b, h, bits, judge="mixed"),
            ),
            Mistake(
                "compared GPTQ with round-to-nearest per-channel: the question is whether it beats groups of 32",
                lambda w, a, b, h, bits: _calib_text(w, a, b, h, bits, base="channel"),
            ),
            Mistake(
                "chose the set by a covariance or correlation proxy (the set whose input statistics are nearest "
                "x_held's): a proxy does not measure what GPTQ's fit does on x_held, and raw covariance is dominated "
                "by loudness, which does not change GPTQ's codes. Fit GPTQ on each set and judge both on x_held",
                lambda w, a, b, h, bits: _calib_text(w, a, b, h, bits, judge="cov"),
            ),
            Mistake(
                "chose the louder set (the larger total energy, x.square().sum()): GPTQ's codes do not change when "
                "all its inputs are scaled, so loudness does not tell the text. Fit GPTQ on each set and judge both "
                "on x_held",
                lambda w, a, b, h, bits: _calib_text(w, a, b, h, bits, judge="energy"),
            ),
            Mistake(
                "calibrated GPTQ on x_held, or on anything but the set you chose, to decide whether it beats groups "
                "of 32? x_held is for judging; a deployed GPTQ is calibrated on the set you chose",
                lambda w, a, b, h, bits: _calib_text(w, a, b, h, bits, judge="fitheld"),
            ),
            Mistake(
                "chose by GPTQ's margin over groups of 32 on each set's own tokens: its fit flatters it there",
                lambda w, a, b, h, bits: _calib_text(w, a, b, h, bits, judge="margin"),
            ),
        ],
        minutes=5,
        shows_expected=False,  # the expected pair would name the right set by trial
    )
)

PREDICT = {
    "salient": choice(
        "L3.intermediate at int3, groups of 128: keep 4 of its 384 input channels (1%) in fp16 and round the rest. "
        "Which 4 remove the most output error on held-out text?",
        (
            "The 4 whose inputs are loudest (largest mean |x| on the calibration text)",
            True,
            "A weight's rounding error reaches the output multiplied by its input, so the columns that meet loud "
            "inputs carry the most output error.",
        ),
        (
            "The 4 columns with the largest weights",
            False,
            "Tempting: large weights look important. But every weight in a group is rounded on the same ruler, so a "
            "large weight has no larger rounding error, and its error is not amplified unless its input is loud.",
        ),
        (
            "Any 4: 1% of the channels is too few to matter",
            False,
            "Tempting when errors seem spread evenly over the columns; but the inputs are far from even, and a few "
            "loud ones carry much of the error.",
        ),
    ),
    "few_tokens": choice(
        "GPTQ int4 per-channel on L3.intermediate (384 inputs): calibrated on its first 200 calibration tokens (4 "
        "paragraphs) it is only about equal to RTN on held-out text (0.99x). Now 200 tokens drawn at random from all "
        "48 paragraphs, 20 draws. In how many is GPTQ ahead of RTN on held-out text?",
        (
            "None or almost none: 200 tokens for 384 inputs are too few, whichever they are",
            False,
            "Tempting, since the Hessian's rank is at most 200 whichever tokens they are; but tokens spread over all "
            "the paragraphs excite more of the directions other text uses, so the same count constrains GPTQ "
            "better: here GPTQ is ahead in all 20 draws.",
        ),
        (
            "About half: as level as the first 200",
            False,
            "Tempting if only the count matters; but which tokens matter too: spread over all the paragraphs, "
            "the same 200 put GPTQ ahead in all 20 draws of this seed.",
        ),
        (
            "All or nearly all of the 20",
            True,
            "In this draw of 20, all 20 (GPTQ / RTN from about 0.77 to 0.93): spread over all the paragraphs, 200 "
            "tokens do what the first 200 did not, so which tokens matter, not only how many.",
        ),
    ),
    "pair_calib": choice(
        "Block 3, int4: fed as 48 paragraph inputs, the course's text left GPTQ per-channel far behind RTN g32 on "
        "the odd pairs (0.01170 against 0.00866). Now the same text cut into 101 single-sentence inputs (2,329 "
        "tokens). On the odd pairs, averaged over the six layers, GPTQ per-channel is...",
        (
            "Still far behind: the text is the same, and the text is what GPTQ fits",
            False,
            "Tempting, since not a word changed; but cut into single sentences the same text brings GPTQ to "
            "0.00844 against RTN g32's 0.00866, with an interval that includes 0: how the text is cut into inputs "
            "matters.",
        ),
        (
            "About level with RTN g32",
            True,
            "0.00844 against RTN g32's 0.00866, the interval includes 0 (by layer 0.59x to 1.84x). Cut to the even "
            "pairs' 1,526 tokens it is behind (0.00913), where the even pairs are ahead (0.00783).",
        ),
        (
            "Clearly ahead, like the even pairs' fit: single sentences are all it needed",
            False,
            "Tempting after section 4; but it only reaches level (0.00844 against 0.00866, the interval includes "
            "0), and at the even pairs' 1,526 tokens it is behind (0.00913) where the even pairs are ahead "
            "(0.00783).",
        ),
    ),
    "sentence_calib": choice(
        "Block 3, int4: GPTQ per-channel calibrated on the 60 even sentence pairs (1,526 tokens). On the 60 odd "
        "pairs, averaged over the six layers, does it beat RTN g32?",
        (
            "No: like the paragraphs' fit, it stays behind RTN g32",
            False,
            "Tempting after sections 2 and 3; but calibrated on single sentences it is ahead: 0.00783 against RTN "
            "g32's 0.00866 on the odd pairs, on five of the six layers, and the interval excludes 0.",
        ),
        (
            "Yes: calibrated on single sentences, it is ahead on other sentences",
            True,
            "0.00783 against RTN g32's 0.00866 (the paragraphs' fit: 0.01170), ahead on five of the six layers; "
            "one split, and with fewer calibration tokens than the paragraphs (1,526 against 2,223).",
        ),
        (
            "About level: the calibration text changes little",
            False,
            "Tempting, since RTN's error barely changes with the text; but GPTQ's does: on the same odd pairs "
            "0.00783 calibrated on sentences, 0.01170 on the paragraphs, and the interval against RTN g32 excludes 0.",
        ),
    ),
    "per_channel_vs_g32": choice(
        "Block 3 of MiniLM, int4, GPTQ calibrated on the 2,223 paragraph tokens. On the held-out sentences, "
        "averaged over the six layers, which has less error: GPTQ per-channel (4.031 bits per weight) or RTN g32 "
        "(4.5)?",
        (
            "GPTQ per-channel: its smarter codes make up for the coarser ruler",
            False,
            "Tempting, since on the calibration tokens it is ahead (0.00634 against 0.00902); but on the held-out "
            "sentences it is behind (0.01164 against 0.00869), on five of the six layers (1.14x to 2.43x RTN g32's "
            "error).",
        ),
        (
            "RTN g32",
            True,
            "RTN g32 is ahead on five layers; GPTQ per-channel only on L3.intermediate (0.82x). GPTQ's error grows "
            "about 1.8-fold from the calibration tokens to the held-out ones and RTN's does not: part of GPTQ's "
            "gain is a fit to the calibration tokens.",
        ),
        (
            "About level: the two errors are within a few percent",
            False,
            "Tempting, since GPTQ per-channel is ahead on the calibration tokens and groups win without GPTQ; but on "
            "held-out sentences its error is about 1.34x RTN g32's (0.01164 against 0.00869), and the paired "
            "interval excludes 0.",
        ),
    ),
}

RECALL: tuple[Question, ...] = (
    choice(
        "Block 3, int4: GPTQ per-channel, calibrated on paragraphs, beats RTN g32 there but not on held-out "
        "sentences. Why?",
        (
            "GPTQ fits the tokens it is calibrated on: its error there says little about other text",
            True,
            "Fitted on half the paragraphs, GPTQ's error almost doubled on the other half, while RTN's stayed "
            "about the same. Judge a calibrated method on tokens it never saw.",
        ),
        (
            "The held-out sentences are harder text: every method does worse there",
            False,
            "Tempting, since the two texts differ; but RTN g32's error is about the same on both (0.00902 and "
            "0.00869).",
        ),
        (
            "GPTQ picks its scales on the paragraphs, and they do not suit sentences",
            False,
            "Tempting, since GPTQ is calibrated; but it keeps RTN's scales, which depend on the weights only, and "
            "changes the codes.",
        ),
        source=LESSON,
    ),
    choice(
        "Section 4 split lesson 03's 240 sentences by paraphrase pair, each pair on one side. Why?",
        (
            "So that no test sentence's paraphrase is among the calibration tokens",
            True,
            "GPTQ fits its calibration tokens (section 3), so a paraphrase, nearly the same text, on the calibration "
            "side would flatter it on the test side. Split by pair, the test text is text it never saw.",
        ),
        (
            "So that both halves hold the same number of tokens",
            False,
            "They do not: 1,526 calibration tokens against 1,501 test tokens. Keeping pairs together serves "
            "another end: no test sentence's paraphrase is calibrated on.",
        ),
        (
            "So that GPTQ sees both wordings of a sentence, which makes its fit robust",
            False,
            "Tempting, and it does see both wordings of each calibration sentence; but that is not what the split is "
            "for: a test sentence's paraphrase on the calibration side would flatter GPTQ on the test side.",
        ),
        source=LESSON,
    ),
    Numeric(
        "Lesson 04 revisited: GPTQ int4 codes, symmetric, one fp16 scale per group of 128 weights. Bits per weight "
        "(leave out any format's extra metadata)?",
        4.125,
        "GPTQ stores the same layout as round-to-nearest: the code bits plus the scale's 16 bits shared by its group.",
        tol=0.001,
        mistakes=(
            (4.0, "that leaves out the scales: 16 bits for every 128 weights"),
            (4.5, "that is groups of 32"),
            (4.25, "that counts a 16-bit zero point too; a symmetric ruler has none"),
        ),
        source=LESSON,
    ),
)

# Asked in the exercise only (numbered after the quiz's questions)
EXERCISE_RECALL: tuple[Question, ...] = (
    choice(
        "What does GPTQ change compared with round-to-nearest at the same granularity?",
        (
            "Which integer each weight gets; with per-channel scales, nothing else",
            True,
            "Same ruler, smarter choice of tick; ql.gptq keeps RTN's scales.",
        ),
        (
            "The scales: it searches a better ruler per group",
            False,
            "Tempting, since a better ruler lowers the error; but GPTQ keeps RTN's scales, which depend on the "
            "weights only, and changes the codes. Searching the ruler is a clipping search (llm-awq's auto_clip).",
        ),
        (
            "It stores a correction for each weight, so a GPTQ checkpoint is larger than an RTN one",
            False,
            "Tempting, since GPTQ computes a correction for every weight; but the correction only moves weights that "
            "are not rounded yet, and what is stored is one code per weight and RTN's scales: the same bytes.",
        ),
        source=LESSON,
    ),
)

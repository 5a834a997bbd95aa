"""Lesson 09 · Smarter rounding (GPTQ and AWQ): the exercise tasks and the recall questions.

Sources: ``notebooks/09_smarter_rounding.py`` (the lesson) and
``exercises/solutions/09_smarter_rounding.py`` (the exercise, with solutions).
"""

from __future__ import annotations

import torch

from qlesson.course.checking import Case, Mistake, Task
from qlesson.course.recall import INTERVIEW, LESSON, Numeric, Question, choice
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


# ---- task 1: the Hessian ----------------------------------------------------------------------


def _hessian(x: torch.Tensor) -> torch.Tensor:
    return 2 * x.T @ x / x.shape[0]


# ---- task 2: one error-feedback step ----------------------------------------------------------


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


# ---- task 3: GPTQ per channel, column by column -----------------------------------------------


def _gptq_codes(
    w: torch.Tensor,
    x: torch.Tensor,
    bits: int,
    damp: float = 0.01,
    shrink: bool = True,
    feedback: bool = True,
    clamp: bool = True,
) -> torch.Tensor:
    w = w.clone()
    s = w.abs().amax(1) / qmax(bits)
    h = 2 * x.T @ x / x.shape[0]
    h = h + damp * torch.diagonal(h).mean() * torch.eye(h.shape[0], dtype=h.dtype)
    hinv = torch.linalg.inv(h)
    codes = torch.zeros_like(w)
    for j in range(w.shape[1]):
        q = torch.round(w[:, j] / s)
        q = torch.clamp(q, -qmax(bits), qmax(bits)) if clamp else q
        codes[:, j] = q
        if feedback:
            err = (w[:, j] - q * s) / hinv[j, j]
            w[:, j:] -= err[:, None] * hinv[j, j:][None, :]
        if shrink:
            hinv = hinv - torch.outer(hinv[:, j], hinv[j]) / hinv[j, j]
    return codes


def _gptq_case(n: int, k: int, tokens: int, bits: int) -> tuple:
    return (_w(n, k), _x(tokens, k, corr=0.95), bits)


def _damping_case() -> tuple:
    """[4, 6] with 7 tokens: H is invertible but ill-conditioned, and 1% damping changes 6 codes."""
    g = torch.Generator().manual_seed(8)
    w = torch.randn(4, 6, generator=g, dtype=torch.float64)
    base = torch.randn(7, 6, generator=g, dtype=torch.float64)
    return (w, base + 0.95 * base.roll(1, dims=1), 4)


# ---- task 4: AWQ's candidate scale ------------------------------------------------------------


def _awq_scale(x: torch.Tensor, alpha: float, stat: str = "mean", norm: str = "geo") -> torch.Tensor:
    a = x.abs().mean(0) if stat == "mean" else x.abs().amax(0)
    s = a.pow(alpha).clamp(min=1e-4)
    if norm == "geo":
        return s / torch.sqrt(s.max() * s.min())
    return s / s.max() if norm == "max" else s


def _awq_x(tokens: int, features: int, silent: int | None = None) -> torch.Tensor:
    x = torch.randn(tokens, features, generator=_G) * torch.logspace(-1, 1, features)
    if silent is not None:
        x[:, silent] = 0.0
    return x


TASKS: list[Task] = [
    Task(
        "09.hessian",
        "GPTQ's Hessian of the layer inputs",
        _hessian,
        [
            Case((_x(16, 4),), "16 tokens, 4 features"),
            Case((_x(40, 8),), "40 tokens, 8 features"),
            Case((_x(5, 6),), "5 tokens, 6 features (fewer tokens than features: rank deficient)"),
        ],
        "H is [features, features], built from the calibration inputs x [tokens, features] and averaged over tokens "
        "(GPTQ's convention has a factor 2)",
        [
            Mistake("forgot the factor 2 (the derivative of the square)", lambda x: x.T @ x / x.shape[0]),
            Mistake("did not divide by the number of tokens", lambda x: 2 * x.T @ x),
            Mistake("divided by the number of features instead of tokens", lambda x: 2 * x.T @ x / x.shape[1]),
            Mistake(
                "multiplied x @ x.T: [tokens, tokens], one entry per pair of tokens", lambda x: 2 * x @ x.T / len(x)
            ),
        ],
    ),
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
            Case(_gptq_case(4, 6, 40, 4), "int4, [4, 6], 40 tokens"),
            Case(_gptq_case(6, 8, 64, 3), "int3, [6, 8], 64 tokens"),
            Case(_gptq_case(3, 5, 4, 4), "int4, [3, 5], 4 tokens for 5 features (rank deficient)"),
            Case(_damping_case(), "int4, [4, 6], 7 tokens for 6 features: the damping changes codes"),
            Case(_gptq_case(5, 10, 100, 2), "int2, [5, 10], 100 tokens"),
        ],
        "scales from the original w; a damped Hessian and its inverse; then column by column: quantize, push the "
        "error onto the later columns, remove column j from the inverse",
        [
            Mistake(
                "rounded to nearest (no error feedback): that is RTN",
                lambda w, x, b: _gptq_codes(w, x, b, feedback=False),
            ),
            Mistake(
                "kept the full inverse Hessian at every step: remove each rounded column from it",
                lambda w, x, b: _gptq_codes(w, x, b, shrink=False),
            ),
            Mistake("used int4 whatever the bits (4 hard-coded)", lambda w, x, b: _gptq_codes(w, x, 4)),
            Mistake(
                "left out the damping: add 1% of H's mean diagonal to its diagonal before inverting",
                lambda w, x, b: _gptq_codes(w, x, b, damp=0.0),
            ),
            Mistake(
                "did not clamp the codes to [-qmax, qmax]: the pushed errors can carry a weight past the last tick",
                lambda w, x, b: _gptq_codes(w, x, b, clamp=False),
            ),
        ],
    ),
    Task(
        "09.awq_scale",
        "AWQ's candidate scale for one alpha",
        _awq_scale,
        [
            Case((_awq_x(20, 6), 0.5), "20 tokens, 6 features, alpha 0.5"),
            Case((_awq_x(12, 4), 0.25), "alpha 0.25"),
            Case((_awq_x(30, 8, silent=2), 0.75), "alpha 0.75, feature 2 always zero (clamp at 1e-4)"),
            Case((_awq_x(10, 5), 0.0), "alpha 0: all ones"),
        ],
        "per input feature: the mean |x| over tokens to the power alpha, kept away from 0, then normalised so the "
        "largest and smallest scales are balanced around 1",
        [
            Mistake(
                "used max|x| (SmoothQuant's statistic) instead of mean|x|", lambda x, a: _awq_scale(x, a, stat="max")
            ),
            Mistake("forgot to normalise by sqrt(s.max() * s.min())", lambda x, a: _awq_scale(x, a, norm="none")),
            Mistake(
                "normalised by s.max() instead of sqrt(s.max() * s.min())", lambda x, a: _awq_scale(x, a, norm="max")
            ),
        ],
    ),
]

RECALL: tuple[Question, ...] = (
    choice(
        "What does GPTQ change compared with round-to-nearest at the same granularity?",
        (
            "Which integer each weight gets; with per-channel scales, nothing else",
            True,
            "Same ruler, smarter choice of tick. With groups, the reference's default also recomputes each "
            "group's scale from the updated weights; ql.gptq keeps RTN's (static groups).",
        ),
        (
            "The scales: it searches a better ruler per group",
            False,
            "That is closer to a clipping search (llm-awq's auto_clip) than to GPTQ.",
        ),
        ("The group size: it picks groups adaptively", False, "The granularity is chosen before GPTQ runs."),
        source=LESSON,
    ),
    choice(
        "GPTQ calibrated on 100 tokens for a layer with 384 inputs does worse than RTN on new sentences. Why?",
        (
            "Fewer tokens than inputs: the Hessian is rank deficient and GPTQ fits the calibration set",
            True,
            "Errors pushed into directions the calibration never saw show up on other text.",
        ),
        ("GPTQ is always worse than RTN on new text", False, "With enough tokens it wins on held-out text too."),
        ("The damping was too large", False, "Damping limits overfitting; it does not cause it."),
        source=LESSON,
    ),
    Numeric(
        "A layer has in_features 1536, out_features 384. At least how many calibration tokens give a "
        "full-rank Hessian?",
        1536,
        "H = 2 x.T x / tokens is [1536, 1536] and has rank at most the number of tokens.",
        tol=0.5,
        mistakes=(
            (384, "that is out_features; the Hessian is over the inputs, [in_features, in_features]"),
            (128, "that is the lazy-update block size, which changes speed, not the rank"),
        ),
    ),
    choice(
        "Interview: AWQ multiplies weight column j by s_j before rounding. What happens to the activations?",
        (
            "They are divided by s, folded into the previous LayerNorm or Linear where one exists",
            True,
            "x @ w.T equals (x / s) @ (w * s).T; the division costs nothing once folded.",
        ),
        ("Nothing: the rounding error cancels the scaling", False, "Without dividing x the product is wrong."),
        (
            "They are multiplied by s, so loud features get louder",
            False,
            "Multiplying both would scale each input's contribution by s_j squared.",
        ),
        source=INTERVIEW,
    ),
    choice(
        "Interview: does GPTQ make per-group scales unnecessary?",
        (
            "No: it lowers the error at every granularity; groups still help, and g128 with GPTQ is the usual pick",
            True,
            "In lesson 09 per-channel GPTQ beat RTN g32 only on the calibration tokens it was fitted to; on "
            "held-out text and on the embeddings it stayed behind.",
        ),
        (
            "Yes: per-channel GPTQ is as good as any group size",
            False,
            "Common wrong answer: GPTQ with groups stays ahead of GPTQ per channel.",
        ),
        (
            "Yes, because GPTQ computes its own scale for every weight",
            False,
            "GPTQ stores one scale per group or channel like RTN; it changes the codes.",
        ),
        source=INTERVIEW,
    ),
    choice(
        "AWQ's grid includes alpha = 0. What does that candidate give?",
        ("s = 1 for every input: plain round-to-nearest", True, "So on calibration data AWQ never loses to RTN."),
        ("s = mean|x|: the full activation scale", False, "That is alpha = 1, which the grid stops short of."),
        ("s = 0: every weight is zeroed", False, "x ** 0 is 1, not 0."),
        source=LESSON,
    ),
)

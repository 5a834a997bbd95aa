# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] tags=["solutions-only"]
# > **SPOILERS.** This is the solution notebook.
# > The exercise is `exercises/05_zero_points_and_activations.ipynb`; try it first.

# %% [markdown]
# # Exercise 05 · Activations: zero points, per-token scales, smoothing (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/05_zero_points_and_activations.ipynb`.
# Asymmetric rulers, per-token scales, SmoothQuant and which feature it leaves loud, which tool an
# outlier needs, and choosing an activation's ruler.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, alphas, shapes) and include edge cases, so hard-coding a number
# that works for one case fails another. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 05`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%
import torch

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · A round trip through an asymmetric ruler
#
# Write `asymmetric_roundtrip(x, bits)`: quantize `x` to unsigned codes `0 .. 2**bits - 1` with a
# scale and an integer zero point, after widening the range to include 0, and return the
# real values the codes stand for. Exact zeros in `x` must come back as exactly 0.0;
# an all-zero `x` (scale 0) comes back as zeros.


# %% tags=["solution"]
def asymmetric_roundtrip(x, bits):
    ...  # STUB
    # BEGIN SOLUTION
    rmin = torch.clamp(x.min(), max=0.0)
    rmax = torch.clamp(x.max(), min=0.0)
    scale = (rmax - rmin) / (2**bits - 1)
    if scale == 0:
        return torch.zeros_like(x)
    zero_point = torch.round(-rmin / scale)
    q = torch.clamp(torch.round(x / scale) + zero_point, 0, 2**bits - 1)
    return (q - zero_point) * scale
    # END SOLUTION


# %% qlesson={"task": "05.asymmetric_roundtrip"} tags=["check"]
check("05.asymmetric_roundtrip", asymmetric_roundtrip)


# %% [markdown]
# ## Task 2 · Per-token activation scales
#
# Write `per_token_scales(x, bits)` for activations `[tokens, features]`: one symmetric scale
# per token.


# %% tags=["solution"]
def per_token_scales(x, bits):
    ...  # STUB
    # BEGIN SOLUTION
    return x.abs().amax(dim=1) / (2 ** (bits - 1) - 1)
    # END SOLUTION


# %% qlesson={"task": "05.per_token_scales"} tags=["check"]
check("05.per_token_scales", per_token_scales)


# %% [markdown]
# ## Task 3 · SmoothQuant's factors
#
# Write `smooth_factors(x, w, alpha)` for activations `x [T, K]` and a Linear weight `w [N, K]`:
# one SmoothQuant factor `s_j` per input feature `j`, so that `(x / s) @ (w * s).T` equals
# `x @ w.T` and `alpha` sets how much of feature `j`'s range moves into the weights.


# %% tags=["solution"]
def smooth_factors(x, w, alpha):
    ...  # STUB
    # BEGIN SOLUTION
    return x.abs().amax(dim=0) ** alpha / w.abs().amax(dim=0) ** (1 - alpha)
    # END SOLUTION


# %% qlesson={"task": "05.smooth_factors"} tags=["check"]
check("05.smooth_factors", smooth_factors)


# %% [markdown]
# ### Recall 05.4
#
# SmoothQuant, alpha 0.5: feature j has max|x_j| = 16, its weight column max|w_j| = 4. What is max|x_j| / s_j?
#
# - **a)** 16
# - **b)** 4
# - **c)** 2
# - **d)** 8
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "d"
# END SOLUTION

# %% qlesson={"task": "recall 05.4"} tags=["check"]
recall.answer("05", 4, recall_4)


# %% [markdown]
# ## Task 4 · Which feature sets the static scale after smoothing?
#
# SmoothQuant smooths activations `x [T, K]` feeding a Linear `w [N, K]` with the factors of
# Task 3 at this `alpha`; the smoothed activations then get one static per-tensor int8 scale.
# Write `loudest_after_smoothing(x, w, alpha)`: the index of the input feature that sets that
# scale. The first case: alpha 0.5; feature 2 reaches 20 and has a quiet weight column, feature 5
# reaches 6 and its weight column is 8 times louder. Guess before you run the check: which one
# sets the scale? Some cases are hidden.


# %% tags=["solution"]
def loudest_after_smoothing(x, w, alpha):
    ...  # STUB
    # BEGIN SOLUTION
    s = x.abs().amax(dim=0) ** alpha / w.abs().amax(dim=0) ** (1 - alpha)
    return int((x / s).abs().amax(dim=0).argmax())
    # END SOLUTION


# %% qlesson={"task": "05.loudest_after_smoothing"} tags=["check"]
check("05.loudest_after_smoothing", loudest_after_smoothing)


# %% [markdown]
# ### Recall 05.5
#
# Task 4, for any alpha below 1: what decides which feature sets the static scale after smoothing?
#
# - **a)** The product max|x_j| max|w_j|, so the same feature whatever alpha is
# - **b)** max|x_j| alone: smoothing divides every feature by about the same factor
# - **c)** The ratio max|x_j| / max|w_j|
# - **d)** max|x_j| at a small alpha, max|w_j| at a large one
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_5 = ...  # STUB
# BEGIN SOLUTION
recall_5 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 05.5"} tags=["check"]
recall.answer("05", 5, recall_5)


# %% [markdown]
# ## Task 5 · Per-token scales or smoothing?
#
# An activation `x [tokens, features]` has outliers: a few values far louder than the rest.
# Write `which_tool(x)`: return `"per-token"` when per-token scales would keep the loud values
# out of a typical token's ruler, and `"smooth"` when they would not, so the loud range must
# move into the weights. Count a value as loud when it is at least 4 times what the typical
# feature holds on a typical token. Every case is a two-sided (LayerNorm-like) activation with
# outliers of one kind; the rule is not meant for a one-sided GELU output. Some cases are hidden.


# %% tags=["solution"]
def which_tool(x):
    ...  # STUB
    # BEGIN SOLUTION
    typical = x.abs().median(dim=0).values  # each feature's |x| on a typical token
    return "smooth" if typical.max() >= 4 * typical.median() else "per-token"
    # END SOLUTION


# %% qlesson={"task": "05.which_tool"} tags=["check"]
check("05.which_tool", which_tool)

# %% [markdown]
# ## Task 6 · Choose an activation's ruler from its statistics
#
# A profiler gives you only each token's smallest and largest value, `token_min` and
# `token_max` (one number per token). Choose the int8 ruler for this activation: symmetric or
# asymmetric, per-tensor or per-token (lesson 01's rulers, int8).
#
# Start from the plain ruler, symmetric per-tensor. Each upgrade costs run time (a zero-point
# correction; a pass over every row), so take it only where it makes the step at least 1.5 times
# finer than the plain ruler's. Decide the two upgrades separately: an asymmetric per-tensor
# ruler, and symmetric per-token scales judged by a typical token.
#
# Write `choose_ruler(token_min, token_max)` returning a pair such as
# `("symmetric", "per-tensor")`. Some of the check's cases are hidden.


# %% tags=["solution"]
def choose_ruler(token_min, token_max):
    ...  # STUB
    # BEGIN SOLUTION
    lo = min(float(token_min.min()), 0.0)
    hi = max(float(token_max.max()), 0.0)
    token_absmax = torch.maximum(token_min.abs(), token_max.abs())
    symmetric_step = max(-lo, hi) / 127
    asymmetric_step = (hi - lo) / 255
    token_step = float(token_absmax.median()) / 127
    return (
        "asymmetric" if symmetric_step >= 1.5 * asymmetric_step else "symmetric",
        "per-token" if symmetric_step >= 1.5 * token_step else "per-tensor",
    )
    # END SOLUTION


# %% qlesson={"task": "05.choose_ruler"} tags=["check"]
check("05.choose_ruler", choose_ruler)

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 05.6
#
# Lesson 04: smoothing triples weight column j, now each row's largest. Int4, groups of 32 along K: what coarsens?
#
# - **a)** Only column j's own weights
# - **b)** In each row, the 32 weights of the group that holds column j
# - **c)** Every weight of the tensor
# - **d)** The 32 rows around row j
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_6 = ...  # STUB
# BEGIN SOLUTION
recall_6 = "b"
# END SOLUTION

# %% qlesson={"task": "recall 05.6"} tags=["check"]
recall.answer("05", 6, recall_6)

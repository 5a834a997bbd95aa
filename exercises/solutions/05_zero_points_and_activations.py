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
# # Exercise 05 · Zero points and activations (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/05_zero_points_and_activations.ipynb`.
# Zero points of shifted channels, per-token scales, SmoothQuant.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check. A pass
# prints one `✓` line per test case; a failure shows the first failing input, what came
# back, what was expected and a hint. The check cells already show the `✓` lines a correct
# answer prints: that stored output is what grading compares against, not a sign that
# you have passed. When you are done, grade everything from the repo root with
# `make grade` (or `python -m qlesson grade 05`); it never changes your notebooks.

# %%
import torch

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · The zero point of a negative-only channel
#
# Write `asymmetric_zero_point(x, bits)`: the unsigned zero point after widening the range to
# include 0 (an integer code in `0 .. 2**bits - 1`).


# %% tags=["solution"]
def asymmetric_zero_point(x, bits):
    ...  # STUB
    # BEGIN SOLUTION
    rmin = torch.clamp(x.min(), max=0.0)
    rmax = torch.clamp(x.max(), min=0.0)
    scale = (rmax - rmin) / (2**bits - 1)
    return torch.clamp(torch.round(-rmin / scale), 0, 2**bits - 1)
    # END SOLUTION


# %% qlesson={"task": "05.asymmetric_zero_point"} tags=["check"]
check("05.asymmetric_zero_point", asymmetric_zero_point)


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
# Write `smooth_factors(x, w, alpha)` for `x [T, K]` and `w [N, K]`:
# `s_j = max|x[:, j]| ** alpha / max|w[:, j]| ** (1 - alpha)`.


# %% tags=["solution"]
def smooth_factors(x, w, alpha):
    ...  # STUB
    # BEGIN SOLUTION
    return x.abs().amax(dim=0) ** alpha / w.abs().amax(dim=0) ** (1 - alpha)
    # END SOLUTION


# %% qlesson={"task": "05.smooth_factors"} tags=["check"]
check("05.smooth_factors", smooth_factors)

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 05.2
#
# A uint8 channel spans [-1.70, -0.94]. After widening to include 0, what is its zero point?
#
# Answer with the option letter or a number.

# %% tags=["solution"]
recall_2 = ...  # STUB
# BEGIN SOLUTION
recall_2 = 255
# END SOLUTION

# %% qlesson={"task": "recall 05.2"} tags=["check"]
recall.answer("05", 2, recall_2)

# %% [markdown]
# ### Recall 05.3
#
# Why are per-token activation scales usable in an int8 GEMM, but per-feature scales are not?
#
# - **a)** A per-token scale is constant along the reduction axis; a per-feature one changes inside the sum
# - **b)** Per-feature scales need more bits
# - **c)** Per-token scales are always larger
#
# Answer with the option letter or a number.

# %% tags=["solution"]
recall_3 = ...  # STUB
# BEGIN SOLUTION
recall_3 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 05.3"} tags=["check"]
recall.answer("05", 3, recall_3)

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
# > The exercise is `exercises/09_smarter_rounding.ipynb`; try it first.

# %% [markdown]
# # Exercise 09 · Smarter rounding (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/09_smarter_rounding.ipynb`.
# GPTQ from its parts (the Hessian, one error-feedback step, the whole column loop) and AWQ's
# candidate scale.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, shapes, columns) and include edge cases, so hard-coding a number
# that works for one case fails another. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 09`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.
#
# The GPTQ tasks pass float64 tensors: compute in float64, so that your codes and the course's
# agree to the last one.

# %%
import torch

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · The Hessian
#
# Write `hessian(x)` for calibration inputs `x [tokens, features]`: GPTQ's `H = 2 x.T x / tokens`,
# a `[features, features]` matrix.


# %% tags=["solution"]
def hessian(x):
    ...  # STUB
    # BEGIN SOLUTION
    return 2 * x.T @ x / x.shape[0]
    # END SOLUTION


# %% qlesson={"task": "09.hessian"} tags=["check"]
check("09.hessian", hessian)


# %% [markdown]
# ## Task 2 · One error-feedback step
#
# Column `j` of `w [N, K]` has just been rounded to `q_col` (the dequantized values, `[N]`).
# Write `push_error(w, j, q_col, hinv)` returning a **copy** of `w` in which column `j` and the
# later columns have absorbed the rounding error: with `err = (w[:, j] - q_col) / hinv[j, j]`,
# subtract `err[:, None] * hinv[j, j:]` from `w[:, j:]`. (Column `j` then equals `q_col`; the
# columns before `j` are already rounded and must not move.)


# %% tags=["solution"]
def push_error(w, j, q_col, hinv):
    ...  # STUB
    # BEGIN SOLUTION
    w = w.clone()
    err = (w[:, j] - q_col) / hinv[j, j]
    w[:, j:] -= torch.outer(err, hinv[j, j:])
    return w
    # END SOLUTION


# %% qlesson={"task": "09.push_error"} tags=["check"]
check("09.push_error", push_error)


# %% [markdown]
# ## Task 3 · GPTQ with per-channel scales, column by column
#
# Write `gptq_per_channel(w, x, bits)` returning the integer codes `[N, K]` (as floats is fine):
#
# 1. symmetric per-channel scales from the **original** `w`: `absmax of each row / (2**(bits-1) - 1)`;
# 2. `H = 2 x.T x / tokens`, plus 1% of its mean diagonal on the diagonal (damping), and
#    `hinv = torch.linalg.inv(H)`;
# 3. for each column `j` in order: round `w[:, j] / scale` and clamp it to
#    `[-(2**(bits-1) - 1), 2**(bits-1) - 1]` (the symmetric range: -7 to 7 at 4 bits, not -8) to get
#    the codes, push the error of the dequantized column onto the later columns (task 2), then
#    remove column `j` from the inverse Hessian: `hinv -= outer(hinv[:, j], hinv[j]) / hinv[j, j]`.
#
#    The clamp matters: error pushed onto a later column can carry it past the end of its row's
#    ruler (lesson 09's 2x4 example is too small to show it; the check's cases do).


# %% tags=["solution"]
def gptq_per_channel(w, x, bits):
    ...  # STUB
    # BEGIN SOLUTION
    w, qmax = w.clone(), 2 ** (bits - 1) - 1
    scale = w.abs().amax(dim=1) / qmax
    h = hessian(x)
    h = h + 0.01 * h.diagonal().mean() * torch.eye(h.shape[0], dtype=h.dtype)
    hinv = torch.linalg.inv(h)
    codes = torch.zeros_like(w)
    for j in range(w.shape[1]):
        codes[:, j] = torch.clamp(torch.round(w[:, j] / scale), -qmax, qmax)
        w = push_error(w, j, codes[:, j] * scale, hinv)
        hinv = hinv - torch.outer(hinv[:, j], hinv[j]) / hinv[j, j]
    return codes
    # END SOLUTION


# %% qlesson={"task": "09.gptq_per_channel"} tags=["check"]
check("09.gptq_per_channel", gptq_per_channel)


# %% [markdown]
# ## Task 4 · AWQ's candidate scale
#
# Write `awq_scale(x, alpha)` for activations `x [tokens, features]`: one scale per feature,
# `s = (mean over tokens of |x|) ** alpha`, clamped below at `1e-4` (a silent feature must not
# give 0), then divided by `sqrt(s.max() * s.min())`.


# %% tags=["solution"]
def awq_scale(x, alpha):
    ...  # STUB
    # BEGIN SOLUTION
    s = torch.clamp(x.abs().mean(dim=0) ** alpha, min=1e-4)
    return s / torch.sqrt(s.max() * s.min())
    # END SOLUTION


# %% qlesson={"task": "09.awq_scale"} tags=["check"]
check("09.awq_scale", awq_scale)

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 09.2
#
# GPTQ calibrated on 100 tokens for a layer with 384 inputs does worse than RTN on new sentences. Why?
#
# - **a)** The damping was too large
# - **b)** Fewer tokens than inputs: the Hessian is rank deficient and GPTQ fits the calibration set
# - **c)** GPTQ is always worse than RTN on new text
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_2 = ...  # STUB
# BEGIN SOLUTION
recall_2 = "b"
# END SOLUTION

# %% qlesson={"task": "recall 09.2"} tags=["check"]
recall.answer("09", 2, recall_2)

# %% [markdown]
# ### Recall 09.3
#
# A layer has in_features 1536, out_features 384. At least how many calibration tokens give a full-rank Hessian?
#
# Answer with a number.

# %% tags=["solution"]
recall_3 = ...  # STUB
# BEGIN SOLUTION
recall_3 = 1536
# END SOLUTION

# %% qlesson={"task": "recall 09.3"} tags=["check"]
recall.answer("09", 3, recall_3)

# %% [markdown]
# ### Recall 09.1
#
# What does GPTQ change compared with round-to-nearest at the same granularity?
#
# - **a)** Which integer each weight gets; with per-channel scales, nothing else
# - **b)** The group size: it picks groups adaptively
# - **c)** The scales: it searches a better ruler per group
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_1 = ...  # STUB
# BEGIN SOLUTION
recall_1 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 09.1"} tags=["check"]
recall.answer("09", 1, recall_1)

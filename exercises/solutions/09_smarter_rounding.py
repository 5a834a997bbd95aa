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
# Practice for lesson `notebooks/09_smarter_rounding.ipynb`, in two parts:
# * **Part A, build GPTQ** (tasks 1-2): one error-feedback step, then the whole column loop.
# * **Part B, use it** (tasks 3-5): how many calibration tokens GPTQ needs before it beats
#   plain rounding on text it never saw, the lesson's question on synthetic layers, and which
#   calibration text to choose.
#
# Then recall questions on the lesson's main line.
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
# The GPTQ tasks pass float64 tensors: float64 is safest, so that your codes and the course's
# agree to the last one.

# %%
import torch

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Part A · Build GPTQ (tasks 1-2)
#
# GPTQ's Hessian of the calibration inputs `x [tokens, features]` (lesson 09, section 1), given:


# %%
def hessian(x):
    return 2 * x.T @ x / x.shape[0]


# %% [markdown]
# ## Task 1 · One error-feedback step
#
# Column `j` of `w [N, K]` has just been rounded to `q_col` (the dequantized values, `[N]`).
# Write `push_error(w, j, q_col, hinv)` returning a **copy** of `w` in which the later columns
# have absorbed the rounding error as GPTQ moves them (the rule and the trace in lesson 09,
# section 1), every row at once. Column `j` itself ends at `q_col`; the columns before `j` are
# already rounded and must not move.


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
# ## Task 2 · GPTQ with per-channel scales, column by column
#
# Write `gptq_per_channel(w, x, scale, bits)` returning the integer codes `[N, K]` (as floats
# is fine) of GPTQ on the course's symmetric ruler of each row given by `scale [N]` (codes from
# `-qmax` to `qmax`, as in every lesson), with the paper's damping (lesson 09, section 2).
# Some cases give clipped scales, smaller than `max|w| / qmax` (a clipping search, such as
# llm-awq's, picks them): then some weights lie past the last tick (lesson 09, Going deeper,
# "How `ql.gptq` does it fast", says what GPTQ does with them).
# `ql.gptq` always uses RTN's scales, so it cannot do this task for you; `hessian` and your
# `push_error` can. After each column, `hinv` must be the inverse Hessian of the columns still
# free (lesson 09, section 1).


# %% tags=["solution"]
def gptq_per_channel(w, x, scale, bits):
    ...  # STUB
    # BEGIN SOLUTION
    w, qmax = w.clone(), 2 ** (bits - 1) - 1
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
# ## Part B · Use GPTQ (tasks 3-5)
#
# ## Task 3 · How many calibration tokens before GPTQ really wins?
#
# A layer `w [N, K]`, its calibration tokens `x_cal` and more tokens `x_held` from the same
# source. Write `fewest_tokens(w, x_cal, x_held, ns, bits)`: for each count
# `n` in `ns` (increasing), calibrate GPTQ per-channel (`ql.gptq`) on the first `n` tokens of
# `x_cal`, and return the smallest `n` with which GPTQ is better than round-to-nearest (the same
# bits, per-channel) for this layer, judged by the lesson's relative output error of the
# layer. Return 0 if GPTQ wins at no count.


# %% tags=["solution"]
def fewest_tokens(w, x_cal, x_held, ns, bits):
    ...  # STUB
    # BEGIN SOLUTION
    import qlesson as ql

    def output_error(w_hat):
        return float((x_held @ (w - w_hat).T).square().sum() / (x_held @ w.T).square().sum())

    rtn = ql.quantize(w, bits, granularity=ql.PerChannel(0)).dequantize()
    for n in ns:
        if output_error(ql.gptq(w, x_cal[:n], bits).dequantize()) < output_error(rtn):
            return n
    return 0
    # END SOLUTION


# %% qlesson={"task": "09.fewest_tokens"} tags=["check"]
check("09.fewest_tokens", fewest_tokens)

# %% [markdown]
# ## Task 4 · Per-channel GPTQ or groups of 32?
#
# A synthetic layer `w [N, K]` (`K` a multiple of 32), calibration tokens `x_cal`, more tokens
# `x_held` from the same source, and `bits`. Two ways to store the layer at `bits`, symmetric, fp16
# scales: GPTQ with one scale per row (`ql.gptq`, calibrated on `x_cal`), or round-to-nearest
# with groups of 32 (`ql.quantize(w, bits, granularity=ql.PerGroup(32))`). Write
# `pick(w, x_cal, x_held, bits)` that returns `("gptq", bits_per_weight)` or
# `("rtn_g32", bits_per_weight)`: the one that serves this layer better, and what it costs in
# bits per weight. Before you code it, guess: does the same one win on every layer?


# %% tags=["solution"]
def pick(w, x_cal, x_held, bits):
    ...  # STUB
    # BEGIN SOLUTION
    import qlesson as ql

    def output_error(w_hat):
        return float((x_held @ (w - w_hat).T).square().sum() / (x_held @ w.T).square().sum())

    gptq = output_error(ql.gptq(w, x_cal, bits).dequantize())
    g32 = output_error(ql.quantize(w, bits, granularity=ql.PerGroup(32)).dequantize())
    if gptq < g32:
        return ("gptq", bits + 16 / w.shape[1])
    return ("rtn_g32", bits + 16 / 32)
    # END SOLUTION


# %% qlesson={"task": "09.pick"} tags=["check"]
check("09.pick", pick)

# %% [markdown]
# ## Task 5 · Which calibration text?
#
# A synthetic layer `w [N, K]` (`K` a multiple of 32) will serve text like `x_held`, your
# validation sample. You have two calibration sets with the same number of tokens, `x_a`
# and `x_b`. Write
# `calib_text(w, x_a, x_b, x_held, bits)` returning `(name, beats)`: `name` is `"a"` or `"b"`,
# the set you calibrate per-channel GPTQ (`ql.gptq`) on, and `beats` is `True` if that GPTQ then
# serves this layer better than round-to-nearest with groups of 32 at the same bits.


# %% tags=["solution"]
def calib_text(w, x_a, x_b, x_held, bits):
    ...  # STUB
    # BEGIN SOLUTION
    import qlesson as ql

    def output_error(w_hat):
        return float((x_held @ (w - w_hat).T).square().sum() / (x_held @ w.T).square().sum())

    errors = {name: output_error(ql.gptq(w, x, bits).dequantize()) for name, x in (("a", x_a), ("b", x_b))}
    name = min(errors, key=errors.get)
    g32 = output_error(ql.quantize(w, bits, granularity=ql.PerGroup(32)).dequantize())
    return name, errors[name] < g32
    # END SOLUTION


# %% qlesson={"task": "09.calib_text"} tags=["check"]
check("09.calib_text", calib_text)

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 09.1
#
# Block 3, int4: GPTQ per-channel, calibrated on paragraphs, beats RTN g32 there but not on held-out sentences. Why?
#
# - **a)** GPTQ fits the tokens it is calibrated on: its error there says little about other text
# - **b)** GPTQ picks its scales on the paragraphs, and they do not suit sentences
# - **c)** The held-out sentences are harder text: every method does worse there
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_1 = ...  # STUB
# BEGIN SOLUTION
recall_1 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 09.1"} tags=["check"]
recall.answer("09", 1, recall_1)

# %% [markdown]
# ### Recall 09.2
#
# Section 4 split lesson 03's 240 sentences by paraphrase pair, each pair on one side. Why?
#
# - **a)** So that GPTQ sees both wordings of a sentence, which makes its fit robust
# - **b)** So that no test sentence's paraphrase is among the calibration tokens
# - **c)** So that both halves hold the same number of tokens
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
# ### Recall 09.4
#
# What does GPTQ change compared with round-to-nearest at the same granularity?
#
# - **a)** The scales: it searches a better ruler per group
# - **b)** It stores a correction for each weight, so a GPTQ checkpoint is larger than an RTN one
# - **c)** Which integer each weight gets; with per-channel scales, nothing else
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "c"
# END SOLUTION

# %% qlesson={"task": "recall 09.4"} tags=["check"]
recall.answer("09", 4, recall_4)

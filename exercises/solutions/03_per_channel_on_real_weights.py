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
# > The exercise is `exercises/03_per_channel_on_real_weights.ipynb`; try it first.

# %% [markdown]
# # Exercise 03 · Per-channel on real weights (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/03_per_channel_on_real_weights.ipynb`: find the loud channel
# of a real layer, pick the output axis of `[out, in]`, conv and `[in, out]` weights, count what
# one shared scale erases, and read a paired interval.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, group sizes, shapes) and include edge cases, so hard-coding a number
# that works for one case fails another. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 03`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%
import torch  # noqa: F401  (for your answers)

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · Find the outlier channel of a real MiniLM layer
#
# Write `outlier_channel(w)`: the index (an `int`) of the loudest output channel. The check
# runs it on a small matrix with a negative outlier and on MiniLM's `L0.output` weight.


# %% tags=["solution"]
def outlier_channel(w):
    ...  # STUB
    # BEGIN SOLUTION
    return int(w.abs().amax(dim=1).argmax())
    # END SOLUTION


# %% qlesson={"task": "03.outlier_channel"} tags=["check"]
check("03.outlier_channel", outlier_channel)


# %% [markdown]
# ## Task 2 · Per-output-channel scales of a conv weight
#
# Write `conv_scales(w, bits)` for a Conv2d weight `[out, in, kh, kw]`: one symmetric scale per
# output channel, returned as a tensor of shape `(out,)`.


# %% tags=["solution"]
def conv_scales(w, bits):
    ...  # STUB
    # BEGIN SOLUTION
    return w.abs().flatten(1).amax(dim=1) / (2 ** (bits - 1) - 1)
    # END SOLUTION


# %% qlesson={"task": "03.conv_scales"} tags=["check"]
check("03.conv_scales", conv_scales)

# %% [markdown]
# ## Task 3 · The output axis of an `[in, out]` weight
#
# GPT-2's `Conv1D` computes `y = x @ W + b`, with `W` stored `[in_features, out_features]`.
# Write `conv1d_scales(w, bits)`: one symmetric int-`bits` scale per output channel, as the lesson
# defines a scale. Some of the check's cases are hidden, and one of them is square, so the shape
# of your answer alone cannot tell you the axis.


# %% tags=["solution"]
def conv1d_scales(w, bits):
    ...  # STUB
    # BEGIN SOLUTION
    return w.abs().amax(dim=0) / (2 ** (bits - 1) - 1)
    # END SOLUTION


# %% qlesson={"task": "03.conv1d_scales"} tags=["check"]
check("03.conv1d_scales", conv1d_scales)


# %% [markdown]
# ## Task 4 · How many channels does one shared scale erase?
#
# The lesson's `L0.output` lost 378 of its 384 rows to one per-tensor int4 scale. Now the weight
# is stored `[in, out]`, as in GPT-2. Write `erased_channels(w, bits)`: the number of *output
# channels* whose codes are all 0 after symmetric per-tensor int-`bits` quantization (round as
# `torch.round` does). Some cases are hidden; one is a real MiniLM layer.


# %% tags=["solution"]
def erased_channels(w, bits):
    ...  # STUB
    # BEGIN SOLUTION
    codes = torch.round(w / (w.abs().max() / (2 ** (bits - 1) - 1)))
    return int((codes == 0).all(dim=0).sum())
    # END SOLUTION


# %% qlesson={"task": "03.erased_channels"} tags=["check"]
check("03.erased_channels", erased_channels)


# %% [markdown]
# ## Task 5 · Does the interval support "A is better"?
#
# A paired comparison reports the difference A - B of a score where higher is better (mean
# cosine, say) and its 95% interval `[lo, hi]`. Write `verdict(lo, hi)`: `"A"` when the data
# support "A is better", `"B"` when they support "B is better", and `"tie"` otherwise. Then use it
# on the lesson's table: is int4 per-group 32 better than int4 per-channel on those sentences?


# %% tags=["solution"]
def verdict(lo, hi):
    ...  # STUB
    # BEGIN SOLUTION
    if lo > 0:
        return "A"
    if hi < 0:
        return "B"
    return "tie"
    # END SOLUTION


# %% qlesson={"task": "03.verdict"} tags=["check"]
check("03.verdict", verdict)

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 03.2
#
# Why is the output axis the usual channel for weight scales?
#
# - **a)** The outliers of a weight are always along the input axis, so the output axis is the safe one
# - **b)** Per-input-channel scales would need more storage
# - **c)** Because PyTorch stores weights [out, in], so the output axis is axis 0
# - **d)** Its scale is constant along the sum of the matrix multiply, so it can be applied once after it
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_2 = ...  # STUB
# BEGIN SOLUTION
recall_2 = "d"
# END SOLUTION

# %% qlesson={"task": "recall 03.2"} tags=["check"]
recall.answer("03", 2, recall_2)

# %% [markdown]
# ### Recall 03.3
#
# GPT-2's Conv1D computes x @ W + b, W stored [in, out] = [768, 2304]. How many per-output-channel scales?
#
# Answer with a number.

# %% tags=["solution"]
recall_3 = ...  # STUB
# BEGIN SOLUTION
recall_3 = 2304
# END SOLUTION

# %% qlesson={"task": "recall 03.3"} tags=["check"]
recall.answer("03", 3, recall_3)

# %% [markdown]
# ### Recall 03.6
#
# Two settings on 240 sentences: A - B in mean cosine is +0.003, 95% paired interval [-0.001, +0.007]. Report?
#
# - **a)** A and B are equally good
# - **b)** A is better: the difference is positive
# - **c)** A tie at this sample size: neither is shown better
# - **d)** B is better, since the interval reaches below 0
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_6 = ...  # STUB
# BEGIN SOLUTION
recall_6 = "c"
# END SOLUTION

# %% qlesson={"task": "recall 03.6"} tags=["check"]
recall.answer("03", 6, recall_6)

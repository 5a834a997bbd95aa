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
# > The exercise is `exercises/04_groups_and_formats.ipynb`; try it first.

# %% [markdown]
# # Exercise 04 · Groups and formats (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/04_groups_and_formats.ipynb`.
# Per-group quantization, the bits of a llama.cpp block read from its C struct, one Q4_0 block
# read from its bytes, and a bit budget spent on a weight the lesson did not show.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, group sizes, shapes) and include edge cases, so hard-coding a number
# that works for one case fails another. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 04`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%
import torch

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · Per-group quantization along `in_features`
#
# Write `quantize_per_group(w, bits, group_size)` for `w [N, K]`: codes `[N, K]` and scales
# `[N, K // group_size]`, groups being contiguous runs along K. Use the lessons' restricted
# symmetric ruler (as many codes above 0 as below, as in lesson 01) and round with
# `torch.round`. A group of zeros has scale 0: give it codes 0.


# %% tags=["solution"]
def quantize_per_group(w, bits, group_size):
    ...  # STUB
    # BEGIN SOLUTION
    n, k = w.shape
    qmax = 2 ** (bits - 1) - 1
    groups = w.reshape(n, k // group_size, group_size)
    scale = groups.abs().amax(dim=-1) / qmax
    safe = torch.where(scale == 0, 1.0, scale)  # an all-zero group: codes 0
    q = torch.clamp(torch.round(groups / safe[..., None]), -qmax, qmax)
    return q.reshape(n, k), scale
    # END SOLUTION


# %% qlesson={"task": "04.quantize_per_group"} tags=["check"]
check("04.quantize_per_group", quantize_per_group)


# %% [markdown]
# ## Task 2 · Count the bits of a block from its C struct
#
# llama.cpp declares its Q5_0 block in `ggml-common.h` (`ggml_half` is fp16):
#
# ```c
# #define QK5_0 32
# typedef struct {
#     ggml_half d;           // delta
#     uint8_t qh[4];         // 5-th bit of quants
#     uint8_t qs[QK5_0 / 2]; // nibbles / quants
# } block_q5_0;
# ```
#
# What does one Q5_0 weight cost, in bits? Give a number, not a function.

# %% tags=["solution"]
q5_0_bits = ...  # STUB
# BEGIN SOLUTION
q5_0_bits = (2 + 4 + 32 // 2) * 8 / 32  # d, qh, qs: 22 bytes per block of QK5_0 = 32 weights
# END SOLUTION

# %% qlesson={"task": "04.q5_0_bits_per_weight"} tags=["check"]
check("04.q5_0_bits_per_weight", q5_0_bits)

# %% [markdown]
# ## Task 3 · Read one Q4_0 block from its bytes
#
# Write `dequantize_q4_0_block(block)`: `block` is one Q4_0 block, a `torch.uint8` tensor of 18
# bytes laid out as llama.cpp stores it:
#
# * bytes 0 and 1: the block's scale `d`, an fp16 (little-endian); a weight is `d` times its code;
# * bytes 2 to 17: the 32 codes, 4 bits each, two per byte. Byte `2 + j` carries element `j` in
#   its low 4 bits and element `j + 16` in its high 4 bits;
# * a code runs from -8 to 7 and is stored shifted by 8, as 0 to 15: a stored 10 is code 2.
#
# Return the block's 32 weights in order, as a float32 tensor (float64 is fine too; fp16 is
# not). `t.view(torch.float16)` reads the bytes of a `uint8` tensor `t` as fp16 values.


# %% tags=["solution"]
def dequantize_q4_0_block(block):
    ...  # STUB
    # BEGIN SOLUTION
    d = block[:2].view(torch.float16).float()  # bytes 0-1: the scale, fp16 little-endian
    qs = block[2:].to(torch.int32)  # 16 bytes, two 4-bit codes each
    q = torch.cat([qs & 15, qs >> 4]) - 8  # low nibbles: elements 0-15; high nibbles: 16-31
    return d * q.float()
    # END SOLUTION


# %% qlesson={"task": "04.dequantize_q4_0_block"} tags=["check"]
check("04.dequantize_q4_0_block", dequantize_q4_0_block)


# %% [markdown]
# ## Task 4 · Spend a budget of bits
#
# A runtime stores one fp16 scale per group; `group_size` equal to a row's length is
# per-channel. Write `best_setting(w, budget, settings)`: `settings` is a list of
# `(bits, group_size)` pairs, `budget` a number of bits per weight that counts every bit stored.
# Return the pair that fits the budget and, quantized with your `quantize_per_group` from
# Task 1 and dequantized, has the smallest mean squared error on `w`.
#
# The check's first two cases share a shape, `[16, 256]`, a budget, 4.2 bits per weight, and
# the settings `[(3, 16), (4, 256), (4, 128), (4, 32)]`. The first weight is plain Gaussian; the
# second has one outlier, 40 times the others, in every row. Before you write the search,
# predict the winner on each, as `((bits, group_size) on the plain one, (bits, group_size) on
# the spiked one)`; the check says whether you were right.

# %% tags=["solution"]
prediction = ...  # STUB
# BEGIN SOLUTION
prediction = ((4, 128), (3, 16))
# END SOLUTION

# %% qlesson={"task": "04.budget_prediction"} tags=["check"]
check("04.budget_prediction", prediction)

# %% [markdown]
# Now write the search and see it agree.


# %% tags=["solution"]
def best_setting(w, budget, settings):
    ...  # STUB

    # BEGIN SOLUTION
    def error(bits, g):
        q, s = quantize_per_group(w, bits, g)
        w_hat = (q.reshape(w.shape[0], -1, g) * s[..., None]).reshape(w.shape)
        return float((w_hat - w).pow(2).mean())

    fits = [(bits, g) for bits, g in settings if bits + 16 / g <= budget]
    return min(fits, key=lambda setting: error(*setting))
    # END SOLUTION


# %% qlesson={"task": "04.best_setting"} tags=["check"]
check("04.best_setting", best_setting)

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 01.6
#
# What does one more bit buy on a symmetric ruler with the same absmax?
#
# - **a)** One more tick
# - **b)** About twice as many ticks per side, so a little under half the scale and the worst rounding error
# - **c)** A wider range, so less clipping
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_01_6 = ...  # STUB
# BEGIN SOLUTION
recall_01_6 = "b"
# END SOLUTION

# %% qlesson={"task": "recall 01.6"} tags=["check"]
recall.answer("01", 6, recall_01_6)

# %% [markdown]
# ### Recall 03.2
#
# Why is the output axis the usual channel for weight scales when weights and activations are both integers?
#
# - **a)** Per-input-channel scales give a higher error
# - **b)** Per-input-channel scales would need more storage
# - **c)** Because PyTorch stores weights [out, in], so the output axis is axis 0
# - **d)** Its scale is constant along the sum of the matrix multiply, so it can be applied once after it
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_03_2 = ...  # STUB
# BEGIN SOLUTION
recall_03_2 = "d"
# END SOLUTION

# %% qlesson={"task": "recall 03.2"} tags=["check"]
recall.answer("03", 2, recall_03_2)

# %% [markdown]
# ### Recall 04.4
#
# GPTQ, int4, group size 128: a Linear weight [4096, 11008] ([out, in]) has scales [86, 4096]. Which weights share one?
#
# - **a)** 128 consecutive inputs of one output row
# - **b)** 128 consecutive output rows, one scale per input
# - **c)** 86 consecutive inputs of one row
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 04.4"} tags=["check"]
recall.answer("04", 4, recall_4)

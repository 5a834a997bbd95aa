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
# > The exercise is `exercises/07_calculator.ipynb`; try it first.

# %% [markdown]
# # Exercise 07 · Calculator (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/07_calculator.ipynb`.
# What a channel's own ruler buys with zero points, how many codes a symmetric ruler leaves
# out of a row's reach, and which of the two gains a new tensor more, on numbers the lesson did
# not show.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). Some cases are hidden:
# a failure there shows only the hint. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 07`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%
import torch

import qlesson as ql
from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · How much finer is each channel's own ruler, with zero points?
#
# Lesson 07 compared symmetric rulers. Here every ruler is asymmetric: a scale and a zero point
# (lessons 01 and 05). Write `finer_by(w)`: `w` is a weight `[channels, values]`. Return one
# number per channel (a 1-D tensor): how many times finer that channel's own asymmetric ruler
# is than one asymmetric ruler shared by the whole tensor, at the same bit width. Every channel
# holds at least one nonzero value.
#
# Predict first: channel 2 of the lesson's four channels gained nothing with symmetric rulers.
# Does it gain with asymmetric ones, and why? The cell after the check prints the numbers;
# the answer is folded below it.


# %% tags=["solution"]
def finer_by(w):
    ...  # STUB

    # BEGIN SOLUTION
    def span(lo, hi):  # an asymmetric ruler covers its range widened to include 0
        return hi.clamp(min=0) - lo.clamp(max=0)

    return span(w.min(), w.max()) / span(w.amin(dim=1), w.amax(dim=1))  # same codes: the scales' ratio
    # END SOLUTION


# %% qlesson={"task": "07.finer_by"} tags=["check"]
check("07.finer_by", finer_by)

# %%
from qlesson.teach import calculator as calc

lesson_channels = torch.stack(calc.parse_channels(calc.EXAMPLE))
print("the lesson's four channels, asymmetric:", [round(v, 1) for v in finer_by(lesson_channels).tolist()])

# %% [markdown]
# <details><summary>The prediction's answer (open it after you predicted)</summary>
#
# Why channel 2 gains now: its own asymmetric ruler spans its range widened to include 0, -1.70
# to 0, 1.70 wide. The shared one must also reach channel 1's 1.44: -1.70 to 1.44, 3.14 wide,
# about 1.8 times as wide, with the same codes.
#
# </details>

# %% [markdown]
# ## Task 2 · How many codes does each row leave out of reach?
#
# On lesson 07's GELU row, a zero point's gain came from the symmetric codes out of the row's
# reach: codes that no number from the row's smallest to its largest value rounds to. Write
# `out_of_reach(rows, bits)`: `rows` is a tensor `[rows, values]`, each row on its own
# symmetric `bits`-bit ruler (codes `-(2**(bits-1) - 1) .. 2**(bits-1) - 1`). Return, for each
# row, how many of its codes are out of reach (a 1-D tensor of ints).
#
# Predict first: at 4 bits, row 0 has three small values below 0 (down to -0.17), row 1 one
# value at -1.0; both top out at 3.0. How many codes does each leave out of reach? The cell
# after the check prints the answer.


# %% tags=["solution"]
def out_of_reach(rows, bits):
    ...  # STUB
    # BEGIN SOLUTION
    top = 2 ** (bits - 1) - 1
    out = []
    for row in rows:
        scale = row.abs().max() / top
        lowest, highest = int(torch.round(row.min() / scale)), int(torch.round(row.max() / scale))
        out.append((2 * top + 1) - (highest - lowest + 1))  # the codes beyond the row's two ends
    return torch.tensor(out)
    # END SOLUTION


# %% qlesson={"task": "07.out_of_reach"} tags=["check"]
check("07.out_of_reach", out_of_reach)

# %%
two_rows = torch.tensor([[-0.17, -0.1, -0.05, 0.4, 1.2, 3.0], [-1.0, 0.2, 0.9, 1.5, 2.2, 3.0]])
print("at 4 bits, codes out of reach per row:", out_of_reach(two_rows, 4).tolist())

# %% [markdown]
# <details><summary>The prediction's answer (open it after you predicted)</summary>
#
# Row 0: a tick is 3.0 / 7, about 0.43, so its values below 0 all round to code 0 and codes -7
# to -1 are out of reach. Row 1's -1.0 reaches code -2: only codes -7 to -3 are.
#
# </details>

# %% [markdown]
# ## Task 3 · Per-channel scales or a zero point?
#
# Two new tensors of SiLU outputs (SiLU dips to about -0.28 below 0), four rows of 64 values
# each: `similar`, whose rows are about equally loud, and `loud_to_quiet`, whose rows are each
# about 3 times quieter than the last. At 4 bits, which gives the lower MAE on each: per-channel
# symmetric rulers, or one shared ruler with a zero point? Predict from the lesson, without
# quantizing: `prediction = (winner on similar, winner on loud_to_quiet)`, each `"per-channel"`
# or `"zero point"`.

# %%
g = torch.Generator().manual_seed(11)
similar = torch.nn.functional.silu(torch.randn(4, 64, generator=g))
loud_to_quiet = torch.nn.functional.silu(torch.randn(4, 64, generator=g)) * torch.tensor([1, 0.3, 0.1, 0.03])[:, None]
for name, w in (("similar", similar), ("loud_to_quiet", loud_to_quiet)):
    print(f"{name}: each row's largest |value| {[round(v, 3) for v in w.abs().amax(dim=1).tolist()]}")
    print(f"{' ' * len(name)}  each row's lowest value   {[round(v, 3) for v in w.amin(dim=1).tolist()]}")

# %% tags=["solution"]
prediction = ...  # STUB
# BEGIN SOLUTION
prediction = ("zero point", "per-channel")
# END SOLUTION

# %% qlesson={"task": "07.lower_error_prediction"} tags=["check"]
check("07.lower_error_prediction", prediction)

# %% [markdown]
# Now measure it: write `lower_error(w, bits)` for a weight `w` `[channels, values]`. Return
# `"per-channel"` if per-channel symmetric rulers give a lower MAE at `bits` bits than one
# shared ruler with a zero point (asymmetric), else `"zero point"`. The cell after the check
# runs it on both tensors.


# %% tags=["solution"]
def lower_error(w, bits):
    ...  # STUB
    # BEGIN SOLUTION
    per_channel = ql.fake_quantize(w, bits, granularity=ql.PerChannel(0), symmetric=True)
    zero_point = ql.fake_quantize(w, bits, granularity=ql.PerTensor(), symmetric=False)
    return "per-channel" if (per_channel - w).abs().mean() < (zero_point - w).abs().mean() else "zero point"
    # END SOLUTION


# %% qlesson={"task": "07.lower_error"} tags=["check"]
check("07.lower_error", lower_error)

# %%
for name, w in (("similar", similar), ("loud_to_quiet", loud_to_quiet)):
    one = (ql.fake_quantize(w, 4, granularity=ql.PerTensor()) - w).abs().mean(dim=1)
    own = (ql.fake_quantize(w, 4, granularity=ql.PerChannel(0)) - w).abs().mean(dim=1)
    shared = (ql.fake_quantize(w, 4, granularity=ql.PerTensor(), symmetric=False) - w).abs().mean(dim=1)
    print(f"{name}: codes out of reach {out_of_reach(w, 4).tolist()}; {lower_error(w, 4)} wins")
    print(f"  each row's MAE, shared symmetric ruler:   {[round(v, 3) for v in one.tolist()]}")
    print(f"  each row's MAE, own symmetric ruler:      {[round(v, 3) for v in own.tolist()]}")
    print(f"  each row's MAE, shared ruler, zero point: {[round(v, 3) for v in shared.tolist()]}")

# %% [markdown]
# <details><summary>Why (open it after your prediction is checked)</summary>
#
# On `similar`, every row is about as loud as the loudest, so its own ruler is at most 1.55 times
# finer (2.85 / 1.84) and gains nothing on row 0, while the zero point more than halves every
# row's error: a symmetric ruler leaves several codes below 0 out of reach. On `loud_to_quiet`,
# under the shared ruler row 1, only 3 times quieter, carries about as much error as row 0; its
# own ruler takes most of that off, rows 2 and 3 gain too, and in all they gain more than row 0
# loses without a zero point: per-channel wins.
#
# </details>

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 07.4
#
# 6 channels, asymmetric rulers: how many metadata bytes does per-channel store in this course's calculator?
#
# - **a)** 30
# - **b)** 48
# - **c)** 8
# - **d)** 24
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "b"
# END SOLUTION

# %% qlesson={"task": "recall 07.4"} tags=["check"]
recall.answer("07", 4, recall_4)

# %% [markdown]
# ### Recall 07.5
#
# Symmetric: a tensor's largest |value| is 2.4; a channel's own ruler is 6 times finer. Its largest |value|?
#
# Answer with a number.

# %% tags=["solution"]
recall_5 = ...  # STUB
# BEGIN SOLUTION
recall_5 = 0.4
# END SOLUTION

# %% qlesson={"task": "recall 07.5"} tags=["check"]
recall.answer("07", 5, recall_5)

# %% [markdown]
# ### Recall 07.6
#
# Lesson 04: Q4_0 stores one fp16 scale per block of 32 4-bit codes. Bits per weight, the scale included?
#
# - **a)** 20
# - **b)** 4
# - **c)** 4.5
# - **d)** 5
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_6 = ...  # STUB
# BEGIN SOLUTION
recall_6 = "c"
# END SOLUTION

# %% qlesson={"task": "recall 07.6"} tags=["check"]
recall.answer("07", 6, recall_6)

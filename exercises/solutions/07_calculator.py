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
# What a channel's own ruler buys with zero points, which codes of a symmetric ruler a row
# cannot reach, and what the rulers cost, on numbers the lesson did not show.
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
# Does it gain with asymmetric ones, and why? The cell after the check prints the answer.


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
# Why channel 2 gains now: its own asymmetric ruler spans its range widened to include 0, -1.70
# to 0, 1.70 wide. The shared one must also reach channel 1's 1.44: -1.70 to 1.44, 3.14 wide,
# about 1.8 times as wide, with the same codes.

# %% [markdown]
# ## Task 2 · Codes a symmetric ruler cannot use
#
# A symmetric `bits`-bit ruler for one row has the codes `-(2**(bits-1) - 1) .. 2**(bits-1) - 1`,
# its scale set from the row. Write `unreachable_codes(row, bits)`: how many of those codes lie
# outside the row's span, so that no number from the row's smallest to its largest value could
# round to them? Lesson 07 counted them on a GELU row; here the row can be any activation, of
# either sign.
#
# Predict first: for a ReLU row (every value >= 0) at 8 bits, how many? The cell after the
# check prints the answer.


# %% tags=["solution"]
def unreachable_codes(row, bits):
    ...  # STUB
    # BEGIN SOLUTION
    top = 2 ** (bits - 1) - 1
    scale = row.abs().max() / top
    lowest, highest = int(torch.round(row.min() / scale)), int(torch.round(row.max() / scale))
    return (2 * top + 1) - (highest - lowest + 1)
    # END SOLUTION


# %% qlesson={"task": "07.unreachable_codes"} tags=["check"]
check("07.unreachable_codes", unreachable_codes)

# %%
print("a ReLU row at 8 bits:", unreachable_codes(torch.tensor([0.0, 0.4, 1.7, 3.0]), 8))

# %% [markdown]
# ## Task 3 · What the rulers cost on a real layer
#
# Write `metadata_share(rows, cols, bits, symmetric)`: a layer `[rows, cols]` quantized with one
# ruler per row, stored the way lesson 07's calculator stores it, its codes packed at `bits` bits
# each. Return the fraction of the layer's bytes (codes and rulers together) that the rulers
# take, as a float.


# %% tags=["solution"]
def metadata_share(rows, cols, bits, symmetric):
    ...  # STUB
    # BEGIN SOLUTION
    ruler_bytes = rows * (4 if symmetric else 4 + 4)  # an fp32 scale, and an int32 zero point if asymmetric
    code_bytes = rows * cols * bits / 8
    return ruler_bytes / (ruler_bytes + code_bytes)
    # END SOLUTION


# %% qlesson={"task": "07.metadata_share"} tags=["check"]
check("07.metadata_share", metadata_share)

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 07.6
#
# A tensor has 6 channels. Asymmetric rulers: how many metadata bytes does per-channel store (fp32, int32)?
#
# Answer with a number.

# %% tags=["solution"]
recall_6 = ...  # STUB
# BEGIN SOLUTION
recall_6 = 48
# END SOLUTION

# %% qlesson={"task": "recall 07.6"} tags=["check"]
recall.answer("07", 6, recall_6)

# %% [markdown]
# ### Recall 07.2
#
# A ReLU row (all values >= 0, max 3.0) goes to signed int8. What does asymmetric buy over symmetric?
#
# - **a)** An exact 0.0, which symmetric cannot store
# - **b)** A tick about half as wide: symmetric's negative codes are out of the row's reach
# - **c)** Nothing: there are no negative values to clip
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_2 = ...  # STUB
# BEGIN SOLUTION
recall_2 = "b"
# END SOLUTION

# %% qlesson={"task": "recall 07.2"} tags=["check"]
recall.answer("07", 2, recall_2)

# %% [markdown]
# ### Recall 07.7
#
# Symmetric: a tensor's largest |value| is 2.4; a channel's own ruler is 6 times finer. Its largest |value|?
#
# Answer with a number.

# %% tags=["solution"]
recall_7 = ...  # STUB
# BEGIN SOLUTION
recall_7 = 0.4
# END SOLUTION

# %% qlesson={"task": "recall 07.7"} tags=["check"]
recall.answer("07", 7, recall_7)

# %% [markdown]
# ### Recall 07.4
#
# Lesson 01: why does an asymmetric ruler's range always include 0?
#
# - **a)** Because symmetric quantization requires it
# - **b)** So that negative values are not clipped
# - **c)** So the zero point is a code inside the range and 0.0 is stored exactly
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "c"
# END SOLUTION

# %% qlesson={"task": "recall 07.4"} tags=["check"]
recall.answer("07", 4, recall_4)

# %% [markdown]
# ### Recall 07.8
#
# Lesson 04: Q4_0 stores one fp16 scale per block of 32 4-bit codes. Bits per weight, the scale included?
#
# Answer with a number.

# %% tags=["solution"]
recall_8 = ...  # STUB
# BEGIN SOLUTION
recall_8 = 4.5
# END SOLUTION

# %% qlesson={"task": "recall 07.8"} tags=["check"]
recall.answer("07", 8, recall_8)

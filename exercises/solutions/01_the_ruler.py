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
# > The exercise is `exercises/01_the_ruler.ipynb`; try it first.

# %% [markdown]
# # Exercise 01 · The ruler (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/01_the_ruler.ipynb`.
# A ruler calibrated on one batch meets new data: where does it start to clip, and when does
# clipping cost more than rounding?
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what was
# expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, calibration batches, ties and values beyond the ruler) and include
# edge cases, so hard-coding a number that works for one case fails another. When you are
# done, save the notebook and grade it from the repo root with `make grade` (or
# `python -m qlesson grade 01`): grading runs your functions in a fresh process against the
# course's own cases and ignores what the check cells printed, so a print or a warning in your
# code is fine. Leave the check cells as they are: an edited or deleted check cell is
# reported, never counted as a pass.

# %%
import torch

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Given: the asymmetric unsigned ruler of Section 5
#
# `asymmetric_qparams(x, bits)` returns `(scale, zero_point)` for unsigned codes
# `0 .. 2**bits - 1`, as the lesson computes them. Run this cell; Task 1 uses it.


# %%
def asymmetric_qparams(x, bits):
    rmin = torch.clamp(x.min(), max=0.0)  # the range widened to include 0
    rmax = torch.clamp(x.max(), min=0.0)
    scale = (rmax - rmin) / (2**bits - 1)
    zero_point = torch.clamp(torch.round(-rmin / scale), 0, 2**bits - 1)
    return scale, zero_point


# %% [markdown]
# ## Task 1 · Where does a calibrated ruler start to clip?
#
# The asymmetric unsigned ruler of `asymmetric_qparams` is fitted to `calibration`, then kept
# fixed while new values arrive. Write `clip_start(calibration, bits)` returning
# `(below, above)`: where clipping starts on each side of 0 (the clamp changes a new value's
# code). Some checks are hidden: their inputs are not shown.


# %% tags=["solution"]
def clip_start(calibration, bits):
    ...  # STUB
    # BEGIN SOLUTION
    scale, zero_point = asymmetric_qparams(calibration, bits)
    first_tick = (0 - zero_point) * scale  # code 0, read back
    last_tick = (2**bits - 1 - zero_point) * scale  # the last code, read back
    # round() still sends anything within half a tick onto an end tick
    return first_tick - 0.5 * scale, last_tick + 0.5 * scale
    # END SOLUTION


# %% qlesson={"task": "01.clip_start"} tags=["check"]
check("01.clip_start", clip_start)

# %% [markdown]
# ## Task 2 · Rounding or clipping: which costs more?
#
# The lesson's restricted symmetric signed ruler, fitted to `calibration` and kept fixed,
# quantizes a new batch `x`. Write `error_split(calibration, x, bits)` returning
# `(rounding, clipping)`: the summed absolute reconstruction error of the values the ruler does
# not clip, and of the values it clips.


# %% tags=["solution"]
def error_split(calibration, x, bits):
    ...  # STUB
    # BEGIN SOLUTION
    qmax = 2 ** (bits - 1) - 1
    scale = calibration.abs().max() / qmax
    rounded = torch.round(x / scale)
    q = torch.clamp(rounded, -qmax, qmax)
    error = (q * scale - x).abs()
    clipped = rounded != q
    return error[~clipped].sum(), error[clipped].sum()
    # END SOLUTION


# %% qlesson={"task": "01.rounding_or_clipping"} tags=["check"]
check("01.rounding_or_clipping", error_split)

# %% [markdown]
# ## Task 3 · When does clipping take over?
#
# A ruler is calibrated on 1,000 normal values; the new batch below holds 1,000 fresh normal
# values plus five outliers between 5 and 8 in size. Once Task 2 passes, this cell prints Task 2's two
# parts at int2, int3 and int4.

# %%
gen = torch.Generator().manual_seed(7)
calibration = torch.randn(1000, generator=gen)
new = torch.cat([torch.randn(1000, generator=gen), torch.tensor([6.0, -7.5, 7.8, 5.2, -6.1])])
for bits in range(2, 5):
    split = error_split(calibration, new, bits)
    if split is not None:
        print(f"int{bits}: rounding {float(split[0]):6.1f}, clipping {float(split[1]):5.1f}")

# %% [markdown]
# From these three rows alone, predict the smallest bit width at which the clipping part is
# larger than the rounding part: `takes_over`, a whole number.

# %% tags=["solution"]
takes_over = ...  # STUB
# BEGIN SOLUTION
takes_over = 7
# END SOLUTION

# %% qlesson={"task": "01.clipping_takes_over"} tags=["check"]
check("01.clipping_takes_over", takes_over)

# %% [markdown]
# Now look past int4:

# %%
for bits in range(5, 11):
    split = error_split(calibration, new, bits)
    if split is not None:
        print(f"int{bits}: rounding {float(split[0]):6.1f}, clipping {float(split[1]):5.1f}")

# %% [markdown]
# <details><summary>Why (open it after your prediction is checked)</summary>
#
# The rounding part follows the tick. From int3 to int4 the ticks per side go from 3 to 7, so
# it falls to about 3/7 of itself, not 1/2; from then on 7, 15, 31, 63 ticks take it from 124.7
# to 14.2 at int7 (halving from int4 would give 15.6 there, and predict int8). Bits barely move
# the clipping part (13.2 at int2, 15.0 from int6 on): a clipped value's error is its distance
# past the last tick, which the range fixes. So at few bits rounding dominates, and past some
# width the few clipped values outweigh a thousand rounded ones.
#
# </details>

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 01.4
#
# A fixed int4 ruler (scale 0.1, ticks -7..7) meets 0.74 and 2.0. Which of them does it clip?
#
# - **a)** Both: each lies beyond the last tick, 0.7
# - **b)** Neither: the ruler stretches to fit them
# - **c)** Only 2.0: 0.74 still rounds onto tick 7
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "c"
# END SOLUTION

# %% qlesson={"task": "recall 01.4"} tags=["check"]
recall.answer("01", 4, recall_4)

# %% [markdown]
# ### Recall 01.7
#
# A symmetric int4 ruler becomes an int8 one with the same absmax. By what factor does its tick shrink?
#
# - **a)** 2
# - **b)** About 18.1
# - **c)** About 17
# - **d)** Exactly 16
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_7 = ...  # STUB
# BEGIN SOLUTION
recall_7 = "b"
# END SOLUTION

# %% qlesson={"task": "recall 01.7"} tags=["check"]
recall.answer("01", 7, recall_7)

# %% [markdown]
# ### Recall 01.8
#
# Lesson 00 revisited: torch.nn.Linear(384, 1536) gets one symmetric int8 ruler per output channel. How many scales?
#
# Answer with a number.

# %% tags=["solution"]
recall_8 = ...  # STUB
# BEGIN SOLUTION
recall_8 = 1536
# END SOLUTION

# %% qlesson={"task": "recall 01.8"} tags=["check"]
recall.answer("01", 8, recall_8)

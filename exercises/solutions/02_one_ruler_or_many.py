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
# > The exercise is `exercises/02_one_ruler_or_many.ipynb`; try it first.

# %% [markdown]
# # Exercise 02 · One ruler or many (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/02_one_ruler_or_many.ipynb`.
# Per-channel scales, then, on weights the lesson did not show, which rows lose with their own
# ruler and which rows one shared scale erases.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, shapes, values) and include edge cases, so hard-coding a number
# that works for one case fails another. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 02`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%
import torch

import qlesson as ql
from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · Warm-up: one scale per output channel
#
# Write `per_channel_scale(w, bits)` for a weight `[out_features, in_features]`: a tensor of
# shape `[out_features]`. An all-zero row has scale 0.


# %% tags=["solution"]
def per_channel_scale(w, bits):
    ...  # STUB
    # BEGIN SOLUTION
    return w.abs().amax(dim=1) / (2 ** (bits - 1) - 1)
    # END SOLUTION


# %% qlesson={"task": "02.per_channel_scale"} tags=["check"]
check("02.per_channel_scale", per_channel_scale)


# %% [markdown]
# ## Task 2 · Predict: which rows lose with their own ruler?
#
# Row 0 of `rows` below sets one shared symmetric int4 scale for all six rows. Which rows get a
# *higher* mean absolute error with their own int4 scale (per-channel) than with the shared one?
# Answer without running a quantizer: `worse = [row indices]`, `[]` for none. Then check your
# answer with `ql.fake_quantize` in a cell of your own.

# %%
rows = torch.tensor(
    [
        [7.0, -4.0, 2.0, 1.0],
        [6.0, 2.0, -4.0, 4.0],
        [6.0, 2.5, -1.5, 4.0],
        [0.4, -0.3, 0.2, 0.1],
        [1.0, -1.0, 0.0, 1.0],
        [5.0, 4.0, 1.0, -3.0],
    ]
)
print(f"shared int4 scale: {float(rows.abs().max()) / 7:g}")

# %% tags=["solution"]
worse = ...  # STUB
# BEGIN SOLUTION
worse = [1, 5]  # on the shared ticks (whole numbers), off their own; row 4 sits on both, rows 2 and 3 gain
# END SOLUTION

# %% qlesson={"task": "02.worse_prediction"} tags=["check"]
check("02.worse_prediction", worse)

# %% tags=["solutions-only"]
shared = (ql.fake_quantize(rows, 4) - rows).abs().mean(dim=1)
own = (ql.fake_quantize(rows, 4, granularity=ql.PerChannel(0)) - rows).abs().mean(dim=1)
print(f"rows that lose with their own scale: {(own > shared).nonzero().flatten().tolist()}")

# %% [markdown]
# ## Task 3 · Predict before you run
#
# `layer` below has 8 rows of 64 weights; from row 1 on, its magnitudes halve from one row to
# the next (each row's largest magnitude is printed). Which rows does one shared
# symmetric scale erase at int3, at int4 and at int8? Answer without running a quantizer:
# `erased = (rows at int3, rows at int4, rows at int8)`, each a list of row indices, `[]` for
# none. The check names any list that is off.

# %%
base = torch.randn(8, 64, generator=torch.Generator().manual_seed(5))
absmax = torch.where(torch.arange(8) == 0, 1.0, 1.1 * 0.5 ** torch.arange(8.0))
layer = base / base.abs().amax(dim=1, keepdim=True) * absmax[:, None]
print(f"each row's largest magnitude: {[round(v, 5) for v in layer.abs().amax(dim=1).tolist()]}")

# %% tags=["solution"]
erased = ...  # STUB
# BEGIN SOLUTION
erased = ([3, 4, 5, 6, 7], [4, 5, 6, 7], [])
# END SOLUTION

# %% qlesson={"task": "02.erased_prediction"} tags=["check"]
check("02.erased_prediction", erased)

# %% [markdown]
# ## Task 4 · Which rows does one shared scale erase?
#
# A layer's weight `w` is `[out_features, in_features]`, and a few of its rows are much louder
# than the rest. Write `rescued_rows(w, bits)`: a tensor with one entry per row, True (or 1)
# where one shared symmetric `bits`-bit scale stores the whole row as zero codes but the row's
# own scale would not. Mind exact ties and a row of zeros. Some checks are hidden: their inputs
# are not shown.


# %% tags=["solution"]
def rescued_rows(w, bits):
    ...  # STUB
    # BEGIN SOLUTION
    qmax = 2 ** (bits - 1) - 1
    shared = w.abs().max() / qmax
    erased = (torch.round(w / shared) == 0).all(dim=1)  # every code of the row is 0
    return erased & (w != 0).any(dim=1)  # its own scale keeps any row that holds something
    # END SOLUTION


# %% qlesson={"task": "02.rescued_rows"} tags=["check"]
check("02.rescued_rows", rescued_rows)

# %% [markdown]
# Now call `rescued_rows(layer, bits)` at int3, int4 and int8 in a cell of your own and see it agree
# with your Task 3 answer.

# %% tags=["solutions-only"]
for bits in (3, 4, 8):
    print(f"int{bits}: rows erased by the shared scale: {rescued_rows(layer, bits).nonzero().flatten().tolist()}")

# %% [markdown] tags=["solutions-only"]
# A row is erased when its largest magnitude is at or below half a shared tick, that is at or
# below `absmax / (2 * qmax)`: 1/6 of the loudest row's absmax at int3, 1/14 at int4, 1/254 at int8.
# Compare each row's absmax with that threshold: at int8 even the quietest row, 1.1/128, stays
# above it.

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
# ### Recall 01.5
#
# When is an asymmetric ruler worth its zero point (the same bits as a symmetric one)?
#
# - **a)** When the data sits on one side of 0 or is lopsided
# - **b)** Always: it is never coarser, so always take it
# - **c)** When a few outliers sit on both sides of 0
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_01_5 = ...  # STUB
# BEGIN SOLUTION
recall_01_5 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 01.5"} tags=["check"]
recall.answer("01", 5, recall_01_5)

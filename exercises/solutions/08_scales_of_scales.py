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
# > The exercise is `exercises/08_scales_of_scales.ipynb`; try it first.

# %% [markdown]
# # Exercise 08 · Scales of scales (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/08_scales_of_scales.ipynb`.
# Block scales stored as small integers under a super-scale, how many bits a quiet block's
# scale needs, and what a power-of-two scale does to a block's largest weight on FP4's grid and
# on int4's.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, group sizes, shapes) and include edge cases, so hard-coding a number
# that works for one case fails another. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 08`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%
import math

import numpy as np

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · Sub-scales under a super-scale
#
# A warm-up for Task 2. Write `sub_scales(ideal, bits)`: `ideal` is a numpy array of the ideal
# scales of the blocks in one super-block (all positive). Store them with `bits`-bit unsigned
# sub-scales under one super-scale, as section 2 of the lesson stores Q4_K's, and return the
# scales as stored (a numpy array of floats). Some cases are hidden: you see only that one failed, and
# why if the mistake is a known one.


# %% tags=["solution"]
def sub_scales(ideal, bits):
    ...  # STUB
    # BEGIN SOLUTION
    top = 2**bits - 1
    d = float(np.float16(ideal.max() / top))
    return np.clip(np.round(ideal / d), 1, top) * d
    # END SOLUTION


# %% qlesson={"task": "08.sub_scales"} tags=["check"]
check("08.sub_scales", sub_scales)


# %% [markdown]
# ## Task 2 · How many bits does a quiet block's scale need?
#
# The lesson's bound holds for a block about as loud as its super-block's loudest. Take another
# block of the same super-block, about `r` times quieter (its ideal scale anywhere near `1 / r` of
# the loudest block's). Write `quiet_block_bits(code_bits, r, max_ticks)`: blocks use symmetric
# signed codes of `code_bits` bits (int4: -7 to 7) and store their scales as in Task 1. Return the
# fewest sub-scale bits for which the worst rounding of such a scale moves its largest code by at
# most `max_ticks` ticks, counted to first order as section 2 counts a move (an exact count is
# accepted too). Work it out from what the scale's rounding does to that code; `r = 1` is the
# lesson's own case. Some cases are hidden.


# %% tags=["solution"]
def quiet_block_bits(code_bits, r, max_ticks):
    ...  # STUB
    # BEGIN SOLUTION
    qmax = 2 ** (code_bits - 1) - 1
    b = 1
    # the quiet block's scale is (2**b - 1) / r steps of the super-scale; rounding is off by half a step
    while qmax * r / (2 * (2**b - 1)) > max_ticks:
        b += 1
    return b
    # END SOLUTION


# %% qlesson={"task": "08.quiet_block_bits"} tags=["check"]
check("08.quiet_block_bits", quiet_block_bits)

# %% [markdown]
# <details><summary>Then why do 4 bits suffice in the lesson?</summary>
#
# Quiet blocks do move far: in the lesson's *Going deeper* table (the quieter blocks of a
# super-block) the worst block under a 4-bit sub-scale moves 6.42 ticks, against a bound of
# 0.233. But the median block moves 0.146 tick, and the whole layer loses 0.082 dB: the few
# blocks that move far cost it little.
#
# </details>


# %% [markdown]
# ## Task 3 · Larger, smaller or clipped?
#
# Write `floor_rule_top(amax, grid)`: a block's largest magnitude is `amax` (positive), its
# scale is the power of two MXFP4's floor rule picks for it (section 4 of the lesson), and its
# codes lie on `grid`: `"FP4"` (E2M1) or `"int4"` (-7 to 7, under the same rule, as section 4
# applies it). Return the value the block stores for that weight, the nearest code (ties to even;
# on FP4, 5 units of the scale go to 4, E2M1's even code, not 6) times the scale: it may come back
# larger than `amax`, smaller, or clipped. Before you write it, predict: on which grid does a block
# whose `amax` is 1.9 (or 1.9 times any power of two) lose more of that weight? Some cases are
# hidden.


# %% tags=["solution"]
def floor_rule_top(amax, grid):
    ...  # STUB
    # BEGIN SOLUTION
    scale = 2.0 ** (math.floor(math.log2(amax)) - 2)
    v = amax / scale  # between 4 and 8
    if grid == "FP4":
        ticks = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
        return float(ticks[np.argmin(np.abs(ticks - v))]) * scale  # past 6, the nearest is 6: clipped
    return min(round(v), 7) * scale
    # END SOLUTION


# %% qlesson={"task": "08.floor_top"} tags=["check"]
check("08.floor_top", floor_rule_top)

# %% [markdown]
# <details><summary>The prediction: amax 1.9</summary>
#
# The floor rule puts 1.9 at 4 x 1.9 = 7.6 ticks. int4 rounds it to 8 and clips to 7, storing
# 1.75 (8% low); FP4 stops at 6, so it stores 6 x 0.25 = 1.5 (21% low). FP4 loses more.
#
# </details>


# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 08.4
#
# int8 codes (-127..127), 8-bit sub-scales (1 to 255): is a near-loudest block's top code within a tenth of a tick?
#
# - **a)** Yes: the scale is off by at most 1/510, far under a tenth
# - **b)** Yes: 255 steps are four times Q4_K's 63, which kept int4's move near 0.06 tick
# - **c)** No: it can move up to 127/510 of a tick, about a quarter
# - **d)** No: it can move a whole tick, so the top code clips
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "c"
# END SOLUTION

# %% qlesson={"task": "recall 08.4"} tags=["check"]
recall.answer("08", 4, recall_4)

# %% [markdown]
# ### Recall 08.5
#
# Lesson 04 revisited: int4 codes, 6-bit sub-scales; a super-block's block 0 has a weight 20 times any other. Who loses?
#
# - **a)** None: a 6-bit sub-scale has room for a factor of 20
# - **b)** Block 0 only: each block has its own scale, so the outlier stays inside its block
# - **c)** The whole row: the super-scale is shared along the row, like a per-channel scale
# - **d)** All 8: block 0's codes get a coarse ruler, and the other 7 scales span 3 super-scale steps or fewer
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_5 = ...  # STUB
# BEGIN SOLUTION
recall_5 = "d"
# END SOLUTION

# %% qlesson={"task": "recall 08.5"} tags=["check"]
recall.answer("08", 5, recall_5)

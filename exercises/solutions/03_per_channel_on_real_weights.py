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
# Practice for lesson `notebooks/03_per_channel_on_real_weights.ipynb`: find the output axis of a
# 3-d einsum weight, count what one shared scale erases in an `[in, out]` weight, and find the
# bits at which it erases no row of a real layer.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, shapes, layouts) and include edge cases, so hard-coding a number
# that works for one case fails another. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 03`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%
import torch

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · Per-output-channel scales of an einsum weight
#
# Some attention code keeps its output projection as a 3-d weight `w` of shape
# `[heads, head_dim, d_model]` and applies it to the heads' outputs `z` (`[batch, heads, head_dim]`)
# with `y = torch.einsum("bhd,hdm->bm", z, w)`. Write `einsum_scales(w, bits)`: one symmetric
# int-`bits` scale per output channel of `y`, as a 1-d tensor. The visible cases are cubes, so the
# shape of your answer cannot tell you the axis. Some cases are hidden.


# %% tags=["solution"]
def einsum_scales(w, bits):
    ...  # STUB
    # BEGIN SOLUTION
    return w.abs().amax(dim=(0, 1)) / (2 ** (bits - 1) - 1)
    # END SOLUTION


# %% qlesson={"task": "03.einsum_scales"} tags=["check"]
check("03.einsum_scales", einsum_scales)

# %% [markdown]
# ## Task 2 · How many channels does one shared scale erase?
#
# The lesson's `L0.output` lost 378 of 384 rows to one int4 scale. Now the weight is stored
# `[in, out]`, as in GPT-2. Write `erased_channels(w, bits)`: the number of *output
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
# ## Task 3 · How many bits before no row is erased?
#
# Back to the `[out, in]` layout of `nn.Linear`. Write `min_bits(w)`: the fewest bits, from 2 to
# 16, at which symmetric per-tensor quantization (one shared scale, `torch.round`) leaves no
# output channel with all codes 0 (no case has an all-zero row; some are hidden). First guess the
# bits for the lesson's `L0.output` from the two numbers the next cell prints: set `guess_bits`.

# %%
import qlesson as ql
from qlesson.teach.models import minilm_linear_weights

w_l0 = minilm_linear_weights()["L0.output"]
loudest, quietest = float(w_l0.abs().max()), float(w_l0.abs().amax(1).min())
print(f"L0.output: loudest weight {loudest:.3f}, quietest row's absmax {quietest:.3f}")

# %% tags=["solution"]
guess_bits = ...  # STUB
# BEGIN SOLUTION
guess_bits = 6  # the quietest row must exceed half a tick: largest code > 7.915 / (2 * 0.133) = 29.8, so 31: 6 bits
# END SOLUTION

# %% qlesson={"task": "03.guess_bits"} tags=["check"]
check("03.guess_bits", guess_bits)

# %% [markdown]
# Now write `min_bits(w)`.


# %% tags=["solution"]
def min_bits(w):
    ...  # STUB
    # BEGIN SOLUTION
    for bits in range(2, 17):
        codes = torch.round(w / (w.abs().max() / (2 ** (bits - 1) - 1)))
        if not (codes == 0).all(dim=1).any():
            return bits
    # END SOLUTION


# %% qlesson={"task": "03.min_bits"} tags=["check"]
check("03.min_bits", min_bits)

# %% [markdown]
# Your guess beside the measured width:

# %%
need = min_bits(w_l0)
print(f"your guess {guess_bits}; L0.output needs {need} bits before one shared scale erases no row")
for bits, g, label in (
    (need, ql.PerTensor(), "per-tensor"),
    (8, ql.PerTensor(), "per-tensor"),
    (4, ql.PerChannel(0), "per-channel"),
):
    q = ql.quantize(w_l0, bits, granularity=g)
    zeros, db = float((q.q == 0).float().mean()), ql.errors(w_l0, q.dequantize()).sqnr_db
    print(f"  int{bits} {label:<11}: {zeros:.1%} of codes 0, SQNR {db:.1f} dB")

# %% [markdown]
# At the width where no row is erased, why is the layer's SQNR still near 0 dB? (Think about what
# a row keeps when only its largest weight passes half a shared tick.)
#
# <details><summary>The answer (open it after you thought)</summary>
#
# A row that is no longer erased keeps only the few weights that pass half a shared tick: 99.2%
# of the codes are still 0 (printed above). Every other weight comes back as 0, so the error is
# still nearly the weights themselves.
#
# </details>

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 03.4
#
# ConvTranspose2d(16, 32, kernel_size=4) has a weight [16, 32, 4, 4]. How many per-output-channel scales does it have?
#
# Answer with a number.

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = 32
# END SOLUTION

# %% qlesson={"task": "recall 03.4"} tags=["check"]
recall.answer("03", 4, recall_4)

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
# ### Recall 02.3
#
# A row's per-channel scale is never larger than the shared one. What does that guarantee?
#
# - **a)** Its worst-case rounding error, half its tick, is never larger
# - **b)** Its mean absolute error is never larger
# - **c)** Its error on every value is never larger
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_02_3 = ...  # STUB
# BEGIN SOLUTION
recall_02_3 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 02.3"} tags=["check"]
recall.answer("02", 3, recall_02_3)

# %% [markdown]
# ### Recall 03.5
#
# GPT-2's Conv1D weight [768, 3072] in int4, one fp16 scale per output channel: bits per weight, scales included?
#
# Answer with a number.

# %% tags=["solution"]
recall_5 = ...  # STUB
# BEGIN SOLUTION
recall_5 = 4 + 16 / 768  # 3072 output channels (axis 1), each a column of 768 weights, one fp16 scale
# END SOLUTION

# %% qlesson={"task": "recall 03.5"} tags=["check"]
recall.answer("03", 5, recall_5)

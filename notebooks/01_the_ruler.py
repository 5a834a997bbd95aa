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

# %% [markdown]
# # 01 · The ruler: scale, zero point, round, clamp
#
# **What you will learn**
# * quantization as measuring with a ruler: the **scale** is the distance between ticks,
#   the **zero point** is the tick that stands for 0.0;
# * the four steps: divide, round, shift, clamp, and the way back (dequantize);
# * what a bit width buys: `2^b` ticks, and the restricted symmetric range;
# * the two kinds of error: **rounding** (at most half a tick) inside the range, and
#   **clipping** (unbounded) outside it;
# * symmetric vs asymmetric, signed vs unsigned rulers.
#
# **What you need**: notebook 00. About 10 minutes.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Measuring with a ruler
#
# A ruler with 7 ticks can only say "tick -3, -2, ..., 3". To write down a real number you
# find the nearest tick and keep its **integer label** `q`. To read it back you multiply the
# label by the tick spacing, the **scale**:
#
# ```
# q     = clamp(round(x / scale) + zero_point, qmin, qmax)
# x_hat = (q - zero_point) * scale
# ```
#
# For a symmetric signed ruler the zero point is 0 and the scale is chosen so that the
# largest magnitude lands exactly on the last tick: `scale = absmax / (2^(b-1) - 1)`.
# Here are six values on a 3-bit ruler (ticks -3..3), step by step:

# %%
from qlesson.teach import plots, ruler

values = [-0.62, -0.1, 0.0, 0.23, 0.5, 0.91]
ruler.print_steps(values, bits=3)

# %% [markdown]
# Read the table left to right: `x / scale` is the position on the ruler in ticks, `round`
# snaps it to the nearest tick (half to even, as `torch.round` does), the zero point shifts
# it (0 here), and `q` is what is stored. The largest value, 0.91, sits exactly on tick 3,
# so its error is zero; the others are off by less than half a tick.

# %%
_ = plots.ruler(values, bits=3)

# %% [markdown]
# ## 2. What a bit buys
#
# `b` bits give `2^b` integer codes. The symmetric signed ruler gives up one of them
# (-2^(b-1)) so that +x and -x round to mirror images: int4 uses [-7, 7], int8 [-127, 127].
# Each extra bit roughly halves the scale, and with it the worst rounding error:

# %%
print_table(ruler.bits_table(absmax=0.91), {"scale": ".5f", "max rounding error": ".5f"})

# %% [markdown]
# ## 3. Rounding error is at most half a tick, inside the range
#
# Inside `[qmin, qmax]`, rounding moves a value by at most half a tick, `scale / 2`. Check it
# on a thousand random values at several bit widths:

# %%
import torch

x = torch.randn(1000, generator=torch.Generator().manual_seed(0))
rows = []
for bits in (2, 3, 4, 8):
    qt = ql.quantize(x, bits)
    worst = ql.errors(x, qt.dequantize()).max_abs
    rows.append(
        {
            "bits": bits,
            "scale / 2": float(qt.scale) / 2,
            "worst error": worst,
            "within half a tick": worst <= float(qt.scale) / 2 * (1 + 1e-6),
        }
    )
print_table(rows, {"scale / 2": ".5f", "worst error": ".5f"})

# %% [markdown]
# ## 4. Clipping error has no such bound
#
# A ruler can be fixed in advance, for example calibrated on earlier data. A new value that
# falls beyond its last tick is **clamped** to `qmax`, and its error is as large as its
# distance from the end of the ruler. Here the ruler fitted to our six values meets 1.6:

# %%
fixed_scale = float(ql.quantize(values, 3).scale)
ruler.print_steps(values + [1.6], bits=3, scale=fixed_scale)

# %%
_ = plots.ruler(values + [1.6], bits=3, scale=fixed_scale)

# %% [markdown]
# This is the basic tension of every quantizer: a wider ruler avoids clipping but makes
# every tick coarser (more rounding error for everyone); a narrower ruler is finer but
# clips the outliers. The rest of the course is about giving different parts of a tensor
# their own rulers so that one outlier does not coarsen everyone's ticks.
#
# ## 5. Symmetric or asymmetric, signed or unsigned
#
# * **Symmetric**: the ruler is centred on 0 (zero point 0, or `2^(b-1)` for unsigned codes).
#   Cheap: no zero point to store or subtract.
# * **Asymmetric**: the ruler spans `[min(x.min(), 0), max(x.max(), 0)]`, and an integer zero
#   point marks where 0.0 falls, so 0.0 is exactly representable (padding, ReLU zeros).
# * **Signed / unsigned** only moves the integer labels (`-8..7` vs `0..15`); with the same
#   scale the reconstruction is the same.
#
# On positive-only data (think ReLU outputs) the symmetric ruler wastes its negative half:

# %%
relu_like = [0.0, 0.05, 0.3, 0.7, 1.2, 2.0]
print_table(ruler.compare_modes(relu_like, bits=4), {"scale": ".4f", "mae": ".4f"})

# %% [markdown]
# The symmetric rulers use only codes on one side of the zero point, so their ticks are
# twice as coarse and the error is larger. Lesson 05 returns to asymmetric ranges for
# activations, where this matters most.
#
# ### Three conventions for signed codes
#
# The restricted range `[-7, 7]` is this course's choice, not the only one. PyTorch's
# `per_channel_symmetric` observer uses all 16 codes `[-8, 7]` with `scale = absmax / 7.5` (at
# 8 bits: `[-128, 127]` and `absmax / 127.5`). llama.cpp's Q4_0 takes the value of largest
# magnitude *with its sign*, `d = value / -8`, so that value lands exactly on code -8 and the
# other side stops at +7. The calculator this course draws on divides by 8 (by 128 at 8 bits)
# and clamps to `[-8, 7]`. One row of 32 values whose largest magnitude, 1.3, is positive,
# then the same row with -1.3:

# %%
from qlesson.teach import conventions

row = torch.randn(32, generator=torch.Generator().manual_seed(3)) * 0.5
fmt = {"scale": ".4f", "MAE": ".4f", "max error": ".4f", "error at the largest value": ".4f"}
for extreme in (1.3, -1.3):
    row[7] = extreme
    print(f"largest value {extreme:+.1f}")
    print_table(conventions.convention_rows(row), fmt)

# %% [markdown]
# The restricted ruler keeps the largest value exact on either side and pays with the
# coarsest scale (the highest MAE). PyTorch's observer puts the largest value half a tick
# from the last code, on either side. Q4_0 spends all 16 codes on the side of its largest
# value and gets the finest scale, the lowest MAE here; a large value of the opposite sign
# would clip at +7. Dividing by 8 and clamping to `[-8, 7]` clips a positive maximum by a
# whole tick: the calculator source's formula loses its own largest value.
#
# ## 6. Try it: a value and a bit width
#
# Move the value past the last tick to see clipping, or lower the bits to see the ticks
# spread. (The static figures above show the same picture for a page without widgets.)

# %% tags=["nbval-ignore-output"]
from qlesson.teach import widgets

widgets.ruler_explorer(tuple(values))

# %% [markdown]
# ## Summary
#
# * `q = clamp(round(x / scale) + zero_point, qmin, qmax)`, `x_hat = (q - zero_point) * scale`.
# * `b` bits give `2^b` codes; symmetric signed uses `2^b - 1` of them.
# * Inside the range the error is at most half a tick; outside it, clipping error grows
#   without bound. Choosing the range trades one for the other.
#
# **Exercise**: `exercises/01_the_ruler.ipynb`.
#
# ## Pause and recall
#
# 1. Your int8 symmetric ruler has scale 0.01. What is the largest value it can store, and
#    the worst rounding error inside the range?
# 2. Why does this course's symmetric signed int4 ruler use [-7, 7] rather than [-8, 7]?
# 3. A value lands outside the ruler. Which step decides what is stored, and is its error
#    bounded by half a tick?
# 4. When does an asymmetric ruler beat a symmetric one with the same bits?

# %% [markdown]
# Answer the questions above in your head first. Then check yourself on the lesson's recall
# questions, with feedback on every option (in a page without widgets, the list below the
# quiz folds each answer under **Answer**):

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.quiz("01")

# %%
recall.show("01")

# %% [markdown]
# <details><summary>Answers to the questions above</summary>
#
# 1. `127 * 0.01 = 1.27`; half a tick, 0.005.
# 2. So that +x and -x round to mirror images and the scale is `absmax / 7` on both sides;
#    -8 would have no positive partner. It is a convention (TensorRT's too), not a law: PyTorch's
#    observers and llama.cpp's Q4_0 use all 16 codes (the three conventions above).
# 3. The clamp; its error is its distance beyond the last tick, not bounded by half a tick.
# 4. When the data is shifted away from 0 (all positive, all negative, or lopsided): the
#    symmetric ruler wastes the half that the data never visits.
# </details>

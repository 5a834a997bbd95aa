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
# **The question**: How does a quantizer turn a real number into a small integer, and where
# does its error come from?
#
# **The answer**: A quantizer divides by a scale (the spacing of the ticks), rounds to the
# nearest tick, shifts by a zero point and clamps to the ruler's codes. Up to half a tick past the last tick
# the error is at most half a tick; farther out the clamp takes over and the error grows with the
# distance.
#
# **What you will do**: follow six values through a 3-bit ruler, watch it clip a new value, and
# meet the asymmetric ruler.
#
# **What you need**: lesson 00.
#
# **Time**: about 15 minutes, plus about 23 for the exercise; *Going deeper*: about 6 more.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.course import recall
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Measuring with a ruler
#
# To store a real number, keep the **integer label** `q` of its nearest tick. To read it back,
# subtract the zero point and multiply by the tick spacing, the **scale**:
#
# ```
# q     = clamp(round(x / scale) + zero_point, qmin, qmax)
# x_hat = (q - zero_point) * scale
# ```
#
# On the symmetric ruler this course uses, the zero point is 0. The largest magnitude sits on
# the last tick: `scale = absmax / (2^(b-1) - 1)`. `b` bits give `2^b` codes. This restricted
# ruler leaves out `-2^(b-1)`, so +x and -x get mirror-image codes: int4 uses [-7, 7], int8
# [-127, 127]. Six values on a 3-bit ruler:

# %%
from qlesson.teach import plots, ruler, widgets

values = [-0.62, -0.1, 0.0, 0.23, 0.5, 0.91]
fixed_scale = float(ql.quantize(values, 3).scale)
ruler.print_codes(values, bits=3, scale=fixed_scale)

# %% [markdown]
# Every error is below half a tick; 0.0 and 0.91, on ticks 0 and 3, have none.
#
# ## 2. What a bit buys
#
# Predict what one more bit does to the rounding bound.

# %% tags=["nbval-ignore-output"]
recall.predict("01", "one_more_bit")

# %%
print_table(ruler.bits_table(0.91, bits=[3, 4, 8]), {"scale": ".5f", "rounding bound (scale/2)": ".5f"})

# %% [markdown]
# The range stays [-0.91, 0.91]. From 3 to 4 bits the bound falls from 0.152 to 0.065, to 3/7 of
# itself, not to half: the ticks per side go from 3 to 7.
#
# ## 3. A value beyond the ruler
#
# A **calibrated** ruler is fixed on earlier data, then used on new data. Give the six values'
# ruler a new value, 1.6. Predict what comes back.

# %% tags=["nbval-ignore-output"]
recall.predict("01", "beyond_the_ruler")

# %%
ruler.print_steps([1.6], bits=3, scale=fixed_scale)

# %% [markdown]
# The ruler has no tick 5, so the **clamp** stores 3: the error, 0.69, is about 4.5 times the
# rounding bound. A value is **clipped** when the clamp changes its code: from half a tick past
# the last tick on. Its error grows with the distance.

# %%
_ = plots.ruler(values + [1.6], bits=3, scale=fixed_scale)

# %% [markdown]
# ## 4. Try it: a value and a bit width
#
# One slider moves an extra value; the other sets the bit width of the six values' ruler. Is 1.0
# clipped at 3 bits? At 4 bits? Predict, then set it to 1.0 at each width, and slide it up from
# 0.91 until the readout says **clipped**.

# %% tags=["nbval-ignore-output"]
widgets.ruler_explorer(tuple(values))

# %% [markdown]
# <details><summary>What you should have seen (open after sliding)</summary>
#
# At 3 bits the readout first says clipped at 1.07, at 4 bits at 0.98: the first steps past
# 0.91 plus half a tick. So 1.0 is clipped at 4 bits only: a finer ruler starts clipping closer
# to its last tick.
#
# </details>
#
# ## 5. Symmetric or asymmetric
#
# An **asymmetric** ruler is fitted to `[rmin, rmax]` (the data's range widened to include 0) on
# unsigned codes: `scale = (rmax - rmin) / (2^b - 1)`. Its zero point, `round(-rmin / scale)`, is
# the code of 0.0.

# %% tags=["nbval-ignore-output"]
recall.predict("01", "asymmetric_tick")

# %%
gelu_like = [-0.17, 0.0, 0.05, 0.3, 0.7, 1.2, 2.0]
two_modes = ("symmetric signed", "asymmetric unsigned")
print_table(ruler.compare_modes(gelu_like, bits=4, modes=two_modes), {"scale": ".4f", "mae": ".4f"})

# %% [markdown]
# The symmetric ruler spends its negative codes down to -2.0, which these values barely enter:
# its ticks are about twice as coarse. The zero point rounds from 1.175 to 1, which moves the
# ruler's ends off -0.17 and 2.0 (last column). Here the mean absolute error (`mae`) halves with
# the tick: 0.052 to 0.025.
#
# ## Summary
#
# * `q = clamp(round(x / scale) + zero_point, qmin, qmax)`; `b` bits give `2^b` codes, the
#   restricted symmetric ruler uses `2^b - 1`.
# * Inside the range the error is at most half a tick; from half a tick past the last tick on,
#   a value is clipped, and its error grows with the distance.
# * On these GELU-like values, an asymmetric ruler's ticks are about twice as fine.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("01")

# %%
recall.show("01")

# %% [markdown]
# **Exercise**: `exercises/01_the_ruler.ipynb`: find where a calibrated ruler starts to clip,
# then the bit width at which its clipping costs more than its rounding.
#
# ## Going deeper
#
# ### Three other conventions for signed codes
#
# PyTorch's symmetric rule, `absmax / ((qmax - qmin) / 2)`, with codes `[-8, 7]` gives
# `absmax / 7.5` (its int8 default: `[-128, 127]`, `absmax / 127.5`). llama.cpp's Q4_0 takes
# the value of largest magnitude *with its sign*, `d = value / -8`, so that value lands exactly
# on code -8 and the other side stops at +7. A fourth rule divides by 8 (by 128 at 8 bits) and
# clamps to `[-8, 7]`. One row of 32 values whose largest magnitude, 1.3, is positive, then the
# same row with -1.3:

# %%
import torch

from qlesson.teach import conventions

row = torch.randn(32, generator=torch.Generator().manual_seed(3)) * 0.5
fmt = {"scale": ".4f", "MAE": ".4f", "max error": ".4f", "error at the largest value": ".4f"}
for extreme in (1.3, -1.3):
    row[7] = extreme
    print(f"largest value {extreme:+.1f}")
    print_table(conventions.convention_rows(row), fmt)

# %% [markdown]
# The restricted ruler keeps the largest value exact on either side and pays with the
# coarsest scale. PyTorch's full-range symmetric observer puts the largest value half a tick from the last
# code, on either side. Q4_0 puts its extra code, -8, on the side of its largest value, with
# the finest scale (its tiny error there is `d` rounded to fp16). Dividing by 8 and clamping to
# `[-8, 7]` clips a positive maximum by a whole tick: that formula loses its own largest value.
#
# ### Who uses [-127, 127], and PyTorch's two observers
#
# The TFLite int8 specification and ExecuTorch's XNNPACKQuantizer keep int8 weights in
# `[-127, 127]`. PyTorch ships both conventions: its default weight observer uses
# `[-128, 127]`; the observer of its qnnpack symmetric configurations is restricted to
# `[-127, 127]`:

# %%
from torch.ao.quantization import observer

w = torch.tensor([-0.5, 0.2, 1.27])
for name in ("default_weight_observer", "weight_observer_range_neg_127_to_127"):
    obs = getattr(observer, name)()
    obs(w)
    scale, _ = obs.calculate_qparams()
    print(f"{name}: codes [{obs.quant_min}, {obs.quant_max}], scale = 1.27 / {1.27 / float(scale):.1f}")

# %% [markdown]
# ### Signed or unsigned codes: same scale, same error
#
# A symmetric ruler on unsigned codes keeps the restricted scale and adds a zero point of
# `2^(b-1)` (8 at 4 bits): its codes 0..15 are [-8, 7] shifted by 8, and values within the
# range use only 1..15, the shifted [-7, 7]. On signed codes an asymmetric ruler adds `qmin`
# (-8) to `round(-rmin / scale)`. Section 5's values on all four rulers:

# %%
print_table(ruler.compare_modes(gelu_like, bits=4), {"scale": ".4f", "mae": ".4f"})

# %% [markdown]
# The codes only move the integer labels: with the same scale, the error is the same.
#
# ### Rounding error is at most half a tick, inside the range
#
# Inside its range, rounding moves a value by at most half a tick. On 1,000 random values, with a
# ruler fitted to them:

# %%
x = torch.randn(1000, generator=torch.Generator().manual_seed(0))
rows = []
for bits in (2, 3, 4, 8):
    qt = ql.quantize(x, bits)
    rows.append({"bits": bits, "scale / 2": float(qt.scale) / 2, "worst error": ql.errors(x, qt.dequantize()).max_abs})
print_table(rows, {"scale / 2": ".5f", "worst error": ".5f"})

# %% [markdown]
# The worst error nearly reaches `scale / 2`: the bound is tight.
#
# ### Ties
#
# `round` sends an exact half to the even tick, as `torch.round` does:

# %%
print(torch.round(torch.tensor([2.5, 3.5, 7.5])))

# %% [markdown]
# The restricted ruler's last code (3, 7, 127) is odd, so a value exactly half a tick past the
# last tick rounds one code beyond it and is clipped. On an asymmetric ruler whose zero point
# is odd, the last code's distance from it is even, and the same value stays on the last tick.

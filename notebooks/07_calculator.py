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
# # 07 · Calculator: per-tensor or per-channel?
#
# **What you will learn**: how your own numbers fare under one shared ruler and under one
# ruler per channel: scales, zero points, clipping, errors and bytes, side by side.
#
# **What you need**: lessons 01 and 02. Paste channels one per line (or separated by `;`),
# values separated by commas or spaces, choose the bit width and the mapping, and press
# **Compare**. The box starts with a 4-channel example: a moderate channel, a narrow
# positive one, a negative-only one and a tiny-range one. `make app` serves this page on its
# own, without code.
#
# **The formulas** (the same as `qlesson.quant.quantize`):
#
# * asymmetric: `rmin = min(x.min(), 0)`, `rmax = max(x.max(), 0)`,
#   `scale = (rmax - rmin) / (qmax - qmin)`, `zero_point = qmin - round(rmin / scale)`;
# * symmetric: `scale = absmax / (2^(b-1) - 1)`, zero point 0 (signed) or `2^(b-1)` (unsigned);
# * `q = clamp(round(x / scale) + zero_point, qmin, qmax)`, `x_hat = (q - zero_point) * scale`;
# * MAE = mean |x_hat - x|, RMSE = sqrt(mean (x_hat - x)^2), max error = max |x_hat - x|;
# * memory: payload `elements * bits / 8` bytes, plus 8 bytes per scale (fp32 scale and
#   int32 zero point), once for per-tensor and once per channel for per-channel.
#
# Unlike the web calculator this page is modelled on, the range is widened to include 0
# before the zero point is computed; without that, a negative-only channel gets a zero point
# outside the code range (lesson 05 shows it).

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% tags=["nbval-ignore-output"]
from qlesson.teach import widgets

widgets.calculator()

# %% [markdown]
# ## The example, printed
#
# The same comparison for the pre-filled example at 8 bits, asymmetric signed, for a page
# where widgets do not render:

# %%
from qlesson.teach import calculator as calc

result = calc.compare(calc.parse_channels(calc.EXAMPLE), bits=8, signed=True, symmetric=False)
cols = [
    "channel",
    "per-tensor scale",
    "per-tensor zero point",
    "per-tensor MAE",
    "per-channel scale",
    "per-channel zero point",
    "per-channel MAE",
]
print_table([{c: r[c] for c in cols} for r in result.channels], {c: ".5f" for c in cols[1:] if "zero" not in c})
for method, e in result.overall.items():
    print(f"overall {method:<12}: MAE {e['MAE']:.5f}, RMSE {e['RMSE']:.5f}, max error {e['max error']:.5f}")
print(", ".join(f"{k}: {v}" for k, v in result.memory.items()))

# %%
_ = calc.plot(result)

# %% [markdown]
# ## Summary
#
# Per-channel helps most for the narrow and tiny-range channels; its cost is a few bytes per
# channel, which on this 20-value toy is larger than the payload and on a real layer is small
# (lesson 04).
#
# **Exercise**: the exercises of lessons 02 and 05 cover these formulas.
#
# ## Pause and recall
#
# 1. Which channel of the example gains the most from its own scale, and why?
# 2. Why is the per-channel memory estimate larger than the per-tensor one here, and why does
#    that not matter for a real layer?

# %% [markdown]
# Then check yourself on the lesson's recall questions (in a page without widgets, the list
# below the quiz folds each answer under **Answer**):

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.quiz("07")

# %%
recall.show("07")

# %% [markdown]
# <details><summary>Answers to the questions above</summary>
#
# 1. The tiny-range channel 3: its own range is more than ten times narrower than the
#    tensor's, so a shared ruler set by the others is that much too coarse for it. (Its
#    per-channel MAE of 0 at 8 bits is a coincidence: its values fall exactly on its ticks,
#    lesson 05 section 2.)
# 2. Per-channel stores 8 bytes of metadata per channel (an fp32 scale and an int32 zero point)
#    against 5 bytes of int8 codes: 32 bytes against 20 for the four channels. A real row is
#    far longer: beside MiniLM's 384 int8 values the same 8 bytes are 2% of the row, beside
#    LLaMA-7B's 4096 values 0.2%.
# </details>

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
# # 07 · Calculator: what each ruler's 4 bytes buy
#
# **The question**: What do a ruler's 4 bytes buy?
#
# **The answer**: A quiet channel's own symmetric 4-byte scale makes its ruler finer by the
# tensor's largest |value| divided by the channel's: 15.5 times in the example. On 4-bit rows of
# GELU of 384 standard-normal draws, a zero point's 4 bytes cut the error almost as much as one
# more bit, which costs 48 bytes; the bit wins on 20 of 20 rows.
#
# **What you will do**: predict a quiet channel's codes, find the bit width at which that
# changes, see what the bytes cost, and count a GELU row's out-of-reach codes.
#
# **What you need**: lessons 01, 02 and 05 (zero points).
#
# **Time**: about 16 minutes, plus about 29 for the exercise; *Going deeper*: about 7 more.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.course import recall
from qlesson.teach import calculator as calc
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. What a channel's own ruler buys
#
# The example has four channels of five values, one per line:
#
# ```
# 0.12, -0.33, 0.48, -0.05, 0.91      channel 0: both signs
# 1.20, 0.95, 1.44, 1.10, 0.88        channel 1: positive only
# -1.70, -1.22, -0.94, -1.43, -1.11   channel 2: negative only
# 0.03, 0.08, -0.02, 0.11, -0.06      channel 3: both signs
# ```
#
# Per-tensor gives all 20 values one symmetric 4-bit ruler; per-channel gives each line its
# own. Channel 3's own ruler is fit to 0.11 instead of 1.70: 15.5 times finer.

# %% tags=["nbval-ignore-output"]
recall.predict("07", "quiet")

# %%
ex = calc.compare(calc.parse_channels(calc.EXAMPLE), bits=4, signed=True, symmetric=True)
print_table(calc.gain_rows(ex), calc.GAIN_FORMATS)

# %% [markdown]
# Channel 2 holds the tensor's largest |value|, 1.70, so it gains nothing. Under the shared ruler,
# channels 0 and 1 have MAEs of 0.065 and 0.052, near a quarter of the shared tick (1.70 / 7 / 4,
# about 0.061): the tick sets their error, not their size. Channel 3 is erased: half a shared
# tick, 1.70 / 7 / 2, about 0.12, is more than its 0.11, so all five of its values round to 0.
# Its MAE, 0.060, is its own mean |value|.
#
# ## 2. The calculator
#
# Paste channels one per line, values separated by commas or spaces.
#
# **Try this.** Raise **bits** one step at a time, pressing **Compare** each time, and watch
# channel 3's **per-tensor rounded to 0**. At which width does it first reach 0, and why there?

# %% tags=["nbval-ignore-output"]
from qlesson.teach import widgets

widgets.calculator(bits=4, symmetric=True)

# %% [markdown]
# <details><summary>Check for the Try-this (open it after you tried)</summary>
#
# At 7 bits: compare half a shared tick with channel 3's smallest |value|, 0.02. At 6 bits
# half a shared tick is 1.70 / 31 / 2, about 0.027, so -0.02 still rounds to 0; at 7 bits it
# is 1.70 / 63 / 2, about 0.013, and the codes are [1, 3, -1, 4, -2].
#
# Not erased is not as good as its own ruler. The next cell finds how many bits the shared ruler
# needs to beat it: 5 more bits on every value, where its own ruler costs one 4-byte scale.
#
# </details>

# %%
own4 = ex.channels[3]["per-channel MAE"]
first = next(b for b in range(4, 17) if calc.compare(ex.originals, b).channels[3]["per-tensor MAE"] < own4)
print(f"channel 3: the shared ruler first beats its own 4-bit ruler's MAE, {own4:.4f}, at {first} bits")

# %% [markdown]
# ## 3. The other 4 bytes: a zero point
#
# In this calculator a scale is an fp32 number (4 bytes); an asymmetric ruler adds an int32
# zero point (4 more), and a symmetric one stores none. On a 4-bit layer of MiniLM's FFN
# up-projection shape:

# %%
for zp_bytes in (0, 4):
    fp = ql.footprint((1536, 384), 4, ql.PerChannel(0), scale_bytes=4, zero_point_bytes=zp_bytes)
    print(f"[1536, 384] 4-bit layer, zero point {zp_bytes} B: metadata {fp.metadata_bytes / fp.total_bytes:.1%} of it")

# %% [markdown]
# Lesson 05 found that a zero point gains nearly one bit on MiniLM's GELU output. Here it is
# against one more bit on one row: GELU of 64 standard-normal draws. The control, the mirrored
# row, is the row together with its negation (128 values): symmetric about 0.

# %%
gelu = calc.parse_channels(calc.gelu_row())[0]
print(f"{gelu.numel()} values from {gelu.min():.2f} to {gelu.max():.2f}; {int((gelu < 0).sum())} below 0")

# %% tags=["nbval-ignore-output"]
recall.predict("07", "gelu")

# %%
qmax = ql.qrange(4)[1]
scale = gelu.abs().max() / qmax  # symmetric: fit to the row's largest |value|
lo, hi = round(float(gelu.min() / scale)), round(float(gelu.max() / scale))
print(f"4 bits, symmetric: the row's lowest value gets code {lo}, its highest {hi}; codes -{qmax} to {qmax}")
# symmetric, zero point, 1 more bit, and the control: the zero point on the mirrored row
print_table(calc.zero_point_rows(gelu, 4), calc.ZERO_POINT_FORMATS)


# %% [markdown]
# Codes -7 to -2, 6 of 15, are out of reach. A zero point spends every code on -0.17 to 1.91,
# a tick about half as wide. On the mirrored row no code is out of reach, and the zero point
# buys about nothing (1.04 times).
#
# One row is one draw. The same comparison on 20 other GELU rows, of 384 values:

# %%
print(calc.zero_point_against_a_bit(4, n=384))

# %% [markdown]
# On these rows too, the zero point buys a little less than one more bit: the bit gains more on
# 20 of the 20. On activations a zero point also adds correction terms to the integer GEMM
# (lesson 06); with a static zero point, the terms it adds fold into the bias offline.


# %% [markdown]
# ## Summary
#
# * With symmetric rulers, a channel's own ruler is finer by the tensor's largest |value| over
#   the channel's: 1.0 (the loudest channel) to 15.5 times on the example, and the erased
#   channel's values get nonzero codes again.
# * In this calculator a ruler costs 4 bytes (fp32 scale), 8 with an int32 zero point: 2 to 4%
#   of a 4-bit layer with 384-value rows.
# * On a row of GELU of 64 standard-normal draws, 6 of symmetric's 15 codes are out of reach at
#   4 bits. A zero point's 4 bytes cut the MAE a little less than one more bit: the bit wins on
#   20 of 20 rows of 384 values. On the mirrored row they buy about nothing.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("07")

# %%
recall.show("07")

# %% [markdown]
# **Exercise**: `exercises/07_calculator.ipynb`: rulers with zero points, out-of-reach codes,
# and per-channel scales against a zero point on a new tensor.

# %% [markdown]
# ## Going deeper
#
# ### The formulas
#
# The calculator calls `qlesson.quant.quantize`:
#
# * asymmetric: the range is widened to include 0 (lesson 01), `rmin = min(x.min(), 0)`,
#   `rmax = max(x.max(), 0)`, `scale = (rmax - rmin) / (qmax - qmin)`,
#   `zero_point = qmin - round(rmin / scale)`;
# * symmetric: `scale = absmax / (2^(b-1) - 1)`, zero point 0 (signed) or `2^(b-1)` (unsigned);
# * `q = clamp(round(x / scale) + zero_point, qmin, qmax)`, `x_hat = (q - zero_point) * scale`;
# * MAE = mean |x_hat - x|, RMSE = sqrt(mean (x_hat - x)^2), max error = max |x_hat - x|;
# * memory: payload `elements * bits / 8` bytes, plus per scale 4 bytes (fp32 scale) and,
#   if asymmetric, 4 bytes (int32 zero point).
#
# ### The example's bytes and errors
#
# At 8 bits, the example's codes and rulers:

# %%
for symmetric in (True, False):
    m = calc.compare(calc.parse_channels(calc.EXAMPLE), bits=8, symmetric=symmetric).memory
    tensor, channel = (m[f"per-{g} total bytes"] - m["payload bytes"] for g in ("tensor", "channel"))
    name = "symmetric" if symmetric else "asymmetric"
    print(f"{name:<10}: codes {m['payload bytes']} bytes; rulers: per-tensor {tensor}, per-channel {channel} bytes")

# %% [markdown]
# Section 1's errors value by value, at 4 bits; channel 3's per-tensor errors (x) are its values
# negated:

# %%
_ = calc.plot(ex, sharey=True)

# %% [markdown]
# ### What real formats store
#
# The fp32 scale and int32 zero point are this calculator's convention. Many real formats
# store less: llama.cpp's Q4_0 stores a single fp16 scale (2 bytes) per 32 weights and no zero
# point (lesson 04), and ONNX's `QuantizeLinear` usually stores an int8 or uint8 zero point
# (1 byte).
#
# ### Per-tensor bits against channel 3's own 4-bit ruler
#
# Per-tensor at more bits, channel 3's MAE against its own 4-bit ruler's, and what the extra bits
# cost on a 384-value row:

# %%
for bits in range(6, 10):
    r = calc.compare(calc.parse_channels(calc.EXAMPLE), bits=bits, signed=True, symmetric=True)
    print(
        f"{bits} bits: channel 3's per-tensor MAE {r.channels[3]['per-tensor MAE']:.4f} (own 4-bit ruler "
        f"{own4:.4f}); {384 * (bits - 4) / 8:.0f} bytes more than 4 bits on a 384-value row"
    )

# %% [markdown]
# On five values the MAE need not fall with every bit: 8 bits' 0.0039 sits a hair above 7 bits'
# 0.0038, because where each value lands between two ticks changes with the tick.
#
# ### Why channel 3's MAE falls 30 times
#
# Channel 3's own ruler is 15.5 times finer, yet its MAE falls 30 times. Divide its values by
# 10: its ruler is 155 times finer, and its MAE still falls 30 times, because both of its errors
# shrink with its values.

# %%
shrunk = calc.compare([*ex.originals[:3], ex.originals[3] / 10], bits=4, signed=True, symmetric=True)
rows = [calc.gain_rows(ex, falls=True)[3], {**calc.gain_rows(shrunk, falls=True)[3], "channel": "3 / 10"}]
print_table(rows, calc.GAIN_FORMATS)

# %% [markdown]
# An erased channel's MAE falls by its mean |value| over its own-ruler MAE:

# %%
err3 = (ex.per_channel[3] - ex.originals[3]).abs()
print(
    f"channel 3: own-ruler MAE {err3.mean():.4f}, {err3[[0, 1, 2, 4]].mean():.4f} without 0.11; "
    f"a quarter of its tick {ex.channels[3]['per-channel scale'] / 4:.4f}"
)

# %% [markdown]
# Channel 3's 0.11 sits exactly on its own top tick (error 0), and its other four values happen
# to fall nearer their ticks than a quarter tick on average: hence a fall as large as 30.
#
# ### Where the extra gain comes from
#
# On section 3's row the zero point's tick (2.08 / 15 against 1.91 / 7) is 1.97 times finer and
# the MAE falls 2.57 times; one more bit's tick is 2.14 times finer and the MAE falls 3.00 times.
# Split by sign:

# %%
for label, bits, sym in (
    ("4 bits, symmetric", 4, True),
    ("4 bits, zero point", 4, False),
    ("5 bits, symmetric", 5, True),
):
    r = calc.compare([gelu], bits=bits, symmetric=sym, signed=sym)
    err = (r.per_tensor[0] - gelu).abs()
    print(
        f"{label}: tick {r.channels[0]['per-tensor scale']:.3f}, MAE {err.mean():.4f}, of which the "
        f"{int((gelu < 0).sum())} values below 0 carry {err[gelu < 0].sum() / gelu.numel():.4f}"
    )

# %% [markdown]
# At 4 bits the dip, all of it within one tick of 0, carries 0.049 of the 0.081. The zero point
# cuts it to 0.012 and one more bit to 0.014, 4.1 and 3.6 times less, more than either tick's
# gain.
#
# ### The page as an app, and exports
#
# `make app` serves the calculator alone (no code, no lesson text) on `http://127.0.0.1:8866/`. The
# widget's CSV link saves the table, the overall errors and the byte counts; its PDF button
# adds the plot, page by page for a layer of hundreds of channels.

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
# # 07 · Calculator: per-tensor or per-channel on your own numbers
#
# **The question**: On numbers you paste, what does one ruler per channel buy over one shared
# ruler, and what does it cost, with and without a zero point?
#
# **The answer**: With symmetric rulers, a channel's own ruler is finer by the tensor's largest
# |value| over the channel's, so the quieter a channel, the more it gains. In this calculator
# (an fp32 scale, an int32 zero point) each ruler costs 4 bytes, 8 with a zero point: 1 to 2%
# of an int8 layer with 384-value rows; on one-sided data such as a post-GELU row, a zero point
# is worth its 4 bytes.
#
# **What you will do**: predict which channel gains nothing, count the bytes, count the codes a
# symmetric ruler leaves empty on a GELU row, and paste rows of your own.
#
# **What you need**: lessons 01, 02 and 05 (zero points).
# **Time**: about 16 minutes, plus about 18 for the exercise.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.course import recall
from qlesson.teach import calculator as calc
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Which channel gains nothing?
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
# own. Commit to an answer first.

# %% tags=["nbval-ignore-output"]
recall.predict("07", "none")

# %%
ex = calc.compare(calc.parse_channels(calc.EXAMPLE), bits=4, signed=True, symmetric=True)
rows = [
    {
        "channel": r["channel"],
        "absmax": max(abs(r["min"]), abs(r["max"])),
        "own ruler finer by": r["per-tensor scale"] / r["per-channel scale"],
        "per-tensor MAE": r["per-tensor MAE"],
        "per-channel MAE": r["per-channel MAE"],
        "MAE falls by": r["per-tensor MAE"] / r["per-channel MAE"],
    }
    for r in ex.channels
]
fmt = {"absmax": ".2f", "own ruler finer by": ".1f", "per-tensor MAE": ".4f", "per-channel MAE": ".4f"}
print_table(rows, {**fmt, "MAE falls by": ".1f"})
_ = calc.plot(ex, sharey=True)

# %% [markdown]
# Channel 2 holds the tensor's largest |value|, 1.70, so the shared scale is its own scale and
# nothing changes. Every other channel's ruler is finer by 1.70 over its own absmax: 1.2 times
# for channel 1 (1.44), about 15 times for channel 3 (0.11). With five values a channel, the
# MAE only roughly follows the ruler. Channel 3 gains most: under the shared ruler half a tick
# is 0.12, more than 0.11, so all of its values round to 0. In the plot (one y-scale for all
# panels), channel 2's two markers coincide, and channel 3's red errors are its own values,
# negated, while its teal ones sit near 0.
#
# ## 2. The calculator
#
# Paste channels one per line (or separated by `;`), values separated by commas or spaces.
#
# **Try this.** Pick **symmetric**, set **bits** to 4 and press **Compare**: the table above.
# Raise **bits** one step at a time until channel 3's per-tensor MAE drops below 0.06 (the mean
# of its |values|). Why at that width? Compare half the per-tensor scale with 0.11.
#
# **Your own numbers.** Still symmetric, replace the box with three rows of your own: say, one
# loud, one quiet and one in between. Before you press **Compare**, write down each row's
# "finer by" from its largest |value|, then check it against the two scales in the table.

# %% tags=["nbval-ignore-output"]
from qlesson.teach import widgets

widgets.calculator()

# %% [markdown]
# <details><summary>Check for the Try-this (open it after you tried)</summary>
#
# At 5 bits half a tick is 1.70 / 15 / 2, about 0.057, so 0.11, 0.08 and -0.06 now reach a code.
#
# </details>
#
# ## 3. What the extra rulers cost
#
# In this calculator a scale is an fp32 number (4 bytes), and an asymmetric ruler adds an int32
# zero point (4 bytes more); many real formats store less. A symmetric
# ruler's zero point is fixed (0 for signed codes), so it stores none. At 8 bits:

# %%
for symmetric in (True, False):
    m = calc.compare(calc.parse_channels(calc.EXAMPLE), bits=8, symmetric=symmetric).memory
    print(f"{'symmetric' if symmetric else 'asymmetric':<10}: {m}")
for zp_bytes in (0, 4):
    fp = ql.footprint((1536, 384), 8, ql.PerChannel(0), scale_bytes=4, zero_point_bytes=zp_bytes)
    print(f"[1536, 384] int8 layer, zero point {zp_bytes} B: metadata {fp.metadata_bytes / fp.total_bytes:.1%} of it")

# %% [markdown]
# On the toy, the four scales (16 bytes, 32 with zero points) rival the 20 bytes of codes. On
# a layer whose rows hold 384 values (MiniLM's FFN up-projection shape), the same metadata is
# 1 to 2% of the layer.
#
# ## 4. Is a zero point's 4 bytes worth it?
#
# Lesson 05 measured this on MiniLM's GELU outputs at 8 bits: a zero point gained nearly one
# bit. New here: how many codes does symmetric leave outside the row's span (no value from the
# row's smallest to its largest rounds to them), at 4 bits and at 8, and is that worth 4 bytes?
# Take one row: GELU of 64 standard-normal draws, rounded to 2 decimals, under one ruler.

# %%
gelu = calc.parse_channels(calc.gelu_row())
print(f"{gelu[0].numel()} values from {gelu[0].min():.2f} to {gelu[0].max():.2f}; {int((gelu[0] < 0).sum())} below 0")

# %% tags=["nbval-ignore-output"]
recall.predict("07", "gelu")

# %%
for bits in (4, 8):
    mae = {}
    for symmetric in (True, False):
        g = calc.compare(gelu, bits=bits, symmetric=symmetric)
        qmin, qmax = ql.qrange(bits, symmetric=symmetric)
        scale, zp = g.channels[0]["per-tensor scale"], g.channels[0]["per-tensor zero point"]
        lo, hi = (round(float(v) / scale) + zp for v in (g.per_tensor[0].min(), g.per_tensor[0].max()))
        name = "symmetric" if symmetric else "asymmetric"
        mae[name] = g.overall["per-tensor"]["MAE"]
        print(
            f"{bits} bits, {name:<10}: scale {scale:.4f}, codes outside the span {(qmax - qmin) - (hi - lo)} "
            f"of {qmax - qmin + 1}, MAE {mae[name]:.4f}, bytes {g.memory['per-tensor total bytes']}"
        )
    wider = calc.compare(gelu, bits=bits + 1, symmetric=True)
    print(
        f"{bits} bits: symmetric MAE / asymmetric MAE {mae['symmetric'] / mae['asymmetric']:.1f}; control, symmetric "
        f"at {bits + 1} bits ({wider.memory['per-tensor total bytes']} bytes): "
        f"symmetric MAE / its MAE {mae['symmetric'] / wider.overall['per-tensor']['MAE']:.1f}"
    )

# %% [markdown]
# Symmetric must reach -max to reach +max, so the codes below -0.17 stay empty: 6 of 15 at 4
# bits, 116 of 255 at 8. Each tick is then about twice as wide, and more bits barely change
# that fraction. On this row, 4 bytes of zero point buy an MAE 2 to 3 times lower; the control,
# one more bit for every value (8 more bytes on 64 values), buys about as much (last number of
# each `bits` line) for twice the bytes.
#
# ## Summary
#
# * With symmetric rulers, per-channel makes a channel's ruler finer by the tensor's largest
#   |value| over the channel's own: a quiet channel gains most; the channel holding the
#   tensor's largest |value| gains nothing.
# * In this calculator a scale costs 4 bytes (fp32), 8 with an int32 zero point.
# * That metadata rivals the codes on a 20-value toy at 8 bits and is 1 to 2% of an int8 layer
#   with 384-value rows.
# * On one-sided data such as a post-GELU row, a zero point's 4 bytes buy a tick about half as
#   wide, so an MAE about 2 times lower (2.6 at 4 bits on this row): about what one more bit
#   per value buys, for 4 bytes instead of 8 on 64 values.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("07")

# %%
recall.show("07")

# %% [markdown]
# **Exercise**: `exercises/07_calculator.ipynb`: how much finer each channel's own ruler is, and
# which codes a symmetric ruler leaves unused, on tensors and rows the lesson did not show.

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
# ### Asymmetric per-channel gains follow the widened range
#
# With asymmetric rulers the rule of section 1 uses each range widened to include 0: channel
# 1's ruler spans [0, 1.44], not [0.88, 1.44], so its gain is far smaller than its narrow
# values suggest.
#
# ### What real formats store
#
# The fp32 scale and int32 zero point are this calculator's convention. Many real formats
# store less: llama.cpp's Q4_0 stores a single fp16 scale (2 bytes) per 32 weights and no zero
# point (lesson 04), and ONNX's `QuantizeLinear` usually stores an int8 or uint8 zero point
# (1 byte).
#
# ### 15 codes against 16
#
# At 4 bits the symmetric ruler has 15 codes (`[-7, 7]`, lesson 01) and the asymmetric one 16
# (`[-8, 7]`). That one extra code is a small part of section 4's gap; the rest is the empty
# negative side.
#
# ### A per-channel MAE of exactly 0
#
# At 8 bits, asymmetric, channel 3's per-channel MAE is 0. That is a coincidence of its
# values: they lie on a 0.01 grid, and 0.01 is a whole number of its own ticks, so every value
# falls on a tick.
#
# ### The page as an app, and exports
#
# `make app` serves this page on its own, without code, on `http://127.0.0.1:8866/`. The
# widget's CSV link saves the table, the overall errors and the byte counts; its PDF button
# adds the plot, page by page for a layer of hundreds of channels.

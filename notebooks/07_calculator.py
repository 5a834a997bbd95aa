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
# **The question**: What do a ruler's 4 bytes of scale buy, and what do 4 more of zero point
# buy?
#
# **The answer**: A channel's own symmetric ruler is finer by the tensor's largest |value| over
# the channel's, so the quietest channels gain most, for 4 bytes a ruler, 8 with a zero point
# (1% and 2% of an int8 layer with 384-value rows). On a 64-value post-GELU row (-0.17 to 1.91), a zero point's 4 more
# bytes cut the error nearly as much as one more bit per value, and on the same values mirrored
# about 0 they buy about nothing.
#
# **What you will do**: predict which codes a quiet channel gets, find the width at which
# its values stop rounding to 0, count the bytes, and count the codes a symmetric ruler leaves
# out of reach on a GELU row.
#
# **What you need**: lessons 01, 02 and 05 (zero points).
# **Time**: about 18 minutes, plus about 18 for the exercise.

# %% tags=["nbval-ignore-output"]
import torch

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
# own. Channel 3's own ruler is fit to 0.11 instead of 1.70: about 15 times finer. Commit to an
# answer first.

# %% tags=["nbval-ignore-output"]
recall.predict("07", "quiet")

# %%
ex = calc.compare(calc.parse_channels(calc.EXAMPLE), bits=4, signed=True, symmetric=True)
rows = [
    {
        "channel": r["channel"],
        "absmax": max(abs(r["min"]), abs(r["max"])),
        "values at code 0, shared ruler": int((t == 0).sum()),
        "own ruler finer by": r["per-tensor scale"] / r["per-channel scale"],
        "per-tensor MAE": r["per-tensor MAE"],
        "per-channel MAE": r["per-channel MAE"],
        "MAE falls by": r["per-tensor MAE"] / r["per-channel MAE"],
    }
    for r, t in zip(ex.channels, ex.per_tensor, strict=True)
]
fmt = {"absmax": ".2f", "own ruler finer by": ".1f", "per-tensor MAE": ".4f", "per-channel MAE": ".4f"}
print_table(rows, {**fmt, "MAE falls by": ".1f"})
_ = calc.plot(ex, sharey=True)

# %% [markdown]
# Channel 2 holds the tensor's largest |value|, 1.70, so the shared scale is its own scale and
# nothing changes. Every other channel's ruler is finer by 1.70 over its own absmax: 1.2 times
# for channel 1 (1.44), about 15 times for channel 3 (0.11). The MAE only roughly follows the
# ruler. Under the shared ruler half a tick is 1.70 / 7 / 2, about 0.12, more than channel 3's
# 0.11: all five of its values round to 0, and the channel is erased. Its MAE falls 30 times,
# more than its ruler's 15; the extra is luck on its own ruler. Its shared-ruler MAE, 0.060, is
# the usual quarter-tick (1.70 / 7 / 4 = 0.061); its own-ruler MAE, 0.0020, is half of its
# quarter-tick (0.11 / 7 / 4 = 0.0039): its five values happen to fall near ticks.
#
# ## 2. The calculator
#
# Paste channels one per line (or separated by `;`), values separated by commas or spaces.
#
# **Try this.** Pick **symmetric**, set **bits** to 4 and press **Compare**. Raise **bits** one
# step at a time, pressing **Compare** each time. At which width does *every* value of channel 3
# first get a nonzero code under the shared ruler, and why there? Compare half the per-tensor
# scale in the table with channel 3's smallest |value|. Then replace the box with rows of your own.

# %% tags=["nbval-ignore-output"]
from qlesson.teach import widgets

widgets.calculator()

# %% [markdown]
# <details><summary>Check for the Try-this (open it after you tried)</summary>
#
# At 7 bits. Channel 3's smallest |value| is 0.02. At 6 bits half a shared tick is
# 1.70 / 31 / 2, about 0.027, so -0.02 still rounds to 0; at 7 bits it is 1.70 / 63 / 2, about
# 0.013, and the codes are [1, 3, -1, 4, -2].
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
# On a layer whose rows hold 384 values (MiniLM's FFN up-projection shape), the rulers are 1 to
# 2% of the layer. On the example, per-channel adds 16 bytes to per-tensor's 4 (four scales),
# 32 with zero points.
#
# ## 4. The other 4 bytes: a zero point
#
# A zero point also costs 4 bytes per ruler. Here is the calculator on one row: GELU of 64 standard-normal draws,
# rounded to 2 decimals, under one ruler. The control is the same values mirrored (each value
# and its negation, 128 values): a row symmetric about 0.

# %%
gelu = calc.parse_channels(calc.gelu_row())
print(f"{gelu[0].numel()} values from {gelu[0].min():.2f} to {gelu[0].max():.2f}; {int((gelu[0] < 0).sum())} below 0")
mirrored = [torch.cat([gelu[0], -gelu[0]])]

# %% tags=["nbval-ignore-output"]
recall.predict("07", "gelu")

# %%
rows = []
for bits in (4, 8):
    sym = calc.compare(gelu, bits=bits, symmetric=True)
    scale, qmax = sym.channels[0]["per-tensor scale"], ql.qrange(bits)[1]
    lo, hi = (round(float(v) / scale) for v in (sym.per_tensor[0].min(), sym.per_tensor[0].max()))
    print(f"{bits} bits, symmetric: the row's lowest value gets code {lo}, its highest {hi}; codes -{qmax} to {qmax}")
    for row, extra, symmetric, name in (
        (gelu, 0, True, "symmetric"),
        (gelu, 0, False, "zero point"),
        (gelu, 1, True, "1 more bit"),
        (mirrored, 0, False, "zero point, mirrored (128 values)"),
    ):
        g = calc.compare(row, bits=bits + extra, symmetric=symmetric)
        base = calc.compare(row, bits=bits, symmetric=True).overall["per-tensor"]["MAE"]
        mae = g.overall["per-tensor"]["MAE"]
        n_bytes = g.memory["per-tensor total bytes"] if row is gelu else "-"
        rows.append({"bits": bits, "ruler": name, "bytes": n_bytes, "MAE": mae})
        rows[-1]["symmetric's MAE / this"] = base / mae
print_table(rows, {"MAE": ".4f", "symmetric's MAE / this": ".2f"})


# %% [markdown]
# Symmetric spans -1.91 to +1.91, but the row's lowest value, -0.17, rounds to code -1 at 4
# bits: no value of the row can reach codes -7 to -2, 6 of 15 (116 of 255 at 8 bits). A zero
# point spends every code on -0.17 to 1.91, a tick about half as wide (2.08 / 15 against
# 1.91 / 7 at 4 bits): the MAE is 2.58 times lower at 4 bits, 1.99 at 8, nearly what one more
# bit per value buys (2.99 and 2.01 times) for half the bytes on this row (4 against 8).
# On the mirrored row every code is within reach, and the same 4 bytes buy about nothing: 1.05
# and 0.94 times. Symmetric's MAE there equals the original row's, since rounding is symmetric
# about 0. So the gain on the GELU row came from the out-of-reach codes, not from the zero
# point's 16th code.
#
# ## Summary
#
# * With symmetric rulers, a channel's own ruler is finer by the tensor's largest |value| over
#   the channel's: the quieter the channel, the more it gains; the loudest gains nothing. The MAE
#   only roughly follows (1.1 to 30 times lower on the example).
# * In this calculator a ruler costs 4 bytes (fp32 scale), 8 with an int32 zero point: 1 to 2%
#   of an int8 layer with 384-value rows.
# * On the 64-value post-GELU row (-0.17 to 1.91), 6 of symmetric's 15 codes are out of reach at
#   4 bits. A zero point's 4 bytes cut the MAE 2.58 times, nearly what one more bit per value
#   (8 bytes) buys, 2.99 times; on the same values mirrored about 0 they buy about nothing.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("07")

# %%
recall.show("07")

# %% [markdown]
# **Exercise**: `exercises/07_calculator.ipynb`: how much finer each channel's own ruler is with
# zero points, which codes of a symmetric ruler a row cannot reach, and what share of a layer the rulers
# take, on tensors and rows the lesson did not show.

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
# ### What real formats store
#
# The fp32 scale and int32 zero point are this calculator's convention. Many real formats
# store less: llama.cpp's Q4_0 stores a single fp16 scale (2 bytes) per 32 weights and no zero
# point (lesson 04), and ONNX's `QuantizeLinear` usually stores an int8 or uint8 zero point
# (1 byte).
#
# ### A per-channel MAE of exactly 0
#
# At 8 bits, asymmetric, channel 3's per-channel MAE is 0. That is a coincidence of its
# values: they lie on a 0.01 grid, and 0.01 is a whole number of its own ticks, so every value
# falls on a tick.
#
# ### How much of channel 3's 30 is luck
#
# Draw channels like channel 3: largest |value| 0.11, the rest on the same 0.01 grid, so the
# shared 4-bit ruler erases every one (2000 channels per size). How much does each one's MAE
# fall under its own ruler?

# %%
import numpy as np

rng = np.random.default_rng(0)
for n in (5, 64):
    v = rng.integers(-11, 12, size=(2000, n)) / 100
    v[:, 0] = 0.11 * rng.choice([-1, 1], size=2000)
    own = 0.11 / 7
    own_mae = np.abs(np.round(v / own) * own - v).mean(1)
    ratio = np.abs(v).mean(1)[own_mae > 0] / own_mae[own_mae > 0]  # shared MAE: every value rounds to 0
    p10, p50, p90 = np.percentile(ratio, [10, 50, 90])
    share = (ratio >= 30).mean()
    print(f"{n} values: median {p50:.0f}, 10th to 90th percentile {p10:.0f} to {p90:.0f}; {share:.0%} at 30 or more")

# %% [markdown]
# With 64 values the fall stays near the ruler's 15; with five it spreads from about the ruler's
# 15 to well past 30, and channel 3's 30 is in that spread.
#
# ### The zero point against one more bit on other GELU rows
#
# Section 4 used one row. The same comparison on 20 other rows (`gelu_row(seed=1..20)`):

# %%
gains = {4: [], 8: []}
for seed in range(1, 21):
    row = calc.parse_channels(calc.gelu_row(seed=seed))
    for bits in (4, 8):
        mae = [
            calc.compare(row, bits=b, symmetric=s).overall["per-tensor"]["MAE"]
            for b, s in ((bits, True), (bits, False), (bits + 1, True))
        ]
        gains[bits].append((mae[0] / mae[1], mae[0] / mae[2]))
for bits, g in gains.items():
    zp, more = np.array(g).T
    print(
        f"{bits} bits: zero point {zp.min():.1f} to {zp.max():.1f} times (median {np.median(zp):.1f}), one more bit "
        f"{more.min():.1f} to {more.max():.1f} (median {np.median(more):.1f}); the zero point gains more on "
        f"{(zp > more).sum()} of 20 rows"
    )

# %% [markdown]
# Across rows the zero point usually buys a little less than one more bit, as on section 4's row.
#
# ### The page as an app, and exports
#
# `make app` serves this page on its own, without code, on `http://127.0.0.1:8866/`. The
# widget's CSV link saves the table, the overall errors and the byte counts; its PDF button
# adds the plot, page by page for a layer of hundreds of channels.

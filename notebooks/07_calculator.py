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
# ruler, and what does it cost in bytes?
#
# **The answer**: A channel's own ruler is finer by the ratio of the tensor's range to the
# channel's, so a narrow channel gains most and a channel as wide as the tensor gains nothing.
# The cost is 4 bytes per scale, plus 4 for a zero point only if the ruler is asymmetric:
# as much as the codes on a toy, 1 to 2% of an int8 layer with 384-value rows.
#
# **What you will do**: predict which channel gains most, count the bytes, and test a
# post-GELU row symmetric against asymmetric.
#
# **What you need**: lessons 01, 02 and 05 (zero points).
# **Time**: about 11 minutes.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.course import recall
from qlesson.teach import calculator as calc
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. The calculator
#
# Paste channels one per line (or separated by `;`), values separated by commas or spaces.
# Per-tensor gives all values one ruler; per-channel gives each line its own. The box starts
# with four channels: a moderate one (0), a narrow positive one (1), a negative-only one (2)
# and a tiny-range one (3).
#
# **Try this.** Lower **bits** from 8, pressing **Compare** each time, until channel 3's
# per-tensor MAE equals the mean of its |values| (0.06): the shared ruler then stores all of
# it as 0. Why at that width? Compare half the per-tensor scale with channel 3's largest
# |value|, 0.11.

# %% tags=["nbval-ignore-output"]
from qlesson.teach import widgets

widgets.calculator()

# %% [markdown]
# ## 2. Which channel gains most?
#
# The same four channels at 4 bits, asymmetric. Commit to an answer first.

# %% tags=["nbval-ignore-output"]
recall.predict("07", "gain")

# %%
ex = calc.compare(calc.parse_channels(calc.EXAMPLE), bits=4, signed=True, symmetric=False)
rows = [
    {
        "channel": r["channel"],
        "own ruler finer by": r["per-tensor scale"] / r["per-channel scale"],
        "per-tensor MAE": r["per-tensor MAE"],
        "per-channel MAE": r["per-channel MAE"],
    }
    for r in ex.channels
]
print_table(rows, {"own ruler finer by": ".1f", "per-tensor MAE": ".4f", "per-channel MAE": ".4f"})
_ = calc.plot(ex)

# %% [markdown]
# Channel 3's range is far narrower than the tensor's, so its own ruler is far finer and its
# error falls the most. The shared ruler has less than one tick across its whole range. The
# other channels span a good part of the tensor's range, so their own rulers are only about
# 2 times finer. With five values a channel, each MAE ratio only roughly follows its scale ratio.
#
# ## 3. What the extra rulers cost
#
# The calculator stores each scale as an fp32 number: 4 bytes. An asymmetric ruler also
# stores an int32 zero point, 4 bytes more. A symmetric ruler's zero point is fixed (0 for
# signed codes), so it stores none.

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
# ## 4. One-sided data: symmetric or asymmetric?
#
# GELU never returns less than about -0.17, so a post-GELU activation row is nearly one-sided.
# The cell below prints 64 such values: GELU of 64 standard-normal draws, rounded to
# 2 decimals. Paste the row into the calculator's box above, set **bits** to 4, and predict
# before you press **Compare** with each mapping.

# %%
gelu_text = calc.gelu_row()
print(gelu_text)

# %% tags=["nbval-ignore-output"]
recall.predict("07", "gelu")

# %%
row = calc.parse_channels(gelu_text)
mae = {}
for symmetric in (True, False):
    g = calc.compare(row, bits=4, symmetric=symmetric)
    qmin, qmax = ql.qrange(4, symmetric=symmetric)
    used = len(g.per_tensor[0].unique())
    name = "symmetric" if symmetric else "asymmetric"
    mae[name] = g.overall["per-tensor"]["MAE"]
    print(
        f"{name:<10}: scale {g.channels[0]['per-tensor scale']:.3f}, codes used {used} of {qmax - qmin + 1}, "
        f"MAE {mae[name]:.4f}, bytes {g.memory['per-tensor total bytes']}"
    )
print(f"symmetric MAE / asymmetric MAE: {mae['symmetric'] / mae['asymmetric']:.1f}")

# %% [markdown]
# Symmetric must reach -max to reach +max, so the codes it keeps for values below -0.17 stay
# empty and each tick is about twice as wide. Asymmetric spreads its 16 codes over only the
# range the values occupy. Its price on this row is one zero point: 4 bytes.
#
# In the calculator above, try the same row at 8 bits: asymmetric still wins, for the same
# reason.
#
# ## Summary
#
# * Per-channel makes a channel's ruler finer by the ratio of the tensor's range to its own:
#   the tiny-range channel gains most; a channel as wide as the tensor gains nothing.
# * Per scale, a symmetric ruler stores 4 bytes (fp32); an asymmetric one 8 (plus an int32
#   zero point).
# * That metadata rivals the codes on a 20-value toy and is 1 to 2% of an int8 layer with
#   384-value rows.
# * On one-sided data such as a post-GELU row, symmetric leaves the codes for the missing
#   negative side empty; at 4 bits its MAE was 2.6 times asymmetric's here.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("07")

# %%
recall.show("07")

# %% [markdown]
# **Exercise**: lesson 07 has none of its own: the calculator is the thing to play with, and the
# exercises of lessons 02 and 05 practise these formulas.

# %% [markdown]
# ## Going deeper
#
# ### The formulas
#
# The calculator calls `qlesson.quant.quantize`:
#
# * asymmetric: `rmin = min(x.min(), 0)`, `rmax = max(x.max(), 0)`,
#   `scale = (rmax - rmin) / (qmax - qmin)`, `zero_point = qmin - round(rmin / scale)`;
# * symmetric: `scale = absmax / (2^(b-1) - 1)`, zero point 0 (signed) or `2^(b-1)` (unsigned);
# * `q = clamp(round(x / scale) + zero_point, qmin, qmax)`, `x_hat = (q - zero_point) * scale`;
# * MAE = mean |x_hat - x|, RMSE = sqrt(mean (x_hat - x)^2), max error = max |x_hat - x|;
# * memory: payload `elements * bits / 8` bytes, plus per scale 4 bytes (fp32 scale) and,
#   if asymmetric, 4 bytes (int32 zero point).
#
# ### Where it differs from the web calculator it is modelled on
#
# * The range is widened to include 0 before the zero point is computed. Without that, a
#   negative-only channel gets a zero point outside the code range (lesson 05).
# * The web calculator counts 8 bytes of metadata per scale for symmetric rulers too. A
#   symmetric ruler's zero point is a constant of the format, so nothing is stored for it.
#
# ### Real formats store less
#
# The fp32 scale and int32 zero point follow the web calculator. Real formats are leaner:
# llama.cpp's Q4_0, for one, stores a single fp16 scale (2 bytes) per 32 weights and no zero
# point (lesson 04).
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
# widget's **Download CSV** link saves the table, the overall errors and the byte counts;
# **Make PDF** adds the plot, page by page for a layer of hundreds of channels.

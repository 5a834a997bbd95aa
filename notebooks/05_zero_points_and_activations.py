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
# # 05 · Zero points and activations
#
# **The question**: how should the activations of a transformer, which arrive at run time,
# be quantized to int8?
#
# **The answer**: match the ruler to the data's shape. A GELU output is one-sided, so a zero
# point buys about one bit; an outlier *token* needs per-token scales; outlier *features* need
# SmoothQuant, which moves their range into the weights.
#
# **What you will do**:
# * capture MiniLM's layer-0 activations, calibrate on one text and score on another;
# * predict, then measure, what a zero point buys on a GELU output, and what per-token scales
#   buy against an outlier token;
# * smooth two layers' inputs and see how sure the gain is.
#
# **What you need**: lessons 01 to 03 (nothing to download).
# **Time**: about 15 minutes, plus about 19 for the exercise.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. A GELU output is one-sided
#
# Weights are fixed, so their scales are computed once. Activations change with every input,
# so their scales are either **static** (fitted once on calibration text) or **dynamic**
# (found at run time). To judge them honestly, fit on one text and score on another: 24
# calibration sentences, and the course's 240 evaluation sentences (120 paraphrase pairs).
#
# Capture the inputs of layer 0's Linears with forward hooks. `L0.output` is the FFN's
# down-projection; its input is a GELU output, and GELU never goes below -0.17:

# %%
import torch

from qlesson.course import recall
from qlesson.teach import activations, models, plots
from qlesson.teach.eval_text import EVAL_SENTENCES

model = models.load_minilm()
calib = activations.capture_first_layer(model, activations.CALIBRATION_SENTENCES)
evals = activations.capture_first_layer(model, EVAL_SENTENCES)
labels = models.token_labels(model, EVAL_SENTENCES)
print(f"calibration {calib['L0.output'].shape[0]} tokens, evaluation {evals['L0.output'].shape[0]} tokens")
x = evals["L0.output"]
print(f"L0.output input: min {float(x.min()):+.2f}, max {float(x.max()):+.1f}")

# %% [markdown]
# A symmetric int8 ruler spans `[-max, +max]` and spends the codes -127 to -1 on a side the
# data barely visits. Lesson 01's asymmetric ruler spans `[min(x, 0), max(x, 0)]` with
# the 256 codes of uint8, and an integer **zero point**: the code that stands for 0.0.
# It is an integer so that 0.0 comes back exactly.
#
# Both rulers below are per-tensor and static (fitted to the calibration text's min and max),
# or per-token and dynamic. Before you run the cell, predict:

# %% tags=["nbval-ignore-output"]
recall.predict("05", "one_sided")

# %%
fmt = {"symmetric dB": ".1f", "asymmetric dB": ".1f", "gain dB": "+.2f", "95% CI": "+.2f"}
print_table(activations.one_sided_rows(calib["L0.output"], x, labels), fmt)

# %% [markdown]
# The zero point gains about 5.5 dB with either kind of scale. That is close to one bit
# (6 dB): the asymmetric step is the range over 255 steps, about half the symmetric step
# of max over 127. The interval is a paired bootstrap over the 120 sentence pairs. It is
# narrow because the gain is the same on every sentence: every token is one-sided.
#
# The zero point `z` has a cost in the integer GEMM: `sum_k (q_k - z) w_k` is
# `sum_k q_k w_k - z sum_k w_k`, and the last sum is one number per output channel, computed
# once from the weights. Lesson 06 measures what that correction costs.
#
# ## 2. An outlier token: per-token scales
#
# FC1's input (`L0.intermediate`) comes out of a LayerNorm and has both signs. The largest
# |value| of each of its 384 features, over all evaluation tokens:

# %%
xi = evals["L0.intermediate"]
_ = plots.activation_features(xi, "L0.intermediate input")
top = xi.abs().amax(0).topk(3)
print(f"loudest features {top.indices.tolist()}, absmax {[round(v, 1) for v in top.values.tolist()]}")
print(f"median feature absmax {float(xi.abs().amax(0).median()):.1f}")

# %% [markdown]
# Feature 99 reaches about 28, fifteen times the typical feature. A per-token scale gives
# each row `[token, :]` its own ruler. Predict what it does here:

# %% tags=["nbval-ignore-output"]
recall.predict("05", "outlier_token")

# %%
profile = activations.feature_profile(xi, labels, [99, 63, 267])
print_table(profile, {k: ".1f" for k in profile[0] if k != "feature"})
print()
fmt = {"all tokens SQNR dB": ".1f", "without [CLS] SQNR dB": ".1f"}
print_table(activations.granularity_rows(xi, labels, bits=8), fmt)

# %% [markdown]
# Feature 99 is loud on one token per sentence: about 28 on every `[CLS]` token, under 2 on
# every other token. So per-token scales gain about 9.5 dB over per-tensor: the
# spike now sets only its own row's scale. The control is the last column: without the
# `[CLS]` rows, per-tensor alone gains about 7 dB.
#
# Per-token scales also fit an integer GEMM. A token's scale is constant along the reduction
# axis K, so it multiplies the int32 sum once per row, like a per-channel weight scale.
#
# ## 3. Outlier features: what per-token scales cannot reach
#
# Features 63 and 267 are different: loud on ordinary tokens (the "other tokens" columns),
# several times the typical feature on every row. Per-feature scales would fix them; the
# table shows them about 11 dB above per-token. But a per-feature scale changes along K,
# inside the sum, so it cannot be applied to the int32 result.
#
# **SmoothQuant** moves it out of the activations. Divide feature `j` by `s_j` and multiply
# weight column `j` by `s_j`: `(x / s) @ (w * s).T` equals `x @ w.T` exactly. With
#
# ```
# s_j = max|x_j|^alpha / max|w_j|^(1 - alpha)
# ```
#
# alpha sets how much of feature `j`'s range moves into the weights (the paper's default
# is 0.5).
#
# The division must cost nothing at run time, so `1/s` is folded into the norm that feeds
# the Linear. In BERT that is a LayerNorm (`1/s` into its weight and bias). LLaMA's RMSNorm
# has a weight and no bias, so `1/s` goes into the weight alone. One norm feeds several
# Linears, so they share one `s`: query, key and value share one; in LLaMA, gate and up
# share another.
#
# The down-projection's input is the GELU output of section 1. `GELU(z) / s` is not
# `GELU(z / s)`, so `1/s` cannot be folded into FC1 ahead of the GELU, and no norm sits in
# between. BERT's down-projection stays unsmoothed; its one-sided input is where the zero
# point helps.
#
# ## 4. Smoothing, calibrated on one text and scored on another
#
# Int8 weights per output channel, int8 symmetric activations. The factors `s` and the
# static per-tensor scale come from the calibration sentences; the output SQNR of
# `x @ w.T` is measured on the evaluation sentences. Gains are over no smoothing:

# %%
W = models.linear_weights(model)
qkv = torch.cat([W["L0.query"], W["L0.key"], W["L0.value"]])  # one input, one s
cases = [
    ("L0 QKV", calib["L0.query"], evals["L0.query"], qkv),
    ("L0.intermediate", calib["L0.intermediate"], evals["L0.intermediate"], W["L0.intermediate"]),
]
rows = activations.smoothing_rows(cases, labels, alphas=(0.5, 0.75))
print_table(rows, {"none dB": ".1f"} | {k: "+.2f" for k in rows[0] if "alpha" in k})

# %% [markdown]
# Smoothing helps both inputs with both kinds of scale, and every interval excludes 0. It
# helps most with per-tensor scales: on FC1's input alpha 0.75 gains about 14 dB there,
# against about 7 with per-token scales, which start 9 dB higher.
# The best alpha is a property of the layer and the scales: 0.75 on FC1's input, while on the
# QKV input with per-token scales 0.5 gains a little more.
#
# Each row quantizes one layer as if the fold were free. It is in a pre-LN model such as
# LLaMA, where the norm feeds only the Linears. MiniLM is post-LN: the same LayerNorm also
# feeds the residual, which would need its own `* s`.
#
# ## Summary
#
# * Match the ruler to the data. A GELU output is one-sided: an asymmetric int8 ruler with an
#   integer zero point gains about 5.5 dB (one bit) on MiniLM's down-projection input.
# * An outlier *token* (`[CLS]`, feature 99) is handled by per-token scales, which factor out
#   of the integer GEMM.
# * Outlier *features* (63, 267) need per-feature treatment, which cannot leave the sum.
#   SmoothQuant moves it into the weights: `1/s` into the preceding norm, one `s` per norm.
# * Fit static scales and `s` on calibration text, score on other text: smoothing then gains
#   1.5 to 14 dB on layer 0's QKV and FC1 inputs.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("05")

# %%
recall.show("05")

# %% [markdown]
# **Exercise**: `exercises/05_zero_points_and_activations.ipynb`: an asymmetric round trip,
# per-token scales, SmoothQuant's factors, and choosing an activation's ruler from its
# statistics.
#
# ## Going deeper
#
# ### A zero point outside the codes, and float minimums
#
# A channel that does not contain 0 would get a zero point outside the codes: for a uint8
# channel in `[-1.70, -0.94]` the formula gives about 570. Widening the range to include 0
# fixes it at the price of a coarser step. llama.cpp's Q4_1 stores a float minimum `m`
# instead (`x = d q + m`): no widening, no exact 0.0. At 4 bits on that channel:

# %%
from qlesson.teach import examples

neg = examples.calculator_channels()[2]  # a negative-only channel
lo, hi = float(neg.min()), float(neg.max())
d = (hi - lo) / 15  # a Q4_1-style ruler: float minimum, 16 codes across [min, max]
float_min = torch.round((neg - lo) / d) * d + lo
int_zp = ql.fake_quantize(neg, 4, symmetric=False, signed=False)  # range widened to include 0
int_scale = float(ql.quantize(neg, 4, symmetric=False, signed=False).scale)
print(f"zero point without widening: {(0 - lo / ((hi - lo) / 255)):.0f} (uint8 codes stop at 255)")
print(f"float minimum:      step {d:.4f}, MAE {float((float_min - neg).abs().mean()):.4f}")
print(f"integer zero point: step {int_scale:.4f}, MAE {float((int_zp - neg).abs().mean()):.4f}")

# %% [markdown]
# Q4_1's dot product stays integer: its activations are 8-bit blocks (Q8_1) that store
# each block's sum, and the minimum adds `m` times that sum.
#
# ### Choosing a static scale
#
# Section 1's static scale was the calibration min and max. Two other observers: the
# 99.99th percentile of |x|, and the clip with the least squared error on the calibration
# text. Symmetric per-tensor int8 on the down-projection input, scored on the evaluation text:

# %%
fmt = {"clip": ".2f", "share of eval values clipped": ".5f", "eval SQNR dB": ".1f"}
observers = activations.static_scale_rows(calib["L0.output"], x, bits=8)
print_table(observers, fmt)
print_table(activations.observer_rows(observers, x, labels), {"dB": "+.1f", "95% CI": "+.1f"})
cls = activations.cls_mask(labels)
print(f"unit 856: median {float(x[cls, 856].median()):.1f} on [CLS], at most {float(x[~cls, 856].max()):.1f} elsewhere")

# %% [markdown]
# The 99.99th percentile lands at about 5, far below the `[CLS]` spike of about 25 (hidden
# unit 856, one value on each `[CLS]` token: the last line). It clips the spike, and the
# layer loses 8 dB.
# The MSE-optimal clip trims a little off the top and gains about 1 dB. Outliers that carry
# meaning must survive calibration.
#
# ### Smoothing a layer whose weights are loud too
#
# After smoothing, feature `j`'s absmax is `max|x_j| / s_j = (max|x_j| max|w_j|)^(1 - alpha)`:
# a feature whose weight column is also large stays loud. On the down-projection (smoothed
# here as if it could be folded; in LLaMA's SwiGLU FFN it can, into `up_proj`'s rows):

# %%
fmt = {k: ".2f" for k in ("max|x_j|", "max|w_j|", "s_j", "max|x_j / s_j|", "(max|x_j| max|w_j|)^(1-alpha)")}
print_table(activations.smoothed_features(calib["L0.output"], W["L0.output"], alpha=0.5, top=3), fmt)
down = [("L0.output", calib["L0.output"], x, W["L0.output"])]
rows = activations.smoothing_rows(down, labels, alphas=(0.5, 0.75))
print_table(rows, {"none dB": ".1f"} | {k: "+.1f" for k in rows[0] if "alpha" in k})

# %% [markdown]
# Hidden unit 856's weight column is loud too (7.9), so its `s_j` is only 1.77: it stays at
# 14 while the next features drop to about 1.5. Alpha 0.5 loses about 5 dB with per-tensor
# scales. Alpha 0.75 moves more of the range into the weights and gains about 7 dB; with
# per-token scales it ties with no smoothing.
#
# ### The fold in a post-LN model
#
# MiniLM is a post-LN BERT: the LayerNorm before FC1 also feeds the residual around the FFN.
# Folding `1/s` into it leaves FC1's output unchanged but hands the residual `h / s`. In a
# pre-LN model (LLaMA, OPT) the norm feeds only the Linears, and the fold is exact. Folded on
# MiniLM's layer 0, 24 sentence embeddings against the original:

# %%
s = activations.smoothing_factors(calib["L0.intermediate"], W["L0.intermediate"], alpha=0.5)
print(f"mean cosine, folded vs original: {activations.folded_model_cosine(model, s):.3f}")

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
# # 05 · Activations: zero points, per-token scales, smoothing
#
# **The question**: how should the activations of a transformer, which arrive at run time,
# be quantized to int8?
#
# **The answer**: on MiniLM's layer 0, a one-sided activation wants a zero point, and a token
# with a spike wants its own scale, which per-token scales give. Here, with one static scale,
# smoothing helps only if it lowers the tensor's largest value, which sets that scale.
#
# **What you will do**: predict, then measure, what each of the three buys on MiniLM's layer 0.
#
# **What you need**: lessons 01 to 03 (nothing to download).
#
# **Time**: about 17 minutes, plus about 35 for the exercise; *Going deeper*: about 16 more.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Zero points: a GELU output is one-sided
#
# Each section finds one waste of the int8 codes and what removes it.
#
# Activation scales are either **static**, fitted once (here on 24 calibration sentences, then
# scored on the course's 240 evaluation sentences), or **dynamic**, found at run time.
#
# Forward hooks capture the inputs of layer 0's Linears. `L0.output` is the FFN's
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
x = evals["L0.output"]
print(f"L0.output input: min {float(x.min()):+.2f}, max {float(x.max()):+.1f}")

# %% [markdown]
# A symmetric int8 ruler spans `[-max, +max]`: its codes -127 to -2 stand for values below -0.3,
# which never occur. Lesson 01's asymmetric ruler spans `[min(x, 0), max(x, 0)]` with the 256
# codes of uint8 and an integer **zero point** `z`, the code for 0.0.
#
# The table compares both rulers per-tensor (static: the calibration min and max) and per-token
# (dynamic). Per-tensor, the zero point halves the step. Predict:

# %% tags=["nbval-ignore-output"]
recall.predict("05", "one_sided")

# %%
fmt = {"symmetric dB": ".1f", "asymmetric dB": ".1f", "gain dB": "+.2f"}
sided = activations.one_sided_rows(calib["L0.output"], x, labels)
print_table(activations.drop_columns(sided, "95% CI"), fmt)
print(f"lowest token minimum {float(x.amin(1).min()):+.2f}, highest {float(x.amin(1).max()):+.2f}")

# %% [markdown]
# The zero point gains about 5.4 dB with either kind of scale, nearly one bit: every token's
# minimum is GELU's -0.17 (last line), so each token is one-sided, not just the tensor.
#
# ## 2. Per-token scales: one outlier token
#
# FC1's input (`L0.intermediate`) comes out of a LayerNorm. The plot shows each of its 384
# features' largest |value|. Can the plot tell which of its three dots is loud on one token and
# which on many? The table shows each on the `[CLS]` tokens and on the others:

# %%
xi = evals["L0.intermediate"]
_ = plots.activation_features(xi, "L0.intermediate input")
profile = activations.feature_profile(xi, labels, [99, 63, 267])
print_table(profile, {k: ".2f" if "median" in k else ".1f" for k in profile[0] if k != "feature"})

# %% [markdown]
# A per-token scale gives each row `[token, :]` its own ruler. Against one per-tensor scale, with a
# control: only the `[CLS]` rows get their own scales, the other rows share one. Predict:

# %% tags=["nbval-ignore-output"]
recall.predict("05", "outlier_token")

# %%
print_table(activations.granularity_control_rows(xi, labels, bits=8), {"activation SQNR dB": ".1f"})

# %% [markdown]
# Feature 99 is loud only on `[CLS]`, one token per sentence. Per-token scales gain about 9.5 dB
# over one dynamic per-tensor scale; the control recovers about 6.5 of it, and the rest comes from fitting each
# ordinary token on its own.
#
# Per-token scales also fit an integer GEMM: a token's scale is constant along the reduction
# axis K, so it multiplies each row's int32 sum once, like a per-channel weight scale.
#
# ## 3. Smoothing: move a loud feature's range into the weights
#
# Features 63 and 267 are loud on ordinary tokens too: their medians there are about 4.6 and 7.7
# times the typical feature's (last row: the median over all features). A per-feature scale would
# fit them, but it changes along K, inside the sum, so it cannot multiply the int32 result.
#
# **SmoothQuant** divides feature `j` by `s_j` and multiplies weight column `j` by `s_j`:
# `(x / s) @ (w * s).T` equals `x @ w.T` up to float rounding. With
#
# ```
# s_j = max|x_j|^alpha / max|w_j|^(1 - alpha)
# ```
#
# alpha sets how much of feature `j`'s range moves into the weights; this lesson uses 0.5, the
# SmoothQuant paper's choice for OPT and BLOOM.
#
# ## 4. Smoothing with one static scale
#
# Int8 weights per output channel; int8 activations with one static per-tensor scale. `s` and that
# scale come from the calibration sentences; the output SQNR of `x @ w.T`, from the evaluation ones.
# The QKV input's loudest features:

# %%
W = models.linear_weights(model)
qkv = torch.cat([W["L0.query"], W["L0.key"], W["L0.value"]])  # one input, one s
cases = [
    ("L0 QKV", calib["L0.query"], evals["L0.query"], qkv),
    ("L0.intermediate", calib["L0.intermediate"], evals["L0.intermediate"], W["L0.intermediate"]),
]
top = calib["L0.query"].abs().amax(0).topk(3)
print(f"QKV input (calibration): loudest features {top.indices.tolist()}, ", end="")
print(f"absmax {[round(v, 1) for v in top.values.tolist()]}")

# %% [markdown]
# Each column of the next table smooths only the features it names (every other `s_j` = 1).
# Given the loudest features above, predict:

# %% tags=["nbval-ignore-output"]
recall.predict("05", "smooth_99")

# %%
controls = activations.smoothing_feature_rows(cases, labels, features=([99], [63, 267], [99, 63]), alpha=0.5)
shown = activations.per_tensor_only(controls)
print_table(shown, {k: "+.1f" for k in shown[0] if "dB" in k})
for name, xc, _, w in cases:  # the static absmax each smoothing leaves, and the factors s_j
    s = activations.smoothing_factors(xc.double(), w.double(), alpha=0.5)
    some = torch.ones_like(s)
    some[[99, 63]] = s[[99, 63]]
    top = [float((xc.double() / f).abs().max()) for f in (some, s)]
    print(f"{name}: static absmax {top[0]:.2f} (99, 63 smoothed), {top[1]:.2f} (every feature), ", end="")
    print(f"{top[0] / top[1]:.2f} times lower; s_j from {float(s.min()):.2f}, median {float(s.median()):.1f}")

# %% [markdown]
# On the QKV input, feature 63 is nearly as loud as the spike. Once the spike is smoothed, 63 sets
# the scale, so smoothing 99 alone does not help. Smoothing 99 and 63 together gains 3.8 dB. On
# FC1's input the spike sets the scale first: smoothing 99 alone gains 7.2 dB, and 99 and 63
# together 10.4.
#
# Smoothing every feature lowers the static absmax, and with it the step, more than smoothing 99
# and 63 does: 1.6 times on QKV (3.11 to 1.92), 1.8 times on FC1's input (7.00 to 3.98). Yet on
# FC1's input it gains less: 9.1 against 10.4 dB; on QKV the two land within 0.3 dB (3.5 and
# 3.8). Why can a lower step gain less? Every `s_j` is above 1. Each smoothed feature's rounding
# error reaches the output through its weight column, grown by `s_j`: at the median 2.0 and 2.4.
# The column grows more than the step shrinks, so the activations' error grows. The weights'
# error shrinks, but wins only part of that back.
#
# ## Summary
#
# * A GELU output is one-sided: a zero point gains about 5.4 dB on it, per-tensor or per-token.
# * An outlier *token* (`[CLS]`): per-token scales, which factor out of the integer GEMM, gain
#   9.5 dB over a dynamic per-tensor scale on FC1's input. About 6.5 of it comes from keeping the
#   `[CLS]` rows out of the others' ruler.
# * Outlier *features* (63, 267), loud on ordinary rows, are SmoothQuant's target; with one static
#   scale, smoothing them alone gains nothing (-0.2 dB).
# * With one static scale, smoothing at alpha 0.5 helps only where it lowers the value that sets
#   that scale. Smoothing 99 and 63 gains 3.8 dB on QKV and 10.4 on FC1's input. Smoothing 99
#   alone gains 7.2 on FC1's input and nothing on QKV (-0.3 dB), where 63 takes over.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("05")

# %%
recall.show("05")

# %% [markdown]
# **Exercise**: `exercises/05_zero_points_and_activations.ipynb` (six tasks).
#
# ## Going deeper
#
# ### A zero point outside the codes, and float minimums
#
# A channel that does not contain 0 would get a zero point outside the codes: for a uint8
# channel in `[-1.70, -0.94]` the formula gives about 570. Widening the range to include 0
# fixes it at the price of a coarser step. llama.cpp's Q4_1 stores a float minimum `m`
# instead (`x = d q + m`): no widening, but 0.0 is not exact in general. At 4 bits on that
# channel:

# %%
from qlesson.teach import examples

neg = examples.calculator_channels()[2]  # a negative-only channel
lo, hi = float(neg.min()), float(neg.max())
d = (hi - lo) / 15  # a Q4_1-style ruler: float minimum, 16 codes across [min, max]
float_min = torch.round((neg - lo) / d) * d + lo
int_zp = ql.fake_quantize(neg, 4, symmetric=False, signed=False)  # range widened to include 0
int_scale = float(ql.quantize(neg, 4, symmetric=False, signed=False).scale)
print(f"zero point without widening, at 8 bits: {(0 - lo / ((hi - lo) / 255)):.0f} (uint8 codes stop at 255)")
print(f"float minimum:      step {d:.4f}, MAE {float((float_min - neg).abs().mean()):.4f}")
print(f"integer zero point: step {int_scale:.4f}, MAE {float((int_zp - neg).abs().mean()):.4f}")

# %% [markdown]
# An integer zero point costs one multiply-add per output of an integer GEMM,
# `sum_k (q_k - z) w_k = sum_k q_k w_k - z sum_k w_k`, with the weight sum computed once.
# Q4_1's dot product stays integer too: its activations are 8-bit blocks (Q8_1) that store
# each block's sum, and the minimum adds `m` times that sum.
#
# ### A zero point on a lopsided input
#
# FC1's input has both signs, but its range is lopsided by the `[CLS]` spike of section 2:

# %%
c = calib["L0.intermediate"]
cls = activations.cls_mask(labels)
fc1 = activations.one_sided_rows(c, xi, labels)
print(f"FC1's input (calibration range [{float(c.min()):+.1f}, {float(c.max()):+.1f}]): ", end="")
print(", ".join(f"gain {r['gain dB']:+.1f} dB {r['int8 scales']}" for r in fc1))
ordinary = activations.one_sided_rows(c, xi[~cls], [t for t in labels if t[2] != "[CLS]"])
print(f"  per-token, ordinary tokens only (no [CLS] rows): gain {ordinary[1]['gain dB']:+.1f} dB")

# %% [markdown]
# The zero point still gains about 4.3 dB with either kind of scale; per-token, the
# pooled gain is pulled up by the `[CLS]` rows; on the other tokens alone it is about 2.4 dB.
#
# ### Per-token scales on ordinary tokens
#
# Section 2's control leaves about 3 of per-token's 9.5 dB to the ordinary tokens, whose loudest
# values differ about fivefold from token to token:

# %%
loudest = xi[~activations.cls_mask(labels)].abs().amax(1)
low, high = (float(loudest.quantile(q)) for q in (0.05, 0.95))
print(f"ordinary tokens' loudest |x|: {low:.1f} to {high:.1f} (5th to 95th percentile)")

# %% [markdown]
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
unit = int(x[cls].amax(0).argmax())  # the GELU unit of the [CLS] spike
top_else = float(x[~cls, unit].max())
print(f"unit {unit}: median {float(x[cls, unit].median()):.1f} on [CLS], ", end="")
print("never above 0 elsewhere" if top_else <= 0 else f"at most {top_else:.1f} elsewhere")

# %% [markdown]
# The 99.99th percentile lands at about 5, far below the `[CLS]` spike of about 25 (hidden
# unit 856, one value on each `[CLS]` token: the last line). It clips the spike, and the
# activations' SQNR drops by 8 dB.
# The MSE-optimal clip, 21.7, cuts the spike of about 25 too, but by far less, and gains about
# 1 dB.
#
# ### Smoothing the spike alone on QKV, one side at a time
#
# Section 4's QKV control smoothed feature 99 only. Here one side is int8, the other float:

# %%
s = activations.smoothing_factors(calib["L0.query"], qkv, alpha=0.5)
only_99 = torch.ones_like(s)
only_99[99] = s[99]
before, after = (activations.one_side_sqnr(calib["L0.query"], evals["L0.query"], qkv, f) for f in (None, only_99))
print(f"feature 99 only (s_99 = {float(s[99]):.1f}), one side int8, the other float: ", end="")
print(f"activations {after['activations'] - before['activations']:+.1f} dB, ", end="")
print(f"weights {before['weights']:.1f} -> {after['weights']:.1f} dB")

# %% [markdown]
# Feature 63 (5.9 against the spike's 6.3) then sets the static scale, so the activations gain
# only 0.2 dB, while weight column 99 grows 3.3 times and costs the weights about 4.4 dB.
#
# ### Every feature against 99 and 63 alone, one side at a time
#
# On FC1's input, section 4's table has smoothing 99 and 63 alone beat smoothing every feature;
# on QKV the two land within 0.3 dB. The same split, one side at a time:

# %%
split = []
for name, xc, xe, w in cases:
    s = activations.smoothing_factors(xc.double(), w.double(), alpha=0.5)
    some = torch.ones_like(s)
    some[[99, 63]] = s[[99, 63]]
    for label, f in (("every feature", s), ("99, 63 only", some)):
        r = activations.one_side_sqnr(xc, xe, w, f)
        top = (xc.double() / f).abs().amax(0)
        split.append({"input": name, "smoothed": label} | {f"int8 {k} dB": v for k, v in r.items()})
        split[-1] |= {"static absmax": float(top.max()), "set by feature": int(top.argmax())}
        split[-1]["median s_j"] = float(s.median())
    if name == "L0 QKV":
        print(f"QKV, 99 and 63 smoothed: largest |x| of 99 {float(top[99]):.1f}, of 63 {float(top[63]):.1f}")
fmt = {"int8 activations dB": ".1f", "int8 weights dB": ".1f", "static absmax": ".2f", "median s_j": ".1f"}
print_table(split, fmt)

# %% [markdown]
# Smoothing every feature helps the weights, but the activations lose about 2 dB on both inputs:
# as section 4 found, a smoothed feature's error, seen through its grown weight column, is the
# static step times `s_j`, and the weight columns grow more than the step shrinks.
#
# ### Smoothing some features, per-token scales too
#
# Section 4's table with dynamic per-token activation scales added:

# %%
print_table(controls, {k: "+.1f" for k in controls[0] if "dB" in k})

# %% [markdown]
# With per-token scales, smoothing 63 and 267 alone gains about 1.0 dB on QKV and 0.6 on FC1's
# input; on FC1's input, feature 99 alone gives 2.7 of every feature's 5.7 dB.
#
# ### How sure the gains are
#
# The intervals below are a paired bootstrap over the 120 evaluation sentence pairs, with `s`
# and the static scale held fixed: "this calibration, other evaluation text"; they do not cover
# the calibration text, which moves the gains more (below). The tables of sections 1 and 4 with
# their intervals, section 4's with per-token scales too:

# %%
rows = activations.smoothing_rows(cases, labels, alphas=(0.5,))
print_table(rows, {"none dB": ".1f"} | {k: "+.2f" for k in rows[0] if "alpha" in k})
print_table(sided, {"symmetric dB": ".1f", "asymmetric dB": ".1f", "gain dB": "+.2f", "95% CI": "+.2f"})

# %% [markdown]
# How much does the calibration text move them? Recalibrate `s` and the static scale on the four
# quarters of the calibration text (6 sentences each), its two halves (12 each) and all of it (24,
# section 4), and score each on the same evaluation text. Static per-tensor scales, alpha 0.5 gains
# over no smoothing; on FC1's input (`L0.intermediate`) also the gain of smoothing feature 99 alone,
# the output SQNR with every feature smoothed and the smoothed calibration absmax (it sets the
# static scale):

# %%
calib_sentence = activations.sentence_of(models.token_labels(model, activations.CALIBRATION_SENTENCES))
parts = [(6, p) for p in range(4)] + [(12, 0), (12, 1), (24, 0)]
recal = activations.recalibration_rows(cases, labels, calib_sentence, parts, feature=99)
recal = [{k: v for k, v in r.items() if k not in ("set by feature", "median s_j")} for r in recal]
fmt = {k: "+.1f" if "gain" in k else ".1f" if "dB" in k else ".2f" for k in recal[0] if k != "calibration"}
print_table(recal, fmt)

# %% [markdown]
# Parts of the same size agree within about 0.2 dB. On FC1's input, smoothing every feature gains
# less as the calibration text grows (about 9.8 dB from 6 sentences, 9.1 from 24), while smoothing
# feature 99 alone stays at about 7.2 dB and the smoothed absmax, which sets the static scale,
# stays at 3.98.
# More text cannot lower that scale; it can only raise the other features' `s_j`, moving more of
# their range into the weights.

# %% [markdown]
# ### Where `1/s` is folded, model by model
#
# In a pre-LN model the division costs nothing at run time: `1/s` is folded into the norm before
# the Linears. In OPT it goes into the LayerNorm's weight and bias, in LLaMA into the RMSNorm's
# weight (it has no bias). Linears fed by one norm share one `s`: query, key and value; LLaMA's
# gate and up. BERT's down-projection reads a GELU output, and `GELU(z) / s` is not
# `GELU(z / s)`, so it has no free fold, and SmoothQuant leaves it unsmoothed; its one-sided
# input is where the zero point helps.
#
# ### Outlier features in large models
#
# In large language models outlier features are reported to break
# W8A8: LLM.int8() (Dettmers et al., 2022) finds systematic outlier features from about 6.7B
# parameters on, and SmoothQuant (Xiao et al., 2022) was built for those models. This course does
# not measure a model of that size.
#
# ### The fold in a post-LN model
#
# MiniLM is a post-LN BERT: section 2's spike and loud features sit in FC1's input, the output of
# the attention block's LayerNorm; the QKV input is the output of the embeddings' LayerNorm.
# The LayerNorm before FC1 also feeds the residual around the FFN.
# Folding `1/s` into it leaves FC1's output unchanged but hands the residual `h / s`. In a
# pre-LN model (LLaMA; OPT, except its 350M size) the norm feeds only the Linears, and the fold
# is exact. The QKV input has the same problem: the embeddings' LayerNorm also feeds the attention
# residual. A post-LN model can still smooth: the division fuses into the kernel that quantizes
# the activation, which reads every value anyway. FC1's `s` folded on MiniLM's layer 0, 24 sentence
# embeddings against the original:

# %%
s = activations.smoothing_factors(calib["L0.intermediate"], W["L0.intermediate"], alpha=0.5)
cos = activations.folded_model_cosine(model, s)
print(f"mean cosine, folded vs original embeddings: {cos:.3f} (1.000 = the same; the residual now carries h / s)")

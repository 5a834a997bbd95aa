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
# Two parts. **Part 1 (sections 1 to 3), zero points**: when a ruler should not be centred on 0.
# **Part 2 (sections 4 to 7), activations**: tensors that arrive at run time, with outliers of
# two kinds, and the three tools for them (scale granularity, calibration, SmoothQuant). The
# bridge: an activation after a ReLU or GELU is the shifted, (nearly) one-sided data Part 1 is
# about, and it is quantized on the fly.
#
# **What you will learn**
# * when an asymmetric range (an integer zero point) beats a symmetric one: shifted,
#   positive-only and negative-only channels;
# * why the zero point must be an integer inside the code range, and what that forces on a
#   channel that never crosses 0;
# * which schemes need an integer zero point, and which store a float minimum instead;
# * why activations are harder than weights: an outlier *token* and outlier *features*,
#   captured from MiniLM with forward hooks, told apart on a token x feature map;
# * per-tensor, per-token and per-feature activation scales, static (calibrated once) or
#   dynamic (per batch), judged on sentences the calibration never saw;
# * SmoothQuant from its formula: which features stay loud, where `1/s` is folded, and why
#   the FFN down-projection is left alone.
#
# **What you need**: notebooks 01 to 03. About 15 minutes.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## Part 1 · Zero points
#
# ## 1. Four channels with different shapes
#
# The per-channel calculator that this course builds on uses four channels: a moderate one,
# a narrow positive one, a negative-only one and a tiny-range one. Their ranges, recomputed:

# %%
import torch

from qlesson.teach import analysis, examples, models, plots

C = examples.calculator_channels()
print_table(analysis.channel_ranges(C), {"values": "+.2f", "min": "+.2f", "max": "+.2f", "range": ".2f"})

# %% [markdown]
# ## 2. Symmetric or asymmetric, per-tensor or per-channel
#
# Mean absolute error of each channel under the four combinations, at 8 and at 4 bits:

# %%
for bits in (8, 4):
    print(f"int{bits}")
    print_table(
        analysis.mode_grid(C, bits), {k: ".4f" for k in ("ch 0 MAE", "ch 1 MAE", "ch 2 MAE", "ch 3 MAE", "mean MAE")}
    )
    print()

# %% [markdown]
# Per-channel helps the tiny-range channel 3 most: its own ruler is more than ten times finer.
# Asymmetric *per-channel* helps the one-sided channels 1 and 2 at int4: their ruler covers
# `[min(x, 0), max(x, 0)]` with all 16 codes instead of spending half of them on the side of 0
# the data never visits. Asymmetric *per-tensor* gains nothing here: the tensor as a whole
# spans both signs, so its range is close to symmetric already.
#
# Channel 3's MAE of exactly 0 with an asymmetric int8 ruler is a coincidence of the numbers: its
# values are multiples of 0.01 and its step is 0.17 / 255 = 1/1500, so every value divided by
# the step is a whole number and lands on a tick; the cell below checks it.

# %%
ch3 = ql.quantize(C[3], 8, symmetric=False, signed=False)
steps = C[3].double() / float(ch3.scale)
on_grid = [round(v, 4) for v in steps.tolist()]
print(f"channel 3: step {float(ch3.scale):.7f} = 1/{1 / float(ch3.scale):.1f}; values / step = {on_grid}")
print(f"all on ticks: {bool(((steps - steps.round()).abs() < 1e-3).all())}; ", end="")
nudged = C[3] + torch.tensor([0.0, 0.0, 0.0004, 0.0, 0.0])
nudged_mae = float((ql.fake_quantize(nudged, 8, symmetric=False, signed=False) - nudged).abs().mean())
print(f"nudge one value by 0.0004 and the MAE is {nudged_mae:.6f}")

# %% [markdown]
# ## 3. The zero point must be an integer inside the code range
#
# The calculator computes `zero_point = round(q_min - r_min / scale)` from each channel's own
# min and max. For a channel that does not contain 0 that number lands outside the codes:

# %%
print_table(
    analysis.zero_point_table(C, bits=8),
    {"min": "+.2f", "max": "+.2f", "scale (own min..max)": ".5f", "scale (range with 0)": ".5f"},
)

# %% [markdown]
# A uint8 zero point of 570 or -401 cannot be stored in the code range, and a zero point that
# is not an integer code cannot represent 0.0 exactly (padding, ReLU zeros, masked values
# must dequantize to exactly 0). The standard fix, used by PyTorch's observers and by
# `ql.quantize`, is to widen the range to include 0 first. The negative-only channel then
# gets zero point 255 and a coarser scale (`1.70 / 255` instead of `0.76 / 255`): exact zeros
# cost it some resolution.

# %%
neg = C[2]
qt = ql.quantize(neg, 8, symmetric=False, signed=False)
with_zero = ql.quantize(torch.tensor([0.0, *neg.tolist()]), 8, symmetric=False, signed=False)
print(
    f"negative-only channel: scale {float(qt.scale):.5f}, zero point {int(qt.zero_point)}, "
    f"codes used {int(qt.q.min())}..{int(qt.q.max())}, 0.0 -> {with_zero.dequantize()[0].item()}"
)
fp_t = ql.footprint(tuple(C.shape), 8, ql.PerTensor(), scale_bytes=4, zero_point_bytes=4)
fp_c = ql.footprint(tuple(C.shape), 8, ql.PerChannel(0), scale_bytes=4, zero_point_bytes=4)
print(
    f"memory (calculator convention, fp32 scale + int32 zero point): per-tensor {fp_t.total_bytes} B, "
    f"per-channel {fp_c.total_bytes} B for {fp_c.payload_bytes} B of codes"
)

# %% [markdown]
# On a tensor this small the metadata is larger than the payload; on a real layer it is a
# rounding error (lesson 04).
#
# **Who needs an integer zero point?** Schemes in which 0.0 must be a code: uint8
# activations in PyTorch's and ONNX Runtime's quantized kernels, for example, where zero
# padding and ReLU zeros must come back exactly 0 and the zero-point correction stays in
# integer arithmetic (lesson 06 shows that correction). An *offset* by itself does not need an
# integer. llama.cpp's Q4_1 stores a float minimum `m` beside the scale (`x = d * q + m`), and
# its dot product still runs on integers: the activations are quantized to 8 bits in blocks of
# 32 (the Q8_1 format, which stores each block's sum beside its scale), the codes are
# multiplied and summed as integers, and the minimum adds `m` times that stored sum. Among the
# K-quants, Q4_K and Q5_K store 6-bit minimums under a super-scale (Q2_K 4-bit ones). A float
# minimum need not widen the range to include 0, so a negative-only channel keeps its fine
# scale; the price is that 0.0 is no longer exact. On the negative-only channel at 4 bits:

# %%
lo, hi = float(neg.min()), float(neg.max())
d = (hi - lo) / 15  # a Q4_1-style ruler: float minimum, 16 codes across [min, max]
float_min = torch.round((neg - lo) / d) * d + lo
int_zp = ql.fake_quantize(neg, 4, symmetric=False, signed=False)  # integer zero point, range widened to 0
int_scale = float(ql.quantize(neg, 4, symmetric=False, signed=False).scale)
print(f"float minimum:      scale {d:.4f}, MAE {float((float_min - neg).abs().mean()):.4f}")
print(f"integer zero point: scale {int_scale:.4f}, MAE {float((int_zp - neg).abs().mean()):.4f}")

# %% [markdown]
# ## Part 2 · Activations
#
# ## 4. Activations: an outlier token and outlier features
#
# Weights are fixed, so their scales can be computed offline. Activations change with every
# input and must be quantized on the fly. Every activation quantizer in sections 5 to 7 is
# **int8, symmetric** (codes -127 to 127, the format of W8A8 kernels such as `torch._int_mm`'s
# inputs); the weights in section 7 are int8 per output channel. Capture the input of every Linear layer of MiniLM
# over the course sentences with forward hooks (one sentence at a time, so no padding):

# %%
model = models.load_minilm()
W = models.linear_weights(model)
acts = models.capture_linear_inputs(model)
rows = []
for name in ("L0.query", "L0.intermediate", "L0.output", "L3.intermediate", "L5.query"):
    a = acts[name].abs().amax(0)
    top = a.topk(3)
    rows.append(
        {
            "layer input": name,
            "tokens x features": "x".join(map(str, acts[name].shape)),
            "top features": top.indices.tolist(),
            "their absmax": [round(v, 1) for v in top.values.tolist()],
            "median feature absmax": float(a.median()),
        }
    )
print_table(rows, {"median feature absmax": ".2f"})

# %%
_ = plots.activation_features(acts["L0.intermediate"], "L0.intermediate input")

# %% [markdown]
# The absmax over tokens hides *where* each outlier sits. Look at every token and feature of
# the first three sentences, and at each loud feature on the `[CLS]` token against all other
# tokens:

# %%
from qlesson.teach import activations

labels = models.token_labels(model)
_ = plots.token_feature_map(acts["L0.intermediate"], labels, "L0.intermediate input")

# %%
profile = activations.feature_profile(acts["L0.intermediate"], labels, [99, 63, 267, 303])
print_table(profile, {k: ".2f" for k in profile[0] if k != "feature"})

# %% [markdown]
# Two different things make a feature loud:
#
# * **Feature 99 is a token outlier.** It reaches about 28 on the `[CLS]` token of every
#   sentence and stays near 0.5 everywhere else: one token in about twelve. It is not loud
#   on every token; it is loud on one. It is there from the start: the embeddings already
#   give `[CLS]` a clear spike in dimension 99 (the input of `L0.query`), and layer 0's
#   attention block raises it further before the FFN runs (the input of `L0.intermediate`).
#   Each layer's input, the `[CLS]` median of feature 99 against the largest |value| on any
#   other token:

# %%
cls = activations.cls_mask(labels)
for name in ("L0.query", "L0.intermediate", "L1.query", "L1.intermediate", "L5.query"):
    x99 = acts[name][:, 99]
    on_cls, others = float(x99[cls].median()), float(x99[~cls].abs().max())
    print(f"{name + ' input':<22} [CLS] median {on_cls:6.2f}, others at most {others:.2f}")

# %% [markdown]
#   The FFN of the early layers writes the spike back into the residual stream: output
#   channel 99 is the loudest weight row of the FFN down-projections in layers 0 to 3 (not in
#   4 and 5, the cell below checks). In layer 0 a single weight, `L0.output[99, 856]`, carries
#   hidden unit 856 (which fires only on `[CLS]`) into residual dimension 99:

# %%
loudest = [int(W[f"L{i}.output"].abs().amax(1).argmax()) for i in range(6)]
print(f"loudest output row of each FFN down-projection, layers 0 to 5: {loudest}")
w_out, x_out = W["L0.output"], acts["L0.output"]
top_row = int(w_out[:, 856].abs().argmax())
print(f"largest |weight| in column 856 of L0.output: row {top_row}, value {float(w_out[top_row, 856]):.2f}")
print(f"hidden unit 856: median {float(x_out[cls, 856].median()):.1f} on [CLS], at most ", end="")
print(f"{float(x_out[~cls, 856].abs().max()):.2f} on the other {int((~cls).sum())} tokens")

# %% [markdown]
# * **Features 63 and 267 are outlier features.** Their largest values sit on ordinary
#   tokens, and their median over the non-`[CLS]` tokens is several times the typical
#   feature's (last row of the table): loud everywhere, not on one token.
#
# The two kinds need different cures: one scale per *token* isolates the `[CLS]` spike; only
# one scale per *feature* (or moving the feature's range into the weights) handles a feature
# that is loud everywhere.
#
# ## 5. Per-tensor, per-token or per-feature activation scales
#
# An activation `[tokens, features]` can get one scale for everything (per-tensor), one per
# token (a row), or one per feature (a column). Measured with and without the `[CLS]` rows:

# %%
for name in ("L0.intermediate", "L5.query"):
    print(name)
    print_table(
        activations.granularity_rows(acts[name], labels, bits=8),
        {"all tokens SQNR dB": ".1f", "without [CLS] SQNR dB": ".1f"},
    )

# %% [markdown]
# On `L0.intermediate`, per-token scales gain about 9 dB over per-tensor. Most of that is the
# `[CLS]` token: drop its rows (one token in twelve) and per-tensor alone gains about 7 dB,
# because the spike of 28 no longer sets everyone's scale. Per-token scales are the cure for
# a token outlier, and they are cheap in a GEMM: constant along the reduction axis K, they
# factor out of the sum like per-channel weight scales (W8A8 uses exactly that pair).
#
# Per-feature scales gain another 8 dB or more, and they barely care about `[CLS]`: they
# answer the *outlier features*. But a per-feature scale varies along K, so it cannot multiply
# the int32 accumulator after an integer GEMM. It can be moved out of the activations
# altogether, into the weights, before the model runs: that is SmoothQuant (section 7).
#
# ## 6. Static or dynamic scales, judged on new text
#
# A per-token scale is **dynamic**: the kernel finds each row's absmax at run time. A
# per-tensor activation scale is often **static**: an observer picks it once from
# calibration data, and the deployed model uses it on text it has never seen. The tables in
# section 5 computed every scale on the very tokens they measured, which flatters per-tensor.
# Calibrate instead on 24 other sentences, evaluate on the lesson's, and compare three
# observers: the calibration min/max, the 99.99th percentile of |x|, and the clip with the
# least squared error on the calibration set:

# %%
calib = models.capture_linear_inputs(model, activations.CALIBRATION_SENTENCES)
print(f"calibration: {calib['L0.query'].shape[0]} tokens; evaluation: {acts['L0.query'].shape[0]} tokens")
for name in ("L0.intermediate", "L0.output"):
    print(name)
    fmt = {"clip": ".2f", "share of eval values clipped": ".5f", "eval SQNR dB": ".1f"}
    print_table(activations.static_scale_rows(calib[name], acts[name], bits=8), fmt)

# %% [markdown]
# How sure are these differences? The SQNR pools every token of the 24 evaluation sentences,
# so the interval comes from a jackknife: leave out one sentence at a time, recompute, and
# see how much the difference moves (`activations.observer_comparisons`; "better" only where
# the 95% interval excludes 0):

# %%
for name in ("L0.intermediate", "L0.output"):
    print(name)
    print_table(activations.observer_comparisons(calib[name], acts[name], labels), {"dB": "+.2f", "95% CI": "+.2f"})

# %% [markdown]
# Calibrated min/max transfers almost exactly here, because MiniLM's outliers are systematic:
# every sentence has a `[CLS]` token and hidden unit 856 fires on each one. On
# `L0.intermediate` the observers differ by a tenth of a dB or less: measurable on these
# sentences, too small to matter. The popular
# percentile observer is the trap: the `[CLS]` spike of `L0.output`'s input is 24 values out
# of more than 400,000, far beyond the 99.99th percentile, so the percentile clips it and the
# layer loses more than half its SQNR in dB. The MSE-optimal clip trims a little off the top
# and gains about a dB on that layer. Outliers that carry meaning must survive calibration.
#
# ## 7. SmoothQuant: move the outlier features into the weights
#
# SmoothQuant divides activation feature `j` by `s_j` and multiplies weight column `j` by
# `s_j`; in exact arithmetic `(x / s) @ (w * s).T == x @ w.T`. With
#
# ```
# s_j = max|x_j|^alpha / max|w_j|^(1 - alpha)
# ```
#
# the smoothed feature's absmax is `max|x_j| / s_j = (max|x_j| * max|w_j|)^(1 - alpha)`: a
# feature stays loud after smoothing when its activation *and* its weight column are large.
# On `L0.output` (alpha 0.5) the loudest smoothed features and the two maxima that set them:

# %%
fmt = {k: ".2f" for k in ("max|x_j|", "max|w_j|", "s_j", "max|x_j / s_j|", "(max|x_j| max|w_j|)^(1-alpha)")}
print_table(activations.smoothed_features(acts["L0.output"], W["L0.output"], alpha=0.5), fmt)
s05 = activations.smoothing_factors(acts["L0.output"], W["L0.output"], alpha=0.5)
q1, q3 = torch.quantile(s05, torch.tensor([0.25, 0.75], dtype=s05.dtype)).tolist()
print(f"s_j over all {s05.numel()} features: median {float(s05.median()):.2f}, middle half {q1:.2f} to {q3:.2f}")
print(f"largest |weight| of the whole layer: {float(W['L0.output'].abs().max()):.2f}")

# %% [markdown]
# Feature 856 shrinks from about 25 to about 14, but only by `s = 1.77`, because its weight
# column holds the layer's largest weight (the 7.9 of section 4). Typical features, whose
# activations are several times their weights, are divided by 2 to 3. The outlier is now
# *relatively louder* than before: that is why alpha 0.5 hurts this layer below.
#
# **Where does `1/s` go?** The division must not cost a pass over the activations at run
# time, so SmoothQuant folds it into the operation that produced them. In a BERT or LLaMA
# block the inputs of the query/key/value projections and of the first FFN layer come
# straight out of a LayerNorm, whose affine weight and bias can absorb `1/s`; the matching
# `s` goes into the Linear's weight columns (one `s` shared by query, key and value, which
# read the same input). Folded on MiniLM's first FFN layer:

# %%
layer0 = model[0].auto_model.encoder.layer[0]
norm, fc1 = layer0.attention.output.LayerNorm, layer0.intermediate.dense
s = activations.smoothing_factors(acts["L0.intermediate"], W["L0.intermediate"], alpha=0.5)
norm_s, (fc1_s,) = activations.fold_into_layernorm(norm, [fc1], s)
h = torch.randn(5, 384, dtype=torch.float64, generator=torch.Generator().manual_seed(0))  # the model is float64
with torch.no_grad():
    same_norm = float((norm_s(h) - norm(h) / s).abs().max())
    same_out = float((fc1_s(norm_s(h)) - fc1(norm(h))).abs().max() / fc1(norm(h)).abs().max())
print(f"folded LayerNorm == LayerNorm / s: max difference {'below 1e-5' if same_norm < 1e-5 else same_norm}")
rel = "below 1e-5 (float rounding)" if same_out < 1e-5 else f"{same_out:.1e}"
print(f"FFN input layer output, folded vs original: max relative difference {rel}")
cosine = activations.folded_model_cosine(model, s)
print(f"whole model, 24 sentence embeddings, folded vs original: mean cosine {cosine:.4f}")

# %% [markdown]
# FC1 sees exactly what it saw before, yet the model changed. MiniLM is a *post-LN* BERT:
# the output of that LayerNorm also feeds the residual connection around the FFN
# (`LayerNorm(FFN(h) + h)`), and the residual now receives `h / s`. The fold is exact for the
# whole model only where the norm feeds nothing but the Linears: in *pre-LN* models such as
# LLaMA and OPT (the models SmoothQuant was made for), the residual stream bypasses the norm.
# In a post-LN model the residual path needs its own `* s`, an extra pass over the
# activations, which is what folding was meant to avoid. The SQNR measurements below treat
# each layer on its own, as if the fold were free.

# %% [markdown]
# `L0.output`, the FFN down-projection, is different: its input comes out of GELU, and
# `GELU(z) / s` is not `GELU(z / s)`, so there is nothing linear to fold `1/s` into.
# SmoothQuant smooths the QKV and FC1 inputs and leaves the down-projection alone. (In LLaMA's
# SwiGLU FFN the down-projection reads `act(gate) * up`, which is linear in `up_proj`'s output,
# so there `1/s` folds into `up_proj`'s rows; AWQ does exactly that.) Measured
# W8A8 (activations per-tensor or per-token, weights per output channel) on the two foldable
# inputs of layer 0, with `L0.output` last as the cautionary case:

# %%
qkv = torch.cat([W["L0.query"], W["L0.key"], W["L0.value"]])
cases = [("L0 QKV", acts["L0.query"], qkv), ("L0.intermediate", acts["L0.intermediate"], W["L0.intermediate"])]
cases.append(("L0.output (not foldable)", acts["L0.output"], W["L0.output"]))
print_table(activations.alpha_rows(cases, alphas=(0.25, 0.5, 0.75)), {"act max/median feature": ".1f"})

# %% [markdown]
# The close calls, with the same leave-one-sentence-out interval (the smoothing factors and
# the dynamic scales are recomputed without the sentence):

# %%
close_calls = [
    ("L0 QKV", "per-tensor", 0.75, 0.5),
    ("L0 QKV", "per-token", 0.75, 0.5),
    ("L0.intermediate", "per-tensor", 0.75, 0.5),
    ("L0.intermediate", "per-token", 0.75, 0.5),
    ("L0.output (not foldable)", "per-tensor", 0.5, None),
    ("L0.output (not foldable)", "per-tensor", 0.75, None),
    ("L0.output (not foldable)", "per-token", 0.5, None),
    ("L0.output (not foldable)", "per-token", 0.75, None),
]
by_name = {name: (x, w) for name, x, w in cases}
print_table(activations.alpha_comparisons(by_name, labels, close_calls), {"dB": "+.2f", "95% CI": "+.2f"})

# %% [markdown]
# On both foldable inputs smoothing helps, most with per-tensor activation scales, where
# alpha 0.75 beats 0.5 by 2 to 5 dB. With per-token scales the choice matters less: on
# `L0.intermediate` 0.75 is better by about a dB, on the QKV input 0.5 and 0.75 tie.
# On `L0.output` alpha 0.5 raises the activations' max/median ratio instead of lowering it
# (feature 856, above) and loses several dB with either kind of scale; alpha 0.75 moves enough
# of the range into the weights to win by about 7 dB with per-tensor scales, and with
# per-token ones it ties with no smoothing at all (an interval of more than a dB each way: these 24
# sentences cannot tell). The best alpha is a
# property of the layer. SmoothQuant itself uses one alpha per model, found by a search on
# calibration data; later tools search it per layer.
#
# ## Summary
#
# * Asymmetric ranges fit shifted data. Where 0.0 must be an exact code (uint8 activations,
#   zero padding) the zero point is an integer code and the range is widened to include 0;
#   formats that need not store 0.0 exactly, such as Q4_1, store a float minimum instead and
#   keep the finer scale (its integer dot product still works, through Q8_1's block sums).
# * Activations have an outlier *token* (`[CLS]`, feature 99) and outlier *features* (63,
#   267). Per-token scales isolate the token; only per-feature treatment handles the features.
# * Static scales must be judged on text the calibration did not see; a percentile observer
#   can clip the one spike that matters.
# * SmoothQuant divides feature `j` by `s_j`; what stays loud is `(max|x_j| max|w_j|)^(1-alpha)`.
#   `1/s` folds into the LayerNorm before QKV and FC1, exactly in a pre-LN model; in a post-LN
#   BERT that LayerNorm also feeds the residual. The down-projection has nothing to fold
#   into. Measure alpha per layer.
#
# **Exercise**: `exercises/05_zero_points_and_activations.ipynb`:
# an asymmetric round trip, per-token scales and SmoothQuant's factors.
#
# ## Pause and recall
#
# 1. When must the zero point be an integer inside `[qmin, qmax]`, and what does Q4_1 do instead?
# 2. A uint8 channel has min -1.70 and max -0.94. What are its scale and zero point after
#    widening the range to include 0?
# 3. Why can per-token activation scales be applied after an int8 GEMM while per-feature
#    scales cannot, and where do per-feature scales go instead?
# 4. What does SmoothQuant change, what stays exactly the same, and which features stay loud?
# 5. Why does a 99.99th-percentile observer hurt `L0.output`?

# %% [markdown]
# Answer the questions above in your head first. Then check yourself on the lesson's recall
# questions, with feedback on every option (in a page without widgets, the list below the
# quiz folds each answer under **Answer**):

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.quiz("05")

# %%
recall.show("05")

# %% [markdown]
# <details><summary>Answers to the questions above</summary>
#
# 1. When 0.0 must map to a stored code exactly (zero padding, ReLU zeros in uint8 activations):
#    then the zero point is a code of the same integer type. Q4_1 stores a float minimum and
#    gives up an exact 0.0; its integer dot product adds the minimum times the activation
#    block's stored sum.
# 2. Range [-1.70, 0]: scale 1.70 / 255 = 0.00667, zero point 0 - round(-1.70 / 0.00667) = 255.
# 3. A per-token scale is constant along the reduction axis, so it multiplies the int32 result
#    once per row; a per-feature scale varies along the reduction axis. It is folded offline:
#    `1/s` into the previous LayerNorm (or Linear), `s` into the weight columns. That is exact
#    when the LayerNorm feeds only Linears (pre-LN models); in a post-LN BERT it also feeds the
#    residual, which then needs its own correction.
# 4. It rescales activation features down and weight columns up by the same `s_j`; the float
#    product `x @ W.T` is unchanged, only what gets rounded changes. A feature stays loud when
#    `max|x_j| * max|w_j|` is large.
# 5. Its outlier, the `[CLS]` spike of hidden unit 856, is 24 values in 400,000: beyond the
#    percentile, so it is clipped, and it carries meaning.
# </details>

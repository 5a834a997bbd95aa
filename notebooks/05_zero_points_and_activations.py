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
# **What you will learn**
# * when an asymmetric range (an integer zero point) beats a symmetric one: shifted,
#   positive-only and negative-only channels;
# * why the zero point must be an integer inside the code range, and what that forces on a
#   channel that never crosses 0;
# * why activations are harder than weights: outlier *features*, captured from MiniLM with
#   forward hooks;
# * per-tensor vs per-token activation scales, and SmoothQuant's idea (move scale from the
#   activations into the weights), measured on one layer.
#
# **What you need**: notebooks 01 to 03. About 15 minutes.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Four channels with different shapes
#
# The per-channel calculator that this course builds on uses four channels: a moderate one,
# a narrow positive one, a negative-only one and a tiny-range one. Their ranges, recomputed:

# %%
import torch

from qlesson.teach import analysis, examples, models, plots, studies

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
# ## 4. Activations: outlier features
#
# Weights are fixed, so their scales can be computed offline. Activations change with every
# input and must be quantized on the fly. Capture the input of every Linear layer of MiniLM
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
# A few **features** (columns) are far larger than the rest, on every token. Feature 99 is
# the same residual-stream dimension that had the loudest *weight* channel in the FFN output
# layers of lesson 03: the network writes a large value there and reads it back.
#
# ## 5. Per-tensor, per-token or per-feature activation scales
#
# An activation `[tokens, features]` can get one scale for everything (per-tensor), one per
# token (a row), or one per feature (a column):

# %%
for name in ("L0.intermediate", "L5.query"):
    print(name)
    print_table(studies.activation_quant_rows(acts[name], bits=8), {"rmse": ".4f", "SQNR dB": ".1f"})

# %% [markdown]
# Per-feature is the most accurate but the least usable: in `y = x @ W.T` the features are
# the reduction axis K, so a per-feature activation scale changes inside the sum and cannot be
# applied after an integer GEMM (lesson 06 makes this precise). Per-token scales are
# constant along K, so they factor out like per-channel weight scales: that is why W8A8
# systems use per-token activations with per-channel weights.
#
# ## 6. SmoothQuant: move the outliers into the weights
#
# SmoothQuant divides each activation feature `j` by `s_j` and multiplies the matching
# weight column by `s_j`. The product is unchanged in exact arithmetic, but the activation
# outliers shrink, and the weights (quantized per output channel) absorb them:
# `s_j = max|x_j|^alpha / max|w_j|^(1 - alpha)`. Measured on MiniLM's `L0.intermediate`
# (W8A8, per-channel weights):

# %%
x, w = acts["L0.intermediate"], W["L0.intermediate"]
y = x @ w.T
s = (x.abs().amax(0) ** 0.5) / (w.abs().amax(0) ** 0.5)
print(f"exact identity (x / s) @ (w * s).T == x @ w.T: {torch.allclose((x / s) @ (w * s).T, y, rtol=1e-4, atol=1e-4)}")
print_table(studies.smoothquant_rows(x, w, alpha=0.5), {"act max/median feature": ".1f", "output SQNR dB": ".2f"})

# %% [markdown]
# Smoothing flattens the activation's features and raises the output SQNR for both
# activation schemes on this layer. It is not free everywhere: on a layer whose outliers sit
# in the weights rather than the activations, the same migration can hurt. `alpha` sets how
# much difficulty moves into the weights:

# %%
rows = []
for name in ("L0.intermediate", "L0.output"):
    for alpha in (None, 0.0, 0.25, 0.5, 0.75):
        r = studies.smoothquant_rows(acts[name], W[name], alpha=alpha or 0.0)[0 if alpha is None else 2]
        rows.append(
            {
                "layer": name,
                "alpha": "no smoothing" if alpha is None else f"{alpha:.2f}",
                "act max/median feature": r["act max/median feature"],
                "output SQNR dB (per-tensor acts)": r["output SQNR dB"],
            }
        )
print_table(rows, {"act max/median feature": ".1f", "output SQNR dB (per-tensor acts)": ".2f"})

# %% [markdown]
# The best alpha differs by layer. On `L0.intermediate`, alpha 0.5 and 0.75 help while alpha 0
# (the weights alone set `s`) hurts. On
# `L0.output`, alpha 0.5 is *worse* than no smoothing at all, because weight columns with tiny
# ranges get small `s_j` and blow their activation features up, while 0.75 helps a lot. This
# is why SmoothQuant picks alpha per model from calibration data, and why a measurement beats
# a rule of thumb.
#
# ## Summary
#
# * Asymmetric ranges fit shifted data; the zero point is an integer code, so the range is
#   widened to include 0 and 0.0 stays exact.
# * A channel that never crosses 0 pays for exact zeros with a coarser scale.
# * Activations have outlier features; per-token scales are the accurate choice that still
#   factors out of the GEMM.
# * SmoothQuant migrates activation outliers into the weights; measure it per layer.
#
# **Exercise**: `exercises/05_zero_points_and_activations.ipynb`:
# the asymmetric zero point of a negative-only channel.
#
# ## Pause and recall
#
# 1. Why must the zero point be an integer inside `[qmin, qmax]`?
# 2. A uint8 channel has min -1.70 and max -0.94. What are its scale and zero point after
#    widening the range to include 0?
# 3. Why are per-token activation scales usable in an int8 GEMM while per-feature scales are not?
# 4. What does SmoothQuant change, and what stays exactly the same?
#
# <details><summary>Answers</summary>
#
# 1. So that 0.0 maps to a stored code exactly, and the zero point can be stored in the same
#    integer type and subtracted in integer arithmetic.
# 2. Range [-1.70, 0]: scale 1.70 / 255 = 0.00667, zero point 0 - round(-1.70 / 0.00667) = 255.
# 3. A per-token scale is constant along the reduction axis, so it multiplies the int32 result
#    once per row; a per-feature scale varies along the reduction axis.
# 4. It rescales activation features down and weight columns up by the same `s_j`; the float
#    product `x @ W.T` is unchanged, only what gets rounded changes.
# </details>

# %% [markdown]
# Check yourself: the lesson's recall questions, with feedback on every option.

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.quiz("05")

# %%
print(recall.text("05"))

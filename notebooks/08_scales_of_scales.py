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
# # 08 · Scales of scales: K-quants, MXFP4, NVFP4, FP8 blocks
#
# One question runs through this lesson: **how many bits does a scale need, and where do its
# bits go?** Lesson 04 stored every group's scale as an fp16 number. Today's formats store
# their scales in 4 to 8 bits (llama.cpp's K-quants, under an fp16 super-scale), as an FP8
# number under an fp32 tensor scale (NVFP4), or as a bare 8-bit exponent that needs no second
# level (MXFP4). This lesson measures what each choice costs, then checks the answer on a
# whole model.
#
# **What you will learn**
# * what scales cost per weight, and why small blocks need a *second level* of scales;
# * how much a block loses when its scale is stored in fp16, as a 4- to 8-bit integer under an
#   fp16 super-scale (K-quants), as E4M3 under an fp32 tensor scale (NVFP4) or as a power of
#   two (E8M0, MX): on lesson 02's two rows and on a real layer; why 4 to 6 bits suffice for
#   4-bit codes, and why 6-bit codes need more when their scales round to the nearest (mostly
#   clipping), as Q6_K's 8-bit sub-scales provide;
# * where FP4's bits go: its uneven grid (0, 0.5, 1, 1.5, 2, 3, 4, 6) and its power-of-two
#   scale, each measured apart; NVFP4's tensor scale; double-quantized int4 scales (QLoRA);
# * which format is best per bit on MiniLM's 36 Linear layers, with intervals on the
#   sentence embeddings;
# * in appendices: a Q4_K super-block and an MXFP4 block decoded byte by byte (A), the four
#   rules for MXFP4's power of two and torchao's checks (B), where gguf's MXFP4 rounds
#   differently from torchao's (C), and FP8 elements under DeepSeek-V3's 128 x 128 blocks (D).
#
# **What you need**: notebooks 02 (the two rows), 03 and 04, and 05 for appendix D. About 45
# minutes for sections 1-5 and the summary, 20 more for the appendices; running it takes a few
# minutes (section 4 quantizes the model 17 ways).

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. What the scales cost
#
# Lesson 04 stored one fp16 scale per group: `16 / g` bits per weight. Small groups fit
# better, but at `g = 16` the scales alone cost a whole bit per weight, a quarter of an int4
# payload. K-quants keep small sub-blocks and make each sub-block's scale *small*: a 6-bit
# (Q4_K) or 8-bit (Q6_K) integer that multiplies one fp16 *super-scale* per 256 weights.
# The microscaling formats shrink the scale instead to 8 bits of exponent (MXFP4) or an FP8
# number (NVFP4); llama.cpp's gguf stores both, NVFP4 in blocks of 64 weights with four E4M3
# scales, as the byte map below draws it. Each row counts every byte of the format's block:

# %%
import numpy as np
import torch

from qlesson.quant import formats, kquants, microscaling
from qlesson.teach import format_plots, format_study, models, widgets

rows = [{"format": f"int4 g{g}, fp16 scales", "code bits": 4, "scale bits / weight": 16 / g} for g in (128, 32, 16)]
for fmt, code_bits in (("Q4_0", 4), ("Q4_K", 4), ("Q6_K", 6), ("MXFP4", 4), ("NVFP4", 4), ("Q8_0", 8)):
    rows.append(
        {"format": fmt, "code bits": code_bits, "scale bits / weight": formats.bits_per_weight(fmt) - code_bits}
    )
for r in rows:
    r["bits per weight"] = r["code bits"] + r["scale bits / weight"]
print_table(rows, {"scale bits / weight": ".4f", "bits per weight": ".4f"})
print(f"NVFP4 also stores one fp32 per tensor: [384, 1536] -> {ql.footprint((384, 1536), 'NVFP4').bits_per_weight:.6f}")

# %%
_ = format_plots.byte_map()

# %% [markdown]
# Q4_K's scale bits: two fp16 super-scales (`d` for the scales, `dmin` for the minimums) and
# eight sub-blocks of 32, each with a 6-bit scale and a 6-bit minimum, all per 256 weights:
# `(2 x 16 + 8 x (6 + 6)) / 256 = 0.5` bits per weight, the same as Q4_0's one fp16 per 32,
# but with a minimum per sub-block (like Q4_1, at 5.0) at no extra cost; section 4 measures
# what that buys. Appendix A decodes one Q4_K super-block and one MXFP4 block byte by byte.
#
# ## 2. How many bits does a scale need?
#
# Keep the codes fixed and change only how each block's scale is stored. The model is plain on
# purpose: symmetric codes (-7 to 7 for 4 bits, -31 to 31 for 6), one scale per block, no
# minimum; not Q4_K's asymmetric codes nor Q6_K's -32 to 31 under signed int8 scales. The
# scales: `fp32` (the ideal `amax / 7`), `fp16`, and a sweep of K-quant-style sub-scales,
# `4-bit x fp16` to `8-bit x fp16` (an integer from 1 to 15, 31, 63 or 127 times an fp16
# super-scale shared by consecutive blocks; Q2_K's sub-scales have 4 bits, Q4_K's 6, Q6_K's 8),
# `E4M3 x fp32` (an FP8 number times one fp32 per tensor, NVFP4's idea), and two powers of two,
# an MX scale byte (E8M0): `E8M0 (nearest)`, the power of two nearest the ideal (in log terms),
# and `E8M0 (up)`, the one at or above it. First lesson 02's two rows, each a block of 4,
# whose 6-bit sub-scales share one fp16 super-scale:

# %%
from qlesson.teach import scale_bits

fmt_sb = {"scale bits / weight": ".3f", "SQNR dB": ".2f", "median scale error": ".4f", "worst scale error": ".4f"}
fmt_sb |= {"top code moves (ticks)": ".2f"}
toy = torch.tensor([[0.05, -0.08, 0.12, -0.15], [2.0, -3.1, 1.7, -2.6]])
toy_formats = ("fp32", "fp16", "6-bit x fp16", "E4M3 x fp32", "E8M0 (nearest)", "E8M0 (up)")
toy_rows = scale_bits.scale_rows(toy, block=4, super_blocks=2, formats=toy_formats)
print_table(toy_rows, fmt_sb)
quiet, loud = toy_rows[2]["scales"]
print(f"6-bit x fp16: d = {loud:.6f} / 63; the quiet row's sub-scale is {quiet / (loud / 63):.2f} steps of d")
ideal_quiet = toy_rows[0]["scales"][0]
for r in toy_rows[-2:]:
    print(f"{r['scale format']}: the quiet row's scale is {r['scales'][0] / ideal_quiet:.3f} x the ideal")

# %% [markdown]
# fp16 and E4M3 store the quiet row's scale within 2%. The 6-bit sub-scale is relative to its
# super-block's loudest block: the loud row takes 63 steps of `d`, the quiet row 3, and a
# 3-step integer can be off by up to a sixth (here it happens to land close). The powers of two
# miss by far more: rounded up, the quiet scale becomes 2**-5 and the row's largest weight lands
# near 5 ticks instead of 7; rounded to the nearest it becomes 2**-6, below the ideal, and the
# largest weight clips at 7 ticks. With only two blocks the toy shows mechanisms, not sizes:
# here `E8M0 (nearest)` scores below `E8M0 (up)`, and on the real layer below it is the
# reverse. Now every block of a real layer, `L0.output` (the FFN output
# of lesson 03's loud rows), in blocks of 32 and of 16, super-blocks of 8:

# %%
model = models.load_minilm()
W = {n: w for n, w in models.linear_weights(model).items() if n != "pooler"}
for block in (32, 16):
    layer_rows = scale_bits.scale_rows(W["L0.output"], block=block, shown_scales=0)
    print(f"L0.output, int4 codes, blocks of {block}:")
    print_table([{k: v for k, v in r.items() if k != "scales"} for r in layer_rows], fmt_sb)
    ref = layer_rows[0]["SQNR dB"]
    print(
        "SQNR against fp32 scales: "
        + ", ".join(f"{r['scale format']} {r['SQNR dB'] - ref:+.2f} dB" for r in layer_rows[1:])
    )

# %% [markdown]
# **How many bits for 4-bit codes: 4 to 6.** A 6-bit sub-scale near the top of its range is off
# by at most half a step, `1 / (2 x 63)`, under 1%. At the block's largest weight, 7 ticks from
# zero, that moves the code by a few hundredths of a tick (the `top code moves` column, at the
# median block), while rounding the weight itself already costs up to half a tick. The
# quantization of the scale drowns in the quantization of the weights: at blocks of 32 the SQNR
# matches fp32 scales at a quarter of the scale bits. From 6 bits down, each bit fewer doubles
# the scale's error (the `median scale error` column; the 8-bit sub-scale runs to 127, a signed
# int8's magnitude, so it has 7 bits of steps and halves the 6-bit error once): 5-bit
# sub-scales lose a few hundredths of a dB, 4-bit ones about a tenth (up to 0.14 dB), and 8-bit
# ones gain at most a hundredth over 6. The worst
# blocks are the quiet ones beside a loud neighbour (a sub-scale of a few steps, or clamped at
# 1: the `worst scale error` column), and the SQNR shows they hold little of the signal. E4M3's
# 3 mantissa bits are off by up to 1/16: a tenth or two of a tick at the median block, up to 0.4
# at the worst, a loss of 0.05 to 0.12 dB. A power of two is off by up to a factor of 2
# rounded up (a block's largest weight may land at 3.5 ticks instead of 7: a bit of resolution
# gone), or by up to `sqrt(2)` either way rounded to the nearest, which clips a block's top
# weights whenever it rounds down. Both cost dB where the integer and FP8 scales cost hundredths
# to tenths: the precision of a scale matters, its range can come from a level above.
#
# **With 6-bit codes the scale needs more.** With codes -31 to 31 a block's largest weight sits
# 31 ticks from zero, and the same relative scale error moves it 4.4 times as far. The same layer
# with 6-bit codes in blocks of 16, super-blocks of 16 (Q6_K's layout, not its codes); the
# last line runs it again without the clamp to -31..31, to show what clipping costs:

# %%
q6_formats = [f for f in scale_bits.FORMATS if f != "fp16"]
q6_rows = scale_bits.scale_rows(W["L0.output"], block=16, bits=6, super_blocks=16, shown_scales=0, formats=q6_formats)
print_table([{k: v for k, v in r.items() if k != "scales"} for r in q6_rows], fmt_sb)
print(
    "SQNR against fp32 scales: "
    + ", ".join(f"{r['scale format']} {r['SQNR dB'] - q6_rows[0]['SQNR dB']:+.2f} dB" for r in q6_rows[1:])
)
q6_free = scale_bits.scale_rows(W["L0.output"], block=16, bits=6, super_blocks=16, formats=q6_formats, clip=False)
print(
    "the same, codes not clamped to -31..31 (a diagnostic): "
    + ", ".join(f"{r['scale format']} {r['SQNR dB'] - q6_free[0]['SQNR dB']:+.2f} dB" for r in q6_free[1:])
)

# %% [markdown]
# Here every bit of the sub-scale shows: 4 bits cost about 1.5 dB, 5 bits half a dB, 6 bits
# under two tenths, 8 bits a few hundredths; E4M3 more than a dB. **Much of that is clipping.**
# Every scale here except `E8M0 (up)` rounds to the nearest, so some blocks get a scale below
# the ideal; where it is more than about 1.6% low (31/31.5), the block's top weight, 31 ticks
# out, rounds past 31 and clips, and coarse sub-scales land that low often. Without the clamp
# (last line; a diagnostic, since such codes do not fit in 6 bits) 4- and 5-bit sub-scales and
# E4M3 cost about 0.3 dB, 6 bits 0.15 and 8 bits 0.04: clipping is most of the loss at 4 bits
# and for E4M3, about half of it at 5 bits, and little at 6 or 8. So with scales rounded to the
# nearest, as here, 6-bit sub-scales cost 6-bit codes about what 4-bit sub-scales cost 4-bit
# codes (under two tenths of a dB), and 8-bit ones a few hundredths: Q6_K's int8 sub-scale per
# 16 weights (0.5625 bits of scales per weight) sits at the safe end. A rule that avoids the
# clipping would change that count, and is not measured here. A power of two rounded to
# the nearest is now the worst choice by far: clipping a block's top weights by up to 29% costs
# far more than the codes' rounding, while rounding up only wastes range.
#
# **Why 8-bit float scales rather than K-quant-style integer sub-scales?** Mostly for the
# hardware. The OCP MX specification defines the block formats for hardware, and Blackwell's
# block-scaled tensor-core MMA takes the block scales as an operand of the matrix instruction
# (a scale per 32 elements along K for the MX formats, per 16 for NVFP4): the block scales are
# applied inside the instruction, not by separate dequantization code, and only NVFP4's fp32
# tensor scale is left for the GEMM's epilogue, once per output. A power-of-two scale is
# applied by adding to an exponent, with no multiplier at all; E4M3 is a number format tensor
# cores already read. K-quant sub-scales are decoded by software kernels (llama.cpp's), which
# can afford an integer multiply. NVFP4 spends 0.25 more bits per weight than MXFP4 on a
# smaller block (16) and a finer scale (E4M3); sections 3 and 4 measure what that buys.
#
# ## 3. Where the bits go: FP4, NVFP4 and scales of scales
#
# ### FP4: the grid and the power-of-two scale
#
# MXFP4 (the OCP Microscaling format) stores 32 weights as 4-bit floats, E2M1: a sign bit, two
# exponent bits and one mantissa bit, so the magnitudes are 0, 0.5, 1, 1.5, 2, 3, 4, 6. One
# E8M0 byte `e` per block is the scale `2**(e - 127)`: a pure power of two, no mantissa.
# Unlike int4's evenly spaced ticks, FP4's ticks crowd near zero:

# %%
_ = format_plots.grids()

# %% [markdown]
# Two things differ from int4 g32, then: the grid and the scale. Section 2's measurement
# separates them: the same scale formats over all 36 Linear layers with int4 codes (-7 to 7,
# ideal scale `amax / 7`) and with FP4 codes (ideal scale `amax / 6`). FP4 codes in blocks of
# 32 under `E8M0 (up)` are exactly MXFP4 with NVIDIA's *rceil* rule (one of four rules for
# the power of two, appendix B), and FP4 codes in blocks of
# 16 under `E4M3 x fp32` are exactly NVFP4 (the last line checks both on one layer):

# %%
grid_fmt = {"int4 -7..7 SQNR dB": ".2f", "FP4 E2M1 SQNR dB": ".2f", "FP4 - int4 dB": "+.2f"}
grid = {}
for block, fmts in ((32, ("fp32", "E8M0 (nearest)", "E8M0 (up)")), (16, ("fp32", "E4M3 x fp32"))):
    grid[block] = {r["scale format"]: r for r in scale_bits.grid_rows(W, block=block, formats=fmts)}
    print(f"all 36 layers, blocks of {block}:")
    print_table(list(grid[block].values()), grid_fmt)
g32, g16 = grid[32], grid[16]
fp4, i4 = "FP4 E2M1 SQNR dB", "int4 -7..7 SQNR dB"
print(f"power of two rounded up, against fp32 scales: int4 {g32['E8M0 (up)'][i4] - g32['fp32'][i4]:+.2f} dB, ", end="")
print(f"FP4 {g32['E8M0 (up)'][fp4] - g32['fp32'][fp4]:+.2f} dB")
wi = W["L0.intermediate"]
same_nv = scale_bits.scale_rows(wi, block=16, codes="E2M1", formats=("E4M3 x fp32",))[0]["SQNR dB"]
same_mx = scale_bits.scale_rows(wi, block=32, codes="E2M1", formats=("E8M0 (up)",))[0]["SQNR dB"]
nv_sqnr = ql.errors(wi, torch.from_numpy(microscaling.quantize_nvfp4(wi.numpy()).values())).sqnr_db
mx_sqnr = ql.errors(wi, torch.from_numpy(microscaling.quantize_mx(wi.numpy(), "rceil").values())).sqnr_db
print(f"L0.intermediate: NVFP4 {nv_sqnr:.4f} = {same_nv:.4f} dB, MXFP4 rceil {mx_sqnr:.4f} = {same_mx:.4f} dB")

# %% [markdown]
# Read the table by rows and by columns:
#
# * **The grid, at the same scale.** Under ideal fp32 scales in blocks of 32, FP4's grid and
#   int4's even ticks are within a tenth of a dB of each other; in blocks of 16, FP4 is half a
#   dB behind. Under scales of NVFP4's format (`E4M3 x fp32`, blocks of 16) int4 codes would
#   gain half a dB (20.99 dB, against Q4_0's 20.93 in section 4): where NVFP4 trails Q4_0 on
#   SQNR, its grid is the cause. Against Q4_K the grid explains only about 0.5 of 1.4 dB; the
#   rest is mostly Q4_K's minimum per 32 weights (+0.93 dB in section 4's steps; Q4_0's 16th
#   level and NVFP4's smaller blocks about cancel).
# * **The scale, on the same grid.** A power of two rounded up costs int4 codes about 3.5 dB
#   and FP4 codes about 1.5 dB (rounded to the nearest, it clips, and both lose about 1.7 dB).
#   On a float grid, halving every value moves it down exactly one
#   binade, where the relative step is the same, so only the values pushed to the bottom ticks
#   (0 and 0.5) lose precision; on int4's even ticks, halving the values halves their precision.
#   Power-of-two scales and float elements belong together, which is MX's design for its FP
#   formats. MXFP4's SQNR deficit against int4 g32 comes from its scale, not its grid.
#
# Which power of two a block takes is itself a choice: the OCP specification's *floor*, or
# torchao's *ceil*, *even* and *rceil*, trade clipping against wasted range. Appendix B
# measures the four rules, on one layer and on the whole model, and checks them against
# torchao.

# %% [markdown]
# ### NVFP4: FP8 block scales under one fp32 tensor scale
#
# NVFP4 halves the block to 16 weights and gives each block a real FP8 E4M3 scale (3 mantissa
# bits, up to 448; unsigned, UE4M3, in gguf's bytes) instead of a power of two. E4M3's normal
# numbers span 2**-6 to 448, and
# below 2**-6 it loses mantissa bits; an fp32 tensor scale `amax / (448 x 6)` above the block
# scales puts the largest block scale at 448 whatever the tensor's magnitude: two levels
# again. 4.5 bits per weight plus 32 bits per tensor. On `L0.intermediate`, with the tensor
# scale and without it (`tensor_scale=1`); torchao's `nvfp4_quantize` gives the same values
# (appendix B):

# %%
w = W["L0.intermediate"]
w_np = w.numpy()
ts = microscaling.nvfp4_tensor_scale(w_np)
nv = microscaling.quantize_nvfp4(w_np, ts)
print(f"tensor scale {ts:.6g}; block 0's E4M3 scale {float(nv.block_scales()[0, 0] / np.float32(ts)):g}")
sqnr = ql.errors(w, torch.from_numpy(nv.values())).sqnr_db
sqnr_1 = ql.errors(w, torch.from_numpy(microscaling.quantize_nvfp4(w_np, 1.0).values())).sqnr_db
ideal_1 = np.abs(w_np).reshape(-1, 16).max(axis=1) / 6  # block scales when the tensor scale is 1
print(f"SQNR {sqnr:.2f} dB; without a tensor scale (tensor_scale=1): {sqnr_1:.2f} dB, {sqnr - sqnr_1:.2f} dB lower;")
print(f"block scales below E4M3's smallest normal 2**-6 then: {100 * float((ideal_1 < 2.0**-6).mean()):.1f}%")

# %% [markdown]
# On this layer the tensor scale buys only about a tenth of a dB: without it a fifth of the
# block scales are subnormal E4M3 numbers (fewer mantissa bits), but those blocks are the quiet
# ones. It matters for tensors whose values sit far from E4M3's window: a layer with weights
# near `1e-3` would put its block scales (`amax / 6`) below even E4M3's smallest subnormal,
# 2**-9, so they would flush to zero without it, and one with values above about 2,700
# (`6 x 448`: activations, gradients) would put them above 448.
#
# FP8 elements, with an exponent of their own, barely care about the block size: appendix D
# measures them under DeepSeek-V3's 128 x 128 blocks, against int4 codes.
#
# ### Scales of int4 scales: double quantization
#
# **Double quantization** applies the same idea to int4 group scales. QLoRA stores NF4 codes
# with one absmax per 64 weights, and quantizes those absmax values to 8-bit floats under one
# fp32 per 256 of them: `(8 + 32 / 256) / 64 = 0.127` bits per weight instead of `32 / 64 = 0.5`
# for fp32 absmax values, or `16 / 64 = 0.25` with the fp16 scales of the table below.
# `ql.double_quantize` keeps int4 codes and stores the scales as 8-bit integers under one fp32
# per 256, the same bits:

# %%
dq = ql.double_quantize(w, 4, group_size=64, scale_bits=8, scale_group=256)
fp16 = ql.footprint(tuple(w.shape), 4, ql.PerGroup(64)).bits_per_weight
sqnr_single = ql.errors(w, ql.fake_quantize(w, 4, granularity=ql.PerGroup(64))).sqnr_db
dq_rows = [
    {"int4 g64": "fp16 scales", "bits per weight": fp16, "SQNR dB": sqnr_single},
    {
        "int4 g64": "8-bit scales, fp32 per 256",
        "bits per weight": dq.bits_per_weight,
        "SQNR dB": ql.errors(w, dq.dequantize()).sqnr_db,
    },
]
print_table(dq_rows, {"bits per weight": ".4f", "SQNR dB": ".2f"})
fp32 = ql.footprint(tuple(w.shape), 4, ql.PerGroup(64), scale_bytes=4).bits_per_weight
print(f"QLoRA's baseline, fp32 scales per 64: {fp32:.4f} bits per weight")
print(f"bytes counted from the arrays: {dq.nbytes * 8 / w.numel():.4f} bits per weight")

# %% [markdown]
# ## 4. Which format is best per bit? All 36 Linear layers
#
# Every encoder Linear weight of MiniLM (the pooler is not used for sentence embeddings)
# stored in each format. The table gives the error over all weights (SQNR; higher is better)
# and the model's sentence embeddings against FP32, as in lesson 03: mean cosine of each
# sentence's embedding (240 sentences), and each sentence's rank correlation of its
# similarities to the others, averaged;
# `small-half rmse` is the error on the smaller half of all weights (`|w|` up to the median).
# `Q4_K` and `Q6_K` are qlesson's one-pass scales, `Q4_K search` and `Q6_K search` llama.cpp's
# (`formats.quantize(x, fmt, search=True)`: for Q4_K it tries 21 scales around the range's for
# each sub-block and refits scale and minimum by weighted least squares; for Q6_K 19 scales
# around `max / 32`, refitting the scale alone; each keeps the best). The plot
# shows SQNR (left) and 1 - mean cosine (right, lower is better) against bits. The K-quants
# need rows that are a multiple of 256. The FFN output's rows are 1536 = 6 x 256 long and fit;
# every other layer's are 384, so those weights are flattened row-major into super-blocks of
# 256: every sub-block still lies inside one row, only an fp16 super-scale spans two rows
# (llama.cpp would fall back to another format for such tensors). Colours mark the format
# families; the line (left panel) joins the best SQNR per bit.

# %%
from qlesson.teach import studies

table, fmt_scores = format_study.format_study(model, W)
shown = [r | {"cosine 95% CI": fmt_scores[r["format"]].row()["cosine 95% CI"]} for r in table]
spec = {"bits per weight": ".4f", "SQNR dB": ".2f", "rmse / rms": ".4f", "mean cosine": ".4f", "rank corr": ".4f"}
print_table(shown, spec | {"small-half rmse": ".5f", "cosine 95% CI": ".4f"})
print(f"weights: {sum(w.numel() for w in W.values()):,} in {len(W)} layers")

# %%
front = format_study.pareto_front(table)
_ = format_plots.format_pareto(table, "SQNR dB", front)

# %%
for y in ("SQNR dB", "mean cosine", "rank corr"):
    note = "" if y == "SQNR dB" else " (on the means; the intervals below show which gaps are ties)"
    print(f"best per bit by {y}{note}: {', '.join(format_study.pareto_front(table, y))}")
for budget in (4.3, 4.55, 7.0):
    fits = [r for r in table if r["bits per weight"] <= budget]
    best = max(fits, key=lambda r: r["SQNR dB"])
    cos_best, cos_ties = studies.best_and_ties(fmt_scores, [r["format"] for r in fits], "cosine")
    tied = f" (tied with {', '.join(cos_ties)}: intervals span 0)" if cos_ties else ""
    print(f"within {budget} bits/weight: best SQNR {best['format']} ({best['SQNR dB']:.2f} dB), ", end="")
    print(f"best cosine {cos_best}{tied}")
by = {r["format"]: r for r in table}
for a, b in (("Q4_K search", "Q4_1"), ("Q4_K", "Q4_1"), ("NVFP4", "Q4_0"), ("NVFP4", "int4 g32")):
    ra, rb = by[a], by[b]
    print(
        f"{a} ({ra['bits per weight']:.2f} bits) vs {b} ({rb['bits per weight']:.2f}): SQNR {ra['SQNR dB']:.2f} vs "
        f"{rb['SQNR dB']:.2f} dB, mean cosine {ra['mean cosine']:.4f} vs {rb['mean cosine']:.4f}"
    )
small = sorted((r["small-half rmse"], r["format"]) for r in table if r["bits per weight"] < 4.6)
print("smallest error on the small half, 4-bit formats:", ", ".join(f"{m} {e:.5f}" for e, m in small[:4]))

# %% [markdown]
# **Where the 4-bit SQNR order comes from.** Sections 2 and 3 measured each change apart; added
# up, they give the table's order. Each line starts from int4 g32 (codes -7 to 7) under ideal
# scales, section 3's table, and makes one change at a time; NVFP4's and MXFP4's steps are all
# section 3's, and where they end can be compared with the table's SQNR, computed separately:

# %%
table_db = {m: r["SQNR dB"] for m, r in by.items()}
start = ("int4 g32 -7..7, fp32 scales", g32["fp32"][i4])
via_nv = [start, ("blocks of 16", g16["fp32"][i4]), ("FP4 grid", g16["fp32"][fp4])]
via_nv.append(("E4M3 x fp32 scales", g16["E4M3 x fp32"][fp4]))
via_mx = [start, ("FP4 grid", g32["fp32"][fp4]), ("E8M0 (up) scales", g32["E8M0 (up)"][fp4])]
via_kq = [start, ("Q4_0's 16th level (extreme on -8, fp16 scales)", table_db["Q4_0"])]
via_kq += [("Q4_K's minimum per 32 (codes 0..15, 6-bit scales)", table_db["Q4_K"])]
via_kq += [("llama.cpp's search", table_db["Q4_K search"])]
for name, steps in (("NVFP4", via_nv), ("MXFP4 rceil", via_mx), ("Q4_K search", via_kq)):
    print(f"{name} ({table_db[name]:.2f} dB in the table): {scale_bits.chain(steps)}")

# %% [markdown]
# SQNR and the small-half error are computed over every weight counted above: they have no
# sampling noise. The embedding measures rest on 240 sentences, so each comparison gets a
# paired interval, as in lesson 03 (pairs of sentences resampled for the cosine, a jackknife
# over pairs for the rank correlation; a tie where it spans 0). With 20 intervals from one run
# (10 pairs, two measures each; the MXFP4 rules are compared in appendix B), a single
# borderline one (`Q4_K - Q4_0` on rank, its lower end at 0) should not be over-read.

# %%
pairs = [("NVFP4", "Q4_K search"), ("NVFP4", "Q4_0"), ("Q4_K search", "Q4_K"), ("Q4_K", "Q4_0")]
pairs += [("NVFP4", "int4 g32"), ("NVFP4", "MXFP4 even"), ("MXFP4 floor", "int4 g32")]
pairs += [("Q6_K search", "Q6_K"), ("Q4_K search", "Q4_1"), ("MXFP4 floor", "Q4_0")]
print_table(
    studies.compare_embeddings(fmt_scores, pairs),
    {"cosine": "+.4f", "cosine 95% CI": "+.4f", "rank corr": "+.4f", "rank 95% CI": "+.4f"},
)

# %% [markdown]
# Read the printed lines, measured in this run, with the table:
#
# * Among the 4-bit formats the ones with a minimum per small block have the highest SQNR.
#   qlesson's one-pass Q4_K about matches Q4_1's SQNR with Q4_0's 4.5 bits, and beats Q4_0 on
#   mean cosine (a tie on rank correlation); with llama.cpp's search for its scales (same
#   layout, different bytes) Q4_K beats Q4_1 outright at fewer bits, the best SQNR within 4.55
#   bits, and both embedding measures rise with it (`Q4_K search - Q4_K`: both intervals above
#   0). The search gains Q6_K less: half a dB, and on the embeddings a gain in the 4th decimal
#   or a tie.
# * NVFP4 loses on SQNR to Q4_0 and Q4_K at equal bits (against Q4_0, its FP4 grid in blocks of
#   16; against Q4_K, mostly Q4_K's per-sub-block minimum), and MXFP4 at 4.25 bits is below them
#   too: about 1.5 dB from its power-of-two scale (section 3) and about 1 dB because Q4_0 puts
#   each block's extreme on -8, a 16th level that int4 -7..7 and FP4 lack (the lines after the
#   table add these steps up). NVFP4 beats int4 g32
#   and MXFP4 *even* is on the SQNR front at 4.25 bits. On the embeddings NVFP4 does better than
#   its SQNR suggests: it clearly beats Q4_0, int4 g32 and MXFP4 *even*, and **ties** with Q4_K
#   search on both measures (both intervals span 0). So "best per bit" on the embeddings is a
#   tie between the two at 4.5 bits, not a win for either. MXFP4 *floor* beats int4 g32 on mean
#   cosine with fewer bits and ties with it on rank correlation, and stays behind Q4_0 on both.
# * FP4's fine ticks near zero give NVFP4 and MXFP4 *floor* and *even* the lowest error on the
#   small half of the weights (last line), but that does not rank the formats as the embeddings
#   do either (MXFP4 *floor*: lower small-half error than Q4_0, lower mean cosine), so why
#   NVFP4 does better on the embeddings is not settled here.
# * Double-quantized int4 g64 sits almost on int4 g128's bits with a better error: cheap
#   scales let groups shrink.
#
# ## 5. Try it: a format, a layer, a block
#
# Pick a format and a layer: the figure shows the first 32 weights of row 0 and what the
# format stores for them, the readout the scales that block uses and the layer's error. A
# static view of the default (Q4_K on `L0.query`) comes first, for pages without widgets.

# %%
st = format_study.first_block(W["L0.query"], "Q4_K")
print(st["scales"])
_ = format_plots.block(st["values"], st["reconstructed"], "L0.query, row 0, weights 0-31 in Q4_K")

# %% tags=["nbval-ignore-output"]
widgets.format_explorer(W)

# %% [markdown]
# ## Summary
#
# * **How many bits does a scale need?** For 4-bit codes, 4 to 6 bits of *precision*: under an
#   fp16 super-scale, 6-bit sub-scales matched fp32 scales within a hundredth of a dB, 5-bit
#   ones within a few hundredths and 4-bit ones (Q2_K's width) within 0.08 to 0.14 dB, about
#   what E4M3's 4 significant bits cost. The *range* can come from a level above: an fp16
#   super-scale per 256 weights, an fp32 scale per tensor. For 6-bit codes, with scales
#   rounded to the nearest as here, 4-, 5- and 6-bit sub-scales cost about 1.5, 0.5 and 0.17
#   dB against fp32 scales, 8-bit ones 0.05 (Q6_K's int8 sub-scales sit at that safe end).
#   Clipping is most of the loss at 4 bits and about half at 5: a scale rounded more than 1.6%
#   low pushes the block's top code past 31 (without the clamp, about 0.3 dB).
# * **A power of two is the expensive scale for integer codes** (about 3.5 dB rounded up at
#   blocks of 32), and a cheaper one for float codes when rounded up (about 1.5 dB on FP4;
#   rounded to the nearest both lose 1.7 dB): a float grid's relative step is the same in
#   every binade. MX's FP formats pair E8M0 scales with float elements (MXINT8 pairs them with
#   int8) for the hardware: applying a power of two is an exponent add.
# * Where the bits go: Q4_K spends Q4_0's 0.5 bits of scales on a 6-bit scale *and* a 6-bit
#   minimum per 32 weights, plus two fp16 super-scales per 256; MXFP4 spends 0.25 on a power
#   of two per 32; NVFP4 0.5 on an E4M3 per 16 (plus one fp32 per tensor). Every format's
#   count is from its bytes, and qlesson's bytes and values match gguf (gguf reads qlesson's
#   Q4_K bytes back on one super-block; MXFP4 bytes are identical on a whole layer; appendices
#   A and C) and torchao (MXFP4 rules, NVFP4; appendix B). Added up over the whole model
#   (section 4), NVFP4 is int4 g32 plus blocks of 16 minus its FP4 grid and E4M3 scales, MXFP4
#   *rceil* int4 g32 (its grid about even) minus its power of two, and Q4_K int4 g32 plus
#   Q4_0's -8 code and a minimum per 32.
# * In the appendices: the power-of-two rule (floor, ceil, even, rceil) trades clipping against
#   wasted range, and *ceil*, which wastes range in every block, is the worst on this model (B).
#   FP8 elements barely care about the block size (a fraction of a dB from per-tensor to
#   128 x 128 on one layer), consistent with DeepSeek-V3's 128 x 128 weight blocks (its report
#   chose them over per-tensor scaling to contain outliers; appendix D); double-quantized
#   int4 scales (QLoRA's idea) cost 0.127 bits per weight instead of 0.25.
# * On the whole model, best per bit is measured: Q4_K with llama.cpp's search has the best
#   SQNR at 4.5 bits, and ties with NVFP4 on the embeddings.
#
# **Exercise**: `exercises/08_scales_of_scales.ipynb`: decode an MXFP4 block by hand, Q4_K's
# bits per weight from its fields, a block's E8M0 exponent.
#
# ## Pause and recall
#
# 1. Why does an fp16 scale per 16 weights cost 1 bit per weight, and how do K-quants avoid it?
# 2. Count Q4_K's bytes per 256 weights from its fields.
# 3. A 6-bit sub-scale is near the top of its range: how far off can it be, and how far does
#    that move a block's largest int4 code?
# 4. Why does a power-of-two scale cost FP4 codes less than int4 codes?
# 5. A block's largest magnitude is 7.0: which E8M0 exponent does the floor rule give, and
#    what becomes of the 7.0?
# 6. Why does NVFP4 need a per-tensor fp32 scale while MXFP4 does not?

# %% [markdown]
# Answer the questions above in your head first. Then check yourself on the lesson's recall
# questions, with feedback on every option (in a page without widgets, the list below the
# quiz folds each answer under **Answer**):

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.quiz("08")

# %%
recall.show("08")

# %% [markdown]
# <details><summary>Answers to the questions above</summary>
#
# 1. 16 bits shared by 16 weights is 1 bit each. K-quants store each sub-block's scale as a
#    4- to 8-bit integer (4 in Q2_K, 6 in Q3_K to Q5_K, 8 in Q6_K) times one fp16 super-scale
#    shared by 256 weights.
# 2. fp16 `d` (2) + fp16 `dmin` (2) + 12 bytes of 6-bit scales and minimums + 128 bytes of
#    4-bit codes = 144 bytes, 144 x 8 / 256 = 4.5 bits per weight.
# 3. Half a step of 63: `1 / 126`, under 1%. The largest code is 7 ticks out, so it moves by
#    at most `7 / 126`, about 0.06 of a tick, against up to half a tick of rounding.
# 4. Dividing by twice the scale moves each value on a float grid down one binade, where the
#    relative step is the same; only values pushed to the bottom ticks lose. int4's ticks are
#    even, so halving the values halves their precision.
# 5. floor(log2 7) = 2, so `e - 127 = 2 - 2 = 0`, e = 127, scale 1. FP4's largest value is 6,
#    so the 7.0 saturates to 6: the floor rule keeps small values fine at the price of
#    clipping the top of the block (ceil would give scale 2 and no clipping).
# 6. E4M3's normal numbers span only 2**-6 to 448, so without a tensor scale the block scales
#    of a tensor with very small or very large values fall outside (subnormal, or beyond 448);
#    the fp32 tensor scale moves the window onto the tensor. E8M0 spans 2**-127 to 2**127 on its
#    own. (On MiniLM's `L0.intermediate` it buys only about a tenth of a dB: section 3.)
# </details>
#
# ## Appendix A: the bytes, by hand
#
# **One Q4_K super-block.** The first 256 weights of row 0 of `L0.output`, quantized by
# `formats.quantize` (qlesson's own one-pass choice of scales, documented in
# `qlesson.quant.kquants`) and read back by the `gguf` package, llama.cpp's Python reference;
# then with `search=True`, llama.cpp's choice of scales (section 4): same layout, different
# bytes, lower error.

# %%
from gguf import GGMLQuantizationType, quants

row = W["L0.output"][0].numpy()
raw = formats.quantize(row[:256], "Q4_K")
f = kquants.fields(raw, "Q4_K")
print(f"{raw.size} bytes; d = {float(f['d'][0]):.6g}, dmin = {float(f['dmin'][0]):.6g} (fp16)")
print(f"6-bit sub-scales sc = {f['sc'][0].tolist()}\n6-bit sub-minimums m = {f['m'][0].tolist()}")
print("super-block bytes 0-3 (fp16 d, fp16 dmin):", " ".join(f"{b:02x}" for b in raw[:4]))
print("bytes 4-15 (sc and m, 6 bits each):", " ".join(f"{b:02x}" for b in raw[4:16]))
same = np.array_equal(formats.dequantize(raw, "Q4_K"), quants.dequantize(raw, GGMLQuantizationType.Q4_K))
print(f"gguf reads these bytes back to exactly our values: {same}")
raw_s = formats.quantize(row[:256], "Q4_K", search=True)
f_s = kquants.fields(raw_s, "Q4_K")
same_s = np.array_equal(formats.dequantize(raw_s, "Q4_K"), quants.dequantize(raw_s, GGMLQuantizationType.Q4_K))
print(f"search=True: {raw_s.size} bytes, sc = {f_s['sc'][0].tolist()}, gguf agrees: {same_s}")
sq = {n: float(np.square(formats.dequantize(r, "Q4_K") - row[:256]).sum()) for n, r in (("one", raw), ("s", raw_s))}
print(f"squared error of these 256 weights: one pass {sq['one']:.4g}, search {sq['s']:.4g}")

# %% [markdown]
# The 12 scale bytes (super-block bytes 4-15) hold sixteen 6-bit numbers: scale bytes 0-3
# keep the low 6 bits of `sc[0..3]`, scale bytes 4-7 those of `m[0..3]`, and the top two bits
# of each of those eight bytes plus the nibbles of scale bytes 8-11 carry `sc[4..7]` and
# `m[4..7]`. Decoding weight 0 by hand,
# `x = d x sc[0] x q - dmin x m[0]`:

# %%
q0 = int(f["q"][0, 0, 0])
by_hand = f["d"][0] * np.float32(f["sc"][0, 0]) * np.float32(q0) - f["dmin"][0] * np.float32(f["m"][0, 0])
print(
    f"q = {q0}: {float(f['d'][0]):.6g} x {int(f['sc'][0, 0])} x {q0} - {float(f['dmin'][0]):.6g} x {int(f['m'][0, 0])}"
)
print(f"= {float(by_hand):.6f}; dequantize gives {float(formats.dequantize(raw, 'Q4_K')[0]):.6f}; weight {row[0]:.6f}")

# %% [markdown]
# **One MXFP4 block.** The OCP specification defines the scale and the 32 elements, not a byte
# layout; this is gguf's (llama.cpp's `block_mxfp4`): the E8M0 byte, then 16 bytes of packed
# codes, 17 in all (torchao keeps the scales in a tensor of their own). The first 32 weights of
# the same row:

# %%
from qlesson.quant.minifloat import E2M1_VALUES, e2m1_value

raw = formats.quantize(row[:32], "MXFP4")
e = int(raw[0])
codes = np.concatenate([raw[1:] & 15, raw[1:] >> 4])  # low nibbles: weights 0-15, high: 16-31
print(f"gguf's block: {raw.size} bytes; scale byte e = {e}: scale 2**({e} - 127) = 2**{e - 127} = {2.0 ** (e - 127):g}")
table = []
for i in range(6):
    c = int(codes[i])
    fp4 = ("-" if c & 8 else "+") + f"{float(E2M1_VALUES[c & 7]):g}"
    table.append(
        {"weight": float(row[i]), "code": f"{c:04b}", "FP4": fp4, "x scale": float(e2m1_value(c) * 2.0 ** (e - 127))}
    )
print_table(table, {"weight": "+.5f", "x scale": "+.5f"})
print(f"dequantize agrees: {np.allclose(formats.dequantize(raw, 'MXFP4')[:6], [r['x scale'] for r in table])}")

# %% [markdown]
# Bit 3 of a code is the sign, bits 0-2 index the grid: `0111` is +6 and `1001` is -0.5.

# %% [markdown]
# ## Appendix B: which power of two? MXFP4's four rules
#
# The OCP specification's rule (*floor*) takes the block's largest magnitude `amax` and sets `e
# - 127 = floor(log2 amax) - 2`, 2 being the exponent of FP4's largest value 6: `amax / scale`
# then lies in [4, 8), and values above 6 x scale saturate to
# 6. torchao (`torchao.prototype.mx_formats`) also offers *ceil* (`ceil(log2 amax) - 2`:
# nothing saturates, small values lose a bit), *even* (round `amax` to FP4's one mantissa bit
# first, then floor) and *rceil* (the smallest power of two with `amax / scale <= 6`, NVIDIA's
# rule, section 3's `E8M0 (up)`). qlesson implements each and is checked here against torchao,
# value for value, on a real layer:

# %%
from qlesson.quant._quiet import quiet_imports

with quiet_imports():  # torchao, the reference for this appendix, logs about CUDA extensions on import
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_dtype, to_mx

floor_e = microscaling.quantize_mx(w.numpy(), "floor").exponents.astype(int)
rule_rows = []
for rule in microscaling.RULES:
    mx = microscaling.quantize_mx(w.numpy(), rule)
    s, d = to_mx(w, torch.float4_e2m1fn_x2, 32, getattr(ScaleCalculationMode, rule.upper()))
    theirs = to_dtype(d, s, torch.float4_e2m1fn_x2, 32, torch.float32).numpy()
    sat = np.abs(w.numpy()).reshape(-1, 32) > 6 * mx.scales().reshape(-1, 1)
    r = {"rule": rule, "blocks above floor %": 100 * float((mx.exponents.astype(int) > floor_e).mean())}
    r |= {"saturated %": 100 * float(sat.mean()), "SQNR dB": ql.errors(w, torch.from_numpy(mx.values())).sqnr_db}
    rule_rows.append(r | {"= torchao": np.array_equal(mx.values(), theirs)})
print_table(rule_rows, {"blocks above floor %": ".1f", "saturated %": ".2f", "SQNR dB": ".2f"})

# %% [markdown]
# *ceil* is one exponent above *floor* wherever `amax` is not a power of two: a block's largest
# magnitude then lies in (2, 4] x scale, and FP4's top values (6, and 3 to 4 in some blocks)
# go unused. Measured on the same layer:

# %%
ceil_mx = microscaling.quantize_mx(w.numpy(), "ceil")
top = np.abs(w.numpy()).reshape(-1, 32).max(axis=1) / ceil_mx.scales().reshape(-1)  # block max / scale
unused = np.log2(6 / top)  # bits of range between the block max and FP4's 6
print(f"ceil: block max / scale from {top.min():.3f} to {top.max():.3f}, so FP4's 6 is never reached;")
print(f"range left unused against the ideal scale amax / 6: {unused.min():.2f} to {unused.max():.2f} bits")

# %% [markdown]
# *rceil* saturates nothing either, yet it does better than *ceil*: it goes up from *floor* only
# where it must (`amax / scale` above 6, in the blocks counted in its first column), not in
# every block. *floor* and *even* saturate a few weights and score highest on this layer:
# clipping a few large weights to 6 x scale costs less than leaving range unused in every block.
# The rule is a choice between clipping and wasted range, not a detail.
#
# **The rules on the whole model.** Section 4's table has a row for each rule: its SQNR over all
# 36 layers, then paired intervals on the embeddings (as in section 4) for *rceil* against
# *ceil* and *floor* against *even*:

# %%
rules = ("MXFP4 floor", "MXFP4 even", "MXFP4 rceil", "MXFP4 ceil")
print("SQNR over all 36 layers: " + ", ".join(f"{m} {table_db[m]:.2f} dB" for m in rules))
print_table(
    studies.compare_embeddings(fmt_scores, [("MXFP4 rceil", "MXFP4 ceil"), ("MXFP4 floor", "MXFP4 even")]),
    {"cosine": "+.4f", "cosine 95% CI": "+.4f", "rank corr": "+.4f", "rank 95% CI": "+.4f"},
)

# %% [markdown]
# On the whole model too, *ceil*, which wastes range in every block, is the worst rule, far
# behind *rceil* on both embedding measures; *floor* and *even*, which clip a few weights, have
# the highest SQNR and tie with each other on the embeddings.

# %% [markdown]
# **NVFP4 against torchao.** Section 3's NVFP4 values on `L0.intermediate` (fp32 tensor scale,
# E4M3 block scales, FP4 codes), checked against torchao's `nvfp4_quantize`, value for value:

# %%
with quiet_imports():
    from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, nvfp4_quantize

s, d = nvfp4_quantize(w, 16, torch.tensor(ts))
theirs = NVFP4Tensor(d, s, 16, torch.float32, torch.tensor(ts)).dequantize(torch.float32).numpy()
print(f"NVFP4 on L0.intermediate, values identical to torchao's: {np.array_equal(nv.values(), theirs)}")

# %% [markdown]
# ## Appendix C: gguf's MXFP4 bytes, tie by tie
#
# Appendix B's rules are torchao's. **gguf's MXFP4 is floor with two twists.** llama.cpp picks
# the nearest FP4 value with ties toward zero (0.75 becomes 0.5, where torchao's
# round-half-to-even gives 1.0), and computes `floor(log2 amax)` in float32, which for some
# `amax` a few ulps below a power of two rounds up to it (e.g. one ulp below 2**-8).
# `formats.quantize(x, "MXFP4")` writes gguf's bytes exactly. On `L0.intermediate` no weight
# lands on a tie the two round apart, and no block maximum sits where float32's `log2` rounds
# up (counted below: the values and the exponents agree everywhere); on a block built to
# include ties the two round apart:

# %%
raw = formats.quantize(w_np, "MXFP4")
print(f"bytes identical to gguf: {np.array_equal(raw, quants.quantize(w_np, GGMLQuantizationType.MXFP4))}")
gguf_vals = formats.dequantize(raw, "MXFP4")
ocp_vals = microscaling.quantize_mx(w_np, "floor").values()
print(f"weights where gguf and torchao floor differ: {int((gguf_vals != ocp_vals).sum())} of {w_np.size}")
print(f"blocks where their exponents differ: {int((raw.reshape(-1, 17)[:, 0] != floor_e.reshape(-1)).sum())}")
ties = np.tile(np.array([6.0, 0.75, 1.75, 3.5, 5.0, -2.5, 0.25, 1.25], dtype=np.float32), 4)  # scale 1
print("ties                         :", ties[:8].tolist())
print("gguf (ties toward zero)      :", formats.dequantize(formats.quantize(ties, "MXFP4"), "MXFP4")[:8].tolist())
print("torchao floor (ties to even):", microscaling.quantize_mx(ties, "floor").values()[:8].tolist())

# %% [markdown]
# ## Appendix D: FP8 elements with 2-D blocks
#
# DeepSeek-V3 stores weights as FP8 E4M3 with one fp32 scale per **128 x 128 block**, and
# quantizes activations per 1 x 128 tile. `ql.PerBlock((128, 128))` is a granularity like the
# others (one `block_size` function), so `ql.quantize` and `ql.quantize_fp8` take it. FP8 on
# `L0.intermediate` under four granularities, then the same granularities with int4 codes, for
# comparison:

# %%
from qlesson.quant.fp8 import granularity_label

grans = (ql.PerTensor(), ql.PerChannel(0), ql.PerGroup(128), ql.PerBlock((128, 128)))
fp8_rows = []
for g in grans:
    t = ql.quantize_fp8(w, g)
    box = ql.block_size(g, w.shape)
    grid_shape = tuple(n // b for n, b in zip(w.shape, box, strict=True))
    s_full = t.scale.reshape(grid_shape).repeat_interleave(box[0], 0).repeat_interleave(box[1], 1)
    by_torch = (w / s_full).to(torch.float8_e4m3fn).view(torch.uint8)  # torch's own E4M3 cast
    sq_err = (t.dequantize() - w).double().square()
    subnormal = ((w / s_full).abs() < 2.0**-6) & (w != 0)  # E4M3's subnormals: below 2**-6 x scale
    r = {"L0.intermediate": granularity_label(g), "scales": t.scale.numel(), "bits per weight": t.bits_per_weight}
    r |= {"SQNR dB": ql.errors(w, t.dequantize()).sqnr_db}
    r |= {"sq. error in subnormals %": 100 * float(sq_err[subnormal].sum() / sq_err.sum())}
    fp8_rows.append(r | {"= torch cast": torch.equal(t.data.view(torch.uint8), by_torch)})
print_table(fp8_rows, {"bits per weight": ".4f", "SQNR dB": ".2f", "sq. error in subnormals %": ".3f"})

# %%
int4_sqnr = [ql.errors(w, ql.fake_quantize(w, 4, granularity=g)).sqnr_db for g in grans]
labels = [r["L0.intermediate"] for r in fp8_rows]
print("int4 codes, same granularities: " + ", ".join(f"{n} {v:.2f} dB" for n, v in zip(labels, int4_sqnr, strict=True)))
fp8_sqnr = [r["SQNR dB"] for r in fp8_rows]
print(f"best minus worst: FP8 {max(fp8_sqnr) - min(fp8_sqnr):.2f} dB, int4 {max(int4_sqnr) - min(int4_sqnr):.2f} dB")

# %% [markdown]
# A float grid's step grows with magnitude: inside each binade `[2**k, 2**(k+1))` E4M3's
# eight steps are `2**(k-3)` apart, so the relative step falls from 1/8 to 1/16 across a
# binade and jumps back at the next power of two. A scale decides where each block's values
# land inside their binades; E4M3's subnormals hold almost none of the squared error (the
# column above). So on this layer the granularity moves FP8's SQNR by a fraction of a dB, and
# int4's by more than 16 dB (the lines below the table).
#
# **DeepSeek-V3's 128 x 128 weight blocks and 1 x 128 activation tiles.** Its technical report
# presents them as *fine-grained* quantization: it went finer than per-tensor scaling because
# activation outliers (lesson 05) make FP8 training sensitive to one scale per tensor. The
# granularity 128 matches where the scales are applied: partial sums are promoted to fp32
# accumulators every 128 along K, and the scales are applied then, not inside the innermost
# loop. Our reading, from the table above (one layer, not the report's argument): FP8 elements
# carry an exponent of their own, so on weights a large block costs them little.

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
# # 08 · Scales of scales: how many bits does a scale need?
#
# **The question**: Small blocks make fp16 scales expensive; how many bits does a block's scale
# really need?
#
# **The answer**: About 4 bits for symmetric int4 codes and 6 for 6-bit codes, as integer steps
# under one fp16 super-scale per 256 weights: under 0.1 dB lost on MiniLM's `L0.output`. MXFP4's
# scale byte costs the same 0.25 bits per weight as a 6-bit sub-scale but holds only a power of two:
# over MiniLM's 36 layers its floor rule costs int4 codes 2.33 dB and FP4 codes 1.32 dB.
#
# **What you will do**: count what scales cost; shrink a block's scale to 4 bits on a MiniLM
# layer, with int4 and 6-bit codes; try a power of two.
#
# **What you need**: lessons 02 to 04; nothing to download.
#
# **Time**: about 17 minutes, plus about 29 for the exercise; *Going deeper*: about 23 more.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.course import recall
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. What the scales cost
#
# Lesson 04 stored one fp16 scale per group: `16 / g` bits per weight. Today's formats store small
# blocks' scales in fewer bits. Each row counts every byte:

# %%
from qlesson.quant import formats
from qlesson.teach import format_plots, models, scale_bits

col = "scale (+ min) bits / weight"
rows = [{"format": f"int4 g{g}, fp16 scales", col: 16 / g} for g in (128, 32, 16)]
rows += [{"format": f, col: formats.bits_per_weight(f) - 4} for f in ("Q4_K", "MXFP4", "NVFP4")]
print_table([r | {"bits per weight": 4 + r[col]} for r in rows], {col: ".4f", "bits per weight": ".4f"})

# %% [markdown]
# * llama.cpp's **K-quants** store each sub-block's scale as a small integer times one fp16
#   **super-scale** per 256 weights. The integer has 6 bits in Q4_K and is a signed int8 in Q6_K.
#   Q4_K's 0.5 bits, the cost of fp16 scales per 32, also buy each block a 6-bit minimum;
# * **MXFP4** (OCP Microscaling) stores one byte per 32 weights, an exponent only;
# * **NVFP4** stores an 8-bit float (E4M3) per 16 weights, under one fp32 scale per tensor.
#
# ## 2. A rounded scale moves the block's largest code
#
# With symmetric codes `-qmax..qmax` (7 for int4), the ideal scale `s = amax / qmax` puts a
# block's largest weight on code `qmax`; a scale off by a fraction `e` moves it about `e x qmax`
# ticks.
#
# In this lesson each block stores an integer `sc = round(s / d)`, from 1 to m. Here `d` is the
# super-block's largest `s` divided by m (63 for 6 bits). Rounding is off by at most half a step.
# Near the loudest block that is `1/(2m)` of the scale. So the top code moves at most `qmax / (2m)`
# ticks: 7/126 = 0.056, the **bound**. Quieter blocks have a smaller `sc`, so a half step is a
# larger part of their scale: over a quarter of the blocks move past the bound (`past bound %`).
#
# Symmetric int4 codes, the loss counted against exact fp32 scales:

# %% tags=["nbval-ignore-output"]
recall.predict("08", "loss_per_bit")

# %%
model = models.load_minilm()
W = {n: w for n, w in models.linear_weights(model).items() if n != "pooler"}
fmt_rule = {k: ".3f" for k in ("bound (ticks)", "median move (ticks)", "SQNR loss dB", "clipping dB")}
fmt_rule |= {"scale bits / weight": ".4f", "past bound %": ".1f"}
shown = ("scale format", "scale bits / weight", "steps m", "bound (ticks)", "past bound %", "SQNR loss dB")
print("L0.output, int4 codes (qmax 7), blocks of 32, super-blocks of 8:")
sub = ("4-bit x fp16", "5-bit x fp16", "6-bit x fp16")
int4_rows = scale_bits.rule_rows(W["L0.output"], 32, 4, 8, formats=("fp16", *sub))
print_table([{k: r[k] for k in shown} for r in int4_rows], fmt_rule)

# %% [markdown]
# Each bit fewer doubles the move and multiplies the loss by 3 to 4: twice the move, up to four
# times the squared error.
#
# ## 3. Same sub-scale, finer codes
#
# Now 6-bit codes (`-31..31`), same layer and blocks.

# %% tags=["nbval-ignore-output"]
recall.predict("08", "six_bit_codes")

# %%
print("L0.output, 6-bit codes (qmax 31), blocks of 32, super-blocks of 8:")
six_rows = scale_bits.rule_rows(W["L0.output"], 32, 6, 8, formats=("fp16", *sub))
six_cols = ("scale format", "bound (ticks)", "SQNR loss dB")
print_table([{k: r[k] for k in six_cols} for r in six_rows], fmt_rule)

# %% [markdown]
# The top code now sits 31 ticks out, not 7, so the same sub-scale moves it about 4.4 times as
# far: 6 bits lose 0.058 dB. On a budget of 0.1 dB for this layer, 4-bit sub-scales suffice for
# int4 codes; 6-bit codes need 6.
#
# ## 4. No mantissa at all: a power-of-two scale
#
# MXFP4's scale byte (E8M0) is a bare power of two. Its codes are FP4 (E2M1), magnitudes 0, 0.5,
# 1, 1.5, 2, 3, 4, 6, crowded near zero where int4's are even:

# %%
_ = format_plots.grids()

# %% [markdown]
# The OCP **floor rule** picks `2**(floor(log2 amax) - 2)`. The 2 is the exponent of 4, FP4's
# largest power of two. Here we apply it to int4's grid too. Two controls share the table.
# Section 2's `6-bit x fp16` sub-scale costs the same 0.25 bits per weight. `E8M0 best of 2` keeps,
# per block, the better of the two powers of two around the ideal scale. All against exact `fp32`
# scales, on all 36 layers in blocks of 32:

# %% tags=["nbval-ignore-output"]
recall.predict("08", "pow2_scale")

# %%
i4, fp4 = "int4 -7..7 SQNR dB", "FP4 E2M1 SQNR dB"
grid_fmt = {i4: ".2f", fp4: ".2f", "FP4 - int4 dB": "+.2f"}
g32_formats = ("fp32", "6-bit x fp16", "E8M0 floor")
g32 = {r["scale format"]: r for r in scale_bits.grid_rows(W, block=32, formats=g32_formats)}
g32["E8M0 best of 2"] = scale_bits.pow2_best_row(W)
print_table(list(g32.values()), grid_fmt)
for name in ("6-bit x fp16", "E8M0 floor", "E8M0 best of 2"):
    lost = {c: g32["fp32"][c] - g32[name][c] for c in (i4, fp4)}
    print(f"{name}: int4 codes lose {lost[i4]:.3f} dB, FP4 codes {lost[fp4]:.3f} dB")

# %% [markdown]
# The floor rule puts a block's largest weight anywhere from 4 to 8 times the scale; the ideal puts
# it on int4's top code, 7. So the top code lands up to 3 ticks below 7, and a weight from 7.5 up
# clips to 7. Even the best power of two per block loses int4 codes 1.55 dB: most of the 2.33 dB
# is the missing steps. The 6-bit sub-scale, with 63 steps, loses 0.003 dB. FP4 codes under the
# floor rule *are* MXFP4; they lose about a dB less. *Going deeper* shows why.
#
# ## Summary
#
# * A `b`-bit unsigned sub-scale has `m = 2**b - 1` steps; rounding it moves a near-loudest block's top
#   code by up to `qmax / (2m)` ticks; on `L0.output` each doubling of the move multiplies the SQNR
#   lost by 3 to 4.
# * Under 0.1 dB on `L0.output`: 4-bit sub-scales for int4 codes, 6-bit for 6-bit codes.
# * A power of two has no steps between powers: the floor rule costs int4 codes 2.33 dB on the 36
#   layers, the best power of two per block 1.55.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("08")

# %%
recall.show("08")

# %% [markdown]
# **Exercise**: `exercises/08_scales_of_scales.ipynb`: sub-scales under a super-scale, the bits a
# quiet block's scale needs, and what a power-of-two scale stores for a block's largest weight.
#
# ## Going deeper
#
# ### One block under the floor rule
#
# Write a block's largest weight as `f x 2**k`, `f` between 1 and 2: the floor rule's scale is
# `2**(k - 2)`. In the first block of row 0, `f` is 1.50 on `L4.output` and 1.97 on
# `L0.intermediate`.

# %% tags=["nbval-ignore-output"]
recall.predict("08", "top_weight")

# %%
import numpy as np
import torch

from qlesson.quant import microscaling
from qlesson.teach import widgets
from qlesson.teach.widgets import format_state

for layer in ("L4.output", "L0.intermediate"):
    print(f"{layer}:", format_state(W, layer, "MXFP4 floor")[0].split("; ")[-1])

# %% [markdown]
# <details><summary>Why?</summary>
#
# The largest weight lands at `4f` units of the scale, where FP4 holds only 4 and 6. `4f` rounds
# to 4 or 6: close near `f` = 1 or 1.5, up to a fifth off in between, and up to a quarter low past
# 1.5, where it clips to 6. So `L4.output` stores it within 1%, and `L0.intermediate` about a
# quarter low. A power of two has no steps in between to absorb the move.
#
# </details>
#
# ### Try it: a format, a layer, a block
#
# The figure shows the first 32 weights of row 0 and what the chosen format stores for them; the
# readout writes the block's largest weight as `f x 2**k` and the value stored. On
# `L0.intermediate`, which formats store that weight within 1%?

# %% tags=["nbval-ignore-output"]
widgets.format_explorer(W, methods=("Q4_0", "Q4_K", "Q6_K", "MXFP4 floor", "NVFP4"))

# %% [markdown]
# <details><summary>Answer</summary>Q4_0, Q4_K and Q6_K, within half a percent; NVFP4 stores it
# 3% low, MXFP4 24% low.</details>

# %% [markdown]
# ### The quieter blocks of a super-block
#
# A typical block rounds its scale by about a quarter step, half the bound's; most blocks are
# quieter than the loudest, which lifts the median move to about 0.6 of the bound. A block far
# below its super-block's loudest is held at `sc = 1`: this course's floor, where
# llama.cpp lets a very quiet block round to 0. Section 2's table again, with the
# 95th-percentile and the worst block (a move is `|amax / s - qmax|` ticks
# under the stored scale `s`):

# %%
tail = ("scale format", "bound (ticks)", "median move (ticks)", "95th-pct move", "worst move", "SQNR loss dB")
e4m3_row = scale_bits.rule_rows(W["L0.output"], 32, 4, 8, formats=("E4M3 x fp32",))
print_table(
    [{k: r[k] for k in tail} for r in int4_rows + e4m3_row],
    fmt_rule | {"95th-pct move": ".3f", "worst move": ".2f"},
)

# %% [markdown]
# Only the last few blocks move by whole ticks: a quiet block, far below its super-block's
# loudest, holds only a few steps of `d`. At the 95th percentile even the 4-bit sub-scale keeps
# the move under half a tick.
#
# The last row, `E4M3 x fp32`, is NVFP4's 8-bit float scale (3 mantissa bits) under one fp32
# scale per tensor (in blocks of 32 here; NVFP4 uses 16). Its relative step, 1/16 to 1/8, does
# not depend on how loud the block is, within E4M3's normal range (2**-6 to 448 times the
# tensor scale), so it keeps even its worst block under half a tick.
#
# ### The super-block layout
#
# A super-block here is 256 consecutive weights of the flattened layer. The six FFN output
# layers (`Lk.output`) have rows of 1536, 6 super-blocks each; the other 30 have rows of 384, so
# on them one super-block in three spans two rows, which real Q4_K cannot store: llama.cpp needs
# rows that are a multiple of 256.
# In this layout, a 4-bit sub-scale on int4 codes on each of the 36 layers:

# %%
loss4 = {n: scale_bits.rule_rows(w, 32, 4, 8, formats=("4-bit x fp16",))[0]["SQNR loss dB"] for n, w in W.items()}
worst = max(loss4, key=loss4.get)
print(f"SQNR lost: {min(loss4.values()):.3f} to {loss4[worst]:.3f} dB per layer, the most on {worst}")

# %% [markdown]
# The size of the super-block moves the median and the loss; the bound, set by the loudest block,
# stays. A 6-bit sub-scale on int4 codes, `L0.output`:

# %%
sb_rows = []
for sb in (4, 8, 12):
    r = scale_bits.rule_rows(W["L0.output"], 32, 4, sb, formats=("6-bit x fp16",))[0]
    r = {k: r[k] for k in ("bound (ticks)", "median move (ticks)", "SQNR loss dB")}
    sb_rows.append({"blocks per super-scale": sb} | r)
print_table(sb_rows, fmt_rule)

# %% [markdown]
# From 4 blocks per super-scale to 8 the median move and the loss grow; from 8 to 12 they change
# little.
#
# ### Q6_K's own layout
#
# Q6_K keeps its 6-bit codes in blocks of 16 under super-blocks of 16, where section 3 used
# blocks of 32 under super-blocks of 8. (Its codes run -32..31, and llama.cpp gives the loudest
# block -128 with a negative `d`: 128 steps; here codes run -31..31 and the int8 sub-scale has
# 127 steps.) One change at a time, 6-bit codes on `L0.output`; `clipping dB` is the part of the
# loss that goes away when codes are not clamped (a scale rounded *down* pushes the top weight
# outward, and past `qmax + 0.5` it clips):

# %%
layout_rows = []
for block, sb in ((32, 8), (16, 8), (32, 16), (16, 16)):
    for r in scale_bits.rule_rows(W["L0.output"], block, 6, sb, formats=("6-bit x fp16", "int8 x fp16")):
        r = {k: r[k] for k in ("scale format", "median move (ticks)", "SQNR loss dB", "clipping dB")}
        layout_rows.append({"blocks": block, "blocks per super-scale": sb} | r)
print_table(layout_rows, fmt_rule)

# %% [markdown]
# Both changes add to the loss. Blocks of 16 make each block's largest weight one in 16 instead
# of one in 32. Sixteen blocks per
# super-scale leave more blocks far below the loudest one. In Q6_K's own layout the 6-bit
# sub-scale loses about a sixth of a dB, and Q6_K's int8 sub-scale about 0.05 dB.
#
# ### Q4_K's and Q5_K's codes over a minimum
#
# Q4_K and Q5_K store codes `0..15` and `0..31` above a per-block minimum, under 6-bit
# sub-scales. Counted from the minimum, the top code sits 15 or 31 ticks out (the minimum's own
# 6-bit rounding adds to the move):

# %%
for qmax, codes in ((15, "Q4_K's 0..15"), (31, "Q5_K's 0..31")):
    print(f"{codes}: 6-bit sub-scale, m = 63: the top code moves up to {qmax / (2 * 63):.3f} tick")

# %% [markdown]
# Q4_K's bound is about int4's at 5 bits (0.113), Q5_K's a quarter tick. A move that size
# (the `6-bit x fp16` row of section 3's table) cost symmetric 6-bit codes 0.058 dB on
# `L0.output`; Q5_K's own codes over a minimum are not measured here.
#
# ### Where each format's scale bits go
#
# The byte map draws one gguf block each of Q4_K, Q6_K, MXFP4 and NVFP4; gguf's NVFP4 block holds
# 64 weights with four E4M3 scales (unsigned, UE4M3):

# %%
_ = format_plots.byte_map()

# %% [markdown]
# Q4_K's scale bits: two fp16 super-scales (`d` for the scales, `dmin` for the minimums) and
# eight sub-blocks of 32, each with a 6-bit scale and a 6-bit minimum, all per 256 weights:
# `(2 x 16 + 8 x (6 + 6)) / 256 = 0.5` bits per weight, as fp16 scales per 32 cost, with a minimum per
# sub-block (like Q4_1, at 5.0) for free. One Q4_K super-block, the first 256 weights of row 0
# of `L0.output`, quantized by `formats.quantize` (qlesson's one-pass choice of scales) and read
# back by the `gguf` package, llama.cpp's Python reference; then with `search=True`, llama.cpp's
# choice of scales: same layout, different bytes, lower error.

# %%
from gguf import GGMLQuantizationType, quants

from qlesson.quant import kquants

row = W["L0.output"][0].numpy()
raw = formats.quantize(row[:256], "Q4_K")
f = kquants.fields(raw, "Q4_K")
print(f"{raw.size} bytes; d = {float(f['d'][0]):.6g}, dmin = {float(f['dmin'][0]):.6g} (fp16)")
print(f"6-bit sub-scales sc = {f['sc'][0].tolist()}\n6-bit minimum codes mn = {f['m'][0].tolist()}")
print("super-block bytes 0-3 (fp16 d, fp16 dmin):", " ".join(f"{b:02x}" for b in raw[:4]))
print("bytes 4-15 (sc and mn, 6 bits each):", " ".join(f"{b:02x}" for b in raw[4:16]))
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
# keep the low 6 bits of `sc[0..3]`, scale bytes 4-7 those of `mn[0..3]`, and the top two bits
# of each of those eight bytes plus the nibbles of scale bytes 8-11 carry `sc[4..7]` and
# `mn[4..7]`. Decoding weight 0 by hand, `x = d x sc[0] x q - dmin x mn[0]`:

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
# codes, 17 in all (torchao keeps the scales in a tensor of their own). Bit 3 of a code is the
# sign, bits 0-2 index FP4's magnitudes: `0111` is +6 and `1001` is -0.5. The first 32 weights
# of the same row:

# %%
from qlesson.quant.minifloat import E2M1_VALUES, e2m1_value

raw = formats.quantize(row[:32], "MXFP4")
e = int(raw[0])
codes = np.concatenate([raw[1:] & 15, raw[1:] >> 4])  # low nibbles: weights 0-15, high: 16-31
print(f"gguf's block: {raw.size} bytes; scale byte e = {e}: scale 2**({e} - 127) = 2**{e - 127} = {2.0 ** (e - 127):g}")
table = []
for i in range(6):
    c = int(codes[i])
    sign_mag = ("-" if c & 8 else "+") + f"{float(E2M1_VALUES[c & 7]):g}"
    table.append(
        {
            "weight": float(row[i]),
            "code": f"{c:04b}",
            "FP4": sign_mag,
            "x scale": float(e2m1_value(c) * 2.0 ** (e - 127)),
        }
    )
print_table(table, {"weight": "+.5f", "x scale": "+.5f"})
print(f"dequantize agrees: {np.allclose(formats.dequantize(raw, 'MXFP4')[:6], [r['x scale'] for r in table])}")

# %% [markdown]
# ### FP4's grid against int4's, and NVFP4 against torchao
#
# Under ideal fp32 scales in blocks of 32 (section 4's table), FP4's grid and int4's even ticks
# are within a tenth of a dB of each other over all 36 layers, so MXFP4's SQNR deficit against
# int4 g32 comes from its power-of-two scale, not its grid. In blocks of 16, FP4 falls half a dB
# behind, with fp32 scales and with NVFP4's `E4M3 x fp32` scales alike. FP4 codes in blocks of
# 16 under `E4M3 x fp32` are exactly NVFP4, and qlesson's NVFP4 gives torchao's
# `nvfp4_quantize` values, value for value:

# %%
from qlesson.quant._quiet import quiet_imports

with quiet_imports():  # torchao logs about CUDA extensions on import
    from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, nvfp4_quantize

g16 = {r["scale format"]: r for r in scale_bits.grid_rows(W, block=16, formats=("fp32", "E4M3 x fp32"))}
print("all 36 layers, blocks of 16:")
print_table(list(g16.values()), grid_fmt)
wi = W["L0.intermediate"]
w, w_np = wi, wi.numpy()
ts = microscaling.nvfp4_tensor_scale(w_np)
nv = microscaling.quantize_nvfp4(w_np, ts)
same_nv = scale_bits.scale_rows(wi, block=16, codes="E2M1", formats=("E4M3 x fp32",))[0]["SQNR dB"]
print(f"L0.intermediate: NVFP4 {ql.errors(w, torch.from_numpy(nv.values())).sqnr_db:.4f} = {same_nv:.4f} dB")
s, d = nvfp4_quantize(w, 16, torch.tensor(ts))
theirs = NVFP4Tensor(d, s, 16, torch.float32, torch.tensor(ts)).dequantize(torch.float32).numpy()
print(f"NVFP4 on L0.intermediate, values identical to torchao's: {np.array_equal(nv.values(), theirs)}")

# %% [markdown]
# ### Why FP4 tolerates a power-of-two scale better
#
# Part of FP4's lead in section 4 is the rule, written for FP4's grid: with the best power of two
# per block and grid, the `FP4 - int4` column shrinks from 1.08 to 0.61 dB. The floor rule leaves a
# block's scale between 1 and 1.5 times FP4's ideal (or below it, and the top clips). To separate
# the grid from the rule, make every block's scale too large, which clips nothing, by a factor
# drawn per block, log-uniform between 1 and 1.5, and set it beside fixed factors, on the same 36
# layers:

# %%
too_large = scale_bits.random_oversized_row(W, up_to=1.5)  # clips nothing: the grid's response alone
over = [*scale_bits.oversized_scale_rows(W, factors=(1.0, 1.2, 1.5)), too_large]
print_table(over, {i4: ".2f", fp4: ".2f"})
print(
    "lost against exact scales: "
    + ", ".join(f"{r['scale']} int4 {over[0][i4] - r[i4]:.2f} dB, FP4 {over[0][fp4] - r[fp4]:.2f} dB" for r in over[1:])
)

# %% [markdown]
# Drawn per block between 1 and 1.5, the too-large scale costs FP4 less than int4: a shrunk value
# lands on average among FP4's finer ticks nearer zero, where on int4's even ticks every step
# grows with the scale. At 1.5 every block's largest weight lands exactly on
# FP4's tick 4, and FP4 loses under a dB; at 1.2 it lands on 5, midway between FP4's 4 and 6,
# and FP4 loses more than int4.
#
# ### Range from a level above: NVFP4's tensor scale
#
# **NVFP4** spends 0.25 bits more than MXFP4: blocks of 16 and an E4M3 scale, whose precision
# *The quieter blocks* measured. E4M3's *range* is narrow: its normal numbers run from 2**-6 to
# 448. So NVFP4 stores one fp32 scale per tensor that puts the largest block scale at 448.
# `L0.intermediate` and the same layer divided by 100, with and without the tensor scale (the
# last column: the blocks whose `amax / 6` falls below 2**-6):

# %%
nv_rows = []
for factor in (1, 100):
    x = wi.numpy() / factor
    wanted = np.abs(x).reshape(-1, 16).max(axis=1) / 6  # each block's E4M3 scale before rounding, no tensor scale
    ts = microscaling.nvfp4_tensor_scale(x)
    for label, back in (
        ("fp32 tensor scale", microscaling.quantize_nvfp4(x, ts).values()),
        ("none, clamped at 2**-6 (torchao)", microscaling.quantize_nvfp4(x, 1.0).values()),
    ):
        r = {"L0.intermediate": f"/ {factor}", "tensor scale": label}
        r |= {"SQNR dB": ql.errors(torch.from_numpy(x), torch.from_numpy(back)).sqnr_db}
        nv_rows.append(r | {"amax / 6 below 2**-6 %": 100 * float((wanted < 2.0**-6).mean())})
print_table(nv_rows, {"SQNR dB": ".2f", "amax / 6 below 2**-6 %": ".1f"})

# %% [markdown]
# With the tensor scale, dividing the layer by 100 changes nothing: the tensor scale absorbs it
# (the control). Without it, every block scale of the smaller layer falls below E4M3's smallest
# normal number, 2**-6. Clamped to 2**-6, the scale is far too large for the block, and its
# weights round to zero. On the layer as stored, a fifth of the blocks are below 2**-6: the clamp
# costs the whole layer about a tenth of a dB, since they are its quietest blocks. The scale
# needed no more precision; it needed a level above it for its range.
#
# llama.cpp's own NVFP4 quantizer (`quantize_row_nvfp4_ref` in `ggml-quants.c`, November 2026)
# stores no tensor scale: it writes each block's `amax / 6` straight into E4M3, rounding a scale
# below 2**-6 to a subnormal or zero. A GGUF carries a tensor scale only when it was converted
# from a checkpoint that has one, such as NVIDIA ModelOpt's `weight_scale_2`.

# %% [markdown]
# ### MXFP4's floor rule against rceil
#
# The OCP specification's rule (*floor*) sets `e - 127 = floor(log2 amax) - 2`: `amax / scale`
# lies in [4, 8), and values above 6 x scale saturate to 6. NVIDIA's *rceil* takes the smallest
# power of two with `amax / scale <=` the grid's top: it never clips but leaves the top code anywhere from half
# the grid's top to its top. Both rules on both grids, all 36 layers, blocks of 32:

# %%
rceil32 = scale_bits.grid_rows(W, block=32, formats=("E8M0 rceil",))[0]
print_table([g32["fp32"], g32["E8M0 floor"], rceil32], grid_fmt)

# %% [markdown]
# rceil never clips, yet it loses more than floor on both grids: here its coarser ticks cost
# more than the top weights floor clips.

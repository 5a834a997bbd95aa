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
# # 11 · Your model in an engine
#
# **The question**: Does the granularity you chose survive a real engine's file format, and
# what does it cost there?
#
# **The answer**: On MiniLM in ONNX Runtime it survives: the engine gives the embeddings that
# qlesson's simulation of the file gives, so the granularities rank as the course measured them.
# The cost lies elsewhere: a float32 table that no Linear plan touches stays in the file, and in
# the stored one-thread CPU timing int4 weights bought no speed.
#
# **What you will do**:
# * pack MiniLM at a per-layer plan with real codes, and find what its file is made of;
# * write it in ONNX Runtime's formats, run it, and check the engine against the simulation;
# * compare the formats' quality and speed inside the engine.
#
# **What you need**: lessons 03 (MiniLM's quality table), 04 (bytes and formats) and 06 (why
# fewer bytes need not run faster); nothing to download. *Going deeper* also runs llama.cpp,
# which needs `make engines` once.
#
# **Time**: about 19 minutes, plus about 30 for the exercise; *Going deeper*: about 13 more.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.course import recall
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. One plan, real codes
#
# Every lesson so far quantized a weight and dequantized it at once. An engine needs the codes
# and scales themselves. `qlesson.quant.packed` stores them for a whole model. A *plan* names a
# scheme for each Linear layer by pattern; the first match wins. Here: int4 with groups of 32
# for the six FFN up-projections, groups of 128 for the rest. `quantize_model` swaps each
# planned `nn.Linear` for a `QuantLinear` that holds 4-bit codes, two to a byte, and one fp16
# scale per group.

# %%
from qlesson.quant import packed
from qlesson.teach import models

model = models.load_minilm()
plan = {"L*.intermediate": "int4-g32", "*": "int4-g128"}
qmodel = packed.quantize_model(model, plan)
layers = packed.quant_layers(qmodel)
print(f"{len(layers)} Linear layers packed; L0.intermediate: {layers['L0.intermediate'][1]}")
print(f"bits per Linear weight, scales included: {packed.plan_bits(model, plan):.4f}")

# %% [markdown]
# Those are the Linear layers. A checkpoint holds every other tensor of the model too, in
# float32 as MiniLM ships them.

# %% tags=["nbval-ignore-output"]
recall.predict("11", "dominates")

# %%
bert = qmodel[0].auto_model
word = bert.embeddings.word_embeddings.weight
parts = {
    "Linear codes (int4)": sum(m.nbytes()["codes"] for _, m in layers.values()),
    "Linear scales (fp16)": sum(m.nbytes()["scales"] for _, m in layers.values()),
    "Linear biases (float32)": sum(4 * m.bias.numel() for _, m in layers.values()),
    f"word-embedding table {list(word.shape)} (float32)": 4 * word.numel(),
    "position and type embeddings, LayerNorms (float32)": 4
    * sum(p.numel() for p in bert.parameters() if p is not word),
}
total = sum(parts.values())
print_table([{"part": k, "MB": v / 1e6, "share": f"{v / total:.1%}"} for k, v in parts.items()], {"MB": ".2f"})
print(f"total {total / 1e6:.2f} MB; the float32 model: {4 * sum(p.numel() for p in model.parameters()) / 1e6:.2f} MB")

# %% [markdown]
# The word-embedding table, 30,522 tokens times 384 values times 4 bytes, is about 47 MB: 88%
# of the file. The plan shrinks the Linear layers from 43 MB to under 6. It leaves the table in
# float32: the table is a lookup, not a matrix product, and a granularity plan covers only the
# products.
#
# ## 2. The same codes in ONNX Runtime
#
# `qlesson.engines.onnx_bert` writes MiniLM as an ONNX graph and stores each Linear weight in
# one of ONNX Runtime's formats:
# * **int8 per-tensor or per-channel**: the int8 codes feed a `DequantizeLinear` node with
#   their scales. This graph's `MatMul` multiplies by the stored transposed weight `[in, out]`,
#   so one scale per output channel means `axis=1` there.
# * **int4 per-group**: ORT's `MatMulNBits`, blocks of 32 or 128 codes along the input axis,
#   one float32 scale per block. Two codes share a byte, neighbours: element `2j` in the low
#   nibble, `2j + 1` in the high one. llama.cpp's Q4_0 (lesson 04) pairs `j` with `j + 16` instead.
#   Without a `zero_points` input the zero point is 8: each nibble holds the code plus 8.
#
# The check: ORT's embeddings of 24 sentences against qlesson's float64 simulation of the
# weights read back from the file. Both are also scored against the float model with lesson
# 03's measure, the mean cosine of each sentence's embedding to its float one.

# %%
import tempfile
from pathlib import Path

from qlesson.engines import common, onnx_bert

tmp_dir = tempfile.TemporaryDirectory(prefix="qlesson11-")  # every file of this lesson; gone with the kernel
tmp = Path(tmp_dir.name)
float_emb = common.reference_embeddings(model)
runs = {}
for scheme in ("int8-tensor", "int8-channel", "int4-g32", "int4-g128"):
    written = onnx_bert.export_minilm(model, tmp / f"{scheme}.onnx", scheme)
    runs[scheme] = (written, onnx_bert.run_onnx(written.path, model), common.reference_embeddings(model, written.deq))
print(f"{len(runs)} files written to a temporary folder and run in ONNX Runtime")

# %%
rows = [
    {
        "format": scheme,
        "file MB": written.size_bytes / 1e6,
        "engine = simulation": common.worst_cosine(engine, simulated) > 1 - 1e-9,
        "simulation vs float": common.cosines(simulated, float_emb).mean(),
        "engine vs float": common.cosines(engine, float_emb).mean(),
    }
    for scheme, (written, engine, simulated) in runs.items()
]
print_table(rows, {"file MB": ".1f", "simulation vs float": ".4f", "engine vs float": ".4f"})

# %% [markdown]
# On every format the engine matches the simulation to a cosine above 1 - 1e-9. ORT computes in
# float32, the simulation in float64, and the match leaves no room for any other difference. So
# on MiniLM the engine ranks these granularities as lessons 02 to 04 did. Per-channel int8 is
# far closer to float than per-tensor: 0.9996 against 0.9716. At int4, groups of 32 beat groups
# of 128: 0.9606 against 0.9394. The files' sizes repeat section 1: the word-embedding table is
# most of every file.

# %%
import matplotlib.pyplot as plt

names = ["float32", *runs]
sizes = [4 * sum(p.numel() for p in model.parameters()) / 1e6] + [w.size_bytes / 1e6 for w, _, _ in runs.values()]
table_mb = 4 * word.numel() / 1e6
fig, ax = plt.subplots(figsize=(7, 2.6))
ax.barh(names, [table_mb] * len(names), color="#bbbbbb", label="word-embedding table (float32)")
ax.barh(names, [s - table_mb for s in sizes], left=table_mb, color="#2a7f62", label="everything else")
ax.invert_yaxis()
ax.set_xlabel("MB")
ax.legend(loc="lower right", fontsize=8)
ax.set_title("MiniLM's ONNX file by format (float32: the parameters' bytes)")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 3. What it costs at run time
#
# Lesson 06 found that fewer weight bytes need not mean a faster matrix product on a CPU. Here
# the whole model runs in ONNX Runtime.

# %% tags=["nbval-ignore-output"]
recall.predict("11", "faster")

# %% [markdown]
# `python -m qlesson.bench engines` timed each format on the 24 sentences with one thread: one
# sentence per call (batch 1), and all 24 in one call (batch 24). Its stored reading, each time
# over fp32's:

# %%
from qlesson.bench import engines as bench_engines

reading = bench_engines.stored_reading()
one, all24 = (bench_engines.table(reading, batch, "onnxruntime") for batch in ("batch 1", "batch 24"))
rows = [
    {"format": a["format"], "batch 1": a["time / fp32"], "batch 24": b["time / fp32"]}
    for a, b in zip(one, all24, strict=True)
    if "default" not in a["format"]
]
print_table(rows, {"batch 1": ".2f", "batch 24": ".2f"})

# %% [markdown]
# The int4 graphs run within about 20% of fp32. Their Linear weights take 5 and 4.25 bits a
# weight, about 16% and 13% of fp32's bytes. In a float32 graph `MatMulNBits` stores float32
# scales. Its kernel unpacks each block and multiplies in float32. Attention, LayerNorm and the
# embedding lookup cost the same in every format.
#
# The int8 graphs are the slowest at batch 1: ORT rewrites them into an 8-bit kernel, which runs
# here in float32 arithmetic, as `run_onnx` asks, at several times fp32's time. Only
# `quantize_dynamic` gains, at 0.62 of fp32's time. It rounds the activations to 8 bits too and
# multiplies integers. At batch 24 no format beats fp32. So in this reading a weight format buys
# a smaller file, not speed. The one gain came from an integer kernel. That kernel computes
# something other than the file's weights times float activations.
#
# ## Summary
#
# * `qlesson.quant.packed` stores a plan's real codes and fp16 scales.
# * MiniLM's int4 file is mostly its float32 word-embedding table, 47 MB or 88%, which a
#   Linear plan does not touch.
# * In ONNX Runtime's QDQ and MatMulNBits formats, qlesson's codes give the simulation's
#   embeddings up to float32 noise, so the granularities rank as in the course's own code.
# * In the stored CPU timing, weight-only int4 runs within about 20% of fp32 and int8 QDQ
#   slower. Only an integer kernel that rounds the activations too gains, at batch 1.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("11")

# %%
recall.show("11")

# %% [markdown]
# **Exercise**: `exercises/11_your_model_in_an_engine.ipynb`: read ONNX Runtime's int4 blocks
# back into a weight, count a checkpoint's bytes from its plan before writing it, and choose a
# plan within 4.5 bits a weight whose mean cosine on held-out sentences beats uniform int4-g32's,
# the finest uniform symmetric plan within that budget, by at least 0.001.

# %% [markdown]
# ## Going deeper
#
# ### The packed bytes are lesson 04's footprint
#
# The packed layers of section 1 hold exactly what lesson 04's footprint counts from the
# shapes alone:

# %%
by_scheme: dict[str, list] = {}
for _, layer in layers.values():
    by_scheme.setdefault(str(layer.scheme), []).append((layer.out_features, layer.in_features))
counted = sum(
    ql.total_footprint(shapes, 4, ql.PerGroup(int(name.split("-g")[1]))).total_bytes
    for name, shapes in by_scheme.items()
)
stored = sum(m.nbytes()["codes"] + m.nbytes()["scales"] for _, m in layers.values())
print(f"stored codes + scales: {stored:,} bytes; lesson 04's footprint: {counted:,} bytes")

# %% [markdown]
# ### What the engine files hold, and the embedding table
#
# The ONNX and GGUF files keep the word-embedding table, the LayerNorms and the biases in
# float32, as the checkpoint does; the pooler is left out, since the sentence embedding is a
# mean over the tokens and never uses it. llama.cpp's own `llama-quantize` tool quantizes the
# token-embedding table too, and ORT's `quantize_dynamic` by default also quantizes the
# `Gather` that reads it, to int8. In Q4_0 the table would take:

# %%
table_q4_0 = ql.footprint(tuple(word.shape), "Q4_0").total_bytes
print(f"word-embedding table: {4 * word.numel() / 1e6:.2f} MB float32, {table_q4_0 / 1e6:.2f} MB in Q4_0")

# %% [markdown]
# A lookup reads one row per token, so its quantization error reaches the model as an input
# error, not through a matrix product: a question of its own, which this course does not
# measure.
#
# ### The whole timing reading
#
# Section 3 printed ONNX Runtime's ratios. The stored reading holds more: the medians and their
# spreads, ORT's default setting for the int8 kernel (the `acc 4` row), and llama.cpp's formats.

# %%
print(bench_engines.format_reading(reading))

# %% [markdown]
# ORT's default for the int8 kernel rounds the activations to int8 too: it ties fp32 at batch 1
# and is the slowest at batch 24. llama.cpp's formats also round the activations, to Q8_0 blocks
# (Q8_K, blocks of 256, for the Q4_K layers), and take 0.66 to 0.72 of fp32's time at batch 1;
# at batch 24 they tie it.
#
# `python -m qlesson.bench engines --store` writes this reading
# (`notebooks/results/engines_cpu.json`), with the machine, its load and the library's
# version. The formats run in interleaved rounds, so a change of load hits them alike; on a
# busy machine the spreads are wide, so re-measure on a quiet one before comparing ratios
# closer than the spreads. Batch 1 runs 24 calls of one sentence each, batch 24 one call.
#
# ### ORT's accuracy level, and its own int8 quantizer
#
# ONNX Runtime's graph optimizer turns a `DequantizeLinear` on an int8 weight followed by
# `MatMul` into its 8-bit `MatMulNBits` kernel. The session option
# `session.qdq_matmulnbits_accuracy_level` decides how that kernel computes: ORT's default, 4,
# also quantizes the activations to int8 and multiplies integers, which is faster at batch 1
# and is another computation than the file's weights times float activations.
# `qlesson.engines.onnx_bert.session` sets level 1, float32 arithmetic, so that the engine
# computes what the simulation computes; `run_onnx(..., accuracy_level=None)` keeps ORT's
# default. ORT's `quantize_dynamic` (int8 weights, per-tensor or per-channel) picks the same
# weight codes and scales as qlesson's `int8-tensor` and `int8-channel` (both symmetric over
# [-127, 127], round half to even; `onnx_ort.compare_block` with a `dynamic_path` shows it), and
# it too quantizes the activations at run time.
#
# ### ORT's own int4 quantizer
#
# `MatMulNBits` without a `zero_points` input takes 8 as the zero point, so section 2's files
# store qlesson's codes -7..7 as 1..15. On the first block of `L0.query`, ORT's int4 quantizer
# against qlesson's codes (`qlesson.engines.onnx_ort`):

# %%
from qlesson.engines import onnx_ort

for scheme in ("int4-g32", "int4-g32-asym"):
    c = onnx_ort.compare_block(model, "L0.query", scheme)
    print(f"{scheme}: same codes on {c.equal_codes_fraction:.0%} of the layer; {c.note}")
    print(f"  ORT     {c.ort_codes[:10]} scale {c.ort_scale:.5f}, zero point {c.ort_zero_point}")
    print(f"  qlesson {c.qlesson_codes[:10]} scale {c.qlesson_scale:.5f}, zero point {c.qlesson_zero_point}")

# %% [markdown]
# Asymmetric, the two agree code for code. Symmetric, they differ by convention, not by
# error: ORT uses all 16 codes, with the value of largest magnitude landing exactly on -8
# (llama.cpp's Q4_0 rule), where qlesson keeps the course's [-7, 7]. Either file is honest
# about its own codes. ORT's quantizers pick other codes for the same weights, so only the
# simulation of the file you run predicts the engine.
#
# ### compressed-tensors
#
# `qlesson.engines.ct_export` writes the same codes as a compressed-tensors `pack-quantized`
# checkpoint (the format llm-compressor writes for vLLM), and transformers loads it on the CPU,
# dequantizing as it loads (its int4 kernels need a GPU). The same check as section 2:

# %%
from qlesson.engines import ct_export

for scheme in ("int4-g128", "int8-channel"):
    written = ct_export.export_ct(model, tmp / f"ct-{scheme}", scheme)
    engine = ct_export.ct_embeddings(model, written.folder)
    simulated = common.reference_embeddings(model, written.deq)
    print(
        f"{scheme}: {written.size_bytes / 1e6:.1f} MB, engine = simulation: "
        f"{common.worst_cosine(engine, simulated) > 1 - 1e-9}, "
        f"vs float {common.cosines(engine, float_emb).mean():.4f}"
    )
group = ct_export.compare_group(models.linear_weights(model)["L0.query"].float())
print(f"its own int4 quantizer on L0.query's first group: scale x {1 / group['scale_ratio']:.4f} of qlesson's,")
print(f"{group['codes_differ']} of 128 codes differ")

# %% [markdown]
# Its own quantizer divides the largest |value| by 7.5 and uses codes -8 to 7; qlesson's
# codes, -7 to 7, fit the format, so the file holds them as they are.
#
# ### The same check in llama.cpp
#
# `qlesson.engines.gguf_bert` writes MiniLM as llama.cpp's BERT GGUF file with the Linear
# weights in qlesson's own Q8_0 and Q4_0 bytes (lesson 04: blocks of 32 with an fp16 scale),
# and runs it through llama-cpp-python. An F32 file is the control: the same engine with the
# weights unquantized. That package compiles llama.cpp from source, so it is not part of the
# set-up: run `make engines` once (5 to 13 minutes on 2 cores; it needs cmake and a C++
# compiler). Without it the next cell stops with a message that says so; nothing above needs it.

# %%
from qlesson.engines import gguf_bert

rows = [gguf_bert.losses(model, fmt, tmp, float_emb) for fmt in ("F32", "Q8_0", "Q4_0")]
print("1 - mean cosine to the float model (0: the float model's embeddings)")
num = {"file MB": ".1f", "simulation: weights": ".1e", "+ activations to Q8_0": ".1e", "engine": ".1e"}
print_table(rows, {**num, "engine / weights": ".1f"})

# %% [markdown]
# With float weights (F32) the engine lands on the float model. With Q8_0 or Q4_0 weights it
# loses more than the weight-only simulation: on a CPU, llama.cpp rounds each *activation* row
# to Q8_0 blocks too and multiplies integers. Put that rounding into the simulation (the
# fourth column, `round_activations=True`) and it comes within a few percent of the engine's
# loss. At Q4_0 the activations' rounding is small next to the weights' own error; at Q8_0,
# whose weights lose little, it is most of what the engine loses. Q4_0 is groups of 32 with all
# 16 codes (lesson 04 measured what that 16th code buys).
#
# ### Q4_K in llama.cpp
#
# Q4_K packs super-blocks of 256 weights (lesson 08), so it fits only rows whose length is a
# multiple of 256: MiniLM's FFN down-projections (1536 inputs). `gguf_bert.plan_for("Q4_K")`
# writes those in Q4_K and the 384-wide layers in Q4_0. llama.cpp's own quantizer falls back
# too, but to Q5_0, which qlesson does not write (Q4_0 keeps 4.5 bits). Run it as the cell
# above runs Q8_0 and Q4_0.
#
# ### The lesson's files
#
# Every file this page wrote sits in one temporary folder, removed when the kernel stops, or now:

# %%
tmp_dir.cleanup()
print(f"removed: {not tmp.exists()}")

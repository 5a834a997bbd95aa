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
# # 06 · What dequantization costs inside a matrix multiply
#
# **The question**: where does a weight's scale go inside a matrix multiply, and what does
# dequantizing cost?
#
# **The answer**: a per-channel (or per-tensor) scale is constant along the reduction axis, so
# it multiplies each output once after the product, while a per-group scale must act inside
# the reduction. Compact weights save time only when the kernel reads the codes directly;
# dequantizing the whole weight to a full-precision copy before the product is slower than
# not quantizing at all, at small batch.
#
# **What you will do**
# * follow each scale through `y = x @ W.T` (per-channel, per-input-channel, per-group, W8A8,
#   zero points);
# * time fp32, bf16, int8 and int4 products side by side on this CPU, and place them on a
#   roofline built from this machine's measured peak and bandwidth.
#
# **What you need**: lessons 02 to 05.
# **Time**: about 60 minutes, plus about 15 for the exercise.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Where can the scale go?
#
# A Linear layer computes `y = x @ W.T` with `x [M, K]` and `W [N, K]`; K is the reduction
# axis. With one scale per output channel, `W[n, k] = s[n] * q[n, k]`, and
#
# ```
# y[m, n] = sum_k x[m, k] * s[n] * q[n, k] = s[n] * sum_k x[m, k] * q[n, k]
# ```
#
# `s[n]` does not depend on k, so it leaves the sum: multiply on the codes, then scale each
# output column once. That is M x N multiplies per call instead of N x K to dequantize the
# weight, and no dequantized weight is written to memory. Per-tensor is the special case of
# one scale for every column.

# %%
import torch

from qlesson.quant import gemm
from qlesson.teach import plots

x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
q = torch.tensor([[1, -2, 3, 0], [2, 2, -1, 1]], dtype=torch.int8)
s = torch.tensor([0.5, 0.25])
print("x @ q.T          =", (x @ q.float().T).tolist(), " (integer codes only)")
print("then * s         =", gemm.scale_after_gemm(x, q, s).tolist())
print("dequantize first =", gemm.dequant_then_gemm(x, q, s).tolist())

# %% [markdown]
# Now give the same codes one scale per group of 2 along K, `s_group[n, k // 2]`.

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.predict("06", "group_after")

# %%
s_group = torch.tensor([[0.5, 1.0], [0.25, 2.0]])  # groups of 2 along K: the scale changes inside the sum
deq = (q.float().reshape(2, 2, 2) * s_group[..., None]).reshape(2, 4)
print("dequantize first              =", (x @ deq.T).tolist())
print("one tile of codes at a time   =", gemm.tile_dequant_gemm(x, q, s_group, 2).tolist())
print("wrong: row's mean scale after =", gemm.scale_after_gemm(x, q, s_group.mean(1)).tolist())

# %% [markdown]
# A group scale changes with k, so no single number per row can stand for it after the sum.
# Fused weight-only kernels do what the middle line does (`gemm.tile_dequant_gemm`, ten lines):
# walk K one group at a time, load that tile of codes, scale it in registers, and multiply it
# at once. The whole dequantized weight never exists in memory.
#
# A scale per *input* channel, `W[n, k] = s_in[k] * q[n, k]`, also varies along k, yet it has a
# place outside the weight: it multiplies feature k of every token, so it can move onto the
# activations, `x @ (q * s_in).T == (x * s_in) @ q.T`, or be folded offline into the operation
# that produced `x` (a LayerNorm, as lesson 05 folded SmoothQuant's factors). That is how AWQ
# and SmoothQuant apply their scales.

# %%
s_in = torch.tensor([0.5, 2.0, 1.0, 4.0])
print("weight scaled per input channel =", (x @ (q.float() * s_in).T).tolist())
print("activations scaled instead      =", gemm.fold_input_scale(x, q, s_in).tolist())

# %% [markdown]
# So a scale lives in one of three places: **after** the GEMM (output channel), **before** it
# on the activations (input channel), or **inside** the reduction, tile by tile (group).
#
# ## 2. W8A8: two sets of scales, one rank-1 rescale
#
# Quantize the activations too: one scale per token `s_x[m]` (constant along K, lesson 05)
# and one per output channel `s_w[n]`. The int8 x int8 product accumulates in int32, and
#
# ```
# y[m, n] = s_x[m] * s_w[n] * acc[m, n],   acc = q_x @ q_w.T   (int32)
# ```
#
# The rescale is the outer product `s_x s_w^T`: a rank-1 matrix applied elementwise.

# %%
xs = torch.tensor([[0.5, -1.0, 2.0, 0.25], [10.0, 4.0, -6.0, 2.0]])
qw = ql.quantize(torch.tensor([[0.3, -0.1, 0.2, 0.05], [-1.0, 0.5, 0.25, 0.75]]), 8, granularity=ql.PerChannel(0))
y, acc = gemm.w8a8(xs, qw.q, qw.scale)
print("int32 accumulator:", acc.tolist())
print(
    "rank-1 rescale s_x s_w^T:",
    [[round(v, 6) for v in r] for r in torch.outer(xs.abs().amax(1) / 127, qw.scale).tolist()],
)
print("y (W8A8):        ", [[round(v, 4) for v in r] for r in y.tolist()])
print("y (fp32 weights):", [[round(v, 4) for v in r] for r in (xs @ qw.dequantize().T).tolist()])

# %% [markdown]
# ## 3. Bytes and FLOPs
#
# A `[M, K] x [K, N]` product does `2 M K N` FLOPs and reads the whole weight once. At M = 1
# that is 2 FLOPs per weight element, far less arithmetic than a CPU or GPU can do while the
# weight streams in. So the weight bytes set a floor under the time, and fewer bits per weight
# lower it in proportion, for a kernel whose own work keeps up with the reads. The two int4
# rows: symmetric codes with one fp16 scale per group of 128 (4.125 bits per weight), and the
# layout PyTorch's int4 kernel reads, a bf16 scale and a bf16 zero per group (4.25 bits).

# %%
rows = []
for m in (1, 16, 256):
    for label, bits in (
        ("fp32", 32),
        ("bf16", 16),
        ("int8", 8),
        ("int4 g128, fp16 scale", 4.125),
        ("int4 g128, bf16 scale + zero", 4.25),
    ):
        fb = gemm.flops_and_bytes(m, 4096, 4096, bits)
        rows.append(
            {
                "M": m,
                "weights": label,
                "GFLOP": fb["FLOPs"] / 1e9,
                "weight MB": fb["weight bytes"] / 1e6,
                "FLOPs per weight byte": fb["FLOPs per weight byte"],
            }
        )
print_table(rows, {"GFLOP": ".3f", "weight MB": ".1f", "FLOPs per weight byte": ".1f"})

# %% [markdown]
# As M grows, the same weight bytes serve more FLOPs. A product turns compute bound where its
# FLOPs per byte reach the kernel's **ridge point**: its peak FLOP rate divided by the memory
# bandwidth. Each kernel has its own peak, so section 5 measures them.
#
# ## 4. Zero points inside an integer GEMM
#
# With asymmetric codes, `x = s_x (q_x - z_x)` and `w = s_w (q_w - z_w)`, the int32 sum
# expands into the GEMM on the raw codes plus three corrections:
#
# ```
# sum_k (q_x - z_x)(q_w - z_w) = q_x @ q_w.T - z_w * rowsum(q_x) - z_x * colsum(q_w) + K z_x z_w
# ```
#
# `colsum(q_w)` is computed once offline; `rowsum(q_x)` costs M x K adds per call. With a
# static activation zero point the last two terms are constants per output channel and fold
# into the int32 bias; with symmetric weights (`z_w = 0`) the row-sum term vanishes too.

# %%
g8 = torch.Generator().manual_seed(1)
qx8 = torch.randint(0, 256, (3, 64), generator=g8)  # uint8 activation codes, zero point 128
qw8 = torch.randint(-8, 8, (5, 64), generator=g8)  # int4 weight codes, a zero point per channel
zw8 = torch.randint(-3, 4, (5,), generator=g8)
direct = (qx8 - 128) @ (qw8 - zw8[:, None]).T
print(f"corrections == direct: {torch.equal(gemm.int_gemm_zero_points(qx8, 128, qw8, zw8), direct)}")
sx, sw, bias = 0.02, torch.full((5,), 0.01), torch.tensor([0.5, -1.0, 0.25, 0.0, 2.0])
bias_q = torch.round(bias / (sx * sw)).long()  # int32 bias at scale s_x * s_w
y = (direct + bias_q) * sx * sw
err = float((y - (direct * sx * sw + bias)).abs().max())
print(f"bias in int32: {bias_q.tolist()}; max |error| vs the float bias {err:.1e}")
k8, m8, n8 = 2048, 16, 2048
share = (m8 * k8 + 3 * m8 * n8) / (m8 * n8 * k8)  # a row sum and three [M, N] terms, against M N K
print(f"the corrections' arithmetic for [{m8}, {k8}] x [{k8}, {n8}]: {share:.3%} of the GEMM's")

# %% [markdown]
# In arithmetic the corrections are almost free. In time they are free only inside the GEMM
# kernel, on values already in registers; as separate operations each is one more pass over
# memory. The next section times that.
#
# ## 5. Measure it: the benchmark, live
#
# `qlesson.bench.gemm` times every method side by side in one run for M = 1, 16, 256 and
# K = N = 4096, and measures this machine's memory bandwidth first. Read the `x fp32` column
# (ratio to the fp32 `F.linear` of the same M) and the `x half` column (ratio to the bf16 one).
# Timings vary from run to run, so these outputs are not graded; the verdict lines under the
# table state this run's conclusions, computed from its numbers. Two rows do identical work
# (the fp32 baseline and the GEMM on codes stored as fp32): their gap is the run's noise, and
# any smaller gap between two other rows is called a tie. The benchmark takes about a minute.

# %% tags=["nbval-ignore-output"]
recall.predict("06", "dequant_first")

# %% tags=["nbval-ignore-output"]
from qlesson.bench import gemm as bench_gemm

result, bw = bench_gemm.main(quick=True, full=False)  # the key rows first
print()
for line in bench_gemm.verdict(result):
    print(line)

# %%
_ = plots.bandwidth_lines(plots.gemm_times(result), bw.copy_gb_s, bw.read_gb_s)

# %% tags=["nbval-ignore-output"]
peaks = bench_gemm.kernel_peaks(rows=result)  # each kernel on [512, 4096] x [4096, 4096], or a faster row
print(f"read bandwidth {bw.read_gb_s:.1f} GB/s; each kernel's peak (its rate at M = 512, or a faster row's):")
fmt = {
    "peak GFLOP/s": ".0f",
    "ridge FLOPs/byte": ".1f",
    "FLOPs per byte at M = 1": ".2f",
    "compute bound from M =": ".1f",
}
print_table(bench_gemm.ridge_rows(peaks, bw.read_gb_s), fmt)
zp = bench_gemm.zero_point_cost()
print(f"int8 GEMM [16, 2048] x [2048, 2048]: {zp['symmetric ms']:.2f} ms symmetric, ", end="")
print(f"{zp['with zero points ms']:.2f} ms with the zero-point corrections as separate ops ({zp['ratio']:.2f}x)")
print(f"the corrections are exact: {zp['exact']}; their arithmetic is {zp['work share']:.3%} of the GEMM's")

# %% [markdown]
# **How to read it** (check each point against the verdict lines of this run):
#
# * **Dequantize-then-matmul** is many times slower than fp32 at small M: `q.float() * s`
#   writes full fp32 copies of the weight and the GEMM reads them again, more bytes than the
#   fp32 weight alone.
# * At **M = 1**, the fused int8 and int4 kernels read the codes and take bf16 activations:
#   compare them with the bf16 `F.linear` (`x half`). They keep an edge over it only while the
#   product is memory bound. The bandwidth probe and the weight copies may sit in this
#   machine's cache: the cache line under the bandwidth says so, and then the `of read BW`
#   column is a rate, not proof of memory traffic.
# * The **scale rows** time a separate multiply `y_codes * s` after the GEMM and a scale folded
#   into `x`; the verdict line gives each as a share of the GEMM. That is the interview note's
#   "per-channel adds under 5%", judged on this machine.
# * At **larger M** a kernel's arithmetic decides. The peak table gives each kernel's own peak
#   and the M from which it is compute bound. A weight-only kernel that converts its codes to
#   floats inside the loop can be bound by that work from M of about 1: then batch-1 decoding
#   with it is not memory bound at all, and the "compute bound from M =" column says so.
#
# ## 6. On a GPU
#
# A GPU's tensor cores outgrow its memory far more than a CPU's vector units outgrow its
# DRAM, so its ridge sits much higher. From a stored H100 measurement:

# %%
for gpu in bench_gemm.stored_rooflines():
    ridge = gpu["bf16 GEMM GFLOP/s"] / gpu["read GB/s"]
    print(f"{gpu['device']}: bf16 GEMM {gpu['bf16 GEMM GFLOP/s'] / 1e3:.0f} TFLOP/s, read {gpu['read GB/s']:.0f} GB/s")
    print(f"  ridge {ridge:.0f} FLOPs per byte: bf16 weights turn compute bound from M = {ridge:.0f}")

# %% [markdown]
# That is where "memory bound until a few hundred tokens" comes from: on such a GPU, bf16
# weights stay memory bound well past batch 1. *Going deeper* reads the stored H100 timings.
#
# ## Summary
#
# * A per-output-channel (or per-tensor) scale is constant along K: apply it after the GEMM,
#   M x N multiplies. A per-input-channel scale moves onto the activations (or into the op that
#   made them). A per-group scale acts inside the reduction: fused kernels scale each tile of
#   codes in registers just before multiplying it.
# * W8A8 rescales the int32 accumulator by the rank-1 matrix `s_x s_w^T`.
# * Asymmetric codes cost cross terms; with a static activation zero point the constant terms
#   fold into the int32 bias. Fuse the rest into the kernel.
# * At small M the weight bytes set a floor under the time, so compact weights help only when
#   the kernel reads the codes directly. Dequantize-then-matmul is slower than fp32.
# * Each kernel has its own ridge point (peak FLOPs / bandwidth); past it, the kernel's
#   arithmetic, and its design, decide.
# * Timings are noisy: a "faster" needs a gap larger than the noise, measured in the same run.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("06")

# %%
recall.show("06")

# %% [markdown]
# **Exercise**: `exercises/06_dequant_in_gemm.ipynb`: scales after the product, per-group
# scales, the W8A8 rescale, the zero-point corrections from sums alone, the bytes a
# dequantize-first pass moves, and the M at which a kernel turns compute bound.
#
# ## Going deeper
#
# ### Both orders on a real-sized layer
#
# Scaling after the product and dequantizing first agree to float rounding on a random
# `[1024, 4096]` weight:

# %%
g = torch.Generator().manual_seed(0)
X, Wt = torch.randn(16, 4096, generator=g), torch.randn(1024, 4096, generator=g) * 0.02
qt = ql.quantize(Wt, 8, granularity=ql.PerChannel(0))
a, b = gemm.scale_after_gemm(X, qt.q, qt.scale), gemm.dequant_then_gemm(X, qt.q, qt.scale)
diff = float((a - b).abs().max())  # float rounding; its exact value depends on the BLAS threads
shown = "below 1e-5" if diff < 1e-5 else f"{diff:.2e}"
print(f"max |difference| {shown} on outputs of size {float(b.abs().max()):.1f}")

# %% [markdown]
# ### Folding needs a producer
#
# An input-channel scale folds offline only into an operation that can absorb it: a norm whose
# every consumer accepts the same scale, or a Linear with only linear, ReLU or elementwise
# steps in between. After a GELU, AWQ keeps the division as a runtime op (llm-awq's
# `ScaledActivation`): one M x K multiply per call.
#
# ### Bytes of the int4 layouts
#
# Symmetric GPTQ kernels such as Marlin read 4-bit codes and one fp16 scale per group of 128
# (4.125 bits per weight); GPTQ checkpoints also store a packed 4-bit zero per group (about
# 4.16). PyTorch's int4 kernel (tinygemm) reads a bf16 scale and a bf16 zero per group (4.25).
# A float bias joins the int32 accumulator only at a static `s_x`: with per-token scales it is
# added in float after the rescale.
#
# ### Reading the CPU benchmark closely
#
# * `print(bench_gemm.format_table(result, bw))` prints every row of the run: every
#   dequantize-first granularity, the fp32-activation int8 kernel, every int4 group size.
# * Every method cycles through four copies of its weight at every M, so every M runs under the
#   same cache conditions; the copies keep a weight out of cache only where together they are
#   larger than the last-level cache. Some server CPUs and VMs report hundreds of MiB of L3:
#   then the bandwidth probe fits in it too, and a share above 100% of read bandwidth means
#   part of the weight came from cache, or the probe under-measured.
# * A ratio against fp32 mixes two steps: fp32 to bf16 (which a bf16 model has already taken)
#   and bf16 to int8/int4 codes. Hence the `x half` column.
# * The preallocated-buffer row removes the allocation (page faults) from dequantize-first but
#   not the traffic. A CPU has no kernel launches: the extra time is the extra passes
#   themselves plus page faults; dispatch costs microseconds.
# * The fused int8 kernel with fp32 activations falls back to scalar code on an x86 CPU; with
#   bf16 activations it takes the vectorized path, which multiplies each weight vector by its
#   scale inside the K loop.
# * On a CPU with a matrix unit (AMX) the bf16 and W8A8 peaks can sit far above the fp32 one;
#   bf16 and int8 dot-product instructions (AVX-512 BF16, VNNI) give a smaller gain. PyTorch's
#   CPU weight-only kernels convert codes to fp32 inside the loop and use fp32 FMA units,
#   converting each weight block again for every few rows of `x`.
# * W8A8, whose arithmetic is int8 itself, is the only compact format that can keep an edge at
#   large M in principle (int8 matrix units run at up to twice the bf16 rate); this row's
#   separate quantize and rescale passes cost it time.
# * Zero-point corrections as separate PyTorch ops cost far more than their share of the
#   arithmetic (the ratio printed under the peak table): extra passes and operator calls.
#
# ### The stored H100 run
#
# The same benchmark runs on a CUDA GPU with CUDA events and an fp16 baseline, using only
# PyTorch's own ops (the int8 weight-only op there gets fp16 activations and casts them to fp32
# inside; the int4 one, tinygemm, takes bf16 only). A stored run, read with its caveats:

# %%
stored = bench_gemm.stored_results()
if not stored:
    print("No GPU run has been stored yet. On a machine with a CUDA GPU run:")
    print("  python -m qlesson.bench gemm --csv notebooks/results/gemm_<device>.csv")
for path in stored:
    rows = bench_gemm.read_csv(path)
    print(f"{path.name}: measured with {rows[0].device} events, one call at a time")
    print(bench_gemm.key_table(rows))
    for m in sorted({r.m for r in rows}):
        share = bench_gemm.scale_shares(rows, m)
        print(
            f"M = {m}: separate scale multiply {share['scale after us']:.0f} us ({share['scale after']:.1%} of the "
            f"fp32 GEMM on codes, {share['scale after, of half']:.0%} of fp16's); folding into x "
            f"+{share['folded into x us']:.0f} us ({share['folded into x']:+.1%})"
        )
        print(f"  {bench_gemm.faster_than_baselines(rows, m)}")
    rates = {p: bench_gemm.tflops(rows, 256, p) for p in ("float16 F.linear", "fused int4 weight-only group 128")}
    print("M = 256, TFLOP/s: " + ", ".join(f"{p} {v:.0f}" for p, v in rates.items()))

# %% [markdown]
# How it was measured: it predates the uniform weight copies (only M = 1 cycled four copies; at
# M = 16 and 256 every weight but fp32's fits in the H100's 50 MB L2 cache, and so do four int4
# copies at M = 1), and each call was timed alone after a synchronize, so host dispatch and
# launch sit inside every GPU time. In a running model the host queues launches ahead and much
# of that overlaps.
#
# * At M = 1 tinygemm beats fp16 `F.linear` (the `x half` column), by less than its quarter of
#   the bytes would allow. By M = 16 it is slower, but fp16's single copy now fits in L2. A run
#   with the uniform copies would settle M = 16. At M = 256 it runs at a small fraction of
#   fp16's rate (the TFLOP/s line): it computes one 16 x 8 output tile per thread block over the
#   whole K, so it loads and dequantizes every weight tile once per 16 rows of `x`.
# * PyTorch's CUDA int8 weight-only op is a reference kernel (one thread per output element,
#   scalar multiply-adds, no tensor cores): slower than fp32 at every M.
# * The W8A8 rows exist only at M = 256: CUDA `torch._int_mm` refuses M of 16 or less. At
#   M = 256 W8A8 is slower than fp32, although int8 tensor cores run at about twice the bf16
#   rate. The run does not time `torch._int_mm` alone; its separate quantize and rescale passes,
#   at the separate multiply's cost each, explain at most about a third of the time. Treat the
#   rest as an anomaly of this run to be timed on its own, not as a property of int8 GEMMs:
#   serving stacks use tuned int8 kernels with quantization and rescale fused around them.
# * The separate scale multiply takes nearly the same microseconds at every M while its output
#   grows 256-fold: a fixed cost per call, far more than 5% of a GEMM this small. A per-output-
#   channel scale is made cheap by applying it in the GEMM's epilogue, to the accumulator tile
#   in registers (not timed here).

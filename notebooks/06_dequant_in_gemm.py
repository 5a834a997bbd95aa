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
# **What you will learn**
# * the three places a weight scale can live: per output channel after the GEMM (N
#   multiplies per row of output), per input channel folded into the activations, per group
#   inside the reduction;
# * W8A8: per-token activation scales and per-channel weight scales as a rank-1 rescale of
#   the int32 accumulator;
# * what zero points cost inside an integer GEMM (cross terms, an int32 bias);
# * the roofline: the ridge point from this machine's measured peak and bandwidth, why
#   batch-1 decoding is memory bound, and why fewer bits pay off only when the kernel reads the
#   compact codes directly;
# * how to measure all this side by side, and when the "per-channel adds under 5%" claim
#   holds.
#
# **What you need**: notebooks 02 to 05. The benchmark part takes about 40 seconds.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. The algebra: where can the scale go?
#
# A Linear layer computes `y = x @ W.T` with `x [M, K]` and `W [N, K]`; K is the reduction
# axis. With one scale per output channel, `W[n, k] = s[n] * q[n, k]`, and
#
# ```
# y[m, n] = sum_k x[m, k] * s[n] * q[n, k] = s[n] * sum_k x[m, k] * q[n, k]
# ```
#
# `s[n]` does not depend on k, so it leaves the sum: run the product on the codes, then
# multiply each output column once. That is M x N multiplies per call (N per output row)
# instead of N x K to dequantize the weight, and no dequantized weight is written to memory.
# Per-tensor is the special case of one scale value for every column (still one multiply per
# output, unless it is folded into the next operation).
#
# With per-group scales `s[n, k // g]` the scale changes *along k*; it cannot leave the sum.
# The kernel must scale each group's partial sum (or dequantize the weight first). A tiny
# worked example:

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

# %%
s_group = torch.tensor([[0.5, 1.0], [0.25, 2.0]])  # groups of 2 along K: scale changes inside the sum
deq = (q.float().reshape(2, 2, 2) * s_group[..., None]).reshape(2, 4)
print("per-group, partial sums scaled    =", gemm.group_scaled_gemm(x, q, s_group, 2).tolist())
print("per-group, dequantize first       =", (x @ deq.T).tolist())
print("wrong: one scale per row after it =", gemm.scale_after_gemm(x, q, s_group.mean(1)).tolist())

# %% [markdown]
# A scale per *input* channel, `W[n, k] = s_in[k] * q[n, k]`, also varies along k, yet it has a
# place outside the weight: it multiplies feature k of every token, so it can be moved onto
# the activations, `x @ (q * s_in).T == (x * s_in) @ q.T`, or folded offline into the
# operation that produced `x` (a LayerNorm or the previous Linear, as lesson 05 folded
# SmoothQuant's factors). That is how AWQ and SmoothQuant apply their scales. Folding needs such
# a producer: a norm whose every consumer accepts the same scale, or a Linear with only linear,
# ReLU or elementwise-product steps in between. After a GELU, AWQ keeps the division as a
# runtime op (llm-awq's `ScaledActivation`): one M x K multiply per call. So a scale
# lives in one of three places: **after** the GEMM (output channel), **before** it on the
# activations (input channel), or **inside** the reduction (group).

# %%
s_in = torch.tensor([0.5, 2.0, 1.0, 4.0])
print("weight scaled per input channel =", (x @ (q.float() * s_in).T).tolist())
print("activations scaled instead      =", gemm.fold_input_scale(x, q, s_in).tolist())

# %% [markdown]
# The same check on a real-sized random layer (both orders agree to float rounding):

# %%
g = torch.Generator().manual_seed(0)
X, Wt = torch.randn(16, 4096, generator=g), torch.randn(1024, 4096, generator=g) * 0.02
qt = ql.quantize(Wt, 8, granularity=ql.PerChannel(0))
a, b = gemm.scale_after_gemm(X, qt.q, qt.scale), gemm.dequant_then_gemm(X, qt.q, qt.scale)
diff = float((a - b).abs().max())  # float rounding; its exact value depends on the BLAS threads
shown = "below 1e-5" if diff < 1e-5 else f"{diff:.2e}"
print(f"max |difference| {shown} on outputs of size {float(b.abs().max()):.1f}")

# %% [markdown]
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
# ## 3. Bytes and FLOPs: why batch 1 is memory bound
#
# A `[M, K] x [K, N]` product does `2 M K N` FLOPs and must read the whole weight once. At
# M = 1 that is 2 FLOPs per weight element: a CPU or GPU can do far more arithmetic than that in
# the time it takes to read the weight. So the weight bytes set a floor under the time:
# reading them at full bandwidth. Fewer bits per weight lower that floor in proportion; a
# kernel reaches it only if nothing else is read or written and its own work stays hidden
# under the reads. The two int4 rows: symmetric codes with one fp16 scale per group of 128
# (what symmetric GPTQ kernels such as Marlin read, 4.125 bits per weight; GPTQ checkpoints
# also store a packed 4-bit zero per group, about 4.16), and the layout section 4's kernel
# reads, a bf16 scale and a bf16 zero per group (4.25 bits).

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
# Dequantizing to a full fp32 copy first is the trap: it reads 1 byte per weight, *writes* 4,
# and the GEMM reads those 4 again: more traffic than the fp32 weight alone. The fused kernels
# read the compact codes and dequantize in registers.
#
# As M grows, the same weight bytes serve more FLOPs. The product turns compute bound where
# its FLOPs per byte reach the kernel's **ridge point**: the peak FLOP rate *of that kernel*
# divided by memory bandwidth. Each format has its own peak (bf16 or int8 units can be much
# faster than fp32 ones, or slower where the CPU lacks them), so section 4 measures the peak
# of each kernel on this machine and prints the M at which each turns compute bound. A
# data-centre GPU has a ridge in the hundreds of FLOPs per byte for bf16 (section 5 computes
# it from a stored H100 measurement), because its tensor cores outgrow its HBM far more than a
# CPU's FMA vector units outgrow its DRAM (CPUs with matrix units, such as AMX, narrow that gap:
# compare the bf16 and fp32 rows of section 4's table); that is where "memory bound until a few
# hundred tokens" comes from.
#
# ## 3b. Zero points inside an integer GEMM
#
# With asymmetric codes, `x = s_x (q_x - z_x)` and `w = s_w (q_w - z_w)`, the int32 sum
# expands into the GEMM on the raw codes plus three corrections:
#
# ```
# sum_k (q_x - z_x)(q_w - z_w) = q_x @ q_w.T - z_w * rowsum(q_x) - z_x * colsum(q_w) + K z_x z_w
# ```
#
# `colsum(q_w)` is computed once offline; `rowsum(q_x)` costs M x K adds per call; the rest is
# M x N. With a static activation zero point (one `z_x`, calibrated offline), the last two
# terms are constants per output channel and fold into the bias offline; with symmetric weights
# (`z_w = 0`) the row-sum term vanishes too. A float bias joins the int32 accumulator, quantized
# at scale `s_x * s_w`; that needs a static `s_x` (with section 2's per-token scales the bias is
# added in float after the rescale instead). Exact:

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
# In arithmetic the corrections are almost free: a row sum and three `[M, N]` terms beside
# `M x N x K` multiply-adds. Whether they are free in *time* depends on where they run: inside
# the GEMM kernel's epilogue, on values already in registers, they add almost nothing; as
# separate operations each is one more pass over memory and one more operator call (on a GPU,
# one more kernel launch). Section 4 times the separate-operations version.
#
# ## 4. Measure it: the benchmark, live
#
# `qlesson.bench.gemm` times every method side by side in one run for M = 1, 16, 256 and
# K = N = 4096 (quick mode: short timings), and measures this machine's memory bandwidth
# first. Every method cycles through four copies of its weight at every M, so every M runs under
# the same cache conditions; the copies keep a weight out of cache only where together they are
# larger than the last-level cache. The line under the bandwidth says which formats that holds
# for here (some server CPUs and VMs report hundreds of MiB of L3, more than four copies of any
# of these weights, and more than the bandwidth probe itself). Read the `x fp32` column (ratio to the fp32
# `F.linear` of the same M), the `x half` column (ratio to the bf16 one) and, for M = 1, the
# share of the read bandwidth. Timings vary from run to run and machine to machine, so these
# cells' outputs are not graded: the text below says how to read them, and the verdict lines
# under the table state this run's conclusions, computed from its numbers. How large is the
# noise? Two rows do identical work: the fp32 baseline and the GEMM on codes stored as fp32
# (the same product on a same-shaped fp32 weight). The first verdict line per M gives the gap
# between them; any gap between two other rows smaller than that (or than a 10% floor) is called
# a tie, never a win. It is one pair of medians from one kernel: a rough estimate, and a rerun
# can move a verdict that sits near the margin.

# %% tags=["nbval-ignore-output"]
from qlesson.bench import gemm as bench_gemm

result, bw = bench_gemm.main(quick=True, full=False)  # the key rows first
print()
for line in bench_gemm.verdict(result):
    print(line)
print(
    "\nEvery row of this run (every dequantize-first granularity, the fp32-activation int8 kernel, every int4 group):"
)
print(bench_gemm.format_table(result, bw))

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
# **How to read it** (the numbers above are this machine's, measured just now; check each
# point against the verdict lines, which are computed from the same run):
#
# * At **M = 1** the fused kernels that read int8 or int4 codes take bf16 activations, so
#   compare them with the **bf16** `F.linear` (`x half`) as well as with fp32 (`x fp32`): a
#   ratio against fp32 mixes two steps (fp32 to bf16 weights and activations, which a bf16
#   model has already taken, and bf16 weights to int8/int4 codes). Their `of read BW` column
#   is the share of the measured read bandwidth their weight bytes stream at. A share above
#   100% means the weight streamed faster than the bandwidth probe: part of it came from
#   cache, or the probe (one reduction, on a possibly busy machine) under-measured the
#   bandwidth; where the cache line says the copies fit in it, read the column as a rate, not
#   as proof of memory traffic.
# * Dequantize-then-matmul is many times *slower* than fp32 at small M: `q.float() * s`
#   materializes two full fp32 temporaries, each written and read again. The preallocated-buffer
#   row removes the allocation (page faults) but not the traffic; the verdict line says how much
#   of the extra time that was in this run. A CPU has no kernel launches: the extra time is the
#   extra passes themselves (a dtype-converting copy and an elementwise multiply over 16.8
#   million weights) plus page faults for fresh tensors; dispatch costs microseconds. Those
#   passes can run well below the measured copy bandwidth: compare their time with the bytes
#   they move.
# * The scale rows: a separate multiply `y_codes * s` after the GEMM, and an input-channel scale
#   folded into `x`, both timed against the GEMM on the codes (the verdict line gives each as a
#   share; a change smaller than the noise is marked). The per-group row scales every group's
#   partial sum without a fused kernel and shows why group scales need one.
# * The fused int8 kernel with **fp32** activations falls back to slow scalar code on an x86
#   CPU (see the full table under the verdict lines); with bf16 activations and scales it takes
#   the vectorized path. Same op, different dtype. That vectorized path multiplies each weight
#   vector by its scale inside the K loop, not after it: where the scale goes is the kernel's
#   choice.
# * **Larger M** turns compute bound, and then the arithmetic each kernel runs decides. The
#   ridge table gives each kernel's own peak, measured at M = 512 (or the fastest rate the
#   benchmark rows reached, if a row beat it). On a CPU with a matrix unit (AMX) the bf16 and
#   W8A8 peaks can sit far above the fp32 one; bf16 and int8 dot-product instructions on the
#   vector units (AVX-512 BF16, VNNI) give a smaller gain. PyTorch's CPU weight-only kernels
#   convert their codes to fp32 inside the loop and multiply with fp32 FMA units, no matrix
#   unit, converting each weight block again for every few rows of `x`: on the CPU that stored
#   these outputs they peaked below the plain bf16 GEMM and even below fp32. For them,
#   "compute bound from M =" in the table means bound by the kernel's own throughput, a design
#   limit rather than the hardware's.
# * The last verdict line per M lists which compact-weight kernels beat fp32 and bf16 there
#   beyond noise. Against bf16, a weight-only kernel can keep an edge only while the product is
#   memory bound. W8A8, whose arithmetic is int8 itself, is the only one that can keep it at
#   large M in principle (int8 matrix units run at up to twice the bf16 rate); with this row's
#   separate quantize and rescale passes, the M = 256 verdict line says whether it did in this
#   run. On another CPU the table and the verdicts differ.
# * **The "under 5%" claim** (interview note): applying per-channel scales after a GEMM is N
#   multiplies per output row. The verdict lines time that multiply as a separate op against the
#   fp32 GEMM on the codes and against the bf16 GEMM, and judge the claim on the faster GEMM
#   (the one a deployment runs). It does **not** hold for dequantize-then-matmul, which costs
#   a multiple of the GEMM at small M.
# * **Zero points**: their corrections are a fraction of a percent of the GEMM's arithmetic,
#   but as separate PyTorch ops beside a small int8 GEMM they cost far more than that share
#   (the ratio printed above): extra passes and operator calls. They are cheap only when fused
#   into the kernel (the epilogue adds the `[M, N]` terms; the row sum comes with the
#   activation quantization pass), or, for a static activation zero point, folded offline into
#   the bias (the weight zero point's row-sum term stays a per-call cost unless the weights
#   are symmetric).
#
# ## 5. A stored GPU run
#
# The same benchmark runs on a CUDA GPU with CUDA events and an fp16 baseline, using only
# PyTorch's own ops (the int8 weight-only op there is given fp16 activations and casts them to
# fp32 inside; the int4 one, tinygemm, takes bf16 only, which runs at the same tensor-core
# rate as fp16 on an H100); without a GPU those rows are skipped with one line. A GPU run is
# stored in `notebooks/results/`, in a file named after its device:

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

# %%
for gpu in bench_gemm.stored_rooflines():
    ridge = gpu["bf16 GEMM GFLOP/s"] / gpu["read GB/s"]
    print(f"{gpu['device']}: bf16 GEMM {gpu['bf16 GEMM GFLOP/s'] / 1e3:.0f} TFLOP/s, read {gpu['read GB/s']:.0f} GB/s")
    print(f"  ridge {ridge:.0f} FLOPs per byte: bf16 weights turn compute bound from M = {ridge:.0f}")

# %% [markdown]
# Read the stored H100 run against the CPU one above. Two things about how it was measured:
# it predates the uniform weight copies (only M = 1 cycled four copies; at M = 16 and 256 every
# weight but fp32's fits in the H100's 50 MB L2 cache, and so do four int4 copies at M = 1), and
# each call was timed alone, from an idle GPU after a synchronize, so the host's dispatch and
# launch sit inside every GPU time, the GEMMs' included. In a running model the host queues
# launches ahead of the GPU and much of that overlaps.
#
# fp16 `F.linear` (cuBLAS) is the baseline to beat at every M. At M = 1 the int4 kernel
# (tinygemm) beats it (the `x half` column), though by less than its quarter of the bytes
# (4.25 bits per weight against 16) would allow, even with its four copies served from L2 while
# fp16's came from HBM: neither kernel gets near the bandwidth floor at this size with the
# per-call overhead inside each time. By M = 16 it is slower, but part of that margin is the
# cache: fp16's single copy now fits in L2, and its time fell below its M = 1 time although it
# did 16 times the work. A run with the uniform copies would settle M = 16. At M = 256
# it is many times slower, while the fp16 GEMM takes about as long as at M = 1, and the
# TFLOP/s line shows tinygemm at a small fraction of fp16's rate. tinygemm computes one 16 x 8
# output tile per thread block over the whole K, so at M = 256 it loads and dequantizes every
# weight tile once per 16 rows of `x`, 16 times, mostly from L2: its design, not the bytes it
# streams from HBM, sets its time at large M. At M = 256 every compact-weight row is slower
# than even fp32 (the lines above). PyTorch's CUDA int8 weight-only op is a reference kernel
# (one thread per output element, scalar multiply-adds, no tensor cores): slower than fp32 at
# every M. The W8A8 row, a separate activation-quantization pass plus `torch._int_mm` plus a
# separate rescale, is slower than fp32 at M = 256 too. The run does not time `torch._int_mm`
# alone, but its roughly ten small passes, at the separate multiply's cost each, explain at
# most about a third of that time: PyTorch's int8 GEMM call itself ran far below the fp16 GEMM
# here. Serving stacks use tuned int8 GEMM kernels with quantization and rescale fused around
# them.
#
# The scale rows look different on the GPU, relative to the GEMM, because a GPU GEMM is so
# fast. The separate multiply `y_codes * s` takes nearly the same microseconds at every M,
# while its output grows 256-fold from M = 1 to M = 256: a fixed cost per call (host dispatch
# and a kernel launch, timed call by call), not a pass over memory. Even with launches queued
# ahead in a model, a separate kernel costs its own few microseconds and a launch gap, far more
# than 5% of a GEMM this small. Folding into `x` adds a similar fixed cost (one more kernel
# before the GEMM). The two are made cheap in different ways: a per-output-channel scale by
# applying it in the GEMM's epilogue, to the accumulator tile in registers (how serving kernels
# do it; not timed here); an input-channel scale by folding it offline into the operation that
# produces `x`, where such a producer exists (section 1), which costs nothing at run time. Per
# group without a fused kernel costs a multiple.

# %% [markdown]
# ## Summary
#
# * A per-output-channel (or per-tensor) scale is constant along K: apply it after the GEMM,
#   N multiplies per output row. A per-input-channel scale moves onto the activations (or
#   into the op that made them). A per-group scale must be applied inside the reduction.
# * Asymmetric codes in an integer GEMM cost cross terms (a per-token row sum, offline column
#   sums); with a static activation scale and zero point, the constant terms fold into the
#   int32 bias, kept at scale `s_x * s_w`.
# * The ridge point (a kernel's peak FLOPs / bandwidth) says when a product turns compute
#   bound. Each kernel has its own (this machine's are in the table above); a data-centre
#   GPU's bf16 ridge is in the hundreds of FLOPs per byte.
# * W8A8 rescales the int32 accumulator by the rank-1 matrix `s_x s_w^T`.
# * Batch-1 decoding is memory bound: the weight bytes set a floor under the time. Compact
#   weights help only when the kernel reads the codes directly: a fused weight-only kernel
#   dequantizes them in registers, an int8 GEMM (W8A8) computes on them. Dequantize-then-matmul
#   is slower than fp32. At large M a kernel's arithmetic, and its design, decide instead.
# * "Per-channel adds under 5%" holds, from how such kernels work (not timed here), for scales
#   applied in the GEMM's epilogue, and for a separate multiply on a CPU wherever the verdict
#   lines above say so; not as a separate kernel at small M on a GPU (a fixed cost per call),
#   and not for a dequantize pass in front of the GEMM.
# * Zero-point corrections are cheap arithmetic but cost real time as separate ops: fuse them;
#   the terms with a static activation zero point fold into the int32 bias.
# * Timings are noisy: two identical products differ from run to run. A "faster" needs a gap
#   larger than that noise, measured in the same run.
#
# **Exercise**: `exercises/06_dequant_in_gemm.ipynb`.
#
# ## Pause and recall
#
# 1. Why can a per-output-channel scale be applied after the GEMM, but a per-group scale
#    cannot?
# 2. How many multiplies does applying per-channel scales to a `[M, N]` output cost?
# 3. At M = 1, why is dequantize-then-matmul slower than the fp32 GEMM it replaces?
# 4. In W8A8 with per-token and per-channel scales, what is the shape and rank of the
#    rescale matrix?

# %% [markdown]
# Answer the questions above in your head first. Then check yourself on the lesson's recall
# questions, with feedback on every option (in a page without widgets, the list below the
# quiz folds each answer under **Answer**):

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.quiz("06")

# %%
recall.show("06")

# %% [markdown]
# <details><summary>Answers to the questions above</summary>
#
# 1. The per-channel scale is constant along the reduction axis K and factors out of the sum;
#    a group scale changes with k inside the sum.
# 2. M x N (one per output element), against M x N x K multiply-adds for the GEMM.
# 3. It reads the int8 codes, writes a full fp32 weight (two, with the scale multiply), then
#    reads that copy again: more bytes than the fp32 GEMM alone, which is memory bound at
#    M = 1. The measured penalty can exceed the byte ratio: fresh tensors cost page faults, and
#    the conversion passes may run below the copy bandwidth.
# 4. `[M, N]`, rank 1: the outer product of the per-token and per-channel scales.
# </details>

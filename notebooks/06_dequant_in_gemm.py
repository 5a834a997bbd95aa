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
# * why a per-output-channel scale can be applied *after* the GEMM (N multiplies per row of
#   output, not N x K), and why per-group scales cannot;
# * W8A8: per-token activation scales and per-channel weight scales as a rank-1 rescale of
#   the int32 accumulator;
# * why batch-1 decoding is memory bound, and why fewer bits only pay off when the
#   dequantization happens inside a fused kernel;
# * how to measure all this side by side, and when the "per-channel adds under 5%" claim
#   holds.
#
# **What you need**: notebooks 02 to 05. The benchmark part takes about 30 seconds.

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
# multiply each output column once. That is N multiplies per row of output instead of
# N x K for dequantizing the weight. Per-tensor is the special case of one multiply.
#
# With per-group scales `s[n, k // g]` the scale changes *along k*; it cannot leave the sum.
# The kernel must scale each group's partial sum (or dequantize the weight first). The same
# is true of per-input-channel scales. A tiny worked example:

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
# The same check on a real-sized random layer (both orders agree to float rounding):

# %%
g = torch.Generator().manual_seed(0)
X, Wt = torch.randn(16, 4096, generator=g), torch.randn(1024, 4096, generator=g) * 0.02
qt = ql.quantize(Wt, 8, granularity=ql.PerChannel(0))
a, b = gemm.scale_after_gemm(X, qt.q, qt.scale), gemm.dequant_then_gemm(X, qt.q, qt.scale)
print(f"max |difference| = {float((a - b).abs().max()):.2e} on outputs of size {float(b.abs().max()):.1f}")

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
# A `[M, K] x [K, N]` product does `2 M K N` FLOPs and must read the whole weight once.
# At M = 1 that is 2 FLOPs per weight element: a CPU or GPU can do far more arithmetic than
# that in the time it takes to read the weight. Time is set by weight bytes; fewer bits per
# weight means proportionally less time, **if** nothing else is read or written.

# %%
rows = []
for m in (1, 16, 256):
    for label, bits in (("fp32", 32), ("bf16", 16), ("int8", 8), ("int4 + g128 scales", 4.125)):
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
# As M grows, the same weight bytes serve more FLOPs; around a few hundred tokens the GEMM
# becomes compute bound and the weight format matters less than the arithmetic unit.
#
# ## 4. Measure it: the benchmark, live
#
# `qlesson.bench.gemm` times every method side by side in one run for M = 1, 16, 256 and
# K = N = 4096 (quick mode: short timings), and measures this machine's memory bandwidth
# first. Read the `x fp32` column (ratio to the fp32 `F.linear` of the same M) and, for
# M = 1, the share of the read bandwidth. Timings vary from run to run, so this cell's
# output is not graded.

# %% tags=["nbval-ignore-output"]
from qlesson.bench import gemm as bench_gemm

result, bw = bench_gemm.main(quick=True)

# %%
_ = plots.bandwidth_lines(plots.gemm_times(result), bw.copy_gb_s, bw.read_gb_s)

# %% tags=["nbval-ignore-output"]
for line in bench_gemm.verdict(result):
    print(line)

# %% [markdown]
# **How to read it** (the numbers above are this machine's, measured just now):
#
# * At **M = 1** the fused kernels that read int8 or int4 codes (bf16 activations) are several
#   times faster than fp32: they stream compact weights, at a rate you can compare with the
#   measured bandwidth in the GB/s column. Dequantize-then-matmul is many times *slower* than fp32: it writes and
#   rereads a full fp32 copy. Part of that is allocation: the preallocated-buffer row
#   separates the page-fault cost of a fresh `q.float()` from the arithmetic.
# * The fused int8 kernel with **fp32** activations falls back to slow scalar code on CPU;
#   with bf16 activations and scales it takes the vectorized path. Same op, different dtype.
# * At **M = 256** the product is compute bound; the low-precision arithmetic units (bf16,
#   int8 `_int_mm`) decide, and the weight-only kernels lose most of their edge.
# * At M = 1 every method cycles through four copies of its weight, so a compact weight
#   (an int8 `[4096, 4096]` is 16.8 MB, smaller than many CPUs' last-level cache) cannot
#   be served from cache between calls: real decoding streams many layers from DRAM.
# * **The "under 5%" claim** (interview note): applying per-channel scales after a GEMM
#   costs N multiplies per output row; the verdict lines time that multiply alone against
#   the GEMM on the codes. It does **not** hold for dequantize-then-matmul, which costs a
#   multiple of the GEMM at small M.
#
# ## 5. A stored GPU run
#
# The same benchmark runs on a CUDA GPU with CUDA events and fp16/bf16 baselines, using
# only PyTorch's own ops; without a GPU those rows are skipped with one line. A result
# measured on a GPU is stored in `notebooks/results/` with its device name when one has been
# run:

# %%
stored = bench_gemm.stored_results()
if not stored:
    print("No GPU run has been stored yet. On a machine with a CUDA GPU run:")
    print("  python -m qlesson.bench gemm --csv notebooks/results/gemm_<device>.csv")
for path in stored:
    rows = bench_gemm.read_csv(path)
    print(f"{path.name}: measured on {rows[0].device}")
    print(bench_gemm.format_table(rows))

# %% [markdown]
# ## Summary
#
# * A per-output-channel (or per-tensor) scale is constant along K: apply it after the GEMM,
#   N multiplies per output row. Per-group and per-input-channel scales change along K and
#   must be applied inside the reduction.
# * W8A8 rescales the int32 accumulator by the rank-1 matrix `s_x s_w^T`.
# * Batch-1 decoding is memory bound; compact weights help only when a fused kernel
#   dequantizes them in registers. Dequantize-then-matmul is slower than fp32.
# * "Per-channel adds under 5%" holds for scales applied after a GEMM, not for a dequantize
#   pass in front of it.
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
# 3. It reads the int8 codes, writes a full fp32 weight, then reads that copy again: more
#    bytes than the fp32 GEMM alone, which is memory bound at M = 1.
# 4. `[M, N]`, rank 1: the outer product of the per-token and per-channel scales.
# </details>

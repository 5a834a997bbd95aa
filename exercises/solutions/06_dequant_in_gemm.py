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

# %% [markdown] tags=["solutions-only"]
# > **SPOILERS.** This is the solution notebook.
# > The exercise is `exercises/06_dequant_in_gemm.ipynb`; try it first.

# %% [markdown]
# # Exercise 06 · Dequantization in a GEMM (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/06_dequant_in_gemm.ipynb`.
# Where two scales go in `y = x @ W.T`, a group kernel's partial sums, what zero points cost, what
# dequantize-first moves, from which batch a kernel is compute bound, and from which batch an int4
# kernel loses to fp16.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, group sizes, shapes) and include edge cases, so hard-coding a number
# that works for one case fails another. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 06`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%

import torch

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · Two factors, two sides
#
# A layer computes `y = x @ W.T` with `x [M, K]`. Its weight is stored as integer codes
# `q [N, K]`, one scale per output channel `s [N]`, and the per-input-channel factor `a [K]`
# that AWQ divided out: `W[n, k] = s[n] * q[n, k] / a[k]`. Your kernel runs on the codes as they
# are stored and computes `((x * u) @ q.T) * v`, with one vector `u [K]` and one vector `v [N]`.
# Write `kernel_scales(s, a)` that returns `(u, v)` so that the kernel's `y` is exactly
# `x @ W.T`. Some cases have a square weight (N = K), where vectors on the wrong side still have
# the right shape.


# %% tags=["solution"]
def kernel_scales(s, a):
    ...  # STUB
    # BEGIN SOLUTION
    # 1 / a[k] is the same for every output n: it goes with feature k of x; s[n] does not change with k: it
    # leaves the sum and scales output n
    return 1 / a, s
    # END SOLUTION


# %% qlesson={"task": "06.kernel_scales"} tags=["check"]
check("06.kernel_scales", kernel_scales)


# %% [markdown]
# ## Task 2 · One partial sum per group
#
# A weight has one scale per group of `group_size` neighbouring weights along K. A fused kernel
# never builds the dequantized weight: for every output `[m, n]` it keeps one partial sum of
# `x` times the codes per group, and only then applies that group's scale. Write
# `group_partials(x, q, group_size)` with `x [M, K]` and codes `q [N, K]` that returns these
# partial sums, shape `[M, N, K // group_size]`. The cell after the check applies the scales.


# %% tags=["solution"]
def group_partials(x, q, group_size):
    ...  # STUB
    # BEGIN SOLUTION
    m, k = x.shape
    n = q.shape[0]
    groups = k // group_size
    return torch.einsum("mgk,ngk->mng", x.reshape(m, groups, group_size), q.reshape(n, groups, group_size))
    # END SOLUTION


# %% qlesson={"task": "06.group_partials"} tags=["check"]
check("06.group_partials", group_partials)

# %% [markdown]
# Scale each group's partial sum and add them: the same `y` as dequantizing the weight first.

# %%
gx = torch.Generator().manual_seed(6)
x6, q6 = torch.randn(2, 8, generator=gx), torch.randint(-7, 8, (3, 8), generator=gx).float()
s6 = torch.rand(3, 2, generator=gx) + 0.05  # one scale per group of 4
fused = (group_partials(x6, q6, 4) * s6).sum(-1)
dequantized_first = x6 @ (q6.reshape(3, 2, 4) * s6[..., None]).reshape(3, 8).T
print("same y as dequantizing first:", torch.allclose(fused, dequantized_first, atol=1e-5))


# %% [markdown]
# ## Task 3 (from Going deeper) · Zero points from sums alone
#
# Lesson 06's *Going deeper* ("Zero points inside an integer GEMM") sets this up. An int8
# kernel has already computed `acc = q_x @ q_w.T` on the raw codes. Write
# `zero_point_gemm(acc, rowsum_x, colsum_w, zx, zw, k)` that returns what the kernel really
# needs, `sum_k (q_x[m, k] - zx) * (q_w[n, k] - zw[n])` for every `[m, n]`, from these alone:
# `rowsum_x [M]` (each token's codes summed over K), `colsum_w [N]` (each output channel's codes
# summed over K), the activation zero point `zx` (a number), the weight zero points `zw [N]`
# and `k` (the reduction length). The codes themselves are not given.


# %% tags=["solution"]
def zero_point_gemm(acc, rowsum_x, colsum_w, zx, zw, k):
    ...  # STUB
    # BEGIN SOLUTION
    return acc - zw[None, :] * rowsum_x[:, None] - zx * colsum_w[None, :] + k * zx * zw[None, :]
    # END SOLUTION


# %% qlesson={"task": "06.zero_point_gemm"} tags=["check"]
check("06.zero_point_gemm", zero_point_gemm)

# %% [markdown]
# ## Task 4 · What dequantize-first moves
#
# A weight of `n x k` codes of `code_bits` bits has one fp32 scale per output channel. The
# dequantize-first path here runs one dequantize kernel, then `F.linear(x, w)` on its fp32
# output `w`. Write `dequant_first_bytes(n, k, code_bits)`: the bytes of weight data these two
# steps move to and from memory in all (leave the activations and the output aside).


# %% tags=["solution"]
def dequant_first_bytes(n, k, code_bits):
    ...  # STUB
    # BEGIN SOLUTION
    return n * k * code_bits / 8 + 4 * n + 4 * n * k + 4 * n * k
    # END SOLUTION


# %% qlesson={"task": "06.dequant_first_bytes"} tags=["check"]
check("06.dequant_first_bytes", dequant_first_bytes)

# %% [markdown]
# ## Task 5 · From which M is a kernel compute bound?
#
# A kernel peaks at `peak_gflops` GFLOP/s; memory reads run at `read_gb_s` GB/s; its weight
# takes `weight_bits` bits per weight, scales included. Write
# `compute_bound_from(peak_gflops, read_gb_s, weight_bits)`: the number of tokens M (a float)
# from which a `[M, K] x [K, N]` product on this kernel is compute bound, counting only the
# weight's bytes (the activations are small). Optional: try it on the rates your lesson 06 run
# printed (its *Going deeper* prints them, "Each kernel's ridge in this run").


# %% tags=["solution"]
def compute_bound_from(peak_gflops, read_gb_s, weight_bits):
    ...  # STUB
    # BEGIN SOLUTION
    return peak_gflops / read_gb_s * weight_bits / 16
    # END SOLUTION


# %% qlesson={"task": "06.compute_bound_from"} tags=["check"]
check("06.compute_bound_from", compute_bound_from)

# %% [markdown]
# ## Task 6 · From which M does int4 lose?
#
# The stored H200 run (lesson 06 prints its ridge in Going deeper) measured a bf16 GEMM peak of
# about 737 TFLOP/s and a read bandwidth of about 4129 GB/s; tinygemm's int4 kernel ran
# at about 28.4 TFLOP/s at M = 256 (2 x 256 x 4096 x 4096 FLOPs in its measured time), where it
# is compute bound. Write
# `int4_loses_from(dense_tflops, dense_bytes, read_gb_s, int4_tflops)`: the M (a float) from
# which the int4 kernel, running at `int4_tflops`, takes longer than a dense GEMM with
# `dense_bytes` bytes per weight and a peak of `dense_tflops`, on a `[M, K] x [K, N]` product
# with large K and N. Assume the int4 kernel is slower than the dense peak; `int4_tflops` is its
# measured rate, its own reads included.


# %% tags=["solution"]
def int4_loses_from(dense_tflops, dense_bytes, read_gb_s, int4_tflops):
    ...  # STUB
    # BEGIN SOLUTION
    # the dense GEMM is memory bound here: K N dense_bytes / bandwidth; int4 is compute bound: 2 M K N / rate
    return int4_tflops * 1e3 / read_gb_s * dense_bytes / 2
    # END SOLUTION


# %% qlesson={"task": "06.int4_loses_from"} tags=["check"]
check("06.int4_loses_from", int4_loses_from)

# %% [markdown]
# Now check it against the stored run: where does your crossover fall between the M the run
# timed? The cell below prints the stored H200 run's tinygemm and fp16 times at M = 1, 16 and
# 256, and the time fp16 would take if it read its weight at the full read bandwidth.

# %%
import json

from qlesson.bench import gemm as bench_gemm

stored = bench_gemm.read_csv(bench_gemm.RESULTS / "gemm_nvidia_h200.csv")
read_gb_s = json.loads((bench_gemm.RESULTS / "roofline_nvidia_h200.json").read_text())["read GB/s"]
for m in sorted({r.m for r in stored}):
    int4 = bench_gemm.find_row(stored, m, "fused int4 weight-only group 128").median_ms * 1e3
    half = bench_gemm.find_row(stored, m, "float16 F.linear")
    floor = half.weight_bytes / read_gb_s / 1e3  # bytes / (GB/s) -> us
    print(f"M = {m:>3}: int4 {int4:3.0f} us, fp16 {half.median_ms * 1e3:3.0f} us (its read floor {floor:.1f} us)")

# %% [markdown]
# Your model takes the dense time at its read floor, but the measured fp16 time sits well above
# it, which moves the crossover later; at small M tinygemm also runs below its M = 256 rate,
# which moves it earlier. The stored run timed only M = 1, 16 and 256: int4 is faster at 1 and
# tied at 16 (within about 5%, inside the noise); a run at M = 4 and 8 would tell where they
# cross, and whether that is later than your model's.

# %% [markdown]
# ## Recall


# %% [markdown]
# ### Recall 06.4
#
# Group scales (g = 64, K = 4096) applied to each group's partial sum: scale multiplies per output y[m, n]?
#
# - **a)** 4096: one per weight
# - **b)** 1, as a per-channel scale
# - **c)** 64: one per group, K / 64
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "c"
# END SOLUTION

# %% qlesson={"task": "recall 06.4"} tags=["check"]
recall.answer("06", 4, recall_4)

# %% [markdown]
# ### Recall 06.5
#
# Dequantize-first takes several times fp32's time at M = 1 on a CPU. F.linear(x, q.float()) * s instead takes...
#
# - **a)** Less than dequantize-first, more than fp32: it still writes and re-reads an fp32 copy
# - **b)** About the same as dequantize-first: the scale multiply was never the cost
# - **c)** About fp32's time: the scale now costs only M x N multiplies
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_5 = ...  # STUB
# BEGIN SOLUTION
recall_5 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 06.5"} tags=["check"]
recall.answer("06", 5, recall_5)

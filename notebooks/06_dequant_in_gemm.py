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
# **The question**: when does a weight-only quantized weight make a matrix multiply faster than float
# weights do?
#
# **The answer**: its fewer bytes help only where reading the weight sets the time (small
# batches); at large batches each kernel's own arithmetic sets it, and PyTorch's weight-only
# kernels lost to float weights there in every stored run (a 2-core Xeon here; an H100 and an
# H200 in *Going deeper*). They help only in a kernel that never writes a dequantized copy, and no scale forces
# one: an output-channel scale goes after the product, an input-channel scale onto the
# activations, a group scale inside the reduction.
#
# **What you will do**: follow each scale through `y = x @ W.T`, then time fp32, int8 and int4
# products at M = 1 and 128 on your machine.
#
# **What you need**: lessons 02 to 05.
#
# **Time**: about 17 minutes, plus about 40 for the exercise; *Going deeper*: about 29 more.

# %% tags=["nbval-ignore-output"]
import qlesson as ql

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
# output column once, with no dequantized weight in memory.

# %%
import torch

from qlesson.quant import gemm

x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
q = torch.tensor([[1, -2, 3, 0], [2, 2, -1, 1]], dtype=torch.int8)
s = torch.tensor([0.5, 0.25])
print("x @ q.T          =", (x @ q.float().T).tolist())
print("then * s         =", gemm.scale_after_gemm(x, q, s).tolist())
print("dequantize first =", gemm.dequant_then_gemm(x, q, s).tolist())

# %% [markdown]
# Now give the same codes one scale per group of 2 along K, `s_group[n, k // 2]`.

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.predict("06", "group_after")

# %%
s_group = torch.tensor([[0.5, 1.0], [0.25, 2.0]])
deq = (q.float().reshape(2, 2, 2) * s_group[..., None]).reshape(2, 4)
print("dequantize first                 =", (x @ deq.T).tolist())
print("each group's partial sum, scaled =", gemm.group_scaled_gemm(x, q, s_group, 2).tolist())
print("wrong: row's mean scale after    =", gemm.scale_after_gemm(x, q, s_group.mean(1)).tolist())

# %% [markdown]
# A group scale changes with k, so no one number per row can leave the whole sum. Within one
# group it is constant, so it can leave that group's partial sum. Fused weight-only kernels walk
# K one group at a time: load a tile of codes, scale that tile in registers (or its partial sum),
# multiply it, and never write the whole dequantized weight.
#
# A scale per *input* channel, `W[n, k] = s_in[k] * q[n, k]`, also varies along k, but it
# multiplies feature k of every token, so it can move onto the activations, `(x * s_in) @ q.T`,
# or be folded offline into the operation that produced `x`, where that operation allows.

# %%
s_in = torch.tensor([0.5, 2.0, 1.0, 4.0])
print("weight scaled per input channel =", (x @ (q.float() * s_in).T).tolist())
print("activations scaled instead      =", gemm.fold_input_scale(x, q, s_in).tolist())

# %% [markdown]
# ## 2. Bytes set a floor
#
# A `[M, K] x [K, N]` product does `2 M K N` FLOPs and reads the whole weight once: at M = 1,
# 0.5 FLOPs per *byte* of fp32 weight. The weight's bytes then set a floor under the time, and
# fewer bits per weight lower it in proportion. PyTorch's int4 kernel reads 4.25 bits per
# weight (a bf16 scale and zero per group of 128). A product's FLOPs per weight byte are 2M over
# the bytes per weight: fp32 at M = 128 does `2 * 128 / 4 = 64`. Call a kernel's peak FLOP rate
# over its read bandwidth its **ridge point**. Once a product's FLOPs per byte pass it, the
# product is compute bound.
#
# ## 3. Measure it: your machine, now
#
# `qlesson.bench.gemm` times each method at K = N = 4096, M = 1 and M = 128 (under a minute).
# `x fp32` is a row's time over fp32 `F.linear`'s at the same M.

# %% tags=["nbval-ignore-output"]
from IPython.display import display

display(recall.predict("06", "int4_at_1_cpu"))  # both answered by the next cell
recall.predict("06", "int4_at_128_cpu")

# %% tags=["nbval-ignore-output"]
from qlesson.bench import gemm as bench_gemm

shown = bench_gemm.LESSON_SHOWN  # the rows this section reads; Going deeper shows the rest
result, bw = bench_gemm.main(quick=True, full=False, ms=(1, 128), rows_for=bench_gemm.LESSON_ROWS, shown=shown)
fp32_rate = bench_gemm.tflops(result, 128, "fp32") * 1e3  # GFLOP/s: this run's rate at M = 128, not a peak
print(
    f"\nfp32 in this run: {fp32_rate:.1f} GFLOP/s at M = 128 over {bw.read_gb_s:.1f} GB/s read"
    f" = {fp32_rate / bw.read_gb_s:.1f} FLOPs per byte"
)
for name in ("fused int8 weight-only per-channel", "fused int4 weight-only group 128"):
    r = bench_gemm.find_row(result, 128, name)
    floor_ms = r.weight_bytes / bw.read_gb_s / 1e6  # its weight's bytes at the read bandwidth
    print(f"M = 128, {name}: {r.median_ms:.1f} ms, against a read floor of {floor_ms:.2f} ms")

# %% [markdown]
# What to see:
#
# * **Dequantize-then-matmul**: `q.float()` writes an fp32 copy, `* s` reads it and writes
#   another, the GEMM reads that: 17 bytes per int8 weight against fp32's 4, a floor of about
#   4x. Going deeper traces the rest to allocation.
# * **Scale after the GEMM** copies the codes into an fp32 buffer allocated once: 9 bytes,
#   about 2.25x.
# * **The `fp32 in this run` line** gives fp32's ridge point, its M = 128 rate standing in for
#   its peak: 8.8 FLOPs per byte in the stored run. At M = 1 a product does 0.5 FLOPs per fp32
#   weight byte, below it: memory bound. At M = 128 it does 64, above it: compute bound.
# * **Fused rows** read only codes and scales, 0.25 of fp32's bytes for int8 and 0.13 for int4
#   g128. In the stored run (a 2-core Xeon with AMX), at M = 1 they beat fp32 but stay above
#   their read floor. At M = 128 both take many times their read floor (the last two lines):
#   their own work, not their bytes, sets the time. Whether they then beat fp32 depends on each
#   kernel's arithmetic on your CPU; in the stored run both lose.

# %% [markdown]
# ## Summary
#
# * An output-channel (or per-tensor) scale goes after the GEMM, an input-channel scale onto
#   the activations, a group scale inside the reduction, tile by tile.
# * At small M the weight's bytes set the floor: a fused kernel reads only codes and scales,
#   dequantize-then-matmul 17 bytes per int8 weight against fp32's 4.
# * At large M a kernel's own work sets its time: fewer weight bytes stop helping, and whether
#   a kernel still beats float weights depends on its arithmetic; PyTorch's weight-only kernels
#   lost in both stored runs.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("06")

# %%
recall.show("06")

# %% [markdown]
# **Exercise**: `exercises/06_dequant_in_gemm.ipynb`: where an output scale and an AWQ factor
# go on one weight, a group kernel's partial sums, zero points from sums alone (Going deeper),
# the bytes a dequantize-first call moves, the M at which a kernel turns compute bound, and the
# M from which an int4 kernel loses to fp16 on stored H200 numbers.
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
# ### W8A8: two sets of scales, one rank-1 rescale
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
print("y (W8A8):          ", [[round(v, 4) for v in r] for r in y.tolist()])
print("y (int8 w, fp32 x):", [[round(v, 4) for v in r] for r in (xs @ qw.dequantize().T).tolist()])

# %% [markdown]
# The two y's differ a little: W8A8 also rounds the activations to int8 (lesson 05). The rescale
# itself adds only float rounding, since the int32 accumulator is exact.

# %% [markdown]
# ### Zero points inside an integer GEMM
#
# With asymmetric codes, `x = s_x (q_x - z_x)` and `w = s_w (q_w - z_w)`, the int32 sum expands
# into the GEMM on the raw codes plus three corrections. With a
# static activation zero point, two of them need only the weights and the zero points: they
# are computed once offline and fold into the int32 bias. The third needs a sum over each
# token's activation codes, M x K adds per call. In arithmetic the corrections are almost free;
# as separate operations each is one more pass over memory.

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
# A float bias joins the int32 accumulator only at a static `s_x`: with per-token scales it is
# added in float after the rescale. `bench_gemm.zero_point_cost()` times the corrections as
# separate PyTorch ops next to `torch._int_mm`. On a CPU without int8 dot-product instructions
# (VNNI, AMX) `torch._int_mm` itself takes a slow path, so the ratio it prints understates what
# the same ops cost next to a fast int8 GEMM.
#
# ### Folding needs a producer
#
# AWQ and SmoothQuant move their per-input-channel factors onto the activations, on top of the
# weight's own quantization scales. Such a factor folds offline only into an operation that can
# absorb it: a norm whose every consumer accepts the same scale, or a Linear followed only by
# steps that commute with a positive per-channel scale (ReLU, a per-channel multiply such as
# SwiGLU's `up` branch). After a GELU, AWQ keeps the division as a runtime op (llm-awq's
# `ScaledActivation`): one M x K multiply per call.
#
# ### Bytes of the int4 layouts
#
# Symmetric GPTQ kernels such as Marlin read 4-bit codes and one fp16 scale per group of 128
# (4.125 bits per weight); GPTQ checkpoints also store a packed 4-bit zero per group (about
# 4.16). PyTorch's int4 kernel (tinygemm) reads a bf16 scale and a bf16 zero per group (4.25).
# Each format's weight and FLOPs per weight byte, at M = 1 and 128:

# %%
from qlesson.teach.report import print_table

rows = []
for label, bits in (("fp32", 32), ("int8", 8), ("int4 g128, bf16 scale + zero", 4.25)):
    at = {m: gemm.flops_and_bytes(m, 4096, 4096, bits) for m in (1, 128)}
    rows.append(
        {
            "weights": label,
            "weight MB": at[1]["weight bytes"] / 1e6,
            "FLOPs per weight byte, M = 1": at[1]["FLOPs per weight byte"],
            "M = 128": at[128]["FLOPs per weight byte"],
        }
    )
print_table(rows, {"weight MB": ".1f", "FLOPs per weight byte, M = 1": ".1f", "M = 128": ".1f"})

# %% [markdown]
# ### Reading the CPU benchmark closely
#
# The cell at the end of this subsection adds what section 3 leaves out:
#
# 1. `x half`: a row's time over bf16 `F.linear`'s.
# 2. `of read BW`: how close an M = 1 row came to the read bandwidth (the faster of a read probe
#    and fp32's own read rate, so fp32 sits near 100% by construction).
# 3. The fresh-copy row and three controls: a second fp32 product on codes stored as fp32 (the
#    baseline's work, so its gap estimates the noise), the scale multiply alone, and an
#    input-channel scale folded into `x`.
# 4. The full verdict, with each tie's reason. It compares with the faster of fp32's two
#    timings, so its ratios can differ from the main line's.
# 5. The two bandwidth probes and the cache.
#
# The whole benchmark (more M, every granularity and group size, W8A8) is
# `python -m qlesson.bench gemm --quick`: minutes on a 2-core VM. How it times rows and calls a
# tie: the docstring of `qlesson/bench/gemm.py`. What its rows show:
#
# * Fresh copies: the fresh-copy row (`F.linear(x, q.float()) * s`) and the preallocated row
#   move the same bytes through the same GEMM, so their gap is the cost of allocating the copy
#   (page faults included); the verdict's "preallocated buffer" line gives it as a share of the
#   fresh-copy row's time over fp32. Dequantize-first allocates two such copies per call: in
#   the stored run, two such gaps plus 17/9 of the preallocated row's time come to 64 ms,
#   against its row's 65.
# * PyTorch's CPU weight-only kernels convert codes to fp32 inside the loop and use fp32 FMA
#   units. The int4 one converts each weight block again for every 4 rows of `x`
#   (`aten/src/ATen/native/cpu/int4mm_kernel.cpp`, `int4pack_mm_kernel_`: `BLOCK_M = 4`). So
#   their work per weight grows with M.
# * bf16 `F.linear` at M = 1 reads half fp32's bytes, yet it need not run faster than fp32: its
#   time depends on the kernel PyTorch picks for this CPU (not broken down here).
# * On a CPU with a matrix unit (AMX) the bf16 and W8A8 peaks can sit far above the fp32 one.
#   W8A8, whose arithmetic is int8 itself, is the only compact format here that can keep an
#   edge at large M in principle. On a CPU without int8 dot-product instructions (VNNI, AMX),
#   `torch._int_mm` alone takes most of the W8A8 row's time.
#
# **Each kernel's ridge in this run** (the last table of the cell). The M = 128 rows give each
# kernel's rate in this run, and with the roofline bandwidth a ridge of its own (a rate, not a
# peak, so a lower bound on that ridge). "compute bound from M =" is where the kernel's weight
# read at this bandwidth takes as long as its arithmetic at this rate. A value near 128 means
# M = 128 was still memory bound for that kernel, so its rate is below its peak. A value below
# a few means the kernel's own work, not its bytes, already sets its time at small M on this CPU.

# %% tags=["nbval-ignore-output"]
for line in bench_gemm.detail_lines(bw):
    print(line)
print(bench_gemm.key_table(result, bw))
for line in bench_gemm.verdict(result):
    print(line)
print(f"\nthis run's rates at M = 128, with the roofline bandwidth {bw.read_gb_s:.1f} GB/s:")
rates = bench_gemm.ridge_rows(bench_gemm.rates_at(result, 128), bw.read_gb_s, "GFLOP/s at M = 128")
print_table(
    rates,
    {
        "GFLOP/s at M = 128": ".1f",
        "ridge FLOPs/byte": ".1f",
        "FLOPs per byte at M = 1": ".2f",
        "compute bound from M =": ".1f",
    },
)

# %% [markdown]
# ### The int4 kernel on a GPU: the stored H200 run
#
# Two stored GPU runs (not re-run with this page) divide a measured bf16 GEMM peak, not an
# M = 128 rate, by their read bandwidth:

# %%
for gpu in bench_gemm.stored_rooflines():
    ridge = gpu["bf16 GEMM GFLOP/s"] / gpu["read GB/s"]
    print(f"{gpu['device']}, torch {gpu['torch']} (stored):")
    print(f"  bf16 GEMM {gpu['bf16 GEMM GFLOP/s'] / 1e3:.0f} TFLOP/s, read {gpu['read GB/s']:.0f} GB/s")
    print(f"  ridge {ridge:.0f} FLOPs per byte: a 16-bit weight's product turns compute bound from M = {ridge:.0f}")

# %% [markdown]
# So on such a GPU 16-bit weights stay memory bound up to M in the hundreds, and a kernel that
# reads int4 codes could in principle win that far. The stored H200 run
# (`python -m qlesson.bench gemm --gpu-only`, CUDA events, an fp16 baseline, PyTorch's own ops)
# cycles 15 copies of every weight (for every format more than twice the 60 MiB L2 cache), so
# every row reads its weight from memory, and queues 10 calls back to back between two events, as a model
# queues its layers. (The same calls timed one at a time: `gemm_nvidia_h200_alone.csv`; an
# older H100 run: `gemm_nvidia_h100.csv`.) PyTorch's int4 kernel (tinygemm) takes bf16 only;
# its int8 weight-only op gets fp16 activations and casts them to fp32 inside.

# %% tags=["nbval-ignore-output"]
recall.predict("06", "int4_at_1_h200")

# %%
h200 = bench_gemm.read_csv(bench_gemm.RESULTS / "gemm_nvidia_h200.csv")
read_gb_s = next(g["read GB/s"] for g in bench_gemm.stored_rooflines() if g["device"] == h200[0].machine)
for m in (1, 256):
    half, fp32 = bench_gemm.find_row(h200, m, "float16 F.linear"), bench_gemm.find_row(h200, m, "fp32")
    int4 = bench_gemm.find_row(h200, m, "fused int4 weight-only group 128")
    times = ", ".join(
        f"{k} {r.median_ms * 1e3:3.0f} us" for k, r in (("fp32", fp32), ("fp16", half), ("int4 g128", int4))
    )
    print(f"M = {m:>3}: {times} (int4 {int4.median_ms / half.median_ms:.2f}x fp16's time)")
    if m == 1:
        floors = f"fp16 {half.weight_bytes / read_gb_s / 1e3:.1f} us, int4 {int4.weight_bytes / read_gb_s / 1e3:.1f} us"
        print(f"         read floors: {floors}; int4's bytes are {int4.weight_bytes / half.weight_bytes:.2f}x fp16's")

# %% [markdown]
# At M = 1 int4 takes 0.57x fp16's time, but not through its bytes alone: fp32, with twice
# fp16's bytes, takes only 25 us, so at fp32's read rate fp16 would take about 13 us, int4's
# time. This run shows tinygemm beating an fp16 call that is slow here, not int4's bytes
# winning. At M = 256 int4's time grows many times over while fp16's barely moves: work that
# grows with M, not the weight's bytes, sets int4's time there. The exercise's last task finds
# where the two cross. The whole run:

# %%
print(f"stored: {h200[0].machine}, torch {h200[0].torch}, CUDA events, calls queued back to back")
print(bench_gemm.key_table(h200))
for m in sorted({r.m for r in h200}):
    share = bench_gemm.scale_shares(h200, m)
    print(f"M = {m}: separate scale multiply {share['scale after us']:.0f} us")
    print(f"  {bench_gemm.faster_than_baselines(h200, m)}")
rates = {p: bench_gemm.tflops(h200, 256, p) for p in ("float16 F.linear", "fused int4 weight-only group 128")}
print("M = 256, TFLOP/s: " + ", ".join(f"{p} {v:.0f}" for p, v in rates.items()))
alone, w8a8 = (bench_gemm.find_row(h200, 256, p).median_ms * 1e3 for p in ("int8 GEMM alone", "W8A8"))
print(f"M = 256: torch._int_mm alone {alone:.0f} us, the whole W8A8 row {w8a8:.0f} us")

# %%
from qlesson.teach import plots

_ = plots.gemm_times(h200, rates=False)

# %% [markdown]
# What the run (and the figure of its key rows' times) shows:
#
# * fp16 `F.linear` takes about the same time at M = 1, 16 and 256, although its FLOPs grow
#   256-fold.
# * PyTorch's CUDA int8 weight-only op (torch 2.11) is a reference kernel (one thread per output element,
#   scalar multiply-adds, no tensor cores): slower than fp32 at every M.
# * The separate scale multiply takes nearly the same microseconds at every M,
#   while its output grows 256-fold: a fixed cost per call, the cost of one more operation
#   (most likely the host's dispatch and launch of one eager PyTorch op; not broken down here).
#   A per-output-channel scale applied in the GEMM's epilogue, to the accumulator tile in
#   registers, needs no call of its own (not timed here).
# * The W8A8 rows exist only at M = 256: CUDA `torch._int_mm` refuses M of 16 or less. W8A8 is
#   slower than fp16 there. The run also times `torch._int_mm` alone (its last line): the int8
#   GEMM itself takes about fp16's time, so almost all of the W8A8 row is its separate
#   quantize and rescale passes, each a PyTorch op of its own. Serving stacks fuse them around
#   a tuned int8 kernel.

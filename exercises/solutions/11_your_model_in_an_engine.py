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
# > The exercise is `exercises/11_your_model_in_an_engine.ipynb`; try it first.

# %% [markdown]
# # Exercise 11 · Your model in an engine (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/11_your_model_in_an_engine.ipynb`.
# Read an engine's int4 blocks back, count a checkpoint's bytes before writing it, and choose a
# plan within a bits budget.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). Some cases are hidden:
# a failure there shows only the hint. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 11`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%
import math

import numpy as np
import torch

from qlesson.course import recall
from qlesson.course.tasks import check
from qlesson.lessons.l11_your_model_in_an_engine import try_plan
from qlesson.quant.packed import Scheme

# %% [markdown]
# ## Task 1 · Read ONNX Runtime's int4 blocks back
#
# Lesson 11 wrote MiniLM's int4 weights as ONNX Runtime's `MatMulNBits` inputs, symmetric (no
# `zero_points` input). For a weight `W [N, K]` (N outputs, K inputs) in blocks of `block_size`
# inputs, the file holds `B`, a numpy `uint8` array `[N, K // block_size, block_size // 2]`, and
# `scales`, float32 `[N * (K // block_size)]`. Write `read_matmulnbits(B, scales, block_size)`:
# return the dequantized weight `[N, K]` as a float32 tensor.
#
# Predict first: which two elements of a block share its first byte?


# %% tags=["solution"]
def read_matmulnbits(B, scales, block_size):
    ...  # STUB
    # BEGIN SOLUTION
    n, n_blocks, _ = B.shape
    nibbles = np.stack([B & 0x0F, B >> 4], axis=-1)  # byte j: element 2j low, 2j + 1 high
    q = nibbles.reshape(n, n_blocks, block_size).astype(np.float32) - 8  # stored around the default zero point 8
    w = q * scales.reshape(n, n_blocks)[..., None]  # one scale per block, row by row
    return torch.from_numpy(w.reshape(n, n_blocks * block_size))
    # END SOLUTION


# %% qlesson={"task": "11.read_matmulnbits"} tags=["check"]
check("11.read_matmulnbits", read_matmulnbits)

# %% [markdown]
# ## Task 2 · A checkpoint's bytes, before you write it
#
# Write `file_bytes(linears, others, plan)`: the bytes of the tensors of a checkpoint stored
# the way `qlesson.quant.packed` stores a quantized model (lesson 11, section 1), exactly.
#
# * `linears`: `{short name: (out, in)}`, every Linear layer's weight shape; each Linear also
#   has a float32 bias.
# * `others`: `{name: shape}`, every other tensor of the model (embeddings, LayerNorms), float32.
# * `plan`: `{short name: spelling}` for the quantized Linear weights, e.g. `"int4-g128"`,
#   `"int8-channel"`, `"int4-g64-asym"` (`Scheme.parse(spelling)` gives its `bits`,
#   `granularity` and `symmetric`); a layer the plan leaves out, or marks `"float"`, stays
#   float32.
#
# How `packed` stores a quantized weight: its codes row by row, each row of codes starting on
# a whole byte; one fp16 scale per row (per-channel), per group of a row, or for the whole
# tensor (per-tensor); and, for an `-asym` scheme, one uint8 zero point per scale.
#
# Count only the tensors' bytes (no file header). Return an `int`.


# %% tags=["solution"]
def file_bytes(linears, others, plan):
    ...  # STUB
    # BEGIN SOLUTION
    total = sum(4 * math.prod(shape) for shape in others.values())
    for name, (out, inp) in linears.items():
        total += 4 * out  # the bias
        spelling = plan.get(name, "float")
        if spelling == "float":
            total += 4 * out * inp
            continue
        s = Scheme.parse(spelling)
        per_row = {"PerTensor": 0, "PerChannel": 1}.get(type(s.granularity).__name__)
        scales = 1 if per_row == 0 else out if per_row == 1 else out * (inp // s.granularity.group_size)
        total += out * math.ceil(inp * s.bits / 8)  # each row of codes starts on a whole byte
        total += 2 * scales + (0 if s.symmetric else scales)  # fp16 scales, one uint8 zero point each
    return total
    # END SOLUTION


# %% qlesson={"task": "11.file_bytes"} tags=["check"]
check("11.file_bytes", file_bytes)

# %% [markdown]
# ## Task 3 · A plan within a budget (a challenge)
#
# You may spend **4.5 bits per Linear weight** on MiniLM's 36 encoder layers (`L0.query` to
# `L5.output`; the pooler is not part of the sentence embedding): every byte a layer stores
# counts, its codes, fp16 scales and zero points; a layer left `"float"` counts 16 bits a weight.
# Set `plan` to a dict `{pattern: scheme}` as in the lesson (patterns over the short names,
# first match wins), with schemes from this menu: `int8-channel`, `int8-tensor`, `int4-g32`,
# `int4-g64`, `int4-g128`, `int4-channel`, `int3-g32`, `int3-g64`, any of them followed by
# `-asym`, and `"float"`.
#
# * **Pass**: within the budget, and the embeddings of 24 held-out sentences (not in any
#   lesson) are closer to the float model's than uniform `int4-g32`'s (the finest uniform
#   symmetric plan within the budget) by at least 0.001, by the lesson's measure (mean cosine
#   to float).
# * **Stretch**: a mean cosine of 0.975 or more on the held-out sentences.
#
# `try_plan(plan)` prints a plan's bits per weight, counted as the grader counts them, and its
# quality on lesson 03's 24 sentences (the grader scores the 24 others). The first call loads
# MiniLM (about 15 s). Start from the baseline and one idea:

# %%
try_plan({"*": "int4-g32"})

# %% tags=["solution"]
plan = ...  # STUB
# BEGIN SOLUTION
# int8 where one layer at int4 costs most (L5's value and attention output), zero points elsewhere: a zero
# point costs 8 bits per group, half a fp16 scale, and buys more than halving the group
plan = {"L5.value": "int8-channel", "L5.attention output": "int8-channel", "*": "int4-g64-asym"}
try_plan(plan)
# END SOLUTION

# %% qlesson={"task": "11.plan"} tags=["check"]
check("11.plan", plan)

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 11.1
#
# MiniLM's word-embedding table is [30522, 384], stored float32. How many megabytes (1 MB = 10**6 bytes)?
#
# Answer with a number.

# %% tags=["solution"]
recall_1 = ...  # STUB
# BEGIN SOLUTION
recall_1 = 46.88
# END SOLUTION

# %% qlesson={"task": "recall 11.1"} tags=["check"]
recall.answer("11", 1, recall_1)

# %% [markdown]
# ### Recall 11.2
#
# ORT's int4 MiniLM: cosines above 1 - 1e-9 to qlesson's float64 simulation of its codes. What does the gap say?
#
# - **a)** The engine also rounded the activations to 8 bits
# - **b)** The engine re-quantized the weights with its own rounding
# - **c)** The engine computes in float32; the codes and scales are the same
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_2 = ...  # STUB
# BEGIN SOLUTION
recall_2 = "c"
# END SOLUTION

# %% qlesson={"task": "recall 11.2"} tags=["check"]
recall.answer("11", 2, recall_2)

# %% [markdown]
# ### Recall 11.3
#
# The lesson's graph feeds MatMul W^T [in, out]. Per-output-channel int8 scales on W^T in DequantizeLinear: which axis?
#
# - **a)** axis=1: the output channels are the columns of W^T
# - **b)** axis=0, as in PyTorch's [out, in] layout
# - **c)** Any axis: the scales are a vector either way
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_3 = ...  # STUB
# BEGIN SOLUTION
recall_3 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 11.3"} tags=["check"]
recall.answer("11", 3, recall_3)

# %% [markdown]
# ### Recall 11.4
#
# One block of 32 int4 codes, packed two to a byte. Which two elements share the first byte?
#
# - **a)** Elements 0 and 16 in both formats
# - **b)** In llama.cpp's Q4_0, elements 0 and 16; in ONNX Runtime's MatMulNBits, elements 0 and 1
# - **c)** Elements 0 and 1 in both formats
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "b"
# END SOLUTION

# %% qlesson={"task": "recall 11.4"} tags=["check"]
recall.answer("11", 4, recall_4)

# %% [markdown]
# ### Recall 11.5
#
# Lesson 06: where can a weight-only int4 weight make a matrix product faster than float32 weights?
#
# - **a)** Always: it reads about an eighth of the bytes
# - **b)** At large batches, where there is the most arithmetic to save
# - **c)** At small batches, where reading the weight sets the time
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_5 = ...  # STUB
# BEGIN SOLUTION
recall_5 = "c"
# END SOLUTION

# %% qlesson={"task": "recall 11.5"} tags=["check"]
recall.answer("11", 5, recall_5)

# %% [markdown]
# ### Recall 11.6
#
# llama.cpp's Q4_0 MiniLM matches the simulation of its file less closely than ORT's int4 file matches its own. Why?
#
# - **a)** On a CPU, llama.cpp also rounds each activation row to 8-bit blocks and multiplies integers
# - **b)** llama.cpp re-quantizes the weights with its own rule when it loads the file
# - **c)** llama.cpp stores its scales in fp16, and the simulation uses float32 scales
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_6 = ...  # STUB
# BEGIN SOLUTION
recall_6 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 11.6"} tags=["check"]
recall.answer("11", 6, recall_6)

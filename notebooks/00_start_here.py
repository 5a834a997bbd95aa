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
#   # ruff: noqa: E501 -- the course map repeats README's rows, one line each
# ---

# %% [markdown]
# # 00 · Start here: one ruler or many?
#
# **The question**: What will this course teach me, and how do I work through it?
#
# **The answer**: Quantization replaces each number `x` (a weight, an activation) with a small
# integer `q` times a **scale** `s` that it shares with other numbers: `x ≈ s·q`, plus a zero
# point in some schemes. This course measures which numbers should share a scale, how many and
# along which axis: you predict, run, then grade your exercises with `make grade`.
#
# **What you will do**: check your machine, make two practice predictions, see the course map,
# learn how to run a lesson and where your work lives, and grade your (empty) exercises once.
#
# **What you need**: Python and a first acquaintance with matrix multiplies; no quantization
# background. No GPU and no separate model download: the real model (all-MiniLM-L6-v2) comes
# with the course's Python packages.
#
# **Time**: about 13 minutes, one of them to try `make grade`; *Going deeper*: about 2 more.
#
# ## 1. What your machine has
#
# Run each cell with **Shift+Enter**, one at a time. The first code cell of every lesson prints the
# versions in use. Read two lines: `kernel Python` should name the course's venv (or your conda
# environment), and `pins` should say every pinned version matches. If either does not, its line
# says what to do.

# %% tags=["nbval-ignore-output"]
import math

import torch

import qlesson as ql
from qlesson.course import recall

ql.show_environment()

# %% [markdown]
# ## 2. One ruler or many
#
# A scale is the spacing of the ticks on a ruler. The course compares three ways to share it:
#
# * **per-tensor**: one ruler for the whole weight matrix;
# * **per-channel**: one ruler for each output channel;
# * **per-group**: one ruler for each run of, say, 32 or 128 weights along a row.
#
# Every lesson asks you to predict a result before the cell that shows it. Try it: pick an
# answer below, press **Lock in**, then run the next cell.

# %% tags=["nbval-ignore-output"]
recall.predict("00", "count_scales")

# %%
shape = (4096, 4096)  # a Linear weight: [out_features, in_features]
print(f"{'':<16} {'scales':>7}  their shape")  # the shape () is a single number
for name, g in [("per-tensor", ql.PerTensor()), ("per-channel", ql.PerChannel()), ("per-group, 128", ql.PerGroup(128))]:
    grid = ql.scale_shape(g, shape)
    print(f"{name:<16} {math.prod(grid):>7,}  {grid}")

# %% [markdown]
# Which way does a channel run? Predict:

# %% tags=["nbval-ignore-output"]
recall.predict("00", "channel_axis")

# %%
w = torch.nn.Linear(384, 1536).weight  # a fresh Linear of that shape; MiniLM's real weights come in lesson 03
print("weight shape:", tuple(w.shape), "  per-channel scales:", ql.scale_shape(ql.PerChannel(), tuple(w.shape)))

# %% [markdown]
# PyTorch's `Linear(in_features, out_features)` stores its weight as `[out_features,
# in_features]`: output `j` is row `j` dotted with the input, so a row is an output channel.
# One scale per output row; lesson 03 shows why the output axis, and not the input one. What
# those extra scales buy, and what they cost, is what lessons 02 to 04 measure.
#
# ## 3. The course map
#
# Times: the lesson, plus its exercise.
#
# | lesson | the question it answers | time |
# |---|---|---|
# | `01_the_ruler` | How does a quantizer turn a real number into a small integer, and where does its error come from? | 15 + 23 min |
# | `02_one_ruler_or_many` | When the rows of a weight matrix have very different magnitudes, what does giving each row its own scale buy over one shared scale? | 18 + 25 min |
# | `03_per_channel_on_real_weights` | How much does one scale per output channel, rather than one per tensor, matter on a real transformer's weights, and why the output axis? | 18 + 24 min |
# | `04_groups_and_formats` | When one scale per channel is still too coarse at 4 bits, what does one scale per run of `g` weights buy, and what does it cost? | 16 + 33 min |
# | `05_zero_points_and_activations` | How should the activations of a transformer, which arrive at run time, be quantized to int8? | 17 + 35 min |
# | `06_dequant_in_gemm` | When does a weight-only quantized weight make a matrix multiply faster than float weights do? | 17 + 40 min |
# | `07_calculator` | What do a ruler's 4 bytes buy? | 16 + 29 min |
# | `08_scales_of_scales` | Small blocks make fp16 scales expensive; how many bits does a block's scale really need? | 17 + 29 min |
# | `09_smarter_rounding` | Can smarter rounding (GPTQ) stand in for a finer granularity? | 17 + 40 min |
# | `10_which_axis` | When a transformer's cached keys and values are quantized, should each scale cover one token or one channel? | 15 + 41 min |
# | `11_your_model_in_an_engine` | Does the granularity you chose survive a real engine's file format, and what does it cost there? | 19 + 30 min |
#
# In all: about 3 hours of lessons and 6 hours of exercises.
#
# ## 4. How to work through a lesson
#
# Take 01 to 05 in order. After that, each lesson's *What you need* line names the lessons it
# builds on.
#
# Each lesson opens with its question and a two-sentence answer; the numbered sections are the
# evidence, with a few predictions to commit to and, in some lessons, a slider to move. It ends
# with a summary and a *Pause and recall* quiz (this page has none), then **Going deeper**:
# notes, checks and caveats to read when you want them; the main line never needs them.
#
# Start (or come back) with `make lab`; it opens this page.
#
# **Your workspace.** JupyterLab shows `workspace/`: your own copies of the lessons and
# exercises, outputs cleared. Edit, break and save anything; git ignores this folder.
#
# ## 5. Exercises and grading
#
# Every lesson except this one has an exercise notebook in `exercises/`: a few coding tasks and
# recall questions, each with a check cell below it. Write your code or answer in the cells
# marked as yours, run the check cell, and save. Then grade them from the repository's root
# folder, the one above `workspace/`. With conda, see *More ways to grade* under Going deeper.
# In the lab:
#
# 1. open **File ▸ New ▸ Terminal** (JupyterLab's file browser cannot show the root);
# 2. type `cd "$JUPYTER_SERVER_ROOT/.."` (Windows PowerShell: `cd $env:JUPYTER_SERVER_ROOT\..`);
# 3. type `make grade` (Windows: `py course.py grade`).
#
# If make answers `No rule to make target 'grade'`, you are not in the course's folder: `cd`
# into the folder that holds `Makefile`.
#
# It reads your saved notebooks, never changes them, and prints a score table; tasks and recall
# questions both count. **Try it now.** You have started nothing, so every exercise shows 0
# done, 0 failing, and all its tasks *to do*. An unchanged notebook is not run, so this takes
# seconds. After you have tried a task, read its worked solution there with
# `less exercises/solutions/01_the_ruler.py` (press `q` to leave).
#
# ## Summary
#
# * The course asks one question: which numbers should share a scale, how many, and along which
#   axis?
# * Run cells one at a time, and predict before you run.
# * You work in `workspace/`; `make grade`, run from the repository's root, scores your
#   exercises. Something wrong? `make doctor`, from the same terminal.
#
# Next: open `01_the_ruler.ipynb` beside this page in the file browser; its exercise is
# `../exercises/01_the_ruler.ipynb`.

# %% [markdown]
# ## Going deeper
#
# ### Conventions used everywhere
#
# * Weights are `[out_features, in_features]`, as in `torch.nn.Linear`. "Channel" means an
#   output channel (a row) unless a lesson says otherwise.
# * `ql.quantize`'s symmetric signed int*b* uses the restricted range `[-(2^(b-1)-1), 2^(b-1)-1]`
#   (int4 is [-7, 7]) and rounds half to even, as `torch.round` does. llama.cpp's formats
#   (lessons 04 and 08) have their own ranges and rounding.
# * A few numbers are stored readings (GPU timings, long studies), and say so where they appear.
# * To see how a function works, run `ql.quantize??` in a cell: it prints the source.
#
# ### Course updates
#
# `git pull` brings course updates without conflicts, since git ignores `workspace/`. `make lab`
# then refreshes every copy you have not edited, and puts the new version of an edited one
# beside it (`new.NN_name.ipynb`).
#
# ### More ways to grade, Windows and conda
#
# One exercise: `make grade 01` (or `.venv/bin/python -m qlesson grade 01`).
#
# With conda, every `make` command looks for the course's `.venv` (`make lab` or `make grade`
# would build one, about 2 GB). In the same folder, type `python -m qlesson lab`,
# `python -m qlesson grade` and `python -m qlesson.course.doctor` instead; the doctor's `venv`
# line then fails, as expected.
#
# On Windows, start with `py course.py lab`. To grade, in the PowerShell terminal type
# `cd $env:JUPYTER_SERVER_ROOT\..`, then `py course.py grade` (one exercise: `py course.py grade 01`),
# and read a solution with `Get-Content exercises\solutions\01_the_ruler.py`. Instead of
# `make doctor`, type `py course.py doctor`.

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
# # 00 · Start here: one ruler or many?
#
# **The question**: How does this course work, and what will it teach me?
#
# **The answer**: Quantization stores each weight as a small integer times a **scale**, and
# this course is about one choice: how many weights share a scale. Ten lessons each answer
# one question with numbers computed when you run them; exercises let you practise, and
# `make grade` scores them.
#
# **What you will do**: see the course map, check your machine, and learn where your work
# lives and how it is graded.
#
# **What you need**: Python and a first acquaintance with matrix multiplies; no quantization
# background. No GPU and nothing to download: the real model (all-MiniLM-L6-v2) ships inside
# a Python package.
# **Time**: about 5 minutes.
#
# ## 1. One ruler or many
#
# A scale is the spacing of the ticks on a ruler. The course compares three ways to share it:
#
# * **per-tensor**: one ruler for the whole weight matrix;
# * **per-channel**: one ruler for each output channel (each row of a Linear weight);
# * **per-group**: one ruler for each small block of, say, 32 or 128 weights.
#
# ## 2. The course map
#
# Times: the lesson, plus its exercise.
#
# | lesson | the question it answers | time |
# |---|---|---|
# | `01_the_ruler` | What are scale, zero point, rounding and clamping, and what does one more bit buy? | 14 + 23 min |
# | `02_one_ruler_or_many` | Why does a quiet row collapse to zeros under one shared int4 scale? | 16 + 18 min |
# | `03_per_channel_on_real_weights` | How unequal are a real transformer's output channels? | 15 + 25 min |
# | `04_groups_and_formats` | What do groups cost and buy, and what exactly does llama.cpp store? | 25 + 26 min |
# | `05_zero_points_and_activations` | When does an asymmetric range help? Why are activations harder? | 37 + 15 min |
# | `06_dequant_in_gemm` | Where do the scales go inside a matrix multiply, and what does that cost? | 64 + 15 min |
# | `07_calculator` | On numbers you paste, what does one ruler per channel buy, and what does it cost? | 11 min |
# | `08_scales_of_scales` | How many bits does a scale need, and where do they go (Q4_K, MXFP4, NVFP4)? | 74 + 19 min |
# | `09_smarter_rounding` | How far do GPTQ and AWQ close the gap between granularities? | 56 + 19 min |
# | `10_which_axis` | In the KV cache, should keys and values get a scale per token or per channel? | 30 + 15 min |
#
# ## 3. What your machine has
#
# The first cell of every lesson prints the versions in use and whether a CUDA GPU is present.
# The course needs only a CPU; GPU cells skip themselves when there is none.

# %% tags=["nbval-ignore-output"]
import qlesson as ql

ql.show_environment()

# %% [markdown]
# ## 4. How to work through a lesson
#
# Run each lesson top to bottom (**Run ▸ Run All Cells**). Where a lesson asks you to predict
# a result before the cell that shows it, lock in an answer first, then run the cell.
# To see how a function works, run `ql.quantize??` in a cell to print its source.
#
# **Your workspace.** JupyterLab shows `workspace/`: your own copies of the lessons and
# exercises. Edit, break and save anything. Git ignores this folder, so `git pull` brings
# course updates without conflicts. `make lab` then refreshes every copy you have not edited,
# and puts the new version of an edited one beside it (`NN_name.new.ipynb`).
#
# ## 5. Exercises and grading
#
# Every lesson except this one and 07 (the calculator) has an exercise notebook in
# `exercises/`. Write your code in the cells marked as yours, run the check cell below each,
# and save. Then grade all of them from the repository's root folder:
#
# ```bash
# make grade
# ```
#
# It reads your saved notebooks, never changes them, and prints a score table.
#
# The repository's root is the folder above `workspace/`, so JupyterLab's file browser cannot
# show it. To get there inside JupyterLab, open **File ▸ New ▸ Terminal** and type
# `cd "$JUPYTER_SERVER_ROOT/.."`. From there you can also read a worked solution, after you
# have tried the task: `less exercises/solutions/02_one_ruler_or_many.py`.
#
# ## Summary
#
# * The course asks one question: how many weights should share a scale?
# * Each lesson answers one part of it.
# * You work in `workspace/`; `make grade`, run from the repository's root, scores your
#   exercises.
#
# Next: **01 · The ruler**.

# %% [markdown]
# ## Going deeper
#
# ### Conventions used everywhere
#
# * Weights are `[out_features, in_features]`, as in `torch.nn.Linear`. "Channel" means an
#   output channel (a row) unless a lesson says otherwise.
# * Symmetric signed int*b* uses the restricted range `[-(2^(b-1)-1), 2^(b-1)-1]` (int4 is
#   [-7, 7]). Rounding is half to even, as in `torch.round`.
# * Colours: red is per-tensor, teal is per-channel, yellow is per-group, dark grey is the
#   original values, in every plot.
#
# ### More ways to grade
#
# * One exercise: `.venv/bin/python -m qlesson grade 02` (on Windows,
#   `.venv\Scripts\python -m qlesson grade 02`).
# * The authors check the course itself with `make test`: it re-runs every lesson under
#   `pytest --nbval` and compares each cell's output with the stored one, except in cells
#   tagged `nbval-ignore-output` (sliders, timings, the environment printout).

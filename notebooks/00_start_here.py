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
# Quantization stores each weight as a small integer plus a **scale**: the spacing of the
# ticks on a ruler. This course is about one question that decides whether a quantized
# model keeps its quality: **how many rulers do you use?**
#
# * **per-tensor**: one ruler for the whole weight matrix;
# * **per-channel**: one ruler for each output channel (each row of a Linear weight);
# * **per-group**: one ruler for each small block of, say, 32 or 128 weights.
#
# **Who it is for.** ML engineers, students, and people preparing for inference-optimization
# interviews. You should be comfortable with Python and have met a matrix multiply; no
# quantization background is assumed.
#
# **What you need.** This repo, set up with `make lab` (which opened this page). No GPU and no
# internet: the real model (all-MiniLM-L6-v2) ships inside a Python package.
#
# **Your workspace.** What you see in JupyterLab is `workspace/`, your own copy of the lessons
# and exercises: edit, break and save anything. Git ignores it, so `git pull` brings course
# updates without conflicts; `make lab` then updates every copy you have not edited and puts
# the new version of one you have edited beside it (`NN_name.new.ipynb`), never over it.
#
# ## What you will learn, notebook by notebook
#
# | notebook | question it answers |
# |---|---|
# | `01_the_ruler` | What are scale, zero point, rounding and clamping; what does a bit buy? |
# | `02_one_ruler_or_many` | Why does a quiet row collapse to zeros under one shared int4 scale? |
# | `03_per_channel_on_real_weights` | How unequal are a real transformer's output channels? |
# | `04_groups_and_formats` | What do groups cost and buy, and what exactly does llama.cpp store? |
# | `05_zero_points_and_activations` | When does an asymmetric range help; why are activations harder? |
# | `06_dequant_in_gemm` | Where do the scales go inside a matrix multiply, and what does that cost? |
# | `07_calculator` | Paste your own channels: scales, zero points, errors and bytes side by side. |
# | `08_scales_of_scales` | How many bits does a scale need, and where do they go (Q4_K, MXFP4, NVFP4)? |
# | `09_smarter_rounding` | Same ruler, smarter ticks: how far do GPTQ and AWQ close the granularity gap? |
# | `10_which_axis` | Keys and values in the KV cache: a scale per token or per channel? |
#
# ## How to move through it
#
# Run each notebook top to bottom (**Run ▸ Run All Cells**). Every number you see is computed
# by the small `qlesson` package when the cell runs; nothing is typed in by hand. Cells are
# short on purpose: to see how something is computed, open the function's source from a
# cell (`ql.quantize??` shows it), or open `qlesson/` in the repository with an editor (the
# JupyterLab file browser starts in `workspace/`, which holds copies of the lessons and exercises).
# Sliders appear where moving a value teaches more than reading it; each has a static figure
# beside it, so the lesson also reads on a page where widgets do not render.
# Each lesson ends with **Pause and recall** questions; answer them before you open the
# answers.

# %% [markdown]
# ## What your machine has
#
# The first cell of every notebook prints the versions in use and whether a CUDA GPU is
# present. The course needs only a CPU; GPU cells skip themselves when there is none.

# %% tags=["nbval-ignore-output"]
import qlesson as ql

ql.show_environment()

# %% [markdown]
# ## How grading works
#
# The course is checked by re-running it. `pytest --nbval` executes a notebook from the top
# and compares what each cell prints now with the output stored in the file. A green run
# means every stored number was reproduced.
#
# ```bash
# .venv/bin/pytest --nbval notebooks/02_one_ruler_or_many.ipynb   # one lesson, as the course ships it
# make test                                                      # the whole course
# ```
#
# When a cell disagrees, nbval shows a diff. Read it the right way round: **`+` lines are
# the stored (expected) output, `-` lines are what ran now.** The cell below shows one such
# diff, produced by pytest's own comparison of a stored output with a new one.

# %%
from qlesson.course.grading import explain_diff

explain_diff(stored="scale 0.4429\n", ran_now="scale 0.0214\n")

# %% [markdown]
# **Exercises.** Every lesson except this one and 07 (the calculator, itself a tool to play
# with) has an exercise notebook in `exercises/` with 3 to 6 tasks and a few recall questions.
# Write your code in the cells marked as yours, run the check cell below each, save, and grade
# everything with one command from the repo root:
#
# ```bash
# make grade                          # your exercises in workspace/: a score table
# .venv/bin/python -m qlesson grade 02     # one exercise (Windows: .venv\Scripts\python)
# ```
#
# Grading reads your saved notebooks and never modifies them. Worked solutions are in the
# repo's `exercises/solutions/` (spoilers: try first).
#
# Cells whose output cannot be identical from run to run (sliders, timings, the
# environment printout above) carry the tag `nbval-ignore-output`: they must still run
# without error, but their output is not compared.
#
# ## Conventions used everywhere
#
# * Weights are `[out_features, in_features]`, as in `torch.nn.Linear`; "channel" means an
#   output channel (a row) unless a lesson says otherwise.
# * Symmetric signed int*b* uses the restricted range `[-(2^(b-1)-1), 2^(b-1)-1]`
#   (int4 is [-7, 7]); rounding is half to even, as in `torch.round`.
# * Colours: red is per-tensor, teal is per-channel, yellow is per-group, dark grey is the
#   original values, in every plot.
#
# Next: **01 · The ruler**.

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
# > The exercise is `exercises/10_which_axis.ipynb`; try it first.

# %% [markdown]
# # Exercise 10 · Which axis? The KV cache (SOLUTIONS: spoilers)
#
# Practice for lesson `notebooks/10_which_axis.ipynb`.
# What a KV cache costs, keys quantized per channel, the most keys a streaming cache keeps in
# fp16, choosing an axis by measuring, what a per-channel key cache really costs in bits, and
# finding how much attention a tiny token must take to flip a value cache's axis.
#
# **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
# check cell right below it. Write your code, run your cell, then run the check: a pass prints
# one `✓` line per test case; a failure shows the first failing case, what came back, what
# was expected and a hint (naming the mistake when it is a known one). The cases vary every
# argument (bit widths, group sizes, shapes) and include edge cases, so hard-coding a number
# that works for one case fails another. When you are done, save the notebook and grade it
# from the repo root with `make grade` (or `python -m qlesson grade 10`): grading runs your
# functions in a fresh process against the course's own cases and ignores what the check
# cells printed, so a print or a warning in your code is fine. Leave the check cells as they
# are: an edited or deleted check cell is reported, never counted as a pass.

# %%
import torch

from qlesson.course import recall
from qlesson.course.tasks import check

# %% [markdown]
# ## Task 1 · The bytes of a KV cache
#
# Write `kv_bytes(layers, kv_heads, head_dim, tokens, bytes_per_value)`: the bytes one sequence's
# cache takes (`bytes_per_value` is 2 for fp16, 1 for FP8).


# %% tags=["solution"]
def kv_bytes(layers, kv_heads, head_dim, tokens, bytes_per_value):
    ...  # STUB
    # BEGIN SOLUTION
    return 2 * layers * kv_heads * head_dim * tokens * bytes_per_value
    # END SOLUTION


# %% qlesson={"task": "10.kv_bytes"} tags=["check"]
check("10.kv_bytes", kv_bytes)


# %% [markdown]
# ## Task 2 · Keys per channel, asymmetric
#
# Write `keys_per_channel(k, bits)`: `k [tokens, channels]`; return `k` quantized and dequantized
# with KIVI's asymmetric ruler, one per **channel** (column), its minimum kept as a float. A
# channel whose values are all equal (any channel of a one-token group) must come back exact.


# %% tags=["solution"]
def keys_per_channel(k, bits):
    ...  # STUB
    # BEGIN SOLUTION
    lo, hi = k.amin(0, keepdim=True), k.amax(0, keepdim=True)
    scale = (hi - lo) / (2**bits - 1)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))  # a constant channel: any step, code 0
    return torch.round((k - lo) / safe).clamp(0, 2**bits - 1) * scale + lo
    # END SOLUTION


# %% qlesson={"task": "10.keys_per_channel"} tags=["check"]
check("10.keys_per_channel", keys_per_channel)


# %% [markdown]
# ## Task 3 · The most keys in fp16 at once
#
# A cache streams its keys: the `residual` newest tokens stay in fp16, and the older ones are
# quantized per channel in whole groups of `group` tokens, since a group's ruler needs all its
# tokens. This is the lesson's policy (*Going deeper*, "Streaming"), and
# `qlesson.quant.kv.quantized_tokens` counts the keys it has quantized at one moment. The cache
# grows one token at a time up to `tokens` tokens. Write `peak_fp16_keys(tokens, residual, group)`:
# the most tokens whose keys are in fp16 at once during that growth, the fp16 memory a server
# must reserve for one sequence's keys.


# %% tags=["solution"]
def peak_fp16_keys(tokens, residual, group):
    ...  # STUB
    # BEGIN SOLUTION
    from qlesson.quant.kv import quantized_tokens

    return max(t - quantized_tokens(t, "channel", group=group, residual=residual) for t in range(tokens + 1))
    # END SOLUTION


# %% qlesson={"task": "10.peak_fp16_keys"} tags=["check"]
check("10.peak_fp16_keys", peak_fp16_keys)

# %% [markdown]
# ## Task 4 · Choose the axis by measuring
#
# One attention head: `q`, `k`, `v`, each `[tokens, dim]`. The cache will store `which` (`"k"`
# or `"v"`) at `bits` bits with KIVI's asymmetric rulers (your Task 2; its transpose gives a
# ruler per token), the other tensor exact. Write `choose_axis(q, k, v, which, bits)`: return
# `"token"` or `"channel"`, whichever gives the smaller squared error in the head's output (the
# attention output computed from the cache, summed over its entries). Do not apply a rule from
# a paper: measure. The visible cases are a key cache with one loud channel and a value cache
# with a sink (a token every query leans on, whose value is tiny); hidden cases have other
# structures.


# %% tags=["solution"]
def choose_axis(q, k, v, which, bits):
    ...  # STUB

    # BEGIN SOLUTION
    def head(k, v):
        return torch.softmax(q @ k.T / k.shape[1] ** 0.5, dim=-1) @ v

    exact = head(k, v)
    errors = {}
    for axis, rulers in (
        ("token", lambda x: keys_per_channel(x.T, bits).T),
        ("channel", lambda x: keys_per_channel(x, bits)),
    ):
        out = head(rulers(k), v) if which == "k" else head(k, rulers(v))
        errors[axis] = float((out - exact).square().sum())
    return min(errors, key=errors.get)
    # END SOLUTION


# %% qlesson={"task": "10.choose_axis"} tags=["check"]
check("10.choose_axis", choose_axis)

# %% [markdown]
# ## Task 5 · What a per-channel key cache really costs
#
# A key cache streams its keys as Task 3's does: `bits`-bit codes with KIVI's per-channel rulers
# (your Task 2's) over whole groups of `group` older tokens, and a window of the `residual`
# newest tokens in fp16. Write `key_bits(bits, group, tokens, residual)`: after `tokens`
# tokens, the mean number of bits the cache stores per cached key value. Count everything it
# must keep to give the keys back.


# %% tags=["solution"]
def key_bits(bits, group, tokens, residual):
    ...  # STUB
    # BEGIN SOLUTION
    n_q = max(tokens - residual, 0) // group * group  # whole groups of the tokens older than the window
    stored = n_q * bits + (n_q // group) * 2 * 16 + (tokens - n_q) * 16
    return stored / tokens
    # END SOLUTION


# %% qlesson={"task": "10.key_bits"} tags=["check"]
check("10.key_bits", key_bits)

# %% [markdown]
# ## Task 6 · Where does the sink flip the verdict?
#
# One head's value cache: 48 tokens, 16 channels. Each channel sits at its own offset (the
# offsets run from -4 to 4; the values spread by about 1 around them). Token 0's value is a few
# thousandths the size of the others'. The values are quantized with KIVI's asymmetric rulers,
# every token included; the keys stay exact. `sink_head(shift)` returns this head's `q, k, v`;
# a larger `shift` leans every query harder on token 0. With little attention on token 0 a
# ruler per channel gives the smaller output error; with enough of it, a ruler per token (the
# lesson's `[CLS]`). Use your `choose_axis` from Task 4 at 2 bits: roughly what share of the
# attention, averaged over the queries, must token 0 take for the verdict to flip? Set
# `sink_flip` to that share, as a fraction of 1.

# %% tags=["solution"]
from qlesson.lessons.l10_which_axis import sink_head

sink_flip = ...  # STUB
# BEGIN SOLUTION
last_channel, first_token = 0.0, 1.0
for shift in torch.arange(0.5, 1.55, 0.05).tolist():
    q, k, v = sink_head(shift)
    share = float(torch.softmax(q @ k.T / k.shape[1] ** 0.5, dim=-1)[:, 0].mean())
    if choose_axis(q, k, v, "v", 2) == "channel":
        last_channel = max(last_channel, share)
    else:
        first_token = min(first_token, share)
print(f"per channel wins up to {last_channel:.2f} of the attention, per token from {first_token:.2f}")
sink_flip = (last_channel + first_token) / 2
# END SOLUTION

# %% qlesson={"task": "10.sink_flip"} tags=["check"]
check("10.sink_flip", sink_flip)

# %% [markdown] tags=["solutions-only"]
# A per-channel ruler spans an offset channel's range, so token 0's tiny value is rounded by up
# to half a step; a per-token ruler fits token 0's own tiny range but must span all the offsets
# on every other token. Per channel wins up to about a quarter of the attention, per token
# from there on. The same head flips near a quarter at 3 and 4 bits too; a head drawn with
# another seed flips elsewhere, so measure rather than carry the number over.

# %% [markdown]
# ## Recall

# %% [markdown]
# ### Recall 10.5
#
# A 10-token sentence's values, one 2-bit ruler per channel over the sentence, [CLS] in fp16: bits per value?
#
# Answer with a number.

# %% tags=["solution"]
recall_5 = ...  # STUB
# BEGIN SOLUTION
recall_5 = 6.6
# END SOLUTION

# %% qlesson={"task": "recall 10.5"} tags=["check"]
recall.answer("10", 5, recall_5)

# %% [markdown]
# ### Recall 10.4
#
# MiniLM: per-channel keys (a ruler per sentence) beat per-token keys 2.6x. What separates structure from ruler size?
#
# - **a)** Repeat at 4 bits: if per channel still wins, the win is structure
# - **b)** Compare at equal metadata (32 values per ruler both ways), on the real and on shuffled keys
# - **c)** Use more sentences: a narrower interval settles the cause
# - **d)** Shuffle the keys: per channel's win on the shuffled keys is the structure's share
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_4 = ...  # STUB
# BEGIN SOLUTION
recall_4 = "b"
# END SOLUTION

# %% qlesson={"task": "recall 10.4"} tags=["check"]
recall.answer("10", 4, recall_4)

# %% [markdown]
# ### Recall 05.3
#
# Why can per-token activation scales be applied after an int8 GEMM, but per-feature scales cannot?
#
# - **a)** A per-token scale is constant along the reduction axis; a per-feature one changes inside the sum
# - **b)** Per-feature scales change with every input, so they cannot be known before the GEMM
# - **c)** Per-token scales are dynamic, so they can only be applied after the GEMM
#
# Answer with the option's letter as a string (in quotes).

# %% tags=["solution"]
recall_05_3 = ...  # STUB
# BEGIN SOLUTION
recall_05_3 = "a"
# END SOLUTION

# %% qlesson={"task": "recall 05.3"} tags=["check"]
recall.answer("05", 3, recall_05_3)

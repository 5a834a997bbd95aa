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
# # 10 · Which axis? Keys, values and the KV cache
#
# **What you will learn**
# * the granularity question for tensors that grow at run time: a transformer's keys and
#   values, cached for every token; one scale per *token* or per *channel*;
# * where MiniLM's key and value outliers sit, measured per layer;
# * what quantizing keys or values does to the attention probabilities and the attention
#   output (not just to K and V), per token vs per channel at 2, 3 and 4 bits, with intervals;
# * what smaller groups and symmetric rulers cost and buy at 2 bits;
# * the streaming argument: why per-channel keys with scales computed on the fly need a window
#   of full-precision recent tokens;
# * what a rotary embedding does to per-channel key quantization (quantize before or after it);
# * what KIVI, KVQuant, transformers, vLLM and llama.cpp do, and what each scheme saves.
#
# **What you need**: notebooks 02 (granularity), 05 (activations) and 09 (intervals over
# sentences). About 15 minutes.

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Where the outliers sit
#
# Each attention layer turns every token into a query, a key and a value: 12 heads of 32
# channels each in MiniLM. When a model generates text it caches the keys and values of every
# past token (the KV cache) and reads all of them for every new token, so at long contexts the
# cache, not the weights, fills memory. Capture them on 120 of the course's held-out
# sentences, one sentence at a time, and ask where the large values sit: in a few *channels*
# (the same few on every token) or on a few *tokens*. `channel max/median` is the loudest
# channel's absmax over the median channel's, `token max/median` the same across tokens
# (medians over the sentences), and `shuffled` the channel measure on the same numbers in a
# random order. (MiniLM is an encoder that never caches anything; the cache is simulated on
# whole sentences.)

# %%
from qlesson.quant.kv import fake_quantize_kv, quantized_tokens
from qlesson.teach import kv, models
from qlesson.teach.eval_text import eval_sentences

model = models.load_minilm()
qkv = kv.capture_qkv(model, eval_sentences(120))
print(f"{len(qkv)} layers; sentence 0's keys: {tuple(qkv[0]['k'][0].shape)} (heads, tokens, head_dim)")
spread = kv.spread_rows(qkv)
print_table(spread, {k: ".1f" for k in spread[0] if k != "layer"})

# %%
_ = kv.token_channel_map(qkv[0]["k"][0], "layer 0 keys, sentence 0: |k| per token and channel")
_ = kv.token_channel_map(qkv[0]["v"][0], "layer 0 values, sentence 0")

# %% [markdown]
# Loud channels show as vertical stripes (the same channel on every token), loud tokens as
# horizontal ones; note the dark first row of the values map, `[CLS]`, which section 2 needs.
# Read the table with its `shuffled` columns: a max over 384 channels is larger than a max
# over a dozen tokens even for numbers with no structure, so the channel ratios sit near 2 for
# shuffled numbers too. MiniLM's keys and values alike sit only a few tenths above their
# shuffled versions. (The LLaMA-family models KIVI studied have key channels far louder than
# this.) The table cannot settle the axis; section 2 measures it on attention.
#
# ## 2. Per token or per channel: measured on attention
#
# Quantize the keys (values in full precision), or the values (keys in full precision),
# asymmetrically as KIVI does (each group stores its minimum and a scale; codes run from the
# minimum to the maximum): per token (one ruler per token and head, over its 32 channels)
# or per channel (one ruler per channel, over the sentence's tokens). Then recompute attention
# and measure what matters downstream: the attention probabilities (`prob err`: total
# variation between each query's exact and quantized distribution over tokens, averaged) and
# the attention output (`out err`: relative squared error, as lesson 09's layer error;
# values leave the probabilities untouched, hence their 0). Each
# sentence gives one error; the interval resamples the sentences' paraphrase pairs
# (`token - channel`: positive
# means per-channel is better):

# %%
axis_table = kv.axis_rows(qkv)
fmt = {k: ".4f" for k in axis_table[0] if k.startswith(("prob", "out"))}
print_table(axis_table, fmt | {"token - channel": "+.5f", "95% CI": "+.5f"})
for tensor in ("keys", "values"):
    lower = [f"{r['bits']} bits: {r['lower']}" for r in axis_table if r["quantized"] == tensor]
    print(f"{tensor}, lower attention-output error: {'; '.join(lower)}")

# %% [markdown]
# Keys: per channel wins at every bit width on the attention output, with intervals that
# exclude 0, and its probability error is lower too: KIVI's finding, on MiniLM. KIVI's argument:
# with one ruler per token, a channel that is loud on every token sets the range of each token
# and crushes its quiet channels; one ruler per channel gives each channel its own. The two
# axes do not get the same number of scales here, though: a per-channel ruler spans one
# sentence's dozen or so tokens, a per-token ruler 32 channels, so per-channel stores about
# 2.7 times more scales. Section 2's last table gives per-token rulers more scales instead.
#
# Values: per token wins at every bit width (last line), by more than keys gain from going
# per channel. KIVI's own reason is that values have no fixed outlier channels and a per-token
# ruler keeps each token's error to itself; on MiniLM, look at where attention goes:

# %%
print_table(kv.cls_rows(qkv), {"attention to [CLS]": ".2f", "[CLS] value / median value": ".2f"})

# %% [markdown]
# In layers 1 to 4 more than half of all attention lands on `[CLS]`, whose value vector is a
# few hundredths of a typical token's (an "attention sink": a place to put attention that adds
# little). A per-channel ruler spans the large values of the words, so the tiny `[CLS]` value
# is rounded to something many times its size, and that error is multiplied by the largest
# attention weight. A per-token ruler fits `[CLS]`'s own small range. Per-token values are
# also the ones that can be quantized the moment a token arrives (section 3). On MiniLM the
# values' verdict rests on this sink: a model, or a cache that keeps its first tokens in full
# precision (KVQuant has that option), could see it differently.
#
# ### Smaller groups, or symmetric rulers?
#
# Two other knobs, at 2 bits. Smaller groups: one ruler per 8 channels of a token instead of
# per head (32 channels). Symmetric rulers: no stored minimum, codes centred on 0. `bits per
# value` counts fp16 scales and minimums (per-channel groups counted as KIVI's 32 tokens;
# here each sentence, at most 17 tokens, is one group, which helps per-channel a little):

# %%
variants, comparisons = kv.variant_rows(qkv, bits=2)
print_table(variants, {"bits per value": ".1f", "keys out err": ".4f", "values out err": ".4f"})
print_table(comparisons, {"A - B": "+.4f", "95% CI": "+.4f"})

# %% [markdown]
# * **Keys**: per-token groups of 8 channels tie with per-channel keys (first comparison), but
#   store a scale and a minimum for every 8 values: 6 bits per value against 3 with KIVI's
#   groups of 32 tokens. The right axis gives cheaply what a finer group on the wrong axis buys
#   with metadata.
# * **Values**: groups of 8 channels cut the per-token error by more than half, at twice the
#   bits. Where the bits go is a trade-off, as for weights in lesson 04.
# * **Symmetric** rulers are worse on each tensor's better axis (last two comparisons). At 2
#   bits the course's symmetric ruler has three codes, `-1, 0, +1` times the absmax (lesson 01's
#   `[-qmax, qmax]`), against four from the minimum to the maximum, and a range that is not
#   centred on 0 leaves part of even those three unused.
#
# One row breaks the pattern: values *per channel* do better symmetric (0.19) than asymmetric
# (0.31). The `[CLS]` value again: a symmetric grid has an exact 0 and `[CLS]`'s small values
# round to it, while a min-to-max grid need not have a code near 0. Values per channel, 2 bits,
# the size of the `[CLS]` value and of its error (means over sentences):

# %%
cls_values = kv.cls_value_rows(qkv, bits=2)
print_table(cls_values, {k: ".2f" for k in cls_values[0] if k != "layer"})

# %% [markdown]
# In layers 1, 2, 4 and 5 the symmetric ruler's error on `[CLS]` equals the value itself (it
# became exactly 0), while the asymmetric one is three to seven times the value; on every other
# token the asymmetric ruler has about half the symmetric one's error (last column). A per-token
# ruler fixes `[CLS]` at the root, which is why KIVI's asymmetric per-token values beat both
# per-channel rows.
#
# ### Try it: axis, bits, groups on one layer
#
# Pick a layer, keys or values, and a ruler; the readout gives the attention errors over all
# 120 sentences, the image one sentence's `|x|` and its error. Watch the error's shape: per
# token, a loud token's ruler is coarse on all its channels (horizontal bands); per channel, a
# loud channel's is coarse on every token (vertical bands). In layer 2's values per channel,
# compare the `[CLS]` row (the top one) in the two images: dark in `|x|`, yet its error is as
# large as any word's.

# %% tags=["nbval-ignore-output"]
from qlesson.teach import widgets

widgets.kv_explorer(qkv)

# %% [markdown]
# ## 3. The streaming argument
#
# During generation the cache grows one token at a time. A per-token scale exists as soon as
# its token does. A per-channel scale over a group of `G` tokens exists only when the group is
# complete, so the newest tokens wait in full precision. The table models a simple policy:
# keep the `R` newest tokens in fp16 and quantize whole groups of the older ones. (KIVI's code
# differs a little: it quantizes keys in chunks of `R` tokens, `R` a multiple of `G`, so 0 to
# `R - 1` keys wait in fp16, and it keeps the `R` newest *values* in fp16 too, although they
# could be quantized at once. KVQuant needs no window: it calibrates its per-channel key scales
# offline.) How many tokens are quantized, for groups of 32 and `R = 32`:

# %%
rows = []
for t in (20, 64, 100, 1000, 4096):
    rows.append(
        {
            "tokens": t,
            "values per token": quantized_tokens(t, "token", residual=32),
            "keys per channel, G=32": quantized_tokens(t, "channel", group=32, residual=32),
            "keys in full precision": t - quantized_tokens(t, "channel", group=32, residual=32),
        }
    )
print_table(rows)
x = qkv[0]["k"][0]  # one sentence's keys, layer 0
same = bool((fake_quantize_kv(x, 2, "channel", group=4, residual=4)[:, -4:] == x[:, -4:]).all())
print(f"with residual=4, the 4 newest tokens are stored exactly: {same}")

# %% [markdown]
# The window costs little memory at long contexts (here a fixed `R` to `R + G - 1` tokens in
# fp16). In causal LLMs it also holds tokens that get much of the attention, the recent ones
# (as do the first few, the sinks; on MiniLM, `[CLS]`).
#
# ## 4. Before or after the rotary embedding?
#
# LLaMA-style models rotate queries and keys by a position-dependent angle (RoPE): channel
# pair `(i, i + d/2)` of the token at position `p` turns by `p x 10000 ** (-2i / d)`. MiniLM
# has no RoPE; `kv.rope` applies one on the page, to queries and keys, and the attention
# computed with it is the reference. A rotation mixes each pair of channels differently at
# every position: post-RoPE a loud channel `a` paired with a quiet `b` becomes
# `a cos - b sin` and `a sin + b cos`, so the outlier spreads over both channels of the pair
# and swings in sign with the position, and a channel's values over the tokens no longer keep
# one scale. KVQuant therefore quantizes keys *before* RoPE and rotates after dequantizing
# (KIVI and the serving tools quantize the rotated keys). Measured, per-channel keys,
# attention output error:

# %%
rope_table = kv.rope_rows(qkv)
print(f"longest sentence: {max(k.shape[1] for k in qkv[0]['k'])} tokens")
fmt = {k: ".5f" for k in rope_table[0] if "RoPE" in k}
print_table(rope_table, fmt | {"post - pre": "+.5f", "95% CI": "+.5f"})

# %% [markdown]
# Quantizing before the rotation is better at every bit width here (intervals above 0), but
# only by a few percent: MiniLM's sentences are short (see the first line), so the slow pairs
# barely turn, its key channels are mild, and this RoPE is grafted onto a model trained
# without one. At thousands of positions the fast pairs turn many times, though the slowest
# still turn less than once in 4k tokens (`p x 10000 ** (-2i / d)` radians); KVQuant reports
# that pre-RoPE is better on LLaMA. Per token is far behind either way.
#
# ## 5. What the tools do
#
# Defaults as each source states them (check the version you use):

# %%
print_table(list(kv.TOOLS))

# %% [markdown]
# KIVI and KVQuant put keys per channel and values per token. transformers' quantized cache
# (quanto backend, axis 0) quantizes keys and values alike in groups of 64 channels of one
# token, so per token, not KIVI's per-channel keys; it quantizes the prompt at once and keeps
# up to 127 new tokens in fp16. vLLM's FP8 cache gets by with one scale per tensor (or head)
# at 8 bits, because an FP8 value carries its own exponent (lesson 08); without calibration
# its scales are 1.0. llama.cpp quantizes each token's channels in Q8_0 blocks of 32, per
# token like a weight row, with no window (f16 by default; a quantized V cache needs flash
# attention).
#
# ## 6. What each scheme saves
#
# One sequence's cache, keys and values, every layer (`bits per value` includes the scales,
# zero points and the full-precision window). MiniLM's sentence-transformers limit is 256
# tokens (512 positions); its rows show the arithmetic at the same contexts:

# %%
memory = kv.memory_rows()
print_table(memory, {"MiB": ".1f", "bits per value": ".2f"})
llama = [r for r in memory if r["model"] == "LLaMA-7B-like" and r["context"] == 32768]
print(f"LLaMA-7B-like at 32k: {llama[0]['MiB'] / 1024:.0f} GiB in fp16, {llama[-1]['MiB'] / 1024:.1f} GiB with KIVI-2")
print(f"LLaMA-7B's own weights in fp16 (6.74e9 parameters): {6.74e9 * 2 / 2**30:.1f} GiB")

# %% [markdown]
# At 32k tokens a LLaMA-7B-like cache in fp16 is larger than the model's own fp16 weights
# (last line), which is why the KV cache, not the weights, limits batch size and context at
# long lengths. 2-bit KIVI spends about a bit per value on scales and zero points (fp16 each per
# group of 32) and still cuts the cache about 5x.
#
# ## Summary
#
# * Keys and values are quantized at run time; which axis gets the scale is the granularity
#   question of lesson 02, turned sideways.
# * Measured on MiniLM's attention, keys do better per channel and values per token, at 2, 3
#   and 4 bits (intervals exclude 0): a value error is weighted by attention, and most of it
#   goes to `[CLS]`, whose small value only a per-token ruler resolves.
# * On keys, per-token groups of 8 channels only tie with per-channel scales, at twice the bits
#   per value; symmetric rulers lose at 2 bits on each tensor's better axis.
# * Per-channel scales need a group of tokens: a residual window keeps the newest in full
#   precision.
# * KVQuant quantizes keys before RoPE and re-rotates them; on a RoPE grafted onto MiniLM that
#   cut the error by a few percent. KIVI and the serving tools quantize after RoPE.
# * A 32k-token LLaMA-7B-like cache is 16 GiB in fp16; 2-bit KIVI brings it to about 3 GiB.
#
# **Exercise**: `exercises/10_which_axis.ipynb`: a cache's bytes, keys per channel, and how
# many tokens a residual window leaves unquantized.
#
# ## Pause and recall
#
# 1. Why are keys quantized per channel and values per token in KIVI?
# 2. Why does a per-channel key cache, with scales computed from the data, need a window of
#    full-precision tokens?
# 3. How many bytes does an fp16 KV cache take per token for 32 layers, 32 heads of 128?
# 4. Interview: why is one FP8 scale per tensor enough for vLLM's cache?

# %% [markdown]
# Answer the questions above in your head first. Then check yourself on the lesson's recall
# questions, with feedback on every option (in a page without widgets, the list below the
# quiz folds each answer under **Answer**):

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.quiz("10")

# %%
recall.show("10")

# %% [markdown]
# <details><summary>Answers to the questions above</summary>
#
# 1. Keys have channels that are loud on every token, which a per-channel ruler isolates;
#    values reach the output weighted by attention, which concentrates on a few tokens whose
#    values need their own ruler, and per-token values can be quantized the moment they arrive.
# 2. A channel's scale over a group of tokens exists only once the group is complete; until
#    then the newest tokens stay in full precision.
# 3. `2 x 32 x 32 x 128 x 2` bytes = 524,288 bytes, half a MiB per token.
# 4. An FP8 value has its own exponent: the scale only has to place the tensor's range inside
#    FP8's, not resolve small values, which the exponent does.
# </details>

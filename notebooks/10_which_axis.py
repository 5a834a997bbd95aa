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
# **The question**: when a transformer's cached keys and values are quantized, should each
# scale cover one token or one channel?
#
# **The answer**: On MiniLM's short sentences at 2 bits, keys do better with one ruler per
# channel, thanks to their structure, not only smaller groups. Values do better per token
# unless the tiny, heavily attended `[CLS]` is kept in fp16; here that costs about a bit per
# value, and spent instead on a third per-token code bit, that bit gives a quarter of the error.
#
# **What you will do**: compare per-token and per-channel rulers on MiniLM's keys and values
# against shuffled controls and one token kept exact, then count the bits.
#
# **What you need**: lessons 02 (granularity), 05 (activations) and 09 (intervals over
# sentence pairs); nothing to download.
#
# **Time**: about 15 minutes, plus about 41 for the exercise (*Going deeper*: about 24 more).

# %% tags=["nbval-ignore-output"]
import qlesson as ql
from qlesson.teach.report import print_table

ql.show_environment()

# %% [markdown]
# ## 1. Attention, and what the cache stores
#
# An attention head turns every token into a query `q`, a key `k` and a value `v`. Token `i`'s
# output is `softmax(q_i k^T / sqrt(d)) v`: a mean of the values, weighted by the softmax of the
# query's scores against every key. A model that generates text caches every past token's keys
# and values, the *KV cache*, and reads all of them for each new token. At long contexts the
# cache fills memory, so it is quantized as tokens arrive.
#
# * A **key** error changes a score, and the softmax moves probability between tokens.
# * A **value** error reaches the output times its token's attention: an error on a token nobody
#   attends to costs nothing.
#
# MiniLM is an encoder and never caches, so the cache is simulated on 120 held-out sentences of
# 10 to 17 tokens.

# %%
from qlesson.teach import kv, models
from qlesson.teach.eval_text import eval_sentences

model = models.load_minilm()
qkv = kv.capture_qkv(model, eval_sentences(120))
print(len(qkv), "layers,", len(qkv[0]["k"]), "sentences")

# %% [markdown]
# ## 2. Two axes
#
# A *per-token* ruler spans one token's 32 channels in one head; a *per-channel* ruler spans
# one channel over the tokens. Lesson 02's rule: give the scales to the axis along which sizes
# differ. KIVI and KVQuant report a few key channels far larger than the rest in LLaMA-family
# models, on every token, and quantize keys per channel.
#
# ## 3. Keys: which axis, at what price?
#
# Quantize the keys asymmetrically as KIVI does, with 2-bit codes from each ruler's minimum to
# its maximum, keep the values exact, and recompute attention. The error is the attention
# output's relative squared error, averaged over layers and sentences. Three rulers: per token,
# per channel over one sentence, and per channel over 32 tokens (the sentences laid end to end),
# whose metadata equals per token's.
#
# `bits per value` adds the 32 bits of each ruler's fp16 minimum and scale. The control: each
# sentence's keys shuffled across tokens, channels and heads. Predict first:

# %% tags=["nbval-ignore-output"]
from qlesson.course import recall

recall.predict("10", "shuffled_keys")

# %%
keys, key_lines = kv.key_rows(qkv, bits=2)
print_table(
    keys, {"values per ruler": ".1f", "bits per value": ".2f", "error, real keys": ".4f", "error, shuffled keys": ".4f"}
)
print("\n".join(key_lines))

# %% [markdown]
# Each line: the ratio of mean errors, then their difference with lesson 09's paired 95%
# interval. On shuffled keys per channel still wins 1.9x: a ruler over a dozen values fits a
# tighter range than one over 32, on any numbers, at 4.56 bits per value against 3. At equal
# metadata the shuffled keys keep only 1.06x, the real keys 1.7x: that is their structure
# (*Going deeper* finds which).
#
# ## 4. Values: does one token decide?
#
# From here on, per channel means the ruler over 32 tokens. Quantize the values at 2 bits per
# token or per channel, with one token per sentence kept in fp16 and out of every ruler: none,
# `[CLS]`, which opens every sentence, `[SEP]`, which closes it, or a random word. Predict first:

# %% tags=["nbval-ignore-output"]
recall.predict("10", "kept_token")

# %%
print_table(kv.kept_token_rows(qkv, bits=2, ruler="channel32"), {"per token": ".3f", "per channel": ".3f"})

# %% [markdown]
# Keeping `[CLS]` exact cuts per channel's error about six-fold, barely moves per token's, and
# flips the verdict. `[SEP]` or a random word moves either by about 10% at most. Why `[CLS]`?
# Per layer, with the error of its value under each 2-bit ruler over the value's own size:

# %%
cls_table = kv.cls_rows(qkv, ruler="channel32")
print_table(cls_table, dict.fromkeys(list(cls_table[0])[1:], ".2f"))

# %% [markdown]
# In layers 1 to 4 more than half of all attention lands on `[CLS]`, whose value is a few
# hundredths of a typical token's: an *attention sink*, a place to put attention that adds
# little. A per-channel ruler, sized by the words' larger values, rounds `[CLS]`'s value with a
# median error 9 to 11 times its size there; a per-token ruler fits `[CLS]`'s own range, under
# half its size. The attention on `[CLS]` multiplies that error.
#
# ## 5. Codes, metadata and kept tokens
#
# An fp16 `[CLS]` costs bits too. Every bit counted, per channel at 2 bits with `[CLS]` in fp16
# against per token at 3 bits with `[CLS]` quantized:

# %%
cost, cost_line = kv.value_cost_rows(qkv)
print_table(cost, {"bits per value, all costs": ".2f", "error": ".4f"})
print(cost_line)

# %% [markdown]
# On these 12.5-token sentences the fp16 `[CLS]` costs about one bit per value, 4.04 against
# 3.00: as much as a third code bit. Yet per token at 3 bits has a quarter of the error of
# per channel at 2 bits with `[CLS]` in fp16; the interval excludes 0. A third code bit shrinks
# every ruler's step; the fp16 `[CLS]` fixes one token.
#
# ## Summary
#
# * Keys, 2 bits: per channel over one sentence wins 2.6x, on shuffled keys 1.9x (the smaller
#   group); at equal metadata 1.7x against 1.06x (structure).
# * Values: per token wins while the sink `[CLS]` is quantized, per channel once it is in fp16;
#   here that fp16 token costs about a bit per value, and a third code bit per token beats it.
#
# ## Pause and recall

# %% tags=["nbval-ignore-output"]
recall.quiz("10")

# %%
recall.show("10")

# %% [markdown]
# **Exercise**: `exercises/10_which_axis.ipynb`: a cache's bytes and bits, choosing an axis by
# measuring, and where a sink flips the value axis.
#
# ## Going deeper
#
# ### Offsets in the keys
#
# Which structure do MiniLM's keys have? Two heads of layer 3: find the columns that keep one
# colour down all the tokens.

# %%
_ = kv.token_channel_map(qkv[3]["k"][0][:2], "layer 3 keys, sentence 0, heads 0 and 1: k per token and channel")

# %% [markdown]
# Such a column is a channel that sits near a value of its own, an offset. Per layer, the share
# of the keys' variance held by each channel's own mean over the tokens, in real and shuffled
# keys:

# %%
channels = kv.channel_rows(qkv)
print_table(
    [{k: r[k] for k in ("layer", "means' share", "(shuffled)")} for r in channels],
    dict.fromkeys(["means' share", "(shuffled)"], ".2f"),
)

# %% [markdown]
# Each channel's own mean holds 14% to 40% of the variance, against 8% in shuffled keys, what a
# mean over 12.5 tokens holds by chance.
#
# ### Keys: which structure?
#
# Which structure wins section 3's equal-metadata comparison? Two suspects: the channels'
# offsets (measured above) and the key of `[CLS]`. Remove each, then both. The offsets can be removed
# without changing the attention: subtract each channel's mean over the sentence (the softmax ignores the shift), so
# only the ruler's job changes. `[CLS]`: keep it in fp16, out of both rulers; the control keeps
# one random word per sentence instead. Equal metadata, 2 bits:

# %%
centred, centred_lines = kv.centred_key_rows(qkv, bits=2)
print_table(centred, {"per token": ".4f", "per channel (32 tokens)": ".4f", "token - channel": "+.4f"})
print("\n".join(centred_lines))

# %% [markdown]
# The last column is per token's extra error. Removing the offsets cuts it from +0.0331 to
# +0.0215, keeping `[CLS]` exact to +0.0256 (a random word: +0.0314), both together to +0.0060:
# most of the win but not all (the interval excludes 0). A one-sentence per-channel ruler only
# slides with its offset, so removing the offsets leaves its error unchanged (last line).
#
# ### The key of `[CLS]`, with and without the offsets
#
# Once the offsets are removed, keeping `[CLS]`'s key exact cuts most of per token's remaining
# extra error (+0.0215 to +0.0060 above). The norm of `[CLS]`'s key over the median token's, per layer:

# %%
norms = kv.cls_key_norms(qkv)
for name in ("real keys", "channel means removed"):
    print(f"[CLS]'s key norm / median token's, layers 0-5, {name}: " + " ".join(f"{r[name]:.2f}" for r in norms))

# %% [markdown]
# With the offsets in, `[CLS]`'s key is about as long as a typical token's in layers 2 to 4;
# with them removed it stands out there (about 1.6 to 1.8 times). This fits the table above; it
# does not show the cause.
#
# ### Values: intervals, and 3 and 4 bits
#
# Section 4's comparison with its intervals at 2, 3 and 4 bits, beside the per-channel ruler
# over one sentence:

# %%
fmt = {k: ".4f" for k in ("per token", "per channel", "per channel (32 tokens)")}
values_234, value_lines = kv.value_rows(qkv, bits=(2, 3, 4))
print_table(values_234, fmt | {"token - channel": "+.4f", "95% CI": "+.4f"})
print("\n".join(value_lines))

# %% [markdown]
# At each width per token wins while `[CLS]` is quantized, per channel once it is in fp16, at
# equal metadata too (the last lines); no interval includes 0.
#
# ### A loud channel?
#
# How much louder a head's loudest key channel is than its median channel, divided by the same
# in the keys shuffled within the head (1: no louder than in random numbers); the positive
# control doubles one channel of every head:

# %%
print_table(
    [{k: r[k] for k in ("layer", "loudest channel", "a channel made x2")} for r in channels],
    dict.fromkeys(["loudest channel", "a channel made x2"], ".2f"),
)

# %% [markdown]
# In no layer does the loudest channel stand out more than the doubled one (closest in layer 3:
# 1.55 against 1.58): MiniLM has no loud key channel of the kind KIVI reports; most of its keys'
# win at equal metadata is the offsets and `[CLS]` ("Keys: which structure?").
#
# ### A loud head
#
# A head's keys can be louder than the others' as a whole. The rms of each layer's loudest head
# over its median head's:

# %%
heads = [
    {"layer": r["layer"], "loudest head / median head": r["loudest head / median head"]} for r in kv.head_rows(qkv)
]
print_table(heads, {"loudest head / median head": ".2f"})

# %% [markdown]
# Only in layer 0 is one head more than twice the median head. Both rulers stay inside one head
# (a per-token ruler spans one head's 32 channels), so a loud head favours neither axis.
#
# ### Streaming: why per-channel keys wait
#
# During generation a per-token ruler exists as soon as its token does, but a per-channel ruler
# over `G` tokens only once its group is complete. The policy here: the `R` newest tokens stay
# in fp16, the older ones are quantized in whole groups of `G`. With `G = 32` and `R = 32`:

# %%
from qlesson.quant.kv import quantized_tokens

rows = []
for t in (20, 64, 100, 4096):
    n_q = quantized_tokens(t, "channel", group=32, residual=32)
    rows.append({"tokens": t, "keys quantized per channel": n_q, "keys in fp16": t - n_q})
print_table(rows)

# %% [markdown]
# The window and any incomplete group wait in fp16: 32 + 4 keys at 100 tokens.
#
# ### What a long cache costs
#
# In large models several query heads often share one cached *KV head* (grouped-query attention,
# GQA). One sequence's cache in a Llama-3.1-8B-like model (32 layers, 8 KV heads of 128 channels;
# `bits per value` includes the scales, the minimums and the fp16 window):

# %%
memory = kv.memory_rows()
print_table([{k: v for k, v in r.items() if k != "model"} for r in memory], {"MiB": ".1f", "bits per value": ".2f"})
print(f"Llama-3.1-8B's own weights in fp16 (8.03e9 parameters): {8.03e9 * 2 / 2**30:.1f} GiB")

# %% [markdown]
# At 131,072 tokens one sequence's fp16 cache outgrows the model's own fp16 weights, and a
# server holds one cache per sequence. 2-bit keys and values with a fixed 32-token window
# spend about one bit per value on minimums and scales and still cut the cache about 5x; the
# window costs a fraction of a bit at 8k tokens and nothing visible at 131k.
#
# ### Quantizing keys before or after the rotary embedding
#
# LLaMA-style models rotate queries and keys by a position-dependent angle (RoPE): channel
# pair `(i, i + d/2)` of the token at position `p` turns by `p x 10000 ** (-2i / d)`. After the
# rotation a loud channel spreads over both channels of its pair and swings in sign with the
# position, so a channel's values over the tokens no longer share one scale. KVQuant therefore
# quantizes keys *before* RoPE and rotates after dequantizing; KIVI and the serving tools
# quantize the rotated keys. MiniLM has no RoPE: `kv.rope` grafts one onto the queries and keys
# here, and the attention computed with it is the reference. Per-channel keys over one
# sentence, attention-output error:

# %%
rope_table = kv.rope_rows(qkv)
fmt = {k: ".5f" for k in rope_table[0] if "RoPE" in k}
print_table(rope_table, fmt | {"post - pre": "+.5f", "95% CI": "+.5f"})

# %% [markdown]
# Before the rotation is better at every bit width here, by only a few percent. KVQuant reports
# that pre-RoPE is better on LLaMA.
#
# ### Symmetric rulers and smaller groups
#
# At 2 bits, per-token groups of 8 channels and symmetric rulers (no stored minimum, codes
# centred on 0). `bits per value` counts fp16 scales and minimums; a per-channel ruler spans
# one sentence, so it pays 32 bits per 12.5 values:

# %%
variants, comparisons = kv.variant_rows(qkv, bits=2)
print_table(variants, {"bits per value": ".2f", "keys out err": ".4f", "values out err": ".4f"})
print_table(comparisons, {"A - B": "+.4f", "95% CI": "+.4f"})

# %% [markdown]
# Per-token key groups of 8 channels tie with per-channel keys (first comparison) at 6 bits per
# value against 4.56. Symmetric rulers lose on each tensor's better axis: at 2 bits the
# course's symmetric ruler has three codes (`-1, 0, +1` times the absmax), against four from
# the minimum to the maximum. Symmetric wins only for values per channel (the last two rows'
# values column): the symmetric ruler's code 0 takes `[CLS]`'s tiny value, an error of
# its own size, where the asymmetric one-sentence ruler's is up to 8.8 times it:

# %%
import torch

from qlesson.quant.kv import fake_quantize_kv

for name, sym in (("asymmetric", False), ("symmetric", True)):
    med = []
    for layer in qkv:
        err = [
            (fake_quantize_kv(v, 2, "channel", symmetric=sym)[:, 0] - v[:, 0]).norm(dim=-1) / v[:, 0].norm(dim=-1)
            for v in layer["v"]
        ]
        med.append(float(torch.stack([e.median() for e in err]).median()))
    print(
        f"values per channel, 2 bits, {name}, [CLS] error / its size, layers 0-5: " + " ".join(f"{m:.2f}" for m in med)
    )

# %% [markdown]
# ### An fp16 window is exact, and shrinks the rulers
#
# Per-channel keys at 2 bits, each sentence's newest 4 tokens exact or not (a third of a
# sentence here, far more than a 32-token window in a long context; and on MiniLM, whose
# attention does not favour recent tokens). Restoring the newest 4 after quantizing with a ruler
# over all tokens separates the exact tokens from the smaller ruler over the rest:

# %%
for name, err in kv.window_errors(qkv, bits=2, residual=4).items():
    print(f"keys per channel, 2 bits, {name}: attention-output error {err:.4f}")

# %% [markdown]
# In this run, about half of the drop is the exact tokens, half the smaller ruler over the rest.
#
# ### What the tools do
#
# Defaults as each source states them (check the version you use):

# %%
print_table(list(kv.TOOLS))

# %% [markdown]
# * **transformers** (`QuantizedLayer`): the docstring says the quantization is done
#   "per-channel" for keys and values, but with the quanto backend and `axis=0` each group is
#   64 channels of one token, so it is per token in this lesson's terms. The HQQ backend takes
#   `axis` 0 or 1 (its docs recommend 1), and which elements share a scale depends on HQQ's own
#   reshape: read it before naming the axis. At every step the layer dequantizes the whole
#   quantized cache and, when the fp16 window fills, quantizes everything again.
# * **vLLM**: one FP8 scale per tensor (or per KV head with calibration). Without calibration
#   the scales are 1.0; `calculate_kv_scales=True` sets each from the first batch's absmax,
#   once. Each FP8 value carries its own exponent, so one scale only places the range
#   (lesson 08).
# * **llama.cpp**: `--cache-type-k` and `--cache-type-v` take f16 (default), q8_0, q4_0
#   (symmetric), q4_1 and q5_1 (with a minimum, like KIVI's rulers), among others, in blocks of
#   32 channels of one token. A quantized V needs flash attention: without it llama.cpp stores
#   V transposed, with tokens along the rows, so a block of 32 would run across tokens.
# * **KIVI**'s code quantizes keys in chunks of `R` tokens (`R` a multiple of the group), so
#   0 to `R - 1` keys wait in fp16, and keeps the `R` newest values in fp16 too.
#   **KVQuant** calibrates its per-channel key scales offline (no window needed) and can keep
#   the first tokens in fp16 (`first_few_fp16`).
#
# ### Measurement notes
#
# * MiniLM never caches; each sentence's keys and values come from one forward pass, and
#   attention is recomputed from them in float64, unmasked as MiniLM's own: every query sees
#   every key, later ones included. In a decoder the first token is also seen by every query,
#   so the sink may carry over; this lesson does not test it.
# * The 32-token per-channel rulers run over the sentences laid end to end, so each ruler spans
#   several sentences (last line below), with their `[CLS]`, `[SEP]` and offsets; in a real cache
#   it would span 32 tokens of one text.
# * The loudest-channel score: each channel's median `|k|` over the tokens, the loudest channel's
#   over its head's median channel's, the largest over heads, divided by the same on the keys
#   shuffled within each head; median over sentences. The control multiplies channel 0, 11 or 27
#   of every head by 2 on every token and keeps the lowest of the three scores.
# * The keys' shuffled control in section 3 permutes each sentence's keys across heads,
#   channels and tokens; the offsets' and loud channel's controls permute within each head, so a
#   loud head stays loud.
# * Each ruler's minimum and scale are charged 16 bits each but kept in float64: the rounding to
#   fp16 (about 3 significant digits, far finer than a 2- to 4-bit step) is not simulated.
# * Intervals are paired bootstraps over the evaluation text's paraphrase pairs (lesson 09).

# %%
import torch

sentence_of = torch.repeat_interleave(torch.arange(len(qkv[0]["k"])), torch.tensor([k.shape[1] for k in qkv[0]["k"]]))
spans = [len(set(sentence_of[i : i + 32].tolist())) for i in range(0, len(sentence_of), 32)]
print(f"each 32-token ruler spans {min(spans)} to {max(spans)} sentences (mean {sum(spans) / len(spans):.2f})")

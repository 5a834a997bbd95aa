"""Lesson 10's main-line studies: rulers at equal metadata, the shuffled control, the sink, the cache's bits."""

import pytest
import torch

from qlesson.quant.kv import fake_quantize_kv, kv_cache_bytes
from qlesson.teach import kv


def _layer(n=6, heads=2, tokens=8, dim=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {
        name: [torch.randn(heads, tokens, dim, generator=g, dtype=torch.float64) for _ in range(n)]
        for name in ("q", "k", "v")
    }


def test_rulers_quantize_what_they_say():
    layer = _layer()
    ks = layer["k"]
    assert all(
        torch.equal(a, fake_quantize_kv(k, 2, "token"))
        for a, k in zip(kv.quantize_sentences(ks, 2, "token"), ks, strict=True)
    )
    assert all(
        torch.equal(a, fake_quantize_kv(k, 2, "channel"))
        for a, k in zip(kv.quantize_sentences(ks, 2, "channel"), ks, strict=True)
    )
    # 32-token rulers over the sentences laid end to end: 6 sentences of 8 tokens are 48 tokens, a ruler of 32
    # and one of 16; the first four sentences share one ruler per channel
    long = torch.cat(ks, dim=1)
    pooled = torch.cat(kv.quantize_sentences(ks, 2, "channel32"), dim=1)
    assert torch.equal(pooled[:, :32], fake_quantize_kv(long[:, :32], 2, "channel"))
    assert torch.equal(pooled[:, 32:], fake_quantize_kv(long[:, 32:], 2, "channel"))
    with pytest.raises(ValueError, match="ruler="):
        kv.quantize_sentences(ks, 2, "row")


def test_sink_fp16_keeps_the_first_token_exact_and_out_of_every_ruler():
    ks = _layer()["v"]
    for ruler in ("token", "channel", "channel32"):
        got = kv.quantize_sentences(ks, 2, ruler, sink_fp16=True)
        assert all(
            torch.equal(a[:, 0], k[:, 0]) and not torch.equal(a[:, 1:], k[:, 1:]) for a, k in zip(got, ks, strict=True)
        )
    got = kv.quantize_sentences(ks, 2, "channel", sink_fp16=True)
    assert torch.equal(got[0][:, 1:], fake_quantize_kv(ks[0][:, 1:], 2, "channel"))


def test_a_tiny_attended_first_value_decides_the_axis():
    layer = _layer(tokens=10, seed=3)
    for q, k, v in zip(layer["q"], layer["k"], layer["v"], strict=True):
        q += 1.0
        k[:, 0] = 2.0  # every query leans on token 0
        v[:, 0] = 0.01  # whose value is tiny
        v[:, 1:] *= torch.linspace(0.2, 5.0, 32, dtype=torch.float64)  # channels of different sizes
    rows, lines = kv.value_rows([layer], bits=(2,))
    quantized, fp16 = rows
    assert quantized["lower"] == "per-token" and fp16["lower"] == "per-channel"
    assert len(lines) == 1 and "fp16" in lines[0]


def test_key_rows_give_equal_metadata_the_same_bits_and_name_both_controls():
    layer = _layer()
    for k in layer["k"]:
        k += torch.linspace(-4.0, 4.0, 32, dtype=torch.float64)  # each channel its own offset
    rows, lines = kv.key_rows([layer], bits=2)
    by = {r["ruler"]: r for r in rows}
    assert by["per token (32 channels)"]["bits per value"] == by["per channel (32 tokens)"]["bits per value"] == 3.0
    assert by["per channel (one sentence)"]["bits per value"] == 2 + 32 / 8
    # offsets are structure: per channel wins at equal metadata on the real keys, far less on shuffled ones
    real = by["per token (32 channels)"]["error, real keys"] / by["per channel (32 tokens)"]["error, real keys"]
    shuf = by["per token (32 channels)"]["error, shuffled keys"] / by["per channel (32 tokens)"]["error, shuffled keys"]
    assert real > 3 and shuf < 1.5
    assert len(lines) == 4 and all("95% CI" in line for line in lines)


def test_head_rows_see_offsets_and_loud_heads_but_not_in_shuffled_numbers():
    layer = _layer(tokens=12)
    for k in layer["k"]:
        k[0] *= 3.0  # a loud head
        k += torch.linspace(-3.0, 3.0, 32, dtype=torch.float64)  # channel offsets
    (row,) = kv.head_rows([layer])
    assert row["loudest head / median head"] > 1.5
    assert row["means' share"] > 0.3 > 0.15 > row["(shuffled)  "]


def test_ruler_bits_and_memory_rows_count_the_rulers_and_the_window():
    assert kv.ruler_bits(2, "token", 12.5) == 3.0 and kv.ruler_bits(2, "channel", 16.0) == 4.0
    rows = {(r["context"], r["scheme"]): r for r in kv.memory_rows()}
    fp16 = rows[8192, "fp16"]
    assert fp16["MiB"] == 2 * 32 * 8 * 128 * 8192 * 2 / 2**20 == kv_cache_bytes(32, 8, 128, 8192) / 2**20
    kivi = [r for (c, s), r in rows.items() if c == 8192 and s.startswith("2-bit")]
    assert kivi[0]["bits per value"] < kivi[1]["bits per value"]  # a longer fp16 window costs bits


def test_a_residual_window_stays_exact_and_matches_the_streaming_quantizer():
    ks = _layer(tokens=11)["k"]
    got = kv.quantize_sentences(ks, 2, "channel", residual=4)
    assert all(torch.equal(a, fake_quantize_kv(k, 2, "channel", residual=4)) for a, k in zip(got, ks, strict=True))
    assert all(torch.equal(a[:, -4:], k[:, -4:]) for a, k in zip(got, ks, strict=True))


@pytest.mark.parametrize("ruler", ["token", "channel", "channel32"])
def test_kept_key_errors_keeping_the_first_and_last_token_is_the_special_tokens_row(ruler):
    qkv = [_layer(seed=1), _layer(seed=2)]
    ends = [(0, k.shape[1] - 1) for k in qkv[0]["k"]]
    got = kv.kept_key_errors(qkv, 2, ruler, ends)
    want = kv.output_errors(qkv, "k", 2, ruler, sink_fp16=True, residual=1)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    words = kv._random_words([k.shape[1] for k in qkv[0]["k"]], 2, seed=0)
    assert all(0 < a < b < 7 for a, b in words)
    assert not (kv.kept_key_errors(qkv, 2, ruler, words) == want).all()  # other tokens out: other errors


def test_centred_key_rows_carry_the_random_word_control_and_the_interval_line():
    rows, lines = kv.centred_key_rows([_layer(seed=3)], bits=2)
    assert [(r["keys"], r["kept in fp16"]) for r in rows][-1] == ("channel means removed", "a random word")
    assert [r["kept in fp16"] for r in rows][:4] == ["none", "none", "[CLS]", "[CLS]"]
    assert len(rows) == 6 and all(r["token - channel"] == r["per token"] - r["per channel (32 tokens)"] for r in rows)
    line, one = lines
    assert line.startswith("means removed, [CLS] in fp16") and "95% CI [" in line
    real, centred = (float(one.split()[i].rstrip(",")) for i in (-5, -1))
    assert real == pytest.approx(centred, abs=1e-4)
    with pytest.raises(ValueError, match="at least 2 tokens between"):
        kv._random_words([3], 2, seed=0)


@pytest.mark.parametrize("ruler", ["token", "channel", "channel32"])
def test_kept_key_errors_keeping_the_first_token_is_the_cls_row(ruler):
    qkv = [_layer(seed=1), _layer(seed=2)]
    got = kv.kept_key_errors(qkv, 2, ruler, [(0,) for _ in qkv[0]["k"]])
    want = kv.output_errors(qkv, "k", 2, ruler, sink_fp16=True)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    with pytest.raises(ValueError, match="one or two tokens"):
        kv.kept_key_errors(qkv, 2, ruler, [(0, 1, 2) for _ in qkv[0]["k"]])


def test_channel_rows_see_a_planted_channel_and_offsets_but_not_in_shuffled_numbers():
    (plain,) = kv.channel_rows([_layer(tokens=12)], plant=3.0)
    assert plain["loudest channel"] < 1.5 < plain["a channel made x3"]
    layer = _layer(tokens=12)
    for k in layer["k"]:
        k += torch.linspace(-3.0, 3.0, 32, dtype=torch.float64)  # channel offsets
    (row,) = kv.channel_rows([layer])
    assert row["means' share"] > 0.3 > 0.15 > row["(shuffled)"]


def test_cls_rows_measure_how_each_ruler_rounds_a_tiny_first_value():
    layer = _layer(tokens=10)
    for v in layer["v"]:
        v[:, 0] *= 0.01  # a tiny [CLS] value
    (row,) = kv.cls_rows([layer])
    assert row["[CLS] error / its size, per channel"] > 5 * row["per token"]


def test_cls_key_norms_see_a_first_key_that_stands_out_only_once_the_offsets_are_gone():
    layer = _layer(tokens=10)
    for k in layer["k"]:
        k += 5.0  # a shared offset dominates every token's norm
        k[:, 0] += 3.0 * torch.randn(
            k.shape[0], k.shape[2], dtype=torch.float64, generator=torch.Generator().manual_seed(1)
        )
    (row,) = kv.cls_key_norms([layer])
    assert row["real keys"] < 1.3 < 2.0 < row["channel means removed"]


def test_an_fp16_cls_pays_no_share_of_the_32_token_rulers():
    n = 12.5
    assert kv._full_bits(2, "channel32", n, True) == pytest.approx((2 * (n - 1) + (n - 1) + 16) / n)
    assert kv._full_bits(2, "channel", n, True) == pytest.approx((2 * (n - 1) + 32 + 16) / n)
    assert kv._full_bits(3, "token", n, False) == pytest.approx(4.0)

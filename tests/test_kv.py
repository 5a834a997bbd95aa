"""The KV-cache quantizer and its byte counts (lesson 10)."""

import pytest
import torch

from qlesson.quant.kv import fake_quantize_kv, kv_cache_bytes, quantized_tokens
from qlesson.teach import kv

G = torch.Generator().manual_seed(10)


def _keys(heads=2, tokens=40, dim=8):
    x = torch.randn(heads, tokens, dim, generator=G, dtype=torch.float64)
    x[..., 3] *= 20.0  # one channel loud on every token
    return x


def test_per_channel_isolates_a_loud_channel_and_per_token_does_not():
    x = _keys()
    err = {a: float((fake_quantize_kv(x, 2, a) - x)[..., [0, 1, 2, 4]].square().mean()) for a in ("token", "channel")}
    assert err["channel"] < err["token"] / 3


def test_axes_and_groups_match_the_granularity_core():
    import qlesson as ql

    x = _keys(heads=1)[0]
    by_token = ql.fake_quantize(x, 3, granularity=ql.PerChannel(0), symmetric=True)
    by_channel = ql.fake_quantize(x.T, 3, granularity=ql.PerGroup(8), symmetric=True).T
    assert torch.equal(fake_quantize_kv(x, 3, "token", symmetric=True), by_token)
    assert torch.equal(fake_quantize_kv(x, 3, "channel", group=8, symmetric=True), by_channel)


def test_asymmetric_is_kivis_float_minimum_not_widened_to_zero():
    """KIVI: scale = (max - min) / (2**bits - 1), value = code x scale + min, per group."""
    x = torch.tensor([[2.0, 3.0, 5.0, 4.0], [-1.0, -3.0, -2.0, -4.0]], dtype=torch.float64)
    got = fake_quantize_kv(x, 2, "token")
    assert torch.equal(got, x)  # 4 values per row on a 4-level grid from min to max: exact
    y = torch.tensor([[10.0, 10.5, 11.0, 13.0]], dtype=torch.float64)
    lo, s = 10.0, 1.0
    assert torch.equal(fake_quantize_kv(y, 2, "token"), torch.round((y - lo) / s) * s + lo)


# Plain transcriptions of KIVI's quant/new_pack.py (quant_and_pack_kcache / _vcache) without the
# bit packing, on [batch, heads, tokens, head_dim] (from an independent version of this lesson).
def _kivi_keys(k, group_size, bits):
    """Groups of ``group_size`` tokens per channel, min/max, float minimum."""
    b, nh, t, d = k.shape
    data = k.reshape(b, nh, t // group_size, group_size, d)
    mn = data.min(dim=-2, keepdim=True).values
    mx = data.max(dim=-2, keepdim=True).values
    scale = (mx - mn) / (2**bits - 1)
    q = ((data - mn) / scale).clamp(0, 2**bits - 1).round()
    return (q * scale + mn).reshape(k.shape)


def _kivi_values(v, group_size, bits):
    """Groups of ``group_size`` channels per token, min/max, float minimum."""
    shape = v.shape
    data = v.reshape(*shape[:-1], shape[-1] // group_size, group_size)
    mn = data.min(dim=-1, keepdim=True).values
    mx = data.max(dim=-1, keepdim=True).values
    scale = (mx - mn) / (2**bits - 1)
    q = ((data - mn) / scale).clamp(0, 2**bits - 1).round()
    return (q * scale + mn).reshape(shape)


@pytest.mark.parametrize(("bits", "group"), [(2, 4), (4, 8), (3, 16), (2, 32)])
def test_keys_per_channel_groups_match_kivis_reference(bits, group):
    k = torch.randn(2, 3, 32, 16, generator=G, dtype=torch.float64) + 0.5
    assert torch.equal(fake_quantize_kv(k, bits, "channel", group=group), _kivi_keys(k, group, bits))


@pytest.mark.parametrize(("bits", "group"), [(2, 8), (4, 16), (3, 4), (2, 32)])
def test_values_per_token_groups_match_kivis_reference(bits, group):
    v = torch.randn(2, 3, 10, 32, generator=G, dtype=torch.float64)
    assert torch.equal(fake_quantize_kv(v, bits, "token", group=group), _kivi_values(v, group, bits))


def test_the_residual_window_and_partial_groups_stay_exact():
    x = _keys(tokens=45)
    y = fake_quantize_kv(x, 2, "channel", group=8, residual=10)
    n_q = quantized_tokens(45, "channel", group=8, residual=10)
    assert n_q == 32 and torch.equal(y[:, n_q:], x[:, n_q:]) and not torch.equal(y[:, :n_q], x[:, :n_q])
    assert (
        quantized_tokens(45, "token", residual=10) == 35 and quantized_tokens(5, "channel", group=8, residual=10) == 0
    )


def test_cache_bytes_count_codes_scales_zero_points_and_the_window():
    fp16 = kv_cache_bytes(2, 3, 32, 100)
    assert fp16 == 2 * 2 * 3 * 32 * 100 * 2
    # per token, groups of 32 (one per head and token), asymmetric: 4 bits + 2 x 2 bytes per 32 values
    q = kv_cache_bytes(2, 3, 32, 100, bits=4, axis="token", group=32)
    assert q == 2 * 2 * 3 * (100 * 32 * 4 // 8 + 100 * 4)
    # a residual of 100 tokens leaves the whole cache in fp16
    assert kv_cache_bytes(2, 3, 32, 100, bits=2, axis="channel", group=32, residual=100) == fp16


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: fake_quantize_kv(torch.ones(4, 8), 4, "row"), "axis='row'"),
        (lambda: fake_quantize_kv(torch.ones(4, 8), 1, "token"), "bits=1"),
        (lambda: fake_quantize_kv(torch.ones(4, 8), 16, "token"), "2 to 8"),
        (lambda: fake_quantize_kv(torch.ones(8), 4, "token"), "tokens, channels"),
        (lambda: fake_quantize_kv(torch.ones(4, 8), 4, "token", group=3), "does not divide"),
        (lambda: fake_quantize_kv(torch.ones(4, 8), 4, "token", symmetric="no"), "True or False"),
        (lambda: kv_cache_bytes(1, 1, 32, 10, bits=4, group=64), "does not divide"),
        (lambda: quantized_tokens(-1, "token"), "tokens=-1"),
    ],
)
def test_bad_input_says_what_works(call, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        call()


def test_rope_rotates_pairs_and_keeps_norms_and_errors_know_their_modes():
    x = _keys(tokens=6)
    r = kv.rope(x)
    assert torch.allclose(r.norm(dim=-1), x.norm(dim=-1)) and torch.allclose(r[:, 0], x[:, 0])
    qkv = [{"q": [x], "k": [x], "v": [x]}]
    p, o = kv.errors_per_sentence(qkv, None, None, rotary="pre")
    assert p[0] == 0 and o[0] == 0
    with pytest.raises(ValueError, match="rotary"):
        kv.errors_per_sentence(qkv, None, None, rotary="both")


def test_attention_errors_grow_as_bits_shrink():
    x = _keys(tokens=12)
    qkv = [{"q": [x], "k": [x + 0.1], "v": [x]}]
    errs = [kv.errors_per_sentence(qkv, kv.scheme(b, "channel"), None)[1][0] for b in (2, 4, 8)]
    assert errs[0] > errs[1] > errs[2] > 0


def test_variant_bits_count_scales_and_minimums_per_group():
    assert kv.variant_bits(2, "token", None, False) == 3.0  # 2 + 32 bits per 32 channels
    assert kv.variant_bits(2, "token", 8, False) == 6.0
    assert kv.variant_bits(2, "channel", None, True) == 2.5  # KIVI's 32 tokens, a scale only
    assert kv.variant_bits(4, "token", 8, True) == 6.0


def test_variant_rows_compare_on_the_same_sentences():
    g = torch.Generator().manual_seed(0)
    layer = {
        name: [torch.randn(2, 6, 32, generator=g, dtype=torch.float64) for _ in range(8)] for name in ("q", "k", "v")
    }
    for k in layer["k"]:
        k[..., 5] += 8.0  # a key channel loud on every token
    rows, comparisons = kv.variant_rows([layer], bits=2)
    assert [r["scheme"] for r in rows] == [v[0] for v in kv.VARIANTS]
    by = {r["scheme"]: r for r in rows}
    assert by["per-channel, asym"]["keys out err"] < by["per-token (32 channels), asym"]["keys out err"]
    for c in comparisons:
        assert c["95% CI"][0] <= c["A - B"] <= c["95% CI"][1]
        assert c["lower error"] in ("A", "B", "tie")
    sym_keys = comparisons[2]
    assert sym_keys["A"] == "per-channel, symmetric" and sym_keys["lower error"] == "B"  # shifted channel


def test_cls_value_rows_show_a_symmetric_ruler_rounding_a_tiny_first_token_to_zero():
    g = torch.Generator().manual_seed(1)
    vs = []
    for _ in range(4):
        v = torch.randn(2, 6, 32, generator=g, dtype=torch.float64) + 2.0  # words: shifted values
        v[:, 0] = 0.01  # the sink token: tiny
        vs.append(v)
    (row,) = kv.cls_value_rows([{"q": vs, "k": vs, "v": vs}], bits=2)
    assert row["[CLS] error, symmetric"] == pytest.approx(row["|[CLS] value|"])  # rounded to exactly 0
    assert row["[CLS] error, asym"] > 3 * row["|[CLS] value|"]
    assert row["other tokens: asym error / symmetric"] < 1

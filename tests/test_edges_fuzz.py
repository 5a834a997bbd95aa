"""Issue 31's fuzz edges: each input gives a ValueError naming the value, or a correct finite result."""

from __future__ import annotations

import pytest
import torch

import qlesson as ql
from qlesson.quant.kv import fake_quantize_kv, kv_cache_bytes, quantized_tokens
from qlesson.teach import calculator
from qlesson.teach import kv as tkv

# ---- fake_quantize_kv -----------------------------------------------------------------------------


@pytest.mark.parametrize("symmetric", [False, True])
def test_kv_values_whose_range_overflows_are_named(symmetric):
    with pytest.raises(ValueError, match=r"x holds 2e\+38, beyond 1.70141e\+38"):
        fake_quantize_kv(torch.tensor([[-2e38, 2e38]]), 2, "token", symmetric=symmetric)


@pytest.mark.parametrize(
    "x",
    [
        [[0.0, 1e-45]],
        [[1e-38, 3e-38, 2e-38, 0.0]],
        [[-1e-40, 2e-39, 5e-39, 1e-45]],
        [[1.0000525e-38, 1.0000001e-38, 1.0000137e-38, 1.0000389e-38]],
    ],
    ids=["subnormal range", "tiny normal", "subnormal", "narrow tiny normal"],
)
@pytest.mark.parametrize("bits", [2, 4, 8])
def test_kv_tiny_groups_use_a_normal_scale(x, bits):
    """The asymmetric scale is never subnormal (as quantize's): the output lies on the grid ``lo + k x scale``
    with ``scale = max(range / (2**bits - 1), tiny)``, every value within half a step of its reconstruction."""
    t = torch.tensor(x)
    out = fake_quantize_kv(t, bits, "token")
    assert bool(torch.isfinite(out).all()), out
    lo, tiny = t.min(), torch.finfo(torch.float32).tiny
    scale = max(float(t.max() - lo) / (2**bits - 1), tiny)
    codes = (out.double() - float(lo)) / scale
    assert (
        bool((codes - codes.round()).abs().max() < 1e-3)
        and 0 <= float(codes.min()) <= float(codes.max()) <= 2**bits - 1
    )
    assert float((out.double() - t.double()).abs().max()) <= 0.5 * scale * (1 + 1e-6), (out, t)


@pytest.mark.parametrize("tokens", [5, 32, 33])
def test_kv_a_window_at_least_as_long_as_the_tokens_keeps_everything(tokens):
    x = torch.randn(2, tokens, 8, generator=torch.Generator().manual_seed(tokens))
    for axis in ("token", "channel"):
        for residual in (tokens, tokens + 1):
            assert torch.equal(fake_quantize_kv(x, 2, axis, group=4, residual=residual), x)
    assert not torch.equal(fake_quantize_kv(x, 2, "token", group=4, residual=tokens - 1), x)


@pytest.mark.parametrize("group", [0, -4, 4.0, "4"])
def test_kv_a_bad_group_is_named_on_both_axes(group):
    x = torch.randn(8, 8)
    for axis in ("token", "channel"):
        with pytest.raises(ValueError, match=f"group={group!r} must be a whole number >= 1"):
            fake_quantize_kv(x, 2, axis, group=group)


def test_kv_quantized_tokens_checks_its_own_group():
    with pytest.raises(ValueError, match="group=0 must be a whole number >= 1"):
        quantized_tokens(100, "channel", group=0)
    assert quantized_tokens(0, "channel", group=32) == 0 == quantized_tokens(0, "token")


@pytest.mark.parametrize(("axis", "group"), [("channel", 4), ("channel", None), ("token", 4), ("token", None)])
@pytest.mark.parametrize("symmetric", [False, True])
def test_kv_heads_are_quantized_one_by_one(axis, group, symmetric):
    """``[heads, tokens, head_dim]`` gives each head what its own ``[tokens, head_dim]`` gets."""
    x = torch.randn(3, 13, 8, generator=torch.Generator().manual_seed(3))
    kw = {"group": group, "symmetric": symmetric, "residual": 5}
    whole = fake_quantize_kv(x, 3, axis, **kw)
    assert torch.equal(whole, torch.stack([fake_quantize_kv(h, 3, axis, **kw) for h in x]))
    assert not torch.equal(whole[:, :8], x[:, :8]) and torch.equal(whole[:, 8:], x[:, 8:])


def test_kv_symmetric_per_token_without_groups_is_one_ruler_per_row():
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(4)) * torch.linspace(0.1, 4, 6)[:, None]
    rows = torch.stack([ql.fake_quantize(r, 3, symmetric=True) for r in x])
    assert torch.equal(fake_quantize_kv(x, 3, "token", symmetric=True), rows)


# ---- kv_cache_bytes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"bits": 2, "group": 0}, "group=0 must be a whole number >= 1"),
        ({"bits": 2, "group": -4}, "group=-4 must be a whole number >= 1"),
        ({"bits": 2, "group": 32.0}, r"group=32.0 must be a whole number"),
        ({"bits": 2, "axis": "channel", "group": 32.0}, r"group=32.0 must be a whole number"),
        ({"bits": 2, "scale_bytes": 2.0}, r"scale_bytes=2.0 must be a whole number"),
        ({"bits": 2, "scale_bytes": -1}, r"scale_bytes=-1 must be a whole number"),
        ({"axis": "tok"}, "axis='tok' must be 'token'"),
        ({"residual": -1}, "residual=-1 must be a whole number"),
        ({"symmetric": "no"}, "symmetric='no' must be True or False"),
        ({"group": 0}, "group=0 must be a whole number"),
        ({"scale_bytes": 2.5}, "scale_bytes=2.5 must be a whole number"),
        ({"bits": 16.0}, "bits=16.0 is not supported"),
    ],
)
def test_kv_cache_bytes_names_a_bad_argument_at_every_bit_width(kw, words):
    with pytest.raises(ValueError, match=words):
        kv_cache_bytes(1, 1, 32, 64, **kw)


def test_kv_cache_bytes_counts_whole_bytes():
    n = kv_cache_bytes(1, 1, 32, 64, bits=2, axis="channel", group=32)
    assert type(n) is int and n == 1536
    assert type(kv_cache_bytes(1, 1, 32, 64)) is int
    # per token, groups of 16: 64 tokens x 32 values x 4 bits, and 2 groups x (scale + minimum) x 2 bytes per token
    token = kv_cache_bytes(1, 1, 32, 64, bits=4, axis="token", group=16)
    assert type(token) is int and token == 2 * (64 * 32 * 4 // 8 + 64 * 2 * 2 * 2)
    assert kv_cache_bytes(1, 1, 32, 64, bits=4, axis="token", group=16, scale_bytes=0) == 2 * 64 * 32 * 4 // 8
    assert kv_cache_bytes(1, 1, 32, 0, bits=2) == 0 == kv_cache_bytes(1, 1, 32, 0)


@pytest.mark.parametrize("name", ["layers", "kv_heads", "head_dim"])
def test_kv_cache_bytes_needs_a_layer_a_head_and_a_channel(name):
    shape = {"layers": 1, "kv_heads": 1, "head_dim": 32, name: 0}
    with pytest.raises(ValueError, match=f"{name}=0 must be a whole number >= 1"):
        kv_cache_bytes(**shape, tokens=64)


# ---- lesson 10's helpers --------------------------------------------------------------------------


def _qkv(v_zero=False, k_zero=False, head_dim=4):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 5, head_dim, generator=g, dtype=torch.float64) for _ in range(3))
    return [{"q": [q], "k": [k * 0 if k_zero else k], "v": [v * 0 if v_zero else v]}]


@pytest.mark.parametrize(
    "call",
    [
        lambda d: tkv.errors_per_sentence(d, None, None),
        lambda d: tkv.cls_rows(d),
        lambda d: tkv.cls_value_rows(d),
        lambda d: tkv.exact_attention(d),
        lambda d: tkv.output_errors(d, "v", 2, "token"),
        lambda d: tkv.window_errors(d, residual=1),
    ],
    ids=["errors_per_sentence", "cls_rows", "cls_value_rows", "exact_attention", "output_errors", "window_errors"],
)
def test_lesson10_helpers_refuse_all_zero_values(call):
    assert call(_qkv()) is not None  # the same call on ordinary data runs
    with pytest.raises(ValueError, match="sentence 0: every value is 0"):
        call(_qkv(v_zero=True))


def test_lesson10_head_rows_refuse_all_zero_keys():
    assert tkv.head_rows(_qkv())
    with pytest.raises(ValueError, match="a head's keys are constant"):
        tkv.head_rows(_qkv(k_zero=True))


def test_lesson10_rope_needs_an_even_head_dim():
    with pytest.raises(ValueError, match="head_dim=5 is odd"):
        tkv.rope(torch.ones(1, 3, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match="head_dim=3 is odd"):
        tkv.errors_per_sentence(_qkv(head_dim=3), None, None, rotary="post")
    assert tkv.errors_per_sentence(_qkv(head_dim=3), None, None)[0].shape == (1,)  # no rotary: odd is fine


@pytest.mark.parametrize("contexts", [(0,), (-8,), (8192.0,), (True,)])
def test_lesson10_memory_rows_refuse_an_empty_context(contexts):
    with pytest.raises(ValueError, match=r"context .* must be a whole number of tokens >= 1"):
        tkv.memory_rows(contexts)


# ---- FP8 and the calculator -----------------------------------------------------------------------


@pytest.mark.parametrize("value", [1e-300, 1e-46])
def test_fp8_refuses_float64_values_that_float32_rounds_to_zero(value):
    with pytest.raises(ValueError, match=f"largest magnitude, {value:.6g}, rounds to 0 in float32"):
        ql.quantize_fp8(torch.full((1, 128), value, dtype=torch.float64), ql.PerGroup(128))
    tiny = torch.full((1, 128), 1e-40, dtype=torch.float64)  # a float32 subnormal is still quantized
    assert float(ql.quantize_fp8(tiny, ql.PerGroup(128)).dequantize().abs().max()) > 0


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("1.000,5", "1000.5"),
        ("0.25 1.000,5", "1000.5"),
        ("2; -12.345.678,9", "-12345678.9"),
        ("1.234,56, 7", "1234.56"),
    ],
)
def test_calculator_refuses_a_european_number(text, plain):
    with pytest.raises(ValueError, match=f"could be {plain} written with a decimal comma"):
        calculator.parse_channels(text)


@pytest.mark.parametrize(("text", "values"), [("1.000, 5", [1.0, 5.0]), ("1.5,2", [1.5, 2.0]), ("1.0 5", [1.0, 5.0])])
def test_calculator_still_reads_points_and_commas_it_is_sure_of(text, values):
    assert calculator.parse_channels(text)[0].tolist() == values

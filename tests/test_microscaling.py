"""MXFP4 and NVFP4 against gguf (bytes) and torchao (values, every scale rule), FP4/FP8 rounding against torch."""

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf import quants as gq

from qlesson.quant import formats, microscaling
from qlesson.quant._quiet import quiet_imports
from qlesson.quant.minifloat import E2M1_VALUES, e2m1_code, e2m1_value, e4m3_byte, e4m3_value, round_to

with quiet_imports():
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.kernels import f4_unpacked_to_f32, f32_to_f4_unpacked
    from torchao.prototype.mx_formats.mx_tensor import to_dtype, to_mx
    from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, nvfp4_quantize, per_tensor_amax_to_scale

MODES = {
    "floor": ScaleCalculationMode.FLOOR,
    "ceil": ScaleCalculationMode.CEIL,
    "even": ScaleCalculationMode.EVEN,
    "rceil": ScaleCalculationMode.RCEIL,
}
F32 = np.finfo(np.float32)


def _rows(k: int = 256) -> np.ndarray:
    """Random rows at many magnitudes, then blocks of ties, zeros, negatives, subnormals, the largest floats."""
    rng = np.random.default_rng(7)
    rows = [rng.standard_normal(k) * s for s in (1e-30, 1e-3, 1.0, 5e3, 1e30)]
    ties = (np.arange(k) % 16 - 8) * 0.25  # 0.25, 0.75, 1.25, 2.5, 5 ... x 2**k: halfway between E2M1 values
    special = np.concatenate([np.zeros(32), -np.abs(rng.standard_normal(32)), np.full(32, -6.0), np.full(32, 7.0)])
    special = np.concatenate([special, rng.standard_normal(k - 128) * 1e-3])
    special[130] = np.nextafter(np.float32(2**10), np.float32(0))  # just below a power of two
    big = np.linspace(-1, 1, k) * F32.max / 2  # large, and no rule rounds it past float32
    tiny_normal = np.linspace(-1, 1, k) * 1e-36
    return np.stack([*rows, ties, ties * 2.0**-20, special, big, tiny_normal]).astype(np.float32)


def _torchao_mx(x: np.ndarray, rule: str) -> tuple[np.ndarray, np.ndarray]:
    s, d = to_mx(torch.from_numpy(x), torch.float4_e2m1fn_x2, 32, MODES[rule])
    return s.view(torch.uint8).numpy(), to_dtype(d, s, torch.float4_e2m1fn_x2, 32, torch.float32).numpy()


@pytest.mark.parametrize("rule", microscaling.RULES)
def test_mx_values_match_torchao_for_every_rule(rule):
    x = _rows()
    ours = microscaling.quantize_mx(x, rule)
    exps, values = _torchao_mx(x, rule)
    np.testing.assert_array_equal(ours.exponents, exps)
    np.testing.assert_array_equal(ours.values(), values)
    assert ours.bits_per_weight == 4 + 8 / 32


def test_mx_rules_order_their_scales():
    x = _rows()
    e = {r: microscaling.quantize_mx(x, r).exponents.astype(int) for r in microscaling.RULES}
    assert (e["floor"] <= e["even"]).all() and (e["even"] <= e["ceil"]).all() and (e["rceil"] <= e["ceil"]).all()
    assert (e["ceil"] - e["floor"] <= 1).all() and (e["ceil"] > e["floor"]).any() and (e["even"] > e["floor"]).any()
    ceil = microscaling.quantize_mx(x, "ceil")
    ratio = np.abs(x).reshape(*ceil.exponents.shape, 32).max(axis=-1) / ceil.scales()
    assert (ratio <= 4).all()  # ceil never saturates: amax / scale <= 4


def test_mx_tiny_blocks_keep_their_values_where_torchao_halves_them():
    x = (np.linspace(-1, 1, 32) * 1.5 * 2.0**-125).astype(np.float32).reshape(1, 32)  # exponent 0: 2**-127
    ours = microscaling.quantize_mx(x, "floor")
    assert int(ours.exponents[0, 0]) == 0
    np.testing.assert_array_equal(ours.values(), round_to(x.astype(np.float64) * 2.0**127, "E2M1") * 2.0**-127)
    _, theirs = _torchao_mx(x, "floor")  # encoded with 2**-126, decoded with 2**-127
    with_2_126 = round_to(x.astype(np.float64) / 2.0**-126, "E2M1") * 2.0**-126
    np.testing.assert_array_equal(theirs.astype(np.float64) * 2, with_2_126)
    assert np.abs(theirs - x).max() > 2 * np.abs(ours.values() - x).max()


@pytest.mark.parametrize("rule", ["ceil", "even", "rceil"])
def test_mx_rounding_past_float32_is_a_value_error_where_torchao_gives_inf(rule):
    x = (np.linspace(-1, 1, 32) * F32.max).astype(np.float32)
    with pytest.raises(ValueError, match=r"3\.40282e\+38 rounds up to 3\.40282e\+38|beyond float32's largest"):
        microscaling.quantize_mx(x, rule)
    assert np.isinf(_torchao_mx(x.reshape(1, 32), rule)[1]).any()
    assert np.isfinite(microscaling.quantize_mx(x, "floor").values()).all()  # floor saturates at 6 x 2**125


def test_mxfp4_bytes_match_gguf():
    x = _rows()
    ours = formats.quantize(x, "MXFP4")
    with np.errstate(over="ignore"):  # gguf's error search overflows on the largest floats; its choice is right
        ref = gq.quantize(x, GGMLQuantizationType.MXFP4)
    assert formats.bits_per_weight("MXFP4") == gq.GGML_QUANT_SIZES[GGMLQuantizationType.MXFP4][1] * 8 / 32
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(formats.dequantize(ours, "MXFP4"), gq.dequantize(ref, GGMLQuantizationType.MXFP4))


def test_gguf_and_torchao_floor_differ_only_at_ties_and_just_below_powers_of_two():
    x = _rows()
    gguf_vals = formats.dequantize(formats.quantize(x, "MXFP4"), "MXFP4")
    mx = microscaling.quantize_mx(x, "floor")
    ocp = mx.values()
    v = x.reshape(-1, 32) / mx.scales().reshape(-1, 1)
    tie = np.isin(np.abs(v), [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])  # halfway between E2M1 values
    gguf_e = formats.quantize(x, "MXFP4").reshape(-1, 17)[:, 0].astype(int)
    log2_blocks = gguf_e != mx.exponents.reshape(-1)
    amax = np.abs(x).reshape(-1, 32).max(axis=1)
    with np.errstate(divide="ignore"):
        rounded_up = (
            (np.log2(amax) == np.ceil(np.log2(amax))) & (np.frexp(amax)[0] != 0.5) & (amax > 0)
        )  # not a power of 2
    np.testing.assert_array_equal(log2_blocks, rounded_up)  # the 2**10 - ulp block, and the big row's ends
    assert int(gguf_e[log2_blocks][0]) == int(mx.exponents.reshape(-1)[log2_blocks][0]) + 1
    differ = gguf_vals.reshape(-1, 32) != ocp.reshape(-1, 32)
    assert differ.any() and not (differ & ~tie & ~log2_blocks[:, None]).any()
    t = tie & ~log2_blocks[:, None]
    assert (np.abs(gguf_vals.reshape(-1, 32)[t]) <= np.abs(ocp.reshape(-1, 32)[t])).all()  # gguf: toward zero


def test_mxfp4_where_gguf_wraps_its_exponent():
    x = (np.linspace(-1, 1, 32) * 1e-39).astype(np.float32)  # amax below 2**-125: gguf's exponent goes negative
    with np.errstate(all="ignore"):
        ref = gq.quantize(x, GGMLQuantizationType.MXFP4)
    ours = formats.quantize(x, "MXFP4")
    assert ref[0] > 200 and ours[0] == 0  # gguf wrapped around to a huge scale; qlesson stores 2**-127
    assert np.abs(formats.dequantize(ours, "MXFP4") - x).max() <= 2.0**-127


def test_mx_and_e2m1_reject_bad_input():
    with pytest.raises(ValueError, match=r"blocks of 32 values along the last axis, which has length 48"):
        formats.quantize(np.ones(48, dtype=np.float32), "MXFP4")
    with pytest.raises(ValueError, match="rule='round'"):
        microscaling.quantize_mx(np.ones(32, dtype=np.float32), "round")
    with pytest.raises(ValueError, match="NaN"):
        microscaling.quantize_mx(np.full(32, np.nan, dtype=np.float32))
    with pytest.raises(ValueError, match="integer dtype"):
        formats.quantize(np.ones(32, dtype=np.int64), "MXFP4")
    with pytest.raises(ValueError, match="E2M1 grid"):
        e2m1_code(np.array([0.7]))
    with pytest.raises(ValueError, match="multiple of 17 bytes"):
        formats.dequantize(np.zeros(18, dtype=np.uint8), "MXFP4")


def test_e2m1_rounding_matches_torchao_cast():
    rng = np.random.default_rng(0)
    halfway = (E2M1_VALUES[1:] + E2M1_VALUES[:-1]) / 2
    v = np.concatenate([rng.uniform(-8, 8, 5000), halfway, -halfway, E2M1_VALUES, [6.5, 7.0, 100.0, -1e9, -0.0]])
    v = v.astype(np.float32)
    codes = e2m1_code(round_to(v, "E2M1"))
    theirs = f32_to_f4_unpacked(torch.from_numpy(v)).numpy()
    np.testing.assert_array_equal(codes, theirs)
    np.testing.assert_array_equal(e2m1_value(codes), f4_unpacked_to_f32(torch.from_numpy(theirs)).numpy())


def test_e4m3_rounding_matches_torch_cast():
    rng = np.random.default_rng(1)
    grid = e4m3_value(np.arange(127, dtype=np.uint8)).astype(np.float64)
    halfway = (grid[1:] + grid[:-1]) / 2
    v = np.concatenate([rng.standard_normal(5000) * 10.0 ** rng.uniform(-4, 3, 5000), halfway, -halfway, grid])
    v = np.concatenate([v, [449.0, 464.0, 1e6, -1e30, 2.0**-10, 2.0**-10 * 3, 1e-45]]).astype(np.float32)
    t = torch.from_numpy(v).to(torch.float8_e4m3fn)
    ours = round_to(v, "E4M3")
    np.testing.assert_array_equal(ours.astype(np.float32), t.float().numpy())
    np.testing.assert_array_equal(e4m3_byte(ours), t.view(torch.uint8).numpy())


def _torchao_nvfp4(x: np.ndarray, ts: float | None):
    pts = None if ts is None else torch.tensor(ts, dtype=torch.float32)
    s, d = nvfp4_quantize(torch.from_numpy(x), 16, pts)
    values = NVFP4Tensor(d, s, 16, torch.float32, pts).dequantize(torch.float32).numpy()
    return s.view(torch.uint8).numpy(), values


def test_nvfp4_matches_torchao_with_and_without_tensor_scale():
    x = _rows()[[1, 2, 3, 5, 7, 8]]
    ts = microscaling.nvfp4_tensor_scale(x)
    assert np.float32(ts) == per_tensor_amax_to_scale(torch.from_numpy(np.abs(x).max(keepdims=True))).item()
    for scale, theirs, rows in ((ts, ts, x), (1.0, None, x[[0, 1, 3]])):  # single-level: a tensor scale of 1
        ours = microscaling.quantize_nvfp4(rows, scale)
        s, values = _torchao_nvfp4(rows, theirs)
        np.testing.assert_array_equal(ours.scale_bytes, s)
        np.testing.assert_array_equal(ours.values(), values)


def test_nvfp4_bytes_in_gguf_layout():
    x = _rows()[[1, 2, 3, 5, 7]]
    ts = microscaling.nvfp4_tensor_scale(x)
    raw = formats.quantize(x, "NVFP4", tensor_scale=ts)
    assert raw.shape == (5, 256 // 64 * gq.GGML_QUANT_SIZES[GGMLQuantizationType.NVFP4][1])
    ours = formats.dequantize(raw, "NVFP4", tensor_scale=ts)
    np.testing.assert_array_equal(ours, microscaling.quantize_nvfp4(x, ts).values())
    ref = gq.dequantize(raw, GGMLQuantizationType.NVFP4)  # gguf multiplies fp4 x block scale, then we x ts
    np.testing.assert_allclose(ref * np.float32(ts), ours, rtol=2 * F32.eps, atol=0)
    np.testing.assert_array_equal(ref, formats.dequantize(raw, "NVFP4", tensor_scale=1.0))
    fp = formats.footprint(x.shape, "NVFP4")
    assert fp.bits_per_weight == formats.bits_per_weight("NVFP4") + 32 / x.size
    assert formats.bits_per_weight("NVFP4") == gq.GGML_QUANT_SIZES[GGMLQuantizationType.NVFP4][1] * 8 / 64


def test_nvfp4_edges():
    zeros = microscaling.quantize_nvfp4(np.zeros((2, 64), dtype=np.float32))
    assert zeros.tensor_scale == 1.0 and not zeros.values().any()
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    with pytest.raises(
        ValueError, match=r"largest magnitude 3 needs the E4M3 block scale .* beyond E4M3's largest 448"
    ):
        microscaling.quantize_nvfp4(x, tensor_scale=1e-4)
    with pytest.raises(ValueError, match="tensor_scale=nan"):
        microscaling.quantize_nvfp4(x, tensor_scale=float("nan"))
    with pytest.raises(ValueError, match="NVFP4 bytes need the float32 per-tensor scale"):
        formats.dequantize(formats.quantize(x, "NVFP4"), "NVFP4")
    with pytest.raises(ValueError, match="which has length 48"):
        formats.quantize(np.ones(48, dtype=np.float32), "NVFP4")
    with pytest.raises(ValueError, match="blocks of 16 values along the last axis, which has length 24"):
        microscaling.quantize_nvfp4(np.ones(24, dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        formats.quantize(np.full(64, np.nan, dtype=np.float32), "NVFP4")
    with pytest.raises(ValueError, match="integer dtype"):
        microscaling.quantize_nvfp4(np.ones(64, dtype=np.int16))
    with pytest.raises(ValueError, match="multiple of 36 bytes"):
        formats.dequantize(np.zeros(35, dtype=np.uint8), "NVFP4", tensor_scale=1.0)
    big = (np.linspace(-1, 1, 64) * F32.max / 2).astype(np.float32)  # largest floats: finite, within a step
    t = microscaling.quantize_nvfp4(big)
    assert np.isfinite(t.values()).all()
    assert np.allclose(t.values(), big, rtol=0, atol=float(np.abs(big).max()) / 6)

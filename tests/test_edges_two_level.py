"""Hypothesis edges for the lesson-08 formats: magnitudes from float32 subnormals to its maximum, 1-D to 3-D.

Each accepted input gives finite values that gguf decodes as qlesson does (Q4_K, Q6_K, MXFP4
bytes) and that torchao computes too (MXFP4 rules, NVFP4); each refusal names fp16's limit.
"""

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf import quants as gq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qlesson.quant import formats, microscaling
from qlesson.quant._quiet import quiet_imports

with quiet_imports():
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_dtype, to_mx

EDGE = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def weights(draw, block: int) -> np.ndarray:
    lead = tuple(draw(st.lists(st.integers(1, 2), min_size=0, max_size=2)))
    k = block * draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**16))
    exponent = draw(st.sampled_from([-44, -40, -38, -30, -8, -2, 0, 2, 5, 8, 20, 37]))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*lead, k)) * 10.0**exponent
    if draw(st.booleans()):
        x.reshape(-1)[: block // 2] = 0.0
    if draw(st.booleans()):
        x = np.round(x / 10.0**exponent * 4) / 4 * 10.0**exponent  # quarter ticks: many exact ties
    with np.errstate(over="ignore"):
        return np.clip(x, -3.4e38, 3.4e38).astype(np.float32)


@given(data=st.data(), fmt=st.sampled_from(["Q4_K", "Q6_K"]))
@EDGE
def test_kquants_decode_as_gguf_or_name_the_fp16_limit(data, fmt):
    x = data.draw(weights(256))
    try:
        raw = formats.quantize(x, fmt)
    except ValueError as err:
        assert "beyond fp16's largest 65504" in str(err)
        assert np.abs(x).max() > 1e5  # only large tensors are refused
        return
    ours = formats.dequantize(raw, fmt)
    assert np.isfinite(ours).all()
    np.testing.assert_array_equal(ours, gq.dequantize(raw, GGMLQuantizationType[fmt]))
    # within a step of the whole range, plus what an fp16 super-scale near its subnormals (2**-24 apart) loses:
    # below about 2**-25 x 63 x 15 (Q4_K) or 2**-25 x 127 x 32 (Q6_K) it is 0 and the block reads back as 0
    assert np.abs(ours - x).max() <= np.ptp(x) / 15 + 127 * 32 * 2.0**-25


@given(data=st.data(), fmt=st.sampled_from(["Q4_K", "Q6_K"]))
@EDGE
def test_kquant_search_decodes_as_gguf_or_names_the_fp16_limit(data, fmt):
    x = data.draw(weights(256))
    try:
        raw = formats.quantize(x, fmt, search=True)
    except ValueError as err:
        assert "beyond fp16's largest 65504" in str(err)
        assert np.abs(x).max() > 1e5
        return
    ours = formats.dequantize(raw, fmt)
    assert np.isfinite(ours).all()
    np.testing.assert_array_equal(ours, gq.dequantize(raw, GGMLQuantizationType[fmt]))
    assert raw.shape == formats.quantize(x, fmt).shape


@given(data=st.data())
@EDGE
def test_mxfp4_bytes_match_gguf_where_its_exponent_is_defined(data):
    x = data.draw(weights(32))
    raw = formats.quantize(x, "MXFP4")
    with np.errstate(all="ignore"):
        ref = gq.quantize(x, GGMLQuantizationType.MXFP4)
    amax = np.abs(x).reshape(-1, 32).max(axis=1)
    defined = (amax == 0) | (amax >= 2.0**-125)  # below, gguf's exponent byte wraps around
    np.testing.assert_array_equal(raw.reshape(-1, 17)[defined], ref.reshape(-1, 17)[defined])
    assert np.isfinite(formats.dequantize(raw, "MXFP4")).all()


@given(data=st.data(), rule=st.sampled_from(microscaling.RULES))
@EDGE
def test_mx_rules_match_torchao_above_the_smallest_exponent(data, rule):
    x = data.draw(weights(32))
    mode = getattr(ScaleCalculationMode, rule.upper())
    s, d = to_mx(torch.from_numpy(x.reshape(-1, x.shape[-1])), torch.float4_e2m1fn_x2, 32, mode)
    theirs = to_dtype(d, s, torch.float4_e2m1fn_x2, 32, torch.float32).numpy().reshape(-1, 32)
    try:
        ours = microscaling.quantize_mx(x, rule)
    except ValueError as err:
        assert "beyond float32's" in str(err) and not np.isfinite(theirs).all()
        return
    e = ours.exponents.reshape(-1)
    np.testing.assert_array_equal(e, s.view(torch.uint8).numpy().reshape(-1))
    normal = e > 0  # torchao encodes exponent-0 blocks with 2**-126 and decodes them with 2**-127
    np.testing.assert_array_equal(ours.values().reshape(-1, 32)[normal], theirs[normal])


@given(data=st.data())
@EDGE
def test_nvfp4_finite_and_within_a_step(data):
    x = data.draw(weights(64))
    t = microscaling.quantize_nvfp4(x)
    v = t.values()
    assert np.isfinite(v).all()
    amax = np.abs(x).reshape(-1, 16).max(axis=1, keepdims=True)
    # a block's error is at most its top step (2 x block scale / 2), plus E4M3 rounding of that scale
    tol = amax / 6 * 1.07 + t.tensor_scale * 2.0**-6 * 6
    assert (np.abs(v - x).reshape(-1, 16) <= tol).all()
    with pytest.raises(ValueError):
        formats.dequantize(formats.quantize(x, "NVFP4"), "NVFP4")  # the tensor scale is needed

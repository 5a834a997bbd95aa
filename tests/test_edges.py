"""The edges: every dtype, magnitudes from subnormal to the float maximum, 0-d to 5-D.

Every accepted input gives finite results within half a tick; every rejected one a
ValueError. Which inputs are accepted is predicted here from the documented limits
(finite values, |x| at most half the dtype's maximum), not from qlesson's own checks.
The block formats are run against the ``gguf`` package on the same inputs.
"""

import math
import warnings

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf import quants as gq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qlesson as ql
from qlesson.quant import formats
from qlesson.quant.granularity import to_blocks

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
GGML = {"Q8_0": GGMLQuantizationType.Q8_0, "Q4_0": GGMLQuantizationType.Q4_0, "Q4_1": GGMLQuantizationType.Q4_1}
EDGE = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def magnitudes(draw, dtype):
    """A positive magnitude from below the smallest subnormal to beyond the largest float32 / float64."""
    special = [1e-45, 1.4e-45, 1e-40, 1.2e-38, 3e-38, 1.0, 65504.0, 1.7e38, 1.7014117e38, 3.4028235e38, 1e39]
    if dtype == torch.float64:
        special += [5e-324, 2.2e-308, 8.98e307, 8.99e307, 1.7976931348623157e308]
    hi = 308 if dtype == torch.float64 else 39
    lo = -324 if dtype == torch.float64 else -46
    return draw(st.one_of(st.sampled_from(special), st.integers(lo, hi).map(lambda e: 3.0 * 10.0**e)))


@st.composite
def tensors(draw, dtype, shape):
    """Values in [-1, 1] times a magnitude, cast to ``dtype`` (a cast may overflow to inf on purpose)."""
    n = math.prod(shape)
    unit = draw(st.lists(st.floats(-1, 1, allow_nan=False), min_size=n, max_size=n))
    sign_mix = draw(st.sampled_from(["both", "positive", "negative"]))
    a = np.array(unit, dtype=np.float64).reshape(shape)
    a = np.abs(a) if sign_mix == "positive" else -np.abs(a) if sign_mix == "negative" else a
    with np.errstate(over="ignore"):
        a = np.asarray(a * draw(magnitudes(dtype)))
    return torch.from_numpy(a).to(dtype)


@st.composite
def granularities(draw, shape):
    kind = draw(st.sampled_from(["tensor", "channel", "group"]))
    if kind == "tensor":
        return ql.PerTensor()
    if not shape:  # 0-d: only PerTensor is valid; the others must be rejected
        return ql.PerChannel(0) if kind == "channel" else ql.PerGroup(1)
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    if kind == "channel":
        return ql.PerChannel(axis)
    n = shape[axis]
    return ql.PerGroup(draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0] or [1])), axis)


def _accepted(x: torch.Tensor, gran) -> bool:
    """The documented contract, computed independently of qlesson."""
    wide = x.double()
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    if x.numel() == 0 or not bool(torch.isfinite(wide).all()):
        return False
    if x.ndim == 0 and not isinstance(gran, ql.PerTensor):
        return False
    return float(wide.abs().max()) <= torch.finfo(compute).max / 2


@given(data=st.data(), bits=st.integers(2, 16), symmetric=st.booleans(), signed=st.booleans())
@EDGE
def test_every_input_is_finite_within_half_a_tick_or_rejected(data, bits, symmetric, signed):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = tuple(data.draw(st.lists(st.sampled_from([1, 2, 3, 4, 0]), min_size=0, max_size=5)))
    x = data.draw(tensors(dtype, shape))
    gran = data.draw(granularities(shape))
    if not _accepted(x, gran):
        with pytest.raises(ValueError):
            ql.quantize(x, bits, granularity=gran, symmetric=symmetric, signed=signed)
        with pytest.raises(ValueError):
            ql.fake_quantize(x, bits, granularity=gran, symmetric=symmetric, signed=signed)
        return
    qt = ql.quantize(x, bits, granularity=gran, symmetric=symmetric, signed=signed)
    x_hat = qt.dequantize()
    fake = ql.fake_quantize(x, bits, granularity=gran, symmetric=symmetric, signed=signed)
    assert bool(torch.isfinite(qt.scale).all()) and bool((qt.scale > 0).all())
    assert bool(torch.isfinite(x_hat).all()) and torch.equal(x_hat, fake)
    # no subnormal scale: the smallest is the dtype's smallest normal number
    assert bool((qt.scale >= torch.finfo(qt.scale.dtype).tiny).all())
    xw = x.to(x_hat.dtype).reshape(x_hat.shape)
    blocks = to_blocks(xw.reshape(-1) if x.ndim == 0 else xw, gran).shape
    scale = qt._grid(qt.scale).expand(blocks).reshape(x_hat.shape)
    codes = 2**bits
    slack = 4 * codes * torch.finfo(x_hat.dtype).eps  # rounding of x / scale and of q * scale, in ticks
    err = (x_hat.double() - xw.double()).abs()
    assert bool((err <= scale.double() * (0.5 + slack)).all()), float((err / scale.double()).max())


@given(data=st.data())
@EDGE
def test_errors_are_finite_for_every_accepted_pair(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    x = data.draw(tensors(dtype, shape))
    if not _accepted(x, ql.PerTensor()):
        return
    x_hat = ql.fake_quantize(x, 4)
    e = ql.errors(x, x_hat)
    ce = ql.channel_errors(x, x_hat, 0)
    assert all(math.isfinite(v) for v in (e.mae, e.rmse, e.max_abs))
    assert not math.isnan(e.sqnr_db) and not bool(torch.isnan(ce.sqnr_db).any())
    assert bool(torch.isfinite(ce.rmse).all()) and e.mae <= e.rmse * (1 + 1e-9) <= e.max_abs * (1 + 1e-9)


def _gguf(x: np.ndarray, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """gguf's bytes and dequantized values; its overflows and undefined casts are its own."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        raw = gq.quantize(x.astype(np.float32), GGML[fmt])
        return raw, gq.dequantize(raw, GGML[fmt])


def _reciprocal_overflows(x: np.ndarray, fmt: str) -> np.ndarray:
    """Blocks where gguf's float32 ``1 / d`` is inf (its codes there are casts of inf/NaN: undefined)."""
    b = x.astype(np.float32).reshape(-1, 32)
    with np.errstate(all="ignore"):
        if fmt == "Q8_0":
            d = np.abs(b).max(1) / np.float32(127)
        elif fmt == "Q4_0":
            d = b[np.arange(len(b)), np.abs(b).argmax(1)] / np.float32(-8)
        else:
            d = (b.max(1) - b.min(1)) / np.float32(15)
        return (d != 0) & ~np.isfinite(np.float32(1) / d.astype(np.float32))


@given(data=st.data(), fmt=st.sampled_from(formats.FORMATS))
@EDGE
def test_formats_match_gguf_or_reject_where_gguf_overflows(data, fmt):
    dtype = data.draw(st.sampled_from(DTYPES))
    lead = tuple(data.draw(st.lists(st.integers(1, 2), min_size=0, max_size=2)))
    shape = (*lead, 32 * data.draw(st.integers(1, 2)))
    x = data.draw(tensors(dtype, shape))
    a = x.double().numpy()
    if not np.isfinite(a).all():
        with pytest.raises(ValueError, match="NaN|inf"):
            formats.quantize(x, fmt)
        return
    ref, ref_hat = _gguf(a, fmt)
    if not np.isfinite(ref_hat).all():  # gguf's fp16 header overflowed: qlesson refuses and says so
        with pytest.raises(ValueError, match=r"beyond fp16's largest 65504.*gguf"):
            formats.quantize(x, fmt)
        return
    ours = formats.quantize(x, fmt)
    assert ours.shape == ref.shape
    np.testing.assert_array_equal(formats.dequantize(ours, fmt), ref_hat)
    header = 4 if fmt == "Q4_1" else 2
    mine, theirs = ours.reshape(-1, formats.BLOCK_BYTES[fmt]), ref.reshape(-1, formats.BLOCK_BYTES[fmt])
    np.testing.assert_array_equal(mine[:, :header], theirs[:, :header])
    defined = ~_reciprocal_overflows(a, fmt)
    np.testing.assert_array_equal(mine[defined], theirs[defined])
    zero_code = {"Q8_0": 0, "Q4_0": 0x88, "Q4_1": 0}[fmt]
    assert (mine[~defined, header:] == zero_code).all()


@pytest.mark.parametrize(("fmt", "value"), [("Q8_0", 8.4e6), ("Q4_0", -5.3e5), ("Q4_1", -65600.0), ("Q4_1", 1e6)])
def test_gguf_itself_overflows_where_formats_refuse(fmt, value):
    x = np.linspace(-1, 1, 32, dtype=np.float32) * min(abs(value), 6e4)
    x[7] = value
    _, ref_hat = _gguf(x, fmt)
    assert not np.isfinite(ref_hat).all()  # gguf: an infinite fp16 scale, inf/NaN back
    with pytest.raises(ValueError, match=rf"{fmt} cannot store block 0.*65504.*gguf's own quantize"):
        formats.quantize(x, fmt)
    with pytest.raises(ValueError, match=r"block 0 stores a non-finite fp16 header"):
        formats.dequantize(_gguf(x, fmt)[0], fmt)


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_largest_block_each_format_carries_round_trips(fmt):
    limit = formats.LIMITS[fmt][0] if fmt != "Q4_1" else formats.FP16_MAX
    x = np.linspace(-1, 1, 32, dtype=np.float32) * np.float32(limit)
    if fmt == "Q4_1":
        x = np.linspace(-formats.FP16_MAX, formats.FP16_MAX, 32, dtype=np.float32)
    raw = formats.quantize(x, fmt)
    ref, ref_hat = _gguf(x, fmt)
    np.testing.assert_array_equal(raw, ref)
    assert np.isfinite(formats.dequantize(raw, fmt)).all() and np.isfinite(ref_hat).all()


def test_lists_beyond_float32_name_the_value():
    with pytest.raises(ValueError, match=r"holds 1e\+39, beyond float32's largest.*dtype=np.float64"):
        ql.quantize([1e39, 1.0], 8)
    qt = ql.quantize(np.array([1e39, -1.0]), 8)  # float64 stays float64
    assert bool(torch.isfinite(qt.dequantize()).all())


def test_huge_values_name_the_value_and_the_limit():
    with pytest.raises(ValueError, match=r"holds -3\.4e\+38, beyond 1\.70141e\+38.*torch.float32"):
        ql.quantize(torch.tensor([1.0, -3.4e38]), 8, symmetric=False)
    with pytest.raises(ValueError, match=r"holds 1e\+308, beyond 8\.98847e\+307.*float64"):
        ql.quantize(np.array([1e308, -1e308]), 8)


def test_a_tiny_error_beside_large_values_keeps_its_rmse_and_sqnr():
    # found by hypothesis: squares of 1e-200 / 1.0 underflow, so the RMSE came out 0 below the MAE
    x = torch.tensor([1.0, 0.0], dtype=torch.float64)
    x_hat = torch.tensor([1.0, 1e-200], dtype=torch.float64)
    e = ql.errors(x, x_hat)
    assert e.mae == pytest.approx(0.5e-200) and e.rmse == pytest.approx(math.sqrt(0.5) * 1e-200)
    assert e.sqnr_db == pytest.approx(4000.0)  # 10 log10(1 / (1e-200)^2): finite, not inf
    ce = ql.channel_errors(x[None], x_hat[None], 0)
    assert float(ce.rmse[0]) == pytest.approx(e.rmse) and float(ce.sqnr_db[0]) == pytest.approx(e.sqnr_db)

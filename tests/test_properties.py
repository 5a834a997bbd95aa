"""Property-based tests: the invariants every lesson relies on."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import qlesson as ql

settings.register_profile("qlesson", max_examples=60, deadline=None, derandomize=True)
settings.load_profile("qlesson")

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32)
bits_st = st.integers(2, 16)


@st.composite
def matrices(draw, max_rows=6, max_cols=4, group=None):
    rows = draw(st.integers(1, max_rows))
    cols = draw(st.integers(1, max_cols)) * (group or 1)
    a = draw(arrays("float32", (rows, cols), elements=finite))
    return torch.from_numpy(a)


@st.composite
def granularities(draw, shape):
    kind = draw(st.sampled_from(["tensor", "channel", "group"]))
    if kind == "tensor":
        return ql.PerTensor()
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    if kind == "channel":
        return ql.PerChannel(axis)
    n = shape[axis]
    return ql.PerGroup(draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0])), axis)


@given(data=st.data(), bits=bits_st, symmetric=st.booleans(), signed=st.booleans())
def test_error_at_most_half_a_tick(data, bits, symmetric, signed):
    x = data.draw(matrices(group=4))
    gran = data.draw(granularities(tuple(x.shape)))
    qt = ql.quantize(x, bits, granularity=gran, symmetric=symmetric, signed=signed)
    err = (qt.dequantize() - x).abs()
    scale_full = qt._grid(qt.scale).expand(ql.granularity.to_blocks(x, gran).shape).reshape(x.shape)
    # every element is inside its block's range, so only rounding error remains
    assert bool((err <= scale_full / 2 * (1 + 1e-5) + 1e-30).all())


@given(data=st.data(), bits=bits_st, symmetric=st.booleans(), signed=st.booleans())
def test_quantize_dequantize_is_idempotent(data, bits, symmetric, signed):
    x = data.draw(matrices(group=2))
    gran = data.draw(granularities(tuple(x.shape)))
    once = ql.fake_quantize(x, bits, granularity=gran, symmetric=symmetric, signed=signed)
    twice = ql.fake_quantize(once, bits, granularity=gran, symmetric=symmetric, signed=signed)
    assert torch.allclose(once, twice, rtol=1e-5, atol=1e-6 * float(x.abs().max()))


@given(x=matrices(), bits=bits_st)
def test_per_channel_scale_never_exceeds_per_tensor_scale(x, bits):
    pc = ql.quantize(x, bits, granularity=ql.PerChannel(0))
    pt = ql.quantize(x, bits)
    nonzero = x.abs().amax(1) > 0
    assert bool((pc.scale[nonzero] <= pt.scale).all())


@given(x=matrices(), bits=bits_st, symmetric=st.booleans())
def test_group_of_whole_row_equals_per_channel(x, bits, symmetric):
    a = ql.quantize(x, bits, granularity=ql.PerGroup(x.shape[1]), symmetric=symmetric)
    b = ql.quantize(x, bits, granularity=ql.PerChannel(0), symmetric=symmetric)
    assert torch.equal(a.q, b.q) and torch.equal(a.scale.flatten(), b.scale)


@given(x=matrices(max_rows=1, max_cols=16), bits=bits_st, symmetric=st.booleans())
def test_group_of_everything_on_one_row_equals_per_tensor(x, bits, symmetric):
    a = ql.quantize(x, bits, granularity=ql.PerGroup(x.numel()), symmetric=symmetric)
    b = ql.quantize(x, bits, symmetric=symmetric)
    assert torch.equal(a.q, b.q) and a.scale.item() == b.scale.item()


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple),
    data=st.data(),
)
def test_shapes_for_1d_to_4d(shape, data):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    gran = data.draw(granularities(shape))
    qt = ql.quantize(x, 8, granularity=gran)
    assert qt.q.shape == x.shape
    assert qt.scale.shape == qt.zero_point.shape == ql.scale_shape(gran, shape)
    assert qt.scale.numel() == qt.n_scales == ql.footprint(shape, 8, gran).n_scales
    assert qt.dequantize().shape == x.shape

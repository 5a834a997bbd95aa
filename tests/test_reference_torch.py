"""qlesson agrees with PyTorch's own quantization ops, used as an independent reference."""

import warnings

import numpy as np
import pytest
import torch

import qlesson as ql


def _weight(shape=(16, 64), seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(shape, generator=g) * torch.rand(shape[0], *[1] * (len(shape) - 1), generator=g) * 3
    w[3] = -w[3].abs()  # one negative-only channel
    return w


@pytest.mark.parametrize("bits", [4, 8])
def test_symmetric_per_channel_matches_fake_quantize_per_channel_affine(bits):
    w = _weight()
    qt = ql.quantize(w, bits, granularity=ql.PerChannel(0))
    qmin, qmax = ql.qrange(bits)
    ref = torch.fake_quantize_per_channel_affine(w, qt.scale, qt.zero_point, 0, qmin, qmax)
    assert torch.allclose(qt.dequantize(), ref, atol=0, rtol=1e-6)


def test_symmetric_per_tensor_matches_fake_quantize_per_tensor_affine():
    w = _weight()
    qt = ql.quantize(w, 8)
    ref = torch.fake_quantize_per_tensor_affine(w, qt.scale.item(), 0, -127, 127)
    assert torch.allclose(qt.dequantize(), ref, atol=0, rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1])
def test_asymmetric_per_channel_matches_observer_and_quantize_per_channel(axis):
    from torch.ao.quantization import PerChannelMinMaxObserver

    w = _weight()
    obs = PerChannelMinMaxObserver(ch_axis=axis, dtype=torch.quint8, qscheme=torch.per_channel_affine)
    obs(w)
    ref_scale, ref_zp = obs.calculate_qparams()
    qt = ql.quantize(w, 8, granularity=ql.PerChannel(axis), symmetric=False, signed=False)
    assert torch.allclose(qt.scale, ref_scale, rtol=1e-6, atol=0)
    assert torch.equal(qt.zero_point.long(), ref_zp.long())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # quantized dtypes are deprecated, still a good reference
        ref_q = torch.quantize_per_channel(w, ref_scale, ref_zp, axis, torch.quint8).int_repr()
    mismatch = (qt.q.int() != ref_q.int()).sum().item()
    # torch multiplies by 1/scale; qlesson divides: allow a rare one-tick tie flip, never more
    assert mismatch <= w.numel() // 1000
    assert (qt.q.int() - ref_q.int()).abs().max().item() <= 1


def test_conv_weight_per_output_channel_matches_torch():
    w = _weight((8, 3, 3, 3), seed=1)
    qt = ql.quantize(w, 8, granularity=ql.PerChannel(0))
    assert qt.scale.shape == (8,)
    ref = torch.fake_quantize_per_channel_affine(w, qt.scale, qt.zero_point, 0, -127, 127)
    assert torch.allclose(qt.dequantize(), ref, atol=0, rtol=1e-6)


def test_exact_ties_differ_from_torch_only_by_divide_versus_reciprocal():
    """On ties, qlesson rounds ``x / scale`` and torch rounds ``x * (1 / scale)``: each matches its own formula.

    The references are numpy float32 arithmetic, not qlesson or torch: a code that rounds the
    other way on a tie must come from that one difference, and be one tick away.
    """
    g = torch.Generator().manual_seed(0)
    absmax = torch.rand(64, generator=g) * 3 + 0.01
    scale = (absmax / 127).numpy()  # float32, as qlesson computes it
    k = torch.randint(-126, 126, (64, 255), generator=g).numpy()
    ties = ((k + 0.5) * scale[:, None]).astype("float32")  # float32 products: many land exactly on k + 0.5
    w = torch.from_numpy(ties)
    w[:, 0] = absmax  # fixes each row's scale
    qt = ql.quantize(w, 8, granularity=ql.PerChannel(0))
    assert torch.equal(qt.scale, torch.from_numpy(scale))
    x, s = w.numpy(), scale[:, None]
    divided = np.round(x / s)  # numpy rounds half to even, like torch.round
    multiplied = np.round(x * (np.float32(1) / s))
    ref = torch.quantize_per_channel(w, qt.scale.double(), qt.zero_point.long(), 0, torch.qint8).int_repr()
    np.testing.assert_array_equal(qt.q.numpy(), np.clip(divided, -127, 127))
    np.testing.assert_array_equal(ref.numpy(), np.clip(multiplied, -128, 127))
    flips = qt.q.numpy() != ref.numpy()
    exact_ties = (x / s) % 1 == 0.5
    assert flips.any() and exact_ties.sum() > 100  # the documented difference is real on ties...
    assert np.abs(qt.q.numpy().astype(int) - ref.numpy())[flips].max() == 1  # ...and one tick at most

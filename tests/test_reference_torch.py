"""qlesson agrees with PyTorch's own quantization ops, used as an independent reference."""

import warnings

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

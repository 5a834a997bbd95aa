"""FP8 E4M3 with per-tensor/row/1x128/128x128 scales, the PerBlock granularity, and double quantization."""

import pytest
import torch

import qlesson as ql
from qlesson.quant import granularity
from qlesson.quant.metrics import errors

GRANULARITIES = [ql.PerTensor(), ql.PerChannel(0), ql.PerGroup(128), ql.PerBlock((128, 128))]


def _weight(n: int = 256, k: int = 384) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    w = torch.randn(n, k, generator=g) * torch.logspace(-3, 1, n).reshape(n, 1)
    w[:128, :128] = 0.0  # one all-zero 128x128 block
    w[200, 5] = 300.0  # an outlier row and column
    return w


def _plain_fp8(w: torch.Tensor, bn: int, bk: int) -> torch.Tensor:
    """Block by block with torch's own cast: scale = amax / 448 (1 for a zero block)."""
    out = torch.empty_like(w)
    for i in range(0, w.shape[0], bn):
        for j in range(0, w.shape[1], bk):
            b = w[i : i + bn, j : j + bk]
            s = b.abs().max() / 448 if b.abs().max() > 0 else torch.tensor(1.0)
            out[i : i + bn, j : j + bk] = (b / s).to(torch.float8_e4m3fn).float() * s
    return out


@pytest.mark.parametrize(
    ("gran", "box"), list(zip(GRANULARITIES, [(256, 384), (1, 384), (1, 128), (128, 128)], strict=True))
)
def test_fp8_matches_torch_cast_block_by_block(gran, box):
    w = _weight()
    t = ql.quantize_fp8(w, gran)
    assert t.data.dtype == torch.float8_e4m3fn
    assert tuple(t.scale.shape) == ql.scale_shape(gran, w.shape)
    torch.testing.assert_close(t.dequantize(), _plain_fp8(w, *box), rtol=0, atol=0)
    assert t.bits_per_weight == 8 + 32 * (256 * 384 // (box[0] * box[1])) / w.numel()


def test_fp8_scales_matter_only_where_one_scale_pushes_small_rows_into_subnormals():
    w = _weight()
    quiet = (slice(0, 32), slice(128, None))  # rows around 1e-3, 300 x below the outlier
    sqnr = {g: errors(w[quiet], ql.quantize_fp8(w, g).dequantize()[quiet]).sqnr_db for g in GRANULARITIES}
    whole = [errors(w, ql.quantize_fp8(w, g).dequantize()).sqnr_db for g in GRANULARITIES]
    assert all(sqnr[g] > sqnr[ql.PerTensor()] + 10 for g in GRANULARITIES[1:])  # E4M3 subnormals under one scale
    assert max(whole) - min(whole) < 1.0  # a float grid's relative step does not depend on the scale


def test_fp8_edges():
    big = torch.full((2, 128), 3e38)
    assert torch.isfinite(ql.quantize_fp8(big, ql.PerGroup(128)).dequantize()).all()
    sub = torch.full((1, 128), 1e-40)  # float32 subnormals: the scale stays normal, values round to a tick
    back = ql.quantize_fp8(sub, ql.PerTensor()).dequantize()
    assert torch.isfinite(back).all() and (back - sub).abs().max() <= 1e-40
    with pytest.raises(ValueError, match="NaN"):
        ql.quantize_fp8(torch.tensor([[float("nan")] * 128]), ql.PerGroup(128))
    with pytest.raises(ValueError, match=r"PerBlock\(block_shape=\(128, 128\)\) does not divide axis 0 of length 100"):
        ql.quantize_fp8(torch.ones(100, 128))
    with pytest.raises(ValueError, match="integer dtype"):
        ql.quantize_fp8(torch.ones(128, 128, dtype=torch.int32))


def test_per_block_is_one_code_path_with_the_other_granularities():
    w = _weight()
    a = ql.quantize(w, 4, granularity=ql.PerBlock((1, 128)))
    b = ql.quantize(w, 4, granularity=ql.PerGroup(128))
    assert torch.equal(a.q, b.q) and torch.equal(a.scale, b.scale)
    c = ql.quantize(w, 8, granularity=ql.PerBlock((256, 384)))
    d = ql.quantize(w, 8, granularity=ql.PerTensor())
    assert torch.equal(c.q, d.q) and float(c.scale.reshape(())) == float(d.scale)
    blk = ql.quantize(w, 8, granularity=ql.PerBlock((128, 128)))
    assert tuple(blk.scale.shape) == (2, 3) and blk.n_scales == 6
    for i in range(2):
        for j in range(3):
            tile = w[128 * i : 128 * i + 128, 128 * j : 128 * j + 128]
            expect = tile.abs().max() / 127 if tile.abs().max() > 0 else torch.tensor(1.0)
            assert float(blk.scale[i, j]) == pytest.approx(float(expect), rel=1e-6)
    assert ql.footprint((256, 384), 8, ql.PerBlock((128, 128)), scale_bytes=4).metadata_bytes == 6 * 4
    assert granularity.method_name(ql.PerBlock((128, 128))) == "per-block 128x128"
    assert ql.block_size(ql.PerBlock((128, 128)), (3, 256, 384)) == (1, 128, 128)
    for bad, match in [((0, 128), "positive whole numbers"), ((1, 2, 3), "has 3 axes"), ("128", "tuple")]:
        with pytest.raises(ValueError, match=match):
            ql.block_size(ql.PerBlock(bad), (256, 384))


def _plain_double(w: torch.Tensor, g: int, sg: int) -> torch.Tensor:
    """The documented scheme, written out directly."""
    s = w.reshape(-1, g).abs().amax(dim=1) / 7
    s = torch.where(s > 0, s, torch.ones_like(s))
    blocks = s.reshape(-1, sg)
    s2 = blocks.amax(dim=1, keepdim=True) / 255
    stored = (torch.round(blocks / s2).clamp(1, 255) * s2).reshape(-1, 1)
    return (torch.round(w.reshape(-1, g) / stored).clamp(-7, 7) * stored).reshape(w.shape)


def test_double_quantization_bits_and_error():
    w = torch.randn(256, 512, generator=torch.Generator().manual_seed(1))
    dq = ql.double_quantize(w, 4, group_size=64, scale_bits=8, scale_group=256)
    n_groups = w.numel() // 64
    assert dq.nbytes == w.numel() // 2 + n_groups + 4 * (n_groups // 256)
    assert dq.bits_per_weight == dq.nbytes * 8 / w.numel() == 4 + 8 / 64 + 32 / (64 * 256)
    torch.testing.assert_close(dq.dequantize(), _plain_double(w, 64, 256), rtol=0, atol=0)
    single = ql.fake_quantize(w, 4, granularity=ql.PerGroup(64))
    e_single, e_double = errors(w, single), errors(w, dq.dequantize())
    assert abs(e_single.sqnr_db - e_double.sqnr_db) < 0.1  # 0.127 instead of 0.25 bits of scales, same error
    assert ql.footprint(tuple(w.shape), 4, ql.PerGroup(64)).bits_per_weight - dq.bits_per_weight > 0.12
    assert int(dq.scale_codes.min()) >= 1 and int(dq.scale_codes.max()) == 255


def test_double_quantization_rejects():
    w = torch.randn(4, 64)
    with pytest.raises(ValueError, match=r"there are 4 group scales .* not a multiple of scale_group=256"):
        ql.double_quantize(w, 4, group_size=64)
    with pytest.raises(ValueError, match=r"group_size=48\) does not divide"):
        ql.double_quantize(w, 4, group_size=48, scale_group=1)
    with pytest.raises(ValueError, match="NaN"):
        ql.double_quantize(torch.full((4, 64), float("nan")), 4, group_size=64, scale_group=4)
    with pytest.raises(ValueError, match="scale_group=0"):
        ql.double_quantize(w, 4, group_size=64, scale_group=0)
    zeros = ql.double_quantize(torch.zeros(4, 64), 4, group_size=64, scale_group=4)
    assert not zeros.dequantize().any()

"""qlesson.quant.formats writes the same bytes as the gguf package (llama.cpp's numpy reference)."""

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf import quants as gq

import qlesson as ql
from qlesson.quant import formats

GGML = {"Q8_0": GGMLQuantizationType.Q8_0, "Q4_0": GGMLQuantizationType.Q4_0, "Q4_1": GGMLQuantizationType.Q4_1}


def _hard_rows() -> np.ndarray:
    rng = np.random.default_rng(0)
    rows = [rng.standard_normal(256).astype(np.float32) * s for s in (1e-3, 0.05, 1.0, 40.0)]
    special = np.zeros(256, dtype=np.float32)  # block 0: all zeros
    special[32:64] = np.linspace(-1, 1, 32)  # block 1: symmetric, negative extreme first
    special[64:96] = np.arange(32) - 16.0  # block 2: integer ties for Q4_0 (d = 2)
    special[96:128] = (np.arange(32) % 8 - 3.5) * 0.5  # block 3: exact .5 ties for Q8_0 / Q4_1
    special[128:160] = -np.abs(rng.standard_normal(32))  # block 4: negative only
    special[160:192] = 7.0  # block 5: constant positive (Q4_1 d = 0)
    special[192:224] = np.float32(0.49999997) * (np.arange(32) % 2 * 2 - 1)  # block 6: the roundf trap
    special[224:256] = rng.standard_normal(32) * 1e4  # block 7: large
    rows.append(special)
    return np.stack(rows)


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_bytes_match_gguf_bit_for_bit(fmt):
    x = _hard_rows()
    ours = formats.quantize(x, fmt)
    ref = gq.quantize(x, GGML[fmt])
    assert ours.shape == ref.shape == (x.shape[0], x.shape[1] // 32 * formats.BLOCK_BYTES[fmt])
    np.testing.assert_array_equal(ours, ref)
    np.testing.assert_array_equal(formats.dequantize(ours, fmt), gq.dequantize(ref, GGML[fmt]))


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_zero_block_dequantizes_to_zeros_and_sizes(fmt):
    raw = formats.quantize(np.zeros((2, 64), dtype=np.float32), fmt)
    assert not formats.dequantize(raw, fmt).any()
    assert formats.bits_per_weight(fmt) == formats.BLOCK_BYTES[fmt] * 8 / 32
    assert formats.BLOCK_BYTES[fmt] == gq.GGML_QUANT_SIZES[GGML[fmt]][1]


def test_q4_0_negative_extreme_lands_on_minus_8():
    x = np.linspace(-1, 0.5, 32, dtype=np.float32)
    d, q = formats.codes(formats.quantize(x, "Q4_0"), "Q4_0")
    assert float(d[0]) == pytest.approx(1 / 8, rel=1e-3)
    assert q[0, 0] == -8 and q.max() <= 7


def test_q8_0_differs_from_ql_quantize_only_by_tie_rounding_and_fp16_scale():
    x = np.array([[0.5, 1.5, 2.5, -2.5] + [0.0] * 27 + [127.0]], dtype=np.float32)
    _, q = formats.codes(formats.quantize(x, "Q8_0"), "Q8_0")
    ours = ql.quantize(x, 8, granularity=ql.PerGroup(32)).q.numpy()
    assert q[0, :4].tolist() == [1, 2, 3, -3]  # half away from zero
    assert ours[0, :4].tolist() == [0, 2, 2, -2]  # half to even


@pytest.mark.parametrize("fmt", ["Q8_0", "Q4_0", "Q4_1"])
def test_fp16_scale_overflow_is_a_value_error_where_gguf_stores_inf(fmt):
    from gguf import GGMLQuantizationType
    from gguf import quants as gq

    from qlesson.quant import formats

    x = np.full((1, 32), 0.5, dtype=np.float32)
    x[0, 3] = -2.0 * formats.LIMITS[fmt][0] if fmt != "Q4_1" else -1e6  # beyond what the fp16 fields carry
    with pytest.raises(ValueError, match="fp16 header beyond"):
        formats.quantize(x, fmt)
    with np.errstate(all="ignore"):
        back = gq.dequantize(gq.quantize(x, getattr(GGMLQuantizationType, fmt)), getattr(GGMLQuantizationType, fmt))
    assert not np.isfinite(back).all()  # the reference itself overflows: the error message says so


@pytest.mark.parametrize("fmt", ["Q8_0", "Q4_0", "Q4_1"])
def test_values_just_inside_the_fp16_limit_still_match_gguf(fmt):
    from gguf import GGMLQuantizationType
    from gguf import quants as gq

    from qlesson.quant import formats

    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32)
    x[0, 5] = np.float32(formats.LIMITS[fmt][0] * 0.99) if fmt != "Q4_1" else np.float32(-60000.0)
    assert np.array_equal(formats.quantize(x, fmt), gq.quantize(x, getattr(GGMLQuantizationType, fmt)))


def test_footprint_arguments():
    import qlesson as ql

    with pytest.raises(ValueError, match="non-empty list of shapes"):
        ql.total_footprint([], 4)
    with pytest.raises(ValueError, match="must hold whole numbers"):
        ql.footprint((4.0, 8), 4)
    assert ql.footprint((np.int64(4), np.int32(8)), 4).numel == 32

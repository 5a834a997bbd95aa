"""Q4_K and Q6_K: bytes gguf reads back exactly as qlesson does; the two-level scheme checked by a plain loop."""

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf import quants as gq

from qlesson.quant import formats, kquants

KQ = ("Q4_K", "Q6_K")
F16_MAX = float(np.finfo(np.float16).max)


def _hard_rows() -> np.ndarray:
    rng = np.random.default_rng(1)
    rows = [rng.standard_normal(512).astype(np.float32) * s for s in (1e-4, 0.05, 1.0, 300.0)]
    special = np.zeros(1024, dtype=np.float32)  # super-block 0: all zeros
    special[256:512] = np.linspace(-1, 1, 256)
    special[256:288] = 0.0  # one zero sub-block inside a live super-block
    special[512:768] = (np.arange(256) % 8 - 3.5) * 0.25  # exact ties
    special[768:1024] = -np.abs(rng.standard_normal(256))  # negative only
    special[1000] = -40.0  # negative extreme far beyond the rest
    sub = np.zeros(1024, dtype=np.float32)
    sub[:256] = rng.standard_normal(256).astype(np.float32) * np.float32(1e-39)  # float32 subnormals
    sub[256:512] = 5.0  # constant positive
    sub[512:768] = rng.standard_normal(256) * 1e5  # large but within the limits
    sub[768:] = np.float32(1e-30) * rng.standard_normal(256)  # fp16 super-scale underflows to 0
    return np.stack([*(r.reshape(-1)[:512] for r in rows), special[:512], special[512:], sub[:512], sub[512:]])


@pytest.mark.parametrize("fmt", KQ)
def test_gguf_decodes_our_bytes_exactly_as_we_do(fmt):
    x = _hard_rows()
    raw = formats.quantize(x, fmt)
    assert raw.shape == (x.shape[0], x.shape[1] // 256 * gq.GGML_QUANT_SIZES[GGMLQuantizationType[fmt]][1])
    ours = formats.dequantize(raw, fmt)
    ref = gq.dequantize(raw, GGMLQuantizationType[fmt])
    np.testing.assert_array_equal(ours, ref)
    assert np.isfinite(ours).all()
    assert not ours[4, :256].any()  # the all-zero super-block
    assert not ours[4, 256:288].any()  # the zero sub-block


@pytest.mark.parametrize("fmt", KQ)
def test_bits_per_weight_from_gguf_layout(fmt):
    elems, nbytes = gq.GGML_QUANT_SIZES[GGMLQuantizationType[fmt]]
    assert formats.bits_per_weight(fmt) == nbytes * 8 / elems
    fp = formats.footprint((384, 1536), fmt)
    assert fp.total_bytes == 384 * 1536 // elems * nbytes
    assert fp.bits_per_weight == formats.bits_per_weight(fmt)


def _plain_q4_k(block: np.ndarray) -> np.ndarray:
    """One super-block of the documented scheme, element by element (float32 throughout)."""
    f32, out = np.float32, np.zeros(256, dtype=np.float32)
    subs = [block[32 * j : 32 * j + 32] for j in range(8)]
    los = [min(f32(s.min()), f32(0)) for s in subs]
    scales = [f32((s.max() - lo) / f32(15)) for s, lo in zip(subs, los, strict=True)]
    d = np.float16(f32(max(scales) / f32(63))).astype(np.float32)
    dmin = np.float16(f32(-min(los) / f32(63))).astype(np.float32)
    for j, (s, lo, sc_f) in enumerate(zip(subs, los, scales, strict=True)):
        sc = int(np.clip(np.round(sc_f / d), 0, 63)) if d else 0
        m = int(np.clip(np.round(-lo / dmin), 0, 63)) if dmin else 0
        scale, offset = f32(d * f32(sc)), f32(dmin * f32(m))
        for i, v in enumerate(s):
            q = int(np.clip(np.round(f32(f32(v + offset) / scale)), 0, 15)) if scale else 0
            out[32 * j + i] = f32(scale * f32(q)) - offset
    return out


def _plain_q6_k(block: np.ndarray) -> np.ndarray:
    f32, out = np.float32, np.zeros(256, dtype=np.float32)
    subs = [block[16 * j : 16 * j + 16] for j in range(16)]
    scales = [f32(s[np.abs(s).argmax()] / f32(-32)) for s in subs]
    d = np.float16(f32(max(abs(s) for s in scales) / f32(127))).astype(np.float32)
    for j, (s, sf) in enumerate(zip(subs, scales, strict=True)):
        scale = f32(d * f32(int(np.clip(np.round(sf / d), -127, 127)))) if d else f32(0)
        for i, v in enumerate(s):
            q = int(np.clip(np.round(f32(v / scale)), -32, 31)) if scale else 0
            out[16 * j + i] = f32(scale * f32(q))
    return out


@pytest.mark.parametrize("fmt", KQ)
def test_values_match_a_plain_loop_of_the_documented_scheme(fmt):
    x = _hard_rows()[[1, 2, 4, 5], :256]
    plain = {"Q4_K": _plain_q4_k, "Q6_K": _plain_q6_k}[fmt]
    for row in x:
        np.testing.assert_array_equal(formats.dequantize(formats.quantize(row, fmt), fmt), plain(row))


def test_q6_k_negative_extreme_lands_on_minus_32_and_q4_k_min_is_exact_when_sub_minimum_is_largest():
    x = np.linspace(-1, 0.5, 256, dtype=np.float32)
    f = kquants.fields(kquants.quantize(x, "Q6_K"), "Q6_K")
    assert int(f["q"][0, 0, 0]) == -32 and int(f["q"].max()) <= 31
    f4 = kquants.fields(kquants.quantize(x, "Q4_K"), "Q4_K")
    assert int(f4["m"].max()) == 63 and int(f4["sc"].max()) == 63  # the largest sub-block sets both super-scales


def test_round_trip_error_is_within_half_a_step_plus_scale_rounding():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 1024)).astype(np.float32)
    for fmt, levels in (("Q4_K", 15), ("Q6_K", 63)):
        err = np.abs(formats.dequantize(formats.quantize(x, fmt), fmt) - x).reshape(-1, 256)
        step = np.ptp(x.reshape(-1, 256), axis=1) / levels  # the super-block's own range per level
        assert (err.max(axis=1) <= step).all()
    q4k = formats.dequantize(formats.quantize(x, "Q4_K"), "Q4_K")
    q40 = formats.dequantize(formats.quantize(x, "Q4_0"), "Q4_0")
    assert np.mean((q4k - x) ** 2) < np.mean((q40 - x) ** 2)  # same 4.5 bits, min + smaller sub-blocks win


@pytest.mark.parametrize("fmt", KQ)
def test_fp16_super_scale_overflow_names_value_and_limit(fmt):
    limit = formats.LIMITS[fmt][0]
    x = np.zeros((1, 512), dtype=np.float32)
    x[0, 300] = np.float32(limit * 1.01)
    with pytest.raises(ValueError, match=r"super-block 1 \(elements 256 to 511.*beyond fp16's largest 65504"):
        formats.quantize(x, fmt)
    x[0, 300] = np.float32(limit * 0.99)  # just inside: finite, and gguf agrees
    raw = formats.quantize(x, fmt)
    back = formats.dequantize(raw, fmt)
    assert np.isfinite(back).all() and np.array_equal(back, gq.dequantize(raw, GGMLQuantizationType[fmt]))
    assert abs(back[0, 300] - x[0, 300]) / x[0, 300] < 0.05


def test_q4_k_minimum_limit():
    x = np.zeros(256, dtype=np.float32)
    x[5] = np.float32(-63 * F16_MAX * 1.01)
    with pytest.raises(ValueError, match=r"sub-block minimum -4\.1\d+e\+06 .*-63 x 65504"):
        formats.quantize(x, "Q4_K")


@pytest.mark.parametrize("fmt", KQ)
def test_bad_input(fmt):
    with pytest.raises(ValueError, match=r"blocks of 256 values along the last axis, which has length 320"):
        formats.quantize(np.ones((2, 320), dtype=np.float32), fmt)
    with pytest.raises(ValueError, match="NaN"):
        formats.quantize(np.full(256, np.nan, dtype=np.float32), fmt)
    with pytest.raises(ValueError, match="integer dtype"):
        formats.quantize(np.ones(256, dtype=np.int32), fmt)
    nb = kquants.SUPER_BYTES[fmt]
    with pytest.raises(ValueError, match=f"multiple of {nb} bytes"):
        formats.dequantize(np.zeros(nb + 1, dtype=np.uint8), fmt)
    with pytest.raises(ValueError, match="tensor_scale is NVFP4's"):
        formats.quantize(np.ones(256, dtype=np.float32), fmt, tensor_scale=1.0)


def test_non_finite_header_from_foreign_bytes_is_named():
    raw = formats.quantize(np.ones(256, dtype=np.float32), "Q6_K")
    raw[-2:] = np.array([np.float16(np.inf)]).view(np.uint8)
    with pytest.raises(ValueError, match="non-finite d"):
        formats.dequantize(raw, "Q6_K")

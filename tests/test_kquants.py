"""Q4_K and Q6_K: bytes gguf reads back exactly as qlesson does; the two-level scheme checked by a plain loop."""

import re

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


# ---- search=True: llama.cpp's reference quantizers, checked against a plain transcription of ggml-quants.c ----

f32 = np.float32


def _nearest_int(v) -> int:
    """ggml's nearest_int: add 1.5 x 2**23 in float32 and read the low mantissa bits."""
    bits = np.array([f32(v) + f32(12582912.0)], dtype=np.float32).view(np.int32)[0]
    return int(bits & 0x007FFFFF) - 0x00400000


def _plain_qkx2(x, w):
    """make_qkx2_quants(32, 15, x, w, L, &min, Laux, -1, 0.1, 20, false), one float32 operation at a time."""
    lo, hi, sum_w, sum_x = x[0], x[0], w[0], f32(w[0] * x[0])
    for i in range(1, len(x)):
        lo, hi = min(lo, x[i]), max(hi, x[i])
        sum_w, sum_x = f32(sum_w + w[i]), f32(sum_x + f32(w[i] * x[i]))
    lo = min(lo, f32(0))
    if hi == lo:
        return f32(0), f32(-lo), [0] * len(x)
    iscale = f32(f32(15) / f32(hi - lo))
    scale, best = f32(f32(1) / iscale), f32(0)
    L = [max(0, min(15, _nearest_int(f32(iscale * f32(v - lo))))) for v in x]
    for v, wi, li in zip(x, w, L, strict=True):
        best = f32(best + f32(wi * f32(f32(f32(scale * f32(li)) + lo) - v) ** 2))
    for step in range(21):
        iscale = f32(f32(f32(f32(-1) + f32(f32(0.1) * f32(step))) + f32(15)) / f32(hi - lo))
        la = [max(0, min(15, _nearest_int(f32(iscale * f32(v - lo))))) for v in x]
        sl = sl2 = sxl = f32(0)
        for v, wi, li in zip(x, w, la, strict=True):
            wl = f32(wi * f32(li))
            sl, sl2, sxl = f32(sl + wl), f32(sl2 + f32(wl * f32(li))), f32(sxl + f32(wl * v))
        D = f32(f32(sum_w * sl2) - f32(sl * sl))
        if D > 0:
            ts = f32(f32(f32(sum_w * sxl) - f32(sum_x * sl)) / D)
            tm = f32(f32(f32(sl2 * sum_x) - f32(sl * sxl)) / D)
            if tm > 0:
                tm, ts = f32(0), f32(sxl / sl2)
            err = f32(0)
            for v, wi, li in zip(x, w, la, strict=True):
                err = f32(err + f32(wi * f32(f32(f32(ts * f32(li)) + tm) - v) ** 2))
            if err < best:
                L, best, scale, lo = la, err, ts, tm
    return scale, f32(-lo), L


def _plain_q4_k_search(block: np.ndarray) -> np.ndarray:
    """quantize_row_q4_K_ref for one super-block: its 144 bytes."""
    scales, mins, Ls = [], [], []
    for j in range(8):
        x = block[32 * j : 32 * j + 32]
        sum_x2 = f32(0)
        for v in x:
            sum_x2 = f32(sum_x2 + f32(v * v))
        av = f32(np.sqrt(f32(sum_x2 / f32(32))))
        s, m, L = _plain_qkx2(x, [f32(av + abs(v)) for v in x])
        scales.append(s)
        mins.append(m)
        Ls.append(L)
    max_s, max_m = max([f32(0), *scales]), max([f32(0), *mins])
    inv_s = f32(f32(63) / max_s) if max_s > 0 else f32(0)
    inv_m = f32(f32(63) / max_m) if max_m > 0 else f32(0)
    sc = [min(63, _nearest_int(f32(inv_s * s)) & 0xFF) for s in scales]  # C stores it in a uint8_t first
    mm = [min(63, _nearest_int(f32(inv_m * m)) & 0xFF) for m in mins]
    d, dmin = np.float16(f32(max_s / f32(63))), np.float16(f32(max_m / f32(63)))
    codes = []
    for j in range(8):
        dj, mj = f32(f32(d) * f32(sc[j])), f32(f32(dmin) * f32(mm[j]))
        x = block[32 * j : 32 * j + 32]
        codes += [max(0, min(15, _nearest_int(f32(f32(v + mj) / dj)))) for v in x] if dj else Ls[j]
    packed = [0] * 12
    for j in range(8):
        if j < 4:
            packed[j], packed[j + 4] = sc[j], mm[j]
        else:
            packed[j + 4] = (sc[j] & 0xF) | ((mm[j] & 0xF) << 4)
            packed[j - 4] |= (sc[j] >> 4) << 6
            packed[j] |= (mm[j] >> 4) << 6
    q = np.array(codes, dtype=np.uint8).reshape(4, 2, 32)
    head = np.array([d, dmin], dtype=np.float16).view(np.uint8)
    return np.concatenate([head, packed, (q[:, 0] | (q[:, 1] << 4)).reshape(-1)])


def _plain_qx(x):
    """make_qx_quants(16, 32, x, L, 1, NULL): weights x**2, 19 tries, each refit by least squares."""
    amax, top = f32(0), f32(0)
    for v in x:
        if abs(v) > amax:
            amax, top = abs(v), v
    if amax < f32(1e-15):
        return f32(0), [0] * len(x)

    def tried(iscale):
        ls = [max(-32, min(31, _nearest_int(f32(iscale * v)))) for v in x]
        slx = sl2 = f32(0)
        for v, li in zip(x, ls, strict=True):
            w = f32(v * v)
            slx, sl2 = f32(slx + f32(f32(w * v) * f32(li))), f32(sl2 + f32(f32(w * f32(li)) * f32(li)))
        return ls, slx, sl2

    L, slx, sl2 = tried(f32(f32(-32) / top))
    scale = f32(slx / sl2) if sl2 else f32(0)
    best = f32(scale * slx)
    for step in (*range(-9, 0), *range(1, 10)):
        ls, slx, sl2 = tried(f32(-f32(f32(32) + f32(f32(0.1) * f32(step))) / top))
        if sl2 > 0 and f32(slx * slx) > f32(best * sl2):
            L, scale = ls, f32(slx / sl2)
            best = f32(scale * slx)
    return scale, [li + 32 for li in L]


def _plain_q6_k_search(block: np.ndarray) -> np.ndarray:
    """quantize_row_q6_K_ref for one super-block: its 210 bytes."""
    fits = [_plain_qx(block[16 * j : 16 * j + 16]) for j in range(16)]
    big = f32(0)
    for s, _ in fits:
        if abs(s) > abs(big):
            big = s
    if abs(big) < f32(1e-15):
        return np.zeros(210, dtype=np.uint8)
    iscale = f32(f32(-128) / big)
    d = np.float16(f32(f32(1) / iscale))
    sc = [min(127, _nearest_int(f32(iscale * s))) for s, _ in fits]
    L = []
    for j, (_, Lj) in enumerate(fits):
        dj = f32(f32(d) * f32(sc[j]))
        x = block[16 * j : 16 * j + 16]
        L += [max(-32, min(31, _nearest_int(f32(v / dj)))) + 32 for v in x] if dj else Lj
    ql, qh = [0] * 128, [0] * 64
    for j in range(0, 256, 128):
        for i in range(32):
            a, b, c, e = L[j + i], L[j + i + 32], L[j + i + 64], L[j + i + 96]
            ql[j // 2 + i], ql[j // 2 + i + 32] = (a & 15) | ((c & 15) << 4), (b & 15) | ((e & 15) << 4)
            qh[j // 4 + i] = (a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6)
    tail = np.array([d], dtype=np.float16).view(np.uint8)
    return np.concatenate([np.array(ql + qh, np.uint8), np.array(sc, np.int8).view(np.uint8), tail])


def _search_blocks() -> np.ndarray:
    """Super-blocks that reach every branch: real-like, ties, one sign, a zero sub-block, tiny, float32 subnormals."""
    rng = np.random.default_rng(8)
    blocks = [
        rng.standard_normal(256) * 0.05,
        rng.standard_t(3, 256) * 0.02,  # heavy tails, like trained weights
        np.round(rng.standard_normal(256) * 4) / 4,  # exact ties
        np.abs(rng.standard_normal(256)) + 1.0,  # positive only: the minimum is clamped to 0
        -np.abs(rng.standard_normal(256)) - 1.0,  # negative only
        np.concatenate([np.zeros(32), rng.standard_normal(224)]),  # one zero sub-block
        np.full(256, -3.0),  # constant: max == min
        rng.standard_normal(256) * 1e-30,  # fp16 super-scale underflows to 0
        rng.standard_normal(256) * 1e-39,  # float32 subnormals: reciprocals overflow to inf
        np.zeros(256),
    ]
    return np.stack(blocks).astype(np.float32)


@pytest.mark.parametrize("fmt", KQ)
def test_search_writes_the_bytes_of_a_plain_transcription_of_llama_cpp(fmt):
    x = _search_blocks()
    raw = formats.quantize(x, fmt, search=True)
    plain = {"Q4_K": _plain_q4_k_search, "Q6_K": _plain_q6_k_search}[fmt]
    for i, block in enumerate(x):
        with np.errstate(all="ignore"):  # the tiny blocks overflow reciprocals to inf, as in C
            expected = plain(block)
        np.testing.assert_array_equal(raw[i], expected, err_msg=f"super-block {i}")


@pytest.mark.parametrize("fmt", KQ)
def test_search_bytes_decode_as_gguf_and_zeros_stay_zero(fmt):
    x = np.concatenate([_hard_rows(), _search_blocks().reshape(-1, 512)])
    raw = formats.quantize(x, fmt, search=True)
    assert raw.shape == formats.quantize(x, fmt).shape
    ours = formats.dequantize(raw, fmt)
    np.testing.assert_array_equal(ours, gq.dequantize(raw, GGMLQuantizationType[fmt]))
    assert np.isfinite(ours).all()
    assert not ours[4, :256].any() and not ours[4, 256:288].any()  # all-zero super-block, zero sub-block
    assert not ours[-1, 256:].any()  # the zero super-block of _search_blocks


@pytest.mark.parametrize("fmt", KQ)
def test_search_error_is_lower_than_one_pass_overall(fmt):
    rng = np.random.default_rng(5)
    rows = {
        "normal": rng.standard_normal((64, 1024)),
        "real-like": rng.standard_t(4, (64, 1024)) * rng.uniform(0.01, 0.1, (64, 1)),  # heavy tails, row scales
    }
    for name, x in rows.items():
        x = x.astype(np.float32)
        err = {
            s: float(np.square(formats.dequantize(formats.quantize(x, fmt, search=s), fmt) - x).sum())
            for s in (False, True)
        }
        assert err[True] < err[False], (name, err)


def test_search_on_a_minilm_layer_is_better_for_both_formats():
    from qlesson.teach import models

    w = models.linear_weights(models.load_minilm())["L0.attention output"].numpy().reshape(-1, 256)
    for fmt in KQ:
        back = {s: formats.dequantize(formats.quantize(w, fmt, search=s), fmt) for s in (False, True)}
        err = {s: np.square(b - w).sum() for s, b in back.items()}
        assert err[True] < err[False]


def test_search_bad_input():
    x = np.ones(256, dtype=np.float32)
    with pytest.raises(ValueError, match=r"search='yes': pass True"):
        formats.quantize(x, "Q4_K", search="yes")
    with pytest.raises(ValueError, match=r"search=True: the scale search is llama.cpp's for Q4_K and Q6_K; Q4_0"):
        formats.quantize(x[:32], "Q4_0", search=True)
    with pytest.raises(ValueError, match="NaN"):
        formats.quantize(np.full(256, np.nan, dtype=np.float32), "Q6_K", search=True)
    with pytest.raises(ValueError, match=r"blocks of 256 values"):
        formats.quantize(np.ones(100, dtype=np.float32), "Q4_K", search=True)


@pytest.mark.parametrize("fmt", KQ)
def test_search_names_an_fp16_overflow_or_decodes_as_gguf_near_the_limit(fmt):
    limit = formats.LIMITS[fmt][0]
    x = np.zeros((1, 512), dtype=np.float32)
    messages = []
    for frac in (0.9, 0.99, 0.999, 1.01):
        x[0, 300] = np.float32(limit * frac)
        try:
            raw = formats.quantize(x, fmt, search=True)
        except ValueError as err:
            messages.append(str(err))
            named = re.search(r"super-block 1 \(elements 256 to 511.*beyond fp16's largest 65504", str(err))
            assert frac > 0.9 and named
            continue
        back = formats.dequantize(raw, fmt)
        assert np.isfinite(back).all() and np.array_equal(back, gq.dequantize(raw, GGMLQuantizationType[fmt]))
    assert len(messages) >= 1  # 1.01 x the one-pass limit is always refused


def test_search_scale_beyond_fp16_is_named_even_where_one_pass_fits():
    limit = formats.LIMITS["Q4_K"][0]
    x = np.zeros(256, dtype=np.float32)
    x[40:60] = np.linspace(0, limit * 0.999, 20)  # the search's refit scale lands above range / 15
    formats.quantize(x, "Q4_K")  # one pass fits
    with pytest.raises(ValueError, match=r"super-scale d 6\d{4}.*a little less than the one-pass limit with search"):
        formats.quantize(x, "Q4_K", search=True)

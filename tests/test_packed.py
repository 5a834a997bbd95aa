"""Packed whole-model quantization (qlesson.quant.packed): schemes, plans, bit layout, files, and the
bit-for-bit agreement of the packed model with the simulation on MiniLM."""

import json

import pytest
import torch
from torch import nn

from qlesson.quant import PerChannel, PerGroup, PerTensor, footprint
from qlesson.quant.packed import (
    QuantLinear,
    Scheme,
    dequantized_weights,
    layer_name,
    load_packed,
    nbytes_table,
    pack_codes,
    plan_bits,
    quantize_model,
    resolve_plan,
    save_packed,
    simulate,
    unpack_codes,
)
from qlesson.teach.models import SENTENCES, embed, linear_weights, load_minilm, replaced_weights, short_name

pytestmark = pytest.mark.slow

SPELLINGS = ["int8-tensor", "int8-channel", "int4-g32", "int4-g64", "int4-g128", "int4-g128-asym", "int3-g64",
             "int2-g32-asym", "int5-channel-bf16", "int6-tensor-asym-fp32"]  # fmt: skip


CHECKED = SENTENCES[::3]  # 8 of the 24 sentences, every topic pair represented once: keeps the file fast


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


@pytest.fixture(scope="module")
def float_embeddings(minilm):
    return embed(minilm, CHECKED)


def _linear(w, bias=None):
    lin = nn.Linear(w.shape[1], w.shape[0], bias=bias is not None)
    with torch.no_grad():
        lin.weight.copy_(w)
        if bias is not None:
            lin.bias.copy_(bias)
    return lin


# ----- schemes -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_spelling_round_trips(spelling):
    assert str(Scheme.parse(spelling)) == spelling


def test_spellings_mean_what_they_say():
    assert Scheme.parse("int8-tensor") == Scheme(8, PerTensor())
    assert Scheme.parse("int8-channel") == Scheme(8, PerChannel(0))
    assert Scheme.parse("int4-g128-asym") == Scheme(4, PerGroup(128), symmetric=False)
    assert Scheme.parse("int3-g64-fp32") == Scheme(3, PerGroup(64), scale_dtype=torch.float32)


@pytest.mark.parametrize("bad", ["int4_g128", "int4-g0", "int9-tensor", "int1-channel", "q4_0", "int4-g128-sym", ""])
def test_bad_spellings_list_the_accepted_forms(bad):
    with pytest.raises(ValueError, match=r"int8-channel|out of range|not a Linear granularity"):
        Scheme.parse(bad)


@pytest.mark.parametrize("bits", [1, 9, 16, True, 4.0])
def test_bits_out_of_range(bits):
    with pytest.raises(ValueError, match="out of range"):
        Scheme(bits, PerTensor())


@pytest.mark.parametrize("gran", [PerChannel(1), PerGroup(32, axis=0)])
def test_granularities_that_do_not_fit_a_linear_weight(gran):
    with pytest.raises(ValueError, match="PerChannel\\(0\\)"):
        Scheme(4, gran)


# ----- one layer: layout, stored scale, errors -----------------------------------------------------------------


def test_int4_codes_are_low_nibble_first_with_offset_8():
    w = torch.tensor([[0.7, -0.7, 0.1, 0.0]])  # scale 0.1 (fp16 0.0999755859375): q = 7, -7, 1, 0
    layer = QuantLinear.from_linear(_linear(w), "int4-tensor")
    assert layer.int_codes().tolist() == [[7, -7, 1, 0]]
    assert layer.codes.tolist() == [[(7 + 8) | ((-7 + 8) << 4), (1 + 8) | ((0 + 8) << 4)]]


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 7])
def test_pack_unpack_round_trip_and_bit_order(bits):
    gen = torch.Generator().manual_seed(bits)
    u = torch.randint(0, 2**bits, (5, 24), generator=gen)
    packed = pack_codes(u, bits)
    assert packed.dtype == torch.uint8 and packed.shape == (5, 24 * bits // 8)
    assert torch.equal(unpack_codes(packed, bits, 24), u)
    bitstream = [(int(u[0, k]) >> j) & 1 for k in range(24) for j in range(bits)]
    assert int(packed[0, 0]) == sum(b << i for i, b in enumerate(bitstream[:8]))


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 7])
def test_rows_are_byte_for_byte_compressed_tensors_pack_to_int32(bits):
    # compressed-tensors packs q + 2**(b-1) as one dense LSB-first bit stream per row into int32 words;
    # on a little-endian machine those words' bytes are our row's bytes (K * b a multiple of 32)
    from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32

    half = 2 ** (bits - 1) - 1
    q = torch.randint(-half, half + 1, (6, 64), generator=torch.Generator().manual_seed(bits), dtype=torch.int8)
    ours = pack_codes(q.to(torch.int64) + 2 ** (bits - 1), bits)
    assert torch.equal(ours.view(torch.int32), pack_to_int32(q, bits))


def test_codes_are_computed_against_the_stored_fp16_scale():
    # scale 0.7 / 7 = 0.1 is stored as fp16 0.0999755859375: -0.34995 and 0.05 then round to -4 and 1, not -3 and 0
    w = torch.tensor([[0.7, -0.34995, 0.05, 0.3]])
    layer = QuantLinear.from_linear(_linear(w), "int4-tensor")
    s32 = w.abs().max() / 7
    s16 = s32.to(torch.float16)
    assert layer.scale.dtype == torch.float16 and layer.scale.item() == s16.item() == 0.0999755859375
    assert layer.int_codes().tolist() == [[7, -4, 1, 3]]
    assert torch.round(w / s32).tolist() == [[7, -3, 0, 3]]  # what the float32 scale would have given
    assert torch.equal(layer.weight(), torch.tensor([[7.0, -4.0, 1.0, 3.0]]) * s16.float())


def test_asymmetric_layer_stores_uint8_codes_and_zero_points():
    w = torch.tensor([[0.0, 0.5, 1.0, 1.5, -0.5, 0.25, 0.75, 1.25]])
    layer = QuantLinear.from_linear(_linear(w), "int4-g4-asym")
    assert layer.zero_point.dtype == torch.uint8 and layer.zero_point.shape == (1, 2)
    assert layer.int_codes().min() >= 0 and layer.int_codes().max() <= 15
    assert layer.weight()[0, 0].item() == 0.0  # zero stays exact
    assert torch.equal(layer.weight(), simulate(w, "int4-g4-asym"))


def test_tiny_scales_are_never_subnormal_and_huge_ones_are_an_error():
    w = torch.tensor([[1e-9, -2e-9, 0.0, 1e-9]])
    layer = QuantLinear.from_linear(_linear(w), "int4-tensor")
    assert layer.scale.item() == torch.finfo(torch.float16).tiny
    assert bool(torch.isfinite(layer.weight()).all())
    with pytest.raises(ValueError, match="overflows torch.float16.*-fp32"):
        QuantLinear.from_linear(_linear(torch.tensor([[1e6, 0.0]])), "int4-tensor", name="big")
    assert QuantLinear.from_linear(_linear(torch.tensor([[1e6, 0.0]])), "int4-tensor-fp32").scale.dtype == torch.float32


def test_forward_is_the_linear_of_the_dequantized_weight():
    gen = torch.Generator().manual_seed(0)
    w, b, x = torch.randn(6, 64, generator=gen), torch.randn(6, generator=gen), torch.randn(3, 64, generator=gen)
    layer = QuantLinear.from_linear(_linear(w, b), "int4-g32")
    assert torch.equal(layer(x), torch.nn.functional.linear(x, simulate(w, "int4-g32"), b))
    assert torch.equal(layer.bias, b)


def test_nbytes_and_bits_per_weight():
    layer = QuantLinear.from_linear(_linear(torch.randn(8, 256), torch.zeros(8)), "int4-g128-asym")
    assert layer.nbytes() == {"codes": 8 * 128, "scales": 8 * 2 * 2, "zero_points": 8 * 2, "bias": 8 * 4}
    assert layer.bits_per_weight == 4 + (16 + 8) / 128  # bias excluded


def test_non_linear_nan_inf_and_bad_group_are_clear_errors():
    with pytest.raises(ValueError, match="needs an nn.Linear, got Conv1d"):
        QuantLinear.from_linear(nn.Conv1d(2, 2, 1), "int8-tensor")
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="L7.key: the weight holds (nan|inf)"):
            QuantLinear.from_linear(_linear(torch.tensor([[1.0, bad]])), "int8-tensor", name="L7.key")
    with pytest.raises(ValueError, match=r"L0.query: group size g=128 does not divide in_features K=96.*32"):
        QuantLinear.from_linear(_linear(torch.randn(4, 96)), "int4-g128", name="L0.query")


# ----- plans ---------------------------------------------------------------------------------------------------

NAMES = ["L0.query", "L0.attention output", "L0.intermediate", "L1.query", "L1.intermediate", "pooler"]


def test_plan_first_match_wins_and_unmatched_stay_float():
    plan = {"L1.*": "int8-channel", "L*.intermediate": "int4-g32", "L0.query": "float", "pooler": "int4-g128"}
    got = {k: None if v is None else str(v) for k, v in resolve_plan(NAMES, plan).items()}
    assert got == {
        "L0.query": None,
        "L0.attention output": None,
        "L0.intermediate": "int4-g32",
        "L1.query": "int8-channel",
        "L1.intermediate": "int8-channel",
        "pooler": "int4-g128",
    }
    assert set(map(str, resolve_plan(NAMES, "int4-g64").values())) == {"int4-g64"}


def test_plan_errors_name_the_pattern_and_the_layers():
    with pytest.raises(ValueError, match=r"'L\*\.key' matches no layer; the layers are L0.query, L0.attention output"):
        resolve_plan(NAMES, {"*": "int8-tensor", "L*.key": "int4-g32"})
    with pytest.raises(ValueError, match="plan is empty"):
        resolve_plan(NAMES, {})
    with pytest.raises(ValueError, match="unknown scheme 'int4'"):
        resolve_plan(NAMES, {"*": "int4"})


def test_short_names_agree_with_the_course(minilm):
    paths = [n for n, m in minilm.named_modules() if isinstance(m, nn.Linear)]
    assert [layer_name(p) for p in paths] == [short_name(p) for p in paths]
    assert len(resolve_plan(minilm, {"*": "int8-tensor"})) == 37


# ----- the model: bit for bit with the simulation --------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["int8-tensor", "int8-channel", "int4-g32", "int4-g128-asym"])
def test_packed_model_equals_the_simulation_bit_for_bit(minilm, float_embeddings, spelling):
    weights = linear_weights(minilm)
    before = {k: v.clone() for k, v in weights.items()}
    qmodel = quantize_model(minilm, spelling)
    deq = dequantized_weights(qmodel)
    assert list(deq) == list(weights)
    simulated_weights = {k: simulate(w, spelling) for k, w in weights.items()}
    for name, w in simulated_weights.items():
        assert torch.equal(deq[name], w), name
    with replaced_weights(minilm, simulated_weights):
        simulated = embed(minilm, CHECKED)
    packed = embed(qmodel, CHECKED)
    assert torch.equal(packed, simulated)
    assert not torch.equal(packed, float_embeddings)  # the codes did change the model
    assert all(torch.equal(v, before[k]) for k, v in linear_weights(minilm).items())  # the input is untouched
    assert not any(isinstance(m, QuantLinear) for m in minilm.modules())


def test_the_lesson_plan_mixes_schemes_and_keeps_float_layers(minilm):
    plan = {"L*.intermediate": "int4-g32", "pooler": "float", "*": "int4-g128"}
    qmodel = quantize_model(minilm, plan)
    kinds = {
        layer_name(n): type(m).__name__ for n, m in qmodel.named_modules() if isinstance(m, (nn.Linear, QuantLinear))
    }
    assert list(kinds.values()).count("Linear") == 1 and kinds["pooler"] == "Linear"
    schemes = {m.name: str(m.scheme) for m in qmodel.modules() if isinstance(m, QuantLinear)}
    assert schemes["L3.intermediate"] == "int4-g32" and schemes["L3.output"] == "int4-g128"


def test_plan_bits_is_exact(minilm):
    weights = linear_weights(minilm)
    numel = sum(w.numel() for w in weights.values())
    assert plan_bits(minilm, "int4-g128") == 4.125
    assert plan_bits(minilm, "int4-g32") == 4.5
    assert plan_bits(minilm, "int4-g128-asym") == 4 + 24 / 128
    assert plan_bits(minilm, "int3-g64") == 3.25
    # per-channel: one fp16 scale per output row, counted from the shapes by lesson 04's footprint
    fp = sum(footprint(tuple(w.shape), 8, PerChannel(0)).total_bytes for w in weights.values())
    assert plan_bits(minilm, "int8-channel") == fp * 8 / numel
    plan = {"L*.intermediate": "int4-g32", "pooler": "float", "*": "int4-g128-asym"}
    qmodel = quantize_model(minilm, plan)
    stored = sum(b["codes"] + b["scales"] + b["zero_points"] for m in qmodel.modules()
                 if isinstance(m, QuantLinear) for b in [m.nbytes()])  # fmt: skip
    assert plan_bits(minilm, plan) == (stored * 8 + weights["pooler"].numel() * 16) / numel
    assert plan_bits(minilm, plan, float_bits=32) > plan_bits(minilm, plan)
    rows = {r["name"]: r for r in nbytes_table(qmodel)}
    assert len(rows) == 36 and rows["L4.intermediate"]["scheme"] == "int4-g32"
    for name, w in weights.items():  # every packed layer takes exactly lesson 04's footprint (+ 1-byte zero points)
        if name != "pooler":
            scheme = Scheme.parse("int4-g32" if name.endswith("intermediate") else "int4-g128-asym")
            zp = 0 if scheme.symmetric else 1
            fp = footprint(tuple(w.shape), 4, scheme.granularity, zero_point_bytes=zp)
            r = rows[name]
            assert (r["codes"], r["scales"] + r["zero_points"]) == (fp.payload_bytes, fp.metadata_bytes), name


def test_whole_model_errors_name_the_layer(minilm):
    with pytest.raises(ValueError, match=r"L0.intermediate: group size g=100 does not divide in_features K=384"):
        quantize_model(minilm, {"L0.intermediate": "int4-g100"})
    with pytest.raises(ValueError, match="no nn.Linear"):
        quantize_model(nn.Sequential(nn.ReLU()), "int8-tensor")
    with pytest.raises(ValueError, match="expected an nn.Module"):
        quantize_model({"w": torch.zeros(2, 2)}, "int8-tensor")
    broken = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    with torch.no_grad():
        broken[1].weight[2, 1] = float("nan")
    with pytest.raises(ValueError, match="1: the weight holds nan"):
        quantize_model(broken, "int8-tensor")


# ----- files ---------------------------------------------------------------------------------------------------


def test_save_and_load_are_bit_for_bit(minilm, tmp_path):
    plan = {"L*.intermediate": "int4-g32", "L0.*": "int3-g64", "L1.*": "int8-tensor", "pooler": "float",
            "*": "int4-g128-asym"}  # fmt: skip
    qmodel = quantize_model(minilm, plan)
    path = tmp_path / "minilm.safetensors"
    save_packed(qmodel, path)
    loaded = load_packed(path, minilm)
    a = {m.name: m for m in qmodel.modules() if isinstance(m, QuantLinear)}
    b = {m.name: m for m in loaded.modules() if isinstance(m, QuantLinear)}
    assert list(a) == list(b) and len(a) == 36
    for name, m in a.items():
        assert b[name].scheme == m.scheme, name
        for key in ("codes", "scale", "zero_point", "bias"):
            x, y = getattr(m, key), getattr(b[name], key)
            assert (x is None and y is None) or (x.dtype == y.dtype and torch.equal(x, y)), (name, key)
    assert torch.equal(embed(loaded, ["A per-channel scale keeps quiet rows alive."]),
                       embed(qmodel, ["A per-channel scale keeps quiet rows alive."]))  # fmt: skip


def _rewrite(src, dst, edit_meta=None, edit_tensors=None):
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(src), framework="pt") as f:
        meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    layers = json.loads(meta["layers"])
    if edit_meta:
        edit_meta(layers)
    if edit_tensors:
        edit_tensors(tensors)
    save_file(tensors, str(dst), metadata={**meta, "layers": json.dumps(layers)})


def test_files_that_do_not_fit_are_clear_errors(minilm, tmp_path):
    qmodel = quantize_model(minilm, {"L2.query": "int4-g32", "L2.key": "int8-channel"})
    good = tmp_path / "good.safetensors"
    save_packed(qmodel, good)
    query = next(n for n, m in minilm.named_modules() if isinstance(m, nn.Linear) and short_name(n) == "L2.query")
    cases = {
        "scheme": (lambda m: m[query].update(scheme="int4-g64"), None, r"L2.query: scale should be .* \(384, 6\)"),
        "bits": (lambda m: m[query].update(scheme="int3-g32"), None, r"L2.query: codes should be .* \(384, 144\)"),
        "group": (lambda m: m[query].update(scheme="int4-g100"), None, "L2.query: group size g=100 does not divide"),
        "spelling": (lambda m: m[query].update(scheme="q4_0"), None, "L2.query: unknown scheme 'q4_0'"),
        "shape": (lambda m: m[query].update(shape=[384, 768]), None, r"L2.query: the file's weight is \(384, 768\)"),
        "dtype": (None, lambda t: t.update({query + ".scale": t[query + ".scale"].float()}), "L2.query: scale should"),
        "missing": (None, lambda t: t.pop(query + ".codes"), "L2.query: codes should be .* got nothing"),
    }
    for label, (meta, tensors, message) in cases.items():
        bad = tmp_path / f"{label}.safetensors"
        _rewrite(good, bad, meta, tensors)
        with pytest.raises(ValueError, match=message):
            load_packed(bad, minilm)
    with pytest.raises(ValueError, match="L2.query .*model has no Linear there"):
        load_packed(good, nn.Sequential(nn.Linear(384, 384)))
    with pytest.raises(ValueError, match="no QuantLinear layer"):
        save_packed(minilm, tmp_path / "float.safetensors")
    with pytest.raises(ValueError, match="not a qlesson packed file"):
        from safetensors.torch import save_file

        save_file({"x": torch.zeros(2)}, str(tmp_path / "other.safetensors"))
        load_packed(tmp_path / "other.safetensors", minilm)

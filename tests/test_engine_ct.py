"""compressed-tensors: MiniLM as a pack-quantized checkpoint with qlesson's codes (qlesson.engines.ct_export)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from qlesson.engines import ct_export as ct
from qlesson.engines.common import bert_of, hf_name, reference_embeddings, worst_cosine
from qlesson.quant import PerChannel, PerGroup, quantize
from qlesson.teach.models import load_minilm

# engine (compressed-tensors' decompression) vs simulation with qlesson's own dequantized weights: the file's
# float32 scales are qlesson's float32 scales, so the weights are the same floats and the cosine is 1 to 1e-12.
SIMULATION_TOL = 1e-9
# vs float, worst over EVAL_SENTENCES, measured 2026-11-27: int8-channel 0.99952, int4-g32 0.947, int4-g128 0.928
# (symmetric [-7, 7]); each bound allows about twice the measured gap.
FLOAT_BOUND = {"int8-channel": 0.999, "int4-g128": 0.85, "int4-g32": 0.89}


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def float_emb(model):
    return reference_embeddings(model)


@pytest.fixture(scope="module")
def written(model, tmp_path_factory):
    return {p: ct.export_ct(model, tmp_path_factory.mktemp(p), p) for p in ct.PLANS}


def _qlesson_deq(model, plan):
    args = ct.scheme_for(plan)["weights"]
    gran = PerGroup(args["group_size"]) if args["strategy"] == "group" else PerChannel(0)
    bert = bert_of(model)
    out = {}
    for s in ct.short_names():
        w = bert.get_submodule(hf_name(s)).weight.detach().to(torch.float32)
        qt = quantize(w, args["num_bits"], granularity=gran)
        out[s] = qt.dequantize().to(torch.float32)
    return out


@pytest.mark.parametrize("plan", ct.PLANS)
def test_decompressed_weights_are_qlesson_codes_and_embeddings_match(model, float_emb, written, plan):
    res = written[plan]
    mine = _qlesson_deq(model, plan)
    assert sorted(res.deq) == sorted(mine)
    for s in mine:
        assert torch.equal(res.deq[s], mine[s]), s  # the same floats, read back through compressed-tensors
    engine = reference_embeddings(model, res.deq)
    assert worst_cosine(engine, reference_embeddings(model, mine)) > 1 - SIMULATION_TOL
    assert worst_cosine(engine, float_emb) > FLOAT_BOUND[plan]


# transformers' float32 BertModel vs the float64 simulation of the same weights: float32 noise (about 1e-7).
TRANSFORMERS_TOL = 1e-5


@pytest.mark.parametrize("plan", ["int4-g128", "int8-channel"])
def test_transformers_load_matches_simulation(model, written, plan):
    res = written[plan]
    bm = ct.load_ct(res.folder)
    for s in ("L0.query", "L5.output"):
        assert torch.equal(bm.get_submodule(hf_name(s)).weight.detach(), res.deq[s]), s
    engine = ct.ct_embeddings(model, res.folder)
    assert worst_cosine(engine, reference_embeddings(model, res.deq)) > 1 - TRANSFORMERS_TOL


def test_int4_is_smaller_and_embedding_table_dominates(model, written):
    sizes = {p: written[p].size_bytes for p in ct.PLANS}
    assert sizes["int4-g128"] < sizes["int4-g32"] < sizes["int8-channel"]
    bert = bert_of(model)
    emb = bert.embeddings.word_embeddings.weight.numel() * 4
    linear = sum(bert.get_submodule(hf_name(s)).weight.numel() for s in ct.short_names()) * 4
    assert emb > sizes["int4-g128"] / 2 and emb > linear / 2  # 46.9 MB of float32 vocabulary vs 42.5 MB of Linears


def test_first_nibble_is_the_low_one(written):
    folder = written["int4-g128"].folder
    sd = load_file(str(folder / "model.safetensors"))
    name = hf_name("L0.query")
    word = int(sd[f"{name}.weight_packed"][0, 0]) & 0xFFFFFFFF
    deq = written["int4-g128"].deq["L0.query"]
    scale = sd[f"{name}.weight_scale"][0, 0]
    codes = torch.round(deq[0, :8] / scale).to(torch.int64) + 8
    assert [(word >> (4 * i)) & 0xF for i in range(8)] == codes.tolist()


def test_compare_group_names_the_scale_difference(model):
    w = bert_of(model).get_submodule(hf_name("L0.query")).weight.detach()
    r = ct.compare_group(w, 4, 128)
    assert r["scale_ratio"] == pytest.approx(7.5 / 7, rel=1e-6)
    r8 = ct.compare_group(w, 8, 128)
    assert r8["scale_ratio"] == pytest.approx(127.5 / 127, rel=1e-6)


def _copy(written, tmp_path, plan="int4-g128"):
    dst = tmp_path / "ckpt"
    shutil.copytree(written[plan].folder, dst)
    return dst


def _edit_config(folder, fn):
    cfg = json.loads((folder / "config.json").read_text())
    fn(cfg["quantization_config"])
    (folder / "config.json").write_text(json.dumps(cfg))


def _edit_tensors(folder, fn):
    sd = load_file(str(folder / "model.safetensors"))
    fn(sd)
    save_file(sd, str(folder / "model.safetensors"))


def test_unknown_format_is_a_value_error(written, tmp_path):
    d = _copy(written, tmp_path)
    _edit_config(d, lambda q: q.update(format="packed-quantised"))
    with pytest.raises(ValueError, match="'packed-quantised' is not 'pack-quantized'"):
        ct.read_ct(d)


def test_group_not_dividing_k_is_a_value_error(written, tmp_path):
    d = _copy(written, tmp_path)
    _edit_config(d, lambda q: q["config_groups"]["group_0"]["weights"].update(group_size=100))
    with pytest.raises(ValueError, match="group_size 100 does not divide in_features 384"):
        ct.read_ct(d)


def test_packed_shape_not_matching_weight_shape_is_a_value_error(written, tmp_path):
    d = _copy(written, tmp_path)
    name = hf_name("L1.key")
    _edit_tensors(d, lambda sd: sd.update({f"{name}.weight_shape": torch.tensor([384, 768])}))
    with pytest.raises(ValueError, match=r"layer.1.*weight_packed.*needs int32 \(384, 96\)"):
        ct.read_ct(d)


def test_scale_shape_not_matching_strategy_is_a_value_error(written, tmp_path):
    d = _copy(written, tmp_path)
    name = hf_name("L2.value")
    _edit_tensors(d, lambda sd: sd.update({f"{name}.weight_scale": sd[f"{name}.weight_scale"][:, :1].contiguous()}))
    with pytest.raises(ValueError, match=r"weight_scale has shape \(384, 1\).*needs \(384, 3\)"):
        ct.read_ct(d)


def test_export_refuses_unknown_plan(model, tmp_path):
    with pytest.raises(ValueError, match="plan 'int4-g100' is not one of"):
        ct.export_ct(model, tmp_path, "int4-g100")

"""llama.cpp: MiniLM as a BERT GGUF with qlesson's own Q8_0 / Q4_0 / Q4_K bytes (qlesson.engines.gguf_bert)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch

from qlesson.engines import gguf_bert as g
from qlesson.engines.common import EVAL_SENTENCES, bert_of, cosines, hf_name, reference_embeddings, worst_cosine
from qlesson.quant import formats, kquants
from qlesson.teach.models import load_minilm

ROOT = Path(__file__).resolve().parents[1]


def _course():
    import importlib.util

    spec = importlib.util.spec_from_file_location("course_script_engines", ROOT / "course.py")
    course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course)
    return course


def test_make_engines_installs_the_pinned_extra(monkeypatch, capsys, tmp_path):
    course = _course()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'engines = ["{course.ENGINES_PIN}"]' in pyproject
    assert "$(PYTHON) course.py engines" in (ROOT / "Makefile").read_text()
    monkeypatch.setattr(course.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(course, "needs_setup", lambda venv: False)
    calls = []
    monkeypatch.setattr(course.subprocess, "call", lambda cmd, **kw: calls.append(cmd) or len(calls) % 2)
    assert course.engines(tmp_path) == 0  # first call: "is it installed?" answers 1 (no), then pip
    assert calls[-1][-1] == course.ENGINES_PIN and calls[-1][1:4] == ["-m", "pip", "install"]
    assert "building llama.cpp from source: 5-13 minutes on 2 cores" in capsys.readouterr().out


@pytest.mark.parametrize("absent", ["cmake", "a C++ compiler"])
def test_make_engines_without_build_tools_says_what_to_install(monkeypatch, capsys, tmp_path, absent):
    course = _course()
    gone = {"cmake"} if absent == "cmake" else set(course.COMPILERS)
    monkeypatch.setattr(course.shutil, "which", lambda tool: None if tool in gone else f"/usr/bin/{tool}")
    monkeypatch.setattr(course.subprocess, "call", lambda cmd, **kw: pytest.fail(f"ran {cmd}"))
    assert course.engines(tmp_path) == 1
    out = capsys.readouterr().out.strip()
    assert "\n" not in out and "apt-get install cmake g++" in out and "brew install cmake" in out
    assert ("missing cmake" in out) == ("cmake" in absent) and ("C++ compiler" in out.split(".")[0]) != (
        "cmake" in absent
    )


def _llama_cpp():
    """llama_cpp, or a one-line skip naming `make engines` (a failure when QLESSON_REQUIRE_ENGINES=1)."""
    try:
        import llama_cpp
    except ImportError:
        if os.environ.get("QLESSON_REQUIRE_ENGINES") == "1":
            pytest.fail("QLESSON_REQUIRE_ENGINES=1 but llama-cpp-python is missing: run `make engines`")
        pytest.skip("llama-cpp-python not installed: run `make engines`")
    return llama_cpp


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def files(model, tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf")
    return {fmt: g.export_gguf(model, d / f"minilm_{fmt}.gguf", g.plan_for(fmt)) for fmt in g.FORMATS}


def test_plan_is_checked_before_writing(model, tmp_path):
    with pytest.raises(ValueError, match=r"384 values, not a multiple of 256"):
        g.export_gguf(model, tmp_path / "x.gguf", {"L0.query": "Q4_K"})
    with pytest.raises(ValueError, match="not encoder Linear weights"):
        g.export_gguf(model, tmp_path / "x.gguf", {"pooler": "Q8_0"})
    with pytest.raises(ValueError, match="expected one of"):
        g.export_gguf(model, tmp_path / "x.gguf", {"L0.query": "Q5_0"})
    assert not (tmp_path / "x.gguf").exists()


def test_names_are_ggufs_own():
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, 6)
    assert g.gguf_name("L3.intermediate") == "blk.3.ffn_up.weight"
    assert names.get_name("encoder.layer.3.intermediate.dense.weight", (".weight",)) == "blk.3.ffn_up.weight"


@pytest.mark.parametrize("fmt", ["Q8_0", "Q4_0", "Q4_K"])
def test_file_holds_qlesson_bytes_and_deq_is_read_back(model, files, fmt):
    """The stored bytes are qlesson's, gguf's own numpy dequantizer reads the same values, and deq is them."""
    res = files[fmt]
    tensors = {t.name: t for t in gguf.GGUFReader(str(res.path)).tensors}
    weights = {s: m.weight for s, m in _linears(model).items()}
    for short in ("L0.query", "L5.output"):
        want = res.plan[short]
        raw = np.asarray(tensors[g.gguf_name(short)].data)
        w = weights[short].detach().float().numpy()
        ours = kquants.quantize(w, want) if want == "Q4_K" else formats.quantize(w, want)
        assert tensors[g.gguf_name(short)].tensor_type.name == want
        np.testing.assert_array_equal(raw.reshape(ours.shape), ours)
        ref = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType[want]).reshape(w.shape)
        np.testing.assert_array_equal(res.deq[short].numpy(), ref)
    assert res.size_bytes == res.path.stat().st_size


def test_check_gguf_reports_the_plan(model, files):
    assert g.check_gguf(files["Q4_K"].path, model) == files["Q4_K"].plan == g.plan_for("Q4_K")
    assert sorted(set(g.plan_for("Q4_K").values())) == ["Q4_0", "Q4_K"]


def _linears(model):
    bert = bert_of(model)
    return {s: bert.get_submodule(hf_name(s)) for s in g.short_names()}


def _tensor_info_at(data: bytes, name: str) -> int:
    """Offset just after a tensor's name in the GGUF header (n_dims u32, dims u64 x n, type u32, offset u64)."""
    key = struct.pack("<Q", len(name)) + name.encode()
    at = data.find(key)
    assert at > 0 and data.find(key, at + 1) < 0, name
    return at + len(key)


def _patched(src: Path, dst: Path, edit) -> Path:
    data = bytearray(src.read_bytes())
    edit(data)
    dst.write_bytes(bytes(data))
    return dst


def _set_dim0(name, value):
    def edit(data):
        at = _tensor_info_at(data, name) + 4
        data[at : at + 8] = struct.pack("<Q", value)

    return edit


def _set_type(name, ggml_type):
    def edit(data):
        n_dims = struct.unpack_from("<I", data, _tensor_info_at(data, name))[0]
        at = _tensor_info_at(data, name) + 4 + 8 * n_dims
        data[at : at + 4] = struct.pack("<I", int(ggml_type))

    return edit


def _rename(old, new):
    assert len(old) == len(new)

    def edit(data):
        at = bytes(data).find(old.encode())
        data[at : at + len(old)] = new.encode()

    return edit


def _truncate(data):
    del data[-1000:]


CORRUPTIONS = {
    "shape": (_set_dim0("blk.0.attn_q.weight", 352), r"blk\.0\.attn_q\.weight has shape \(ne\) \(352, 384\)"),
    "block": (
        _set_type("blk.0.attn_q.weight", gguf.GGMLQuantizationType.Q4_K),
        r"384\)? (values, )?(is )?not a multiple of .*256",
    ),
    "bytes": (_set_type("blk.1.attn_k.weight", gguf.GGMLQuantizationType.Q4_0), r"attn_k\.weight has \d+ bytes.*needs"),
    "key": (_rename("bert.pooling_type", "bert.poolinX_type"), r"missing GGUF key\(s\) \['bert\.pooling_type'\]"),
    "tensor": (_rename("blk.5.ffn_down.weight", "blk.5.ffn_dowX.weight"), r"missing tensor\(s\) \['blk\.5\.ffn_down"),
    "truncated": (_truncate, r"(not a readable GGUF|ffn_down\.weight has \d+ bytes|layer_output_norm.* bytes)"),
}


@pytest.mark.parametrize("what", list(CORRUPTIONS))
def test_corrupted_file_is_a_value_error_before_llama_cpp(files, tmp_path, what):
    edit, message = CORRUPTIONS[what]
    bad = _patched(files["Q8_0"].path, tmp_path / f"{what}.gguf", edit)
    with pytest.raises(ValueError, match=message):  # load_llama runs check_gguf first: llama.cpp never sees it
        g.load_llama(bad)


def test_vocab_without_phantom_spaces_is_refused(model, tmp_path, monkeypatch):
    """Found by a mutant: llama.cpp aborts the whole process on a vocabulary in plain WordPiece spelling."""
    monkeypatch.setattr(g, "phantom", lambda token, control: token)
    with pytest.raises(ValueError, match=r"not in llama\.cpp's phantom-space spelling"):
        g.check_gguf(g.export_gguf(model, tmp_path / "plain.gguf", {}).path)


def test_file_of_another_model_is_refused(model, files):
    cfg = bert_of(model).config
    cfg.max_position_embeddings += 1  # the model now wants a context of 513: the file has 512
    try:
        with pytest.raises(ValueError, match=r"\(6, 384, 1536, 512\) but the model has \(6, 384, 1536, 513\)"):
            g.check_gguf(files["F32"].path, model)
    finally:
        cfg.max_position_embeddings -= 1


@pytest.fixture(scope="module")
def engine_runs(model, files):
    _llama_cpp()
    return {fmt: g.run_gguf(files[fmt].path) for fmt in g.FORMATS}


def test_llama_cpp_tokenizes_like_hugging_face(model, files):
    _llama_cpp()
    llm = g.load_llama(files["F32"].path)
    ours = [llm.tokenize(s.encode(), add_bos=True, special=False) for s in EVAL_SENTENCES]
    assert ours == model.tokenizer(list(EVAL_SENTENCES))["input_ids"]


@pytest.mark.parametrize("fmt", g.FORMATS)
def test_engine_matches_simulation_of_the_file(model, files, engine_runs, fmt):
    sim = reference_embeddings(model, files[fmt].deq)
    assert worst_cosine(engine_runs[fmt], sim) > g.SIMULATION_BOUND[fmt]


@pytest.mark.parametrize("fmt", ["Q4_0", "Q4_K"])
def test_engine_runs_the_quantized_weights_not_float(model, engine_runs, fmt):
    """At 4 bits the engine is far from float (the codes are really used), as far as the simulation is."""
    to_float = worst_cosine(engine_runs[fmt], reference_embeddings(model))
    assert to_float < 0.99


def test_rounding_the_activations_explains_q8_0s_extra_loss(model, files, engine_runs):
    """At Q8_0 the engine loses about 3x what the weight-only simulation loses; rounding each quantized
    layer's input to Q8_0 blocks in the simulation brings the simulated loss within 20% of the engine's."""
    float_emb = reference_embeddings(model)
    deq = files["Q8_0"].deq

    def loss(e):
        return 1 - float(cosines(e, float_emb).mean())

    engine = loss(engine_runs["Q8_0"])
    weights_only = loss(reference_embeddings(model, deq))
    rounded = loss(reference_embeddings(model, deq, round_activations=True))
    assert engine > 2 * weights_only
    assert abs(rounded - engine) < 0.2 * engine


def test_q8_0_round_rejects_rows_not_made_of_blocks():
    from qlesson.engines.common import q8_0_round

    with pytest.raises(ValueError, match="multiple of 32"):
        q8_0_round(torch.zeros(3, 40))

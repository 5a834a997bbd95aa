"""ONNX Runtime engine (lesson 11): MiniLM written with onnx.helper, its Linear weights as int8 QDQ and int4
MatMulNBits, checked against qlesson's simulation of exactly the weights the file holds.

Tolerances come from runs on this machine (ORT 1.32, one thread): the float graph is within 1 - cos = 3e-13 of
the float64 model, and every quantized format within 4e-13 of its simulation; the bound 1e-9 leaves a margin of
three orders of magnitude and stays far below what a real mistake costs (int8 activations: 3e-4; a swapped nibble
or a wrong axis: > 1e-2).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from qlesson.engines import common
from qlesson.engines.onnx_bert import (
    LINEAR_NAMES,
    build_graph,
    check_onnx_file,
    export_minilm,
    read_deq,
    run_onnx,
    session,
)
from qlesson.engines.onnx_ort import compare_block, ort_quantize_dynamic
from qlesson.engines.onnx_quant import (
    check_matmulnbits,
    pack_nibbles,
    pack_zero_points,
    unpack_nibbles,
)
from qlesson.quant.packed import resolve_plan, simulate
from qlesson.teach.models import load_minilm

TOL = 1e-9  # 1 - worst cosine, engine vs its simulation (measured <= 4e-13)
MIXED = {
    "L*.query": "int8-tensor",
    "L*.key": "int8-channel",
    "L*.value": "int4-g32",
    "L*.attention output": "int4-g64-asym",
    "L*.intermediate": "int4-g128-asym",
    "L*.output": "int4-g128",
}


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def float_file(model, tmp_path_factory):
    return export_minilm(model, tmp_path_factory.mktemp("onnx") / "float.onnx", None)


@pytest.fixture(scope="module")
def mixed(model, tmp_path_factory):
    return export_minilm(model, tmp_path_factory.mktemp("onnx") / "mixed.onnx", MIXED)


def test_float_graph_matches_the_float64_model(model, float_file):
    result = float_file
    got = run_onnx(result.path, model)
    assert got.shape == (len(common.EVAL_SENTENCES), 384) and got.dtype == np.float32
    assert 1 - common.worst_cosine(got, common.reference_embeddings(model)) < 1e-6
    assert set(result.deq) == set(LINEAR_NAMES) and result.plan["L0.query"] is None


def test_the_file_holds_qlessons_codes_for_every_format(model, mixed):
    """Read back from the file, each weight is exactly packed.simulate's: codes, scales, axis and nibble order."""
    schemes = resolve_plan(list(LINEAR_NAMES), MIXED)
    weights = common.bert_of(model).state_dict()
    assert check_onnx_file(mixed.path)["L0.value"] == "MatMulNBits"
    for short in LINEAR_NAMES:
        w = weights[common.hf_name(short) + ".weight"].float()
        assert torch.equal(mixed.deq[short], simulate(w, schemes[short])), short


def test_engine_matches_the_simulation_of_the_file(model, mixed):
    got = run_onnx(mixed.path, model)
    sim = common.reference_embeddings(model, mixed.deq)
    assert 1 - common.worst_cosine(got, sim) < TOL
    assert 1 - common.worst_cosine(got, common.reference_embeddings(model)) > 1e-4  # quantized: not the float model


def test_per_channel_axis_must_be_out_features(model, tmp_path):
    path = tmp_path / "axis0.onnx"
    onnx.save(build_graph(model, {"L*.key": "int8-channel", "*": None}, channel_axis=0), str(path))
    with pytest.raises(ValueError, match=r"axis=0.*re-export with axis=1"):
        check_onnx_file(path)


def _nbits_model(k: int, n: int, bs: int, with_zp: bool) -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    """One MatMulNBits node on random codes; also the float32 weight [N, K] it must multiply by, from numpy."""
    rng = np.random.default_rng(0)
    u = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
    scales = rng.uniform(0.01, 0.1, size=(n, k // bs)).astype(np.float32)
    z = rng.integers(0, 16, size=(n, k // bs), dtype=np.uint8) if with_zp else np.full((n, k // bs), 8, np.uint8)
    w = (u.astype(np.float32) - np.repeat(z, bs, axis=1)) * np.repeat(scales, bs, axis=1)
    inits = [numpy_helper.from_array(pack_nibbles(u, bs), "B"), numpy_helper.from_array(scales.reshape(-1), "s")]
    if with_zp:
        inits.append(numpy_helper.from_array(pack_zero_points(z), "z"))
    node = helper.make_node(
        "MatMulNBits", ["A", *(i.name for i in inits)], ["Y"], domain="com.microsoft", K=k, N=n, bits=4, block_size=bs
    )
    graph = helper.make_graph(
        [node],
        "one",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["m", k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["m", n])],
        inits,
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10), w, u


@pytest.mark.parametrize("with_zp", [False, True])
def test_matmulnbits_nibble_order_against_numpy(tmp_path, with_zp):
    k, n, bs = 96, 5, 32  # three blocks: the packed zero points of a row end on a half byte
    m, w, u = _nbits_model(k, n, bs, with_zp)
    assert np.array_equal(unpack_nibbles(pack_nibbles(u, bs).reshape(n, -1, bs // 2)), u)
    path = tmp_path / "one.onnx"
    onnx.save(m, str(path))
    a = np.random.default_rng(1).standard_normal((4, k)).astype(np.float32)
    y = session(path).run(["Y"], {"A": a})[0]
    np.testing.assert_allclose(y, a.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_check_matmulnbits_errors():
    B, s = np.zeros((4, 3, 16), np.uint8), np.ones(12, np.float32)
    check_matmulnbits(B, s, None, K=96, N=4, block_size=32)  # the good case passes
    with pytest.raises(ValueError, match=r"block_size=48 is not a power of two"):
        check_matmulnbits(B, s, None, K=96, N=4, block_size=48)
    with pytest.raises(ValueError, match=r"K=100 is not divisible by block_size=32.*qlesson refuses"):
        check_matmulnbits(B, s, None, K=100, N=4, block_size=32)
    with pytest.raises(ValueError, match=r"implies block_size=64, but the node says block_size=32"):
        check_matmulnbits(np.zeros((4, 1, 32), np.uint8), s, None, K=64, N=4, block_size=32)
    with pytest.raises(ValueError, match=r"B has shape \(5, 3, 16\); expected"):
        check_matmulnbits(np.zeros((5, 3, 16), np.uint8), s, None, K=96, N=4, block_size=32)
    with pytest.raises(ValueError, match=r"has 11 scales; expected N \* K/block_size = 4 \* 3 = 12"):
        check_matmulnbits(B, s[:11], None, K=96, N=4, block_size=32)
    with pytest.raises(ValueError, match=r"zero_points are uint8 with 4 values; expected uint8 with .* = 8"):
        check_matmulnbits(B, s, np.zeros(4, np.uint8), K=96, N=4, block_size=32)
    with pytest.raises(ValueError, match=r"scales hold a NaN"):
        check_matmulnbits(B, np.full(12, np.nan, np.float32), None, K=96, N=4, block_size=32)


def test_check_onnx_file_refuses_corrupt_and_tampered_files(mixed, tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not an onnx file")
    with pytest.raises(ValueError, match="onnx.checker rejects the file"):
        check_onnx_file(garbage)
    with pytest.raises(ValueError, match="is not a file"):
        check_onnx_file(tmp_path / "missing.onnx")
    m = onnx.load(str(mixed.path))
    node = next(n for n in m.graph.node if n.name == "L0.value:nbits")
    next(a for a in node.attribute if a.name == "block_size").i = 64  # the blob was packed with 32
    tampered = tmp_path / "tampered.onnx"
    onnx.save(m, str(tampered))
    with pytest.raises(ValueError, match=r"L0.value:nbits: MatMulNBits B shape .* implies block_size=32"):
        check_onnx_file(tampered)
    with pytest.raises(ValueError, match=r"MatMulNBits B shape"):
        read_deq(tampered)


def test_export_refuses_plans_it_cannot_write(model, tmp_path):
    with pytest.raises(ValueError, match=r"group size g=256 does not divide in_features K=384"):
        export_minilm(model, tmp_path / "x.onnx", {"L0.query": "int4-g256"})
    with pytest.raises(ValueError, match=r"int4-channel has no ONNX Runtime format here"):
        export_minilm(model, tmp_path / "x.onnx", "int4-channel")
    with pytest.raises(ValueError, match=r"matches no layer"):
        export_minilm(model, tmp_path / "x.onnx", {"pooler": "int8-channel"})
    assert not (tmp_path / "x.onnx").exists()


def test_ort_quantize_dynamic_per_channel_stores_qlessons_int8_codes(model, float_file, tmp_path):
    path = ort_quantize_dynamic(float_file.path, tmp_path / "dyn.onnx", per_channel=True)
    c = compare_block(model, "L1.intermediate", "int8-channel", path)
    assert c.equal_codes_fraction == 1.0 and c.ort_scale == c.qlesson_scale and c.ort_codes.shape == (384,)
    assert np.array_equal(c.ort_codes, c.qlesson_codes) and np.abs(c.ort_codes).max() == 127
    with pytest.raises(ValueError, match="needs the other per_channel setting"):
        compare_block(model, "L1.intermediate", "int8-tensor", path)


def test_ort_int4_blocks_differ_by_range_convention_only_when_symmetric(model):
    asym = compare_block(model, "L2.value", "int4-g128-asym")
    assert asym.equal_codes_fraction == 1.0 and asym.ort_scale == asym.qlesson_scale
    sym = compare_block(model, "L2.value", "int4-g32")
    assert 0.2 < sym.equal_codes_fraction < 0.8  # measured 0.40 on L0.query: another range, not another layout
    assert abs(sym.ort_scale) * 8 == pytest.approx(abs(sym.qlesson_scale) * 7, rel=1e-6)  # same |absmax|
    # ORT maps the block's value of largest magnitude to -8 whatever its sign (the scale carries the sign)
    assert sym.ort_codes.min() == -8 and np.abs(sym.qlesson_codes).max() == 7

"""MiniLM as an ONNX graph written node by node, its Linear weights at a chosen granularity, run in ONNX Runtime.

Introduced in lesson 11. :func:`export_minilm` writes the sentence-transformers all-MiniLM-L6-v2 (token ids in,
unit-normalised mean-pooled embedding out) with ``onnx.helper`` (no ``torch.onnx``): embeddings (word + position +
type, LayerNorm), six BERT layers (Q/K/V, scaled dot-product attention with the additive mask, output dense,
residual + LayerNorm, exact erf GELU, output dense, residual + LayerNorm), mean pooling over the mask, L2
normalisation. Each of the 36 encoder Linear layers is written in the format its plan entry names
(:mod:`qlesson.engines.onnx_quant`); the pooler is not part of the sentence embedding and is left out.

The result's ``deq`` is read back from the written file (:func:`read_deq`), so
``common.reference_embeddings(model, result.deq)`` is the float64 simulation of exactly what ONNX Runtime runs.

>>> resolve_onnx_plan({"L*.intermediate": "int4-g32", "*": None})["L0.intermediate"]
Scheme('int4-g32')
>>> len(LINEAR_NAMES), LINEAR_NAMES[3]
(36, 'L0.attention output')
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from qlesson.engines.common import EVAL_SENTENCES, bert_of, tokenize
from qlesson.engines.onnx_quant import MS_DOMAIN, check_matmulnbits, dequantize_node, linear_nodes
from qlesson.quant.packed import Scheme, resolve_plan

OPSET = 21  # LayerNormalization (17), ReduceL2 with axes as an input (18), DequantizeLinear with int8/axis (21)
IR_VERSION = 10  # the IR version of opset 21
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "sentence_embedding"
_KINDS = ("query", "key", "value", "attention output", "intermediate", "output")
LINEAR_NAMES: tuple[str, ...] = tuple(f"L{i}.{kind}" for i in range(6) for kind in _KINDS)
PlanLike = str | Scheme | Mapping[str, str | Scheme | None] | None


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_minilm` wrote: the path, its size, the plan it followed and the weights it holds."""

    path: Path
    size_bytes: int
    plan: dict[str, str | None]
    deq: dict[str, torch.Tensor]  # short name -> float32 [out, in], read back from the file


def resolve_onnx_plan(plan: PlanLike) -> dict[str, Scheme | None]:
    """Every encoder Linear's scheme (``None`` = float) from ``None`` (all float), one spelling for all, or a dict
    of fnmatch patterns (``{"L*.intermediate": "int4-g32", "*": "int8-channel"}``; see ``packed.resolve_plan``)."""
    if plan is None:
        return dict.fromkeys(LINEAR_NAMES)
    if isinstance(plan, Mapping):
        plan = {k: ("float" if v is None else v) for k, v in plan.items()}
    return resolve_plan(list(LINEAR_NAMES), plan)


class _Graph:
    """A small builder: nodes, initializers and fresh names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def const(self, name: str, value: Any, dtype: Any = np.float32) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], name: str | None = None, **attrs: Any) -> str:
        self._n += 1
        out = name or f"{op_type.lower()}_{self._n}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def layer_norm(self, x: str, ln: torch.nn.LayerNorm, prefix: str) -> str:
        w = self.const(f"{prefix}.gamma", ln.weight.detach().float().numpy())
        b = self.const(f"{prefix}.beta", ln.bias.detach().float().numpy())
        return self.op("LayerNormalization", [x, w, b], f"{prefix}.out", axis=-1, epsilon=float(ln.eps))

    def linear(self, x: str, short: str, linear: torch.nn.Linear, scheme: Scheme | None, axis: int) -> str:
        out = f"{short.replace(' ', '_')}.out"
        nodes, inits = linear_nodes(x, out, short, linear, scheme, axis=axis)
        self.nodes += nodes
        self.inits += inits
        return out


def build_graph(model: Any, plan: PlanLike = None, *, channel_axis: int = 1) -> onnx.ModelProto:
    """The ONNX model of ``model`` (``load_minilm()``) with its Linear weights stored as ``plan`` says.

    ``channel_axis`` is the DequantizeLinear axis of per-channel weights: leave it at 1 (a test writes 0 to see
    :func:`check_onnx_file` refuse it)."""
    schemes = resolve_onnx_plan(plan)
    bert = bert_of(model)
    cfg = bert.config
    heads, hidden = int(cfg.num_attention_heads), int(cfg.hidden_size)
    if hidden % heads or len(bert.encoder.layer) != 6:
        raise ValueError(f"expected all-MiniLM-L6-v2 (6 layers, hidden {hidden} divisible by {heads} heads)")
    g = _Graph()
    emb = bert.embeddings
    word = g.const("emb.word", emb.word_embeddings.weight.detach().float().numpy())
    pos = g.const("emb.position", emb.position_embeddings.weight.detach().float().numpy())
    typ = g.const("emb.type", emb.token_type_embeddings.weight.detach().float().numpy())
    seq = g.op("Shape", ["input_ids"], "seq_len_1d", start=1, end=2)
    seq0 = g.op("Squeeze", [seq, g.const("axis0", [0], np.int64)], "seq_len")
    positions = g.op("Range", [g.const("zero_i", 0, np.int64), seq0, g.const("one_i", 1, np.int64)], "positions")
    x = g.op("Add", [g.op("Gather", [word, "input_ids"]), g.op("Gather", [pos, positions])])
    x = g.op("Add", [x, g.op("Gather", [typ, "token_type_ids"])])
    x = g.layer_norm(x, emb.LayerNorm, "emb.ln")
    # additive mask [B, 1, 1, S]: 0 where attended, the float32 minimum where padded (as transformers does)
    maskf = g.op("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    neg = g.op("Mul", [g.op("Sub", [g.const("one_f", 1.0), maskf]), g.const("f32_min", np.finfo(np.float32).min)])
    add_mask = g.op("Unsqueeze", [neg, g.const("axes12", [1, 2], np.int64)], "additive_mask")
    split_heads = g.const("split_heads", [0, 0, heads, hidden // heads], np.int64)
    merge_heads = g.const("merge_heads", [0, 0, hidden], np.int64)
    inv_sqrt_d = g.const("inv_sqrt_d", 1.0 / np.sqrt(hidden // heads))
    half, one, inv_sqrt2 = g.const("half", 0.5), g.const("one", 1.0), g.const("inv_sqrt2", 1.0 / np.sqrt(2.0))
    for i, layer in enumerate(bert.encoder.layer):
        att, L = layer.attention, f"L{i}"

        def lin(h: str, kind: str, module: torch.nn.Linear, L: str = L) -> str:
            return g.linear(h, f"{L}.{kind}", module, schemes[f"{L}.{kind}"], channel_axis)

        q = g.op("Transpose", [g.op("Reshape", [lin(x, "query", att.self.query), split_heads])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [lin(x, "key", att.self.key), split_heads])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [lin(x, "value", att.self.value), split_heads])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), inv_sqrt_d]), add_mask])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_heads])
        h = g.op("Add", [lin(ctx, "attention output", att.output.dense), x])
        x = g.layer_norm(h, att.output.LayerNorm, f"{L}.attention_ln")
        inter = lin(x, "intermediate", layer.intermediate.dense)
        erf = g.op("Erf", [g.op("Mul", [inter, inv_sqrt2])])
        gelu = g.op("Mul", [g.op("Mul", [inter, half]), g.op("Add", [erf, one])], f"{L}.gelu")
        h = g.op("Add", [lin(gelu, "output", layer.output.dense), x])
        x = g.layer_norm(h, layer.output.LayerNorm, f"{L}.output_ln")
    # mean pooling over the mask, then L2 normalisation (sentence-transformers' Pooling + Normalize)
    m3 = g.op("Unsqueeze", [maskf, g.const("axes2", [2], np.int64)])
    axis1 = g.const("axis1", [1], np.int64)
    summed = g.op("ReduceSum", [g.op("Mul", [x, m3]), axis1], keepdims=0)
    count = g.op("Max", [g.op("ReduceSum", [m3, axis1], keepdims=0), g.const("eps_count", 1e-9)])
    pooled = g.op("Div", [summed, count], "pooled")
    norm = g.op("ReduceL2", [pooled, g.const("axis_last", [-1], np.int64)], keepdims=1)
    g.op("Div", [pooled, g.op("Max", [norm, g.const("eps_norm", 1e-12)])], OUTPUT)
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in INPUTS]
    outs = [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden])]
    graph = helper.make_graph(g.nodes, "all-MiniLM-L6-v2", ints, outs, g.inits)
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION, producer_name="qlesson")


def _linear_weight_nodes(m: onnx.ModelProto) -> dict[str, onnx.NodeProto]:
    """``{short name: the node whose weight it is}``: ``:dq`` / ``:nbits`` nodes, else the float ``:matmul``."""
    found: dict[str, onnx.NodeProto] = {}
    for node in m.graph.node:
        short, _, role = node.name.rpartition(":")
        if role in ("dq", "nbits") or (role == "matmul" and node.input[1] in _init_names(m)):
            found[short] = node
    return found


def _init_names(m: onnx.ModelProto) -> set[str]:
    return {t.name for t in m.graph.initializer}


def read_deq(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """The float32 weight ``[out, in]`` of every Linear the file at ``path`` holds, dequantized from its own
    initializers and node attributes (nothing is taken from the model it was written from)."""
    m = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    return {short: torch.from_numpy(dequantize_node(n, inits)) for short, n in _linear_weight_nodes(m).items()}


def check_onnx_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Check a written MiniLM file before an engine sees it; ``{short name: op}`` of its Linear weights.

    ``onnx.checker`` first, then qlesson's own checks: the three int64 inputs and the embedding output, every
    MatMulNBits through :func:`check_matmulnbits`, every DequantizeLinear feeding a MatMul's ``B = W^T [K, N]``
    with a per-channel scale on ``axis=1`` (out_features) and as many scales as that axis is long.
    A ``ValueError`` names the value and the fix."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{p} is not a file; write it with export_minilm(model, path, plan)")
    try:
        onnx.checker.check_model(str(p))
    except onnx.checker.ValidationError as e:
        raise ValueError(f"{p}: onnx.checker rejects the file ({str(e).splitlines()[0]}); re-export it") from e
    m = onnx.load(str(p))
    names = tuple(i.name for i in m.graph.input)
    if names != INPUTS or [o.name for o in m.graph.output] != [OUTPUT]:
        raise ValueError(
            f"{p}: inputs {names}, outputs {[o.name for o in m.graph.output]}; expected {INPUTS} -> "
            f"{OUTPUT!r} (a file written by export_minilm)"
        )
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    nodes = _linear_weight_nodes(m)
    for node in nodes.values():
        where = f"{p.name}: {node.name}"
        if node.op_type == "MatMulNBits":
            a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
            zps = inits.get(node.input[3]) if len(node.input) > 3 and node.input[3] else None
            try:
                check_matmulnbits(
                    inits[node.input[1]], inits[node.input[2]], zps, a["K"], a["N"], a["block_size"], a.get("bits", 4)
                )
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
        elif node.op_type == "DequantizeLinear":
            _check_dq(node, inits, m, where)
    return {short: n.op_type for short, n in nodes.items()}


def _check_dq(node: onnx.NodeProto, inits: Mapping[str, np.ndarray], m: onnx.ModelProto, where: str) -> None:
    codes, scale = inits[node.input[0]], inits[node.input[1]]
    if codes.ndim != 2 or codes.dtype not in (np.int8, np.uint8):
        raise ValueError(f"{where}: codes are {codes.dtype} {codes.shape}; expected int8/uint8 W^T [K, N]")
    users = [n for n in m.graph.node if node.output[0] in n.input]
    if not all(u.op_type == "MatMul" and list(u.input).index(node.output[0]) == 1 for u in users):
        raise ValueError(f"{where}: the dequantized weight must feed MatMul's second input (B = W^T [K, N])")
    if scale.ndim == 0:
        return
    axis = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), 1)
    if axis not in (1, -1):
        raise ValueError(
            f"{where}: per-channel DequantizeLinear has axis={axis}, one scale per row of W^T [K, N] = per input "
            "feature; per output channel is axis=1 (W is stored transposed): re-export with axis=1"
        )
    if scale.shape != (codes.shape[1],):
        raise ValueError(f"{where}: {scale.size} scales for W^T {codes.shape}; expected N = {codes.shape[1]} (axis=1)")


def export_minilm(model: Any, path: str | os.PathLike[str], plan: PlanLike = None) -> ExportResult:
    """Write ``model`` (``load_minilm()``) to ``path`` as ONNX with its encoder Linear weights stored as ``plan``
    says, check the file, and return its size and the weights it holds (read back from the file)."""
    p = Path(path)
    schemes = resolve_onnx_plan(plan)
    onnx.save(build_graph(model, schemes), str(p))
    check_onnx_file(p)
    return ExportResult(
        path=p,
        size_bytes=p.stat().st_size,
        plan={k: None if s is None else str(s) for k, s in schemes.items()},
        deq=read_deq(p),
    )


def session(path: str | os.PathLike[str], threads: int = 1, accuracy_level: int | None = 1) -> Any:
    """An ``onnxruntime.InferenceSession`` on the CPU provider with ``threads`` intra-op threads (1: deterministic
    tests; more for timing).

    ORT's graph optimizer rewrites ``DequantizeLinear -> MatMul`` on int8 weights into an 8-bit ``MatMulNBits``
    whose ``accuracy_level`` comes from the session entry ``session.qdq_matmulnbits_accuracy_level``; ORT's default
    there is 4, which also quantizes the *activations* to int8 (a different computation from the file's weights
    times float activations). ``accuracy_level=1`` (float32 compute, the default here) keeps the engine a weight-only
    one, so its output is the simulation's; ``None`` leaves ORT's own default."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads)
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if accuracy_level is not None:
        so.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", str(int(accuracy_level)))
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def run_onnx(
    path: str | os.PathLike[str],
    model: Any,
    sentences: Sequence[str] = EVAL_SENTENCES,
    threads: int = 1,
    accuracy_level: int | None = 1,
) -> np.ndarray:
    """ONNX Runtime's embeddings ``[len(sentences), 384]`` (float32) of the file at ``path``, fed the tokens of
    ``model``'s tokenizer (``accuracy_level``: see :func:`session`)."""
    feed = tokenize(model, sentences)
    return session(path, threads, accuracy_level).run([OUTPUT], feed)[0]

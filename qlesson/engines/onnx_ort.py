"""ONNX Runtime's own weight quantizers next to qlesson's, on the same MiniLM layer.

Introduced in lesson 11. Two of ORT's quantizers, read back and compared block by block with qlesson's codes
(:class:`qlesson.quant.packed.QuantLinear`):

- ``quantize_dynamic`` (int8, ``per_channel`` False/True) on the float graph of :func:`onnx_bert.export_minilm`:
  the weight is stored as int8 codes + scale + zero point feeding ``MatMulInteger``, and the *activations* are
  quantized too at run time (``DynamicQuantizeLinear``), so its embeddings are not a weight-only result.
- ``MatMulNBitsQuantizer``'s int4 block kernel (``quantize_matmul_4bits``, the C++ routine the quantizer calls for
  its default QOperator format; the Python class itself also needs the ``onnx_ir`` package): symmetric codes use
  ``[-8, 7]`` with ``scale = signed absmax / -8`` (the value of largest magnitude maps to -8), qlesson's use
  ``[-7, 7]`` with ``scale = absmax / 7``; asymmetric ones use ``[0, 15]`` over ``[min(w, 0), max(w, 0)]`` as
  qlesson's do.

:func:`compare_block` gives both sides' codes and scales for the first block of a named layer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from qlesson.engines.common import bert_of, hf_name
from qlesson.engines.onnx_quant import unpack_nibbles, unpack_zero_points, weight_prefix
from qlesson.quant.granularity import PerChannel, PerGroup
from qlesson.quant.packed import QuantLinear, Scheme

METHODS = ("int8-tensor", "int8-channel", "int4-g32", "int4-g128", "int4-g32-asym", "int4-g128-asym")


@dataclass(frozen=True)
class BlockComparison:
    """The first block of one layer as ORT and qlesson quantize it (codes as *signed* values ``q`` with
    ``w ~= (q - zero_point) * scale``; int4 symmetric ORT codes are its nibbles minus 8)."""

    layer: str
    method: str
    ort_codes: np.ndarray
    ort_scale: float
    ort_zero_point: int
    qlesson_codes: np.ndarray
    qlesson_scale: float
    qlesson_zero_point: int
    equal_codes_fraction: float  # over the whole layer, not only the first block
    note: str


def ort_quantize_dynamic(
    float_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    per_channel: bool,
    op_types: tuple[str, ...] = ("MatMul",),
) -> Path:
    """``onnxruntime.quantization.quantize_dynamic`` (QInt8 weights, no reduce_range) of a float MiniLM file.

    ``op_types`` defaults to MatMul only: the 36 Linear weights, as the other formats here. ORT's own default also
    quantizes the three embedding tables (``Gather``, per-tensor int8), which shrinks the file to a quarter and
    costs accuracy that has nothing to do with the Linear layers."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(float_path),
        str(out_path),
        op_types_to_quantize=list(op_types) if op_types else None,
        per_channel=per_channel,
        weight_type=QuantType.QInt8,
    )
    return Path(out_path)


def read_dynamic_weight(path: str | os.PathLike[str], short: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes ``[N, K]`` (int8), scale and zero point (``()`` or ``[N]``) of one layer of a ``quantize_dynamic`` file."""
    m = onnx.load(str(path))
    base = f"{weight_prefix(short)}.weight_t"
    inits = {t.name: t for t in m.graph.initializer}
    names = (f"{base}_quantized", f"{base}_scale", f"{base}_zero_point")
    if not all(n in inits for n in names):
        raise ValueError(f"{path}: no quantized weight {names[0]!r}; is it a quantize_dynamic file of export_minilm?")
    q, s, z = (numpy_helper.to_array(inits[n]) for n in names)
    return q.T.copy(), s, z


def ort_int4_blocks(w: torch.Tensor, block_size: int, symmetric: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ORT's int4 block quantization of ``w [N, K]``: nibbles ``[N, K]``, scales ``[N, K/g]``, zero points
    ``[N, K/g]`` (8 where symmetric), from the kernel ``MatMulNBitsQuantizer`` calls."""
    from onnxruntime.capi._pybind_state import quantize_matmul_4bits

    n, k = w.shape
    nb = k // block_size
    if k % block_size:
        raise ValueError(f"K={k} is not divisible by block_size={block_size}; use a block size that divides {k}")
    packed = np.zeros((n, nb, block_size // 2), np.uint8)
    scales = np.zeros((n, nb), np.float32)
    zp = np.zeros((n, (nb + 1) // 2), np.uint8)
    w_t = np.ascontiguousarray(w.detach().to(torch.float32).numpy().T)
    quantize_matmul_4bits(packed, w_t, scales, zp, block_size, n, k, symmetric)
    z = np.full((n, nb), 8, np.uint8) if symmetric else unpack_zero_points(zp, n, nb)
    return unpack_nibbles(packed), scales, z


def _first(t: np.ndarray) -> np.ndarray:
    return np.asarray(t).reshape(-1)[:1]


def compare_block(
    model: Any, short: str, method: str, dynamic_path: str | os.PathLike[str] | None = None
) -> BlockComparison:
    """ORT's and qlesson's codes and scales for the first block of layer ``short`` under ``method``
    (:data:`METHODS`). The int8 methods read ORT's side from ``dynamic_path``, a ``quantize_dynamic`` file of the
    float graph (``per_channel`` as the method says); the int4 ones call ORT's block kernel on the weight."""
    if method not in METHODS:
        raise ValueError(f"method {method!r} is not one of {', '.join(METHODS)}")
    linear = dict(bert_of(model).named_modules())[hf_name(short)]
    w = linear.weight.detach().to(torch.float32)
    scheme = Scheme.parse(method + "-fp32")  # float32 scales, as ORT stores them
    ql = QuantLinear.from_linear(linear, scheme, name=short)
    q = ql.int_codes().numpy()
    s = ql.scale.numpy()
    zq = np.zeros_like(s, np.int64) if ql.zero_point is None else ql.zero_point.numpy().astype(np.int64)
    g = scheme.granularity
    if scheme.bits == 8:
        if dynamic_path is None:
            raise ValueError(f"{method}: give dynamic_path, a quantize_dynamic file (ort_quantize_dynamic)")
        oq, os_, oz = read_dynamic_weight(dynamic_path, short)
        if (os_.ndim == 1) != isinstance(g, PerChannel):
            raise ValueError(
                f"{dynamic_path} has {os_.size} weight scales for {short}; {method} needs the other "
                "per_channel setting of quantize_dynamic"
            )
        width = w.shape[1] if isinstance(g, PerChannel) else 16  # per-tensor: show the first 16 codes of row 0
        block = (oq[0, :width].astype(np.int64), q[0, :width])
        ort = (float(_first(os_)[0]), int(_first(oz)[0]))
        equal = float(np.mean(oq.astype(np.int64) == q))
        note = (
            "both symmetric over [-127, 127] with scale = absmax / 127 and round half to even; "
            "ORT also quantizes activations at run time (DynamicQuantizeLinear -> MatMulInteger)"
        )
    else:
        assert isinstance(g, PerGroup)
        u, os_, oz = ort_int4_blocks(w, g.group_size, scheme.symmetric)
        oq = u.astype(np.int64) - (8 if scheme.symmetric else 0)
        block = (oq[0, : g.group_size], q[0, : g.group_size])
        ort = (float(os_[0, 0]), int(oz[0, 0]) - (8 if scheme.symmetric else 0))
        equal = float(np.mean(oq == q))
        note = (
            "ORT: q in [-8, 7], scale = (value of largest magnitude) / -8; qlesson: q in [-7, 7], scale = absmax / 7"
            if scheme.symmetric
            else "both asymmetric over [min(w, 0), max(w, 0)] in [0, 15] with a rounded zero point"
        )
    return BlockComparison(
        layer=short,
        method=method,
        ort_codes=block[0],
        ort_scale=ort[0],
        ort_zero_point=ort[1],
        qlesson_codes=block[1],
        qlesson_scale=float(_first(s)[0]),
        qlesson_zero_point=int(_first(zq)[0]),
        equal_codes_fraction=equal,
        note=note,
    )

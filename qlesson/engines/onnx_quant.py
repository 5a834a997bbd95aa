"""One Linear weight in ONNX Runtime's formats: float, int8 QDQ, int4 ``com.microsoft.MatMulNBits``.

Introduced in lesson 11. ONNX ``MatMul(x, B)`` takes ``B = W^T`` of shape ``[K, N]`` (in_features, out_features),
so the course's weight ``W [N, K]`` is written transposed, and *per output channel* is ``axis=1`` there:

================  ============================================================================  ==================
format            what the file holds for ``W [N, K]``                                           dequantized
================  ============================================================================  ==================
float             ``W^T`` float32 ``[K, N]`` -> ``MatMul``                                       as it is
``int8-tensor``   int8 ``q^T [K, N]``, scale ``()``, zero point ``()`` -> ``DequantizeLinear``  ``q * s``
``int8-channel``  int8 ``q^T [K, N]``, scale ``[N]``, zero point ``[N]``, ``axis=1``             ``q * s[n]``
``int4-g<g>``     ``MatMulNBits``: ``B`` uint8 ``[N, K/g, g/2]`` (nibble ``q + 8``, low nibble   ``(u - 8) * s``
                  first), ``scales`` float32 ``[N * K/g]``, no ``zero_points`` (default 8)
``int4-g<g>-asym`` as above with nibble ``q`` and packed uint8 ``zero_points [N * ceil(K/g/2)]``  ``(u - z) * s``
================  ============================================================================  ==================

The codes and scales are qlesson's (:class:`qlesson.quant.packed.QuantLinear`: restricted symmetric range
``[-7, 7]`` / ``[-127, 127]``, scales stored as the scheme says, fp16 by default, then widened to float32
exactly), and :func:`dequantize_node` reads a written node back as float32 ``[N, K]``.

>>> B = pack_nibbles(np.array([[1, 2, 15, 0]], dtype=np.uint8), block_size=4)  # low nibble first: 0x21, 0x0f
>>> B.tolist(), unpack_nibbles(B).tolist()
([[[33, 15]]], [[1, 2, 15, 0]])
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

from qlesson.quant.granularity import PerChannel, PerGroup, PerTensor
from qlesson.quant.packed import QuantLinear, Scheme

MS_DOMAIN = "com.microsoft"
BLOCK_SIZES = (16, 32, 64, 128, 256)  # powers of two >= 16: what MatMulNBits accepts (and qlesson writes)


def weight_prefix(short: str) -> str:
    """Initializer / node prefix of a Linear: its short name without spaces.

    >>> weight_prefix("L0.attention output")
    'L0.attention_output'
    """
    return short.replace(" ", "_")


# ----- MatMulNBits packing -------------------------------------------------------------------------------------


def pack_nibbles(u: np.ndarray, block_size: int) -> np.ndarray:
    """Unsigned 4-bit codes ``[N, K]`` (each in ``[0, 15]``) as MatMulNBits' ``B``: uint8 ``[N, K/g, g/2]``, byte
    ``j`` of a block holding code ``2j`` in its low nibble and ``2j + 1`` in its high nibble."""
    n, k = u.shape
    u = np.asarray(u, dtype=np.uint8).reshape(n, k // block_size, block_size)
    return (u[..., 0::2] | (u[..., 1::2] << 4)).astype(np.uint8)


def unpack_nibbles(b: np.ndarray) -> np.ndarray:
    """The inverse of :func:`pack_nibbles`: uint8 codes ``[N, K]``."""
    lo, hi = b & 0x0F, b >> 4
    return np.stack([lo, hi], axis=-1).reshape(b.shape[0], -1).astype(np.uint8)


def pack_zero_points(z: np.ndarray) -> np.ndarray:
    """Zero points ``[N, n_blocks]`` (each in ``[0, 15]``) packed two per byte along each row, low nibble first, and
    flattened: uint8 ``[N * ceil(n_blocks / 2)]`` (a row with an odd count pads its last high nibble with 0).

    >>> pack_zero_points(np.array([[1, 2, 3], [4, 5, 6]])).tolist()
    [33, 3, 84, 6]
    """
    z = np.asarray(z, dtype=np.uint8)
    if z.shape[1] % 2:
        z = np.concatenate([z, np.zeros((z.shape[0], 1), np.uint8)], axis=1)
    return (z[:, 0::2] | (z[:, 1::2] << 4)).astype(np.uint8).reshape(-1)


def unpack_zero_points(packed: np.ndarray, n: int, n_blocks: int) -> np.ndarray:
    """The inverse of :func:`pack_zero_points`: uint8 ``[N, n_blocks]``."""
    rows = np.asarray(packed, dtype=np.uint8).reshape(n, -1)
    return np.stack([rows & 0x0F, rows >> 4], axis=-1).reshape(n, -1)[:, :n_blocks]


def _fix_block(k: int) -> str:
    fits = [b for b in BLOCK_SIZES if k % b == 0]
    return f"use a block size that divides K={k}" + (f" ({', '.join(map(str, fits))})" if fits else "")


def check_matmulnbits(
    B: np.ndarray,
    scales: np.ndarray,
    zero_points: np.ndarray | None,
    K: int,
    N: int,
    block_size: int,
    bits: int = 4,
) -> None:
    """Raise a ``ValueError`` naming the value and the fix unless the inputs make a MatMulNBits weight that qlesson
    writes: ``bits=4``, ``block_size`` a power of two >= 16 dividing ``K``, ``B`` uint8 ``[N, K/g, g/2]``, ``scales``
    float32 with ``N * K/g`` finite values, ``zero_points`` ``None`` or uint8 ``[N * ceil(K/g/2)]``.

    ORT itself pads ``K`` up to a whole number of blocks; qlesson refuses instead (its groups never straddle the end
    of a row), so a ``K`` not divisible by the block is an error here.

    >>> B = np.zeros((2, 1, 16), np.uint8)
    >>> check_matmulnbits(B, np.ones(2, np.float32), None, K=32, N=2, block_size=32)
    >>> check_matmulnbits(B, np.ones(2, np.float32), None, K=32, N=2, block_size=24)
    Traceback (most recent call last):
    ...
    ValueError: MatMulNBits block_size=24 is not a power of two >= 16; use 16, 32, 64, 128 or 256
    """
    if bits != 4:
        raise ValueError(f"MatMulNBits bits={bits}: qlesson writes and checks 4-bit codes only; use bits=4")
    if not isinstance(block_size, int) or block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"MatMulNBits block_size={block_size} is not a power of two >= 16; use 16, 32, 64, 128 or 256")
    if K <= 0 or N <= 0:
        raise ValueError(f"MatMulNBits K={K}, N={N}: both must be positive (K = in_features, N = out_features)")
    if K % block_size:
        raise ValueError(
            f"MatMulNBits K={K} is not divisible by block_size={block_size}: ORT would pad the last block, qlesson "
            f"refuses (a group never straddles the end of a row); {_fix_block(K)}"
        )
    n_blocks, blob = K // block_size, block_size * bits // 8
    B = np.asarray(B)
    if B.dtype != np.uint8:
        raise ValueError(f"MatMulNBits B has dtype {B.dtype}; expected uint8 (two 4-bit codes per byte)")
    if B.ndim == 3 and B.shape[0] == N and B.shape[2] != blob and B.shape[1] * B.shape[2] * 8 // bits == K:
        raise ValueError(
            f"MatMulNBits B shape {B.shape} implies block_size={B.shape[2] * 8 // bits}, but the node says "
            f"block_size={block_size}; write the block size the weight was packed with"
        )
    if B.shape != (N, n_blocks, blob):
        raise ValueError(
            f"MatMulNBits B has shape {B.shape}; expected [N, K/block_size, block_size*bits/8] = {(N, n_blocks, blob)} "
            f"for K={K}, N={N}, block_size={block_size}: pack W [N, K] with pack_nibbles(u, {block_size})"
        )
    scales = np.asarray(scales)
    if scales.dtype != np.float32:
        raise ValueError(f"MatMulNBits scales have dtype {scales.dtype}; expected float32 (the dtype of A)")
    if scales.size != N * n_blocks:
        raise ValueError(
            f"MatMulNBits has {scales.size} scales; expected N * K/block_size = {N} * {n_blocks} = {N * n_blocks} "
            "(one per block of each output row)"
        )
    if not np.all(np.isfinite(scales)):
        raise ValueError("MatMulNBits scales hold a NaN or inf; requantize the weight (scales must be finite)")
    if zero_points is not None:
        zp = np.asarray(zero_points)
        want = N * ((n_blocks * bits + 7) // 8)
        if zp.dtype != np.uint8 or zp.size != want:
            raise ValueError(
                f"MatMulNBits zero_points are {zp.dtype} with {zp.size} values; expected uint8 with N * "
                f"ceil(n_blocks * bits / 8) = {want} (packed two per byte: pack_zero_points)"
            )


# ----- one Linear as ONNX nodes --------------------------------------------------------------------------------


def linear_nodes(
    x: str, out: str, short: str, linear: torch.nn.Linear, scheme: Scheme | None, *, axis: int = 1
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes and initializers computing ``out = x @ W^T + b`` for ``linear`` stored at ``scheme`` (``None``: float).

    ``axis`` is the DequantizeLinear axis of a per-channel weight; 1 (out_features of ``W^T``) is the only right
    one, and anything else is there so a test can write the mistake and see it caught."""
    p = weight_prefix(short)
    n, k = linear.weight.shape
    bias = numpy_helper.from_array(linear.bias.detach().to(torch.float32).numpy(), f"{p}.bias")
    add = helper.make_node("Add", [f"{p}.mm", bias.name], [out], name=f"{short}:bias")
    if scheme is None:
        w = linear.weight.detach().to(torch.float32).numpy().T.copy()
        init = numpy_helper.from_array(w, f"{p}.weight_t")
        mm = helper.make_node("MatMul", [x, init.name], [f"{p}.mm"], name=f"{short}:matmul")
        return [mm, add], [init, bias]
    ql = QuantLinear.from_linear(linear, scheme, name=short)
    q = ql.int_codes().numpy()
    scale = ql.scale.to(torch.float32).numpy()
    g = scheme.granularity
    if scheme.bits == 8 and isinstance(g, PerTensor | PerChannel):
        dtype = np.int8 if scheme.symmetric else np.uint8
        zp = np.zeros(scale.shape, dtype) if ql.zero_point is None else ql.zero_point.numpy().astype(dtype)
        inits = [
            numpy_helper.from_array(q.T.astype(dtype).copy(), f"{p}.codes_t"),
            numpy_helper.from_array(scale, f"{p}.scale"),
            numpy_helper.from_array(zp, f"{p}.zero_point"),
        ]
        attrs = {"axis": axis} if isinstance(g, PerChannel) else {}
        dq = helper.make_node(
            "DequantizeLinear", [i.name for i in inits], [f"{p}.weight_t"], name=f"{short}:dq", **attrs
        )
        mm = helper.make_node("MatMul", [x, f"{p}.weight_t"], [f"{p}.mm"], name=f"{short}:matmul")
        return [dq, mm, add], [*inits, bias]
    if scheme.bits == 4 and isinstance(g, PerGroup):
        bs = g.group_size
        u = q + 8 if scheme.symmetric else q
        B = pack_nibbles(u, bs)
        zps = None if ql.zero_point is None else pack_zero_points(ql.zero_point.numpy())
        check_matmulnbits(B, scale.reshape(-1), zps, k, n, bs)
        inits = [numpy_helper.from_array(B, f"{p}.B"), numpy_helper.from_array(scale.reshape(-1), f"{p}.scales")]
        if zps is not None:
            inits.append(numpy_helper.from_array(zps, f"{p}.zero_points"))
        node = helper.make_node(
            "MatMulNBits",
            [x, *(i.name for i in inits)],
            [f"{p}.mm"],
            name=f"{short}:nbits",
            domain=MS_DOMAIN,
            K=k,
            N=n,
            bits=4,
            block_size=bs,
        )
        return [node, add], [*inits, bias]
    raise ValueError(
        f"{short}: scheme {scheme} has no ONNX Runtime format here; use int8-tensor, int8-channel (QDQ) or "
        "int4-g<32|64|128> with or without -asym (MatMulNBits)"
    )


# ----- reading a written node back -----------------------------------------------------------------------------


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def dequantize_node(node: onnx.NodeProto, inits: Mapping[str, np.ndarray]) -> np.ndarray:
    """The float32 weight ``[N, K]`` a written ``MatMul`` (float), ``DequantizeLinear`` or ``MatMulNBits`` node
    multiplies by, computed from the file's initializers and the node's own attributes."""
    if node.op_type == "MatMul":
        return np.asarray(inits[node.input[1]], dtype=np.float32).T.copy()
    if node.op_type == "DequantizeLinear":
        codes, scale = inits[node.input[0]], inits[node.input[1]].astype(np.float32)
        zp = inits[node.input[2]] if len(node.input) > 2 and node.input[2] else np.zeros_like(scale, codes.dtype)
        axis = int(_attrs(node).get("axis", 1))
        shape = [1] * codes.ndim
        if scale.ndim == 1:
            shape[axis] = -1
        w_t = (codes.astype(np.float32) - zp.astype(np.float32).reshape(shape)) * scale.reshape(shape)
        return w_t.T.copy()
    if node.op_type == "MatMulNBits":
        a = _attrs(node)
        k, n, bs = int(a["K"]), int(a["N"]), int(a["block_size"])
        B, scales = inits[node.input[1]], inits[node.input[2]]
        zps = inits[node.input[3]] if len(node.input) > 3 and node.input[3] else None
        check_matmulnbits(B, scales, zps, k, n, bs, int(a.get("bits", 4)))
        nb = k // bs
        z = np.full((n, nb), 8, np.uint8) if zps is None else unpack_zero_points(zps, n, nb)
        u = unpack_nibbles(B).reshape(n, nb, bs).astype(np.float32)
        w = (u - z[..., None].astype(np.float32)) * scales.reshape(n, nb, 1)
        return w.reshape(n, k)
    raise ValueError(f"node {node.name!r} is a {node.op_type}; expected MatMul, DequantizeLinear or MatMulNBits")

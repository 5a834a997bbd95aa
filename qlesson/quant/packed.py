"""Quantize a whole ``nn.Module`` at a chosen plan, with real packed codes (not fake-quant).

Introduced in lesson 11. A :class:`Scheme` says how one Linear weight ``[out, in]`` is stored
(``int4-g128``: 4-bit codes, one fp16 scale per 128 inputs of a row); a *plan* gives every Linear a
scheme or leaves it float; :func:`quantize_model` swaps the planned ``nn.Linear`` layers for
:class:`QuantLinear` modules that hold exactly what a checkpoint would hold, and :func:`save_packed`
writes them to safetensors.

**What is stored** (``QuantLinear`` buffers; shapes for a weight ``[N, K]``):

=============  ==========================================================================  =====================
buffer         content                                                                     shape
=============  ==========================================================================  =====================
``codes``      8 bits: ``int8`` q (symmetric) or ``uint8`` q (asymmetric), one per byte;   ``[N, K]``
               fewer bits: ``uint8`` bytes, each row a bit stream (below)                  ``[N, ceil(K*b/8)]``
``scale``      ``scheme.scale_dtype`` (fp16 by default)                                    ``()``, ``[N]`` or
                                                                                           ``[N, K // g]``
``zero_point`` asymmetric only: ``uint8``, one byte per scale                              as ``scale``
``bias``       the Linear's bias, as it was (dtype unchanged)                              ``[N]``
=============  ==========================================================================  =====================

**Codes.** Symmetric schemes use the course's restricted signed range ``q in [-(2**(b-1)-1), 2**(b-1)-1]``
(int4: [-7, 7]) with zero point 0; asymmetric ones use unsigned ``q in [0, 2**b - 1]`` with a stored zero
point (``quantize(..., symmetric=False, signed=False)``). Below 8 bits every code is stored unsigned:
symmetric codes are offset by ``2**(b-1)`` (int4: nibble = q + 8, the convention of ONNX Runtime's
MatMulNBits and of compressed-tensors), asymmetric ones are stored as they are.

**Packing order** (every width below 8): each row is one bit stream, least significant bit first: code
``k`` of a row occupies bits ``k*b .. k*b + b - 1`` of the row, counting from bit 0 of byte 0, and a row
that does not fill its last byte is padded with zero bits. For 4 bits that is "low nibble first": byte
``j`` holds code ``2j`` in its low nibble and code ``2j + 1`` in its high nibble; for 2 bits, four codes
per byte from the low bits up; for 3, 5, 6 and 7 bits codes straddle bytes.

**The stored-scale rule.** The scale is computed as :func:`qlesson.quant.quantize` computes it, then
rounded to ``scale_dtype`` (and raised to that dtype's smallest normal number if it would fall below it:
never a subnormal scale), and the codes are computed against *that* stored scale,
``q = clamp(round(w / scale) + zero_point)``. So dequantizing the file reproduces exactly the weight
:func:`simulate` gives; the asymmetric zero point is the one ``quantize`` fits (0.0 stays exact).

**Bits per weight** count codes, scales and zero points; the bias is excluded (it is float in every
format and does not grow with the weight).

>>> s = Scheme.parse("int4-g128")
>>> s, s.bits, s.granularity
(Scheme('int4-g128'), 4, PerGroup(group_size=128, axis=-1))
>>> layer = QuantLinear.from_linear(torch.nn.Linear(256, 3), s)
>>> layer.codes.shape, layer.scale.shape, layer.scale.dtype, layer.bits_per_weight
(torch.Size([3, 128]), torch.Size([3, 2]), torch.float16, 4.125)
>>> pack_codes(torch.tensor([[1, 2, 15, 0]]), 4).tolist()  # low nibble first: 0x21, 0x0f
[[33, 15]]
"""

from __future__ import annotations

import copy
import fnmatch
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from qlesson.quant.granularity import Granularity, PerChannel, PerGroup, PerTensor, scale_shape, to_blocks
from qlesson.quant.quantize import QTensor, compute_qparams, qrange, quantize

MIN_BITS, MAX_BITS = 2, 8
FORMAT = "qlesson-packed/1"
_SCALE_DTYPES = {torch.float16: "", torch.bfloat16: "-bf16", torch.float32: "-fp32"}
_SPELLING = re.compile(r"int(?P<bits>\d+)-(?P<gran>tensor|channel|g(?P<g>\d+))(?P<asym>-asym)?(?P<sd>-bf16|-fp32)?")
SPELLINGS = (
    "int<b>-tensor, int<b>-channel or int<b>-g<size> for b = 2..8, optionally followed by -asym and then "
    "by -bf16 or -fp32 (scales stored in that dtype instead of fp16): e.g. int8-tensor, int8-channel, int4-g32, "
    "int4-g128-asym, int3-g64"
)


@dataclass(frozen=True)
class Scheme:
    """How one Linear weight ``[out, in]`` is stored: bit width, granularity, symmetry, scale dtype.

    ``PerChannel(0)`` is one scale per output row; ``PerGroup(g)`` cuts each row (the in_features axis)
    into groups of ``g``. ``str(scheme)`` is the short spelling :meth:`parse` reads.

    >>> str(Scheme(8, PerChannel(0))), str(Scheme(4, PerGroup(128), symmetric=False))
    ('int8-channel', 'int4-g128-asym')
    >>> Scheme(9, PerTensor())
    Traceback (most recent call last):
    ...
    ValueError: Scheme(bits=9) is out of range: packed codes have 2 to 8 bits (int2 .. int8)
    """

    bits: int
    granularity: Granularity = field(default_factory=PerTensor)
    symmetric: bool = True
    scale_dtype: torch.dtype = torch.float16

    def __post_init__(self) -> None:
        b = self.bits
        if isinstance(b, bool) or not isinstance(b, int) or not MIN_BITS <= b <= MAX_BITS:
            raise ValueError(f"Scheme(bits={b!r}) is out of range: packed codes have 2 to 8 bits (int2 .. int8)")
        g = self.granularity
        ok = (
            isinstance(g, PerTensor)
            or (isinstance(g, PerChannel) and g.axis in (0, -2))
            or (isinstance(g, PerGroup) and g.axis in (-1, 1) and isinstance(g.group_size, int) and g.group_size > 0)
        )
        if not ok:
            raise ValueError(
                f"Scheme(granularity={g!r}) is not a Linear granularity; use PerTensor(), PerChannel(0) (one scale "
                "per output row) or PerGroup(g) (groups along in_features)"
            )
        if not isinstance(self.symmetric, bool):
            raise ValueError(f"Scheme(symmetric={self.symmetric!r}) must be True or False")
        if self.scale_dtype not in _SCALE_DTYPES:
            raise ValueError(
                f"Scheme(scale_dtype={self.scale_dtype}) is not a scale dtype; use torch.float16, torch.bfloat16 or "
                "torch.float32"
            )

    @classmethod
    def parse(cls, spelling: str | Scheme) -> Scheme:
        """A scheme from its short spelling (a :class:`Scheme` is returned as it is).

        >>> Scheme.parse("int8-channel").granularity, Scheme.parse("int3-g64-asym").symmetric
        (PerChannel(axis=0), False)
        >>> Scheme.parse("int4-g128-fp32").scale_dtype
        torch.float32
        >>> Scheme.parse("int4_g128")
        Traceback (most recent call last):
        ...
        ValueError: unknown scheme 'int4_g128'; write int<b>-tensor, int<b>-channel or int<b>-g<size> ...
        """
        if isinstance(spelling, Scheme):
            return spelling
        m = _SPELLING.fullmatch(spelling) if isinstance(spelling, str) else None
        if m is None:
            raise ValueError(f"unknown scheme {spelling!r}; write {SPELLINGS}")
        gran: Granularity
        if m["gran"] == "tensor":
            gran = PerTensor()
        elif m["gran"] == "channel":
            gran = PerChannel(0)
        else:
            gran = PerGroup(int(m["g"]))
        dtype = {v: k for k, v in _SCALE_DTYPES.items()}[m["sd"] or ""]
        return cls(int(m["bits"]), gran, symmetric=m["asym"] is None, scale_dtype=dtype)

    def __str__(self) -> str:
        g = self.granularity
        gran = "tensor" if isinstance(g, PerTensor) else "channel" if isinstance(g, PerChannel) else f"g{g.group_size}"
        return f"int{self.bits}-{gran}{'' if self.symmetric else '-asym'}{_SCALE_DTYPES[self.scale_dtype]}"

    def __repr__(self) -> str:
        return f"Scheme({str(self)!r})"

    @property
    def qrange(self) -> tuple[int, int]:
        """The codes' range: ``(-(2**(b-1)-1), 2**(b-1)-1)`` symmetric, ``(0, 2**b - 1)`` asymmetric."""
        return qrange(self.bits, symmetric=self.symmetric, signed=self.symmetric)

    @property
    def offset(self) -> int:
        """What is added to a code before it is packed: ``2**(b-1)`` for symmetric codes below 8 bits, else 0."""
        return 2 ** (self.bits - 1) if self.symmetric and self.bits < 8 else 0


SchemeLike = Scheme | str
Plan = Scheme | str | Mapping[str, Scheme | str | None]


# ----- packing -------------------------------------------------------------------------------------------------


def pack_codes(u: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack unsigned codes ``[N, K]`` (each in ``[0, 2**bits)``) into ``uint8`` ``[N, ceil(K*bits/8)]``:
    each row a bit stream, least significant bit first (module docstring).

    >>> pack_codes(torch.tensor([[1, 2, 3, 0]]), 2).tolist()  # 1 | 2<<2 | 3<<4 | 0<<6
    [[57]]
    """
    n, k = u.shape
    shifts = torch.arange(bits, dtype=torch.int64)
    stream = ((u.to(torch.int64).unsqueeze(-1) >> shifts) & 1).reshape(n, k * bits)
    stream = F.pad(stream, (0, -(k * bits) % 8))
    return (stream.reshape(n, -1, 8) << torch.arange(8, dtype=torch.int64)).sum(-1).to(torch.uint8)


def unpack_codes(packed: torch.Tensor, bits: int, k: int) -> torch.Tensor:
    """The inverse of :func:`pack_codes`: ``int64`` codes ``[N, k]``.

    >>> unpack_codes(torch.tensor([[57]], dtype=torch.uint8), 2, 4).tolist()
    [[1, 2, 3, 0]]
    """
    n = packed.shape[0]
    stream = (packed.to(torch.int64).unsqueeze(-1) >> torch.arange(8, dtype=torch.int64)) & 1
    stream = stream.reshape(n, -1)[:, : k * bits].reshape(n, k, bits)
    return (stream << torch.arange(bits, dtype=torch.int64)).sum(-1)


def code_bytes(shape: tuple[int, int], bits: int) -> int:
    """Bytes of the packed codes of a weight ``[N, K]``: ``N * ceil(K * bits / 8)``.

    >>> code_bytes((384, 1536), 4), code_bytes((3, 5), 3)
    (294912, 6)
    """
    n, k = shape
    return n * math.ceil(k * bits / 8)


def stored_scale(scale: torch.Tensor, dtype: torch.dtype, name: str = "weight") -> torch.Tensor:
    """``scale`` rounded to ``dtype`` as a checkpoint stores it, never subnormal (raised to ``finfo(dtype).tiny``).

    >>> stored_scale(torch.tensor([0.1, 1e-9]), torch.float16).tolist()
    [0.0999755859375, 6.103515625e-05]
    """
    s = scale.to(dtype)
    if not bool(torch.isfinite(s).all()):
        raise ValueError(
            f"{name}: a scale of {float(scale.max()):.6g} overflows {dtype} (largest {torch.finfo(dtype).max:.6g}); "
            "store the scales in float32 (a '-fp32' scheme, scale_dtype=torch.float32)"
        )
    return s.clamp_min(torch.finfo(dtype).tiny)


# ----- one layer -----------------------------------------------------------------------------------------------


def _check_weight(w: torch.Tensor, scheme: Scheme, name: str) -> None:
    if w.ndim != 2:
        raise ValueError(f"{name}: expected a Linear weight [out, in], got shape {tuple(w.shape)}")
    if not bool(torch.isfinite(w).all()):
        bad = w[~torch.isfinite(w)][0].item()
        raise ValueError(f"{name}: the weight holds {bad} (not finite); fix or reload the checkpoint before quantizing")
    g = scheme.granularity
    if isinstance(g, PerGroup) and w.shape[1] % g.group_size:
        k, size = w.shape[1], g.group_size
        fits = [d for d in (16, 32, 64, 128, 256) if k % d == 0]
        raise ValueError(
            f"{name}: group size g={size} does not divide in_features K={k}; pick a group size that divides {k}"
            + (f" (e.g. {', '.join(map(str, fits))})" if fits else "")
            + ", or plan this layer with int<b>-channel or leave it float"
        )


def _qparams(w: torch.Tensor, scheme: Scheme, name: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Stored scale (``scale_dtype``, compact shape) and zero point (uint8, asymmetric only) of ``w``."""
    scale, zp = compute_qparams(w, scheme.bits, scheme.granularity, symmetric=scheme.symmetric, signed=scheme.symmetric)
    compact = scale_shape(scheme.granularity, w.shape)
    zero_point = None if scheme.symmetric else zp.reshape(compact).to(torch.uint8)
    return stored_scale(scale.reshape(compact), scheme.scale_dtype, name), zero_point


def _as_blocks(t: torch.Tensor, scheme: Scheme) -> torch.Tensor:
    """``[N, K]`` as ``[N, G, g]`` (per-group), ``[N, 1, K]`` (per-channel) or ``[1, 1, N*K]`` (per-tensor)."""
    g = scheme.granularity
    n, k = t.shape
    if isinstance(g, PerGroup):
        return t.reshape(n, k // g.group_size, g.group_size)
    return t.reshape(n, 1, k) if isinstance(g, PerChannel) else t.reshape(1, 1, n * k)


def _per_block(t: torch.Tensor) -> torch.Tensor:
    """A compact scale/zero point (``()``, ``[N]`` or ``[N, G]``) as ``[., ., 1]`` against :func:`_as_blocks`."""
    return t.reshape(1, 1, 1) if t.ndim == 0 else t.reshape(t.shape[0], -1, 1)


class QuantLinear(nn.Module):
    """A Linear layer holding packed integer codes, stored scales and zero points (module docstring).

    ``weight()`` dequantizes to float32 ``[out, in]``; ``forward(x)`` is ``F.linear(x, weight().to(x.dtype), bias)``.
    """

    def __init__(
        self,
        scheme: Scheme,
        shape: tuple[int, int],
        codes: torch.Tensor,
        scale: torch.Tensor,
        zero_point: torch.Tensor | None,
        bias: torch.Tensor | None,
        name: str = "layer",
    ) -> None:
        super().__init__()
        self.scheme, self.name = scheme, name
        self.out_features, self.in_features = int(shape[0]), int(shape[1])
        _check_buffers(scheme, (self.out_features, self.in_features), codes, scale, zero_point, bias, name)
        self.register_buffer("codes", codes)
        self.register_buffer("scale", scale)
        self.register_buffer("zero_point", zero_point)
        self.register_buffer("bias", bias)

    @classmethod
    def from_linear(cls, linear: nn.Module, scheme: SchemeLike, name: str = "layer") -> QuantLinear:
        """Quantize ``linear.weight`` (in float32) at ``scheme`` and pack it; the bias is kept as it is."""
        if not isinstance(linear, nn.Linear):
            raise ValueError(
                f"{name}: QuantLinear.from_linear needs an nn.Linear, got {type(linear).__name__}; plan only Linear "
                "layers"
            )
        scheme = Scheme.parse(scheme)
        w = linear.weight.detach().to(torch.float32)
        _check_weight(w, scheme, name)
        scale, zero_point = _qparams(w, scheme, name)
        s = _per_block(scale.to(torch.float32))
        q = torch.div(_as_blocks(w, scheme), s).round_()
        if zero_point is not None:
            q.add_(_per_block(zero_point.to(torch.float32)))
        q = q.clamp_(*scheme.qrange).reshape(w.shape).to(torch.int64)
        if scheme.bits == 8:
            codes = q.to(torch.int8 if scheme.symmetric else torch.uint8)
        else:
            codes = pack_codes(q + scheme.offset, scheme.bits)
        bias = None if linear.bias is None else linear.bias.detach().clone()
        return cls(scheme, tuple(w.shape), codes, scale, zero_point, bias, name)

    def int_codes(self) -> torch.Tensor:
        """The codes ``q`` as ``int64`` ``[out, in]`` (symmetric: signed; asymmetric: unsigned)."""
        if self.scheme.bits == 8:
            return self.codes.to(torch.int64)
        return unpack_codes(self.codes, self.scheme.bits, self.in_features) - self.scheme.offset

    def weight(self) -> torch.Tensor:
        """The dequantized weight ``(q - zero_point) * scale``, float32 ``[out, in]``."""
        q = _as_blocks(self.int_codes().to(torch.float32), self.scheme)
        if self.zero_point is not None:
            q = q - _per_block(self.zero_point.to(torch.float32))
        return (q * _per_block(self.scale.to(torch.float32))).reshape(self.out_features, self.in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight().to(x.dtype), self.bias)

    def nbytes(self) -> dict[str, int]:
        """Bytes of each stored buffer: ``codes``, ``scales``, ``zero_points`` (0 if symmetric), ``bias``."""

        def size(t: torch.Tensor | None) -> int:
            return 0 if t is None else t.numel() * t.element_size()

        return {
            "codes": size(self.codes),
            "scales": size(self.scale),
            "zero_points": size(self.zero_point),
            "bias": size(self.bias),
        }

    @property
    def bits_per_weight(self) -> float:
        """(codes + scales + zero points) bits per weight element; the bias is excluded."""
        b = self.nbytes()
        return (b["codes"] + b["scales"] + b["zero_points"]) * 8 / (self.out_features * self.in_features)

    def extra_repr(self) -> str:
        return f"{self.name!r}, in_features={self.in_features}, out_features={self.out_features}, scheme={self.scheme}"


def _expected(scheme: Scheme, shape: tuple[int, int]) -> dict[str, tuple[torch.dtype, tuple[int, ...]] | None]:
    n, k = shape
    codes_dtype = torch.int8 if scheme.bits == 8 and scheme.symmetric else torch.uint8
    compact = scale_shape(scheme.granularity, shape)
    return {
        "codes": (codes_dtype, (n, k) if scheme.bits == 8 else (n, math.ceil(k * scheme.bits / 8))),
        "scale": (scheme.scale_dtype, compact),
        "zero_point": None if scheme.symmetric else (torch.uint8, compact),
    }


def _check_buffers(
    scheme: Scheme,
    shape: tuple[int, int],
    codes: torch.Tensor,
    scale: torch.Tensor,
    zero_point: torch.Tensor | None,
    bias: torch.Tensor | None,
    name: str,
) -> None:
    """Each buffer has the dtype and shape ``scheme`` implies for a weight of ``shape``; else a ValueError."""
    if isinstance(scheme.granularity, PerGroup) and shape[1] % scheme.granularity.group_size:
        raise ValueError(
            f"{name}: group size g={scheme.granularity.group_size} does not divide in_features K={shape[1]}; "
            "the file's scheme does not fit this layer"
        )
    given = {"codes": codes, "scale": scale, "zero_point": zero_point}
    for key, want in _expected(scheme, shape).items():
        t = given[key]
        if want is None and t is not None:
            raise ValueError(f"{name}: a symmetric scheme ({scheme}) stores no zero_point, but one was given")
        if want is not None and (t is None or t.dtype != want[0] or tuple(t.shape) != want[1]):
            got = "nothing" if t is None else f"{t.dtype} {tuple(t.shape)}"
            raise ValueError(
                f"{name}: {key} should be {want[0]} {want[1]} for scheme {scheme} and weight {shape}, got {got}"
            )
    if bias is not None and tuple(bias.shape) != (shape[0],):
        raise ValueError(f"{name}: bias should have shape ({shape[0]},), got {tuple(bias.shape)}")


def simulate(w: torch.Tensor, scheme: SchemeLike) -> torch.Tensor:
    """The fake-quantized weight (float32) that a :class:`QuantLinear` of ``scheme`` dequantizes to.

    Computed without the packing path: the course's :func:`qlesson.quant.quantize` gives the scale and zero
    point, the scale is rounded as stored (:func:`stored_scale`), the codes are recomputed against it and
    :meth:`QTensor.dequantize` reads them back.

    >>> w = torch.tensor([[0.1, -0.7, 0.35, 0.0]])
    >>> simulate(w, "int4-tensor").tolist() == QuantLinear.from_linear(_linear(w), "int4-tensor").weight().tolist()
    True
    """
    scheme = Scheme.parse(scheme)
    w = torch.as_tensor(w).detach().to(torch.float32)
    _check_weight(w, scheme, "weight")
    qt = quantize(w, scheme.bits, granularity=scheme.granularity, symmetric=scheme.symmetric, signed=scheme.symmetric)
    scale = stored_scale(qt.scale, scheme.scale_dtype).to(torch.float32)
    grid = [n for s in to_blocks(w, scheme.granularity).shape[::2] for n in (s, 1)]
    q = torch.round(to_blocks(w, scheme.granularity) / scale.reshape(grid)) + qt.zero_point.reshape(grid)
    q = q.clamp(*scheme.qrange).reshape(w.shape).to(torch.int32)
    return QTensor(q, scale, qt.zero_point, scheme.bits, scheme.granularity, scheme.symmetric).dequantize()


def _linear(w: torch.Tensor) -> nn.Linear:
    """An ``nn.Linear`` without bias holding ``w`` (for examples)."""
    lin = nn.Linear(w.shape[1], w.shape[0], bias=False)
    with torch.no_grad():
        lin.weight.copy_(w)
    return lin


# ----- plans and whole models ----------------------------------------------------------------------------------

_BERT = {
    "attention.self.query": "query",
    "attention.self.key": "key",
    "attention.self.value": "value",
    "attention.output.dense": "attention output",
    "intermediate.dense": "intermediate",
    "output.dense": "output",
}


def layer_name(module_path: str) -> str:
    """The course's short name of a Linear module path (``L3.query``, ``L0.attention output``, ``pooler``);
    a path that is not a BERT Linear is returned as it is.

    >>> layer_name("0.auto_model.encoder.layer.3.attention.output.dense"), layer_name("0.auto_model.pooler.dense")
    ('L3.attention output', 'pooler')
    >>> layer_name("head.proj")
    'head.proj'
    """
    m = re.search(r"layer\.(\d+)\.(.+)$", module_path)
    if m and m.group(2) in _BERT:
        return f"L{m.group(1)}.{_BERT[m.group(2)]}"
    return "pooler" if module_path.endswith("pooler.dense") else module_path


def linear_layers(model: nn.Module) -> dict[str, tuple[str, nn.Linear]]:
    """``{short name: (module path, module)}`` of every ``nn.Linear`` of ``model``, in model order."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"expected an nn.Module (e.g. load_minilm()), got {type(model).__name__}")
    found: dict[str, tuple[str, nn.Linear]] = {}
    for path, m in model.named_modules():
        if isinstance(m, nn.Linear):
            short = layer_name(path)
            if short in found:
                raise ValueError(f"two Linear layers share the name {short!r}: {found[short][0]} and {path}")
            found[short] = (path, m)
    if not found:
        raise ValueError(f"{type(model).__name__} has no nn.Linear layer to quantize")
    return found


def resolve_plan(model_or_names: nn.Module | Iterable[str], plan: Plan) -> dict[str, Scheme | None]:
    """The scheme of every Linear layer (``None``: stays float).

    ``plan`` is one scheme (or spelling) for every Linear, or a dict ``{pattern: scheme, spelling or "float"}``
    whose patterns are fnmatch globs over the short names (``L3.query``, ``L*.intermediate``, ``*``); the first
    matching pattern wins and unmatched layers stay float.

    >>> names = ["L0.query", "L0.intermediate", "L1.query", "L1.intermediate", "pooler"]
    >>> {k: str(v) for k, v in resolve_plan(names, {"L*.intermediate": "int4-g32", "pooler": "float",
    ...                                             "*": "int4-g128"}).items()}
    {'L0.query': 'int4-g128', 'L0.intermediate': 'int4-g32', 'L1.query': 'int4-g128', 'L1.intermediate': 'int4-g32', \
'pooler': 'None'}
    >>> resolve_plan(names, {"L*.key": "int8-channel"})
    Traceback (most recent call last):
    ...
    ValueError: plan pattern 'L*.key' matches no layer; the layers are L0.query, L0.intermediate, ...
    """
    names = list(linear_layers(model_or_names)) if isinstance(model_or_names, nn.Module) else list(model_or_names)
    if not isinstance(plan, Mapping):
        scheme = Scheme.parse(plan)
        return dict.fromkeys(names, scheme)
    if not plan:
        raise ValueError('the plan is empty; give a scheme such as "int4-g128", or {"*": "int4-g128"}')
    rules = []
    for pattern, value in plan.items():
        if not isinstance(pattern, str) or not any(fnmatch.fnmatchcase(n, pattern) for n in names):
            raise ValueError(f"plan pattern {pattern!r} matches no layer; the layers are {', '.join(names)}")
        rules.append((pattern, None if value is None or value == "float" else Scheme.parse(value)))
    out: dict[str, Scheme | None] = {}
    for n in names:
        out[n] = next((s for p, s in rules if fnmatch.fnmatchcase(n, p)), None)
    return out


def quantize_model(model: nn.Module, plan: Plan) -> nn.Module:
    """A deep copy of ``model`` with every planned Linear replaced by a :class:`QuantLinear`; ``model`` is untouched.

    Every planned layer is checked (group size, finite weights) before any is quantized.
    """
    layers = linear_layers(model)
    schemes = resolve_plan(list(layers), plan)
    for short, scheme in schemes.items():
        if scheme is not None:
            _check_weight(layers[short][1].weight.detach(), scheme, short)
    qmodel = copy.deepcopy(model)
    for short, (path, linear) in linear_layers(qmodel).items():
        if schemes[short] is not None:
            _replace(qmodel, path, QuantLinear.from_linear(linear, schemes[short], name=short))
    return qmodel


def _replace(model: nn.Module, path: str, new: nn.Module) -> None:
    parent, _, child = path.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, new)


def quant_layers(qmodel: nn.Module) -> dict[str, tuple[str, QuantLinear]]:
    """``{short name: (module path, QuantLinear)}`` of a quantized model, in model order."""
    return {m.name: (path, m) for path, m in qmodel.named_modules() if isinstance(m, QuantLinear)}


def dequantized_weights(qmodel: nn.Module) -> dict[str, torch.Tensor]:
    """``{short name: float32 [out, in]}``: what every QuantLinear of ``qmodel`` dequantizes to (the simulation's
    input, :func:`qlesson.engines.common.reference_embeddings`)."""
    found = {short: m.weight() for short, (_, m) in quant_layers(qmodel).items()}
    if not found:
        raise ValueError("the model holds no QuantLinear layer; quantize it first with quantize_model(model, plan)")
    return found


def nbytes_table(qmodel: nn.Module) -> list[dict[str, object]]:
    """One row per QuantLinear of ``qmodel``: name, scheme, shape, the bytes of each stored buffer and bits per
    weight (bias excluded), the table lesson 11 sets beside lesson 04's :func:`qlesson.quant.footprint`.

    >>> qm = quantize_model(nn.Sequential(nn.Linear(256, 8)), "int4-g128-asym")
    >>> nbytes_table(qm)
    [{'name': '0', 'scheme': 'int4-g128-asym', 'shape': (8, 256), 'codes': 1024, 'scales': 32, 'zero_points': 16, \
'bias': 32, 'bits_per_weight': 4.1875}]
    """
    rows = [
        {"name": short, "scheme": str(m.scheme), "shape": (m.out_features, m.in_features), **m.nbytes(),
         "bits_per_weight": m.bits_per_weight}
        for short, (_, m) in quant_layers(qmodel).items()
    ]  # fmt: skip
    if not rows:
        raise ValueError("the model holds no QuantLinear layer; quantize it first with quantize_model(model, plan)")
    return rows


def plan_bits(model: nn.Module, plan: Plan, *, float_bits: int = 16) -> float:
    """Bits per Linear weight element over the whole planned model: codes, scales and zero points included
    (biases excluded), layers left float counted at ``float_bits`` (16: fp16/bf16 as a checkpoint ships them).

    Exact: the same bytes :meth:`QuantLinear.nbytes` reports, from the shapes alone.

    >>> plan_bits(nn.Sequential(nn.Linear(256, 8), nn.Linear(8, 256)), {"0": "int4-g128", "1": "float"})
    10.0625
    """
    layers = linear_layers(model)
    total_bits, numel = 0, 0
    for short, scheme in resolve_plan(list(layers), plan).items():
        shape = tuple(layers[short][1].weight.shape)
        numel += math.prod(shape)
        if scheme is None:
            total_bits += math.prod(shape) * float_bits
            continue
        _check_weight(layers[short][1].weight.detach(), scheme, short)
        scales = math.prod(scale_shape(scheme.granularity, shape))
        zp = 0 if scheme.symmetric else scales
        total_bits += 8 * (code_bytes(shape, scheme.bits) + scales * scheme.scale_dtype.itemsize + zp)
    return total_bits / numel


# ----- files ---------------------------------------------------------------------------------------------------


def save_packed(qmodel: nn.Module, path: str | Path) -> None:
    """Write every QuantLinear's buffers to a safetensors file (``<module path>.codes``, ``.scale``,
    ``.zero_point``, ``.bias``), with each layer's scheme and shape in its metadata."""
    from safetensors.torch import save_file

    layers = quant_layers(qmodel)
    if not layers:
        raise ValueError("the model holds no QuantLinear layer; quantize it first with quantize_model(model, plan)")
    tensors, meta = {}, {}
    for short, (mpath, m) in layers.items():
        meta[mpath] = {"name": short, "scheme": str(m.scheme), "shape": [m.out_features, m.in_features]}
        for key in ("codes", "scale", "zero_point", "bias"):
            t = getattr(m, key)
            if t is not None:
                tensors[f"{mpath}.{key}"] = t.contiguous()
    save_file(tensors, str(path), metadata={"format": FORMAT, "layers": json.dumps(meta)})


def load_packed(path: str | Path, base_model: nn.Module) -> nn.Module:
    """A deep copy of ``base_model`` with the layers stored in ``path`` rebuilt as :class:`QuantLinear`, bit for bit.

    A layer the file names but the model lacks, a shape or a scheme that does not fit, or a buffer of the wrong
    dtype or shape is a ValueError naming the layer.
    """
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path} is not a qlesson packed file (format {meta.get('format')!r}, want {FORMAT!r})")
        stored = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iterator)
    qmodel = copy.deepcopy(base_model)
    modules = dict(qmodel.named_modules())
    for mpath, info in json.loads(meta["layers"]).items():
        short = info["name"]
        linear = modules.get(mpath)
        if not isinstance(linear, nn.Linear):
            raise ValueError(f"{short} ({mpath}): the file holds this layer but the model has no Linear there")
        if list(linear.weight.shape) != info["shape"]:
            raise ValueError(
                f"{short}: the file's weight is {tuple(info['shape'])} but the model's is {tuple(linear.weight.shape)}"
            )
        if (linear.bias is None) != (f"{mpath}.bias" not in stored):
            raise ValueError(f"{short}: the file and the model disagree on whether the layer has a bias")
        buffers = {k: stored.get(f"{mpath}.{k}") for k in ("codes", "scale", "zero_point", "bias")}
        try:
            scheme = Scheme.parse(info["scheme"])
        except ValueError as err:
            raise ValueError(f"{short}: {err}") from None
        _replace(qmodel, mpath, QuantLinear(scheme, tuple(info["shape"]), **buffers, name=short))
    return qmodel

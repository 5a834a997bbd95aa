"""MiniLM as a compressed-tensors ``pack-quantized`` checkpoint, with qlesson's own codes and scales.

Introduced in lesson 11. :func:`export_ct` writes ``model.safetensors`` + ``config.json`` the way llm-compressor
writes a quantized ``BertModel``: every encoder Linear ``W [out, in]`` becomes ``<name>.weight_packed`` (int32
``[out, in * bits / 32]``), ``<name>.weight_scale`` (``[out, in / g]`` for ``group``, ``[out, 1]`` for ``channel``)
and ``<name>.weight_shape`` (int64 ``[2]``); ``quantization_config`` names the scheme. The pooler stays float
(``ignore``), as MiniLM's mean-pooled embedding does not use it.

The format, read in compressed-tensors 0.20 (``compressors/pack_quantized/``):

- packing: ``pack_to_int32`` adds ``2**(bits-1)`` (8 for int4) and packs 32 consecutive values of a row densely
  into ``bits`` int32 words, element ``i`` at bit ``i * bits``: for int4 the first value is the *low* nibble.
- its own symmetric scale (``quantization/utils/helpers.py: calculate_qparams``): ``absmax / ((q_max - q_min) / 2)``
  with the full range ``[-8, 7]``, i.e. ``absmax / 7.5`` (int8: ``absmax / 127.5``, range ``[-128, 127]``).
  qlesson's symmetric scale is ``absmax / 7`` with codes in ``[-7, 7]`` (int8: ``/ 127``): codes that fit the
  format, so the file holds exactly qlesson's codes; :func:`compare_group` shows the difference on one group.

``deq`` is read back from the written file through compressed-tensors' own ``PackedQuantizationCompressor
.decompress`` (CPU, no GPU). The engine run is :func:`ct_embeddings`: transformers' ``BertModel.from_pretrained``
of the folder (offline, CPU, ``CompressedTensorsConfig(dequantize=True)``), float32, mean pooled. It matches the
float64 simulation with ``deq`` to float32 noise; the int4 "run compressed" kernels need a GPU and are not used.

>>> scheme_for("int4-g128")["weights"]["group_size"], scheme_for("int8-channel")["weights"]["strategy"]
(128, 'channel')
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from qlesson.engines.common import EVAL_SENTENCES, bert_of, hf_name, tokenize
from qlesson.quant import PerChannel, PerGroup, quantize

PLANS = ("int4-g128", "int4-g32", "int8-channel")
FORMAT = "pack-quantized"
_KINDS = ("query", "key", "value", "attention output", "intermediate", "output")


def short_names(n_layers: int = 6) -> list[str]:
    """The encoder Linear short names a checkpoint quantizes.

    >>> short_names()[:2], len(short_names())
    (['L0.query', 'L0.key'], 36)
    """
    return [f"L{i}.{k}" for i in range(n_layers) for k in _KINDS]


def scheme_for(plan: str) -> dict[str, Any]:
    """The ``config_groups`` entry (targets ``Linear``) of a plan: ``int4-g<g>`` or ``int8-channel``."""
    if plan not in PLANS:
        raise ValueError(f"plan {plan!r} is not one of {PLANS}")
    if plan == "int8-channel":
        weights = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "group_size": None}
    else:
        weights = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": int(plan[6:])}
    weights |= {"dynamic": False, "observer": "minmax", "block_structure": None, "actorder": None}
    return {
        "targets": ["Linear"],
        "weights": weights,
        "input_activations": None,
        "output_activations": None,
        "format": FORMAT,
    }


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_ct` wrote: the folder, the safetensors size, the plan, the float32 weights it holds."""

    folder: Path
    size_bytes: int
    plan: str
    deq: dict[str, torch.Tensor]


def export_ct(model: Any, folder: str | os.PathLike[str], plan: str) -> ExportResult:
    """Write ``model`` (``load_minilm()``) as a compressed-tensors checkpoint at ``plan`` into ``folder``."""
    from safetensors.torch import save_file

    scheme = scheme_for(plan)
    wargs = scheme["weights"]
    bits = wargs["num_bits"]
    gran = PerGroup(wargs["group_size"]) if wargs["strategy"] == "group" else PerChannel(0)
    bert = bert_of(model)
    names = {hf_name(s): s for s in short_names(bert.config.num_hidden_layers)}
    tensors: dict[str, torch.Tensor] = {}
    for name, p in bert.state_dict().items():
        module = name.rsplit(".", 1)[0]
        if module in names and name.endswith(".weight"):
            w = p.detach().to(torch.float32)
            if wargs["strategy"] == "group" and w.shape[1] % wargs["group_size"]:
                raise ValueError(f"{module}: in_features {w.shape[1]} is not divisible by group {wargs['group_size']}")
            qt = quantize(w, bits, granularity=gran, symmetric=True)
            tensors.update(_packed(module, qt.q.to(torch.int8), qt.scale.to(torch.float32), bits, tuple(w.shape)))
        elif not name.endswith("position_ids"):
            tensors[name] = p.detach().to(torch.float32).contiguous()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    cfg = bert.config.to_dict()
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "format": FORMAT,
        "quantization_status": "compressed",
        "config_groups": {"group_0": scheme},
        "ignore": ["pooler.dense"],
        "kv_cache_scheme": None,
    }
    (folder / "config.json").write_text(json.dumps(cfg, indent=2, default=str))
    return ExportResult(folder, (folder / "model.safetensors").stat().st_size, plan, read_ct(folder))


def _packed(module: str, q: torch.Tensor, scale: torch.Tensor, bits: int, shape: tuple[int, int]) -> dict:
    from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32

    return {
        f"{module}.weight_packed": pack_to_int32(q, bits),
        f"{module}.weight_scale": scale.reshape(shape[0], -1).contiguous(),
        f"{module}.weight_shape": torch.tensor(shape, dtype=torch.int64),
    }


def _config(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    qc = json.loads((folder / "config.json").read_text()).get("quantization_config")
    if not qc or qc.get("format") != FORMAT:
        got = None if not qc else qc.get("format")
        raise ValueError(f"{folder}: quantization_config format {got!r} is not {FORMAT!r}; write it with export_ct")
    groups = list(qc["config_groups"].values())
    if len(groups) != 1 or groups[0].get("format", FORMAT) != FORMAT:
        raise ValueError(f"{folder}: expected one config group of format {FORMAT!r}, got {groups}")
    return qc, groups[0]


def check_ct(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Check a written checkpoint before compressed-tensors reads it; return its weight args.

    Raises ``ValueError`` naming the tensor and the fix for: an unknown format string, a group size that does not
    divide ``in_features``, a ``weight_packed`` shape that does not match ``weight_shape``, a ``weight_scale``
    shape that does not match the strategy."""
    from safetensors.torch import load_file

    folder = Path(folder)
    _, group = _config(folder)
    w = group["weights"]
    bits, strategy, g = w["num_bits"], w["strategy"], w.get("group_size")
    if strategy not in ("group", "channel"):
        raise ValueError(f"weights strategy {strategy!r}: qlesson writes 'group' or 'channel' only")
    sd = load_file(str(folder / "model.safetensors"))
    for key in [k for k in sd if k.endswith(".weight_packed")]:
        m = key[: -len(".weight_packed")]
        n, k = (int(v) for v in sd[f"{m}.weight_shape"].tolist())
        packed, scale = sd[key], sd[f"{m}.weight_scale"]
        if strategy == "group" and (not g or k % g):
            raise ValueError(f"{m}: group_size {g} does not divide in_features {k}; use a group size dividing {k}")
        want_p = (n, -(-k * bits // 32))
        if packed.dtype != torch.int32 or tuple(packed.shape) != want_p:
            raise ValueError(
                f"{m}.weight_packed is {packed.dtype} {tuple(packed.shape)}; weight_shape {(n, k)} at {bits} bits "
                f"needs int32 {want_p}: repack with pack_to_int32 or fix weight_shape"
            )
        want_s = (n, k // g) if strategy == "group" else (n, 1)
        if tuple(scale.shape) != want_s:
            raise ValueError(
                f"{m}.weight_scale has shape {tuple(scale.shape)}; strategy {strategy!r} (group_size {g}) "
                f"needs {want_s}: one scale per {'group of each row' if strategy == 'group' else 'output row'}"
            )
    return w


def read_ct(folder: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """The float32 ``[out, in]`` Linear weights the checkpoint holds (short names), dequantized by
    compressed-tensors' own ``PackedQuantizationCompressor.decompress``, after :func:`check_ct`."""
    from compressed_tensors.compressors.pack_quantized import PackedQuantizationCompressor
    from compressed_tensors.quantization import QuantizationScheme
    from safetensors.torch import load_file

    folder = Path(folder)
    check_ct(folder)
    scheme = QuantizationScheme.model_validate(_config(folder)[1])
    sd = load_file(str(folder / "model.safetensors"))
    out = {}
    for key in [k for k in sd if k.endswith(".weight_packed")]:
        m = key[: -len(".weight_packed")]
        local = {p: sd[f"{m}.{p}"] for p in ("weight_packed", "weight_scale", "weight_shape")}
        out[_short(m)] = PackedQuantizationCompressor.decompress(local, scheme)["weight"].to(torch.float32)
    return out


def _short(module: str) -> str:
    from qlesson.engines.common import short_of

    return short_of(module)


def compare_group(w: torch.Tensor, bits: int = 4, group: int = 128, row: int = 0) -> dict[str, Any]:
    """qlesson's and compressed-tensors' own symmetric codes and scale for the first group of ``w[row]``.

    compressed-tensors' scale is ``absmax / 7.5`` (range ``[-8, 7]``), qlesson's ``absmax / 7`` (``[-7, 7]``):
    ``scale_ratio`` is 7.5 / 7 for int4 and 127.5 / 127 for int8, and the codes differ where that shifts a
    rounding.

    >>> r = compare_group(torch.linspace(-1, 1, 128).reshape(1, 128))
    >>> round(r["scale_ratio"], 6), r["codes_differ"]  # 7.5 / 7; a quarter of this ramp's codes move
    (1.071429, 32)
    """
    from compressed_tensors.quantization import QuantizationArgs
    from compressed_tensors.quantization.lifecycle.forward import quantize as ct_quantize
    from compressed_tensors.quantization.utils import calculate_qparams

    x = torch.as_tensor(w, dtype=torch.float32)[row : row + 1, :group]
    if x.shape[1] != group:
        raise ValueError(f"w has {x.shape[1]} columns, fewer than group {group}; pass a wider weight")
    qt = quantize(x, bits, granularity=PerGroup(group), symmetric=True)
    args = QuantizationArgs(num_bits=bits, type="int", symmetric=True, strategy="group", group_size=group)
    lo, hi = x.amin(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)
    scale, zp = calculate_qparams(lo, hi, args)
    codes = ct_quantize(x, scale, zp, args, dtype=torch.int8)
    return {
        "qlesson_scale": float(qt.scale.reshape(-1)[0]),
        "ct_scale": float(scale.reshape(-1)[0]),
        "scale_ratio": float(qt.scale.reshape(-1)[0] / scale.reshape(-1)[0]),
        "qlesson_codes": qt.q.reshape(-1).to(torch.int8),
        "ct_codes": codes.reshape(-1),
        "codes_differ": int((qt.q.reshape(-1).to(torch.int8) != codes.reshape(-1)).sum()),
    }


def load_ct(folder: str | os.PathLike[str]) -> torch.nn.Module:
    """The checkpoint as a float32 transformers ``BertModel``, loaded offline on CPU by ``from_pretrained`` with
    compressed-tensors decompressing each Linear (``CompressedTensorsConfig(dequantize=True)``), after
    :func:`check_ct`."""
    import warnings

    from transformers import BertModel, CompressedTensorsConfig

    check_ct(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "the model already has a quantization_config": that is the point
        bm = BertModel.from_pretrained(str(folder), quantization_config=CompressedTensorsConfig(dequantize=True))
    return bm.eval()


def ct_embeddings(model: Any, folder: str | os.PathLike[str], sentences: Sequence[str] = EVAL_SENTENCES) -> Any:
    """Unit-normalised float64 copies of the float32 mean-pooled embeddings the loaded checkpoint (:func:`load_ct`)
    computes for ``sentences``, tokenized by ``model`` (``load_minilm()``)."""
    bm = load_ct(folder)
    t = {k: torch.as_tensor(v) for k, v in tokenize(model, sentences).items()}
    with torch.no_grad():
        h = bm(**t).last_hidden_state
    mask = t["attention_mask"].unsqueeze(-1).to(h.dtype)
    e = (h * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(e, dim=1).double().numpy()

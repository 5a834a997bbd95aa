"""Lesson 08's measurements: every block format on real weights, by name.

A *method* is a string such as ``"Q4_K"``, ``"MXFP4 floor"``, ``"int4 g32"`` or ``"FP8 per-row"``;
``"Q4_K"`` and ``"Q6_K"`` are qlesson's one-pass scales, ``"Q4_K search"`` and ``"Q6_K search"``
llama.cpp's search for them (same bytes per block).
:func:`fake` gives its reconstruction of a weight, :func:`bits_per_weight` its exact storage
(every scale, minimum and tensor scale counted), and :func:`format_table` the rows of the
lesson's table.

K-quants need rows that are a multiple of 256; MiniLM's rows are 384 (or 1536). llama.cpp
falls back to another format for such tensors; here the weight is flattened row-major and
cut into super-blocks of 256, so every sub-block (32 or 16 weights) still lies inside one
row and only an fp16 super-scale spans two rows. The storage is exactly the format's.

>>> w = torch.linspace(-1, 1, 384 * 64).reshape(64, 384)
>>> [round(bits_per_weight(tuple(w.shape), m), 4) for m in ("Q4_K", "MXFP4 floor", "int4 g32", "NVFP4")]
[4.5, 4.25, 4.5, 4.5013]
>>> float((fake(w, "Q6_K") - w).abs().max()) < 0.01
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from qlesson.quant import formats, microscaling
from qlesson.quant.double import double_quantize
from qlesson.quant.footprint import footprint
from qlesson.quant.fp8 import quantize_fp8
from qlesson.quant.granularity import PerChannel, PerGroup
from qlesson.quant.minifloat import e4m3_value
from qlesson.quant.quantize import fake_quantize
from qlesson.teach.studies import EmbeddingScores, sentence_scores

INT = {"int4 per-channel": PerChannel(0), "int4 g128": PerGroup(128), "int4 g32": PerGroup(32)}
MX = {f"MXFP4 {r}": r for r in microscaling.RULES}
KQ_SEARCH = {"Q4_K search": "Q4_K", "Q6_K search": "Q6_K"}  # llama.cpp's scale search (formats.quantize search=True)
METHODS = (
    *INT,
    "int4 g64 double",
    "Q4_0",
    "Q4_1",
    "Q4_K",
    "Q4_K search",
    *MX,
    "NVFP4",
    "Q6_K",
    "Q6_K search",
    "Q8_0",
    "FP8 per-row",
)


def _check(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"method {method!r} is not one of {', '.join(METHODS)}")
    return method


def fake(w: torch.Tensor, method: str) -> torch.Tensor:
    """float32 reconstruction of a 2-D weight ``w`` stored in ``method``."""
    method = _check(method)
    x = w.detach().float()
    if method in INT:
        return fake_quantize(x, 4, granularity=INT[method])
    if method == "int4 g64 double":
        return double_quantize(x, 4, group_size=64, scale_bits=8, scale_group=256).dequantize()
    if method in MX:
        return torch.from_numpy(microscaling.quantize_mx(x.numpy(), MX[method]).values())
    if method == "FP8 per-row":
        return quantize_fp8(x, PerChannel(0)).dequantize()
    a = x.numpy()
    if method.endswith("_K") or method in KQ_SEARCH:  # flattened into super-blocks of 256, see the module docstring
        fmt = KQ_SEARCH.get(method, method)
        raw = formats.quantize(a.reshape(-1, 256), fmt, search=method in KQ_SEARCH)
        return torch.from_numpy(formats.dequantize(raw, fmt)).reshape(x.shape)
    if method == "NVFP4":
        ts = microscaling.nvfp4_tensor_scale(a)
        return torch.from_numpy(
            formats.dequantize(formats.quantize(a, method, tensor_scale=ts), method, tensor_scale=ts)
        )
    return torch.from_numpy(formats.dequantize(formats.quantize(a, method), method))


def bits_per_weight(shape: tuple[int, ...], method: str) -> float:
    """Exact bits per weight of a ``shape`` weight in ``method``, all scales included."""
    method = _check(method)
    numel = int(np.prod(shape))
    if method in INT:
        return footprint(shape, 4, INT[method]).bits_per_weight
    if method == "int4 g64 double":
        return 4 + (8 + 32 / 256) / 64
    if method == "FP8 per-row":
        return footprint(shape, 8, PerChannel(0), scale_bytes=4).bits_per_weight
    fmt = "MXFP4" if method in MX else KQ_SEARCH.get(method, method)
    if fmt.endswith("_K"):
        return formats.footprint((numel // 256, 256), fmt).bits_per_weight
    return formats.footprint(shape, fmt).bits_per_weight


def format_table(
    model: Any, weights: Mapping[str, torch.Tensor], methods: Sequence[str] = METHODS
) -> list[dict[str, Any]]:
    """One row per method: the first element of :func:`format_study`."""
    return format_study(model, weights, methods)[0]


def format_study(
    model: Any, weights: Mapping[str, torch.Tensor], methods: Sequence[str] = METHODS
) -> tuple[list[dict[str, Any]], dict[str, EmbeddingScores]]:
    """One row per method: bits per weight, SQNR and relative RMSE over all ``weights`` together, and the
    model's sentence embeddings with those weights stored in the method, against FP32; and each
    method's per-sentence scores, for :func:`qlesson.teach.studies.compare_embeddings`.

    ``mean cosine`` and ``rank corr`` as in :func:`qlesson.teach.studies.embedding_quality`, on the
    240 evaluation sentences; the reconstruction of each weight is computed once and used for all
    columns. ``small-half rmse`` is the RMS error over the smaller half of all weights (``|w|`` at
    most the median ``|w|``).
    """
    from qlesson.teach.eval_text import EVAL_SENTENCES
    from qlesson.teach.models import embed, replaced_weights

    ref = embed(model, EVAL_SENTENCES)
    total_sq = sum(float(w.double().square().sum()) for w in weights.values())
    numel = sum(w.numel() for w in weights.values())
    cut = torch.cat([w.detach().abs().reshape(-1) for w in weights.values()]).median()
    small = {n: w.detach().abs() <= cut for n, w in weights.items()}
    n_small = sum(int(s.sum()) for s in small.values())
    rows, scores = [], {}
    for m in methods:
        fakes = {n: fake(w, m) for n, w in weights.items()}
        err_sq = sum(float((fakes[n] - w).double().square().sum()) for n, w in weights.items())
        small_sq = sum(float((fakes[n] - w)[small[n]].double().square().sum()) for n, w in weights.items())
        bits = sum(bits_per_weight(tuple(w.shape), m) * w.numel() for w in weights.values())
        with replaced_weights(model, fakes):
            e = embed(model, EVAL_SENTENCES)
        cos, rank = sentence_scores(ref, e)
        scores[m] = EmbeddingScores(m, bits / numel, cos, rank, (ref.double().numpy(), e.double().numpy()))
        rows.append(
            {
                "format": m,
                "bits per weight": bits / numel,
                "SQNR dB": 10 * np.log10(total_sq / err_sq),
                "rmse / rms": (err_sq / total_sq) ** 0.5,
                "mean cosine": float(cos.mean()),
                "rank corr": float(rank.mean()),
                "small-half rmse": (small_sq / n_small) ** 0.5,
            }
        )
    return rows, scores


def pareto_front(rows: Sequence[Mapping[str, Any]], y: str = "SQNR dB") -> list[str]:
    """The methods no other method beats on both bits per weight (fewer) and ``y`` (higher).

    >>> pareto_front([{"format": "a", "bits per weight": 4, "SQNR dB": 20},
    ...               {"format": "b", "bits per weight": 5, "SQNR dB": 19}])
    ['a']
    """
    front = []
    for r in rows:
        beaten = any(
            o["bits per weight"] <= r["bits per weight"]
            and o[y] >= r[y]
            and (o["bits per weight"], o[y]) != (r["bits per weight"], r[y])
            for o in rows
        )
        if not beaten:
            front.append(r["format"])
    return front


def first_block(w: torch.Tensor, method: str, row: int = 0) -> dict[str, Any]:
    """The first 32 weights of ``row``, their reconstruction, and the scales that block stores, in words."""
    x = w.detach().float()
    x_hat = fake(x, method)
    vals, back = x[row, :32].numpy(), x_hat[row, :32].numpy()
    return {
        "values": vals,
        "reconstructed": back,
        "scales": scales_text(x, method, row),
        "max error": float(np.abs(vals - back).max()),
        "layer SQNR dB": float(
            10 * np.log10(float(x.double().square().sum()) / float((x_hat - x).double().square().sum()))
        ),
    }


def scales_text(x: torch.Tensor, method: str, row: int = 0) -> str:
    """What the format stores to scale the first block of ``row``."""
    a = x[row : row + 1].numpy()
    if method in MX:
        e = int(microscaling.quantize_mx(a, MX[method]).exponents[0, 0])
        return f"E8M0 byte {e}: scale 2**({e} - 127) = 2**{e - 127}"
    if method == "NVFP4":
        t = microscaling.quantize_nvfp4(a, microscaling.nvfp4_tensor_scale(x.numpy()))
        s = float(e4m3_value(t.scale_bytes[0, :1])[0])
        return f"E4M3 block scale {s:g} x fp32 tensor scale {t.tensor_scale:.4g} (block of 16)"
    if method.endswith("_K") or method in KQ_SEARCH:
        from qlesson.quant import kquants

        fmt = KQ_SEARCH.get(method, method)
        f = kquants.fields(formats.quantize(a[:, :256], fmt, search=method in KQ_SEARCH), fmt)
        if fmt == "Q4_K":
            return (
                f"fp16 d = {float(f['d'][0]):.3g}, dmin = {float(f['dmin'][0]):.3g}; "
                f"sub-block 0: 6-bit sc = {int(f['sc'][0, 0])}, 6-bit min code = {int(f['m'][0, 0])}"
            )
        return f"fp16 d = {float(f['d'][0]):.3g}; sub-block 0 (16 weights): int8 sc = {int(f['sc'][0, 0])}"
    if method in ("Q4_0", "Q8_0", "Q4_1"):
        d, _ = formats.codes(formats.quantize(a[:, :32], method), method)
        return f"fp16 d = {float(d[0]):.4g}"
    if method == "FP8 per-row":
        return f"fp32 row scale {float(quantize_fp8(x, PerChannel(0)).scale[row]):.4g} (amax / 448)"
    if method == "int4 g64 double":
        dq = double_quantize(x, 4, group_size=64, scale_bits=8, scale_group=256)
        return f"uint8 scale code {int(dq.scale_codes[row, 0])} x fp32 {float(dq.scale_scales[0]):.3g}"
    from qlesson.quant.quantize import quantize

    scale = float(quantize(x[row : row + 1], 4, granularity=INT[method]).scale.reshape(-1)[0])
    return f"fp16 scale {scale:.4g} (absmax / 7 of its {'row' if method.endswith('channel') else 'group'})"

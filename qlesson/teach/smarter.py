"""Lesson 09's studies: GPTQ and AWQ against round-to-nearest, on a toy and on MiniLM.

Errors are *layer output* errors, relative: ``||x (w - w_hat).T||^2 / ||x w.T||^2`` over the
calibration (or held-out) tokens ``x``, computed from the Hessian ``H = 2 x.T x / tokens``
as ``sum((d @ H) * d) / sum((w @ H) * w)`` with ``d = w - w_hat`` (the same number, without
a pass over the tokens).

>>> x = toy_inputs()
>>> w = torch.tensor([[0.05, -0.08, 0.12, -0.15], [2.0, -3.1, 1.7, -2.6]])
>>> round(output_error(w, w, hessian(x)), 6)
0.0
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from qlesson.quant.awq import awq_search
from qlesson.quant.footprint import total_footprint
from qlesson.quant.gptq import gptq_from_hessian, hessian
from qlesson.quant.granularity import Granularity, PerChannel, method_name
from qlesson.quant.quantize import fake_quantize, quantize
from qlesson.teach.intervals import N_BOOT, Interval, interval, pair_resamples, resamples

METHODS = ("RTN", "GPTQ", "AWQ", "AWQ+GPTQ")


def toy_inputs(tokens: int = 64) -> torch.Tensor:
    """``[tokens, 4]`` inputs for the 2x4 toy: features 0 and 1 move together, 2 and 3 against each other."""
    g = torch.Generator().manual_seed(9)
    base = torch.randn(tokens, 4, generator=g)
    mix = torch.tensor([[1.0, 0.9, 0.0, 0.0], [0.0, 0.4, 0.0, 0.0], [0.0, 0.0, 1.0, -0.8], [0.0, 0.0, 0.0, 0.5]])
    return base @ mix


def output_error(w: torch.Tensor, w_hat: torch.Tensor, h: torch.Tensor, norm: torch.Tensor | None = None) -> float:
    """Relative layer-output error ``||x (w - w_hat).T||^2 / ||x w.T||^2`` from ``h = hessian(x)``.

    ``norm`` is the denominator, ``output_norm(w, h)``, when a study already has it.
    """
    d = (w - w_hat).to(h.dtype)
    return float(((d @ h) * d).sum() / (output_norm(w, h) if norm is None else norm))


def output_norm(w: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """``sum((w @ h) * w)``: the layer output's squared size (times ``tokens / 2``)."""
    w = w.to(h.dtype)
    return ((w @ h) * w).sum()


def gptq_trace(w: torch.Tensor, x: torch.Tensor, bits: int = 4, row: int = 0) -> list[dict[str, Any]]:
    """GPTQ on a small ``w`` step by step (per-channel scales, no damping), as one row sees it.

    The textbook form: after rounding column ``j`` with error ``e`` (in ticks), every later
    column ``c`` moves by ``-e * Hinv[j, c] / Hinv[j, j]``, then ``j`` leaves the inverse Hessian.
    """
    h = hessian(x).double()
    scale = quantize(w, bits, granularity=PerChannel(0)).scale[row].double()
    qmax = 2 ** (bits - 1) - 1
    ticks = w[row].double() / scale  # this row's weights measured in ticks of its ruler
    hinv = torch.linalg.inv(h)
    rows = []
    for j in range(w.shape[1]):
        code = float(torch.clamp(torch.round(ticks[j]), -qmax, qmax))
        err = float(ticks[j]) - code
        before = [round(float(t), 3) for t in ticks]
        push = -err * hinv[j] / hinv[j, j]
        ticks = ticks + push
        rows.append(
            {
                "step": j + 1,
                "weights in ticks before": before[j:],
                "code": int(code),
                "RTN code": int(torch.clamp(torch.round(w[row, j].double() / scale), -qmax, qmax)),
                "error (ticks)": err,
                "pushed onto later columns": [round(float(p), 3) for p in push[j + 1 :]],
            }
        )
        hinv = hinv - torch.outer(hinv[:, j], hinv[j]) / hinv[j, j]
    return rows


def best_codes(w: torch.Tensor, scale: float, h: torch.Tensor, bits: int = 4) -> list[int]:
    """The codes of one row ``w [K]`` on the ruler ``scale`` with the least output error, by trying them all.

    Every vector of ``K`` codes in ``[-qmax, qmax]`` is scored by ``sum((d @ h) * d)`` with
    ``d = w - codes * scale`` (the numerator of :func:`output_error`); the first best wins a tie.
    Meant for toys: there are ``(2 * qmax + 1) ** K`` vectors.

    >>> w = torch.tensor([[0.05, -0.08, 0.12, -0.15], [2.0, -3.1, 1.7, -2.6]])
    >>> h, scale = hessian(toy_inputs()), quantize(w, 4, granularity=PerChannel(0)).scale
    >>> best_codes(w[1], float(scale[1]), h)
    [5, -7, 4, -6]
    >>> best_codes(w[0], float(scale[0]), h)
    [2, -3, 6, -7]
    >>> best_codes(torch.zeros(9), 1.0, torch.eye(9))
    Traceback (most recent call last):
    ...
    ValueError: a row of 9 weights at int4 has 38443359375 code vectors, more than 2000000: best_codes is for toys
    """
    if w.dim() != 1 or h.shape != (w.shape[0], w.shape[0]):
        raise ValueError(f"w must be one row [K] and h [K, K]; got w {tuple(w.shape)}, h {tuple(h.shape)}")
    if bits < 2 or not scale > 0:
        raise ValueError(f"bits={bits!r} must be at least 2 and scale={scale!r} positive")
    qmax = 2 ** (bits - 1) - 1
    count = (2 * qmax + 1) ** w.shape[0]
    if count > 2_000_000:
        raise ValueError(
            f"a row of {w.shape[0]} weights at int{bits} has {count} code vectors, more than 2000000: "
            "best_codes is for toys"
        )
    ticks = torch.arange(-qmax, qmax + 1, dtype=torch.float64)
    grid = torch.cartesian_prod(*[ticks] * w.shape[0]).reshape(count, w.shape[0])
    d = w.double()[None, :] - grid * scale
    err = ((d @ h.double()) * d).sum(1)
    return [int(c) for c in grid[int(err.argmin())]]


@dataclass(frozen=True)
class Layer:
    """One Linear layer's weight and what its calibration inputs tell: Hessian and mean |x| per feature."""

    w: torch.Tensor
    h: torch.Tensor
    mean_abs_x: torch.Tensor
    norm: torch.Tensor  # output_norm(w, h)


def layers(weights: Mapping[str, torch.Tensor], inputs: Mapping[str, torch.Tensor]) -> dict[str, Layer]:
    """Every layer's Hessian, computed once (each study below uses it many times).

    Everything is float64 (the weights' float32 values exactly): GPTQ's error feedback and the
    Hessian's sums then give the same printed digits on every CPU.
    """
    out = {}
    for name, w in weights.items():
        w, x = w.double(), inputs[name].double()
        h = hessian(x)
        out[name] = Layer(w, h, x.abs().mean(0), output_norm(w, h))
    return out


def quantized(layer: Layer, bits: int, g: Granularity, methods: Sequence[str] = METHODS) -> dict[str, torch.Tensor]:
    """Method -> the fake-quantized weight that acts on the layer's original inputs (one AWQ search).

    AWQ's ``1 / s`` is applied to the weight (``Q(w * s) / s``): the same product as folding it
    into the previous operation, in exact arithmetic. AWQ+GPTQ runs GPTQ on ``w * s`` with the
    Hessian of ``x / s``.
    """
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"methods {unknown} are not among {METHODS}")
    w, out = layer.w, {}
    if "RTN" in methods:
        out["RTN"] = fake_quantize(w, bits, granularity=g)
    if "GPTQ" in methods:
        out["GPTQ"] = gptq_from_hessian(w, layer.h, bits, granularity=g).dequantize()
    if "AWQ" in methods or "AWQ+GPTQ" in methods:
        s = awq_search(w, layer.mean_abs_x, layer.h, bits, granularity=g)
        if "AWQ" in methods:
            out["AWQ"] = fake_quantize(w * s, bits, granularity=g) / s
        if "AWQ+GPTQ" in methods:
            h_scaled = layer.h / (s[:, None] * s[None, :])  # the Hessian of x / s
            out["AWQ+GPTQ"] = gptq_from_hessian(w * s, h_scaled, bits, granularity=g).dequantize() / s
    return {m: out[m] for m in methods}


@contextlib.contextmanager
def swapped_weights(model: Any, new: Mapping[str, torch.Tensor]) -> Iterator[Any]:
    """Temporarily give the Linear layers named in ``new`` (short names) those weights."""
    from qlesson.teach.models import short_name

    linears = {short_name(n): m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    saved = {k: linears[k].weight.detach().clone() for k in new}
    try:
        with torch.no_grad():
            for k, w in new.items():
                linears[k].weight.copy_(w)
        yield model
    finally:
        with torch.no_grad():
            for k, w in saved.items():
                linears[k].weight.copy_(w)


def study_rows(
    model: Any,
    lays: Mapping[str, Layer],
    settings: Sequence[tuple[int, Granularity]],
    methods: Sequence[str] = METHODS,
    progress: bool = False,
    held_out: Mapping[str, torch.Tensor] | None = None,
    scores: dict[str, Any] | None = None,
    keep: Sequence[tuple[str, str]] | None = None,
    bar: Any = None,
) -> list[dict[str, Any]]:
    """Per method and setting: bits per weight, layer output errors, and the embeddings against FP32.

    ``calib err`` is the mean relative layer-output error on the calibration inputs the methods
    were fitted to (``lays``); with ``held_out`` (each layer's inputs on other text), ``output
    err`` and ``worst layer`` are measured on those, otherwise on the calibration inputs too.
    Embeddings are those of the 240 evaluation sentences
    (:data:`qlesson.teach.eval_text.EVAL_SENTENCES`), not the calibration text; ``mean cosine``
    and ``rank corr`` as in :func:`qlesson.teach.studies.embedding_quality`. A dict passed as
    ``scores`` receives each row's per-sentence scores (key ``"GPTQ int4 per-channel"``) and
    fake-quantized weights (key ``("GPTQ", "int4 per-channel")``), for intervals; with ``keep``
    only the weights of those ``(method, weights)`` keys (each setting's weights of all 36 MiniLM
    layers take about 170 MB in float64). ``bar`` (a tqdm object, or None) advances once a setting.
    """
    from qlesson.teach.eval_text import EVAL_SENTENCES
    from qlesson.teach.models import embed
    from qlesson.teach.studies import EmbeddingScores, sentence_scores

    ref = embed(model, EVAL_SENTENCES)
    shapes = [tuple(layer.w.shape) for layer in lays.values()]
    evals = lays if held_out is None else layers({n: lay.w for n, lay in lays.items()}, held_out)
    rows = []
    for bits, g in settings:
        by_layer = {name: quantized(layer, bits, g, methods) for name, layer in lays.items()}
        for method in methods:
            new = {name: q[method] for name, q in by_layer.items()}
            fit = [output_error(lays[n].w, w_hat, lays[n].h, lays[n].norm) for n, w_hat in new.items()]
            errs = [output_error(evals[n].w, w_hat, evals[n].h, evals[n].norm) for n, w_hat in new.items()]
            with swapped_weights(model, new):
                e = embed(model, EVAL_SENTENCES)
            cos, rank = sentence_scores(ref, e)
            label = f"int{bits} {method_name(g)}"
            bpw = total_footprint(shapes, bits, g).bits_per_weight
            if scores is not None:
                embs = (ref.double().numpy(), e.double().numpy())
                scores[f"{method} {label}"] = EmbeddingScores(f"{method} {label}", bpw, cos, rank, embs)
                if keep is None or (method, label) in keep:
                    scores[(method, label)] = new
            rows.append(
                {
                    "method": method,
                    "weights": label,
                    "bits/weight": bpw,
                    "calib err": sum(fit) / len(fit),
                    "output err": sum(errs) / len(errs),
                    "worst layer": max(errs),
                    "mean cosine": float(cos.mean()),
                    "rank corr": float(rank.mean()),
                }
            )
            if progress:
                print(rows[-1]["method"], rows[-1]["weights"], flush=True)
        del by_layer
        if bar is not None:
            bar.update(1)
    return rows


def _per_sentence(
    inputs: Mapping[str, torch.Tensor], mats: Mapping[str, torch.Tensor], tokens_per_sentence: Sequence[int]
) -> np.ndarray:
    """``[layers, sentences]``: ``sum_t ||x_t m.T||^2`` over each sentence's tokens, for each layer's ``m``."""
    sid = torch.repeat_interleave(torch.arange(len(tokens_per_sentence)), torch.tensor(list(tokens_per_sentence)))
    rows = []
    for name, m in mats.items():
        x = inputs[name].double()
        if x.shape[0] != len(sid):
            raise ValueError(f"{name}: {x.shape[0]} input tokens but tokens_per_sentence sums to {len(sid)}")
        per_token = (x @ m.double().T).square().sum(1)
        rows.append(torch.zeros(len(tokens_per_sentence), dtype=torch.float64).index_add_(0, sid, per_token))
    return torch.stack(rows).numpy()


def sentence_output_errors(
    weights: Mapping[str, torch.Tensor],
    new: Mapping[str, torch.Tensor],
    inputs: Mapping[str, torch.Tensor],
    tokens_per_sentence: Sequence[int],
) -> np.ndarray:
    """Each layer's squared output error summed over each sentence's tokens, ``[layers, sentences]``.

    ``err[l, s] = sum_t ||x_t (w - w_hat).T||^2`` over the tokens ``t`` of sentence ``s`` (inputs
    in sentence order, as :func:`qlesson.teach.models.capture_linear_inputs` gives them). With
    :func:`sentence_output_norms` the relative output error of any set of sentences ``idx`` is
    ``err[:, idx].sum(1) / out[:, idx].sum(1)`` per layer, so sentences can be resampled.
    """
    return _per_sentence(inputs, {n: weights[n].double() - w.double() for n, w in new.items()}, tokens_per_sentence)


def sentence_output_norms(
    weights: Mapping[str, torch.Tensor], inputs: Mapping[str, torch.Tensor], tokens_per_sentence: Sequence[int]
) -> np.ndarray:
    """``out[l, s] = sum_t ||x_t w.T||^2``: each layer's squared output, per sentence (the denominator)."""
    return _per_sentence(inputs, weights, tokens_per_sentence)


def output_error_interval(err_a: np.ndarray, err_b: np.ndarray, out: np.ndarray, n_boot: int = N_BOOT) -> Interval:
    """Paired bootstrap over sentences of the mean relative layer-output error, method A minus method B.

    ``err_a``, ``err_b`` are :func:`sentence_output_errors` of two methods and ``out`` is
    :func:`sentence_output_norms`, all on the same sentences. Each draw resamples sentences
    (with their tokens) and recomputes every layer's ratio of sums, then the mean over layers.

    >>> out = np.ones((2, 4))
    >>> output_error_interval(out * 0.02, out * 0.01, out).text(".3f")
    '0.010 [0.010, 0.010]'
    """
    if not err_a.shape == err_b.shape == out.shape:
        raise ValueError(f"shapes {err_a.shape}, {err_b.shape}, {out.shape} differ; pass [layers, sentences] each")
    n = out.shape[1]
    draws = pair_resamples(n, n_boot) if n % 2 == 0 else resamples(n, n_boot)  # paraphrase pairs stay together
    counts = np.stack([np.bincount(idx, minlength=n) for idx in draws]).T.astype(np.float64)

    def stat(err: np.ndarray, c: np.ndarray) -> np.ndarray:
        return ((err @ c) / (out @ c)).mean(0)

    full = np.ones((n, 1))
    return interval(float(stat(err_a, full)[0] - stat(err_b, full)[0]), stat(err_a, counts) - stat(err_b, counts))


def compare_rows(
    weights: Mapping[str, torch.Tensor],
    held_out: Mapping[str, torch.Tensor],
    tokens_per_sentence: Sequence[int],
    scores: Mapping[Any, Any],
    pairs: Sequence[tuple[tuple[str, str], tuple[str, str]]],
) -> list[dict[str, Any]]:
    """For each pair ``((method, weights), (method, weights))``: A - B with paired 95% intervals over sentences.

    ``scores`` is the dict :func:`study_rows` filled. Held-out output error (sentences resampled
    with their tokens), mean cosine and rank corr; the last column names the better one on each
    (``A`` or ``B``), or ``tie`` where the interval spans 0.
    """
    from qlesson.teach.studies import embedding_differences

    norms = sentence_output_norms(weights, held_out, tokens_per_sentence)
    keys = {k for pair in pairs for k in pair}
    held = {k: sentence_output_errors(weights, scores[k], held_out, tokens_per_sentence) for k in keys}
    rows = []
    for a, b in pairs:
        err = output_error_interval(held[a], held[b], norms)
        cells, cos, rank = embedding_differences(scores[" ".join(a)], scores[" ".join(b)])
        better = "; ".join(v.replace(" higher", "") for v in (err.verdict("B", "A"), cos.verdict(), rank.verdict()))
        rows.append(
            {
                "A - B": f"{' '.join(a)} - {' '.join(b)}",
                "output err": err.diff,
                "95% CI": [err.lo, err.hi],
                **cells,
                "better (A, B or tie): err; cos; rank": better,
            }
        )
    return rows


def overfit_rows(
    w: torch.Tensor,
    x_cal: torch.Tensor,
    x_held: torch.Tensor,
    token_counts: Sequence[int],
    bits: int = 4,
    g: Granularity = PerChannel(0),
) -> list[dict[str, Any]]:
    """GPTQ calibrated on the first ``n`` tokens of ``x_cal``: error on those tokens and on ``x_held`` (float64)."""
    w, x_cal = w.double(), x_cal.double()
    h_held = hessian(x_held.double())
    rtn = fake_quantize(w, bits, granularity=g)
    rows = []
    for n in token_counts:
        h = hessian(x_cal[:n])
        w_hat = gptq_from_hessian(w, h, bits, granularity=g).dequantize()
        rows.append(
            {
                "calibration tokens": n,
                "tokens / in_features": n / w.shape[1],
                "RTN on calib": output_error(w, rtn, h),
                "GPTQ on calib": output_error(w, w_hat, h),
                "RTN held out": output_error(w, rtn, h_held),
                "GPTQ held out": output_error(w, w_hat, h_held),
            }
        )
    return rows


SALIENT_CHOICES = ("nothing (RTN)", "by mean |x|", "by mean |w|", "at random")


def salient_rows(
    w: torch.Tensor,
    x_cal: torch.Tensor,
    x_held: torch.Tensor,
    tokens_per_sentence: Sequence[int],
    bits: int = 3,
    g: Granularity = PerChannel(0),
    fraction: float = 0.01,
) -> list[dict[str, Any]]:
    """AWQ's first experiment on one layer: keep ``fraction`` of the input channels unquantized.

    Rows: which columns of ``w`` stay at full precision (:data:`SALIENT_CHOICES`: none, the ones
    whose inputs are loudest on the calibration tokens, the ones with the largest weights, a
    seeded random pick), then no column kept but the same salient ones multiplied by ``s = 2``,
    then by ``s = 4``, before rounding (and divided after), then :func:`qlesson.quant.awq.awq_search`'s scales. Each
    row: held-out relative output error and its difference from plain RTN with a paired 95%
    interval over the held-out sentences (``x_held`` in sentence order, ``tokens_per_sentence``).
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction={fraction!r} must be in (0, 1), e.g. 0.01 for 1% of the input channels")
    w, x_cal = w.double(), x_cal.double()
    k_in = w.shape[1]
    k = max(1, round(fraction * k_in))
    mean_abs = x_cal.abs().mean(0)
    rtn = fake_quantize(w, bits, granularity=g)
    picks = {
        "by mean |x|": mean_abs.topk(k).indices,
        "by mean |w|": w.abs().mean(0).topk(k).indices,
        "at random": torch.randperm(k_in, generator=torch.Generator().manual_seed(0))[:k],
    }
    new: dict[str, torch.Tensor] = {"nothing (RTN)": rtn}
    for name, keep in picks.items():
        w_hat = rtn.clone()
        w_hat[:, keep] = w[:, keep]
        new[name] = w_hat
    for factor in (2, 4):
        s_k = torch.ones(k_in, dtype=w.dtype)
        s_k[picks["by mean |x|"]] = float(factor)
        new[f"none; s = {factor} on those by mean |x|"] = fake_quantize(w * s_k, bits, granularity=g) / s_k
    s = awq_search(w, mean_abs, hessian(x_cal), bits, granularity=g)
    new["none; AWQ's searched s"] = fake_quantize(w * s, bits, granularity=g) / s
    one = {"w": w}
    norms = sentence_output_norms(one, {"w": x_held}, tokens_per_sentence)
    errs = {n: sentence_output_errors(one, {"w": m}, {"w": x_held}, tokens_per_sentence) for n, m in new.items()}
    rows = []
    for name, err in errs.items():
        kept = k if name in picks else 0
        diff = output_error_interval(err, errs["nothing (RTN)"], norms)
        rows.append(
            {
                "full-precision channels": f"{kept} {name}" if kept else name,
                "output err": float(err.sum() / norms.sum()),
                "minus RTN": diff.diff,
                "95% CI": [diff.lo, diff.hi],
                "vs RTN": diff.verdict("worse", "better").replace(" higher", "") if name != "nothing (RTN)" else "",
            }
        )
    return rows


def layer_type_rows(
    weights: Mapping[str, torch.Tensor],
    calib: Mapping[str, torch.Tensor],
    held_out: Mapping[str, torch.Tensor],
    tokens_per_sentence: Sequence[int],
    scores: Mapping[Any, Any],
    a: tuple[str, str],
    b: tuple[str, str],
    reference: tuple[str, str] | None = None,
    stretch_group: int | None = None,
) -> list[dict[str, Any]]:
    """``a`` against ``b`` (``(method, weights)`` keys of :func:`study_rows`' ``scores``) per layer type.

    A layer's type is its name after the block (``"L3.intermediate"`` -> ``intermediate``). Per
    type: inputs per layer, calibration tokens per input, the mean held-out relative output error
    over the type's layers of ``reference`` (if given), ``a`` and ``b``; how much ``a``'s error grows
    from the calibration tokens to the held-out ones; ``a / b``; and ``A - B`` with a paired 95%
    interval over the held-out sentences and which is lower (``A``, ``B`` or ``tie``). With
    ``stretch_group``, also how far one ruler per row stretches beyond one per group: each row's
    ``max |w|`` over the mean of its groups' ``max |w|``, averaged over the type's rows.
    """
    types: dict[str, list[str]] = {}
    for name in weights:
        types.setdefault(name.split(".", 1)[1], []).append(name)
    norms = sentence_output_norms(weights, held_out, tokens_per_sentence)
    keys = [a, b] if reference is None else [reference, a, b]
    err = {k: sentence_output_errors(weights, scores[k], held_out, tokens_per_sentence) for k in keys}
    index = {name: i for i, name in enumerate(weights)}
    rows = []
    for kind, names in types.items():
        idx = [index[n] for n in names]
        means = {k: float((err[k][idx].sum(1) / norms[idx].sum(1)).mean()) for k in keys}
        fit = [output_error(weights[n], scores[a][n], hessian(calib[n].double())) for n in names]
        diff = output_error_interval(err[a][idx], err[b][idx], norms[idx])
        in_features = weights[names[0]].shape[1]
        stretch = {}
        if stretch_group is not None:
            ratios = [_row_stretch(weights[n], stretch_group) for n in names]
            stretch = {f"row max / g{stretch_group} max": sum(ratios) / len(ratios)}
        rows.append(
            {
                "layer type": kind,
                "inputs": in_features,
                "calib tokens / input": calib[names[0]].shape[0] / in_features,
                **stretch,
                **{f"{'ref' if k == reference else 'A' if k == a else 'B'}: {' '.join(k)}": means[k] for k in keys},
                "A held-out / calib": means[a] / (sum(fit) / len(fit)),
                "A / B": means[a] / means[b],
                "A - B": diff.diff,
                "95% CI": [diff.lo, diff.hi],
                "lower": diff.verdict("B", "A").replace(" higher", ""),
            }
        )
    return rows


def _row_stretch(w: torch.Tensor, group: int) -> float:
    """Mean over rows of ``max |w|`` of the row divided by the mean ``max |w|`` of its groups.

    >>> _row_stretch(torch.tensor([[1.0, 0.5, 4.0, 2.0]]), 2)
    1.6
    """
    a = w.double().abs()
    if a.shape[1] % group:
        raise ValueError(f"group={group} does not divide the {a.shape[1]} inputs; pick a divisor")
    return float((a.amax(1) / a.reshape(a.shape[0], -1, group).amax(2).mean(1)).mean())


def shared_layers(weights: Mapping[str, torch.Tensor], inputs: Mapping[str, torch.Tensor]) -> dict[str, Layer]:
    """:func:`layers`, with one Hessian for layers that read the same inputs (a block's query, key, value).

    The same numbers as :func:`layers`, computed once per distinct input tensor.
    """
    out: dict[str, Layer] = {}
    seen: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # (inputs, Hessian, mean |x|)
    for name, w in weights.items():
        x = inputs[name]
        hit = next(((h, m) for x0, h, m in seen if x0.shape == x.shape and torch.equal(x0, x)), None)
        if hit is None:
            xd = x.double()
            hit = (hessian(xd), xd.abs().mean(0))
            seen.append((x, *hit))
        w = w.double()
        out[name] = Layer(w, hit[0], hit[1], output_norm(w, hit[0]))
    return out


def progress(iterable: Any = None, desc: str = "", total: int | None = None, every: int = 1) -> Any:
    """A plain progress bar on stdout, ``desc: n/total``, whose text is the same in every run (for nbval)."""
    import sys

    from tqdm import tqdm

    fmt = "{desc}: {n_fmt}/{total_fmt}"
    # maxinterval=inf: tqdm's monitor thread would otherwise drop miniters to 1 after a slow step (a loaded CPU)
    return tqdm(
        iterable,
        desc=desc,
        total=total,
        file=sys.stdout,
        bar_format=fmt,
        mininterval=0,
        miniters=every,
        maxinterval=float("inf"),
    )


def capture_texts(
    model: Any, calibration: Sequence[str], held_out: Sequence[str]
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], torch.Tensor, list[int]]:
    """Every Linear layer's inputs on the calibration and the held-out texts, with a progress bar.

    Also returns each calibration token's paragraph (a tensor) and the number of tokens of each
    held-out sentence (to resample sentences with their tokens).
    """
    from qlesson.teach import models

    x_cal, x_held = [models.capture_linear_inputs(model, t) for t in progress((calibration, held_out), "capture")]
    para = torch.tensor([i for i, _, _ in models.token_labels(model, calibration)])
    counts = [0] * len(held_out)
    for i, _, _ in models.token_labels(model, held_out):
        counts[i] += 1
    return x_cal, x_held, para, counts


def variant_label(method: str, bits: int, g: Granularity) -> str:
    """``"GPTQ int4 per-channel"``: a method at a setting, as the tables name it."""
    return f"{method} int{bits} {method_name(g)}"


def held_out_rows(
    weights: Mapping[str, torch.Tensor],
    calib: Mapping[str, torch.Tensor],
    held_out: Mapping[str, torch.Tensor],
    tokens_per_sentence: Sequence[int],
    variants: Sequence[tuple[str, int, Granularity]],
    bar: Any = None,
) -> tuple[list[dict[str, Any]], dict[str, np.ndarray], np.ndarray]:
    """Each ``(method, bits, granularity)`` fitted on ``calib`` and measured on it and on ``held_out``.

    Per variant: bits per weight, the mean relative layer-output error over the layers on the
    calibration tokens (``calib err``) and on the held-out tokens (``held-out err``), and their
    ratio. Also returns each variant's per-sentence held-out errors and the per-sentence output
    norms (:func:`sentence_output_errors`, :func:`sentence_output_norms`), for
    :func:`output_error_interval`. ``bar`` (a tqdm object, or None) advances once a variant.
    """
    lays = shared_layers(weights, calib)
    shapes = [tuple(w.shape) for w in weights.values()]
    norms = sentence_output_norms(weights, held_out, tokens_per_sentence)
    rows, per = [], {}
    for method, bits, g in variants:
        new = {name: quantized(lay, bits, g, (method,))[method] for name, lay in lays.items()}
        fit = [output_error(lays[n].w, w_hat, lays[n].h, lays[n].norm) for n, w_hat in new.items()]
        err = sentence_output_errors(weights, new, held_out, tokens_per_sentence)
        held = float((err.sum(1) / norms.sum(1)).mean())
        label = variant_label(method, bits, g)
        per[label] = err
        calib_err = sum(fit) / len(fit)
        rows.append(
            {
                "method": method,
                "weights": f"int{bits} {method_name(g)}",
                "bits/weight": total_footprint(shapes, bits, g).bits_per_weight,
                "calib err": calib_err,
                "held-out err": held,
                "held-out / calib": held / calib_err,
            }
        )
        if bar is not None:
            bar.update(1)
    return rows, per, norms


def print_against(
    rows: Sequence[Mapping[str, Any]],
    per_sentence: Mapping[str, np.ndarray],
    norms: np.ndarray,
    layer_names: Sequence[str],
    base: str = "RTN int4 per-group 32",
) -> None:
    """What lesson 09 reads off :func:`held_out_rows` against ``base``, on the held-out tokens.

    One table row per GPTQ variant: its error minus ``base``'s with its paired interval over
    sentences (:func:`output_error_interval`), then its error over ``base``'s layer by layer
    (``layer_names`` in the order of the layers, ``"L3."`` dropped); then AWQ's error over ``base``'s.
    """
    from qlesson.teach.report import print_table

    g32 = per_sentence[base].sum(1) / norms.sum(1)
    table_rows = []
    for a in (label for label in per_sentence if label.startswith("GPTQ")):
        d = output_error_interval(per_sentence[a], per_sentence[base], norms)
        gp = per_sentence[a].sum(1) / norms.sum(1)
        row = {f"held out, against {base}": a, "difference": d.diff, "95% CI": f"[{d.lo:+.5f}, {d.hi:+.5f}]"}
        names = [n[3:] for n in layer_names]
        for i, (n, x, y) in enumerate(zip(names, gp, g32, strict=True)):
            row[f"ratio: {n}" if i == 0 else n] = float(x / y)
        table_rows.append(row)
    if table_rows:
        ratios = {k: ".2f" for k in table_rows[0] if k not in ("difference", "95% CI") and not k.startswith("held")}
        print_table(table_rows, {"difference": "+.5f"} | ratios)
    held = {f"{r['method']} {r['weights']}": r["held-out err"] for r in rows}  # labels as variant_label writes them
    for a in (label for label in held if label.startswith("AWQ")):
        print(f"held-out: {a} / {base}: {held[a] / held[base]:.2f}x")


def pair_split(
    weights: Mapping[str, torch.Tensor],
    held_out: Mapping[str, torch.Tensor],
    tokens_per_sentence: Sequence[int],
    per_sentence: Mapping[str, np.ndarray],
    norms: np.ndarray,
    base: str = "RTN int4 per-group 32",
    other: str = "GPTQ int4 per-channel",
) -> tuple[list[dict[str, Any]], Interval, dict[str, float]]:
    """GPTQ int4 per-channel calibrated on the even paraphrase pairs of ``held_out``, measured on the odd pairs.

    The control for the calibration text: sentences ``2k`` and ``2k + 1`` are a pair and stay on
    one side. ``per_sentence`` and ``norms`` are what :func:`held_out_rows` returned for the same
    ``held_out`` tokens (they give ``base`` and ``other``, calibrated elsewhere, on the odd pairs).
    Returns the rows (each variant's mean relative layer-output error on the odd pairs), the
    paired interval over the odd pairs of the new fit minus ``base``, and the new fit's error
    over ``base``'s by layer.

    >>> g = torch.Generator().manual_seed(0)
    >>> w = {"a": torch.randn(2, 8, generator=g, dtype=torch.float64)}
    >>> x = {"a": torch.randn(16, 8, generator=g, dtype=torch.float64)}
    >>> from qlesson.quant.granularity import PerGroup
    >>> variants = [("RTN", 4, PerGroup(4)), ("GPTQ", 4, PerChannel(0))]
    >>> rows, per, norms = held_out_rows(w, x, x, [4] * 4, variants)
    >>> rows, d, by_layer = pair_split(w, x, [4] * 4, per, norms, "RTN int4 per-group 4")
    >>> [r["calibrated on"] for r in rows]
    ['(nothing to fit)', 'the paragraphs (section 2)', 'the even pairs (8 tokens)']
    """
    sentence = torch.repeat_interleave(torch.arange(len(tokens_per_sentence)), torch.tensor(list(tokens_per_sentence)))
    even = (sentence // 2) % 2 == 0
    odd = [i for i in range(len(tokens_per_sentence)) if (i // 2) % 2 == 1]
    lays = shared_layers(weights, {n: held_out[n][even] for n in weights})
    new = {n: quantized(lay, 4, PerChannel(0), ("GPTQ",))["GPTQ"] for n, lay in lays.items()}
    err = {
        base: per_sentence[base][:, odd],
        other: per_sentence[other][:, odd],
        "new": sentence_output_errors(weights, new, held_out, tokens_per_sentence)[:, odd],
    }
    out = norms[:, odd]
    by = {k: e.sum(1) / out.sum(1) for k, e in err.items()}
    n_even, n_odd = int(even.sum()), int((~even).sum())
    fits = ("(nothing to fit)", "the paragraphs (section 2)", f"the even pairs ({n_even} tokens)")
    rows = [
        {"variant": label, "calibrated on": fit, f"err on the odd pairs ({n_odd} tokens)": float(by[key].mean())}
        for label, fit, key in zip((base, other, other), fits, err, strict=True)
    ]
    d = output_error_interval(err["new"], err[base], out)
    return rows, d, {n: float(a / b) for n, a, b in zip(weights, by["new"], by[base], strict=True)}


def split_sentences(paragraphs: Sequence[str]) -> list[str]:
    """Each paragraph cut after every ``.``, ``!`` or ``?`` that a space follows: the same text as single sentences.

    >>> split_sentences(["One. Two! Three?", "Four."])
    ['One.', 'Two!', 'Three?', 'Four.']
    """
    return [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p) if s.strip()]


def calibration_fit_rows(
    weights: Mapping[str, torch.Tensor],
    held_out: Mapping[str, torch.Tensor],
    tokens_per_sentence: Sequence[int],
    fits: Mapping[str, Mapping[str, torch.Tensor]],
    norms: np.ndarray,
    per_sentence: Mapping[str, np.ndarray],
    base: str = "RTN int4 per-group 32",
    bar: Any = None,
) -> tuple[list[dict[str, Any]], dict[str, Interval], dict[str, dict[str, float]]]:
    """:func:`pair_split`'s measure for other calibration sets: GPTQ int4 per-channel fitted on each of ``fits``.

    ``fits`` maps a label to every layer's calibration inputs. Each fit is measured on the odd
    pairs of ``held_out`` (as in :func:`pair_split`). Returns the rows (in :func:`pair_split`'s
    columns), and for each fit the paired interval over the odd pairs of its error minus ``base``'s
    and its error over ``base``'s by layer. ``bar`` (a tqdm object, or None) advances once a fit.

    >>> g = torch.Generator().manual_seed(0)
    >>> w = {"a": torch.randn(2, 8, generator=g, dtype=torch.float64)}
    >>> x = {"a": torch.randn(16, 8, generator=g, dtype=torch.float64)}
    >>> from qlesson.quant.granularity import PerGroup
    >>> rows, per, norms = held_out_rows(w, x, x, [4] * 4, [("RTN", 4, PerGroup(4))])
    >>> fits = {"six tokens": {"a": x["a"][:6]}, "ten": {"a": x["a"][:10]}}
    >>> rows, d, by_layer = calibration_fit_rows(w, x, [4] * 4, fits, norms, per, "RTN int4 per-group 4")
    >>> [r["calibrated on"] for r in rows], list(d), list(by_layer["ten"])
    (['six tokens', 'ten'], ['six tokens', 'ten'], ['a'])
    """
    sentence = torch.repeat_interleave(torch.arange(len(tokens_per_sentence)), torch.tensor(list(tokens_per_sentence)))
    odd_tokens = int(((sentence // 2) % 2 == 1).sum())
    odd = [i for i in range(len(tokens_per_sentence)) if (i // 2) % 2 == 1]
    out = norms[:, odd]
    base_err = per_sentence[base][:, odd]
    base_by = base_err.sum(1) / out.sum(1)
    rows, diffs, ratios = [], {}, {}
    for fit, inputs in fits.items():
        lays = shared_layers(weights, {n: inputs[n] for n in weights})
        new = {n: quantized(lay, 4, PerChannel(0), ("GPTQ",))["GPTQ"] for n, lay in lays.items()}
        err = sentence_output_errors(weights, new, held_out, tokens_per_sentence)[:, odd]
        by = err.sum(1) / out.sum(1)
        rows.append(
            {
                "variant": "GPTQ int4 per-channel",
                "calibrated on": fit,
                f"err on the odd pairs ({odd_tokens} tokens)": float(by.mean()),
            }
        )
        diffs[fit] = output_error_interval(err, base_err, out)
        ratios[fit] = {n: float(a / b) for n, a, b in zip(weights, by, base_by, strict=True)}
        if bar is not None:
            bar.update(1)
    return rows, diffs, ratios


def split_rows(
    weights: Mapping[str, torch.Tensor],
    fitted: Mapping[str, torch.Tensor],
    unseen: Mapping[str, torch.Tensor],
    variants: Sequence[tuple[str, int, Granularity]],
) -> list[dict[str, Any]]:
    """Each variant fitted on ``fitted`` and measured on it and on ``unseen`` tokens of the same kind.

    The control for "GPTQ fits its calibration tokens": if ``unseen`` is more calibration text
    (not a different kind of text), an error that grows from ``fitted`` to ``unseen`` is a fit.
    Per variant: the mean relative layer-output error over the layers on each, and their ratio.

    >>> w = {"a": torch.tensor([[0.3, -0.2, 0.1, 0.4]])}
    >>> x = {"a": torch.eye(4)}
    >>> split_rows(w, x, x, [("RTN", 4, PerChannel(0))])[0]["unseen / fitted"]
    1.0
    """
    fit_lays, new_lays = shared_layers(weights, fitted), shared_layers(weights, unseen)
    rows = []
    for method, bits, g in variants:
        on_fit, on_new = [], []
        for name, lay in fit_lays.items():
            w_hat = quantized(lay, bits, g, (method,))[method]
            on_fit.append(output_error(lay.w, w_hat, lay.h, lay.norm))
            other = new_lays[name]
            on_new.append(output_error(other.w, w_hat, other.h, other.norm))
        a, b = sum(on_fit) / len(on_fit), sum(on_new) / len(on_new)
        label = variant_label(method, bits, g)
        rows.append({"variant": label, "err on fitted half": a, "err on other half": b, "unseen / fitted": b / a})
    return rows


def split_by_layer(
    weights: Mapping[str, torch.Tensor],
    fitted: Mapping[str, torch.Tensor],
    unseen: Mapping[str, torch.Tensor],
    variants: Sequence[tuple[str, int, Granularity]],
    held_out: Mapping[str, torch.Tensor] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, float]]]:
    """:func:`split_rows`, plus each variant's ``unseen / fitted`` ratio per layer.

    Returns ``(rows, ratios)``: ``rows`` as :func:`split_rows` gives them, ``ratios[label][layer]``
    the layer's error on ``unseen`` over its error on ``fitted``. With ``held_out`` (tokens of a
    different kind of text), each row also gives the same fit's error there
    (``err on held-out text``): the fit held fixed, only the text changed.

    >>> w = {"a": torch.tensor([[0.3, -0.2, 0.1, 0.4]])}
    >>> x = {"a": torch.eye(4)}
    >>> split_by_layer(w, x, x, [("RTN", 4, PerChannel(0))])[1]
    {'RTN int4 per-channel': {'a': 1.0}}
    """
    fit_lays, new_lays = shared_layers(weights, fitted), shared_layers(weights, unseen)
    text_lays = shared_layers(weights, held_out) if held_out is not None else {}
    rows, ratios = [], {}
    for method, bits, g in variants:
        on_fit, on_new, on_text = {}, {}, {}
        for name, lay in fit_lays.items():
            w_hat = quantized(lay, bits, g, (method,))[method]
            on_fit[name] = output_error(lay.w, w_hat, lay.h, lay.norm)
            other = new_lays[name]
            on_new[name] = output_error(other.w, w_hat, other.h, other.norm)
            if text_lays:
                t = text_lays[name]
                on_text[name] = output_error(t.w, w_hat, t.h, t.norm)
        a, b = sum(on_fit.values()) / len(on_fit), sum(on_new.values()) / len(on_new)
        label = variant_label(method, bits, g)
        row = {"variant": label, "err on fitted half": a, "err on other half": b}
        if text_lays:
            row["err on held-out text"] = sum(on_text.values()) / len(on_text)
        rows.append(row | {"unseen / fitted": b / a})
        ratios[label] = {name: on_new[name] / on_fit[name] for name in on_fit}
    return rows, ratios


def find(rows: Sequence[Mapping[str, Any]], method: str, weights: str) -> Mapping[str, Any]:
    """The row of ``method`` (``"GPTQ"``) at ``weights`` (``"int4 per-channel"``)."""
    for r in rows:
        if r["method"] == method and r["weights"] == weights:
            return r
    raise ValueError(f"no row for {method} at {weights}; settings measured: {sorted({r['weights'] for r in rows})}")


def plot_overfit(rows: Sequence[Mapping[str, Any]]) -> Any:
    """:func:`overfit_rows` as a figure: output error against calibration tokens per input, both texts."""
    from qlesson.teach.plots import _figure, plain_log_ticks

    fig = _figure(None, size=(7, 3.4))
    ax = fig.axes[0]
    x = [r["tokens / in_features"] for r in rows]
    for method, color in (("RTN", _COLORS["RTN"]), ("GPTQ", _COLORS["GPTQ"])):
        for text, style in (("on calib", "--"), ("held out", "-")):
            ys = [r[f"{method} {text}"] for r in rows]
            ax.plot(x, ys, style, marker=_MARKERS[method], color=color, label=f"{method} {text}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax)
    plain_log_ticks(ax, "x")
    ax.set_xlabel("calibration tokens per input")
    ax.set_ylabel("relative layer-output error")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("GPTQ int4 per-channel, L3.intermediate (384 inputs)")
    return fig


_MARKERS = {"RTN": "o", "GPTQ": "s", "AWQ": "^", "AWQ+GPTQ": "D"}
_COLORS = {"RTN": "#30343f", "GPTQ": "#00798c", "AWQ": "#edae49", "AWQ+GPTQ": "#8d5a97"}


def plot_study(rows: Sequence[Mapping[str, Any]]) -> Any:
    """Output error and 1 - mean cosine against bits per weight, one line per method and bit width."""
    from qlesson.teach.plots import _figure, plain_log_ticks

    fig = _figure(None, ncols=2, size=(10, 3.8))
    axes = fig.axes
    for ax, key, label in (
        (axes[0], "output err", "mean layer output error on held-out text (relative)"),
        (axes[1], "1 - cos", "1 - mean cosine to FP32 embeddings"),
    ):
        for method in _MARKERS:
            for bits in sorted({r["weights"].split()[0] for r in rows}):
                pts = [r for r in rows if r["method"] == method and r["weights"].startswith(bits + " ")]
                pts.sort(key=lambda r: r["bits/weight"])
                ys = [r["output err"] if key == "output err" else 1 - r["mean cosine"] for r in pts]
                ax.plot(
                    [r["bits/weight"] for r in pts],
                    ys,
                    marker=_MARKERS[method],
                    color=_COLORS[method],
                    linestyle="-" if bits == "int4" else "--",
                    label=f"{method} {bits}",
                )
        ax.set_yscale("log")
        plain_log_ticks(ax)
        ax.set_xlabel("bits per weight (codes + fp16 scales)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncols=2)
    fig.suptitle("MiniLM, 36 encoder layers: per-channel, g128 and g32 at int4 (solid) and int3 (dashed)")
    return fig


STUDY_PATH = "notebooks/results/09_full_study.json"  # relative to the repository root
STUDY_SETTINGS = (
    (4, "per-channel"),
    (4, "per-group 128"),
    (4, "per-group 32"),
    (3, "per-channel"),
    (3, "per-group 32"),
)


def study_pairs() -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """The ``(method, weights)`` pairs the full study compares with paired intervals."""
    pairs = [(("GPTQ", f"int{b} per-channel"), ("RTN", f"int{b} per-group 32")) for b in (4, 3)]
    pairs += [(("GPTQ", "int4 per-group 128"), ("RTN", "int4 per-group 32"))]
    pairs += [(("GPTQ", "int4 per-channel"), ("RTN", "int4 per-channel"))]
    pairs += [(("AWQ", f"int4 {g}"), ("GPTQ", f"int4 {g}")) for g in ("per-channel", "per-group 32")]
    pairs += [(("AWQ+GPTQ", w), ("GPTQ", w)) for w in ("int4 per-channel", "int3 per-group 32")]
    return pairs


def full_study(bar: Any = None) -> dict[str, Any]:
    """Lesson 09's full study: all 36 MiniLM encoder layers, four methods, five settings.

    Calibrated on :func:`qlesson.teach.calibration.calibration_texts`, measured on the 240
    evaluation sentences. Returns ``{"study": rows of study_rows, "comparisons": rows of
    compare_rows for study_pairs(), "by_type": rows of layer_type_rows}``, plain JSON values.
    Several minutes of float64 work on two cores.
    """
    from qlesson.quant.granularity import PerGroup
    from qlesson.teach import models
    from qlesson.teach.calibration import calibration_texts
    from qlesson.teach.eval_text import EVAL_SENTENCES

    model = models.load_minilm()
    weights = {n: w for n, w in models.linear_weights(model).items() if n != "pooler"}
    x_cal = models.capture_linear_inputs(model, calibration_texts())
    x_held = models.capture_linear_inputs(model, EVAL_SENTENCES)
    counts = [0] * len(EVAL_SENTENCES)
    for i, _, _ in models.token_labels(model, EVAL_SENTENCES):
        counts[i] += 1
    grans = {"per-channel": PerChannel(0), "per-group 128": PerGroup(128), "per-group 32": PerGroup(32)}
    settings = [(b, grans[g]) for b, g in STUDY_SETTINGS]
    pairs = study_pairs()
    scores: dict[Any, Any] = {}
    lays = layers(weights, x_cal)
    keep = {k for pair in pairs for k in pair} | {("RTN", "int4 per-channel")}
    study = study_rows(model, lays, settings, held_out=x_held, scores=scores, keep=keep, bar=bar)
    comparisons = compare_rows(weights, x_held, counts, scores, pairs)
    by_type = layer_type_rows(
        weights,
        x_cal,
        x_held,
        counts,
        scores,
        ("GPTQ", "int4 per-channel"),
        ("RTN", "int4 per-group 32"),
        reference=("RTN", "int4 per-channel"),
        stretch_group=32,
    )

    def plain(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return float(v) if isinstance(v, (float, np.floating)) else int(v) if isinstance(v, np.integer) else v

    return {
        k: [{c: plain(v) for c, v in r.items()} for r in rows]
        for k, rows in (("study", study), ("comparisons", comparisons), ("by_type", by_type))
    }


def load_full_study(path: Any = None, missing_ok: bool = False) -> dict[str, Any] | None:
    """The stored reading of :func:`full_study` (``python -m qlesson.teach.smarter`` writes it).

    A missing file raises, or with ``missing_ok`` gives None.
    """
    import json
    from pathlib import Path

    p = Path(path) if path is not None else Path(__file__).resolve().parents[2] / STUDY_PATH
    if not p.exists():
        if missing_ok:
            return None
        raise FileNotFoundError(f"{p} is missing; run `python -m qlesson.teach.smarter` to write it (several minutes)")
    return json.loads(p.read_text())


def print_full_study(full: Mapping[str, Any] | None, methods: Sequence[str] = METHODS) -> None:
    """Lesson 09's Going deeper: the full study's tables and the answers read from them.

    Only the rows of ``methods`` are printed and compared (a comparison is kept when both its
    sides are among them).
    """
    from qlesson.teach.report import print_table

    if full is None:
        print(f"{STUDY_PATH} is not stored here: run `python -m qlesson.teach.smarter` (several minutes), then rebuild")
        return
    study = [r for r in full["study"] if r["method"] in methods]
    comparisons = [
        c for c in full["comparisons"] if all(side.split()[0] in methods for side in c["A - B"].split(" - "))
    ]
    by_type = full["by_type"]
    fmt = {"bits/weight": ".3f", "calib err": ".5f", "output err": ".5f", "worst layer": ".4f"}
    print_table(study, fmt | {"mean cosine": ".4f", "rank corr": ".4f"})
    print("\nGPTQ per-channel against the gap from RTN per-channel to RTN g32:")
    for bits in (4, 3):
        pc, g32 = find(study, "RTN", f"int{bits} per-channel"), find(study, "RTN", f"int{bits} per-group 32")
        gq = find(study, "GPTQ", f"int{bits} per-channel")
        for key, better in (("calib err", min), ("output err", min), ("mean cosine", max)):
            closed = (pc[key] - gq[key]) / (pc[key] - g32[key])
            verdict = "catches up with" if better(gq[key], g32[key]) == gq[key] else "stays behind"
            print(f"  int{bits} {key}: closes {closed:.0%} of the gap; {verdict} RTN g32")
    print("\nPaired differences A - B, 95% intervals over the held-out sentences:")
    print_table(
        comparisons, {k: "+.5f" if k in ("output err", "95% CI") else "+.4f" for k in comparisons[0] if k != "A - B"}
    )
    print("\nGPTQ per-channel (A) against RTN g32 (B) by layer type, RTN per-channel (ref) for reference:")
    fmt = {k: ".5f" for k in by_type[0] if ":" in k} | {"A - B": "+.5f", "95% CI": "+.5f"}
    fmt |= {"calib tokens / input": ".2f", "row max / g32 max": ".2f", "A held-out / calib": ".2f", "A / B": ".2f"}
    print_table(by_type, fmt)
    print()
    names = sorted({r["weights"] for r in study}, key=lambda n: [r["weights"] for r in study].index(n))
    ratios = [find(study, "GPTQ", n)["output err"] / find(study, "RTN", n)["output err"] for n in names]
    print(f"GPTQ / RTN held-out output error: {min(ratios):.2f} to {max(ratios):.2f} over the {len(names)} settings")
    if len(methods) > 2:  # orders of two methods repeat the ratio above
        for key in ("output err", "worst layer"):
            best = [min((r for r in study if r["weights"] == n), key=lambda r: r[key])["method"] for n in names]
            print(f"lowest {key} in every setting: {' / '.join(sorted(set(best)))}")
        for key, best_first in (("output err", False), ("mean cosine", True), ("rank corr", True)):
            ranked = [
                sorted((r for r in study if r["weights"] == n), key=lambda r: r[key], reverse=best_first) for n in names
            ]
            orders = sorted({", ".join(r["method"] for r in rows) for rows in ranked})
            print(
                f"method order by {key}, best first: {' | '.join(orders)} "
                f"({len(orders)} order(s) in {len(names)} settings)"
            )
    for method in (m for m in METHODS if m in methods):
        grow = [find(study, method, n)["output err"] / find(study, method, n)["calib err"] for n in names]
        print(f"{method:>8}: held-out / calibration output error {min(grow):.2f} to {max(grow):.2f}")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m qlesson.teach.smarter [PATH]``: run :func:`full_study` and store it as JSON."""
    import json
    import sys
    import time
    from pathlib import Path

    from tqdm import tqdm

    args = list(sys.argv[1:] if argv is None else argv)
    out = Path(args[0]) if args else Path(__file__).resolve().parents[2] / STUDY_PATH
    start = time.time()
    with tqdm(total=len(STUDY_SETTINGS), desc="settings", file=sys.stderr) as bar:
        result = full_study(bar)
    result["seconds"] = round(time.time() - start)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} in {result['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

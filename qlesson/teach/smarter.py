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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from qlesson.quant.awq import awq_search
from qlesson.quant.footprint import total_footprint
from qlesson.quant.gptq import gptq_from_hessian, hessian
from qlesson.quant.granularity import Granularity, PerChannel, method_name
from qlesson.quant.quantize import fake_quantize, quantize

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


@dataclass(frozen=True)
class Layer:
    """One Linear layer's weight and what its calibration inputs tell: Hessian and mean |x| per feature."""

    w: torch.Tensor
    h: torch.Tensor
    mean_abs_x: torch.Tensor
    norm: torch.Tensor  # output_norm(w, h)


def layers(weights: Mapping[str, torch.Tensor], inputs: Mapping[str, torch.Tensor]) -> dict[str, Layer]:
    """Every layer's Hessian, computed once (each study below uses it many times)."""
    out = {}
    for name, w in weights.items():
        h = hessian(inputs[name].to(w.dtype))
        out[name] = Layer(w, h, inputs[name].abs().mean(0), output_norm(w, h))
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
) -> list[dict[str, Any]]:
    """Per method and setting: bits per weight, layer output errors, and the embeddings against FP32.

    ``calib err`` is the mean relative layer-output error on the calibration inputs the methods
    were fitted to (``lays``); with ``held_out`` (each layer's inputs on other text), ``output
    err`` and ``worst layer`` are measured on those, otherwise on the calibration inputs too.
    Embeddings are those of lesson 03's sentences (:data:`qlesson.teach.models.SENTENCES`), not
    the calibration text; ``rank corr`` is Spearman's over all pairwise similarities, as in lesson 03.
    """
    from qlesson.teach.models import embed
    from qlesson.teach.studies import _pairwise, _spearman

    ref = embed(model)
    ref_pairs = _pairwise(ref)
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
                e = embed(model)
            rows.append(
                {
                    "method": method,
                    "weights": f"int{bits} {method_name(g)}",
                    "bits/weight": total_footprint(shapes, bits, g).bits_per_weight,
                    "calib err": sum(fit) / len(fit),
                    "output err": sum(errs) / len(errs),
                    "worst layer": max(errs),
                    "mean cosine": float((e * ref).sum(1).mean()),
                    "rank corr": _spearman(ref_pairs, _pairwise(e)),
                }
            )
            if progress:
                print(rows[-1]["method"], rows[-1]["weights"], flush=True)
    return rows


def overfit_rows(
    w: torch.Tensor,
    x_cal: torch.Tensor,
    x_held: torch.Tensor,
    token_counts: Sequence[int],
    bits: int = 4,
    g: Granularity = PerChannel(0),
) -> list[dict[str, Any]]:
    """GPTQ calibrated on the first ``n`` tokens of ``x_cal``: error on those tokens and on ``x_held``."""
    h_held = hessian(x_held.to(w.dtype))
    rtn = fake_quantize(w, bits, granularity=g)
    rows = []
    for n in token_counts:
        h = hessian(x_cal[:n].to(w.dtype))
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


def find(rows: Sequence[Mapping[str, Any]], method: str, weights: str) -> Mapping[str, Any]:
    """The row of ``method`` (``"GPTQ"``) at ``weights`` (``"int4 per-channel"``)."""
    for r in rows:
        if r["method"] == method and r["weights"] == weights:
            return r
    raise ValueError(f"no row for {method} at {weights}; settings measured: {sorted({r['weights'] for r in rows})}")


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

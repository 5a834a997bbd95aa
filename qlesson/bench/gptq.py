"""``python -m qlesson.bench gptq``: GPTQ and AWQ over all 36 MiniLM encoder Linear layers.

Loads the model, captures every layer's inputs on the calibration text
(:func:`qlesson.teach.calibration.calibration_texts`), then quantizes each layer once per
method, with a progress bar per method. The floor: GPTQ int4 at g128 over the 36 layers in
under 60 s on 2 cores (lesson 09 runs it several times over).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from qlesson.quant.awq import awq_scales
from qlesson.quant.gptq import gptq
from qlesson.quant.granularity import Granularity, PerChannel, PerGroup, method_name
from qlesson.quant.quantize import fake_quantize

from .timing import print_header

FLOOR_S = 60.0  # GPTQ int4 g128, all 36 layers, 2 cores


@dataclass(frozen=True)
class GptqRow:
    """One method over every layer: total seconds and the output error summed over layers."""

    method: str
    seconds: float
    layers: int
    rel_output_err: float


def _rel_err(x: torch.Tensor, w: torch.Tensor, w_hat: torch.Tensor) -> float:
    return float((x @ (w - w_hat).T).square().sum() / (x @ w.T).square().sum())


def _methods(bits: int, g: Granularity) -> dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]:
    """Label -> function (w, x) -> fake-quantized weight acting on x."""

    def awq(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        s = awq_scales(w, x, bits, granularity=g)
        return fake_quantize(w * s, bits, granularity=g) / s

    name = f"int{bits} {method_name(g)}"
    return {
        f"RTN {name}": lambda w, x: fake_quantize(w, bits, granularity=g),
        f"GPTQ {name}": lambda w, x: gptq(w, x, bits, granularity=g).dequantize(),
        f"AWQ {name}": awq,
    }


def bench_gptq(
    weights: Mapping[str, torch.Tensor],
    inputs: Mapping[str, torch.Tensor],
    settings: tuple[tuple[int, Granularity], ...] = ((4, PerGroup(128)),),
    *,
    progress: bool = True,
) -> list[GptqRow]:
    """Time every method of :func:`_methods` over every layer, one progress bar per method."""
    from tqdm import tqdm

    rows = []
    for bits, g in settings:
        for label, fn in _methods(bits, g).items():
            err = 0.0
            start = time.perf_counter()
            for name in tqdm(weights, desc=label, file=sys.stderr, disable=not progress, leave=False):
                err += _rel_err(inputs[name], weights[name], fn(weights[name], inputs[name]))
            seconds = time.perf_counter() - start  # includes the error measurement, as a user would run it
            rows.append(GptqRow(label, seconds, len(weights), err / len(weights)))
    return rows


def minilm_layers() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The 36 encoder Linear weights of MiniLM and their inputs on the calibration text (not the pooler)."""
    from qlesson.teach.calibration import calibration_texts
    from qlesson.teach.models import capture_linear_inputs, linear_weights, load_minilm

    model = load_minilm()
    weights = {k: w for k, w in linear_weights(model).items() if k != "pooler"}
    inputs = capture_linear_inputs(model, calibration_texts())
    return weights, {k: inputs[k] for k in weights}


def main(quick: bool = False) -> list[GptqRow]:
    print_header("GPTQ and AWQ over MiniLM's 36 encoder Linear layers (seconds for all layers, one run each)")
    start = time.perf_counter()
    weights, inputs = minilm_layers()
    tokens = next(iter(inputs.values())).shape[0]
    print(f"load MiniLM and capture inputs ({tokens} calibration tokens): {time.perf_counter() - start:.1f} s")
    settings = ((4, PerGroup(128)),) if quick else ((4, PerGroup(128)), (4, PerChannel(0)), (3, PerGroup(32)))
    rows = bench_gptq(weights, inputs, settings)
    width = max(len(r.method) for r in rows)
    print(f"{'method':<{width}}  {'s total':>8}  {'ms/layer':>8}  {'mean rel. output err':>20}")
    for r in rows:
        print(f"{r.method:<{width}}  {r.seconds:8.2f}  {r.seconds / r.layers * 1e3:8.1f}  {r.rel_output_err:20.5f}")
    t = next(r.seconds for r in rows if r.method == "GPTQ int4 per-group 128")
    verdict = "within" if t < FLOOR_S else "OVER"
    print(f"GPTQ int4 g128, all {len(weights)} layers: {t:.1f} s, {verdict} the {FLOOR_S:.0f} s floor")
    return rows

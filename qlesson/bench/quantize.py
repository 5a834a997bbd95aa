"""``python -m qlesson.bench quantize``: qlesson's fake-quantize against torch's fused ops."""

from __future__ import annotations

import torch

from qlesson.quant.granularity import PerChannel, PerGroup, PerTensor
from qlesson.quant.quantize import fake_quantize, quantize

from .timing import Row, median_time, print_header


def bench_quantize(n: int = 4096, k: int = 4096, *, threads: int | None = None, repeats: int = 7) -> list[Row]:
    """Time qlesson and torch fake-quantize on an ``[n, k]`` fp32 weight; ratios are to torch per-channel."""
    if threads:
        torch.set_num_threads(threads)
    w = torch.randn(n, k, generator=torch.Generator().manual_seed(0))
    pc = quantize(w, 8, granularity=PerChannel(0))
    pt = quantize(w, 8)

    def torch_per_channel_with_scales() -> torch.Tensor:
        lo, hi = torch.aminmax(w, dim=1)
        scale = torch.maximum(-lo, hi) / 127
        return torch.fake_quantize_per_channel_affine(w, scale, pc.zero_point, 0, -127, 127)

    cases = {
        "torch fake_quantize_per_channel_affine (scales given)": lambda: torch.fake_quantize_per_channel_affine(
            w, pc.scale, pc.zero_point, 0, -127, 127
        ),
        "torch per-channel incl. computing scales": torch_per_channel_with_scales,
        "torch fake_quantize_per_tensor_affine (scale given)": lambda: torch.fake_quantize_per_tensor_affine(
            w, pt.scale.item(), 0, -127, 127
        ),
        "ql.fake_quantize PerTensor()": lambda: fake_quantize(w, 8, granularity=PerTensor()),
        "ql.fake_quantize PerChannel(0)": lambda: fake_quantize(w, 8, granularity=PerChannel(0)),
        "ql.fake_quantize PerGroup(128)": lambda: fake_quantize(w, 8, granularity=PerGroup(128)),
    }
    times = {name: median_time(fn, repeats=repeats) for name, fn in cases.items()}
    base = times["torch fake_quantize_per_channel_affine (scales given)"]
    return [Row(name, t, t / base) for name, t in times.items()]


def main(quick: bool = False) -> list[Row]:
    n = 1024 if quick else 4096
    print_header(f"fake-quantize of a [{n}, {n}] fp32 weight, int8 symmetric (median of repeats)")
    rows = bench_quantize(n, n, repeats=3 if quick else 7)
    width = max(len(r.name) for r in rows)
    print(f"{'method':<{width}}  {'ms':>8}  {'x torch per-channel':>19}")
    for r in rows:
        print(f"{r.name:<{width}}  {r.median_s * 1e3:8.2f}  {r.ratio:19.2f}")
    return rows

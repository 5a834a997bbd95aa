"""``python -m qlesson.bench widgets``: how long one slider update takes (median of repeats)."""

from __future__ import annotations

import torch

from .timing import median_time, print_header

FLOORS_MS = {"two-rows explorer (2x4)": 50.0, "group explorer ([1536, 384] layer)": 250.0}


def _layer() -> tuple[torch.Tensor, str]:
    try:
        from qlesson.teach.models import linear_weights, load_minilm

        return linear_weights(load_minilm())["L0.intermediate"], "MiniLM L0.intermediate"
    except ImportError:
        return torch.randn(1536, 384, generator=torch.Generator().manual_seed(0)) * 0.05, "random [1536, 384]"


def bench_widgets(repeats: int = 7) -> dict[str, float]:
    """Median milliseconds of one update callback (the maths, the redraw and the PNG)."""
    from qlesson.teach import widgets

    two = widgets.two_rows_explorer()
    w, _ = _layer()
    group = widgets.group_explorer(w, "layer")
    bits_two = two.children[0].children[2]  # the bits slider
    bits_group = group.children[0].children[1]

    def move(slider) -> None:  # each call changes a value, so the real observer path runs
        slider.value = slider.min + (slider.value - slider.min + 1) % (slider.max - slider.min + 1)

    return {
        "two-rows explorer (2x4)": 1e3 * median_time(lambda: move(bits_two), repeats=repeats, min_time_s=0.0),
        "group explorer ([1536, 384] layer)": 1e3
        * median_time(lambda: move(bits_group), repeats=repeats, min_time_s=0.0),
    }


def main() -> dict[str, float]:
    torch.set_num_threads(min(2, torch.get_num_threads()))
    print_header("widget update callbacks: one slider move, maths + redraw + PNG (median)")
    _, label = _layer()
    print(f"real layer: {label}")
    result = bench_widgets()
    for name, ms in result.items():
        verdict = "within" if ms <= FLOORS_MS[name] else "OVER"
        print(f"{name:<36} {ms:8.1f} ms  ({verdict} the {FLOORS_MS[name]:.0f} ms floor)")
    return result

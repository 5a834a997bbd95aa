"""``python -m qlesson.bench widgets``: how long one slider update takes (median of repeats).

It also times the calculator (lesson 07) on a real layer pasted as text, 384 channels of
1536 values: Compare (the whole callback: parse, compare, table, CSV link, plot), the
redraw and the CSV alone, and the PDF. Targets: under 2 s each, the PDF under 5 s.
"""

from __future__ import annotations

import torch

from .timing import median_time, print_header

FLOORS_MS = {"two-rows explorer (2x4)": 50.0, "group explorer ([1536, 384] layer)": 250.0}
CALCULATOR_TARGETS_S = {"Compare (whole callback)": 2.0, "redraw (plot + PNG)": 2.0, "CSV": 2.0, "PDF": 5.0}


def _layer() -> tuple[torch.Tensor, str]:
    try:
        from qlesson.teach.models import linear_weights, load_minilm

        return linear_weights(load_minilm())["L0.intermediate"], "MiniLM L0.intermediate"
    except ImportError:
        return torch.randn(1536, 384, generator=torch.Generator().manual_seed(0)) * 0.05, "random [1536, 384]"


def _calculator_layer() -> tuple[torch.Tensor, str]:
    try:
        from qlesson.teach.models import linear_weights, load_minilm

        return linear_weights(load_minilm())["L0.output"], "MiniLM L0.output [384, 1536]"
    except ImportError:
        return torch.randn(384, 1536, generator=torch.Generator().manual_seed(0)) * 0.05, "random [384, 1536]"


def layer_text(w: torch.Tensor) -> str:
    """A weight as a learner pastes it: one channel per line, values separated by ", "."""
    return "\n".join(", ".join(f"{v:.6g}" for v in row) for row in w.tolist())


def bench_calculator(w: torch.Tensor, repeats: int = 3) -> dict[str, float]:
    """Median seconds of the calculator's callbacks on ``w`` pasted as text."""
    from qlesson.teach import calculator as calc
    from qlesson.teach import widgets

    ui = widgets.calculator(layer_text(w))  # builds and runs Compare once
    result = calc.compare(calc.parse_channels(ui.children[0].value), 8, symmetric=False)
    fig = widgets._fig((10, 2.8))

    def timed(fn) -> float:
        return median_time(fn, repeats=repeats, warmup=1, min_time_s=0.0)

    return {
        "Compare (whole callback)": timed(ui.run),
        "redraw (plot + PNG)": timed(lambda: widgets._png(calc.plot(result, fig))),
        "CSV": timed(lambda: calc.summary_csv(result)),
        "PDF": timed(ui.make_pdf),
    }


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
    w, label = _calculator_layer()
    print(f"\ncalculator on {label} pasted as text ({len(layer_text(w)) / 1e6:.1f} MB), median seconds:")
    for name, sec in bench_calculator(w).items():
        target = CALCULATOR_TARGETS_S[name]
        print(f"{name:<36} {sec:8.2f} s   ({'within' if sec <= target else 'OVER'} the {target:.0f} s target)")
    return result

"""Lesson 06's sentences on the stored GPU runs (section 5 and Going deeper), checked on the csv files."""

from qlesson.bench import gemm as bench

INT4 = "fused int4 weight-only group 128"


def _ms(rows, m, prefix):
    return bench.find_row(rows, m, prefix).median_ms


def _runs():
    return {p.name: bench.read_csv(p) for p in bench.stored_results()}


def test_the_lone_calls_twin_is_not_a_stored_run_of_its_own():
    names = [p.name for p in bench.stored_results()]
    assert "gemm_nvidia_h200.csv" in names and "gemm_nvidia_h100.csv" in names
    assert not any(n.endswith("_alone.csv") for n in names)
    assert (bench.RESULTS / "gemm_nvidia_h200_alone.csv").exists()  # "stored beside it"


def test_section_5_on_the_h200_run():
    rows = bench.read_csv(bench.RESULTS / "gemm_nvidia_h200.csv")
    assert _ms(rows, 1, INT4) < _ms(rows, 1, "float16")  # "At M = 1 int4 is faster"
    assert _ms(rows, 256, "float16") < 1.25 * _ms(rows, 1, "float16")  # "fp16's time barely moves"
    assert _ms(rows, 256, INT4) > 10 * _ms(rows, 1, INT4)  # "int4's grows many times over"
    assert _ms(rows, 256, INT4) > 5 * _ms(rows, 256, "float16")  # summary: "many times slower at M = 256"
    ridges = [g["bf16 GEMM GFLOP/s"] / g["read GB/s"] for g in bench.stored_rooflines()]
    assert all(100 < r < 400 for r in ridges)  # "memory bound until M in the hundreds"


def test_going_deeper_holds_in_both_runs():
    for name, rows in _runs().items():
        half = [_ms(rows, m, "float16") for m in (1, 16, 256)]
        assert max(half) < 1.35 * min(half), name  # "about the same time at M = 1, 16 and 256"
        assert _ms(rows, 1, INT4) < _ms(rows, 1, "float16"), name  # "beats fp16 at M = 1"
        at_16 = round(_ms(rows, 16, INT4) / _ms(rows, 16, "float16"), 2)  # "1.05x (H200) and 1.15x (H100)"
        assert at_16 == {"gemm_nvidia_h200.csv": 1.05, "gemm_nvidia_h100.csv": 1.15}[name], name
        assert bench.tflops(rows, 256, INT4) < 0.2 * bench.tflops(rows, 256, "float16"), name  # "small fraction"
        assert all(_ms(rows, m, "fused int8") > _ms(rows, m, "fp32") for m in (1, 16, 256)), name
        scale = [bench.scale_shares(rows, m)["scale after us"] for m in (1, 16, 256)]
        assert max(scale) < 1.25 * min(scale), name  # "nearly the same microseconds at every M"
        assert _ms(rows, 256, "W8A8") > _ms(rows, 256, "float16"), name  # "W8A8 is slower than fp16 there"


def test_w8a8_time_is_mostly_outside_the_int8_gemm_on_the_h200():
    rows = bench.read_csv(bench.RESULTS / "gemm_nvidia_h200.csv")
    alone = _ms(rows, 256, "int8 GEMM alone")
    assert alone < _ms(rows, 256, "float16")  # "the int8 GEMM itself takes less time than fp16's"
    assert alone < 0.2 * _ms(rows, 256, "W8A8")  # "almost all of the W8A8 row" is the other passes
    assert bench.find_row(bench.read_csv(bench.RESULTS / "gemm_nvidia_h100.csv"), 256, "int8 GEMM alone") is None


def test_going_deeper_neither_kernel_reaches_its_floor_on_the_h200():
    rows = bench.read_csv(bench.RESULTS / "gemm_nvidia_h200.csv")
    read = next(g["read GB/s"] for g in bench.stored_rooflines() if g["device"] == rows[0].machine)
    half, int4 = bench.find_row(rows, 1, "float16"), bench.find_row(rows, 1, INT4)
    assert int4.gb_per_s / read < 0.6 * half.gb_per_s / read < 0.3  # neither is near its read floor
    assert round(int4.median_ms / half.median_ms, 2) == 0.57  # "0.57x fp16's time"
    assert round(int4.weight_bytes / half.weight_bytes, 2) == 0.27  # the predict: "0.27x fp16's bytes"


def test_exercise_task_6_on_the_h200_run():
    """The exercise's follow-up: the model's crossover lies between M = 1 and 16, where the two times are close."""
    from qlesson.lessons import l06_dequant_in_gemm as l06

    rows = bench.read_csv(bench.RESULTS / "gemm_nvidia_h200.csv")
    model = l06._int4_loses_from(l06._H200_BF16, 2.0, l06._H200_BW, l06._H200_INT4)
    assert 1 < model < 16
    assert _ms(rows, 1, INT4) < _ms(rows, 1, "float16")
    assert abs(_ms(rows, 16, INT4) / _ms(rows, 16, "float16") - 1) < 0.1  # "within a few percent"
    floor_ms = bench.find_row(rows, 1, "float16").weight_bytes / l06._H200_BW / 1e6
    assert _ms(rows, 1, "float16") > 2 * floor_ms  # the measured fp16 time sits well above its floor


def test_task_6s_h200_numbers_are_the_stored_runs():
    """Lesson 06's task module keeps the stored H200 rates as numbers; they are the stored files', to one decimal."""
    import json

    from qlesson.lessons import l06_dequant_in_gemm as l06

    roof = json.loads((bench.RESULTS / "roofline_nvidia_h200.json").read_text())
    rows = bench.read_csv(bench.RESULTS / "gemm_nvidia_h200.csv")
    stored = (
        roof["bf16 GEMM GFLOP/s"] / 1e3,
        roof["fp32 GEMM GFLOP/s"] / 1e3,
        roof["read GB/s"],
        bench.tflops(rows, 256, "fused int4 weight-only group 128"),
    )
    assert (l06._H200_BF16, l06._H200_FP32, l06._H200_BW, l06._H200_INT4) == tuple(round(v, 1) for v in stored)


def test_going_deeper_control_fp16_reads_slower_than_fp32_on_the_h200():
    """Going deeper, the int4 kernel on a GPU: "fp32, with twice fp16's bytes, takes only 25 us, so at fp32's read
    rate fp16 would take about 13 us, int4's time" (and the predict's feedback says the same)."""
    rows = bench.read_csv(bench.RESULTS / "gemm_nvidia_h200.csv")
    fp32, half, int4 = (bench.find_row(rows, 1, p) for p in ("fp32 F.linear", "float16", INT4))
    assert fp32.weight_bytes == 2 * half.weight_bytes
    assert round(fp32.median_ms * 1e3) == 25 and round(half.median_ms * 1e3) == 22 and round(int4.median_ms * 1e3) == 12
    at_fp32_rate_us = half.weight_bytes / (fp32.weight_bytes / fp32.median_ms) * 1e3
    assert round(at_fp32_rate_us) == 13 and abs(at_fp32_rate_us / (int4.median_ms * 1e3) - 1) < 0.1  # "int4's time"
    assert half.gb_per_s < 0.6 * fp32.gb_per_s  # "an fp16 call that is slow here"

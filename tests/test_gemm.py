"""Every benchmarked GEMM path computes x @ W.T correctly (small shapes; no timing here)."""

import pytest
import torch
import torch.nn.functional as F

import qlesson as ql
from qlesson.bench import gemm as bench
from qlesson.quant import gemm

GEN = torch.Generator().manual_seed(0)


def _case(m=8, k=256, n=128):
    w = torch.randn(n, k, generator=GEN) * torch.rand(n, 1, generator=GEN) * 0.05
    x = torch.randn(m, k, generator=GEN)
    return x, w


def _tolerance(name: str) -> float:
    if name.startswith("fp32"):
        return 1e-6
    if "int4" in name:
        return 0.2  # 4-bit weights: error of the quantization itself
    if "bfloat16" in name or "float16" in name:
        return 1e-2
    return 3e-2  # int8 weights (and bf16 activations on the fused path)


@pytest.mark.parametrize("m", [1, 8, 32])
def test_every_benchmarked_method_matches_fp32(m):
    x, w = _case(m=m)
    ref = F.linear(x, w)
    ops = bench.methods(x, w, "cpu")
    assert len(ops) >= 14
    for name, op, nbytes, note in ops:
        y = op().float()
        assert y.shape == ref.shape, name
        assert nbytes > 0
        if note in (bench.UNSCALED, bench.FOLDED):  # other products by design, checked below
            continue
        assert bench.reference_error(y, ref) < _tolerance(name), name


def test_input_channel_scale_folds_into_the_activations():
    from qlesson.quant import gemm

    x, w = _case(m=4)
    qt = ql.quantize(w, 8, granularity=ql.PerChannel(0))
    s_in = torch.linspace(0.5, 2.0, w.shape[1])
    folded = gemm.fold_input_scale(x, qt.q, s_in)
    assert torch.allclose(folded, x @ (qt.q.float() * s_in).T, rtol=1e-5, atol=1e-3)


def test_zero_point_corrections_are_exact_and_cheap_to_state():
    row = bench.zero_point_cost(m=4, k=64, n=32, repeats=0.01)
    assert row["exact"] is True


def test_scale_after_gemm_equals_dequantize_first():
    x, w = _case()
    s = w.abs().amax(1) / 127
    q = torch.round(w / s[:, None]).clamp(-127, 127).to(torch.int8)
    assert torch.allclose(gemm.scale_after_gemm(x, q, s), gemm.dequant_then_gemm(x, q, s), rtol=1e-5, atol=1e-6)


def test_group_scales_cannot_be_pulled_out_but_partial_sums_work():
    x, w = _case()
    g = 32
    s = w.reshape(w.shape[0], -1, g).abs().amax(-1) / 127
    q = torch.round(w.reshape(w.shape[0], -1, g) / s[..., None]).clamp(-127, 127).to(torch.int8).reshape(w.shape)
    deq = (q.float().reshape(w.shape[0], -1, g) * s[..., None]).reshape(w.shape)
    assert torch.allclose(gemm.group_scaled_gemm(x, q, s, g), x @ deq.T, rtol=1e-4, atol=1e-5)
    # one scale per row (the mean of its groups) applied after the product is not the same thing
    assert not torch.allclose(gemm.scale_after_gemm(x, q, s.mean(1)), x @ deq.T, rtol=1e-3, atol=1e-4)


def test_w8a8_is_a_rank_one_rescale_of_the_int32_accumulator():
    x, w = _case()
    s_w = w.abs().amax(1) / 127
    q = torch.round(w / s_w[:, None]).clamp(-127, 127).to(torch.int8)
    y, acc = gemm.w8a8(x, q, s_w)
    assert acc.dtype == torch.int32
    s_x = x.abs().amax(1) / 127
    assert torch.allclose(y, acc.float() * s_x[:, None] * s_w[None, :])
    assert bench.reference_error(y, F.linear(x, w)) < 3e-2


@pytest.mark.parametrize("group", [32, 64, 128, 256])
def test_int4_pack_round_trip_through_the_fused_kernel(group):
    _, w = _case(k=256, n=64)
    q4, sz, deq = bench._pack_int4(w, group)
    assert q4.min() >= 0 and q4.max() <= 15
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q4, 2)
    eye = torch.eye(w.shape[1], dtype=torch.bfloat16)
    recovered = torch.ops.aten._weight_int4pack_mm_for_cpu(eye, packed, group, sz.to(torch.bfloat16)).float().T
    assert torch.allclose(recovered, deq, rtol=1e-2, atol=2e-3)


def test_bandwidth_and_run_quick():
    bw = bench.measure_bandwidth(mbytes=8, min_run_time=0.01)
    assert bw.copy_gb_s > 0 and bw.read_gb_s > 0
    rows = bench.run(ms=(1, 32), k=256, n=128, min_run_time=0.005, progress=False)
    assert {r.m for r in rows} == {1, 32}
    base = [r for r in rows if r.method.startswith("fp32")]
    assert all(r.x_fp32 == 1.0 for r in base)
    assert all(r.median_ms > 0 for r in rows if not r.note.startswith("unsupported"))
    assert "fp32 F.linear" in bench.format_table(rows, bw)


def test_every_m_cycles_the_same_number_of_weight_copies(monkeypatch):
    """The cache conditions are uniform: each M builds its methods on `copies` weights, not only M = 1."""
    built = []
    real = bench.methods
    monkeypatch.setattr(bench, "methods", lambda x, w, d, q: built.append(x.shape[0]) or real(x, w, d, q))
    bench.run(ms=(1, 32), k=256, n=128, min_run_time=0.001, progress=False, copies=3)
    assert built == [1, 1, 1, 32, 32, 32]
    with pytest.raises(ValueError, match="copies"):
        bench.run(ms=(1,), k=256, n=128, progress=False, copies=0)


def _row(m, method, ms):
    return bench.GemmRow("cpu", m, method, ms, 1.0, 0, 0.0, 0.0)


def _rows(m, times):
    """Rows at one M from {method: median ms}."""
    return [_row(m, method, ms) for method, ms in times.items()]


def test_verdict_lists_which_compact_kernels_beat_each_baseline():
    rows = _rows(
        256,
        {
            "fp32 F.linear (baseline)": 10.0,
            "bfloat16 F.linear": 2.0,
            "fused int8 weight-only per-channel, bf16 x": 12.0,
            "fused int4 weight-only group 128": 9.0,
            "W8A8: per-token act quant + torch._int_mm + rescale": 1.5,
        },
    )
    line = bench.faster_than_baselines(rows, 256)
    assert line == "faster than fp32 F.linear: int4 g128 weight-only, W8A8; faster than bfloat16 F.linear: W8A8", line
    assert bench.faster_than_baselines(rows[:3], 256).endswith("faster than bfloat16 F.linear: none")


def test_ridge_rows_use_each_formats_own_peak():
    rows = bench.ridge_rows({"fp32": 100.0, "bf16": 400.0}, 50.0)
    by = {r["weights"]: r for r in rows}
    assert by["fp32"]["compute bound from M ="] == 4.0  # 100 / 50 * 4 / 2
    assert by["bf16"]["compute bound from M ="] == 8.0  # its own, faster peak: later
    with pytest.raises(ValueError, match="known formats"):
        bench.ridge_rows({"fp64": 1.0}, 50.0)


def test_kernel_peaks_measure_every_format():
    peaks = bench.kernel_peaks(m=32, size=256, min_run_time=0.001)
    assert set(peaks) == {label for label, _, _ in bench.FORMATS}
    assert all(v > 0 for v in peaks.values())


def test_zero_point_cost_reports_the_arithmetic_share():
    row = bench.zero_point_cost(m=4, k=64, n=32, repeats=0.01)
    assert row["work share"] == (4 * 64 + 3 * 4 * 32) / (4 * 32 * 64)


def test_flops_and_bytes():
    fb = gemm.flops_and_bytes(256, 4096, 4096, 8)
    assert fb["FLOPs"] == 2 * 256 * 4096 * 4096
    assert fb["FLOPs per weight byte"] == 512


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: GPU paths are checked on a GPU machine")
def test_cuda_methods_match_fp32():
    x, w = _case(m=32)
    x, w = x.cuda(), w.cuda()
    ref = F.linear(x, w)
    ops = bench.methods(x, w, "cuda")
    assert len(ops) >= 14
    for name, op, _, note in ops:
        y = op().float()
        assert y.shape == ref.shape, name
        if note in (bench.UNSCALED, bench.FOLDED):  # other products by design (as on the CPU)
            continue
        assert bench.reference_error(y, ref) < _tolerance(name), name


def test_noise_margin_and_ties():
    rows = _rows(
        1,
        {
            "fp32 F.linear (baseline)": 10.0,
            "GEMM on pre-converted codes: F.linear(x, q_fp32)": 8.0,  # the same work, 25% apart
            "bfloat16 F.linear": 5.0,
            "fused int8 weight-only per-channel, bf16 x": 9.0,  # inside the 25%: a tie with fp32
            "fused int4 weight-only group 128": 2.0,
        },
    )
    assert bench.noise_margin(rows, 1) == pytest.approx(0.25)
    line = bench.faster_than_baselines(rows, 1)
    assert line.startswith("faster than fp32 F.linear: int4 g128 weight-only (tie: int8 weight-only)"), line
    assert line.endswith("faster than bfloat16 F.linear: int4 g128 weight-only"), line
    assert bench.compare(1.0, 1.05, 0.1) == "tie" and bench.compare(1.2, 1.0, 0.1) == "slower"
    with pytest.raises(ValueError, match="positive"):
        bench.compare(0.0, 1.0, 0.1)


def test_verdict_calls_a_small_fold_a_tie():
    rows = _rows(
        16,
        {
            "fp32 F.linear (baseline)": 10.0,
            "GEMM on pre-converted codes: F.linear(x, q_fp32)": 10.5,
            "per-channel scale alone, a separate op: y_codes * s": 0.01,
            "input-channel scale folded into x: F.linear(x * s_in, q_fp32)": 10.6,
        },
    )
    lines = bench.verdict(rows)
    assert lines[0] == (
        "M = 16: two identical fp32 products differed by 5.0%; gaps under 10% (that gap or a 10% floor, "
        "the larger) are called ties"
    ), lines
    assert any("+1.0% (within noise)" in line and "claim" not in line for line in lines), lines
    slow_half = rows + [_row(16, "bfloat16 F.linear", 0.1)]  # the multiply is 10% of the faster GEMM
    assert any("10.00% of the half-width GEMM; folding" in x for x in bench.verdict(slow_half))


def test_csv_rows_stored_before_the_rename_read_with_the_new_name(tmp_path):
    path = tmp_path / "gemm_old.csv"
    bench.write_csv([_row(1, "per-channel scale alone: y_codes * s (the epilogue)", 0.01)], path)
    assert bench.read_csv(path)[0].method == bench.SEPARATE_SCALE


def test_cache_line_names_what_fits(monkeypatch):
    monkeypatch.setattr(bench, "last_level_cache_bytes", lambda: 40 * 2**20)
    assert bench.cache_line(4096, 128) == (
        "last-level cache 40 MiB: 4 copies of the int4 weights fit in it; the 128 MiB bandwidth probe exceeds it"
    )
    monkeypatch.setattr(bench, "last_level_cache_bytes", lambda: None)
    assert "not reported" in bench.cache_line()


def test_kernel_peaks_never_sit_below_a_row_of_the_run():
    fast = [bench.GemmRow("cpu", 64, "fp32 F.linear (baseline)", 1e-6, 1.0, 0, 0.0, 0.0)]
    peaks = bench.kernel_peaks(m=32, size=256, min_run_time=0.001, rows=fast)
    assert peaks["fp32"] == pytest.approx(2 * 64 * 256 * 256 / 1e-6 / 1e6)


def test_stored_gpu_run_supports_the_lessons_reading():
    """Lesson 06's prose on the stored H100 run: each sentence's claim, checked on the csv."""
    rows = bench.read_csv(bench.RESULTS / "gemm_nvidia_h100.csv")
    shares = {m: bench.scale_shares(rows, m) for m in (1, 16, 256)}
    us = [shares[m]["scale after us"] for m in (1, 16, 256)]
    assert max(us) < 1.25 * min(us)  # "nearly the same microseconds at every M": a fixed cost per call
    assert all(shares[m]["folded into x us"] > 0 for m in (1, 16, 256))
    codes = bench._row(rows, 1, "GEMM on pre-converted")
    assert 10e-3 < codes.median_ms < 100e-3  # "a GEMM of a few tens of microseconds"

    def ms(m, prefix):
        return bench._row(rows, m, prefix).median_ms

    int4 = "fused int4 weight-only group 128"
    assert ms(1, int4) < ms(1, "float16") and ms(16, int4) > ms(16, "float16")
    half = [ms(m, "float16") for m in (1, 16, 256)]
    assert max(half) < 1.35 * min(half)  # "fp16 takes about the same time at M = 1, 16 and 256"
    # the exercise's crossover from the stored rates falls between the two M that bracket the flip
    from qlesson.lessons.l06_dequant_in_gemm import _int4_loses_from

    gpu = bench.stored_rooflines()[0]
    cross = _int4_loses_from(gpu["bf16 GEMM GFLOP/s"] / 1e3, 2.0, gpu["read GB/s"], bench.tflops(rows, 256, int4))
    assert 1 < cross < 16, cross
    assert ms(256, int4) > 5 * ms(256, "float16")  # "many times slower"
    assert ms(256, "float16") < 1.25 * ms(1, "float16")  # "about as long at M = 256 as at M = 1"
    assert ms(16, "float16") < ms(1, "float16")  # "its time fell below its M = 1 time" (L2-resident at M = 16)
    # W8A8: "roughly ten small passes, at the separate multiply's cost each, explain at most about a third"
    assert 11 * ms(256, "per-channel scale alone") < 0.4 * ms(256, "W8A8")
    assert bench.tflops(rows, 256, int4) < 0.2 * bench.tflops(rows, 256, "float16")
    for prefix in ("fused int8", int4, "W8A8"):  # every compact row slower than fp32 at M = 256
        assert ms(256, prefix) > ms(256, "fp32")
    assert all(ms(m, "fused int8") > ms(m, "fp32") for m in (1, 16, 256))  # "slower than fp32 at every M"
    roof = bench.stored_rooflines()[0]
    assert roof["bf16 GEMM GFLOP/s"] / roof["read GB/s"] > 256  # M = 256 is below the ridge


def test_main_returns_cpu_rows_only_and_stores_the_gpu_ones(monkeypatch, tmp_path, capsys):
    """With a GPU, verdicts, peaks and plots get this CPU's rows only; the csv gets the GPU's."""
    monkeypatch.setattr(bench.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(bench.torch.cuda, "get_device_name", lambda i=0: "fake GPU")
    monkeypatch.setattr(bench, "measure_bandwidth", lambda *a, **k: bench.Bandwidth(10.0, 10.0))
    monkeypatch.setattr(
        bench,
        "run",
        lambda device="cpu", **k: (
            [_row(1, "fp32 F.linear (baseline)", 1.0)]
            if device == "cpu"
            else [bench.GemmRow("cuda", 1, "fp32 F.linear (baseline)", 0.1, 1.0, 0, 0.0, 0.0)]
        ),
    )
    rows, _ = bench.main(quick=True, csv_path=str(tmp_path / "g.csv"))
    assert {r.device for r in rows} == {"cpu"}
    assert {r.device for r in bench.read_csv(tmp_path / "g.csv")} == {"cuda"}


def test_roofline_bandwidth_is_never_beaten_by_a_row_of_the_run():
    """The sum() probe can under-measure: the roofline takes the fastest M = 1 weight stream when it is faster."""
    probe = bench.Bandwidth(copy_gb_s=4.0, read_gb_s=2.0)
    rows = [
        bench.GemmRow("cpu", 1, "fp32 F.linear (baseline)", 10.0, 1.0, 60_000_000, 6.0, 0.0),
        bench.GemmRow("cpu", 1, bench.SEPARATE_SCALE, 0.001, 0.0, 16384, 16.4, 0.0, bench.EPILOGUE),  # no weight read
        bench.GemmRow("cpu", 16, "fp32 F.linear (baseline)", 10.0, 1.0, 60_000_000, 60.0, 0.0),  # reuse, not M = 1
    ]
    assert bench.roofline_bandwidth(probe, rows).read_gb_s == 6.0
    assert bench.roofline_bandwidth(bench.Bandwidth(4.0, 9.0), rows).read_gb_s == 9.0  # the probe when it is faster
    assert bench.roofline_bandwidth(probe, []).read_gb_s == 2.0
    shares = [r["of read BW"] for r in _key_dicts(rows[:1], bench.roofline_bandwidth(probe, rows))]
    assert shares == ["100%"]


def _key_dicts(rows, bw):
    lines = bench.key_table(rows, bw).splitlines()
    head = [h.strip() for h in lines[0].split("|")]
    return [dict(zip(head, (c.strip() for c in line.split("|")), strict=False)) for line in lines[2:]]


def test_lesson_rows_time_only_the_chosen_methods():
    chosen = {1: bench.LESSON_ROWS[1]}  # M = 32 is absent: every method is timed there
    rows = bench.run(ms=(1, 32), k=256, n=128, min_run_time=0.001, progress=False, copies=1, rows_for=chosen)
    at1 = [r.method for r in rows if r.m == 1]
    assert len(at1) == len(chosen[1]) and all(any(m.startswith(p) for p in chosen[1]) for m in at1), at1
    assert len([r for r in rows if r.m == 32]) > len(at1)
    lines = bench.verdict(rows)
    assert any("against the faster dense product" in line for line in lines), lines


def test_compact_kernels_are_compared_with_the_faster_dense_product():
    rows = _rows(
        1,
        {
            "fp32 F.linear (baseline)": 10.0,
            "GEMM on pre-converted codes: F.linear(x, q_fp32)": 10.0,
            "bfloat16 F.linear": 20.0,  # a CPU without bf16 instructions: slower than fp32
            "fused int8 weight-only per-channel, bf16 x": 15.0,  # faster than bf16, slower than fp32
            "fused int4 weight-only group 128": 5.0,
        },
    )
    line = bench.faster_than_dense(rows, 1)
    assert line == (
        "against the faster dense product, fp32 F.linear (the faster of its two timings): int8 weight-only 1.50x "
        "(slower), int4 g128 weight-only 0.50x (faster)"
    ), line
    slow_draw = [
        bench.GemmRow("cpu", 1, r.method, 14.0 if r.method.startswith("fp32") else r.median_ms, 1.0, 0, 0.0, 0.0)
        for r in rows
    ]  # fp32 F.linear drew slow; its twin did not
    assert "int4 g128 weight-only 0.50x" in bench.faster_than_dense(slow_draw, 1)
    assert "bfloat16 F.linear takes 2.00x the fp32 time" in "\n".join(bench.verdict(rows))


def test_rows_carry_their_spread_and_the_verdict_states_the_noise_rule():
    rows = bench.run(ms=(1,), k=256, n=128, min_run_time=0.001, progress=False, copies=1, rows_for=bench.LESSON_ROWS)
    assert all(r.iqr_ms >= 0 for r in rows) and {r.torch for r in rows} == {torch.__version__}
    assert torch.backends.cpu.get_cpu_capability() in rows[0].machine
    assert "IQR over its repeats" in bench.verdict(rows)[0]
    assert any(r.method.startswith("per-channel scale after GEMM") for r in rows)  # the fresh-copy control
    assert bench.median_and_iqr([4.0, 1.0, 3.0, 2.0, 5.0]) == (3.0, 2.0)


def test_a_wide_spread_turns_a_gap_into_a_tie():
    rows = [
        bench.GemmRow("cpu", 1, "fp32 F.linear (baseline)", 10.0, 1.0, 0, 0.0, 0.0, iqr_ms=0.1),
        bench.GemmRow("cpu", 1, "GEMM on pre-converted codes", 10.0, 1.0, 0, 0.0, 0.0, iqr_ms=0.1),
        bench.GemmRow("cpu", 1, "fused int4 weight-only group 128", 7.0, 0.7, 0, 0.0, 0.0, iqr_ms=3.5),
    ]
    line = bench.faster_than_dense(rows, 1)
    assert line.endswith("int4 g128 weight-only 0.70x (tie: its timings spread by 50% of their median)"), line
    rows[2].iqr_ms = 0.1
    assert bench.faster_than_dense(rows, 1).endswith("int4 g128 weight-only 0.70x (faster)")


def test_stored_gpu_run_names_its_device_and_torch(tmp_path):
    rows = bench.read_csv(bench.RESULTS / "gemm_nvidia_h100.csv")
    assert {r.machine for r in rows} == {"NVIDIA H100 80GB HBM3"} and {r.torch for r in rows} == {"2.11.0+cu130"}
    path = tmp_path / "g.csv"
    bench.write_csv(rows[:2], path)
    assert bench.read_csv(path)[0].machine == "NVIDIA H100 80GB HBM3"


def test_load_line_warns_only_when_the_load_exceeds_the_cores():
    assert bench.load_line(1.5, 2) == "load average 1.5 on 2 cores"
    assert "busy" in bench.load_line(12.0, 2)
    assert bench.load_line().startswith("load average")


def test_lesson_view_and_the_brief_verdict_keep_the_main_lines_rows():
    """Lesson 06's main line shows LESSON_SHOWN's rows and the brief verdict; the rest is for its Going deeper."""
    assert all(set(bench.LESSON_SHOWN[m]) <= set(bench.LESSON_ROWS[m]) for m in bench.LESSON_SHOWN)
    rows = _rows(
        1,
        {
            "fp32 F.linear (baseline)": 10.0,
            "GEMM on pre-converted codes: F.linear(x, q_fp32)": 11.0,
            "bfloat16 F.linear": 9.0,
            "dequantize per-channel, then F.linear": 120.0,
            "scale after GEMM (preallocated fp32 buffer)": 20.0,
            "fused int4 weight-only group 128": 8.5,
        },
    )
    shown = [r.method for r in bench.lesson_view(rows)]
    assert "GEMM on pre-converted codes: F.linear(x, q_fp32)" not in shown and "bfloat16 F.linear" not in shown
    assert len(shown) == 4
    brief = bench.verdict(rows, brief=True)
    assert brief == [
        "M = 1: bfloat16 F.linear takes 0.90x the fp32 time",
        "M = 1: dequantize-then-matmul (per-channel) takes 1.00x the fp32 time",
        "M = 1: against the faster dense product, bfloat16 F.linear: int4 g128 weight-only 0.94x (too close to call)",
    ], brief
    assert not any("preallocated" in line or "IQR" in line for line in brief)
    slow_draw = _rows(
        1,
        {
            "fp32 F.linear (baseline)": 14.0,
            "GEMM on pre-converted codes: F.linear(x, q_fp32)": 10.0,
            "fused int4 weight-only group 128": 7.0,
        },
    )  # the brief line compares with the F.linear the table shows, not its hidden twin
    assert bench.verdict(slow_draw, brief=True)[-1].endswith("fp32 F.linear: int4 g128 weight-only 0.50x (faster)")
    assert "0.70x" in bench.faster_than_dense(slow_draw, 1)
    bw = bench.roofline_bandwidth(bench.Bandwidth(4.0, 2.0), [bench.GemmRow("cpu", 1, "fp32", 1.0, 1.0, 6e6, 6.0, 0)])
    lines = bench.detail_lines(bw)
    assert lines[0] == "CPU memory bandwidth: copy 4.0 GB/s, read-only reduction 2.0 GB/s"
    assert lines[2].startswith("roofline bandwidth 6.0 GB/s: an M = 1 row streamed its weight faster")


def test_gpu_options_are_checked_and_the_lone_twin_is_not_a_stored_run(tmp_path):
    with pytest.raises(ValueError, match="back_to_back=0"):
        bench.run(ms=(1,), k=64, n=64, back_to_back=0, progress=False)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="needs a CUDA GPU"):
            bench.gpu_main()
    for name in ("gemm_a.csv", "gemm_a_alone.csv"):
        (tmp_path / name).write_text("")
    assert [p.name for p in bench.stored_results(tmp_path)] == ["gemm_a.csv"]

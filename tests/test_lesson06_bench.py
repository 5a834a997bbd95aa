"""Lesson 06's benchmark: the roofline's read rate, the separate round for allocating rows, the noise line."""

from qlesson.bench import gemm as bench


def _row(name, ms, gb_s, note=""):
    return bench.GemmRow("cpu", 1, name, ms, 1.0, 64 * 10**6, gb_s, 0.0, note)


def test_the_roofline_reads_only_the_fp32_pair():
    rows = [
        _row("fp32 F.linear (baseline)", 10.0, 6.4),
        _row("GEMM on pre-converted codes: F.linear(x, q_fp32)", 11.0, 5.8),
        _row("input-channel scale folded into x: F.linear(x * s_in, q_fp32)", 3.0, 21.0, bench.FOLDED),
    ]
    assert bench.streaming_read_gb_s(rows) == (6.4, "fp32 F.linear (baseline)")


def test_too_noisy_when_busy_or_the_identical_pair_disagrees():
    pair = [_row("fp32 F.linear (baseline)", 10.0, 6.4), _row("GEMM on pre-converted codes", 10.5, 6.1)]
    assert not bench.too_noisy(pair, load=0.5, cores=2)
    assert bench.too_noisy(pair, load=2.5, cores=2)
    assert bench.too_noisy([pair[0], _row("GEMM on pre-converted codes", 12.0, 5.3)], load=0.5, cores=2)


def test_allocating_rows_are_timed_and_kept_in_order():
    rows = bench.run(ms=(1,), k=256, n=128, min_run_time=0.001, progress=False, copies=1, rows_for=bench.LESSON_ROWS)
    names = [r.method for r in rows]
    assert [p for p in bench.LESSON_ROWS[1] if any(n.startswith(p) for n in names)] == list(bench.LESSON_ROWS[1])
    assert all(names.index(a) < names.index(b) for a, b in zip(names, names[1:], strict=False))
    assert any(n.startswith(bench.ALLOCATING) for n in names) and all(r.median_ms > 0 for r in rows)

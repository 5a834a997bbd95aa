"""Lesson 09's full study as ``python -m qlesson.teach.smarter`` stored it: its shape, and the claims read from it.

Regenerating it takes several minutes of float64 work (``python -m qlesson.teach.smarter``); these
tests check the stored reading instead: every row is there, the bits per weight are what the
footprint arithmetic gives for MiniLM's 36 layers, and each sentence of the lesson's *Going deeper*
that reads the table still holds.
"""

import pytest

from qlesson.quant.footprint import total_footprint
from qlesson.quant.granularity import PerChannel, PerGroup
from qlesson.teach import smarter

SHAPES = [(384, 384)] * 4 * 6 + [(1536, 384)] * 6 + [(384, 1536)] * 6  # MiniLM's encoder Linear layers
GRANS = {"per-channel": PerChannel(0), "per-group 128": PerGroup(128), "per-group 32": PerGroup(32)}


@pytest.fixture(scope="module")
def full():
    stored = smarter.load_full_study(missing_ok=True)
    if stored is None:
        pytest.skip(f"{smarter.STUDY_PATH} is not stored: run `python -m qlesson.teach.smarter` (several minutes)")
    return stored


def test_every_method_and_setting_is_stored_with_its_bits_per_weight(full):
    rows = full["study"]
    labels = {(r["method"], r["weights"]) for r in rows}
    settings = [f"int{b} {g}" for b, g in smarter.STUDY_SETTINGS]
    assert labels == {(m, s) for m in smarter.METHODS for s in settings}
    for r in rows:
        bits, gran = r["weights"].split(" ", 1)
        expected = total_footprint(SHAPES, int(bits[3:]), GRANS[gran]).bits_per_weight
        assert r["bits/weight"] == pytest.approx(expected)
        assert 0 < r["calib err"] < 1 and 0 < r["output err"] <= r["worst layer"] < 1
    assert [c["A - B"] for c in full["comparisons"]] == [
        f"{' '.join(a)} - {' '.join(b)}" for a, b in smarter.study_pairs()
    ]


def test_gptq_per_channel_wins_on_calibration_tokens_only(full):
    study = full["study"]
    for bits in (4, 3):
        gq = smarter.find(study, "GPTQ", f"int{bits} per-channel")
        g32 = smarter.find(study, "RTN", f"int{bits} per-group 32")
        assert gq["calib err"] < g32["calib err"]
        assert gq["output err"] > g32["output err"] and gq["mean cosine"] < g32["mean cosine"]
    verdicts = {c["A - B"]: c["better (A, B or tie): err; cos; rank"] for c in full["comparisons"]}
    assert verdicts["GPTQ int4 per-channel - RTN int4 per-group 32"] == "B; B; B"
    assert verdicts["GPTQ int3 per-channel - RTN int3 per-group 32"] == "B; B; B"
    assert verdicts["GPTQ int4 per-group 128 - RTN int4 per-group 32"] == "A; A; A"


def test_the_fit_shows_in_gptq_and_not_in_awq_or_rtn(full):
    study = full["study"]
    settings = {r["weights"] for r in study}
    for method, lo, hi in (("RTN", 0.95, 1.1), ("AWQ", 0.95, 1.1), ("GPTQ", 1.6, 2.0)):
        for s in settings:
            r = smarter.find(study, method, s)
            assert lo < r["output err"] / r["calib err"] < hi, (method, s)


def test_orders_the_lesson_reads(full):
    study = full["study"]
    for s in {r["weights"] for r in study}:
        rows = [r for r in study if r["weights"] == s]
        assert [r["method"] for r in sorted(rows, key=lambda r: r["output err"])] == ["AWQ+GPTQ", "GPTQ", "AWQ", "RTN"]
        assert min(rows, key=lambda r: r["worst layer"])["method"] == "AWQ"
    by_type = {r["layer type"]: r for r in full["by_type"]}
    assert [t for t, r in by_type.items() if r["lower"] == "A"] == ["intermediate"]
    assert 1.7 < by_type["output"]["A / B"] < 2.5 and 1.7 < by_type["output"]["row max / g32 max"] < 2.3
    assert max(by_type, key=lambda t: by_type[t]["A held-out / calib"]) == "attention output"
    # against RTN per-channel (ref), GPTQ does on the FFN output about as well as on query, key and value (0.55x)
    ref = {t: r["A: GPTQ int4 per-channel"] / r["ref: RTN int4 per-channel"] for t, r in by_type.items()}
    assert round(ref["output"], 2) == 0.55
    assert all(abs(ref[t] - ref["output"]) < 0.03 for t in ("query", "key", "value"))


def test_held_out_rows_measure_what_output_error_measures():
    """The main line's fast study: the per-sentence sums give the held-out error of the Hessian formula."""
    import torch

    gen = torch.Generator().manual_seed(9)
    x = torch.randn(90, 16, generator=gen, dtype=torch.float64)
    cal = {"L0.query": x[:60], "L0.key": x[:60].clone(), "L0.output": torch.randn(60, 32, generator=gen).double()}
    held = {"L0.query": x[60:], "L0.key": x[60:], "L0.output": torch.randn(30, 32, generator=gen).double()}
    weights = {"L0.query": torch.randn(8, 16, generator=gen), "L0.key": torch.randn(8, 16, generator=gen)}
    weights["L0.output"] = torch.randn(16, 32, generator=gen)
    shared, plain = smarter.shared_layers(weights, cal), smarter.layers(weights, cal)
    assert shared["L0.query"].h is shared["L0.key"].h  # one Hessian for layers that read the same inputs
    assert all(torch.equal(shared[n].h, plain[n].h) for n in weights)
    variants = [("RTN", 4, PerChannel(0)), ("GPTQ", 4, PerGroup(8))]
    rows, per, norms = smarter.held_out_rows(weights, cal, held, [3] * 10, variants)
    assert per["GPTQ int4 per-group 8"].shape == norms.shape == (3, 10)
    for (method, bits, g), row in zip(variants, rows, strict=True):
        new = {n: smarter.quantized(plain[n], bits, g, (method,))[method] for n in weights}
        direct = [smarter.output_error(weights[n], new[n], smarter.hessian(held[n].double())) for n in weights]
        assert row["held-out err"] == pytest.approx(sum(direct) / len(direct), rel=1e-9)
        fit = [smarter.output_error(weights[n], new[n], plain[n].h) for n in weights]
        assert row["calib err"] == pytest.approx(sum(fit) / len(fit), rel=1e-12)
        assert row["held-out / calib"] == pytest.approx(row["held-out err"] / row["calib err"])

"""Lesson 08: the stored reading of ``python -m qlesson.bench lesson08`` against a fresh run of its cheap
part (bits per weight and SQNR need no embedding), section 4's control and Going deeper's."""

import numpy as np
import pytest
import torch

import qlesson as ql
from qlesson.bench import lessons
from qlesson.quant import microscaling
from qlesson.teach import format_study, models, scale_bits


@pytest.fixture(scope="module")
def weights():
    model = models.load_minilm()
    return {n: w for n, w in models.linear_weights(model).items() if n != "pooler"}


@pytest.fixture(scope="module")
def reading():
    stored = lessons.load("08")
    if stored is None:
        pytest.skip(f"{lessons.PATHS['08']} is not stored: run `python -m qlesson.bench lesson08` (minutes)")
    return stored


def test_stored_reading_has_every_format_and_pair(reading):
    assert [r["format"] for r in reading["table"]] == list(format_study.METHODS)
    assert [r["A - B"] for r in reading["comparisons"]] == [f"{a} - {b}" for a, b in lessons.PAIRS_08]
    assert [r["A - B"] for r in reading["rule_comparisons"]] == [f"{a} - {b}" for a, b in lessons.RULE_PAIRS_08]
    assert len(reading["lines"]) == 6


@pytest.mark.parametrize("method", ["int4 g32", "Q4_0", "MXFP4 floor", "NVFP4", "Q6_K"])
def test_stored_sqnr_and_bits_match_a_fresh_run(reading, weights, method):
    row = next(r for r in reading["table"] if r["format"] == method)
    total = sum(float(w.double().square().sum()) for w in weights.values())
    err = sum(float((format_study.fake(w, method) - w).double().square().sum()) for w in weights.values())
    numel = sum(w.numel() for w in weights.values())
    bits = sum(format_study.bits_per_weight(tuple(w.shape), method) * w.numel() for w in weights.values()) / numel
    assert row["bits per weight"] == pytest.approx(bits)
    assert row["SQNR dB"] == pytest.approx(10 * np.log10(total / err), abs=0.005)


def test_oversized_scale_control_depends_on_the_factor(weights):
    """Going deeper's control: drawn per block, a too-large scale costs FP4 less than int4; one fixed factor can
    say either (1.5 puts every block's top on FP4's tick 4, 1.2 midway between 4 and 6)."""
    rows = {r["scale"]: r for r in scale_bits.oversized_scale_rows(weights, factors=(1.0, 1.2, 1.5))}
    rows["random"] = scale_bits.random_oversized_row(weights, up_to=1.5)
    i4, fp4 = "int4 -7..7 SQNR dB", "FP4 E2M1 SQNR dB"
    lost = {k: (rows["exact"][i4] - r[i4], rows["exact"][fp4] - r[fp4]) for k, r in rows.items()}
    assert abs(rows["exact"][i4] - rows["exact"][fp4]) < 0.1  # the grids tie with exact scales
    assert lost["random"][1] < lost["random"][0] - 0.5  # drawn per block: FP4 loses less
    assert lost["1.5x too large"][1] < 1 < 3 < lost["1.5x too large"][0]  # "under a dB"
    assert lost["1.2x too large"][1] > lost["1.2x too large"][0]  # "FP4 loses more than int4"


def test_power_of_two_rule_and_grid(weights):
    """Section 4: the floor rule costs dB; a power of two fitted to each grid narrows the FP4 - int4 gap."""
    g = {r["scale format"]: r for r in scale_bits.grid_rows(weights, block=32, formats=("fp32", "E8M0 floor"))}
    g["best"] = scale_bits.pow2_best_row(weights, block=32)
    assert all(g[k]["FP4 - int4 dB"] > 0 for k in ("E8M0 floor", "best"))
    assert 0.9 < g["E8M0 floor"]["FP4 - int4 dB"] < 1.2 and 0.4 < g["best"]["FP4 - int4 dB"] < 0.7  # 1.1, 0.6
    for k in ("E8M0 floor", "best"):  # "dB, not hundredths", and the fitted power never loses to the rule
        assert g["fp32"]["int4 -7..7 SQNR dB"] - g[k]["int4 -7..7 SQNR dB"] > 1
        assert g["fp32"]["FP4 E2M1 SQNR dB"] - g[k]["FP4 E2M1 SQNR dB"] > 0.5
    assert g["best"]["int4 -7..7 SQNR dB"] > g["E8M0 floor"]["int4 -7..7 SQNR dB"]


def test_a_tenth_of_a_tick_per_layer(weights):
    """Section 3: a 5-bit sub-scale on int4 codes costs 0.007 to 0.021 dB per layer, the most on L0.output."""
    loss = {
        n: scale_bits.rule_rows(w, 32, 4, 8, formats=("5-bit x fp16",))[0]["SQNR loss dB"] for n, w in weights.items()
    }
    assert max(loss, key=loss.get) == "L0.output"
    assert 0.005 < min(loss.values()) and max(loss.values()) < 0.025


def test_nvfp4_without_tensor_scale_clamp(weights):
    x = weights["L0.intermediate"].numpy()
    sq = {}
    for factor in (1, 100):
        y = x / factor
        for label, back in (
            ("ts", microscaling.quantize_nvfp4(y).values()),
            ("clamp", microscaling.quantize_nvfp4(y, 1.0).values()),
        ):
            sq[factor, label] = ql.errors(torch.from_numpy(y), torch.from_numpy(back)).sqnr_db
    assert 0.05 < sq[1, "ts"] - sq[1, "clamp"] < 0.15  # "about a tenth of a dB"
    assert sq[100, "clamp"] < 1 and abs(sq[100, "ts"] - sq[1, "ts"]) < 0.01

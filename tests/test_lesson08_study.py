"""Lesson 08: the stored reading of ``python -m qlesson.bench lesson08`` against a fresh run of its cheap
part (bits per weight and SQNR need no embedding), and the main line's two controls of section 4."""

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


def test_oversized_scale_control_float_grid_keeps_its_step(weights):
    rows = {r["scale"]: r for r in scale_bits.oversized_scale_rows(weights)}
    i4, fp4 = "int4 -7..7 SQNR dB", "FP4 E2M1 SQNR dB"
    assert abs(rows["exact"][i4] - rows["exact"][fp4]) < 0.1  # the grids tie with exact scales
    assert rows["exact"][i4] - rows["1.5x too large"][i4] > 3  # int4 loses several dB
    assert rows["exact"][fp4] - rows["1.5x too large"][fp4] < 1  # FP4 well under one


def test_nvfp4_without_tensor_scale_clamp_and_subnormals(weights):
    x = weights["L0.intermediate"].numpy()
    sq = {}
    for factor in (1, 100):
        y = x / factor
        for label, back in (
            ("ts", microscaling.quantize_nvfp4(y).values()),
            ("clamp", microscaling.quantize_nvfp4(y, 1.0).values()),
            ("sub", scale_bits.nvfp4_subnormal_values(y)),
        ):
            sq[factor, label] = ql.errors(torch.from_numpy(y), torch.from_numpy(back)).sqnr_db
    assert 0.05 < sq[1, "ts"] - sq[1, "clamp"] < 0.15  # "about a tenth of a dB"
    assert 0 <= sq[1, "ts"] - sq[1, "sub"] < 0.02  # "about a hundredth"
    assert sq[100, "clamp"] < 1 and sq[100, "sub"] < 1 and abs(sq[100, "ts"] - sq[1, "ts"]) < 0.01

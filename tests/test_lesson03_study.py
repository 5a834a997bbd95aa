"""Lesson 03: the stored reading of ``python -m qlesson.bench lesson03`` (its Going-deeper studies) against a
fresh run of one of its settings."""

import pytest

import qlesson as ql
from qlesson.bench import lessons
from qlesson.teach import models, studies


@pytest.fixture(scope="module")
def reading():
    stored = lessons.load("03")
    if stored is None:
        pytest.skip(f"{lessons.PATHS['03']} is not stored: run `python -m qlesson.bench lesson03` (minutes)")
    return stored


def test_stored_reading_has_every_setting_and_step(reading):
    assert [r["weights"] for r in reading["table"]] == lessons.ORDER_03
    assert [r["A - B"] for r in reading["steps"]] == [f"{a} - {b}" for a, b in lessons.STEPS_03]
    assert len(reading["split"]) == 2


def test_stored_row_matches_a_fresh_run(reading):
    fresh = studies.embedding_scores(models.load_minilm(), [(3, ql.PerChannel(0))])["int3 per-channel"].row()
    stored = next(r for r in reading["table"] if r["weights"] == "int3 per-channel")
    for key in ("bits/weight", "mean cosine", "worst cosine", "rank corr"):
        assert stored[key] == pytest.approx(fresh[key], abs=1e-6)
    assert stored["cosine 95% CI"] == pytest.approx(fresh["cosine 95% CI"], abs=1e-6)

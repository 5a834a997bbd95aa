"""Lesson 03's new exercise tasks and predictions: each named mistake is caught, hidden cases exist,
and what the lesson's prose says about its tasks' cases is true."""

import pytest
import torch

from qlesson.course.checking import same
from qlesson.course.recall import predictions
from qlesson.lessons import l03_per_channel_on_real_weights as l03

NEW = ("03.conv1d_scales", "03.erased_channels", "03.verdict")
TASKS = {t.task_id: t for t in l03.TASKS}


@pytest.mark.parametrize("task_id", NEW)
def test_every_named_mistake_fails_on_a_visible_or_hidden_case(task_id):
    t = TASKS[task_id]
    cases = [c.resolve() for c in t.cases]
    assert any(c.hidden for c in t.cases) and any(not c.hidden for c in t.cases)
    for m in t.mistakes:
        assert any(not same(m.fn(*a), t.reference(*a), t.rtol, t.atol) for a in cases), m.description


def test_the_square_conv1d_case_catches_the_linear_habit_by_value_not_by_shape():
    t = TASKS["03.conv1d_scales"]
    square = [c.resolve() for c in t.cases if c.resolve()[0].shape[0] == c.resolve()[0].shape[1]]
    assert square
    w, bits = square[0]
    assert t.mistakes[0].fn(w, bits).shape == t.reference(w, bits).shape
    assert not same(t.mistakes[0].fn(w, bits), t.reference(w, bits), t.rtol, t.atol)


def test_exactly_half_a_tick_rounds_to_zero_as_the_erased_task_says():
    # the first case's shared int4 scale is exactly 1.0 and channel 1 reaches exactly 0.5
    w, bits = TASKS["03.erased_channels"].cases[0].resolve()
    assert float(w.abs().max()) / 7 == 1.0 and float(w[:, 1].abs().max()) == 0.5
    assert float(torch.round(torch.tensor(0.5))) == 0.0
    assert l03._erased_channels(w, bits) == 2


def test_the_verdict_reads_only_whole_intervals():
    assert [l03._verdict(lo, hi) for lo, hi in ((0.1, 0.2), (-0.2, -0.1), (-0.1, 0.2))] == ["A", "B", "tie"]


def test_two_predictions_each_with_one_right_option_and_explained_wrong_ones():
    ps = predictions("03")
    assert set(ps) == {"spread", "cosine"}
    for q in ps.values():
        assert 2 <= len(q.options) <= 5 and sum(o.correct for o in q.options) == 1
        assert all(len(o.why) > 40 for o in q.options)

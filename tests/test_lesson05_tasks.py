"""Lesson 05's exercise tasks: each named mistake is caught on some case, the decision tasks have hidden
cases, and the which-tool task separates a [CLS]-style spike from a feature loud on most tokens."""

import pytest
import torch

from qlesson.course.checking import same
from qlesson.lessons import l05_zero_points_and_activations as l05

TASKS = {t.task_id: t for t in l05.TASKS}


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_every_named_mistake_fails_on_some_case(task_id):
    t = TASKS[task_id]
    cases = [c.resolve() for c in t.cases]
    for m in t.mistakes:
        assert any(not same(m.fn(*a), t.reference(*a), t.rtol, t.atol) for a in cases), m.description


@pytest.mark.parametrize("task_id", ["05.loudest_after_smoothing", "05.which_tool", "05.choose_ruler"])
def test_decision_tasks_have_hidden_cases(task_id):
    assert any(c.hidden for c in TASKS[task_id].cases) and any(not c.hidden for c in TASKS[task_id].cases)


def test_which_tool_reads_where_the_loud_values_sit():
    spike = l05._cls_spike(24, 16, 6, 3, 30.0)
    loud = l05._loud_features(20, 12, {5: 20.0})
    assert l05._which_tool(spike) == "per-token" and l05._which_tool(loud) == "smooth"
    assert l05._which_by_column_absmax(spike) == "smooth"  # the column view alone cannot tell


def test_the_quietest_token_rule_is_caught_by_a_hidden_case():
    t = TASKS["05.choose_ruler"]
    hidden = [c.resolve() for c in t.cases if c.hidden]
    assert any(l05._choose_quietest_token(*a) != l05._choose_ruler(*a) for a in hidden)


def test_an_unrounded_zero_point_does_not_bring_zero_back():
    x = torch.tensor([0.0, -0.17, 24.7])  # zero point -min / scale = 1.74, not a whole code
    assert float(l05._asym_roundtrip(x, 8)[0]) == 0.0
    assert float(l05._float_zero_point(x, 8)[0]) != 0.0


def test_a_loud_weight_column_keeps_a_feature_loud_after_smoothing():
    x, w = l05._smoothing_case(10, 8, 4, {2: 20.0, 5: 6.0}, {5: 8.0})
    assert int(x.abs().amax(0).argmax()) == 2 and l05._loudest_after_smoothing(x, w, 0.5) == 5

"""Lesson 03's new exercise tasks and predictions: each named mistake is caught, hidden cases exist,
and what the lesson's prose says about its tasks' cases is true."""

import pytest
import torch

from qlesson.course.checking import same
from qlesson.course.recall import predictions
from qlesson.lessons import l03_per_channel_on_real_weights as l03

NEW = ("03.einsum_scales", "03.erased_channels", "03.min_bits")
TASKS = {t.task_id: t for t in l03.TASKS}


@pytest.mark.parametrize("task_id", NEW)
def test_every_named_mistake_fails_on_a_visible_or_hidden_case(task_id):
    t = TASKS[task_id]
    cases = [c.resolve() for c in t.cases]
    assert any(c.hidden for c in t.cases) and any(not c.hidden for c in t.cases)
    for m in t.mistakes:
        assert any(not same(m.fn(*a), t.reference(*a), t.rtol, t.atol) for a in cases), m.description


def test_exactly_half_a_tick_rounds_to_zero_as_the_erased_task_says():
    # the first case's shared int4 scale is exactly 1.0 and channel 1 reaches exactly 0.5
    w, bits = TASKS["03.erased_channels"].cases[0].resolve()
    assert float(w.abs().max()) / 7 == 1.0 and float(w[:, 1].abs().max()) == 0.5
    assert float(torch.round(torch.tensor(0.5))) == 0.0
    assert l03._erased_channels(w, bits) == 2


def test_two_predictions_each_with_one_right_option_and_explained_wrong_ones():
    ps = predictions("03")
    assert set(ps) == {"cosine", "axis"}
    for q in ps.values():
        assert 2 <= len(q.options) <= 5 and sum(o.correct for o in q.options) == 1
        assert all(len(o.why) > 40 for o in q.options)


def test_min_bits_is_where_the_quietest_row_first_survives():
    w = torch.tensor([[7.0, -2.0, 1.0], [0.5, -0.25, 0.1], [1.5, 0.3, -0.2]])
    # int4: the shared scale is exactly 1.0 and row 1 reaches exactly half a tick, which rounds to 0
    assert l03._all_zero_rows(w, 4).tolist() == [False, True, False]
    assert l03._min_bits(w) == 5
    kept_half = TASKS["03.min_bits"].mistakes[2]
    assert "half a tick" in kept_half.description and kept_half.fn(w) == 4


def test_spread_by_type_reports_the_worst_layer_by_name():
    from qlesson.teach import studies

    g = torch.Generator().manual_seed(0)
    weights = {f"L{i}.query": torch.randn(8, 4, generator=g) for i in range(4)}
    weights["L1.query"][0, 0] = 40.0  # one loud layer: its per-tensor SQNR is the worst
    (row,) = studies.spread_by_type(weights, lowest=True)
    ratios = torch.tensor([float(w.abs().amax(1).max() / w.abs().amax(1).median()) for w in weights.values()])
    assert row["worst max/median"] == pytest.approx(float(ratios.max()))
    assert row["lowest per-tensor layer"] == "L1"
    assert "its dB" not in studies.spread_by_type(weights)[0]
    assert row["its dB"] < row["mean int4 SQNR per-tensor dB"]


def test_min_bits_names_the_asymmetric_step_count_and_the_per_row_scale():
    from qlesson.course.checking import evaluate

    t = TASKS["03.min_bits"]

    def asymmetric(w):  # divides by 2**bits - 1, the largest code of bits + 1 symmetric bits
        return next(b for b in range(2, 17) if (torch.round(w / (w.abs().max() / (2**b - 1))) != 0).any(1).all())

    v = evaluate(t, asymmetric)
    assert v.status == "fail" and "2**bits - 1" in v.mistake
    v = evaluate(t, lambda w: 2)
    assert v.status == "fail" and "its own scale" in v.mistake


def test_the_einsum_task_catches_the_per_head_habit_on_a_cube_hidden_case():
    t = TASKS["03.einsum_scales"]
    cube = [c.resolve() for c in t.cases if c.hidden and len(set(c.resolve()[0].shape)) == 1]
    assert cube
    w, bits = cube[0]
    habit = t.mistakes[0]
    assert "per head" in habit.description and habit.fn(w, bits).shape == t.reference(w, bits).shape
    assert not same(habit.fn(w, bits), t.reference(w, bits), t.rtol, t.atol)
    z = torch.randn(2, *w.shape[:2], dtype=torch.float64)
    y = torch.einsum("bhd,hdm->bm", z, w.double())
    w2 = w.double().clone()
    w2[..., 0] *= 2  # doubling the slice of output 0 changes column 0 of y only
    y2 = torch.einsum("bhd,hdm->bm", z, w2)
    assert torch.equal(y[:, 1:], y2[:, 1:]) and not torch.equal(y[:, 0], y2[:, 0])


def test_any_zero_and_every_weight_nonzero_are_named():
    from qlesson.course.checking import evaluate

    def any_zero(w, bits):  # a channel with some zero code counted as erased
        codes = torch.round(w / (w.abs().max() / (2 ** (bits - 1) - 1)))
        return int((codes == 0).any(0).sum())

    v = evaluate(TASKS["03.erased_channels"], any_zero)
    assert v.status == "fail" and "some zero code" in v.mistake

    def all_nonzero(w):  # every weight must survive; falls off the loop (None) on the real layers
        for bits in range(2, 17):
            if (torch.round(w / (w.abs().max() / (2 ** (bits - 1) - 1))) != 0).all():
                return bits

    v = evaluate(TASKS["03.min_bits"], all_nonzero)
    assert v.status == "fail" and "every weight" in v.mistake


def test_a_right_axis_with_a_hard_coded_7_and_an_asymmetric_count_are_named():
    from qlesson.course.checking import evaluate

    v = evaluate(TASKS["03.einsum_scales"], lambda w, b: w.abs().amax(dim=(0, 1)) / 7)
    assert v.status == "fail" and "axis is right" in v.mistake
    erased = TASKS["03.erased_channels"]
    v = evaluate(erased, lambda w, b: int((torch.round(w / (w.abs().max() / (2**b - 1))) == 0).all(dim=0).sum()))
    assert v.status == "fail" and "2**bits - 1" in v.mistake
    v = evaluate(erased, lambda w, b: 0)
    assert v.status == "fail" and v.mistake.startswith("came back 0")


def test_a_shared_scale_without_abs_and_a_signed_row_max_are_caught_and_named():
    """A negated hidden case: w.max() is not the absmax there, so forgetting abs() fails and is named."""
    from qlesson.course.checking import evaluate

    def erased_no_abs(w, b):
        return int((torch.round(w / (w.max() / (2 ** (b - 1) - 1))) == 0).all(dim=0).sum())

    v = evaluate(TASKS["03.erased_channels"], erased_no_abs)
    assert v.status == "fail" and "w.max()" in v.mistake

    def min_bits_no_abs(w):
        for b in range(2, 17):
            if not (torch.round(w / (w.max() / (2 ** (b - 1) - 1))) == 0).all(dim=1).any():
                return b

    v = evaluate(TASKS["03.min_bits"], min_bits_no_abs)
    assert v.status == "fail" and "w.max()" in v.mistake

    def min_bits_signed_rows(w):
        for b in range(2, 17):
            if (w.amax(1) > w.abs().max() / (2 ** (b - 1) - 1) / 2).all():
                return b

    v = evaluate(TASKS["03.min_bits"], min_bits_signed_rows)
    assert v.status == "fail" and "w.amax(1)" in v.mistake


def test_a_divisor_mistake_on_the_right_axis_says_the_axis_is_right():
    from qlesson.course.checking import evaluate

    for divisor in (lambda b: 2 ** (b - 1), lambda b: (2**b - 1) / 2):
        v = evaluate(TASKS["03.einsum_scales"], lambda w, b, d=divisor: w.abs().amax(dim=(0, 1)) / d(b))
        assert v.status == "fail" and v.mistake.startswith("the axis is right")

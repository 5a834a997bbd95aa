"""Lesson 02's claims: the rescue threshold, the row near the shared ticks, MiniLM's counts, and the tasks."""

import torch

import qlesson as ql
from qlesson.course.tasks import tasks
from qlesson.teach import analysis, examples


def test_row_a_gets_its_first_nonzero_code_past_the_recall_threshold():
    w = examples.two_rows()
    for m, nonzero in ((1.47, False), (1.49, True)):
        scaled = w.clone()
        scaled[0] *= m
        assert bool((ql.quantize(scaled, 4).q[0] != 0).any()) == nonzero


def test_the_row_near_the_shared_ticks_gets_more_error_from_its_own_ruler():
    pt, pc = analysis.method_table(torch.tensor([[3.0, 1.05, -2.0, 2.0], [7.0, -5.0, 1.0, 2.0]]), bits=4)
    assert pc["row 0 MAE"] > pt["row 0 MAE"] > 0
    assert round(pt["row 0 MAE"], 4) == 0.0125 and round(pc["row 0 MAE"], 2) == 0.12  # the predict's numbers


def test_rescued_rows_agree_with_quantize():
    w = torch.randn(12, 16, generator=torch.Generator().manual_seed(0)) * torch.logspace(-2, 0, 12)[:, None]
    w[3] = 0
    for bits in (2, 3, 4, 8):
        shared = ql.quantize(w, bits).q
        own = ql.quantize(w, bits, granularity=ql.PerChannel(0)).q
        expected = (shared == 0).all(1) & (own != 0).any(1)
        assert torch.equal(tasks()["02.rescued_rows"].reference(w, bits).bool(), expected)


def test_on_minilm_no_row_loses_to_its_own_int4_scale_and_few_lose_at_int8():
    """Going deeper's count over the 36 Linear weights MiniLM runs (the unused pooler left out): rows whose MAE is
    higher per-channel than per-tensor, and the near-loudest breakdown."""
    from qlesson.teach import models

    worse, near_worse, near_change, rows = {4: 0, 8: 0}, {4: 0, 8: 0}, {4: [], 8: []}, 0
    near_corr, near_rel = {4: [], 8: []}, []
    weights = {k: w for k, w in models.minilm_linear_weights().items() if k != "pooler"}
    assert len(weights) == 36
    for w in weights.values():
        rows += w.shape[0]
        rel = w.abs().amax(1) / w.abs().max()
        near = (rel >= 0.95) & (rel < 1)
        near_rel += rel[near].tolist()
        for bits in worse:
            e_pt = (ql.fake_quantize(w, bits) - w).abs()
            e_pc = (ql.fake_quantize(w, bits, granularity=ql.PerChannel(0)) - w).abs()
            pt, pc = e_pt.mean(1), e_pc.mean(1)
            near_corr[bits] += [
                float(torch.corrcoef(torch.stack(p))[0, 1]) for p in zip(e_pt[near], e_pc[near], strict=True)
            ]
            worse[bits] += int((pc > pt).sum())
            near_worse[bits] += int(((pc > pt) & near).sum())
            near_change[bits] += (pc / pt - 1)[near].tolist()
    assert (worse, rows) == ({4: 0, 8: 9}, 20_736)  # printed: 0 and 9 of 20,736
    assert near_worse == {4: 0, 8: 9} and len(near_change[8]) == len(near_change[4]) == 33  # all losers near-loudest
    assert -0.115 < min(near_change[8]) < -0.105 and 0.045 < max(near_change[8]) < 0.055  # printed: -11% to +5%
    assert -0.07 < min(near_change[4]) < -0.06 and -0.01 < max(near_change[4]) < -0.005  # printed: -7% to -1%
    # Going deeper's mechanism: the largest value moves qmax (1 - rel) ticks, under one at int4, several at int8;
    # per-value errors under the two rulers track each other at int4, not at int8 (mean per-row correlation)
    assert (round(7 * (1 - min(near_rel)), 2), round(127 * (1 - min(near_rel)), 2)) == (0.35, 6.32)
    corr = {b: sum(c) / len(c) for b, c in near_corr.items()}
    assert (round(corr[4], 2), round(corr[8], 2)) == (0.96, 0.09)


def test_worse_rows_flags_section_4s_row_0_and_not_its_control():
    w = torch.tensor([[3.0, 1.05, -2.0, 2.0], [7.0, -5.0, 1.0, 2.0], [3.0, 1.25, -2.3, 1.8]])
    assert tasks()["02.worse_rows"].reference(w, 4).tolist() == [1, 0, 0]
    pt, pc = analysis.method_table(w, bits=4)
    assert pt["row 2 q"] == pt["row 0 q"] == [3, 1, -2, 2]  # the control: same absmax, same shared codes
    assert (round(pt["row 2 MAE"], 2), round(pc["row 2 MAE"], 2)) == (0.19, 0.07)  # section 4's sentence
    assert 2 < pt["row 2 MAE"] / pc["row 2 MAE"] < 3  # a typical gain (MiniLM's median row: about 2.4x)
    assert not (w[1] % 1 == 0.5).any()  # row 1 only sets the scale: no exact ties


def test_the_lesson_widget_hides_the_asymmetric_switch():
    from qlesson.teach import widgets

    ui = widgets.two_rows_explorer(asymmetric=False)
    assert [c.value for c in ui.children[1].children] == ["per-tensor"]
    assert "zero point" not in ui.children[2].value


def test_the_float64_quotient_lands_below_the_tie():
    assert torch.round(torch.tensor(0.05, dtype=torch.float64) / (0.1 / 127)) == 63  # what Going deeper says


def test_rescued_rows_is_not_fooled_by_codes_that_cancel():
    from qlesson.lessons import l02_one_ruler_or_many as l02

    row = torch.tensor([[7.0, 0.0, 0.0, 0.0], [0.6, -0.6, 0.0, 0.0]])  # shared scale 1: codes [1, -1, 0, 0]
    assert tasks()["02.rescued_rows"].reference(row, 4).tolist() == [0, 0]
    assert any("summed the codes" in m.description for m in tasks()["02.rescued_rows"].mistakes)
    assert (l02._EDGES == torch.tensor([0.6, -0.6, 0.0, 0.0])).all(1).any()


def test_the_erased_prediction_tells_the_two_divisors_apart():
    from qlesson.lessons import l02_one_ruler_or_many as l02

    assert l02._erased_rows(l02.qmax) == ([3, 4, 5, 6, 7], [4, 5, 6, 7], [])
    assert l02._erased_rows(lambda b: 2 ** (b - 1)) == ([4, 5, 6, 7], [5, 6, 7], [])


def test_the_worse_prediction_rows_lose_only_off_their_own_ticks():
    assert tasks()["02.worse_prediction"].reference() == [1, 5]


def test_the_exercise_shows_the_rows_the_prediction_is_graded_on():
    """Exercise 02's task 2 prints its rows as a literal; the grader holds its own copy: they must be the same rows."""
    import ast
    from pathlib import Path

    from qlesson.lessons.l02_one_ruler_or_many import _NEW_ROWS

    source = (Path(__file__).parents[1] / "exercises" / "solutions" / "02_one_ruler_or_many.py").read_text()
    literal = source.split("rows = torch.tensor(", 1)[1].split(")\n", 1)[0]
    assert torch.equal(torch.tensor(ast.literal_eval(literal.strip())), _NEW_ROWS)


def test_the_worse_prediction_asks_for_indices_when_given_a_mask():
    from qlesson.lessons import l02_one_ruler_or_many as l02

    mask = [False, True, False, False, False, True]
    for answer in (mask, torch.tensor(mask), [int(v) for v in mask]):
        assert "not a True/False mask" in l02._judge_worse(answer)
    assert l02._judge_worse([1, 5]) is None and l02._judge_worse((5, 1)) is None
    assert "not a True/False mask" not in l02._judge_worse([0, 1])  # two indices, not a mask

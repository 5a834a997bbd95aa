"""Lesson 10, task 6: the described head's flip point is measured, sits near a quarter at 2 to 4 bits, and the
verdicts on either side hold by a margin, so float noise cannot move the answer."""

import torch

from qlesson.lessons.l10_which_axis import (
    _attention,
    _flip_share,
    _keys_per_channel,
    _sink_flip,
    _sink_margin,
    _sink_share,
    sink_head,
)


def test_the_sink_head_matches_its_description():
    q, k, v = sink_head(1.0)
    assert float(v[0].abs().mean() / v[1:].abs().mean()) < 0.01  # "a few thousandths the size of the others'"
    assert _sink_share(0.0) < 0.05 < 0.7 < _sink_share(2.0)  # little attention at shift 0, most at 2


def test_the_flip_is_near_a_quarter_at_every_bit_width_with_a_margin():
    from qlesson.course.checking import evaluate
    from qlesson.course.tasks import tasks

    task = tasks()["10.sink_flip"]
    for bits in (2, 3, 4):
        share = _flip_share(bits)
        assert 0.2 < share < 0.3
        assert _sink_flip(bits) == share
    assert _sink_margin(0.5, 2) > 0 > _sink_margin(1.5, 2)  # per channel wins well below, per token well above
    for answer in (0.21, 0.25, 0.26, 0.29, 0.31):  # a share read near the 2-bit flip passes
        assert evaluate(task, answer).status == "pass", answer
    for answer in (0.15, 0.38, 0.5):  # a coarse read on either side fails
        assert evaluate(task, answer).status == "fail", answer


def test_the_solution_scan_brackets_the_flip():
    """The solution's scan: per channel at shift 1.0 (0.25 of the attention), per token at 1.05 (0.27)."""
    assert _sink_margin(1.0, 2) > 0 > _sink_margin(1.05, 2)
    assert round(_sink_share(1.0), 2) == 0.25 and round(_sink_share(1.05), 2) == 0.27


def test_another_seed_flips_elsewhere():
    """The solution note: a head drawn with another seed flips elsewhere (seed 5: per channel still wins with
    token 0 taking over 60% of the attention)."""
    q, k, v = sink_head(2.9, seed=5)
    share = float(torch.softmax(q @ k.T / k.shape[1] ** 0.5, dim=-1)[:, 0].mean())
    o = _attention(q, k, v)
    token, channel = (float((o - _attention(q, k, _keys_per_channel(v, 2, axis=d))).square().sum()) for d in (1, 0))
    assert share > 0.6 and channel < token

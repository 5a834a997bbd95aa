"""Lesson 10, task 6: the described head's verdicts hold by a wide margin, so float noise cannot flip them."""

import torch

from qlesson.lessons.l10_which_axis import _sink_axes, _sink_errors, _sink_head


def test_the_sink_head_matches_its_description_and_its_verdicts_have_margin():
    q, k, v = _sink_head()
    share = float(torch.softmax(q @ k.T / k.shape[1] ** 0.5, dim=-1)[:, 0].mean())
    assert 0.7 < share < 0.85  # "about three quarters of all the attention"
    assert float(v[0].abs().mean() / v[1:].abs().mean()) < 0.01  # "a few thousandths the size of the others'"
    ratios = [max(err.values()) / min(err.values()) for err in _sink_errors()]
    assert min(ratios) > 2.5
    assert _sink_axes() == ("token", "channel")

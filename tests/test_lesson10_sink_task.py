"""Lesson 10, task 6: the described head's verdicts hold by a wide margin, so float noise cannot flip them."""

import torch

from qlesson.lessons.l10_which_axis import SINK_SHIFTS, _sink_axes, _sink_errors, _sink_head


def test_the_sink_head_matches_its_description_and_its_verdicts_have_margin():
    shares = []
    for shift in SINK_SHIFTS:
        q, k, v = _sink_head(shift=shift)
        shares.append(float(torch.softmax(q @ k.T / k.shape[1] ** 0.5, dim=-1)[:, 0].mean()))
        assert float(v[0].abs().mean() / v[1:].abs().mean()) < 0.01  # "a few thousandths the size of the others'"
    assert 0.7 < shares[0] < 0.85  # "about three quarters of all the attention"
    assert 0.06 < shares[1] < 0.10  # "about 8%"
    ratios = [max(err.values()) / min(err.values()) for err in _sink_errors()]
    assert min(ratios) > 1.5
    assert _sink_axes() == ("token", "channel")


def test_the_sink_heads_verdict_flips_between_a_quarter_and_30_percent():
    from qlesson.lessons.l10_which_axis import _attention, _keys_per_channel

    for shift, share_range, winner in ((1.0, (0.2, 0.25), "channel"), (1.1, (0.25, 0.3), "token")):
        q, k, v = _sink_head(shift=shift)
        share = float(torch.softmax(q @ k.T / k.shape[1] ** 0.5, dim=-1)[:, 0].mean())
        assert share_range[0] < share < share_range[1]
        o = _attention(q, k, v)
        err = {
            a: float((o - _attention(q, k, _keys_per_channel(v, 2, axis=d))).square().sum())
            for a, d in (("token", 1), ("channel", 0))
        }
        assert min(err, key=err.get) == winner

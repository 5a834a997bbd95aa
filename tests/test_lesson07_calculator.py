"""Lesson 07's calculator counts the bytes a ruler really stores."""

import pytest
import torch

import qlesson as ql
from qlesson.teach import calculator as calc


@pytest.mark.parametrize("symmetric", [True, False])
def test_memory_counts_a_zero_point_only_when_asymmetric(symmetric):
    chans = calc.parse_channels(calc.EXAMPLE)
    r = calc.compare(chans, 4, symmetric=symmetric)
    zp = 0 if symmetric else 4
    for key, gran in (("per-tensor total bytes", ql.PerTensor()), ("per-channel total bytes", ql.PerChannel(0))):
        fp = ql.footprint((4, 5), 4, gran, scale_bytes=4, zero_point_bytes=zp)
        assert r.memory[key] == fp.total_bytes
    assert r.memory["payload bytes"] == 10  # 20 values x 4 bits


def test_symmetric_zero_points_are_fixed_so_not_stored():
    chans = [torch.tensor([0.5, -1.0, 0.25]), torch.tensor([2.0, 4.0, -8.0])]
    for signed, zp in ((True, 0), (False, 128)):
        r = calc.compare(chans, 8, signed=signed, symmetric=True)
        assert {row["per-channel zero point"] for row in r.channels} == {zp}


def test_symmetric_per_channel_gain_is_the_ratio_of_largest_magnitudes():
    """Section 1's rule: the channel holding the tensor's largest |value| gains nothing."""
    chans = calc.parse_channels(calc.EXAMPLE)
    r = calc.compare(chans, 4, symmetric=True)
    top = max(float(c.abs().max()) for c in chans)
    for c, row in zip(chans, r.channels, strict=True):
        assert row["per-tensor scale"] / row["per-channel scale"] == pytest.approx(top / float(c.abs().max()), rel=1e-5)
    assert r.channels[2]["per-tensor MAE"] == r.channels[2]["per-channel MAE"]


def test_plot_can_share_one_y_scale():
    from matplotlib.figure import Figure

    r = calc.compare(calc.parse_channels(calc.EXAMPLE), 4)
    fig = calc.plot(r, Figure(), sharey=True)
    assert len({ax.get_ylim() for ax in fig.axes}) == 1


def test_exercise_asymmetric_gain_is_the_calculators_ratio_of_scales():
    """Exercise task 1's reference against the calculator itself, asymmetric: no channel of the example gains 1."""
    from qlesson.course.tasks import tasks

    chans = calc.parse_channels(calc.EXAMPLE)
    r = calc.compare(chans, 4, symmetric=False)
    ratio = [row["per-tensor scale"] / row["per-channel scale"] for row in r.channels]
    finer = tasks()["07.finer_by"].reference(torch.stack(chans))
    assert finer.tolist() == pytest.approx(ratio, rel=1e-5)
    assert min(ratio) > 1.5  # with zero points even channel 2, which holds the largest |value|, gains


@pytest.mark.parametrize(("bits", "erased"), [(4, True), (5, False), (8, False)])
def test_the_try_this_channel_3_vanishes_first_at_4_bits(bits, erased):
    r = calc.compare(calc.parse_channels(calc.EXAMPLE), bits, symmetric=True)
    ch3 = r.channels[3]
    assert (ch3["per-tensor MAE"] == pytest.approx(0.06, abs=1e-6)) == erased  # 0.06: the mean of its |values|


@pytest.mark.parametrize(("bits", "at_zero"), [(4, 5), (5, 2), (6, 1), (7, 0)])
def test_the_widget_shows_channel_3_leaving_0_at_7_bits(bits, at_zero):
    """The Try-this: the widget's "per-tensor rounded to 0" column for channel 3, symmetric."""
    r = calc.compare(calc.parse_channels(calc.EXAMPLE), bits, symmetric=True)
    assert r.channels[3]["per-tensor rounded to 0"] == at_zero


def test_on_the_gelu_row_a_zero_point_buys_about_what_one_more_bit_buys():
    """Section 3: at 4 and 8 bits the zero point's gain is within 0.7x to 1.1x of the control's."""
    gelu = calc.parse_channels(calc.gelu_row())
    for bits in (4, 8):
        mae = {
            k: calc.compare(gelu, bits + extra, symmetric=sym).overall["per-tensor"]["MAE"]
            for k, extra, sym in (("sym", 0, True), ("zp", 0, False), ("more", 1, True))
        }
        assert 1.5 < mae["sym"] / mae["zp"] and 0.7 < (mae["sym"] / mae["zp"]) / (mae["sym"] / mae["more"]) < 1.1


def test_on_384_value_gelu_rows_one_more_bit_beats_a_zero_point_on_every_row():
    """Section 3's 20 rows, at the length the byte column prices: the answer's "the bit wins on 20 of 20 rows"."""
    line = calc.zero_point_against_a_bit(4, n=384)
    assert line.startswith("4 bits, 20 GELU rows of 384 values:")
    assert line.endswith("one more bit gains more on 20 of 20 rows")


def test_on_the_mirrored_gelu_row_a_zero_point_buys_nothing():
    """Section 3's control: each value and its negation leave no code empty; the zero point's gain is gone."""
    g = calc.parse_channels(calc.gelu_row())[0]
    mirrored = [torch.cat([g, -g])]
    for bits in (4, 8):
        sym, zp = (calc.compare(mirrored, bits, symmetric=s).overall["per-tensor"]["MAE"] for s in (True, False))
        assert 0.85 < sym / zp < 1.15


def test_an_erased_channel_errs_by_its_mean_magnitude_and_its_gain_stops_following_the_ruler():
    """Section 1: channel 3 rounds to 0 under the shared ruler; dividing it by 10 leaves its MAE fall at 30."""
    r = calc.compare(calc.parse_channels(calc.EXAMPLE), 4, symmetric=True)
    row = calc.gain_rows(r, falls=True)[3]
    assert row["per-tensor rounded to 0"] == 5
    assert row["per-tensor MAE"] == pytest.approx(float(r.originals[3].abs().mean()), rel=1e-5)
    shrunk = calc.gain_rows(calc.compare([*r.originals[:3], r.originals[3] / 10], 4, symmetric=True), falls=True)[3]
    assert shrunk["own ruler finer by"] == pytest.approx(10 * row["own ruler finer by"], rel=1e-4)
    assert shrunk["MAE falls by"] == pytest.approx(row["MAE falls by"], rel=1e-4) == pytest.approx(30, rel=1e-4)


def test_a_zero_point_costs_4_bytes_one_more_bit_a_byte_per_8_values():
    """Section 3's byte column matches the calculator's own memory count."""
    g = calc.parse_channels(calc.gelu_row())[0]
    rows = {r["ruler"]: r for r in calc.zero_point_rows(g, 4)}
    assert (rows["zero point"]["bytes more, 384 values"], rows["1 more bit"]["bytes more, 384 values"]) == (4, 48)
    assert [r["bits"] for r in rows.values()] == [4, 4, 5, 4]  # the "1 more bit" row shows its 5 bits
    long_row = g.repeat(6)  # 384 values
    for ruler, bits, sym in (("zero point", 4, False), ("1 more bit", 5, True)):
        more = calc.compare([long_row], bits, symmetric=sym).memory["per-tensor total bytes"]
        base = calc.compare([long_row], 4, symmetric=True).memory["per-tensor total bytes"]
        assert rows[ruler]["bytes more, 384 values"] == more - base


def test_quiz_1_tanh_row_reaches_every_code_and_a_zero_point_buys_about_nothing():
    """Quiz 1's tanh row: its ends get codes -7 and 7 on a symmetric 4-bit ruler, as its answer says, and a zero
    point lowers the MAE far less than on the GELU row (2.57 times there)."""
    from qlesson.lessons import l07_calculator as l07

    lo, hi, gain = l07._TANH_LO, l07._TANH_HI, l07._TANH_GAIN
    scale = max(abs(lo), abs(hi)) / 7
    assert (round(lo / scale), round(hi / scale)) == (-7, 7)
    assert 1.0 < gain < 1.2
    assert "tanh" in l07.RECALL[0].prompt


def test_the_lesson_widget_opens_at_4_bits_symmetric_and_the_app_at_8_bits_asymmetric():
    """The Try-this starts where section 1 left off: channel 3 erased under the shared 4-bit symmetric ruler."""
    from qlesson.teach import widgets

    for kwargs, bits, symmetric in (({"bits": 4, "symmetric": True}, 4, True), ({}, 8, False)):
        ui = widgets.calculator(**kwargs)
        slider, _, sym = ui.children[1].children
        assert (slider.value, sym.value == "symmetric") == (bits, symmetric)
        r = calc.compare(calc.parse_channels(calc.EXAMPLE), bits, symmetric=symmetric)
        assert f"{r.channels[3]['per-tensor MAE']:.5g}" in ui.children[4].value

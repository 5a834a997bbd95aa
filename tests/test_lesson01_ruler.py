"""Lesson 01's claims and its calibrated-ruler tasks, checked against ``ql.quantize`` and PyTorch."""

import pytest
import torch
from torch.ao.quantization import observer

import qlesson as ql
from qlesson.course.tasks import tasks


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
def test_clip_start_is_where_the_clamp_starts_to_act(bits):
    calibration = torch.tensor([-0.62, -0.1, 0.0, 0.23, 0.5, 0.91])
    below, above = (float(v) for v in tasks()["01.clip_start"].reference(calibration, bits))
    qt = ql.quantize(calibration, bits, symmetric=False, signed=False)
    scale, zp = float(qt.scale), int(qt.zero_point)

    def clipped(v):
        return not 0 <= round(v / scale) + zp <= 2**bits - 1

    assert clipped(above * (1 + 1e-6)) and not clipped(above * (1 - 1e-6))
    assert clipped(below * (1 + 1e-6)) and not clipped(below * (1 - 1e-6))


def test_rounding_or_clipping_adds_up_to_the_total_error():
    calibration = torch.randn(500, generator=torch.Generator().manual_seed(1))
    x = torch.cat([torch.randn(500, generator=torch.Generator().manual_seed(2)), torch.tensor([7.0, -9.0])])
    for bits in (3, 8):
        scale = float(ql.quantize(calibration, bits).scale)
        q = torch.clamp(torch.round(x / scale), -(2 ** (bits - 1) - 1), 2 ** (bits - 1) - 1)
        rounding, clipping = tasks()["01.rounding_or_clipping"].reference(calibration, x, bits)
        assert torch.isclose(rounding + clipping, (q * scale - x).abs().sum(), rtol=1e-5)
        assert float(clipping) > 0


def test_pytorch_ships_both_int8_weight_ranges_the_lesson_names():
    w = torch.tensor([-0.5, 0.2, 1.27])
    restricted = observer.weight_observer_range_neg_127_to_127()
    restricted(w)
    assert (restricted.quant_min, restricted.quant_max) == (-127, 127)
    assert float(restricted.calculate_qparams()[0]) == pytest.approx(1.27 / 127)
    full = observer.default_weight_observer()
    full(w)
    assert float(full.calculate_qparams()[0]) == pytest.approx(1.27 / 127.5)


def test_the_worked_asymmetric_row_and_the_clipping_shade():
    from qlesson.teach import ruler

    rows = {r["mode"]: r for r in ruler.compare_modes([-0.17, 0.0, 0.05, 0.3, 0.7, 1.2, 2.0], bits=4)}
    assert rows["asymmetric unsigned"]["scale"] == pytest.approx(2.17 / 15)
    assert rows["asymmetric unsigned"]["zero point"] == 1
    assert rows["asymmetric unsigned"]["mae"] < rows["symmetric signed"]["mae"]
    # the "ends" column: the first and last code read back, (qmin - zp) * scale .. (qmax - zp) * scale
    s = 2.17 / 15
    assert rows["asymmetric unsigned"]["ends"] == f"{-1 * s:.3f}..{14 * s:.3f}" == "-0.145..2.025"
    assert rows["asymmetric signed"]["ends"] == rows["asymmetric unsigned"]["ends"]  # codes move, the ruler does not
    assert rows["symmetric signed"]["ends"] == "-2.000..2.000"
    assert rows["symmetric unsigned"]["ends"] == f"{-8 * 2 / 7:.3f}..2.000"  # code 0 reads back as -8 ticks
    # the lesson's definition of clipped (the clamp changes the code) starts half a tick past 0.91
    scale = 0.91 / 3
    assert round(1.06 / scale) == 3 and round(1.07 / scale) == 4


def test_task3_prediction_and_the_numbers_its_halving_mistake_quotes():
    from qlesson.lessons import l01_the_ruler as l01

    calibration, new = l01._TASK3
    rounding = {b: float(l01._split(calibration, new, b)[0]) for b in range(2, 9)}
    clipping = {b: float(l01._split(calibration, new, b)[1]) for b in range(2, 9)}
    assert (round(rounding[3], 1), round(rounding[4], 1)) == (279.8, 124.7)  # quoted in the halving mistake
    assert tasks()["01.clipping_takes_over"].reference() == 7
    assert min(b for b in range(5, 9) if rounding[3] / 2 ** (b - 3) < clipping[b]) == 8  # halving per bit says 8

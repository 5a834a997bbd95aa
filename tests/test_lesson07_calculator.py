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

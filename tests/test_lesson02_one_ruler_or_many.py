"""Lesson 02's claims: the 63.5 tie, and the rescued-rows task against ``ql.quantize``."""

import torch

import qlesson as ql
from qlesson.course.tasks import tasks
from qlesson.teach import examples


def test_the_note_code_63_is_a_tie_that_float_paths_round_apart():
    assert float(torch.tensor(0.05) / (torch.tensor(0.1) / 127)) == 63.5
    assert round(0.05 / (0.1 / 127)) == 63 and int(torch.round(torch.tensor(63.5))) == 64
    assert int(ql.quantize(examples.three_channels(), 8, granularity=ql.PerChannel(0)).q[2, 2]) == 64


def test_rescued_rows_agree_with_quantize():
    w = torch.randn(12, 16, generator=torch.Generator().manual_seed(0)) * torch.logspace(-2, 0, 12)[:, None]
    w[3] = 0
    for bits in (2, 3, 4, 8):
        shared = ql.quantize(w, bits).q
        own = ql.quantize(w, bits, granularity=ql.PerChannel(0)).q
        expected = (shared == 0).all(1) & (own != 0).any(1)
        assert torch.equal(tasks()["02.rescued_rows"].reference(w, bits).bool(), expected)

"""Every kind of bad input gives a ValueError that names the value and the fix."""

import math

import numpy as np
import pytest
import torch

import qlesson as ql
from qlesson.quant import formats


@pytest.mark.parametrize(
    ("x", "kwargs", "match"),
    [
        ([1.0, float("nan")], {}, r"1 NaN and 0 inf.*finite"),
        (torch.tensor([1.0, math.inf]), {}, r"0 NaN and 1 inf"),
        (torch.empty(0, 4), {}, r"empty \(shape \(0, 4\)\)"),
        ([], {}, r"empty"),
        (torch.arange(4), {}, r"integer dtype torch.int64.*x.float\(\)"),
        (np.arange(4, dtype=np.int32), {}, r"integer dtype torch.int32"),
        (torch.ones(2, dtype=torch.complex64), {}, r"complex dtype"),
        ([[1.0, 2.0], [3.0]], {}, r"could not be read.*equal-length rows"),
        (torch.ones(2, 4), {"bits": 1}, r"bits=1 .*from 2 to 16"),
        (torch.ones(2, 4), {"bits": 17}, r"bits=17"),
        (torch.ones(2, 4), {"bits": 4.0}, r"bits=4.0"),
        (torch.ones(2, 4), {"bits": True}, r"bits=True"),
        (torch.ones(2, 4), {"granularity": ql.PerGroup(3)}, r"3\) does not divide axis 1 of length 4.*1, 2, 4"),
        (torch.ones(2, 4), {"granularity": ql.PerGroup(0)}, r"group_size=0\) must be a positive"),
        (torch.ones(2, 4), {"granularity": ql.PerChannel(2)}, r"axis=2\) is out of range for a 2-d tensor.*-2 to 1"),
        (torch.ones(2, 4), {"granularity": ql.PerGroup(2, axis=-3)}, r"axis=-3\) is out of range"),
        (torch.tensor(1.0), {"granularity": ql.PerChannel(0)}, r"0-d scalar; use PerTensor"),
        (torch.ones(2, 4), {"granularity": "per_channel"}, r"'per_channel' is not a granularity"),
    ],
)
def test_quantize_rejects(x, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ql.quantize(x, **{"bits": 8, **kwargs})
    with pytest.raises(ValueError, match=match):
        ql.fake_quantize(x, **{"bits": 8, **kwargs})


def test_errors_rejects_shape_mismatch_and_nan():
    with pytest.raises(ValueError, match=r"x has shape \(2,\) but x_hat has shape \(3,\)"):
        ql.errors([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"x_hat contains 1 NaN"):
        ql.errors([1.0, 2.0], [1.0, float("nan")])
    with pytest.raises(ValueError, match=r"axis=5\) is out of range"):
        ql.channel_errors(torch.ones(2, 2), torch.ones(2, 2), axis=5)


def test_footprint_rejects():
    with pytest.raises(ValueError, match=r"does not divide"):
        ql.footprint((4, 100), 4, ql.PerGroup(32))
    with pytest.raises(ValueError, match=r"empty dimension"):
        ql.footprint((0, 4), 4)
    with pytest.raises(ValueError, match=r"bits=0"):
        ql.footprint((4, 4), 0)
    with pytest.raises(ValueError, match=r"scale_bytes=-1"):
        ql.footprint((4, 4), 4, scale_bytes=-1)


def test_formats_reject():
    with pytest.raises(ValueError, match=r"group_size=32\) does not divide axis 1 of length 40"):
        formats.quantize(np.ones((2, 40), dtype=np.float32), "Q4_0")
    with pytest.raises(ValueError, match=r"'Q5_K' is not implemented; use one of Q8_0, Q4_0, Q4_1"):
        formats.quantize(np.ones(32, dtype=np.float32), "Q5_K")
    with pytest.raises(ValueError, match=r"NaN"):
        formats.quantize(np.full(32, np.nan, dtype=np.float32), "Q8_0")
    with pytest.raises(ValueError, match=r"multiple of 18 bytes"):
        formats.dequantize(np.zeros(17, dtype=np.uint8), "Q4_0")

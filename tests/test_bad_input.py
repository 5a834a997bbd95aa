"""Every kind of bad input gives a ValueError that names the value and the fix."""

import math

import numpy as np
import pytest
import torch

import qlesson as ql
from qlesson.quant import formats
from qlesson.teach import ruler, widgets


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
    with pytest.raises(ValueError, match=r"Q4_0 stores blocks of 32 values along the last axis, which has length 40"):
        formats.quantize(np.ones((2, 40), dtype=np.float32), "Q4_0")
    with pytest.raises(ValueError, match=r"'Q5_K' is not implemented; use one of Q8_0, Q4_0, Q4_1"):
        formats.quantize(np.ones(32, dtype=np.float32), "Q5_K")
    with pytest.raises(ValueError, match=r"NaN"):
        formats.quantize(np.full(32, np.nan, dtype=np.float32), "Q8_0")
    with pytest.raises(ValueError, match=r"multiple of 18 bytes"):
        formats.dequantize(np.zeros(17, dtype=np.uint8), "Q4_0")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ruler.steps([0.1, 0.2], 4, scale=math.inf), r"scale=inf must be a finite number from 1.17549e-38"),
        (lambda: ruler.steps([0.1, 0.2], 4, scale=1e-320), r"scale=1e-320 .*subnormal"),
        (lambda: ruler.steps([0.1], 4, scale=math.nan), r"scale=nan"),
        (lambda: ruler.steps([0.1], 4, scale="0.1"), r"scale='0.1'"),
        (lambda: ruler.steps([0.1], 4, scale=0.1, zero_point=2.5), r"zero_point=2.5 .*from -7 to 7"),
        (lambda: ruler.steps([0.1], 4, scale=0.1, zero_point=10**400), r"whole number from -7 to 7"),
        (lambda: ruler.bits_table(math.inf), r"absmax=inf must be a positive finite number"),
        (lambda: ql.total_footprint([], 4), r"shapes=\[\] must be a non-empty list of shapes"),
        (lambda: ql.total_footprint([4], 4), r"shape=4 must hold whole numbers"),
        (lambda: ql.footprint((4.5, 4), 4), r"shape=\(4.5, 4\) must hold whole numbers.*\(4096, 4096\)"),
        (lambda: ql.footprint((4.0, 4), 4), r"shape=\(4.0, 4\) must hold whole numbers"),
        (lambda: ql.footprint("44", 4), r"shape='44'"),
        (lambda: ql.footprint((4, 4), 4, zero_point_bytes=1.5), r"zero_point_bytes=1.5 must be a whole number"),
        (lambda: formats.codes(np.zeros(34, dtype=np.int8), "Q8_0"), r"dtype int8 .*uint8.*np.frombuffer"),
        (lambda: formats.codes(np.zeros(0, dtype=np.uint8), "Q8_0"), r"non-empty uint8 rows"),
        (lambda: formats.dequantize(np.zeros(36, dtype=np.float32), "Q4_0"), r"dtype float32 .*multiple of 18"),
        (lambda: formats.quantize(np.ones(32), ["Q8_0"]), r"format \['Q8_0'\] is not implemented"),
        (lambda: widgets.group_explorer(torch.ones(64)), r"shape \(64,\); the group explorer needs a 2-D weight"),
        (lambda: widgets.group_explorer(torch.ones(2, 2, 32)), r"needs a 2-D weight"),
    ],
)
def test_helpers_reject_with_a_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_numpy_integers_work_wherever_python_ints_do():
    w = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))
    a = ql.quantize(w, np.int64(4), granularity=ql.PerGroup(np.int32(16), axis=np.int64(1)))
    b = ql.quantize(w, 4, granularity=ql.PerGroup(16, axis=1))
    assert torch.equal(a.q, b.q) and torch.equal(a.scale, b.scale)
    fp = ql.footprint((np.int64(4), np.int32(64)), np.int8(4), ql.PerGroup(np.int64(16)), scale_bytes=np.int64(2))
    assert fp == ql.footprint((4, 64), 4, ql.PerGroup(16), scale_bytes=2)
    assert a.nbytes(scale_bytes=np.int64(4)) == b.nbytes(scale_bytes=4)
    steps_np = ruler.steps([0.3, -0.9], np.int64(3), scale=np.float64(0.3), zero_point=np.int64(1))
    assert steps_np == ruler.steps([0.3, -0.9], 3, scale=0.3, zero_point=1)


def test_group_explorer_takes_narrow_and_list_weights():
    ui = widgets.group_explorer([[0.5, -1.0, 0.25, 2.0] * 2] * 3, "<b>narrow</b>")
    assert list(ui.children[0].children[0].options) == [1, 2, 4, 8]
    assert "&lt;b&gt;narrow&lt;/b&gt;" in ui.children[1].value  # a name is shown as text, not markup

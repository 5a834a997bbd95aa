"""Hand-computed examples, asserted exactly, and the documented conventions."""

import pytest
import torch

import qlesson as ql

ROW_A = [0.05, -0.08, 0.12, -0.15]
ROW_B = [2.0, -3.1, 1.7, -2.6]


def test_shared_int4_scale_collapses_the_quiet_row():
    qt = ql.quantize([ROW_A, ROW_B], 4)
    assert qt.scale.item() == pytest.approx(3.10 / 7)
    assert qt.q[0].tolist() == [0, 0, 0, 0]
    assert qt.q[1].tolist() == [5, -7, 4, -6]
    assert qt.dequantize()[0].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_own_scale_rescues_row_a_and_leaves_row_b_alone():
    per_tensor = ql.quantize([ROW_A, ROW_B], 4)
    per_channel = ql.quantize([ROW_A, ROW_B], 4, granularity=ql.PerChannel(0))
    assert per_channel.scale.tolist() == pytest.approx([0.15 / 7, 3.10 / 7])
    assert per_channel.q[0].tolist() == [2, -4, 6, -7]
    assert torch.equal(per_channel.q[1], per_tensor.q[1])
    recon = per_channel.dequantize()[0]
    assert recon.tolist() == pytest.approx([2 * 0.15 / 7, -4 * 0.15 / 7, 6 * 0.15 / 7, -0.15], abs=1e-7)
    mae_a = ql.errors(torch.tensor(ROW_A), recon).mae
    assert mae_a == pytest.approx(((0.05 - 0.3 / 7) + (0.6 / 7 - 0.08) + (0.9 / 7 - 0.12) + 0) / 4, abs=1e-7)
    assert ql.errors(torch.tensor(ROW_A), per_tensor.dequantize()[0]).mae == pytest.approx(0.10)


def test_interview_note_int8_example():
    w = torch.tensor([[-0.5, -0.3, 0.2, 0.4], [-2.0, -1.5, 1.0, 1.8], [-0.1, -0.08, 0.05, 0.09]])
    pt = ql.quantize(w, 8)
    assert pt.q[0].tolist() == [-32, -19, 13, 25]
    assert pt.q[1].tolist()[:2] == [-127, -95] and pt.q[1, 3].item() == 114  # the note prints 115
    assert pt.q[2].tolist() == [-6, -5, 3, 6]
    pc = ql.quantize(w, 8, granularity=ql.PerChannel(0))
    assert pc.q[0].tolist() == [-127, -76, 51, 102]
    assert pc.q[2].tolist()[0] == -127 and pc.q[2, 1].item() == -102  # the note prints -125, -100


@pytest.mark.parametrize(
    ("bits", "symmetric", "signed", "expected"),
    [
        (4, True, True, (-7, 7)),
        (8, True, True, (-127, 127)),
        (8, False, True, (-128, 127)),
        (8, True, False, (0, 255)),
        (2, False, False, (0, 3)),
        (16, True, True, (-32767, 32767)),
    ],
)
def test_qrange(bits, symmetric, signed, expected):
    assert ql.qrange(bits, symmetric=symmetric, signed=signed) == expected


def test_rounding_is_half_to_even():
    # scale 1 (absmax 7 at 4 bits): 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2
    qt = ql.quantize([0.5, 1.5, 2.5, -2.5, 7.0], 4)
    assert qt.scale.item() == 1.0
    assert qt.q.tolist() == [0, 2, 2, -2, 7]


def test_asymmetric_zero_point_formula_and_zero_exact():
    x = torch.tensor([[-1.0, 0.0, 3.0], [0.2, 0.5, 1.0]])
    qt = ql.quantize(x, 8, granularity=ql.PerChannel(0), symmetric=False, signed=False)
    assert qt.scale.tolist() == pytest.approx([4.0 / 255, 1.0 / 255])
    assert qt.zero_point.tolist() == [64, 0]  # 0 - round(-1 / (4/255)) = 64; rmin widened to 0
    assert qt.dequantize()[0, 1].item() == 0.0


def test_negative_only_channel_gets_zero_point_at_the_top():
    qt = ql.quantize([-1.70, -1.22, -0.94, -1.43, -1.11], 8, symmetric=False, signed=True)
    assert qt.zero_point.item() == 127  # rmax is widened to 0, so 0.0 sits at qmax
    assert qt.q.max().item() < 127


def test_unsigned_symmetric_is_signed_shifted():
    x = torch.randn(5, 16, generator=torch.Generator().manual_seed(0))
    s = ql.quantize(x, 8, granularity=ql.PerChannel(0))
    u = ql.quantize(x, 8, granularity=ql.PerChannel(0), signed=False)
    assert torch.equal(u.zero_point, torch.full((5,), 128, dtype=torch.int32))
    assert torch.equal(u.q.int() - 128, s.q.int())
    assert torch.allclose(u.dequantize(), s.dequantize())


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("signed", [True, False])
def test_all_zero_block_reconstructs_to_exact_zeros(symmetric, signed, recwarn):
    x = torch.zeros(3, 8)
    x[1] = torch.linspace(-1, 1, 8)
    qt = ql.quantize(x, 4, granularity=ql.PerChannel(0), symmetric=symmetric, signed=signed)
    x_hat = qt.dequantize()
    assert torch.equal(x_hat[0], torch.zeros(8)) and torch.equal(x_hat[2], torch.zeros(8))
    assert torch.isfinite(qt.scale).all()
    assert len(recwarn) == 0
    assert ql.fake_quantize(torch.zeros(4), 8).tolist() == [0.0] * 4


def test_compact_shapes_and_dtypes():
    x = torch.randn(6, 64)
    assert ql.quantize(x, 8).scale.shape == ()
    assert ql.quantize(x, 8, granularity=ql.PerChannel(0)).scale.shape == (6,)
    assert ql.quantize(x, 8, granularity=ql.PerChannel(1)).zero_point.shape == (64,)
    assert ql.quantize(x, 4, granularity=ql.PerGroup(16)).scale.shape == (6, 4)
    assert ql.quantize(x, 8).q.dtype == torch.int8
    assert ql.quantize(x, 8, signed=False).q.dtype == torch.uint8
    assert ql.quantize(x, 12).q.dtype == torch.int16
    assert ql.quantize(x, 16, signed=False).q.dtype == torch.int32
    assert ql.quantize(x.double(), 8).dequantize().dtype == torch.float64
    assert ql.quantize(x.half(), 8).dequantize().dtype == torch.float32


def test_inputs_numpy_list_scalar():
    import numpy as np

    a = ql.quantize(np.array([[1.0, -2.0]], dtype=np.float32), 8).q
    b = ql.quantize([[1.0, -2.0]], 8).q
    assert torch.equal(a, b)
    assert ql.quantize(torch.tensor(0.5), 8).q.item() == 127
    assert ql.quantize(torch.tensor(0.5), 8).dequantize().shape == ()


def test_group_of_the_course_page_outlier_spoils_only_its_group():
    row = torch.tensor([[0.2, -0.4, 8.1, 0.3, -0.1, 0.5, 0.4, -0.3]])
    pc = ql.errors(row, ql.fake_quantize(row, 4, granularity=ql.PerChannel(0)))
    pg = ql.fake_quantize(row, 4, granularity=ql.PerGroup(2))
    # only the group holding 8.1 has a large scale; other groups reconstruct finely
    assert ql.errors(row[:, 4:], pg[:, 4:]).max_abs < 0.05
    assert pc.max_abs > 0.3


def test_nbytes_and_bits_per_weight():
    qt = ql.quantize(torch.randn(8, 256), 4, granularity=ql.PerGroup(32))
    assert qt.nbytes() == 8 * 256 // 2 + 8 * 8 * 2
    assert qt.bits_per_weight == pytest.approx(4.5)
    asym = ql.quantize(torch.randn(8, 256), 4, granularity=ql.PerGroup(32), symmetric=False)
    assert asym.nbytes() == 8 * 256 // 2 + 8 * 8 * 3
    assert qt.nbytes(scale_bytes=4) == 8 * 256 // 2 + 8 * 8 * 4


def test_footprint_matches_qtensor_and_calculator_convention():
    shape = (4, 5)
    fp = ql.footprint(shape, 8, ql.PerChannel(0), scale_bytes=4, zero_point_bytes=4)
    assert (fp.payload_bytes, fp.metadata_bytes, fp.total_bytes) == (20, 32, 52)
    assert ql.footprint(shape, 8, scale_bytes=4, zero_point_bytes=4).total_bytes == 28
    assert ql.footprint((3, 5), 3).payload_bytes == 6  # 45 bits round up to 6 bytes
    assert ql.footprint((4, 1024), 4, ql.PerGroup(128)).n_scales == 32


def test_errors_per_channel_and_sqnr_edge_cases():
    e = ql.errors([1.0, 2.0], [1.0, 2.0])
    assert e.mae == 0.0 and e.sqnr_db == float("inf")
    ce = ql.channel_errors(torch.tensor([[1.0, 1.0], [0.0, 0.0]]), torch.tensor([[1.0, 1.0], [0.0, 0.5]]))
    assert ce.sqnr_db[0].item() == float("inf") and ce.sqnr_db[1].item() == float("-inf")
    assert ce.rmse.tolist() == pytest.approx([0.0, (0.125) ** 0.5])
    ce1 = ql.channel_errors(torch.ones(2, 3), torch.zeros(2, 3), axis=1)
    assert ce1.mae.shape == (3,)

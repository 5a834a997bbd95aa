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
    sqnr = [r["SQNR dB"] for r in activations.granularity_control_rows(x, labels)]
    assert sqnr[0] < sqnr[1] <= sqnr[2] + 1e-9


def test_ordinary_token_gain_is_reported_per_alpha():
    x, labels = _spiky()
    w = torch.randn(8, x.shape[1], generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    rows, lowest = activations.smoothing_split_rows([("toy", x, x, w)], labels, alphas=(0.5,))
    assert [r["int8 act scales"] for r in rows] == ["per-tensor", "per-token"]
    assert all("ordinary tokens, alpha 0.5" in r and "alpha 0.5 gain dB" in r for r in rows)
    assert lowest <= min(r["alpha 0.5 gain dB"] for r in rows)

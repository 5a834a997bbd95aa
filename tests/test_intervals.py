"""The evaluation text and the interval helpers: held out, deterministic, and honest about ties."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from qlesson.teach import intervals, studies
from qlesson.teach.activations import CALIBRATION_SENTENCES
from qlesson.teach.calibration import PARAGRAPHS
from qlesson.teach.eval_text import EVAL_SENTENCES, eval_sentences
from qlesson.teach.models import SENTENCES


def _grams(text: str, n: int = 6) -> set[tuple[str, ...]]:
    words = re.sub(r"[^a-z0-9' ]", " ", text.lower()).split()
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def test_evaluation_text_is_fixed_and_held_out_from_every_calibration_text():
    assert len(EVAL_SENTENCES) == len(set(EVAL_SENTENCES)) == 240
    assert all(s.isascii() and s.endswith(".") for s in EVAL_SENTENCES)
    others = PARAGRAPHS + CALIBRATION_SENTENCES + SENTENCES
    shared = set().union(*(_grams(t) for t in others))
    assert not [s for s in EVAL_SENTENCES if _grams(s) & shared or any(s in t for t in others)]
    assert eval_sentences(3) == EVAL_SENTENCES[:3] and eval_sentences() == EVAL_SENTENCES


@pytest.mark.parametrize("n", [0, 241, True, 2.5, "3"])
def test_eval_sentences_refuses_bad_counts(n):
    with pytest.raises(ValueError, match="n="):
        eval_sentences(n)


def test_paired_bootstrap_finds_a_real_difference_and_calls_noise_a_tie():
    rng = np.random.Generator(np.random.PCG64(1))
    base = rng.normal(0.9, 0.05, 240)
    real = intervals.paired_bootstrap(base + 0.01 + rng.normal(0, 0.002, 240), base)
    noise = intervals.paired_bootstrap(base + rng.normal(0, 0.01, 240), base + rng.normal(0, 0.01, 240))
    assert real.lo > 0 and real.verdict("A", "B") == "A higher"
    assert noise.lo < 0 < noise.hi and noise.verdict() == "tie"
    again = intervals.paired_bootstrap(base + 0.01 + rng.normal(0, 0.002, 240), base)
    assert again.lo > 0  # a second sample of the same effect agrees
    assert intervals.paired_bootstrap(base, base * 0.5) == intervals.paired_bootstrap(base, base * 0.5)  # seeded


@pytest.mark.parametrize(
    "args",
    [([1.0], [1.0]), ([1.0, 2.0], [1.0]), ([1.0, float("nan")], [1.0, 2.0]), ([[1.0, 2.0]], [[1.0, 2.0]])],
)
def test_paired_bootstrap_refuses_bad_input(args):
    with pytest.raises(ValueError):
        intervals.paired_bootstrap(*args)


def test_bootstrap_settings_are_checked():
    with pytest.raises(ValueError, match="n_boot"):
        intervals.paired_bootstrap([1.0, 2.0], [1.0, 1.0], n_boot=10)
    with pytest.raises(ValueError, match="level"):
        intervals.mean_interval([1.0, 2.0], level=1.0)


def test_sentence_scores_rank_corr_drops_when_neighbours_are_reordered():
    gen = torch.Generator().manual_seed(0)
    ref = torch.nn.functional.normalize(torch.randn(12, 8, generator=gen, dtype=torch.float64), dim=1)
    noisy = torch.nn.functional.normalize(ref + 0.5 * torch.randn(12, 8, generator=gen, dtype=torch.float64), dim=1)
    cos, rank = studies.sentence_scores(ref, ref)
    assert np.allclose(cos, 1) and np.allclose(rank, 1)
    cos, rank = studies.sentence_scores(ref, noisy)
    assert (cos < 1).all() and rank.mean() < 0.99 and rank.shape == (12,)
    with pytest.raises(ValueError):
        studies.sentence_scores(ref, ref[:5])


def test_output_error_interval_resamples_sentences_with_their_tokens():
    from qlesson.teach import smarter

    w = {"a": torch.tensor([[1.0, 0.0], [0.0, 1.0]])}
    x = {"a": torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 2.0]])}
    counts = [2, 1, 1]  # sentence 0 has two tokens
    good, bad = {"a": w["a"] * 0.99}, {"a": w["a"] * 0.9}
    e_good, e_bad = (smarter.sentence_output_errors(w, q, x, counts) for q in (good, bad))
    norms = smarter.sentence_output_norms(w, x, counts)
    assert e_good.shape == norms.shape == (1, 3)
    assert np.allclose(norms, [[2.0, 1.0, 4.0]])
    d = smarter.output_error_interval(e_good, e_bad, norms)
    assert d.hi < 0 and d.verdict("good", "bad") == "bad higher"  # good has the lower error
    with pytest.raises(ValueError, match="tokens"):
        smarter.sentence_output_errors(w, good, x, [1, 1])


def _loud_inputs(tokens: int = 400, k: int = 64, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, k, generator=g, dtype=torch.float64)
    x[:, :2] *= 30.0  # two loud input channels
    return x


def test_salient_rows_finds_that_loud_inputs_matter_and_weight_size_does_not():
    """AWQ's experiment on a layer with two loud inputs: keeping those columns exact wins big."""
    from qlesson.quant.granularity import PerGroup
    from qlesson.teach import smarter

    g = torch.Generator().manual_seed(1)
    w = torch.randn(32, 64, generator=g, dtype=torch.float64)
    w[:, 40:42] *= 5.0  # the largest weights meet quiet inputs
    x_cal, x_held = _loud_inputs(seed=2), _loud_inputs(seed=3)
    rows = smarter.salient_rows(w, x_cal, x_held, [4] * 100, bits=3, g=PerGroup(32), fraction=2 / 64)
    err = {r["full-precision channels"]: r for r in rows}
    rtn, act, wt = err["nothing (RTN)"], err["2 by mean |x|"], err["2 by mean |w|"]
    assert act["output err"] < 0.5 * rtn["output err"] and act["vs RTN"] == "better"
    assert wt["output err"] > 0.8 * rtn["output err"]  # the big weights meet quiet inputs
    assert err["none; AWQ's searched s"]["output err"] < rtn["output err"]
    assert rtn["minus RTN"] == 0.0
    with pytest.raises(ValueError, match="fraction"):
        smarter.salient_rows(w, x_cal, x_held, [4] * 100, fraction=1.5)


def test_layer_type_rows_groups_layers_by_type_and_tests_each():
    from qlesson.teach import smarter

    g = torch.Generator().manual_seed(4)
    weights = {f"L{i}.{t}": torch.randn(8, 16, generator=g, dtype=torch.float64) for i in range(2) for t in ("q", "o")}
    x = {n: torch.randn(30, 16, generator=g, dtype=torch.float64) for n in weights}
    good = {n: w * 0.99 if n.endswith("q") else w * 0.8 for n, w in weights.items()}
    bad = {n: w * 0.9 for n, w in weights.items()}  # worse than good on q, better on o
    scores = {("A", "x"): good, ("B", "x"): bad}
    rows = smarter.layer_type_rows(weights, x, x, [3] * 10, scores, ("A", "x"), ("B", "x"), stretch_group=8)
    by = {r["layer type"]: r for r in rows}
    assert set(by) == {"q", "o"} and by["q"]["inputs"] == 16 and by["q"]["calib tokens / input"] == 30 / 16
    assert by["q"]["lower"] == "A" and by["o"]["lower"] == "B"
    assert np.isclose(by["q"]["A: A x"], 0.01**2) and np.isclose(by["o"]["B: B x"], 0.1**2)
    assert by["q"]["row max / g8 max"] >= 1.0
    with pytest.raises(ValueError, match="divide"):
        smarter.layer_type_rows(weights, x, x, [3] * 10, scores, ("A", "x"), ("B", "x"), stretch_group=5)


def test_pairs_are_the_resampled_unit():
    assert intervals.pair_means([1.0, 3.0, 2.0, 4.0]).tolist() == [2.0, 3.0]
    with pytest.raises(ValueError, match="even"):
        intervals.pair_means([1.0, 2.0, 3.0])
    draws = intervals.pair_resamples(6, n_boot=200)
    assert (draws[:, 1::2] == draws[:, ::2] + 1).all() and (draws[:, ::2] % 2 == 0).all()


def test_jackknife_over_pairs_matches_the_textbook_standard_error_of_a_mean():
    rng = np.random.default_rng(3)
    v = rng.normal(1.0, 0.1, 40)
    got = intervals.jackknife_pairs(lambda keep: float(v[keep].mean()), 40)
    m = intervals.pair_means(v)
    se = m.std(ddof=1) / np.sqrt(m.size)  # the jackknife SE of a mean is the usual one
    assert np.isclose((got.hi - got.lo) / 2, 1.959964 * se, rtol=1e-4)
    with pytest.raises(ValueError, match="even"):
        intervals.jackknife_pairs(lambda keep: 0.0, 7)


def test_rank_corr_intervals_recompute_the_statistic_without_each_pair():
    g = torch.Generator().manual_seed(5)
    ref = torch.nn.functional.normalize(torch.randn(40, 16, generator=g, dtype=torch.float64), dim=1)
    noisy = [
        torch.nn.functional.normalize(ref + s * torch.randn(40, 16, generator=g, dtype=torch.float64), dim=1)
        for s in (0.05, 0.3)
    ]
    scores = []
    for e in noisy:
        cos, rank = studies.sentence_scores(ref, e)
        scores.append(studies.EmbeddingScores("x", 4.0, cos, rank, (ref.numpy(), e.numpy())))
    _, cos_iv, rank_iv = studies.embedding_differences(*scores)
    assert rank_iv.lo > 0 and cos_iv.lo > 0  # less noise keeps the neighbours' order better
    assert np.isclose(rank_iv.diff, scores[0].rank_corr.mean() - scores[1].rank_corr.mean())
    plain = studies.EmbeddingScores("x", 4.0, scores[0].cosine, scores[0].rank_corr)
    assert studies.embedding_differences(plain, scores[1])[2] != rank_iv  # without embeddings: resampled pairs


def test_jackknife_over_sentences_matches_the_textbook_standard_error_of_a_mean():
    v = np.random.default_rng(4).normal(1.0, 0.1, 30)
    got = intervals.jackknife_sentences(lambda keep: float(v[keep].mean()), 30)
    assert np.isclose(got.diff, v.mean())
    assert np.isclose((got.hi - got.lo) / 2, 1.959964 * v.std(ddof=1) / np.sqrt(30), rtol=1e-4)
    for bad in (2, 3.0, True):
        with pytest.raises(ValueError, match="number of sentences"):
            intervals.jackknife_sentences(lambda keep: 0.0, bad)


def _tokens_of_sentences(sentences: int = 12, per: int = 10, k: int = 32, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(sentences * per, k, generator=g, dtype=torch.float64)
    x[:, 3] *= 30.0  # one outlier feature, loud on every token
    w = torch.randn(16, k, generator=g, dtype=torch.float64) * 0.1
    labels = [(i // per, i % per, "t") for i in range(sentences * per)]
    return x, w, labels


def test_w8a8_sqnr_is_the_alpha_table_s_number():
    from qlesson.teach.activations import alpha_rows, w8a8_sqnr

    x, w, _ = _tokens_of_sentences()
    rows = alpha_rows([("x", x, w)], alphas=(0.5,))
    assert rows[1]["SQNR dB, per-tensor acts"] == f"{w8a8_sqnr(x, w, 0.5, 'per-tensor'):.2f}"
    assert rows[0]["SQNR dB, per-token acts"] == f"{w8a8_sqnr(x, w, None, 'per-token'):.2f}"
    with pytest.raises(ValueError, match="per-tensor"):
        w8a8_sqnr(x, w, 0.5, "per-feature")


def test_alpha_comparisons_call_a_real_gain_better_and_the_same_method_a_tie():
    from qlesson.teach.activations import alpha_comparisons, w8a8_sqnr

    x, w, labels = _tokens_of_sentences()
    rows = alpha_comparisons({"x": (x, w)}, labels, [("x", "per-tensor", 0.5, None), ("x", "per-token", 0.5, 0.5)])
    gain, same = rows
    assert np.isclose(gain["dB"], w8a8_sqnr(x, w, 0.5, "per-tensor") - w8a8_sqnr(x, w, None, "per-tensor"))
    assert gain["95% CI"][0] > 0 and gain["verdict"] == "alpha 0.50 better"  # smoothing tames feature 3
    assert same["dB"] == 0.0 and same["verdict"] == "tie"


def test_observer_comparisons_leave_out_evaluation_sentences_and_find_a_clipped_spike():
    from qlesson.teach.activations import observer_comparisons

    x, _, labels = _tokens_of_sentences(k=2048)
    spiky = x.clone()
    spiky[::10, 0] = 400.0  # one value of each sentence (0.005%): beyond the 99.99th percentile
    rows = {r["observer - min/max"]: r for r in observer_comparisons(spiky, spiky, labels)}
    assert rows["99.99th percentile of |x|"]["verdict"] == "min/max better"
    assert rows["99.99th percentile of |x|"]["95% CI"][1] < -3  # clipping the spike costs dB

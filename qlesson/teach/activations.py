"""Lesson 05's activation studies: outlier tokens and features, static scales, SmoothQuant folding.

Every function takes captured activations ``[tokens, features]`` (from
:func:`qlesson.teach.models.capture_linear_inputs`) and returns rows for a table.

>>> x = torch.tensor([[10.0, 0.1], [0.2, 0.1], [0.1, 3.0]])
>>> [r["feature"] for r in feature_profile(x, [(0, 0, "[CLS]"), (0, 1, "a"), (0, 2, "b")], [0, 1])]
['0', '1', 'typical']
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from qlesson.quant.granularity import PerChannel, PerTensor
from qlesson.quant.metrics import errors
from qlesson.quant.quantize import fake_quantize

# Written for this course, on other topics than models.SENTENCES: scales are calibrated on
# these and evaluated on those, as a deployed model is calibrated once and then serves new text.
CALIBRATION_SENTENCES = (
    "The library closes early on Sundays during the summer.",
    "A gust of wind scattered the papers across the courtyard.",
    "Quantized models trade a little accuracy for a lot of memory.",
    "The ferry crossed the harbour twice before noon.",
    "Our neighbour grows tomatoes and basil on the balcony.",
    "The referee stopped the match because of the lightning.",
    "Each weight is stored as a small integer and a shared scale.",
    "The museum added a new wing for modern sculpture.",
    "Snow covered the village roads for most of the week.",
    "He practised the piano for an hour every evening.",
    "The recipe calls for two eggs and a cup of flour.",
    "Satellites relay signals between distant continents.",
    "The students argued about the answer to the last question.",
    "A lighthouse guided the fishing boats back to shore.",
    "The server logs showed a spike in traffic after midnight.",
    "Grandmother knitted a scarf in three shades of blue.",
    "The river flooded the lower fields after the storm.",
    "Engineers measured the bridge for signs of fatigue.",
    "The bakery ran out of croissants before eight.",
    "Migrating geese flew south in a long uneven line.",
    "The contract must be signed by both parties by Friday.",
    "She photographed the eclipse through a filtered lens.",
    "The orchestra's new conductor favours slower tempos.",
    "Tourists queued for hours to see the famous painting.",
)


def cls_mask(labels: Sequence[tuple[int, int, str]]) -> torch.Tensor:
    """True on the rows that are a sentence's ``[CLS]`` token."""
    return torch.tensor([tok == "[CLS]" for _, _, tok in labels])


def feature_profile(x: torch.Tensor, labels: Sequence[tuple[int, int, str]], features: Sequence[int]) -> list[dict]:
    """For each feature: its |x| on the [CLS] tokens and on every other token (max and median),
    then the same four numbers for the typical feature (the median over all features)."""
    if len(labels) != x.shape[0]:
        raise ValueError(f"{len(labels)} token labels for {x.shape[0]} rows of activations; capture both together")
    cls = cls_mask(labels)
    a = x.abs()
    stats = {
        "[CLS] max": a[cls].amax(0),
        "[CLS] median": a[cls].median(0).values,
        "other tokens max": a[~cls].amax(0),
        "other tokens median": a[~cls].median(0).values,
    }
    rows: list[dict] = [{"feature": str(f), **{k: float(v[f]) for k, v in stats.items()}} for f in features]
    rows.append({"feature": "typical", **{k: float(v.median()) for k, v in stats.items()}})
    return rows


def granularity_rows(x: torch.Tensor, labels: Sequence[tuple[int, int, str]], bits: int = 8) -> list[dict[str, Any]]:
    """SQNR of per-tensor, per-token and per-feature scales, with and without the [CLS] rows."""
    keep = ~cls_mask(labels)
    rows = []
    for label, g in (("per-tensor", PerTensor()), ("per-token", PerChannel(0)), ("per-feature", PerChannel(1))):
        every = errors(x, fake_quantize(x, bits, granularity=g)).sqnr_db
        rest = errors(x[keep], fake_quantize(x[keep], bits, granularity=g)).sqnr_db
        rows.append({"activation scales": label, "all tokens SQNR dB": every, "without [CLS] SQNR dB": rest})
    return rows


def _clip_quant(x: torch.Tensor, clip: float, bits: int) -> torch.Tensor:
    qmax = 2 ** (bits - 1) - 1
    scale = clip / qmax
    return torch.clamp(torch.round(x / scale), -qmax, qmax) * scale


def mse_clip(x: torch.Tensor, bits: int = 8, steps: int = 100) -> float:
    """The clipping threshold (a fraction of absmax, on a grid) with the least squared error on ``x``."""
    top = float(x.abs().max())
    grid = [top * (i + 1) / steps for i in range(steps)]
    return min(grid, key=lambda c: float(((_clip_quant(x, c, bits) - x) ** 2).sum()))


def static_scale_rows(calib: torch.Tensor, evals: torch.Tensor, bits: int = 8) -> list[dict[str, Any]]:
    """Per-tensor scales calibrated on ``calib`` (three observers) and used on ``evals``, beside dynamic ones."""
    absmax = float(calib.abs().max())
    observers = {
        "static, min/max of calibration": absmax,
        "static, 99.99th percentile of |x|": float(torch.quantile(calib.abs().flatten()[:1_000_000], 0.9999)),
        "static, MSE-optimal clip": mse_clip(calib, bits),
    }
    rows = [
        {
            "per-tensor scale": name,
            "clip": clip,
            "share of eval values clipped": float((evals.abs() > clip).float().mean()),
            "eval SQNR dB": errors(evals, _clip_quant(evals, clip, bits)).sqnr_db,
        }
        for name, clip in observers.items()
    ]
    dyn = float(evals.abs().max())
    rows.append(
        {
            "per-tensor scale": "dynamic (absmax of the eval batch itself)",
            "clip": dyn,
            "share of eval values clipped": 0.0,
            "eval SQNR dB": errors(evals, _clip_quant(evals, dyn, bits)).sqnr_db,
        }
    )
    return rows


def smoothing_factors(x: torch.Tensor, w: torch.Tensor, alpha: float) -> torch.Tensor:
    """SmoothQuant's ``s_j = max|x_j|**alpha / max|w_j|**(1 - alpha)`` (columns of ``x [T, K]``, ``w [N, K]``)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha={alpha!r} must be between 0 and 1 (0.5 is SmoothQuant's default)")
    return x.abs().amax(0).clamp_min(1e-5) ** alpha / w.abs().amax(0).clamp_min(1e-5) ** (1 - alpha)


def fold_into_layernorm(
    norm: torch.nn.LayerNorm, linears: Sequence[torch.nn.Linear], s: torch.Tensor
) -> tuple[torch.nn.LayerNorm, list[torch.nn.Linear]]:
    """Copies of ``norm`` and the ``linears`` it feeds, with ``1/s`` folded into the norm's affine
    parameters and ``s`` into the linears' input columns: the float output is unchanged."""
    if norm.weight is None or s.shape != norm.weight.shape:
        raise ValueError(f"s has shape {tuple(s.shape)}; it needs one factor per feature {tuple(norm.weight.shape)}")
    new_norm = copy.deepcopy(norm)
    new_linears = [copy.deepcopy(m) for m in linears]
    with torch.no_grad():
        new_norm.weight /= s
        new_norm.bias /= s
        for m in new_linears:
            m.weight *= s
    return new_norm, new_linears


def folded_model_cosine(model: Any, s: torch.Tensor, sentences: Sequence[str] | None = None) -> float:
    """Mean cosine between MiniLM's sentence embeddings before and after folding ``1/s`` into
    layer 0's attention-output LayerNorm and ``s`` into FC1 (``L0.intermediate``), in place and
    undone afterwards.

    FC1's output is unchanged by the fold, but in BERT (post-LN) that LayerNorm's output also
    feeds the residual connection around the FFN, which now receives ``x / s``: the model is
    not the same. In a pre-LN model (LLaMA, OPT) the norm feeds only the Linears and the fold
    is exact.
    """
    from qlesson.teach.models import SENTENCES, embed

    layer0 = model[0].auto_model.encoder.layer[0]
    norm, fc1 = layer0.attention.output.LayerNorm, layer0.intermediate.dense
    sentences = list(sentences or SENTENCES)
    before = embed(model, sentences)
    saved = [t.detach().clone() for t in (norm.weight, norm.bias, fc1.weight)]
    try:
        with torch.no_grad():
            norm.weight /= s
            norm.bias /= s
            fc1.weight *= s
        after = embed(model, sentences)
    finally:
        with torch.no_grad():
            for t, v in zip((norm.weight, norm.bias, fc1.weight), saved, strict=True):
                t.copy_(v)
    return float((before * after).sum(-1).mean())


def alpha_rows(cases: Sequence[tuple[str, torch.Tensor, torch.Tensor]], alphas: Sequence[float]) -> list[dict]:
    """W8A8 output SQNR of each ``(name, x, w)`` without smoothing and for each alpha.

    Activations per-tensor or per-token, weights per output channel; the max/median ratio of
    the (smoothed) activation's feature absmaxes shows whether the outliers really shrank.
    """
    from qlesson.teach.studies import smoothquant_rows

    rows = []
    for name, x, w in cases:
        for alpha in (None, *alphas):
            got = smoothquant_rows(x, w, alpha=alpha or 0.0)[:2] if alpha is None else smoothquant_rows(x, w, alpha)[2:]
            rows.append(
                {
                    "input": name,
                    "alpha": "none" if alpha is None else f"{alpha:.2f}",
                    "act max/median feature": got[0]["act max/median feature"],
                    "SQNR dB, per-tensor acts": f"{got[0]['output SQNR dB']:.2f}",
                    "SQNR dB, per-token acts": f"{got[1]['output SQNR dB']:.2f}",
                }
            )
    return rows


def w8a8_sqnr(x: torch.Tensor, w: torch.Tensor, alpha: float | None = None, acts: str = "per-token") -> float:
    """Output SQNR (dB) of int8 ``x @ w.T``: weights per output channel, activations ``acts``.

    ``alpha`` smooths first (SmoothQuant's ``s_j`` from ``x`` and ``w``, as in :func:`alpha_rows`);
    ``None`` quantizes the plain product.

    >>> x = torch.tensor([[1.0, -2.0], [0.5, 4.0]], dtype=torch.float64)
    >>> w = torch.tensor([[0.3, 0.1], [-0.2, 0.7]], dtype=torch.float64)
    >>> w8a8_sqnr(x, w) > 35, w8a8_sqnr(x, w, 0.5, "per-tensor") > 35
    (True, True)
    """
    grans = {"per-tensor": PerTensor(), "per-token": PerChannel(0)}
    if acts not in grans:
        raise ValueError(f"acts={acts!r} must be 'per-tensor' or 'per-token'")
    dtype = torch.promote_types(x.dtype, w.dtype)
    x, w = x.to(dtype), w.to(dtype)
    y = x @ w.T
    if alpha is not None:
        s = smoothing_factors(x, w, alpha)
        x, w = x / s, w * s
    y_hat = fake_quantize(x, 8, granularity=grans[acts]) @ fake_quantize(w, 8, granularity=PerChannel(0)).T
    return errors(y, y_hat).sqnr_db


def _sentence_rows(labels: Sequence[tuple[int, int, str]]) -> list[torch.Tensor]:
    sentence = torch.tensor([label[0] for label in labels])
    return [torch.nonzero(sentence == i).flatten() for i in range(int(sentence.max()) + 1)]


def _alpha_name(alpha: float | None) -> str:
    return "no smoothing" if alpha is None else f"alpha {alpha:.2f}"


def alpha_comparisons(
    cases: dict[str, tuple[torch.Tensor, torch.Tensor]],
    labels: Sequence[tuple[int, int, str]],
    comparisons: Sequence[tuple[str, str, float | None, float | None]],
) -> list[dict[str, Any]]:
    """How sure is each ``(case, acts, alpha A, alpha B)`` comparison of :func:`alpha_rows`?

    The SQNR is computed over every token of the sentences, so it is not a mean of
    per-sentence values: a jackknife leaves out one sentence at a time and recomputes
    everything that depends on the tokens (the smoothing factors and the dynamic scales).
    """
    from qlesson.teach.intervals import jackknife_sentences

    rows_of = _sentence_rows(labels)
    out = []
    for case, acts, a, b in comparisons:
        x, w = cases[case]

        def stat(
            keep: Any, x: torch.Tensor = x, w: torch.Tensor = w, acts: str = acts, a: Any = a, b: Any = b
        ) -> float:
            xs = x[torch.cat([rows_of[i] for i in keep])]
            return w8a8_sqnr(xs, w, a, acts) - w8a8_sqnr(xs, w, b, acts)

        d = jackknife_sentences(stat, len(rows_of))
        name_a, name_b = _alpha_name(a), _alpha_name(b)
        out.append(
            {
                "input": case,
                "activation scales": acts,
                "A - B": f"{name_a} - {name_b}",
                "dB": d.diff,
                "95% CI": [d.lo, d.hi],
                "verdict": d.verdict(name_a, name_b).replace(" higher", " better"),
            }
        )
    return out


def observer_comparisons(
    calib: torch.Tensor, evals: torch.Tensor, labels: Sequence[tuple[int, int, str]], bits: int = 8
) -> list[dict[str, Any]]:
    """Each static observer of :func:`static_scale_rows` against calibration min/max, on the eval text.

    The clips come from ``calib`` once; the jackknife leaves out one evaluation sentence at a time.
    """
    from qlesson.teach.intervals import jackknife_sentences

    rows_of = _sentence_rows(labels)
    clips = {r["per-tensor scale"]: r["clip"] for r in static_scale_rows(calib, evals, bits)}
    base = "static, min/max of calibration"
    out = []
    for name in ("static, 99.99th percentile of |x|", "static, MSE-optimal clip"):

        def stat(keep: Any, c: float = clips[name]) -> float:
            xs = evals[torch.cat([rows_of[i] for i in keep])]
            sq = [errors(xs, _clip_quant(xs, clip, bits)).sqnr_db for clip in (c, clips[base])]
            return sq[0] - sq[1]

        d = jackknife_sentences(stat, len(rows_of))
        short = name.removeprefix("static, ")
        out.append(
            {
                "observer - min/max": short,
                "dB": d.diff,
                "95% CI": [d.lo, d.hi],
                "verdict": d.verdict(short, "min/max").replace(" higher", " better"),
            }
        )
    return out


# --- Lesson 05's main line: calibrate on CALIBRATION_SENTENCES, score on the evaluation text ---

FIRST_LAYER = ("L0.query", "L0.intermediate", "L0.output")


class _Done(Exception):
    """Raised by the last hook to stop the forward pass once layer 0's inputs are captured."""


def capture_first_layer(model: Any, sentences: Sequence[str]) -> dict[str, torch.Tensor]:
    """The inputs of layer 0's query, FC1 (``L0.intermediate``) and FC2 (``L0.output``) Linears.

    Like :func:`qlesson.teach.models.capture_linear_inputs` (one sentence at a time, rows in
    :func:`qlesson.teach.models.token_labels` order), but the forward pass stops after layer 0's
    FFN: six times faster, and a few MB instead of hundreds for the 240 evaluation sentences.
    """
    from qlesson.teach.models import embed, short_name

    captured: dict[str, list[torch.Tensor]] = {k: [] for k in FIRST_LAYER}
    hooks = []
    for n, m in model.named_modules():
        key = short_name(n) if isinstance(m, torch.nn.Linear) else ""
        if key in captured:

            def hook(_m: torch.nn.Module, args: tuple[torch.Tensor, ...], _o: Any, key: str = key) -> None:
                captured[key].append(args[0].detach().reshape(-1, args[0].shape[-1]).clone())
                if key == FIRST_LAYER[-1]:
                    raise _Done

            hooks.append(m.register_forward_hook(hook))
    try:
        for sentence in sentences:
            try:
                embed(model, [sentence], batch_size=1)
            except _Done:
                pass
    finally:
        for h in hooks:
            h.remove()
    return {k: torch.cat(v) for k, v in captured.items()}


def sentence_of(labels: Sequence[tuple[int, int, str]]) -> torch.Tensor:
    """The sentence index of every token row."""
    return torch.tensor([label[0] for label in labels])


def static_fake_quant(x: torch.Tensor, lo: float, hi: float, bits: int = 8, symmetric: bool = True) -> torch.Tensor:
    """Fake-quantize ``x`` with one ruler fitted to ``[lo, hi]`` (from calibration data), clamping the rest.

    Symmetric: signed codes ``-(2**(b-1) - 1) .. 2**(b-1) - 1`` around 0. Asymmetric: unsigned codes
    ``0 .. 2**b - 1`` over ``[min(lo, 0), max(hi, 0)]`` with an integer zero point (lesson 01's rulers).

    >>> x = torch.tensor([-0.1, 0.0, 1.0, 3.0], dtype=torch.float64)
    >>> static_fake_quant(x, -0.1, 2.0, 2, symmetric=False).tolist()
    [0.0, 0.0, 0.7000000000000001, 2.1]
    """
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        scale = max(abs(lo), abs(hi)) / qmax
        return torch.clamp(torch.round(x / scale), -qmax, qmax) * scale
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / (2**bits - 1)
    zp = round(-lo / scale)
    return (torch.clamp(torch.round(x / scale) + zp, 0, 2**bits - 1) - zp) * scale


def _per_sentence(values: torch.Tensor, sentence: torch.Tensor, n: int) -> np.ndarray:
    return torch.zeros(n, dtype=torch.float64).index_add_(0, sentence, values.double()).numpy()


def pooled_sqnr(signal: np.ndarray, noise: np.ndarray) -> float:
    """SQNR in dB of every token pooled: ``10 log10(sum signal / sum noise)``."""
    return float(10 * np.log10(signal.sum() / noise.sum()))


def sqnr_difference(signal: np.ndarray, noise_a: np.ndarray, noise_b: np.ndarray) -> Any:
    """Pooled SQNR of A minus that of B (dB), with a paired bootstrap interval over sentence *pairs*.

    ``signal`` and the two ``noise`` arrays hold one sum of squares per evaluation sentence. The
    scales were fixed beforehand (calibrated on other text, or per token), so a sentence's error
    does not depend on which other sentences are drawn: the pooled SQNR can be recomputed for
    each resample from these sums. Both sentences of a paraphrase pair are drawn together.

    >>> s = np.ones(4); d = sqnr_difference(s, np.full(4, 0.1), np.full(4, 1.0))
    >>> round(d.diff, 6), round(d.lo, 6), round(d.hi, 6)
    (10.0, 10.0, 10.0)
    """
    from qlesson.teach.intervals import interval, pair_resamples

    idx = pair_resamples(signal.size)
    boots = 10 * np.log10(noise_b[idx].sum(1) / noise_a[idx].sum(1))
    return interval(pooled_sqnr(signal, noise_a) - pooled_sqnr(signal, noise_b), boots)


def one_sided_rows(
    calib: torch.Tensor, evals: torch.Tensor, labels: Sequence[tuple[int, int, str]], bits: int = 8
) -> list[dict[str, Any]]:
    """Symmetric against asymmetric int8 on ``evals``: per-tensor (the ruler fitted to ``calib``'s
    min and max) and per-token (each token's own min and max), with the asymmetric gain's interval."""
    sentence = sentence_of(labels)
    n = int(sentence.max()) + 1
    signal = _per_sentence((evals**2).sum(1), sentence, n)
    lo, hi = float(calib.min()), float(calib.max())
    rows = []
    for label in ("per-tensor (static)", "per-token (dynamic)"):
        noise = {}
        for sym in (True, False):
            if label.startswith("per-tensor"):
                xq = static_fake_quant(evals, lo, hi, bits, symmetric=sym)
            else:
                xq = fake_quantize(evals, bits, granularity=PerChannel(0), symmetric=sym, signed=sym)
            noise[sym] = _per_sentence(((xq - evals) ** 2).sum(1), sentence, n)
        d = sqnr_difference(signal, noise[False], noise[True])
        rows.append(
            {
                "int8 scales": label,
                "symmetric dB": pooled_sqnr(signal, noise[True]),
                "asymmetric dB": pooled_sqnr(signal, noise[False]),
                "gain dB": d.diff,
                "95% CI": [d.lo, d.hi],
            }
        )
    return rows


def _w8a8_noise(
    x_cal: torch.Tensor, x_ev: torch.Tensor, w: torch.Tensor, alpha: float | None, acts: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token signal and squared error of int8 ``x_ev @ w.T``; ``s`` and static scales from ``x_cal``."""
    x_cal, x_ev, w = x_cal.double(), x_ev.double(), w.double()
    y = x_ev @ w.T
    if alpha is not None:
        s = smoothing_factors(x_cal, w, alpha)
        x_cal, x_ev, w = x_cal / s, x_ev / s, w * s
    wq = fake_quantize(w, 8, granularity=PerChannel(0))
    if acts == "per-tensor":
        top = float(x_cal.abs().max())
        xq = static_fake_quant(x_ev, -top, top, 8)
    else:
        xq = fake_quantize(x_ev, 8, granularity=PerChannel(0))
    return (y**2).sum(1), ((xq @ wq.T - y) ** 2).sum(1)


def smoothing_rows(
    cases: Sequence[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]],
    labels: Sequence[tuple[int, int, str]],
    alphas: Sequence[float] = (0.5, 0.75),
) -> list[dict[str, Any]]:
    """W8A8 output SQNR on the evaluation text for each ``(name, x_calib, x_eval, w)``.

    Weights int8 per output channel; activations int8 symmetric, per-tensor (static: the
    calibration absmax) or per-token (dynamic). SmoothQuant's ``s`` comes from the calibration
    activations. Each alpha is compared with no smoothing (paired bootstrap over sentence pairs).
    """
    sentence = sentence_of(labels)
    n = int(sentence.max()) + 1
    rows = []
    for name, x_cal, x_ev, w in cases:
        for acts in ("per-tensor", "per-token"):
            sums = {a: _w8a8_noise(x_cal, x_ev, w, a, acts) for a in (None, *alphas)}
            signal = _per_sentence(sums[None][0], sentence, n)
            noise = {a: _per_sentence(v[1], sentence, n) for a, v in sums.items()}
            row: dict[str, Any] = {"input": name, "int8 act scales": acts, "none dB": pooled_sqnr(signal, noise[None])}
            for a in alphas:
                d = sqnr_difference(signal, noise[a], noise[None])
                row[f"alpha {a:g}: gain dB"] = d.diff
                row[f"alpha {a:g}: 95% CI"] = [d.lo, d.hi]
            rows.append(row)
    return rows


def observer_rows(
    rows: Sequence[dict[str, Any]], evals: torch.Tensor, labels: Sequence[tuple[int, int, str]], bits: int = 8
) -> list[dict[str, Any]]:
    """Each static observer of :func:`static_scale_rows` (its ``rows``) against calibration min/max
    on ``evals``, with a paired bootstrap interval over sentence pairs (the clips are fixed)."""
    sentence = sentence_of(labels)
    n = int(sentence.max()) + 1
    clips = {r["per-tensor scale"]: r["clip"] for r in rows}
    signal = _per_sentence((evals**2).sum(1), sentence, n)

    def noise(clip: float) -> np.ndarray:
        return _per_sentence(((_clip_quant(evals, clip, bits) - evals) ** 2).sum(1), sentence, n)

    base = noise(clips["static, min/max of calibration"])
    out = []
    for name in ("static, 99.99th percentile of |x|", "static, MSE-optimal clip"):
        d = sqnr_difference(signal, noise(clips[name]), base)
        short = name.removeprefix("static, ")
        out.append(
            {
                "observer - min/max": short,
                "dB": d.diff,
                "95% CI": [d.lo, d.hi],
                "verdict": d.verdict(short, "min/max").replace(" higher", " better"),
            }
        )
    return out


def granularity_control_rows(x: torch.Tensor, labels: Sequence[tuple[int, int, str]], bits: int = 8) -> list[dict]:
    """Activation SQNR over every token of ``x`` with dynamic int8 scales (fitted to ``x`` itself): per-tensor,
    the control (each ``[CLS]`` row its own scale, every other row one shared scale), per-token and
    per-feature. The control isolates the ``[CLS]`` rows on the same tokens as the other rows."""
    cls = cls_mask(labels)
    control = x.clone()
    control[cls] = fake_quantize(x[cls], bits, granularity=PerChannel(0))
    control[~cls] = fake_quantize(x[~cls], bits, granularity=PerTensor())
    rows = [
        ("per-tensor (this text's absmax)", fake_quantize(x, bits, granularity=PerTensor())),
        ("[CLS] rows own scales, the rest one", control),
        ("per-token", fake_quantize(x, bits, granularity=PerChannel(0))),
        ("per-feature", fake_quantize(x, bits, granularity=PerChannel(1))),
    ]
    return [{"int8 scales (dynamic)": name, "activation SQNR dB": errors(x, xq).sqnr_db} for name, xq in rows]


def smoothing_feature_rows(
    cases: Sequence[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]],
    labels: Sequence[tuple[int, int, str]],
    features: Sequence[Sequence[int]],
    alpha: float = 0.5,
) -> list[dict[str, Any]]:
    """The control for :func:`smoothing_split_rows`: the all-token gain of smoothing at ``alpha`` when
    every feature is smoothed, and when only the features of each entry of ``features`` are (every
    other ``s_j`` set to 1). ``s`` and the static scales come from the calibration activations."""
    rows = []
    for name, x_cal, x_ev, w in cases:
        s = smoothing_factors(x_cal.double(), w.double(), alpha)
        variants = [("every feature", s)]
        for chosen in features:
            only = torch.ones_like(s)
            only[list(chosen)] = s[list(chosen)]
            label = "feature" if len(chosen) == 1 else "features"
            variants.append((f"{label} {', '.join(map(str, chosen))} only", only))
        for acts in ("per-tensor", "per-token"):
            base = _w8a8_noise_s(x_cal, x_ev, w, None, acts).sum()
            row: dict[str, Any] = {"input": name, "int8 act scales": acts}
            for label, factors in variants:
                noise = _w8a8_noise_s(x_cal, x_ev, w, factors, acts).sum()
                row[f"{label} gain dB"] = 10 * np.log10(float(base / noise))
            rows.append(row)
    return rows


def _w8a8_noise_s(
    x_cal: torch.Tensor, x_ev: torch.Tensor, w: torch.Tensor, s: torch.Tensor | None, acts: str
) -> torch.Tensor:
    """Per-token squared error of int8 ``x_ev @ w.T`` after dividing by the given factors ``s``."""
    x_cal, x_ev, w = x_cal.double(), x_ev.double(), w.double()
    y = x_ev @ w.T
    if s is not None:
        x_cal, x_ev, w = x_cal / s, x_ev / s, w * s
    wq = fake_quantize(w, 8, granularity=PerChannel(0))
    if acts == "per-tensor":
        top = float(x_cal.abs().max())
        xq = static_fake_quant(x_ev, -top, top, 8)
    else:
        xq = fake_quantize(x_ev, 8, granularity=PerChannel(0))
    return ((xq @ wq.T - y) ** 2).sum(1)


def smoothing_split_rows(
    cases: Sequence[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]],
    labels: Sequence[tuple[int, int, str]],
    alphas: Sequence[float] = (0.5, 0.75),
) -> tuple[list[dict[str, Any]], float]:
    """:func:`smoothing_rows` without the interval columns, plus each alpha's gain on the ordinary
    tokens alone (every row but the ``[CLS]`` rows). Also returns the lowest lower bound of the
    all-token gains' 95% intervals (paired bootstrap over sentence pairs)."""
    sentence = sentence_of(labels)
    n = int(sentence.max()) + 1
    keep = ~cls_mask(labels)
    rows, lowest = [], float("inf")
    for name, x_cal, x_ev, w in cases:
        for acts in ("per-tensor", "per-token"):
            sums = {a: _w8a8_noise(x_cal, x_ev, w, a, acts) for a in (None, *alphas)}
            signal = _per_sentence(sums[None][0], sentence, n)
            noise = {a: _per_sentence(v[1], sentence, n) for a, v in sums.items()}
            row: dict[str, Any] = {"input": name, "int8 act scales": acts, "none dB": pooled_sqnr(signal, noise[None])}
            for a in alphas:
                d = sqnr_difference(signal, noise[a], noise[None])
                lowest = min(lowest, d.lo)
                row[f"alpha {a:g} gain dB"] = d.diff
            for a in alphas:
                ordinary = float(sums[None][1][keep].sum() / sums[a][1][keep].sum())
                row[f"ordinary tokens, alpha {a:g}"] = 10 * np.log10(ordinary)
            rows.append(row)
    return rows, lowest


def drop_columns(rows: Sequence[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    """The rows without the columns ``keys``.

    >>> drop_columns([{"gain dB": 5.4, "95% CI": [5.3, 5.5]}], "95% CI")
    [{'gain dB': 5.4}]
    """
    return [{k: v for k, v in r.items() if k not in keys} for r in rows]


def per_tensor_only(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with static per-tensor activation scales, without their ``int8 act scales`` column.

    >>> per_tensor_only([{"input": "a", "int8 act scales": "per-tensor", "gain dB": 1.0},
    ...                  {"input": "a", "int8 act scales": "per-token", "gain dB": 2.0}])
    [{'input': 'a', 'gain dB': 1.0}]
    """
    return drop_columns([r for r in rows if r["int8 act scales"] == "per-tensor"], "int8 act scales")


def static_smoothing_table(
    cases: Sequence[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]],
    labels: Sequence[tuple[int, int, str]],
    alpha: float = 0.5,
) -> list[dict[str, Any]]:
    """Lesson 05's section 4 table: for each case, the output SQNR with no smoothing and the gain of
    smoothing at ``alpha``, static per-tensor activation scales (from :func:`smoothing_split_rows`)."""
    rows = per_tensor_only(smoothing_split_rows(cases, labels, alphas=(alpha,))[0])
    gain = f"alpha {alpha:g} gain dB"
    return [{"input": r["input"], "output SQNR dB, none": r["none dB"], gain: r[gain]} for r in rows]


def one_side_sqnr(x_cal: torch.Tensor, x_ev: torch.Tensor, w: torch.Tensor, s: torch.Tensor | None) -> dict[str, float]:
    """Output SQNR (dB) of ``x_ev @ w.T`` after smoothing with ``s``, one side int8 at a time, the other
    float: ``"activations"`` (symmetric, one static per-tensor scale from ``x_cal``) and ``"weights"``
    (per output channel). ``s=None`` is no smoothing. It splits a smoothing gain into its two sides."""
    x_cal, x_ev, w = x_cal.double(), x_ev.double(), w.double()
    y = x_ev @ w.T
    if s is not None:
        x_cal, x_ev, w = x_cal / s, x_ev / s, w * s
    top = float(x_cal.abs().max())
    outs = {
        "activations": static_fake_quant(x_ev, -top, top, 8) @ w.T,
        "weights": x_ev @ fake_quantize(w, 8, granularity=PerChannel(0)).T,
    }
    return {k: 10 * float(torch.log10((y**2).sum() / ((v - y) ** 2).sum())) for k, v in outs.items()}


def recalibration_rows(
    cases: Sequence[tuple[str, torch.Tensor, torch.Tensor, torch.Tensor]],
    labels: Sequence[tuple[int, int, str]],
    calib_sentence: torch.Tensor,
    parts: Sequence[tuple[int, int]],
    feature: int = 99,
    alpha: float = 0.5,
) -> list[dict[str, Any]]:
    """Smoothing's static per-tensor gain (as in :func:`smoothing_split_rows`) recalibrated on parts of
    the calibration text: ``(size, part)`` keeps sentences ``size * part`` to ``size * part + size - 1``
    (``calib_sentence`` gives each calibration row's sentence). For the last case it adds the gain of
    smoothing ``feature`` alone, the output SQNR (dB) with every feature smoothed, the smoothed calibration
    absmax (the static scale's value), the feature that sets it and the median ``s_j``."""
    rows = []
    for size, part in parts:
        keep = (calib_sentence // size) == part
        sub = [(name, x_cal[keep], x_ev, w) for name, x_cal, x_ev, w in cases]
        row: dict[str, Any] = {"calibration": f"sentences {size * part + 1}-{size * part + size}"}
        for r in smoothing_split_rows(sub, labels, alphas=(alpha,))[0]:
            if r["int8 act scales"] == "per-tensor":
                row[f"{r['input']} gain dB"] = r[f"alpha {alpha:g} gain dB"]
                smoothed = r["none dB"] + r[f"alpha {alpha:g} gain dB"]
        name, x_cal, _, w = sub[-1]
        only = smoothing_feature_rows(sub[-1:], labels, features=([feature],), alpha=alpha)[0]
        s = smoothing_factors(x_cal.double(), w.double(), alpha)
        row[f"{name}, {feature} only gain dB"] = only[f"feature {feature} only gain dB"]
        row[f"{name}, smoothed dB"] = smoothed
        smoothed_max = (x_cal.double() / s).abs().amax(0)
        row["smoothed absmax"] = float(smoothed_max.max())
        row["set by feature"] = int(smoothed_max.argmax())
        row["median s_j"] = float(s.median())
        rows.append(row)
    return rows

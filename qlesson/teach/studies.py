"""Measurements on real MiniLM weights and activations (lessons 03 to 05).

Each function takes tensors (or the model) and returns rows for :func:`qlesson.teach.report.print_table`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from qlesson.quant.footprint import footprint, total_footprint
from qlesson.quant.granularity import Granularity, PerChannel, PerGroup, PerTensor, method_name
from qlesson.quant.metrics import errors
from qlesson.quant.quantize import fake_quantize
from qlesson.teach.intervals import Interval, jackknife_pairs, mean_interval, pair_means, paired_bootstrap
from qlesson.teach.models import embed, layer_type_of_short
from qlesson.teach.report import print_table


def channel_spread_rows(weights: Mapping[str, torch.Tensor]) -> list[dict[str, Any]]:
    """Per layer: shape and the spread of its output channels' absmax."""
    rows = []
    for name, w in weights.items():
        a = w.abs().amax(1)
        rows.append(
            {
                "layer": name,
                "shape": "x".join(str(s) for s in w.shape),
                "min": float(a.min()),
                "median": float(a.median()),
                "max": float(a.max()),
                "max/min": float(a.max() / a.min()),
                "max/median": float(a.max() / a.median()),
            }
        )
    return rows


def spread_by_type(weights: Mapping[str, torch.Tensor], lowest: bool = False) -> list[dict[str, Any]]:
    """Per layer type: the largest over its layers of the loudest output channel's absmax over the median
    channel's (max/median), and int4 SQNR per-tensor vs per-channel: the mean over the type's layers; with
    ``lowest``, also the lowest layer per-tensor (its block, e.g. ``L0``, and its SQNR)."""
    groups: dict[str, list[str]] = {}
    for name in weights:
        groups.setdefault(layer_type_of_short(name), []).append(name)
    rows = []
    for kind, names in groups.items():
        amax = [weights[n].abs().amax(1) for n in names]
        ratios = torch.tensor([float(a.max() / a.median()) for a in amax], dtype=torch.float64)
        sq_t = [errors(weights[n], fake_quantize(weights[n], 4)).sqnr_db for n in names]
        sq_c = [errors(weights[n], fake_quantize(weights[n], 4, granularity=PerChannel(0))).sqnr_db for n in names]
        worst = min(range(len(names)), key=lambda i: sq_t[i])
        row: dict[str, Any] = {
            "type": kind,
            "worst max/median": float(ratios.max()),
            "mean int4 SQNR per-tensor dB": sum(sq_t) / len(sq_t),
        }
        if lowest:
            row |= {"lowest per-tensor layer": names[worst].split(".")[0], "its dB": sq_t[worst]}
        rows.append(row | {"mean int4 SQNR per-channel dB": sum(sq_c) / len(sq_c)})
    return rows


def error_reduction(weights: Mapping[str, torch.Tensor], bits: int) -> float:
    """Fraction by which per-channel lowers the summed absolute error versus per-tensor, over all layers."""
    t = sum(float((fake_quantize(w, bits) - w).abs().sum()) for w in weights.values())
    c = sum(float((fake_quantize(w, bits, granularity=PerChannel(0)) - w).abs().sum()) for w in weights.values())
    return 1 - c / t


def outlier_channels(weights: Mapping[str, torch.Tensor], top: int = 5, k: int = 3) -> list[dict[str, Any]]:
    """The ``top`` layers with the loudest single channel relative to their median channel."""
    rows = []
    for name, w in weights.items():
        a = w.abs().amax(1)
        vals, idx = a.topk(k)
        rows.append(
            {
                "layer": name,
                "loudest channels": idx.tolist(),
                "their absmax": [round(v, 3) for v in vals.tolist()],
                "median absmax": float(a.median()),
                "loudest / median": float(vals[0] / a.median()),
            }
        )
    return sorted(rows, key=lambda r: -r["loudest / median"])[:top]


def _pairwise(e: torch.Tensor) -> torch.Tensor:
    i, j = torch.triu_indices(len(e), len(e), 1)
    return (e @ e.T)[i, j]


def _spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a.numpy(), b.numpy()).statistic)


def sentence_scores(ref: torch.Tensor, e: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence: cosine to its reference embedding, and how well its neighbours keep their order.

    ``ref`` and ``e`` are unit-normalised embeddings ``[sentences, dim]`` (FP32 model and
    quantized model). The second array holds, for each sentence ``i``, Spearman's rank
    correlation between its similarities to every other sentence before and after: the
    ranking a search with sentence ``i`` as the query would return. Both are one value per
    sentence, so :mod:`qlesson.teach.intervals` can resample sentences.

    >>> ref = torch.nn.functional.normalize(torch.eye(4, dtype=torch.float64) + 0.1 * torch.arange(16.0).reshape(4, 4))
    >>> cos, rank = sentence_scores(ref, ref)
    >>> cos.round(6).tolist(), rank.tolist()
    ([1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0])
    """
    from scipy.stats import rankdata

    if ref.shape != e.shape or ref.ndim != 2 or len(ref) < 3:
        raise ValueError(f"ref {tuple(ref.shape)} and e {tuple(e.shape)} must be the same [sentences >= 3, dim] shape")
    ref, e = ref.double(), e.double()
    n = len(ref)
    off = ~torch.eye(n, dtype=torch.bool)
    sims = [(x @ x.T)[off].reshape(n, n - 1).numpy() for x in (ref, e)]
    ra, rb = (rankdata(s, axis=1) for s in sims)
    ra, rb = ra - ra.mean(1, keepdims=True), rb - rb.mean(1, keepdims=True)
    rank = (ra * rb).sum(1) / np.sqrt((ra * ra).sum(1) * (rb * rb).sum(1))
    return (e * ref).sum(1).numpy(), rank


def encoder_weights(model: Any) -> dict[str, torch.Tensor]:
    """The encoder's Linear weights (36 in MiniLM) by short name: every Linear but the ``pooler``, which the
    sentence embedding (a mean over tokens) never uses, so it is neither quantized nor counted in bits/weight."""
    from qlesson.teach.models import linear_weights

    return {n: w for n, w in linear_weights(model).items() if n != "pooler"}


@dataclass(frozen=True)
class EmbeddingScores:
    """One quantization setting's per-sentence scores against the FP32 model."""

    label: str
    bits_per_weight: float
    cosine: np.ndarray
    rank_corr: np.ndarray
    # unit embeddings of the FP32 and the quantized model, so a rank correlation can be recomputed on
    # a subset of the sentences (its value depends on which other sentences are in the set)
    embeddings: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def row(self, columns: Sequence[str] | None = None) -> dict[str, Any]:
        """The setting's line in a table: means, the cosine's 95% interval (pairs resampled), the worst sentence;
        only ``columns``, in that order, when given."""
        ci = mean_interval(pair_means(self.cosine)) if self.cosine.size % 2 == 0 else mean_interval(self.cosine)
        full = {
            "weights": self.label,
            "bits/weight": self.bits_per_weight,
            "mean cosine": float(self.cosine.mean()),
            "cosine 95% CI": [ci.lo, ci.hi],
            "worst cosine": float(self.cosine.min()),
            "rank corr": float(self.rank_corr.mean()),
        }
        return full if columns is None else {c: full[c] for c in columns}


def embedding_scores(
    model: Any, settings: Sequence[tuple[int, Granularity]], sentences: Sequence[str] | None = None
) -> dict[str, EmbeddingScores]:
    """Quantize every encoder Linear weight per setting and score the sentence embeddings against FP32.

    ``sentences`` defaults to the 240 evaluation sentences
    (:data:`qlesson.teach.eval_text.EVAL_SENTENCES`). Keys are labels like ``"int4 per-group 32"``.
    """
    from qlesson.teach.eval_text import EVAL_SENTENCES
    from qlesson.teach.models import replaced_weights

    sentences = list(EVAL_SENTENCES if sentences is None else sentences)
    weights = encoder_weights(model)
    shapes = [tuple(w.shape) for w in weights.values()]
    ref = embed(model, sentences)
    out = {}
    for bits, g in settings:
        with replaced_weights(model, {n: fake_quantize(w, bits, granularity=g) for n, w in weights.items()}):
            e = embed(model, sentences)
        label = f"int{bits} {method_name(g)}"
        cos, rank = sentence_scores(ref, e)
        embs = (ref.double().numpy(), e.double().numpy())
        out[label] = EmbeddingScores(label, total_footprint(shapes, bits, g).bits_per_weight, cos, rank, embs)
    return out


def embedding_scores_by_layer(
    model: Any,
    settings: Sequence[tuple[str, Callable[[str], tuple[int, Granularity]]]],
    sentences: Sequence[str] | None = None,
    *,
    progress: bool = False,
) -> dict[str, EmbeddingScores]:
    """Like :func:`embedding_scores`, but each setting chooses ``(bits, granularity)`` per encoder Linear layer.

    A setting is ``(label, choose)``; ``choose(short_name)`` gives the layer's bits and granularity
    (short names as :func:`qlesson.teach.models.short_name` writes them: ``"L0.output"``). Lesson 03
    uses it to quantize some layer types per-tensor and the rest per-channel. ``progress=True`` prints
    a counter of the settings done to stdout (the same text on every run).
    """
    from qlesson.teach.eval_text import EVAL_SENTENCES
    from qlesson.teach.models import replaced_weights

    sentences = list(EVAL_SENTENCES if sentences is None else sentences)
    weights = encoder_weights(model)
    ref = embed(model, sentences)
    out = {}
    if progress:
        import sys

        from tqdm import tqdm

        fixed = {"file": sys.stdout, "bar_format": "{desc}: {n_fmt}/{total_fmt}", "mininterval": 0, "miniters": 1}
        settings = tqdm(settings, desc="quantize and embed", **fixed)
    for label, choose in settings:
        new, bits_total = {}, 0.0
        for name, w in weights.items():
            bits, g = choose(name)
            new[name] = fake_quantize(w, bits, granularity=g)
            bits_total += footprint(tuple(w.shape), bits, g).total_bytes * 8
        with replaced_weights(model, new):
            e = embed(model, sentences)
        cos, rank = sentence_scores(ref, e)
        numel = sum(w.numel() for w in weights.values())
        out[label] = EmbeddingScores(label, bits_total / numel, cos, rank, (ref.double().numpy(), e.double().numpy()))
    return out


def split_rows(
    rows: Sequence[Mapping[str, Any]], mirror: Mapping[str, Any], columns: Sequence[str]
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Lesson 03's split table: ``rows`` (all per-tensor, all per-channel, the split) plus the ``mirror`` row
    cut to ``columns``, and the shares of the per-channel minus per-tensor gap in mean cosine that the split
    recovers and that the mirror loses.

    >>> rows = [{"mean cosine": 0.25}, {"mean cosine": 0.75}, {"mean cosine": 0.5}]
    >>> table, share = split_rows(rows, {"mean cosine": 0.375, "worst cosine": 0.1}, ["mean cosine"])
    >>> len(table), table[-1], share
    (4, {'mean cosine': 0.375}, {'split recovers': 0.5, 'mirror loses': 0.75})
    """
    if len(rows) != 3:
        raise ValueError(f"rows must be per-tensor, per-channel and the split (3 rows), got {len(rows)}")
    t, c, sp = (float(r["mean cosine"]) for r in rows)
    mirror_row = {k: mirror[k] for k in columns}
    gap = c - t
    share = {"split recovers": (sp - t) / gap, "mirror loses": (c - float(mirror["mean cosine"])) / gap}
    return [dict(r) for r in rows] + [mirror_row], share


def split_report(scores: Mapping[str, EmbeddingScores], mirror: Mapping[str, Any], *, unrelated: bool = False) -> None:
    """Print lesson 03's section 4: the table of ``scores`` (all per-tensor, all per-channel, one split) and the
    ``mirror`` split's row (lesson 03 passes the stored run's, ``python -m qlesson.bench lesson03``), the shares of the
    per-channel minus per-tensor gap in mean cosine that the split recovers and the mirror loses (:func:`split_rows`),
    and a yardstick: the mean cosine between the two FP32 embeddings of each paraphrase pair (sentences 0 and 1,
    2 and 3, ...). ``unrelated=True`` adds a second yardstick: the mean cosine between FP32 embeddings of
    sentences from different pairs.

    >>> fp32 = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0], [0.0, 1.0]])  # two pairs: cosines 0.6 and 1
    >>> scores = {
    ...     k: EmbeddingScores(k, b, np.full(4, c), np.ones(4), (fp32, fp32))
    ...     for k, b, c in [("all T", 4.0, 0.25), ("all C", 4.5, 0.75), ("split", 4.25, 0.5)]
    ... }
    >>> split_report(scores, {"weights": "mirror", "bits/weight": 4.25, "mean cosine": 0.375, "worst cosine": 0.1})
    weights | bits/weight | mean cosine
    --------+-------------+------------
    all T   |       4.000 |      0.2500
    all C   |       4.500 |      0.7500
    split   |       4.250 |      0.5000
    mirror  |       4.250 |      0.3750
    split: recovers 50% of the gap, loses 50%; mirror loses 75%
    FP32 paraphrase pairs: mean cosine 0.80
    >>> split_report(scores, {"weights": "mirror", "bits/weight": 4.25, "mean cosine": 0.375}, unrelated=True)
    ... # doctest: +ELLIPSIS
    weights | ...
    FP32 paraphrase pairs: mean cosine 0.80; sentences from different pairs: 0.40
    """
    cols = ("weights", "bits/weight", "mean cosine")
    rows, share = split_rows([s.row(cols) for s in scores.values()], mirror, cols)
    print_table(rows, {"bits/weight": ".3f", "mean cosine": ".4f"})
    r = share["split recovers"]
    print(f"{rows[2]['weights']}: recovers {r:.0%} of the gap, loses {1 - r:.0%};", end=" ")
    print(f"{mirror['weights']} loses {share['mirror loses']:.0%}")
    fp32 = next(iter(scores.values())).embeddings[0]  # every setting keeps the same FP32 embeddings first
    line = f"FP32 paraphrase pairs: mean cosine {(fp32[0::2] * fp32[1::2]).sum(1).mean():.2f}"
    if unrelated:
        pair = np.arange(len(fp32)) // 2
        line += f"; sentences from different pairs: {(fp32 @ fp32.T)[pair[:, None] != pair[None, :]].mean():.2f}"
    print(line)


def embedding_quality(
    model: Any, settings: Sequence[tuple[int, Granularity]], sentences: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Quantize every Linear weight and compare sentence embeddings with FP32: one row per setting.

    ``mean cosine`` averages each sentence's cosine to its FP32 embedding (with a bootstrap
    95% interval over sentences); ``rank corr`` averages :func:`sentence_scores`' per-sentence
    rank correlations. Bits per weight count fp16 scales.
    """
    return [s.row() for s in embedding_scores(model, settings, sentences).values()]


def compare_embeddings(scores: Mapping[str, EmbeddingScores], pairs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """For each ``(A, B)``: the paired differences ``A - B`` in mean cosine and rank corr, with 95% intervals.

    A verdict names the higher one only when the interval excludes 0; otherwise it says ``tie``.
    """
    rows = []
    for a, b in pairs:
        missing = [k for k in (a, b) if k not in scores]
        if missing:
            raise ValueError(f"no scores for {missing}; measured: {list(scores)}")
        cells, cos, rank = embedding_differences(scores[a], scores[b])
        short_a, short_b = _short(a, b)
        verdict = f"{cos.verdict(short_a, short_b)}; {rank.verdict(short_a, short_b)}"
        rows.append({"A - B": f"{a} - {b}", **cells, "verdict (cosine; rank)": verdict})
    return rows


def rank_corr_on(embeddings: tuple[np.ndarray, np.ndarray], keep: np.ndarray) -> float:
    """Mean per-sentence rank correlation (:func:`sentence_scores`) recomputed on the sentences ``keep`` only."""
    ref, e = (torch.from_numpy(x[keep]) for x in embeddings)
    return float(sentence_scores(ref, e)[1].mean())


def embedding_differences(a: EmbeddingScores, b: EmbeddingScores) -> tuple[dict[str, Any], Interval, Interval]:
    """Table cells of the paired differences ``a - b`` in mean cosine and rank corr, and the two intervals.

    Sentences come in paraphrase pairs (an even count): the cosine interval resamples pairs; the
    rank correlation, which depends on the whole set, gets a jackknife over pairs that recomputes
    it without each pair (when both scores carry their embeddings; otherwise pairs are resampled).
    """
    cos, rank = _cosine_interval(a, b), _rank_interval(a, b)
    cells = {"cosine": cos.diff, "cosine 95% CI": [cos.lo, cos.hi], "rank corr": rank.diff}
    return cells | {"rank 95% CI": [rank.lo, rank.hi]}, cos, rank


def best_and_ties(scores: Mapping[str, EmbeddingScores], names: Sequence[str], metric: str) -> tuple[str, list[str]]:
    """The name with the highest mean ``metric`` (``"cosine"`` or ``"rank_corr"``), and those it does not beat.

    A name ties with the best when the paired bootstrap interval of ``best - name`` spans 0.
    """
    if metric not in ("cosine", "rank_corr") or not names:
        raise ValueError(f"metric={metric!r} must be 'cosine' or 'rank_corr', names non-empty (got {len(names)})")
    best = max(names, key=lambda n: float(getattr(scores[n], metric).mean()))
    diff = _cosine_interval if metric == "cosine" else _rank_interval
    ties = [n for n in names if n != best and not diff(scores[best], scores[n]).excludes_zero]
    return best, ties


def _cosine_interval(a: EmbeddingScores, b: EmbeddingScores) -> Interval:
    return paired_bootstrap(a.cosine, b.cosine, pairs=a.cosine.size % 2 == 0)


def _rank_interval(a: EmbeddingScores, b: EmbeddingScores) -> Interval:
    paired = a.cosine.size % 2 == 0
    if paired and a.embeddings is not None and b.embeddings is not None:
        ea, eb = a.embeddings, b.embeddings
        return jackknife_pairs(lambda keep: rank_corr_on(ea, keep) - rank_corr_on(eb, keep), a.cosine.size)
    return paired_bootstrap(a.rank_corr, b.rank_corr, pairs=paired)


def _short(a: str, b: str) -> tuple[str, str]:
    """Short names for a verdict: ``("int4 per-group 32", "int4 per-group 128")`` -> ``("g32", "g128")``.

    Labels that are not ``"int<bits> <method>"`` (format names such as ``"Q4_K search"``) stay as they are.

    >>> _short("int4 per-group 32", "int4 per-group 128"), _short("int3 per-group 32", "int4 per-channel")
    (('g32', 'g128'), ('int3 g32', 'int4 per-chan'))
    >>> _short("NVFP4", "Q4_K search")
    ('NVFP4', 'Q4_K search')
    """
    parts = [label.partition(" ") for label in (a, b)]
    if not all(bits.startswith("int") and bits[3:].isdigit() and method for bits, _, method in parts):
        return a, b
    same_bits = parts[0][0] == parts[1][0]
    short = []
    for bits, _, method in parts:
        method = method.replace("per-group ", "g").replace("per-channel", "per-chan").replace("per-tensor", "per-tens")
        short.append(method if same_bits else f"{bits} {method}")
    return short[0], short[1]


def fake_quantize_full_range(w: torch.Tensor, bits: int, granularity: PerChannel | PerGroup) -> torch.Tensor:
    """Symmetric quantization of a weight ``[N, K]`` with all ``2**bits`` codes, as llama.cpp's Q4_0 does.

    Each block's value of largest magnitude lands exactly on ``-2**(bits-1)`` (``d = m / -8`` at
    4 bits); the other side reaches ``2**(bits-1) - 1``. The restricted ruler of
    :func:`qlesson.quant.quantize` uses ``2**bits - 1`` codes instead. Scales stay float32.

    >>> fake_quantize_full_range(torch.tensor([[1.0, -0.5, 0.25, 0.0]]), 4, PerChannel(0)).tolist()
    [[1.0, -0.5, 0.25, 0.0]]
    """
    if w.ndim != 2 or not isinstance(granularity, (PerChannel, PerGroup)) or granularity.axis not in (0, -1, 1):
        raise ValueError(f"a weight [N, K] with PerChannel(0) or PerGroup(g) along K is needed; got {granularity!r}")
    n, k = w.shape
    size = k if isinstance(granularity, PerChannel) else granularity.group_size
    if k % size:
        raise ValueError(f"group size {size} does not divide in_features {k}")
    blocks = w.reshape(n, k // size, size)
    lo = -(2 ** (bits - 1))
    d = blocks.gather(-1, blocks.abs().argmax(-1, keepdim=True)) / lo
    d = torch.where(d == 0, torch.ones_like(d), d)  # an all-zero block: codes 0
    return (torch.clamp(torch.round(blocks / d), lo, -lo - 1) * d).reshape(n, k)


def _fake(w: torch.Tensor, bits: int, g: Granularity, symmetric: bool, full_range: bool) -> torch.Tensor:
    if full_range:
        return fake_quantize_full_range(w, bits, g)  # type: ignore[arg-type]
    return fake_quantize(w, bits, granularity=g, symmetric=symmetric)


def pareto_points(
    weights: Mapping[str, torch.Tensor],
    bits_list: Sequence[int] = (8, 4, 3),
    granularities: Sequence[Granularity] = (
        PerTensor(),
        PerChannel(0),
        PerGroup(256),
        PerGroup(128),
        PerGroup(64),
        PerGroup(32),
    ),
    *,
    symmetric: bool = True,
    full_range: bool = False,
) -> list[dict[str, Any]]:
    """Relative RMSE over all of ``weights`` against bits per weight with fp16 scales.

    ``symmetric=False`` quantizes asymmetrically (an integer zero point, the range widened to
    include 0) and prices that zero point as fp16, 2 bytes beside every scale; those methods are
    named with an ``asym`` suffix.
    ``full_range=True`` uses the symmetric ruler with all ``2**bits`` codes of
    :func:`fake_quantize_full_range` (suffix ``full``). Every group size must divide every
    layer's ``in_features`` (a ValueError says which does not).
    """
    if full_range and not symmetric:
        raise ValueError("full_range=True is a symmetric ruler; leave symmetric=True")
    rows = []
    total_sq = sum(float(w.double().square().sum()) for w in weights.values())
    numel = sum(w.numel() for w in weights.values())
    for g in granularities:
        for bits in bits_list:
            err_sq = sum(
                float((_fake(w, bits, g, symmetric, full_range) - w).double().square().sum()) for w in weights.values()
            )
            zp = 0 if symmetric else 2
            total_bytes = sum(
                footprint(tuple(w.shape), bits, g, zero_point_bytes=zp).total_bytes for w in weights.values()
            )
            rows.append(
                {
                    "method": method_name(g) + ("" if symmetric else " asym") + (" full" if full_range else ""),
                    "bits": bits,
                    "bits per weight": total_bytes * 8 / numel,
                    "rmse / rms": (err_sq / total_sq) ** 0.5,
                }
            )
    return rows


def activation_quant_rows(acts: torch.Tensor, bits: int = 8) -> list[dict[str, Any]]:
    """Per-tensor, per-token (one scale per row) and per-feature quantization of ``[tokens, features]``."""
    rows = []
    for label, g in (("per-tensor", PerTensor()), ("per-token", PerChannel(0)), ("per-feature", PerChannel(1))):
        e = errors(acts, fake_quantize(acts, bits, granularity=g))
        rows.append({"activation scales": label, "rmse": e.rmse, "SQNR dB": e.sqnr_db})
    return rows


def smoothquant_rows(x: torch.Tensor, w: torch.Tensor, alpha: float = 0.5, bits: int = 8) -> list[dict[str, Any]]:
    """W8A8 output error of ``x @ w.T`` without and with SmoothQuant's per-feature migration.

    ``s_j = max|x_j|**alpha / max|w_j|**(1 - alpha)``; ``x / s`` and ``w * s`` give the same
    product in exact arithmetic, but the activation outliers are tamed before quantizing.
    Activations get one scale per token, weights one per output channel.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha={alpha!r} must be between 0 and 1 (0.5 is SmoothQuant's default)")
    dtype = torch.promote_types(x.dtype, w.dtype)  # float64 activations of the model, float32 weights
    x, w = x.to(dtype), w.to(dtype)
    y = x @ w.T
    s = (x.abs().amax(0).clamp_min(1e-5) ** alpha) / (w.abs().amax(0).clamp_min(1e-5) ** (1 - alpha))
    rows = []
    for label, xs, ws in (("plain", x, w), (f"smoothed (alpha {alpha})", x / s, w * s)):
        for act_label, g in (("per-tensor", PerTensor()), ("per-token", PerChannel(0))):
            y_hat = fake_quantize(xs, bits, granularity=g) @ fake_quantize(ws, bits, granularity=PerChannel(0)).T
            rows.append(
                {
                    "variant": label,
                    "activation scales": act_label,
                    "act max/median feature": float(xs.abs().amax(0).max() / xs.abs().amax(0).median()),
                    "output SQNR dB": errors(y, y_hat).sqnr_db,
                }
            )
    return rows

"""The slow studies of lessons 03 and 08's *Going deeper* parts, run as commands.

``python -m qlesson.bench lesson08`` (and ``lesson03``) runs the study, prints its reading and
stores it in ``notebooks/results/NN_*.json``; the lesson prints that stored reading, so Run All
stays fast. ``tests/test_lesson08_study.py`` and ``tests/test_lesson03_study.py`` check the stored
reading against a fresh run of its cheap part.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PATHS = {"03": "notebooks/results/03_deeper_study.json", "08": "notebooks/results/08_format_study.json"}

PAIRS_08 = [("NVFP4", "Q4_K search"), ("NVFP4", "Q4_0"), ("Q4_K search", "Q4_K"), ("Q4_K", "Q4_0")]
PAIRS_08 += [("NVFP4", "int4 g32"), ("NVFP4", "MXFP4 even"), ("MXFP4 floor", "int4 g32")]
PAIRS_08 += [("Q6_K search", "Q6_K"), ("Q4_K search", "Q4_1"), ("MXFP4 floor", "Q4_0")]
RULE_PAIRS_08 = [("MXFP4 rceil", "MXFP4 ceil"), ("MXFP4 floor", "MXFP4 even")]


def plain(v: Any) -> Any:
    """JSON values: numpy and torch numbers to floats and ints, tuples to lists."""
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    return v


def study_08(bar: Any = None) -> dict[str, Any]:
    """Lesson 08's 'Every format on all 36 layers': the format table with the embedding measures, the best
    format per bit budget, and the paired comparisons (several minutes on two cores)."""
    from qlesson.teach import format_study, models, studies

    model = models.load_minilm()
    weights = {n: w for n, w in models.linear_weights(model).items() if n != "pooler"}
    methods = format_study.METHODS if bar is None else bar(format_study.METHODS)
    table, scores = format_study.format_study(model, weights, methods)
    table = [r | {"cosine 95% CI": scores[r["format"]].row()["cosine 95% CI"]} for r in table]
    lines = []
    for y in ("SQNR dB", "mean cosine", "rank corr"):
        note = "" if y == "SQNR dB" else " (on the means; the intervals below show which gaps are ties)"
        lines.append(f"best per bit by {y}{note}: {', '.join(format_study.pareto_front(table, y))}")
    for budget in (4.3, 4.55, 7.0):
        fits = [r for r in table if r["bits per weight"] <= budget]
        best = max(fits, key=lambda r: r["SQNR dB"])
        cos_best, cos_ties = studies.best_and_ties(scores, [r["format"] for r in fits], "cosine")
        tied = f" (tied with {', '.join(cos_ties)}: intervals span 0)" if cos_ties else ""
        lines.append(
            f"within {budget} bits/weight: best SQNR {best['format']} ({best['SQNR dB']:.2f} dB), "
            f"best cosine {cos_best}{tied}"
        )
    return plain(
        {
            "table": table,
            "lines": lines,
            "comparisons": studies.compare_embeddings(scores, PAIRS_08),
            "rule_comparisons": studies.compare_embeddings(scores, RULE_PAIRS_08),
        }
    )


STEPS_03 = [("int8 per-channel", "int8 per-tensor"), ("int4 per-channel", "int4 per-tensor")]
ORDER_03 = ["int8 per-tensor", "int8 per-channel", "int4 per-tensor", "int4 per-channel", "int3 per-channel"]


def study_03(bar: Any = None) -> dict[str, Any]:
    """Lesson 03's Going-deeper embedding studies: int8, int4 and int3, per-tensor and per-channel, with paired
    intervals, and which layers the per-tensor loss comes from (about a minute)."""
    import qlesson as ql
    from qlesson.teach import models, studies

    model = models.load_minilm()
    weights = models.linear_weights(model)
    outputs = {n for n in weights if models.layer_type_of_short(n) == "output"}
    near_zero = {"L0.attention output", "L0.intermediate"}
    more = [(8, ql.PerTensor()), (8, ql.PerChannel(0)), (3, ql.PerChannel(0))]
    every = [(4, ql.PerTensor()), (4, ql.PerChannel(0)), *more]
    scores = studies.embedding_scores(model, every if bar is None else bar(every))
    table = [scores[k].row() for k in ORDER_03]
    diffs = studies.compare_embeddings(scores, STEPS_03)
    split = [
        ("per-tensor on FFN outputs only", lambda n: (4, ql.PerTensor() if n in outputs else ql.PerChannel(0))),
        (
            "per-tensor on L0.attention output and L0.intermediate only",
            lambda n: (4, ql.PerTensor() if n in near_zero else ql.PerChannel(0)),
        ),
    ]
    split_scores = studies.embedding_scores_by_layer(model, split if bar is None else bar(split))
    return plain(
        {
            "table": table,
            "steps": diffs,
            "split": [s.row() for s in split_scores.values()],
        }
    )


def load(lesson: str, missing_ok: bool = True) -> dict[str, Any] | None:
    """The stored reading of lesson ``lesson``'s study (None when missing and ``missing_ok``)."""
    path = ROOT / PATHS[lesson]
    if not path.exists():
        if missing_ok:
            return None
        raise FileNotFoundError(f"{path} is missing: run python -m qlesson.bench lesson{lesson}")
    return json.loads(path.read_text())


def main(lesson: str) -> None:
    from tqdm.auto import tqdm

    reading = {"03": study_03, "08": study_08}[lesson](bar=lambda xs: tqdm(xs, desc=f"lesson {lesson} study"))
    path = ROOT / PATHS[lesson]
    path.write_text(json.dumps(reading, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")

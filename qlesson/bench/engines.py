"""Latency per granularity in real engines on this CPU: ``python -m qlesson.bench engines [--quick] [--store]``.

Introduced in lesson 11. MiniLM is written once per format to a temporary folder and run by the engine itself:
ONNX Runtime (:mod:`qlesson.engines.onnx_bert`: fp32, int8 per-tensor and per-channel weights as QDQ, int4 per-group
as ``MatMulNBits``; ORT's own ``quantize_dynamic``) and llama.cpp (:mod:`qlesson.engines.gguf_bert`: F32, Q8_0, Q4_0,
Q4_K). Two workloads on the same sentences: *batch 1* (one call per sentence) and *batch N* (all in one call).

Every format is timed in the same interleaved rounds (``gemm._interleaved_times``), so a burst of load on a shared
machine lands on all of them; each row gives the median and the spread (IQR) of its rounds and its time over the fp32
time of the *same engine* and workload. The noise rule: a ratio inside ``1 +- margin`` is a tie, the margin being
``gemm.NOISE_FLOOR`` or either row's spread over its median, the larger.

ORT's int8 QDQ weights run twice: ``accuracy_level=1`` (weight-only float32 compute: what the file says) and ORT's
default (4), where the optimizer fuses ``DequantizeLinear -> MatMul`` into an 8-bit ``MatMulNBits`` that also
quantizes the activations (:func:`qlesson.engines.onnx_bert.session`).

``--store`` writes ``notebooks/results/engines_cpu.json``; :func:`stored_reading` reads it back and
:func:`format_reading` prints it (what lesson 11 prints: a stored reading, so its output is the same on every run).

>>> check_formats(["int4-g32", "Q8_0"])
['fp32', 'int4-g32', 'F32', 'Q8_0']
>>> print(verdict({"median_ms": 9.5, "iqr_ms": 0.1}, {"median_ms": 10.0, "iqr_ms": 0.1}))
tie
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from qlesson.bench.gemm import NOISE_FLOOR, _interleaved_times, compare, load_line, machine_name, median_and_iqr

RESULTS = Path(__file__).resolve().parents[2] / "notebooks" / "results"
STORED = RESULTS / "engines_cpu.json"
ORT = "onnxruntime"
LLAMA = "llama.cpp"
# format -> (plan for onnx_bert.export_minilm, session accuracy_level); "quantize_dynamic" is ORT's own quantizer
ORT_FORMATS: dict[str, tuple[str | None, int | None]] = {
    "fp32": (None, 1),
    "int8-tensor": ("int8-tensor", 1),
    "int8-channel": ("int8-channel", 1),
    "int8-channel, ORT default (acc 4)": ("int8-channel", None),
    "int4-g32": ("int4-g32", 1),
    "int4-g128": ("int4-g128", 1),
    "quantize_dynamic": (None, None),
}
GGUF_FORMATS = ("F32", "Q8_0", "Q4_0", "Q4_K")
BASELINE = {ORT: "fp32", LLAMA: "F32"}
QUICK_FORMATS = ("fp32", "int8-channel", "int4-g32", "F32", "Q8_0")
QUICK_SENTENCES = 4
Op = Callable[[], Any]


@dataclass
class EngineRow:
    """One format and workload: the median and IQR of its rounds (ms) and its time over the same engine's fp32."""

    engine: str
    format: str
    workload: str  # "batch 1" (one call per sentence) or "batch N" (one call for all)
    median_ms: float
    iqr_ms: float
    x_fp32: float = float("nan")


def engine_of(fmt: str) -> str:
    """The engine that runs a format name (``ValueError`` naming the known ones otherwise).

    >>> engine_of("int4-g32"), engine_of("Q4_K")
    ('onnxruntime', 'llama.cpp')
    """
    if fmt in ORT_FORMATS:
        return ORT
    if fmt in GGUF_FORMATS:
        return LLAMA
    raise ValueError(f"unknown format {fmt!r}: choose from {list(ORT_FORMATS)} (ONNX Runtime) or {list(GGUF_FORMATS)}")


def check_formats(formats: Sequence[str]) -> list[str]:
    """The formats, checked (unknown name: ``ValueError``), grouped by engine, each engine's fp32 baseline first.

    >>> check_formats(["Q8_0", "int4-g32", "fp32"])
    ['fp32', 'int4-g32', 'F32', 'Q8_0']
    """
    engines = {engine_of(f) for f in formats}
    out: list[str] = []
    for engine in (ORT, LLAMA):
        if engine in engines:
            out += [
                BASELINE[engine],
                *dict.fromkeys(f for f in formats if engine_of(f) == engine and f != BASELINE[engine]),
            ]
    return out


def llama_missing() -> str | None:
    """Why the llama.cpp rows cannot run here (one line naming ``make engines``), or None when they can."""
    try:
        import llama_cpp  # noqa: F401

        from qlesson.engines import gguf_bert  # noqa: F401
    except ImportError as e:
        return f"llama.cpp rows skipped ({e.name or e}): run `make engines` (or `python course.py engines`)"
    return None


def _ort_ops(model: Any, fmt: str, folder: Path, sentences: Sequence[str], threads: int) -> tuple[Op, Op]:
    from qlesson.engines.common import tokenize
    from qlesson.engines.onnx_bert import OUTPUT, export_minilm, session

    plan, level = ORT_FORMATS[fmt]
    path = folder / f"{fmt.split(',')[0]}.onnx"
    if fmt == "quantize_dynamic":
        from qlesson.engines.onnx_ort import ort_quantize_dynamic

        root = logging.getLogger()
        level, _ = root.level, root.setLevel(logging.ERROR)  # ORT's "consider pre-processing" advice is not a result
        try:
            ort_quantize_dynamic(export_minilm(model, folder / "float_for_dynamic.onnx").path, path, per_channel=True)
        finally:
            root.setLevel(level)
    elif not path.exists():
        export_minilm(model, path, plan)
    sess = session(path, threads, level)
    singles = [tokenize(model, [s]) for s in sentences]
    batch = tokenize(model, sentences)
    return (lambda: [sess.run([OUTPUT], f) for f in singles]), (lambda: sess.run([OUTPUT], batch))


def _gguf_ops(model: Any, fmt: str, folder: Path, sentences: Sequence[str], threads: int) -> tuple[Op, Op]:
    from qlesson.engines.gguf_bert import export_gguf, load_llama, plan_for

    path = folder / f"{fmt}.gguf"
    export_gguf(model, path, plan_for(fmt))
    llm = load_llama(path, n_threads=threads)
    return (lambda: [llm.embed([s], normalize=False) for s in sentences]), (lambda: llm.embed(list(sentences)))


def run(
    formats: Sequence[str] = (*ORT_FORMATS, *GGUF_FORMATS),
    sentences: Sequence[str] | None = None,
    threads: int = 1,
    min_total: float = 20.0,
    model: Any = None,
    say: Callable[[str], None] = print,
) -> list[EngineRow]:
    """Time every format at batch 1 and batch N in interleaved rounds; rows in ``formats`` order (baselines first).

    llama.cpp formats are skipped with one line (``say``) when llama-cpp-python is missing.
    """
    from qlesson.engines.common import EVAL_SENTENCES

    formats = check_formats(formats)
    sentences = list(EVAL_SENTENCES if sentences is None else sentences)
    if not sentences:
        raise ValueError("sentences is empty: pass at least one sentence (default: common.EVAL_SENTENCES)")
    if threads < 1:
        raise ValueError(f"threads={threads}: use 1 or more")
    if any(engine_of(f) == LLAMA for f in formats) and (why := llama_missing()):
        say(why)
        formats = [f for f in formats if engine_of(f) == ORT]
    if model is None:
        from qlesson.teach.models import load_minilm

        model = load_minilm()
    names, ops = [], []
    with tempfile.TemporaryDirectory(prefix="qlesson_engines_") as tmp:
        for fmt in formats:
            build = _ort_ops if engine_of(fmt) == ORT else _gguf_ops
            one, many = build(model, fmt, Path(tmp), sentences, threads)
            names += [(fmt, "batch 1"), (fmt, f"batch {len(sentences)}")]
            ops += [one, many]
        times = _interleaved_times(ops, "cpu", min_total)
        del ops  # sessions and llama contexts close before the folder goes
    rows = []
    for (fmt, workload), t in zip(names, times, strict=True):
        med, iqr = median_and_iqr([s * 1e3 for s in t])
        rows.append(EngineRow(engine_of(fmt), fmt, workload, med, iqr))
    for r in rows:
        base = next(
            b for b in rows if b.engine == r.engine and b.format == BASELINE[r.engine] and b.workload == r.workload
        )
        r.x_fp32 = r.median_ms / base.median_ms
    return rows


def verdict(row: Mapping[str, float], base: Mapping[str, float]) -> str:
    """'faster', 'slower' or 'tie' against the fp32 row: a ratio inside ``1 +- margin`` is a tie, the margin being
    ``NOISE_FLOOR`` or either row's IQR over its median, the larger.

    >>> verdict({"median_ms": 5.0, "iqr_ms": 0.2}, {"median_ms": 10.0, "iqr_ms": 0.5})
    'faster'
    >>> verdict({"median_ms": 12.0, "iqr_ms": 3.0}, {"median_ms": 10.0, "iqr_ms": 0.5})
    'tie'
    """
    margin = max(NOISE_FLOOR, row["iqr_ms"] / row["median_ms"], base["iqr_ms"] / base["median_ms"])
    return compare(row["median_ms"], base["median_ms"], margin)


def _versions() -> dict[str, str | None]:
    import onnxruntime
    import torch

    try:
        import llama_cpp

        llama: str | None = llama_cpp.__version__
    except ImportError:
        llama = None
    return {"torch": torch.__version__, ORT: onnxruntime.__version__, "llama_cpp_python": llama}


def reading_of(rows: Sequence[EngineRow], threads: int, sentences: int, load: str, load_end: str) -> dict[str, Any]:
    """A run as the JSON ``--store`` writes: machine, CPU, versions, load before and after, threads, rows."""
    return {
        "machine": machine_name(),
        "cpu": platform.machine(),
        "cores": os.cpu_count(),
        **_versions(),
        "load": load,
        "load_end": load_end,
        "threads": threads,
        "sentences": sentences,
        "rows": [asdict(r) for r in rows],
    }


def stored_reading(path: str | os.PathLike[str] = STORED) -> dict[str, Any]:
    """The reading stored with the course (``python -m qlesson.bench engines --store`` writes it)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: run `python -m qlesson.bench engines --store` to measure this CPU")
    reading = json.loads(p.read_text())
    missing = [k for k in ("machine", "load", "threads", "rows") if k not in reading]
    if missing:
        raise ValueError(f"{p} lacks {missing}: re-store it with `python -m qlesson.bench engines --store`")
    return reading


def table(reading: Mapping[str, Any], workload: str, engine: str | None = None) -> list[dict[str, Any]]:
    """The rows of one workload (``"batch 1"``, ``"batch 24"``), optionally of one engine, for ``print_table``."""
    rows = [r for r in reading["rows"] if r["workload"] == workload and (engine is None or r.get("engine") == engine)]
    if not rows:
        known = sorted({r["workload"] for r in reading["rows"]})
        raise ValueError(f"no rows for workload {workload!r} (engine {engine!r}); the reading has {known}")
    out = []
    for r in rows:
        eng = r.get("engine", ORT)
        base = next((b for b in rows if b.get("engine", ORT) == eng and b["format"] == BASELINE[eng]), None)
        out.append(
            {
                "engine": eng,
                "format": r["format"],
                "median ms": r["median_ms"],
                "spread ms": r["iqr_ms"],
                "time / fp32": r["x_fp32"],
                "vs fp32": "baseline" if base is None or base is r else verdict(r, base),
            }
        )
    return out


def format_reading(reading: Mapping[str, Any]) -> str:
    """The reading as text: the machine, versions, threads and load, then one table per workload (rounded)."""
    from qlesson.teach.report import table as text_table

    versions = f"onnxruntime {reading.get(ORT)}, llama-cpp-python {reading.get('llama_cpp_python') or 'not installed'}"
    lines = [
        f"{reading['machine']}; {versions}; {reading['threads']} thread(s)",
        f"{reading['load']}" + (f" (after: {reading['load_end']})" if reading.get("load_end") else ""),
    ]
    spec = {"median ms": ".1f", "spread ms": ".1f", "time / fp32": ".2f"}
    for workload in dict.fromkeys(r["workload"] for r in reading["rows"]):
        lines += ["", f"{workload}:", text_table(table(reading, workload), spec)]
    return "\n".join(lines)


def main(
    quick: bool = False,
    store: bool = False,
    threads: int = 1,
    formats: Sequence[str] | None = None,
    model: Any = None,
) -> dict[str, Any]:
    """Measure, print, and with ``store`` write ``STORED``; ``quick``: 5 formats, 4 sentences, short rounds."""
    from qlesson.engines.common import EVAL_SENTENCES

    if quick and store:
        raise ValueError("--quick readings are not stored: drop --quick to store a full reading")
    sentences = list(EVAL_SENTENCES[:QUICK_SENTENCES] if quick else EVAL_SENTENCES)
    chosen = formats or (QUICK_FORMATS if quick else (*ORT_FORMATS, *GGUF_FORMATS))
    load = load_line()
    print(f"MiniLM in real engines, {threads} thread(s), {len(sentences)} sentences\nCPU: {machine_name()}\n{load}")
    rows = run(chosen, sentences, threads, min_total=0.0 if quick else 20.0, model=model)
    reading = reading_of(rows, threads, len(sentences), load, load_line())
    print(format_reading(reading))
    if store:
        STORED.write_text(json.dumps(reading, indent=1) + "\n")
        print(f"wrote {STORED}")
    return reading


def cli(argv: Sequence[str] | None = None) -> int:
    """``python -m qlesson.bench.engines [--quick] [--store] [--threads N] [--formats ...]``."""
    p = argparse.ArgumentParser(prog="python -m qlesson.bench.engines", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--store", action="store_true")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--formats", nargs="+", default=None)
    a = p.parse_args(argv)
    main(quick=a.quick, store=a.store, threads=a.threads, formats=a.formats)
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())

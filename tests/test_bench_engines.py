"""``python -m qlesson.bench engines``: the quick path, the stored reading, the noise rule, clear errors."""

from __future__ import annotations

import json

import pytest

from qlesson.bench import engines
from qlesson.engines.common import EVAL_SENTENCES


@pytest.fixture(scope="module")
def model():
    from qlesson.teach.models import load_minilm

    return load_minilm()


def _row_line(text: str, fmt: str) -> str:
    return next(line for line in text.splitlines() if f"| {fmt} " in line)


def test_quick_path_prints_ratios_against_fp32(model, capsys, monkeypatch):
    monkeypatch.setattr(engines, "QUICK_SENTENCES", 2)
    reading = engines.main(quick=True, formats=("int4-g32",), model=model)
    out = capsys.readouterr().out
    rows = {(r["format"], r["workload"]): r for r in reading["rows"]}
    assert set(rows) == {("fp32", "batch 1"), ("fp32", "batch 2"), ("int4-g32", "batch 1"), ("int4-g32", "batch 2")}
    assert rows["fp32", "batch 1"]["x_fp32"] == 1.0
    r, base = rows["int4-g32", "batch 2"], rows["fp32", "batch 2"]
    assert r["x_fp32"] == pytest.approx(r["median_ms"] / base["median_ms"])
    assert all(x["median_ms"] > 0 and x["iqr_ms"] >= 0 for x in reading["rows"])
    fp32 = _row_line(out, "fp32")
    assert "1.00" in fp32 and "baseline" in fp32
    assert _row_line(out, "int4-g32").split("|")[-1].strip() in ("faster", "slower", "tie")
    assert "load average" in out and reading["threads"] == 1


def test_llama_rows_skip_with_one_line_naming_make_engines(model, monkeypatch):
    monkeypatch.setattr(engines, "llama_missing", lambda: "llama.cpp rows skipped: run `make engines`")
    said: list[str] = []
    rows = engines.run(["fp32", "Q8_0"], EVAL_SENTENCES[:1], min_total=0.0, model=model, say=said.append)
    assert said == ["llama.cpp rows skipped: run `make engines`"]
    assert {r.engine for r in rows} == {engines.ORT}


def test_stored_reading_parses_and_formats():
    reading = engines.stored_reading()
    text = engines.format_reading(reading)
    assert reading["machine"] in text and reading["load"] in text
    for workload in {r["workload"] for r in reading["rows"]}:
        rows = engines.table(reading, workload)
        by_engine = {}
        for r in reading["rows"]:
            if r["workload"] == workload:
                by_engine.setdefault(r.get("engine", engines.ORT), {})[r["format"]] = r
        for engine, fmts in by_engine.items():
            base = fmts[engines.BASELINE[engine]]
            assert base["x_fp32"] == 1.0
            for r in fmts.values():
                assert r["x_fp32"] == pytest.approx(r["median_ms"] / base["median_ms"])
        assert {r["format"] for r in rows} == {f for fmts in by_engine.values() for f in fmts}
        assert f"{workload}:" in text


def test_store_round_trip(tmp_path):
    rows = [
        engines.EngineRow(engines.ORT, "fp32", "batch 1", 10.0, 1.0, 1.0),
        engines.EngineRow(engines.ORT, "int4-g32", "batch 1", 5.0, 0.5, 0.5),
    ]
    path = tmp_path / "engines_cpu.json"
    path.write_text(json.dumps(engines.reading_of(rows, 1, 24, "load average 0.5 on 2 cores", "")))
    text = engines.format_reading(engines.stored_reading(path))
    assert "0.50" in _row_line(text, "int4-g32") and "faster" in _row_line(text, "int4-g32")


def test_noise_rule():
    base = {"median_ms": 10.0, "iqr_ms": 0.5}
    assert engines.verdict({"median_ms": 8.0, "iqr_ms": 0.4}, base) == "faster"
    assert engines.verdict({"median_ms": 12.0, "iqr_ms": 0.4}, base) == "slower"
    assert engines.verdict({"median_ms": 10.9, "iqr_ms": 0.4}, base) == "tie"  # inside NOISE_FLOOR (10%)
    assert engines.verdict({"median_ms": 8.0, "iqr_ms": 3.0}, base) == "tie"  # a wide spread widens the margin


def test_clear_errors(tmp_path, model):
    with pytest.raises(ValueError, match="unknown format 'int3-g7'"):
        engines.check_formats(["fp32", "int3-g7"])
    with pytest.raises(ValueError, match="sentences is empty"):
        engines.run(["fp32"], [], model=model)
    with pytest.raises(FileNotFoundError, match="qlesson.bench engines --store"):
        engines.stored_reading(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text(json.dumps({"machine": "x"}))
    with pytest.raises(ValueError, match="lacks"):
        engines.stored_reading(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="no rows for workload 'batch 7'"):
        engines.table(engines.stored_reading(), "batch 7")
    with pytest.raises(ValueError, match="--quick readings are not stored"):
        engines.main(quick=True, store=True)


def test_bench_command_has_an_engines_choice(monkeypatch):
    from qlesson.bench import __main__ as cli

    seen = {}
    monkeypatch.setattr(engines, "main", lambda **kw: seen.update(kw))
    assert cli.main(["engines", "--quick"]) == 0
    assert seen == {"quick": True, "store": False, "threads": 1}

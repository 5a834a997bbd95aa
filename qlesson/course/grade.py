"""Grade your exercises: ``make grade`` or ``python -m qlesson grade [EXERCISE ...]``.

Runs ``pytest --nbval`` on your copies of the exercises in ``workspace/exercises/`` (never
modifying them; ``make lab`` made the copies),
then prints one row per task: ✓ or ✗, and the hint of the first failure, with a total. The
exit code is 0 only when every task passes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import nbformat

from qlesson.course.workspace import WORKSPACE

EXERCISES = WORKSPACE / "exercises"


@dataclass(frozen=True)
class TaskResult:
    exercise: str
    task: str
    passed: bool
    detail: str


def exercise_paths(names: list[str] | None = None, folder: Path = EXERCISES) -> list[Path]:
    """Learner notebooks by name ("02", "02_one_ruler_or_many" or a path); all when ``names`` is empty."""
    every = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb") if "." not in p.stem)  # not NN_x.new.ipynb
    if not names:
        return every
    chosen = []
    for name in names:
        path = Path(name)
        if path.suffix == ".ipynb" and path.exists():
            chosen.append(path.resolve())
            continue
        match = [p for p in every if p.stem == name or p.stem.startswith(f"{name}_") or p.stem[:2] == name]
        if not match:
            known = ", ".join(p.stem for p in every)
            raise SystemExit(f"no exercise called {name!r}; choose from: {known}")
        chosen += match
    return chosen


def _check_cells(path: Path) -> dict[int, str]:
    """nbval's code-cell number -> task id, for the cells tagged as checks."""
    nb = nbformat.read(str(path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return {
        i: c.metadata.get("qlesson", {}).get("task", f"cell {i}")
        for i, c in enumerate(code)
        if "check" in c.metadata.get("tags", [])
    }


_FIRST_LINE = re.compile(r"(CheckFailed|NotAttempted): (.*)")


def _reason(text: str) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    m = _FIRST_LINE.search(text)
    if m:
        return m.group(2).strip()
    errors = re.findall(r"^\s*(\w+(?:Error|Exception)): (.*)$", text, re.M)
    if errors:
        return f"{errors[-1][0]}: {errors[-1][1]}"[:200]
    if "Cell outputs differ" in text or "mismatch" in text:
        return "the check printed something different from the expected ✓ lines"
    return text.strip().splitlines()[-1][:200] if text.strip() else "failed"


def grade(paths: list[Path]) -> list[TaskResult]:
    """Run nbval on ``paths`` (in a temporary folder for pytest's files) and collect one result per task."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "--nbval",
            "-p",
            "no:cacheprovider",
            "-q",
            "--color=no",
            f"--junitxml={report}",
            "-o",
            "junit_family=xunit1",
            "--rootdir",
            tmp,
            *[str(p) for p in paths],
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1"}
        subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
        cases = ET.parse(report).getroot().iter("testcase") if report.exists() else []
        outcome: dict[tuple[str, int], str | None] = {}
        for case in cases:
            m = re.search(r"Cell (\d+)", case.get("name", ""))
            file = Path(case.get("file") or case.get("classname", "")).stem.split(".")[-1]
            if not m:
                continue
            failure = case.find("failure")
            error = case.find("error")
            bad = failure if failure is not None else error
            key = (file, int(m.group(1)))
            outcome[key] = None if bad is None else _reason((bad.get("message") or "") + "\n" + (bad.text or ""))
    for path in paths:
        for cell, task in _check_cells(path).items():
            key = (path.stem, cell)
            if key not in outcome:
                results.append(
                    TaskResult(path.stem, task, False, "did not run (an earlier error stopped the notebook)")
                )
            else:
                reason = outcome[key]
                results.append(TaskResult(path.stem, task, reason is None, reason or ""))
    return results


def print_report(results: list[TaskResult]) -> None:
    from qlesson.teach.report import print_table

    rows = [
        {
            "exercise": r.exercise,
            "task": r.task,
            "result": "✓" if r.passed else "✗",
            "first failure / hint": r.detail[:110],
        }
        for r in results
    ]
    print_table(rows)
    passed = sum(r.passed for r in results)
    print(f"\ntotal: {passed} / {len(results)} tasks pass")


def main(argv: list[str] | None = None) -> int:
    paths = exercise_paths(argv if argv is not None else sys.argv[1:])
    if not paths:
        print("no exercises to grade in workspace/exercises: run `make lab` (or `python -m qlesson lab`) first")
        return 1
    print("grading the saved files: save your notebooks in JupyterLab first (Ctrl+S)")
    results = grade(paths)
    print_report(results)
    return 0 if results and all(r.passed for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())

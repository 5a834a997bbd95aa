"""Grade your exercises: ``make grade`` or ``python -m qlesson grade [EXERCISE ...] [--detail]``.

How a notebook is graded (your saved ``workspace/exercises/NN_*.ipynb``; it is never modified):

1. The task list comes from the course's own copy of the exercise (``exercises/NN_*.ipynb``),
   never from your file: deleting a check cell cannot make a task disappear.
2. Your code cells run in a fresh Python process (the check cells are left out). Prints,
   plots and warnings in your code do not matter.
3. This process calls your functions on the course's cases and compares the results with its
   own reference, so nothing your code does to ``qlesson`` can change a verdict.
4. Each check cell must still be in your notebook as the course wrote it: one that was
   deleted or edited (say, with ``# NBVAL_SKIP`` added) is reported and never counted as a pass.

The exit code is 0 only when every task passes.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from qlesson.course.workspace import ROOT, WORKSPACE

EXERCISES = WORKSPACE / "exercises"
COURSE_EXERCISES = ROOT / "exercises"
WIDTH = 100
_CHECK = re.compile(r'^check\("(?P<task>[\w.]+)", (?P<name>\w+)\)$')
_RECALL = re.compile(r'^recall\.answer\("(?P<lesson>\d\d)", (?P<number>\d+), (?P<name>\w+)\)$')


@dataclass(frozen=True)
class CourseTask:
    """One graded item of an exercise, as the course defines it."""

    key: str  # "02.per_channel_scale" or "recall 02.4"
    name: str  # the learner's variable or function
    check_source: str  # the check cell, exactly as the course wrote it


@dataclass(frozen=True)
class TaskResult:
    exercise: str
    task: str
    status: str  # pass, fail, not attempted, error, check cell missing or edited
    detail: str
    full: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def course_tasks(exercise: str, course: Path = COURSE_EXERCISES) -> list[CourseTask]:
    """The graded items of exercise ``exercise`` (its file stem), read from the course's copy."""
    path = course / f"{exercise}.ipynb"
    if not path.exists():
        raise ValueError(f"{exercise!r} is not a course exercise; see {course}")
    found = []
    for cell in nbformat.read(str(path), as_version=4).cells:
        src = cell.source.strip()
        if cell.cell_type != "code":
            continue
        if m := _CHECK.match(src):
            found.append(CourseTask(m["task"], m["name"], src))
        elif m := _RECALL.match(src):
            found.append(CourseTask(f"recall {m['lesson']}.{m['number']}", m["name"], src))
    return found


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
            known = ", ".join(p.stem for p in every) or "none (run `make lab` first)"
            raise SystemExit(f"no exercise called {name!r}; choose from: {known}")
        chosen += match
    return chosen


def _verdict(task: CourseTask, answer: Any) -> tuple[str, str, str]:
    """(status, one sentence, full detail) for one learner answer."""
    from qlesson.course.checking import evaluate
    from qlesson.course.recall import feedback, questions
    from qlesson.course.sandbox import Missing
    from qlesson.course.tasks import tasks

    if isinstance(answer, Missing):
        why = f"`{task.name}` is not defined after running your notebook"
        if answer.errors:
            why += f" (your {answer.errors[0]})"
        return "error", why, why
    if task.key.startswith("recall "):
        lesson, number = task.key.split()[1].split(".")
        if answer is None or answer is Ellipsis:
            return "not attempted", "not attempted yet", ""
        ok, why = feedback(questions(lesson)[int(number) - 1], answer)
        return ("pass" if ok else "fail"), why, why
    v = evaluate(tasks()[task.key], answer)
    return v.status, v.summary, v.detail


def grade_notebook(path: Path, course: Path = COURSE_EXERCISES) -> list[TaskResult]:
    """Grade one saved exercise notebook against the course's task list for it."""
    from qlesson.course.sandbox import LearnerError, Sandbox

    exercise = path.stem
    wanted = course_tasks(exercise, course)
    try:
        nb = nbformat.read(str(path), as_version=4)
    except (OSError, ValueError, json.JSONDecodeError) as err:
        return [TaskResult(exercise, t.key, "error", f"cannot read the notebook: {err}") for t in wanted]
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    checks = {t.check_source for t in wanted}
    present = {src.strip() for src in code}
    learner_code = [src for src in code if src.strip() not in checks]
    results = []
    try:
        with Sandbox(learner_code) as box:
            for t in wanted:
                status, why, full = _verdict(t, box.answer(t.name))
                if t.check_source not in present:
                    status = "check cell missing or edited" if status == "pass" else status
                    why = f"restore the check cell `{t.check_source}` as the course wrote it. " + why
                results.append(TaskResult(exercise, t.key, status, why, full))
    except LearnerError as err:
        return [TaskResult(exercise, t.key, "error", str(err)) for t in wanted]
    return results


def grade(paths: list[Path]) -> list[TaskResult]:
    """Grade every notebook in ``paths``."""
    return [r for p in paths for r in grade_notebook(p)]


_MARK = {"pass": "pass", "fail": "FAIL", "not attempted": "todo", "error": "ERROR"}


def report_lines(results: list[TaskResult], detail: bool = False, width: int = WIDTH) -> list[str]:
    """The score table: one row per task, no wider than ``width`` characters, no colour codes."""
    lines = []
    for exercise in dict.fromkeys(r.exercise for r in results):
        lines.append(f"{exercise}")
        for r in (r for r in results if r.exercise == exercise):
            head = f"  {_MARK.get(r.status, 'EDITED'):<6} {r.task:<28} "
            note = r.detail.replace("\n", " ")
            room = max(10, width - len(head))
            lines.append(head + (note if len(note) <= room else note[: room - 3] + "..."))
            if detail and r.full and not r.passed:
                lines += [f"         {line}" for line in r.full.splitlines()]
    passed = sum(r.passed for r in results)
    lines.append("")
    lines.append("pass: correct | FAIL: wrong | todo: not attempted | ERROR: raised | EDITED: check cell edited")
    lines.append(f"total: {passed} / {len(results)} tasks pass")
    if passed < len(results) and not detail:
        lines.append("for the full message of each failure: python -m qlesson grade --detail")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    detail = "--detail" in args
    names = [a for a in args if a != "--detail"]
    paths = exercise_paths(names)
    if not paths:
        print("no exercises to grade in workspace/exercises: run `make lab` (or `python -m qlesson lab`) first")
        return 1
    print("grading your saved notebooks (save in JupyterLab first: Ctrl+S)\n")
    results = grade(paths)
    for line in report_lines(results, detail):
        print(line)
    return 0 if results and all(r.passed for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())

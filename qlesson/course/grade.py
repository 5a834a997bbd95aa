"""Grade your exercises: ``make grade [NN ...] [detail]`` or ``python -m qlesson grade [NN ...] [--detail]``.

How a notebook is graded (your saved ``workspace/exercises/NN_*.ipynb``; it is never modified):

1. The task list comes from the course's own copy of the exercise (``exercises/NN_*.ipynb``),
   never from your file: deleting a check cell cannot make a task disappear.
2. Every input the grader will give your functions, and every module it uses, is made and
   imported before any of your code runs (lesson 03's model is loaded here, outside your time).
3. Your code cells run in a fresh ``python -I`` process, in a throw-away copy of your notebook's
   folder, with a scrubbed environment (see :mod:`qlesson.course.sandbox`); the check cells are
   left out, and prints, plots and warnings in your code do not matter. Your cells have 120 s
   in all; each task then has 30 s. A notebook whose code cells are all as shipped is not run:
   its tasks are still to do.
4. This process calls your functions on the course's cases and compares the results with its
   own reference; your results come back as plain data (never unpickled).
5. Each check cell must still be in your notebook as the course wrote it: one that was
   deleted or edited (say, with ``# NBVAL_SKIP``) is reported and never counted as a pass.

Before grading, the course's own files are compared with the course's commit (or the hashes
written at set-up; :mod:`qlesson.course.integrity`): a changed file, a ``.pth`` hook in the venv
or a ``.pyc`` that does not match its source is reported above and below the scores. On your
own machine ``make grade`` is a learning aid: code you run as yourself can change anything you
can, so a learner can always fool themselves. For grades that count, an instructor grades
copies in a clean room: ``python -m qlesson grade --submissions DIR`` (:mod:`qlesson.course.cleanroom`).

Exit code: 0 when no task fails (finished or not: tasks still to do are not failures),
1 when a task fails, raises or has an edited check cell, 2 when nothing could be graded
(no notebooks, an unknown option, or ``make grade`` run from inside a notebook being graded).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import importlib
import json
import os
import pkgutil
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

import qlesson
from qlesson import lessons, quant
from qlesson.course import integrity
from qlesson.course.checking import Case, Task, evaluate
from qlesson.course.recall import bank, feedback, questions
from qlesson.course.sandbox import GRADING_VAR, START_TIMEOUT_S, LearnerError, Missing, Sandbox
from qlesson.course.tasks import tasks
from qlesson.course.workspace import MANIFEST, ROOT, WORKSPACE, check_folders, inputs_digest, new_version_path

EXERCISES = WORKSPACE / "exercises"
COURSE_EXERCISES = ROOT / "exercises"
WIDTH = 100
_CHECK = re.compile(r'^check\("(?P<task>[\w.]+)", (?P<name>\w+)\)$')
TASK_TIMEOUT_S = 30.0
_RECALL = re.compile(r'^recall\.answer\("(?P<lesson>\d\d)", (?P<number>\d+), (?P<name>\w+)\)$')
Wrap = Callable[[Path], list[str]]


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

    @property
    def failing(self) -> bool:
        """Wrong, raised, or its check cell edited (a task still to do is not failing)."""
        return self.status not in ("pass", "not attempted", "not submitted")


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


def code_sources(path: Path) -> list[str]:
    """The code cells' sources of a saved notebook, read leniently (a cell without metadata is fine)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError("it is not a Jupyter notebook (no list of cells)")
    sources = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source", "")
            sources.append("".join(map(str, src)) if isinstance(src, list) else str(src))
    return sources


def as_shipped(code: list[str], shipped: Path) -> bool:
    """Whether ``code`` (a saved notebook's code cells) is the shipped exercise's, blank cells aside:
    then there is nothing to run, and every task is still to do.

    >>> as_shipped(["x = ...  # STUB", ""], Path("no such notebook.ipynb"))
    False
    """
    try:
        ours = code_sources(shipped)
    except (OSError, ValueError):
        return False
    return [c.strip() for c in code if c.strip()] == [c.strip() for c in ours if c.strip()]


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


def preload() -> None:
    """Import every module a verdict can use, so a learner's code rewriting one changes nothing here."""
    for package in (lessons, quant):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(info.name)
    importlib.import_module("qlesson.teach.models")  # lesson 03's cases load a model with it
    tasks()
    bank()


_BUILT: dict[str, Task] = {}


def _fresh(args: tuple) -> Callable[[], tuple]:
    def resolve() -> tuple:  # a copy per verdict: a reference that changes its inputs changes no other verdict
        try:
            return copy.deepcopy(args)
        except Exception:
            return args

    return resolve


def built_tasks(keys: list[str]) -> dict[str, Task]:
    """The tasks ``keys`` with every case's inputs made now (once per process), before any learner code runs.

    A case that loads a model or imports a library does it here: never after a learner's code
    has had a chance to write a module where an import would find it, and never on the learner's clock.
    """
    preload()
    for key in keys:
        if key in tasks() and key not in _BUILT:
            task = tasks()[key]
            cases = [Case(_fresh(c.resolve()), c.label, c.hidden) for c in task.cases]
            _BUILT[key] = dataclasses.replace(task, cases=cases)
    return _BUILT


def fingerprint(course: Path = COURSE_EXERCISES, pattern: str = "*.ipynb") -> dict[str, str]:
    """A hash of each ``qlesson`` module loaded now and of the course's exercises (``pattern``), by path.

    What the grader has loaded is what a verdict uses; a file that changes during a run is
    reported (the next run, :mod:`qlesson.course.integrity` reports it against the course's commit).
    """
    top = Path(qlesson.__file__).resolve().parent
    files = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and Path(file).suffix == ".py" and Path(file).resolve().is_relative_to(top):
            files[f"qlesson/{Path(file).resolve().relative_to(top).as_posix()}"] = Path(file)
    files |= {f"exercises/{p.name}": p for p in sorted(course.glob(pattern))}
    return {name: _sha256(p) for name, p in files.items()}


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


def _changed(before: dict[str, str], course: Path = COURSE_EXERCISES) -> list[str]:
    """The files of ``before`` (a :func:`fingerprint`) whose contents differ now."""
    top = Path(qlesson.__file__).resolve().parent
    where = {"qlesson": top, "exercises": course}
    now = {name: _sha256(where[name.split("/")[0]] / name.split("/", 1)[1]) for name in before}
    return sorted(name for name in before if now[name] != before[name])


def _trusted_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(qlesson.__file__).resolve().parent)}
    return tuple(os.path.realpath(r) + os.sep for r in roots)


def imported_from_elsewhere(before: set[str]) -> list[str]:
    """Modules imported since ``before`` (a copy of ``sys.modules``' names) from outside Python, the venv and qlesson.

    A learner's code can write a file anywhere it may; a module the grader imported from such a
    place after that code ran could have changed a verdict.
    """
    roots = _trusted_roots()
    odd = []
    for name in set(sys.modules) - before:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file and not (os.path.realpath(file) + "").startswith(roots):
            odd.append(f"{name} ({file})")
    return sorted(odd)


def _verdict(task: CourseTask, answer: Any, built: dict[str, Task]) -> tuple[str, str, str]:
    """(status, one sentence, full detail) for one learner answer."""
    if isinstance(answer, Missing):
        why = f"`{task.name}` is not defined after running your notebook"
        if answer.errors:
            why += f" ({answer.errors[0]})"  # "your code cell 3 (it starts ...): NameError: ..."
        return "error", why, why
    if task.key.startswith("recall "):
        lesson, number = task.key.split()[1].split(".")
        if answer is None or answer is Ellipsis or (isinstance(answer, str) and not answer.strip()):
            return "not attempted", "not attempted yet", ""  # as the check cell says: blank is not an answer
        ok, why = feedback(questions(lesson)[int(number) - 1], answer)
        return ("pass" if ok else "fail"), why, why
    v = evaluate(built[task.key], answer)
    return v.status, v.summary, v.detail


def _grade_one(box: Sandbox, task: CourseTask, built: dict[str, Task]) -> tuple[str, str, str]:
    """One task's verdict; a function that overran its time or crashed the process is named."""
    box.limit(TASK_TIMEOUT_S)
    try:
        status, why, full = _verdict(task, box.answer(task.name), built)
    except LearnerError as err:
        status, why, full = "error", str(err), str(err)
    if box.broken:
        why = f"{task.key}: {box.broken}; the tasks after it ran in a fresh process"
        status, full = "error", why
    return status, why, full


def grade_notebook(path: Path, course: Path = COURSE_EXERCISES, wrap: Wrap | None = None) -> list[TaskResult]:
    """Grade one saved exercise notebook against the course's task list for it.

    ``wrap``: an OS sandbox's command prefix for the learner's process (the clean room's).
    """
    exercise = path.stem
    try:
        wanted = course_tasks(exercise, course)
    except ValueError:
        original = re.sub(r"[-\s(]*(copy\d*|Copy\d*|\(\d+\))\)?$", "", exercise)
        why = f"{path.name} is not a course exercise (a copy of {original}.ipynb?): rename or delete it"
        return [TaskResult(exercise, "(whole notebook)", "error", why)]
    try:
        code = code_sources(path)
    except (OSError, ValueError) as err:
        why = f"cannot read {path.name}: {str(err).splitlines()[0][:80] if str(err) else type(err).__name__}"
        return [TaskResult(exercise, t.key, "error", why) for t in wanted]
    if as_shipped(code, course / path.name):
        why = "not started: every code cell is as the course shipped it"
        return [TaskResult(exercise, t.key, "not attempted", why) for t in wanted]
    checks = {t.check_source for t in wanted}
    present = {src.strip() for src in code}
    learner_code = [src for src in code if src.strip() not in checks]
    built = built_tasks([t.key for t in wanted])  # every input made before the learner's code runs
    before, modules = fingerprint(course, path.name), set(sys.modules)  # qlesson and this exercise's copy
    results: list[TaskResult] = []
    box: Sandbox | None = None
    try:
        for t in wanted:
            if box is None or box.broken:
                if box is not None:
                    box.close()
                box = Sandbox(learner_code, folder=path.parent, wrap=wrap).__enter__()
            status, why, full = _grade_one(box, t, built)
            if t.check_source not in present:
                status = "check cell missing or edited" if status == "pass" else status
                why = f"restore the check cell `{t.check_source}` as the course wrote it. " + why
            results.append(TaskResult(exercise, t.key, status, why, full))
    except LearnerError as err:  # the notebook itself could not run: every task not yet graded
        done = {r.task for r in results}
        results += [TaskResult(exercise, t.key, "error", str(err)) for t in wanted if t.key not in done]
    finally:
        if box is not None:
            box.close()
    if changed := _changed(before, course):
        why = f"your code changed the course's file {changed[0]}: restore it (git checkout); not graded"
        return [TaskResult(exercise, t.key, "error", why) for t in wanted]
    if odd := imported_from_elsewhere(modules):
        why = f"the grader imported {odd[0]} after your code ran; not graded"
        return [TaskResult(exercise, t.key, "error", why) for t in wanted]
    return results


def grade(paths: list[Path], progress: Callable[[str], None] | None = None) -> list[TaskResult]:
    """Grade every notebook in ``paths``; one that cannot be graded at all is one row saying why."""
    results = []
    for p in paths:
        started = time.monotonic()
        if progress:
            try:
                untouched = as_shipped(code_sources(p), COURSE_EXERCISES / p.name)
            except (OSError, ValueError):
                untouched = False
            run = f"running your cells (at most {START_TIMEOUT_S:.0f} s), then the checks ..."
            progress(f"  {p.stem}: {'unchanged, not run ...' if untouched else run}")
        try:
            results += grade_notebook(p)
        except Exception as err:  # a grader bug must not hide the other notebooks' scores
            why = f"could not grade {p.name} ({type(err).__name__}: {err}); please report this"
            results.append(TaskResult(p.stem, "(whole notebook)", "error", why.splitlines()[0]))
        if progress:
            progress(f" {time.monotonic() - started:.0f} s\n")
    return results


def newer_versions(paths: list[Path], workspace: Path = WORKSPACE, course: Path = ROOT) -> dict[str, str]:
    """By exercise: where the course's newer version of the learner's copy is, when there is one."""
    notes = {}
    try:
        manifest = json.loads((workspace / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}
    for p in paths:
        beside = new_version_path(p)
        rel, src = f"exercises/{p.name}", course / "exercises" / p.name
        if beside.is_file():
            notes[p.stem] = f"newer version in {beside.name}: move your edits over"
        elif p.parent.resolve() == (workspace / "exercises").resolve() and isinstance(manifest, dict) and src.is_file():
            try:
                stale = rel in manifest and manifest[rel] != inputs_digest(src)
            except ValueError:
                stale = False
            if stale:
                notes[p.stem] = "the course has a newer version: python -m qlesson update"
    return notes


_MARK = {"pass": "pass", "fail": "FAIL", "not attempted": "todo", "error": "ERROR", "not submitted": "none"}
_MARK["not graded"] = "ERROR"


def report_lines(results: list[TaskResult], detail: bool = False, width: int = WIDTH) -> list[str]:
    """The full table: one row per task, no wider than ``width`` characters, no colour codes."""
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


def summary_lines(results: list[TaskResult], notes: dict[str, str] | None = None, width: int = WIDTH) -> list[str]:
    """The compact table: done / to do / failing per exercise, then one line per failing task.

    >>> rows = [TaskResult("01_the_ruler", "01.a", "pass", ""), TaskResult("01_the_ruler", "01.b", "fail", "wrong")]
    >>> print("\\n".join(summary_lines(rows)[:3]))
    exercise                              done  to do  failing
    01_the_ruler                             1      0        1
      FAIL   01.b                         wrong
    """
    notes = notes or {}
    lines = [f"{'exercise':<36} {'done':>5} {'to do':>6} {'failing':>8}"]
    for exercise in dict.fromkeys(r.exercise for r in results):
        rows = [r for r in results if r.exercise == exercise]
        done, todo = sum(r.passed for r in rows), sum(r.status == "not attempted" for r in rows)
        row = f"{exercise[:36]:<36} {done:>5} {todo:>6} {sum(r.failing for r in rows):>8}"
        lines += [row] + ([f"    {notes[exercise]}"] if exercise in notes else [])
        for r in (r for r in rows if r.failing):
            head = f"  {_MARK.get(r.status, 'EDITED'):<6} {r.task:<28} "
            note = r.detail.replace("\n", " ")
            room = max(10, width - len(head))
            lines.append(head + (note if len(note) <= room else note[: room - 3] + "..."))
    passed = sum(r.passed for r in results)
    lines += ["", f"total: {passed} / {len(results)} tasks pass, {sum(r.failing for r in results)} failing"]
    if any(r.failing for r in results):
        lines.append("full messages: make grade detail (python -m qlesson grade --detail); one exercise: make grade 02")
    return [line if len(line) <= width else line[: width - 3] + "..." for line in lines]


USAGE = "usage: python -m qlesson grade [NN ...] [--detail] | --submissions DIR [--out FILE.csv] [--detail]"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check_folders(EXERCISES.parent)  # a workspace/ or exercises/ that is a file: one line naming it
    if os.environ.get(GRADING_VAR):
        print("not grading: this runs inside a notebook that is being graded (`make grade` in a cell);")
        print("grading from there would grade the notebook again, without end. Run make grade in a terminal.")
        return 2
    if "--submissions" in args:
        from qlesson.course.cleanroom import main as cleanroom_main

        return cleanroom_main(args)
    detail = "--detail" in args
    names = [a for a in args if a != "--detail"]
    if unknown := [a for a in names if a.startswith("-")]:
        print(f"unknown option {unknown[0]}\n{USAGE}")
        return 2
    paths = exercise_paths(names)
    if not paths:
        print("no exercises to grade in workspace/exercises: run `make lab` (or `python -m qlesson lab`) first")
        return 2
    warnings = integrity.findings()
    for line in integrity.warning_lines(warnings):
        print(line)
    print("grading your saved notebooks (save in JupyterLab first: Ctrl+S)")
    results = grade(paths, progress=lambda text: print(text, end="", flush=True))
    print()
    if detail:
        lines = report_lines(results, detail=True)
        notes = newer_versions(paths)
        lines += [f"{name}: {note}" for name, note in notes.items()]
    else:
        lines = summary_lines(results, newer_versions(paths))
    for line in lines:
        print(line)
    if warnings:
        print(
            f"WARNING: {len(warnings)} of the course's own files changed (listed above): these scores cannot be trusted"
        )
    return 1 if any(r.failing for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())

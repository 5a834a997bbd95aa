"""The instructor's clean room: ``python -m qlesson grade --submissions DIR [--out FILE.csv] [--detail]``.

``DIR`` holds one folder or ``.zip`` per learner (the name is the learner's), each with their
``NN_*.ipynb`` exercise notebooks anywhere inside. Every submission is graded from a copy, against
the course as it was when grading began:

* every task's inputs are made, and every module a verdict uses is imported, before any
  learner's code runs; the task lists come from the course's own exercise copies, read first;
* each notebook's code runs as in ``make grade`` (:mod:`qlesson.course.sandbox`): ``python -I``,
  a scrubbed environment, a throw-away working folder holding a copy of the notebook's own
  folder (a helper ``.py`` beside the notebook imports as in JupyterLab), its own process group,
  killed whole at the end;
* on Linux with bubblewrap (``apt-get install bubblewrap``), inside an OS sandbox: the whole
  file system read-only but for that working folder, a private ``/tmp``, no network, its own
  process tree (a background process dies with it, ``--die-with-parent``), and out of sight what
  would hand out the answers (:func:`hidden`: the solutions, each lesson's task module, the
  course's git history, the other submissions; a submission's links are dropped). Without one, a
  warning says so, and the course and venv are checked after each learner: a learner whose
  code changed them is reported, not graded, and grading stops (restore the course, grade again).

Output: a CSV with one row per learner and task (``learner, exercise, task, status, points,
detail``; an exercise not submitted is ``not submitted``) and a table of points per learner
and exercise. Exit code: 0 when every submission was graded, 1 when grading stopped because
the course or venv was changed, 2 for a usage error.

``make grade`` on a learner's machine is a learning aid; this is where grades that count are made,
as nbgrader and otter-grader do: the instructor's copy of the course, the learner's files only as data.
"""

from __future__ import annotations

import csv
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from qlesson.course import grade, integrity
from qlesson.course.grade import TaskResult, Wrap
from qlesson.course.workspace import ROOT

PACKAGE = Path(__file__).resolve().parents[1]

MAX_ZIP_BYTES = 500 * 2**20
BWRAP = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
BWRAP_FLAGS = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]


@dataclass(frozen=True)
class Row:
    """One learner's result for one task."""

    learner: str
    result: TaskResult

    @property
    def points(self) -> int:
        return int(self.result.passed)


def bwrap_prefix(workdir: Path, hide: tuple[Path, ...] = ()) -> list[str]:
    """bubblewrap's command prefix: everything read-only but ``workdir``, no network, its own processes.

    What would hand a learner the answers is not there at all (:func:`hidden`, and ``hide``).

    >>> bwrap_prefix(Path("/tmp/w"))[-7:]
    ['--chdir', '/tmp/w', '--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL']
    """
    masks = [arg for path in (*hidden(), *hide) for arg in _mask(path)]
    work = ["--bind", str(workdir), str(workdir), "--chdir", str(workdir)]
    return ["bwrap", *BWRAP, *_kept(), *masks, *work, *BWRAP_FLAGS]


def hidden(package: Path = PACKAGE, course: Path = ROOT) -> list[Path]:
    """What the learner's code must not read: the course's solutions and git history, the instructor's
    workspace, and each lesson's task module (references, hidden cases, the recall questions' right letters).

    ``qlesson/lessons/__init__.py`` stays, empty of lessons: ``from qlesson.course.tasks import check`` still imports.
    """
    found = [course / "exercises" / "solutions", course / ".git", course / "workspace"]
    if (package / "lessons").is_dir():
        found += [p for p in (package / "lessons").iterdir() if p.name != "__init__.py"]
    return [p for p in found if p.exists()]


def _mask(path: Path) -> list[str]:
    """bubblewrap arguments that put an empty folder (or file) over ``path``."""
    return ["--tmpfs", str(path)] if path.is_dir() and not path.is_symlink() else ["--ro-bind", "/dev/null", str(path)]


def _kept() -> list[str]:
    """Read-only binds for the course and the Pythons that live under /tmp (which the sandbox replaces)."""
    keep: list[str] = []
    for path in sorted({str(ROOT), sys.prefix, sys.base_prefix}):  # a parent sorts before what it holds
        inside = any(path == k or path.startswith(k + "/") for k in keep[1::3])
        if (path == "/tmp" or path.startswith("/tmp/")) and not inside:
            keep += ["--ro-bind", path, path]
    return keep


@functools.cache
def os_sandbox() -> tuple[Wrap | None, str]:
    """(the OS sandbox's wrapper or None, one line saying which)."""
    if not sys.platform.startswith("linux"):
        return None, f"no OS sandbox on {sys.platform} (bubblewrap is Linux only)"
    exe = shutil.which("bwrap")
    if exe is None:
        return None, "no OS sandbox: bubblewrap is not installed (apt-get install bubblewrap)"
    probe = [exe, *BWRAP, *BWRAP_FLAGS, "true"]
    try:
        ok = subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    if not ok:
        return None, "no OS sandbox: bubblewrap cannot run here (are user namespaces allowed?)"
    return bwrap_prefix, f"OS sandbox: bubblewrap ({exe}): course and venv read-only, no network"


def unpack(entry: Path, into: Path) -> Path:
    """A copy of one submission (a folder, or a zip unpacked safely) under ``into``."""
    dest = into / entry.stem
    if entry.is_dir():
        shutil.copytree(entry, dest, symlinks=True, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        for here, dirs, files in os.walk(dest):  # a link in a submission is never followed: it could
            for name in dirs + files:  # name the instructor's solutions or another learner's files
                if (link := Path(here) / name).is_symlink():
                    link.unlink()  # the link only (os.walk does not enter a linked folder)
        return dest
    with zipfile.ZipFile(entry) as zf:
        members = [m for m in zf.infolist() if not stat.S_ISLNK(m.external_attr >> 16)]
        if sum(m.file_size for m in members) > MAX_ZIP_BYTES:
            raise ValueError(f"{entry.name} unpacks to more than {MAX_ZIP_BYTES >> 20} MB")
        for member in members:
            zf.extract(member, dest)  # zipfile drops absolute paths and '..'
    return dest


def notebooks(folder: Path, exercises: list[str]) -> dict[str, Path]:
    """The learner's notebook for each course exercise (the first found, by path), by exercise."""
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob("[0-9][0-9]_*.ipynb")):
        if path.stem in exercises and ".ipynb_checkpoints" not in path.parts and path.is_file():
            found.setdefault(path.stem, path)
    return found


def readable(name: str) -> str:
    """A file name as text that can be printed and written to the CSV (bytes that are not UTF-8 become U+FFFD).

    >>> readable("ana"), readable(b"bo\\xff".decode("utf-8", "surrogateescape")) == "bo\\ufffd"
    ('ana', True)
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def submissions(folder: Path) -> list[Path]:
    """The learners' folders and zips in ``folder``, by name."""
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder: give a folder holding one folder or .zip per learner")
    return sorted(p for p in folder.iterdir() if p.is_dir() or (p.is_file() and p.suffix.lower() == ".zip"))


def _tampered(before: dict[str, str], hooks: set[str], course: Path) -> list[str]:
    return [f"{rel} changed" for rel in grade._changed(before, course)] + sorted(set(integrity.startup_hooks()) - hooks)


def grade_submissions(folder: Path, course_root: Path = ROOT, wrap: Wrap | None = None, say=print) -> list[Row]:
    """Grade every submission in ``folder`` against the course at ``course_root``; rows for every task."""
    course = course_root / "exercises"
    exercises = sorted(p.stem for p in course.glob("[0-9][0-9]_*.ipynb"))
    wanted = {name: grade.course_tasks(name, course) for name in exercises}  # read before any learner code runs
    grade.built_tasks([t.key for ts in wanted.values() for t in ts])
    before, hooks = grade.fingerprint(course), set(integrity.startup_hooks())
    if wrap is bwrap_prefix:  # hide the other learners' submissions too (unless the course is inside them)
        subs = folder.resolve()
        inside = any(Path(p).resolve().is_relative_to(subs) for p in (ROOT, sys.prefix, sys.base_prefix))
        wrap = functools.partial(bwrap_prefix, hide=(*(() if inside else (subs,)), *hidden(course=course_root)))
    rows: list[Row] = []
    stopped: str | None = None
    with tempfile.TemporaryDirectory(prefix="qlesson-submissions-") as tmp:
        for entry in submissions(folder):
            learner = readable(entry.stem)
            if stopped:
                rows += [
                    Row(learner, TaskResult(e, t.key, "not graded", stopped)) for e in exercises for t in wanted[e]
                ]
                continue
            say(f"  {learner}: ", end="", flush=True)
            try:
                found = notebooks(unpack(entry, Path(tmp)), exercises)
            except (OSError, ValueError, zipfile.BadZipFile) as err:
                found, why = {}, f"cannot unpack {entry.name}: {err}"
            else:
                why = "not submitted"
            mine: list[TaskResult] = []
            for name in exercises:
                if name not in found:
                    mine += [TaskResult(name, t.key, "not submitted", why) for t in wanted[name]]
                    continue
                mine += grade.grade_notebook(found[name], course, wrap)
                say(name[:2], end=" ", flush=True)
            if tampered := _tampered(before, hooks, course):
                why = f"this submission's code changed the course: {tampered[0]}; not graded"
                mine = [TaskResult(r.exercise, r.task, "error", why) for r in mine]
                stopped = f"not graded: {learner}'s code changed the course ({tampered[0]}); restore it, grade again"
            say(f"{sum(r.passed for r in mine)} / {len(mine)}")
            rows += [Row(learner, r) for r in mine]
    return rows


def write_csv(rows: list[Row], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["learner", "exercise", "task", "status", "points", "detail"])
        for row in rows:
            r = row.result
            out.writerow([row.learner, r.exercise, r.task, r.status, row.points, r.detail.replace("\n", " ")])


def table_lines(rows: list[Row]) -> list[str]:
    """Points per learner and exercise (passed / tasks), then each learner's total.

    >>> rows = [Row("ana", TaskResult("01_the_ruler", "01.a", "pass", ""))]
    >>> rows.append(Row("ana", TaskResult("02_x", "02.b", "fail", "")))
    >>> print("\\n".join(table_lines(rows)))
    learner                01    02   total
    ana                   1/1   0/1     1/2
    """
    exercises = list(dict.fromkeys(r.result.exercise for r in rows))
    lines = [f"{'learner':<20}" + "".join(f"{e[:2]:>6}" for e in exercises) + f"{'total':>8}"]
    for learner in dict.fromkeys(r.learner for r in rows):
        mine = [r for r in rows if r.learner == learner]
        cells = []
        for e in exercises:
            these = [r for r in mine if r.result.exercise == e]
            cells.append(f"{sum(r.points for r in these)}/{len(these)}")
        total = f"{sum(r.points for r in mine)}/{len(mine)}"
        lines.append(f"{learner[:20]:<20}" + "".join(f"{c:>6}" for c in cells) + f"{total:>8}")
    return lines


def main(args: list[str]) -> int:
    """``grade --submissions DIR [--out FILE.csv] [--detail] [--require-sandbox]``."""
    try:
        folder = Path(args[args.index("--submissions") + 1])
        out = Path(args[args.index("--out") + 1]) if "--out" in args else Path.cwd() / "qlesson-scores.csv"
    except IndexError:
        print(grade.USAGE)
        return 2
    wrap, which = os_sandbox()
    if wrap is None:
        print(f"WARNING: {which}.")
        print("  Each learner's code still runs with python -I, in a throw-away folder, in its own process group,")
        print("  but it can write whatever your user can: the course and venv are checked after each learner.")
        print("  It can also read what your user can: the solutions, each lesson's references, the other submissions.")
        if "--require-sandbox" in args:
            return 2
    else:
        print(which)
    found = integrity.findings()
    for line in integrity.warning_lines(found):
        print(line)
    try:
        print(f"grading the submissions in {folder} (inputs first, then one learner at a time):")
        rows = grade_submissions(folder, wrap=wrap)
    except ValueError as err:
        print(err)
        return 2
    write_csv(rows, out)
    for line in table_lines(rows):
        print(line)
    if "--detail" in args:
        for learner in dict.fromkeys(r.learner for r in rows):
            print(f"\n== {learner}")
            for line in grade.report_lines([r.result for r in rows if r.learner == learner], detail=True)[:-3]:
                print(line)
    print(f"\nscores per learner and task: {out}")
    return (
        1
        if any(r.result.status == "not graded" for r in rows)
        or any("changed the course" in r.result.detail for r in rows)
        else 0
    )

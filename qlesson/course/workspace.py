"""The learner's workspace: private copies of the lessons and exercises, never tracked by git.

``make lab`` (``python -m qlesson lab``) copies ``notebooks/NN_*.ipynb`` and
``exercises/NN_*.ipynb`` into ``workspace/`` the first time (outputs cleared: the learner runs
each cell, and predicts before the cells that ask for it) and opens JupyterLab there; the
learner edits only those copies, so ``make test`` and ``git status`` never see their edits
and ``git pull`` never conflicts. ``make grade`` grades ``workspace/exercises/``.

When the course is updated, each copy is treated by what happened to it:

- the learner never edited it (its cells are as copied): it is replaced by the new version;
- the learner edited it (or it cannot be read): it stays as it is, under its own name, and the
  new version is written beside it as ``new.NN_name.ipynb`` (the word that tells them apart
  comes first, so a file browser that cuts long names still shows it), with a message. A
  ``new.`` file the learner never touched is simply refreshed; one they worked in is first
  copied to ``old.new.NN_name.ipynb`` (then ``old2.``, ...), and the message says so.

Nothing the learner wrote is renamed or overwritten without a message naming where it is.
``make lab`` prints these messages, and the list of new versions still waiting, before
JupyterLab's log and again once the server is up (:func:`lab`). :func:`pending_update` tells
the grader whether an exercise has a newer version the learner has not taken.

A file the commands cannot use (a manifest that is not JSON, ``workspace`` being a file, a
course notebook that cannot be read) stops them with :class:`CourseFileError`: one line naming
the file and what to do.

"Edited" compares cell sources only: running cells (new outputs) is not an edit. A small
manifest (``workspace/.qlesson-manifest.json``) remembers which course version each copy
came from.

>>> import tempfile
>>> course, ws = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp()) / "ws"
>>> _ = (course / "notebooks").mkdir(), (course / "exercises").mkdir()
>>> _ = _write_nb(course / "notebooks" / "01_a.ipynb", ["print(1)"])
>>> for line in prepare(ws, course): print(line)
workspace ready: 1 notebook copied
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE = ROOT / "workspace"
MANIFEST = ".qlesson-manifest.json"
FOLDERS = ("notebooks", "exercises")


class CourseFileError(ValueError):
    """A file the course commands cannot use; the message names it and says what to do."""


def course_notebooks(course: Path = ROOT) -> dict[str, Path]:
    """What a workspace holds, by relative path: the lessons and the learner exercises."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((course / folder).glob("[0-9][0-9]_*.ipynb")):
            found[f"{folder}/{path.name}"] = path
    return found


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """A notebook, or :class:`CourseFileError` naming the file when it is not one.

    Keys that only describe (a cell's or the notebook's ``metadata``, a code cell's
    ``outputs``), which some editors leave out, are filled in as empty.
    """
    try:
        return nbformat.read(str(path), as_version=4)
    except IsADirectoryError:
        raise CourseFileError(f"{path} is a folder, not a notebook: rename or remove it") from None
    except nbformat.ValidationError as err:  # JSON, but not a notebook as nbformat checks it
        nb = _filled_in(path)
        if nb is None:
            raise CourseFileError(f"{path} is not a readable notebook ({_first_line(err)})") from None
        return nb
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as err:  # not JSON, not a notebook
        raise CourseFileError(f"{path} is not a readable notebook ({_first_line(err)})") from None


def _first_line(err: Exception) -> str:
    why = str(err).splitlines()[0] if str(err).strip() else type(err).__name__
    return why[:80]


def _filled_in(path: Path) -> nbformat.NotebookNode | None:
    """The notebook at ``path`` with missing metadata and outputs filled in, or None if it has no list of cells."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cells = raw.get("cells") if isinstance(raw, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        return None
    raw.setdefault("metadata", {})
    for cell in cells:
        cell.setdefault("metadata", {})
        cell.setdefault("source", "")
        if cell.get("cell_type") == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
    try:
        return nbformat.reads(json.dumps(raw), as_version=4)
    except (nbformat.ValidationError, ValueError, KeyError, AttributeError, TypeError):
        return None


def inputs_digest(path: Path) -> str:
    """A digest of a notebook's cell types and sources (outputs and metadata left out)."""
    cells = [(c.get("cell_type"), c.get("source", "")) for c in read_notebook(path).cells]
    return hashlib.sha256(json.dumps(cells).encode()).hexdigest()


def _digest_or_none(path: Path) -> str | None:
    try:
        return inputs_digest(path)
    except CourseFileError:
        return None


def backup(path: Path) -> Path:
    """Copy ``path`` to the first free ``old.NAME``, ``old2.NAME``, ...; never overwrites a backup.

    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "02_x.ipynb"
    >>> _ = f.write_text("{}")
    >>> backup(f).name, backup(f).name
    ('old.02_x.ipynb', 'old2.02_x.ipynb')
    """
    n = 1
    while (bak := path.with_name(f"old{n if n > 1 else ''}.{path.name}")).exists():
        n += 1
    shutil.copy(path, bak)
    return bak


def _write_nb(path: Path, sources: list[str]) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, str(path))
    return path


def _copy(src: Path, dst: Path) -> None:
    """Copy a course notebook for the learner: unpaired from its jupytext source, outputs cleared.

    A lesson's stored outputs would show every result under the cell that asks the learner to
    predict it; the learner runs the cells instead (the static site keeps the outputs).
    """
    nb = read_notebook(src)
    nb.metadata.pop("jupytext", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dst))


def new_version_path(path: Path) -> Path:
    """Where the course's new version of an edited notebook goes: ``new.NN_name.ipynb``, beside it.

    >>> new_version_path(Path("exercises/02_one_ruler_or_many.ipynb")).as_posix()
    'exercises/new.02_one_ruler_or_many.ipynb'
    """
    return path.with_name(f"new.{path.name}")


def prepare(workspace: Path = WORKSPACE, course: Path = ROOT) -> list[str]:
    """Create or update ``workspace`` from the course; returns the messages for the learner.

    Never overwrites a notebook the learner has edited.
    """
    check_folders(workspace)
    manifest_path = workspace / MANIFEST
    first = not manifest_path.exists()
    manifest = {} if first else _read_manifest(manifest_path)
    messages, copied = [], 0
    for rel, src in course_notebooks(course).items():
        dst = workspace / rel
        new = inputs_digest(src)
        if not dst.exists():
            _copy(src, dst)
            copied += 1
            if not first:
                messages.append(f"new: {rel}")
        elif manifest.get(rel) != new:
            mine = _digest_or_none(dst) if dst.is_file() else None
            if mine == new:
                pass  # already the course's version
            elif mine is None or rel not in manifest or mine != manifest[rel]:
                messages.append(_write_beside(src, dst, workspace, mine, (manifest.get(rel), new)))
            else:
                _copy(src, dst)
                messages.append(f"updated: {rel} (you had not edited it)")
        manifest[rel] = new
    workspace.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if first:
        messages.insert(0, f"workspace ready: {copied} notebook{'s' if copied != 1 else ''} copied")
    return messages


def _write_beside(
    src: Path, dst: Path, workspace: Path, mine: str | None, course_versions: tuple[str | None, str]
) -> str:
    """Write the course's version of ``dst`` as ``new.NAME`` beside it; the message for the learner.

    A ``new.`` file holding a course version (the last one written there, or this one) is the
    course's and is refreshed; one the learner worked in is first copied to ``old.new.NAME``.
    """
    beside = new_version_path(dst)
    saved = ""
    if beside.exists() and not beside.is_file():
        raise CourseFileError(f"{beside} is a folder, not a notebook: rename or remove it")
    if beside.is_file() and _digest_or_none(beside) not in course_versions:  # the learner worked in it
        saved = f"; your work in {beside.name} is saved as {backup(beside).name}"
    _copy(src, beside)
    kept = "keeps your edits" if mine is not None else "cannot be read as a notebook"
    rel, new_rel = (p.relative_to(workspace).as_posix() for p in (dst, beside))
    return f"{rel}: the course has a newer version, {new_rel}; yours {kept} and is untouched{saved}"


def waiting(workspace: Path = WORKSPACE) -> list[str]:
    """One line per ``new.`` version waiting beside a learner's copy that differs from it."""
    lines = []
    for folder in FOLDERS:
        for beside in sorted((workspace / folder).glob("new.[0-9][0-9]_*.ipynb")):
            mine = beside.with_name(beside.name.removeprefix("new."))
            if mine.is_file() and _digest_or_none(mine) == _digest_or_none(beside):
                continue
            rel = f"{folder}/{mine.name}"
            lines.append(
                f"waiting: {folder}/{beside.name} is the newer version of your {rel}; to switch to it, "
                f"python -m qlesson reset {rel} (yours is kept as {backup_name(mine)})"
            )
    return lines


def backup_name(path: Path) -> str:
    """The name :func:`backup` would give ``path`` now (``old.NAME``, or ``oldN.NAME`` when taken)."""
    n = 1
    while (bak := path.with_name(f"old{n if n > 1 else ''}.{path.name}")).exists():
        n += 1
    return bak.name


def pending_update(path: Path, course: Path = ROOT) -> str | None:
    """A one-line note when the learner's copy at ``path`` has a newer course version they have not taken.

    ``path`` is a copy in a workspace (``workspace/exercises/NN_name.ipynb``). The note names the
    waiting ``new.`` file, or says that the course changed since the last ``make lab``; None when
    the copy is the newest there is. Never raises for a damaged workspace (the grader reports that).
    """
    beside = new_version_path(path)
    if beside.is_file() and _digest_or_none(beside) != _digest_or_none(path):
        return f"a newer version of this notebook waits in {beside.name} (yours is graded as it is)"
    src = course / path.parent.name / path.name
    manifest_path = path.parent.parent / MANIFEST
    try:
        seen = _read_manifest(manifest_path).get(f"{path.parent.name}/{path.name}") if manifest_path.is_file() else None
    except CourseFileError:
        return None
    if src.is_file() and seen is not None and _digest_or_none(src) not in (seen, None):
        return "the course has a newer version of this notebook: run `make lab` (or python -m qlesson update) to get it"
    return None


def check_folders(workspace: Path = WORKSPACE) -> None:
    """:class:`CourseFileError` if ``workspace`` or one of its folders is a file."""
    if workspace.exists() and not workspace.is_dir():
        raise CourseFileError(f"{workspace} is a file, not a folder: move it away and run `make lab` again")
    for folder in FOLDERS:
        if (workspace / folder).exists() and not (workspace / folder).is_dir():
            raise CourseFileError(f"{workspace / folder} is a file, not a folder: move it away and run again")


def _read_manifest(path: Path) -> dict[str, str]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        manifest = None
    if not isinstance(manifest, dict) or not all(isinstance(v, str) for v in manifest.values()):
        raise CourseFileError(f"{path} is damaged: delete it and run again (your notebooks are kept, none is replaced)")
    return manifest


def reset(rel: str, workspace: Path = WORKSPACE, course: Path = ROOT) -> Path:
    """Throw away the learner's copy of ``rel`` (e.g. ``exercises/02_one_ruler_or_many.ipynb``)
    after saving it as ``old.NAME`` (see :func:`backup`), and copy the course version again.

    A ``new.NAME`` beside it that holds exactly this course version is removed: it is the same file.
    """
    src = course_notebooks(course).get(rel)
    if src is None:
        raise CourseFileError(f"{rel!r} is not a course notebook; choose from {', '.join(course_notebooks(course))}")
    check_folders(workspace)
    dst = workspace / rel
    if dst.exists() and not dst.is_file():
        raise CourseFileError(f"{dst} is a folder, not a notebook: rename or remove it, then reset again")
    if dst.is_file():
        backup(dst)
    _copy(src, dst)
    manifest_path = workspace / MANIFEST
    manifest = _read_manifest(manifest_path) if manifest_path.exists() else {}
    manifest[rel] = inputs_digest(src)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    beside = new_version_path(dst)
    if beside.is_file() and _digest_or_none(beside) == manifest[rel]:
        beside.unlink()
    return dst


def summary(messages: list[str], workspace: Path = WORKSPACE) -> str:
    """What ``make lab`` tells the learner about their workspace: this update's messages and what waits."""
    told = " ".join(messages)
    lines = [*messages, *(w for w in waiting(workspace) if w.split()[1] not in told)] or ["no course updates"]
    rule = "-" * 72
    return "\n".join([rule, f"qlesson: your workspace is {workspace}", *(f"  {line}" for line in lines), rule])


def lab(args: list[str], workspace: Path = WORKSPACE) -> int:
    """Update ``workspace``, print :func:`summary`, open JupyterLab there; print the summary again once it is up.

    JupyterLab's log would scroll the first copy away; the second comes right after its startup
    lines. Ctrl-C reaches JupyterLab, which asks before it stops.
    """
    text = summary(prepare(workspace), workspace)
    print(text, flush=True)
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={workspace}", *args]
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-root")
    cmd.append("notebooks/00_start_here.ipynb")
    proc = subprocess.Popen(cmd, cwd=workspace)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server handles Ctrl-C (after Popen: not inherited)
    try:
        if _wait_until_up(proc):
            print(text, flush=True)
        return proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def _wait_until_up(proc: subprocess.Popen, timeout: float = 120.0, settle: float = 1.0) -> bool:
    """Wait for the server ``proc`` to write its runtime file, then ``settle`` seconds for its startup lines."""
    from jupyter_core.paths import jupyter_runtime_dir

    info = Path(jupyter_runtime_dir()) / f"jpserver-{proc.pid}.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if info.exists():
            time.sleep(settle)
            return proc.poll() is None
        time.sleep(0.2)
    return False

"""The learner's workspace: private copies of the lessons and exercises, never tracked by git.

``make lab`` (``python -m qlesson lab``) copies ``notebooks/NN_*.ipynb`` and
``exercises/NN_*.ipynb`` into ``workspace/`` the first time and opens JupyterLab there; the
learner edits only those copies, so ``make test`` and ``git status`` never see their edits
and ``git pull`` never conflicts. ``make grade`` grades ``workspace/exercises/``.

When the course is updated, each copy is treated by what happened to it:

- the learner never edited it (its cells are as copied): it is replaced by the new version;
- the learner edited it: it stays as it is, and the new version is written beside it as
  ``NN_name.new.ipynb``, with a one-line message.

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
import shutil
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE = ROOT / "workspace"
MANIFEST = ".qlesson-manifest.json"
FOLDERS = ("notebooks", "exercises")


def course_notebooks(course: Path = ROOT) -> dict[str, Path]:
    """What a workspace holds, by relative path: the lessons and the learner exercises."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((course / folder).glob("[0-9][0-9]_*.ipynb")):
            found[f"{folder}/{path.name}"] = path
    return found


def inputs_digest(path: Path) -> str:
    """A digest of a notebook's cell types and sources (outputs and metadata left out)."""
    nb = nbformat.read(str(path), as_version=4)
    cells = [(c.cell_type, c.source) for c in nb.cells]
    return hashlib.sha256(json.dumps(cells).encode()).hexdigest()


def _write_nb(path: Path, sources: list[str]) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, str(path))
    return path


def _copy(src: Path, dst: Path) -> None:
    """Copy a course notebook for the learner: unpaired from its jupytext source."""
    nb = nbformat.read(str(src), as_version=4)
    nb.metadata.pop("jupytext", None)
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dst))


def new_version_path(path: Path) -> Path:
    """Where the course's new version of an edited notebook goes: ``NN_name.new.ipynb``."""
    return path.with_name(f"{path.stem}.new.ipynb")


def prepare(workspace: Path = WORKSPACE, course: Path = ROOT) -> list[str]:
    """Create or update ``workspace`` from the course; returns the messages for the learner.

    Never overwrites a notebook the learner has edited.
    """
    manifest_path = workspace / MANIFEST
    first = not manifest_path.exists()
    manifest: dict[str, str] = {} if first else json.loads(manifest_path.read_text())
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
            mine = inputs_digest(dst)
            if mine == new:
                pass  # already the course's version
            elif rel not in manifest or mine != manifest[rel]:
                beside = new_version_path(dst)
                _copy(src, beside)
                messages.append(
                    f"{rel}: the course changed it and your copy has your edits; "
                    f"the new version is {beside.relative_to(workspace).as_posix()} (yours is untouched)"
                )
            else:
                _copy(src, dst)
                messages.append(f"updated: {rel} (you had not edited it)")
        manifest[rel] = new
    workspace.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if first:
        messages.insert(0, f"workspace ready: {copied} notebook{'s' if copied != 1 else ''} copied")
    return messages


def reset(rel: str, workspace: Path = WORKSPACE, course: Path = ROOT) -> Path:
    """Throw away the learner's copy of ``rel`` (e.g. ``exercises/02_one_ruler_or_many.ipynb``)
    after saving it as ``.bak``, and copy the course version again."""
    src = course_notebooks(course).get(rel)
    if src is None:
        raise ValueError(f"{rel!r} is not a course notebook; choose from {', '.join(course_notebooks(course))}")
    dst = workspace / rel
    if dst.exists():
        shutil.copy(dst, dst.with_suffix(".ipynb.bak"))
    _copy(src, dst)
    manifest_path = workspace / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest[rel] = inputs_digest(src)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return dst

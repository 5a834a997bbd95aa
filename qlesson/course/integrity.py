"""Are the course's own files as the course shipped them? Checked by ``make grade`` before grading.

A learner's code runs as the learner, so it can rewrite anything the learner can: the grader,
a lesson's task file, the course's copy of an exercise, the Makefile, a ``.pth`` hook in the
venv (run by every later Python), a ``.pyc`` that Python prefers to its source. This module
finds such changes, so that a tampered course is reported on every run, not only on the run
that did it:

* **the course's files** (``qlesson/``, ``exercises/``, ``Makefile``, ``course.py``,
  ``pyproject.toml``): in a git checkout, each file's git blob hash against the commit checked
  out (``HEAD``), plus any new ``.py`` in ``qlesson/``; elsewhere (a zip), against hashes written
  at set-up by ``python -m qlesson.course.integrity write`` into the venv;
* **start-up hooks**: every ``.pth`` line that runs code must be one the course knows
  (:data:`KNOWN_PTH`, by hash), and there is no ``sitecustomize``/``usercustomize`` in the venv;
* **bytecode**: every ``__pycache__`` file Python would load instead of compiling a
  ``qlesson`` source must hold the code of that source.

Why git first: the commit is the course's own record (content-addressed, the same one
``git pull`` updates), it needs no step to keep in sync, and a test cannot go stale against it.
A manifest written at set-up records whatever was there at set-up (trust on first use) and
must be rewritten after each update. Neither is protection against a learner who sets out to
fool themselves (the same user can rewrite ``.git`` or the manifest, or this module): that
is what the instructor's clean room is for (:mod:`qlesson.course.cleanroom`), where the learner's
code cannot write the course at all.

Standard library only, so ``python -I -S qlesson/course/integrity.py`` runs it without the venv's hooks.

>>> blob_hash(b"hello\\n")  # the same as `git hash-object` of a file holding hello
'ce013625030ba8dba906f756967f9e9ca394464a'
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import marshal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(__file__).resolve().parents[1]
CHECKED = ("qlesson", "exercises", "Makefile", "course.py", "pyproject.toml")
MANIFEST_NAME = "qlesson-hashes.json"


def _line_hash(line: str) -> str:
    return hashlib.sha256(line.strip().encode()).hexdigest()


# sha256 of each .pth line that runs code and that a course venv holds: setuptools' distutils
# shim and coverage's start-up hook (pytest-cov); pip's editable install of qlesson is matched by form
KNOWN_PTH = {
    _line_hash(
        "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == 'local'; "
        "enabled and __import__('_distutils_hack').add_shim(); "
    ),
    _line_hash("import pywin32_bootstrap"),  # pywin32 (Jupyter's on Windows)
    _line_hash(  # the same shim from setuptools before 60
        "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'stdlib') == 'local'; "
        "enabled and __import__('_distutils_hack').add_shim(); "
    ),
    _line_hash(
        'import sys; exec(\'import os\\n\\nif os.getenv("COVERAGE_PROCESS_START") or '
        'os.getenv("COVERAGE_PROCESS_CONFIG"):\\n try:\\n  import coverage\\n except:\\n  pass\\n else:\\n  '
        'coverage.process_startup(slug="pth")\')'
    ),
}


def blob_hash(data: bytes) -> str:
    """The hash git gives a file holding ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _git_hash(data: bytes) -> str:
    """:func:`blob_hash` as git stores the file: a checkout that turned LF into CRLF (Windows) is unchanged."""
    return blob_hash(data.replace(b"\r\n", b"\n"))


def _course_files(root: Path) -> list[Path]:
    found = []
    for name in CHECKED:
        path = root / name
        if path.is_dir():
            found += [p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        elif path.is_file():
            found.append(path)
    return [p for p in found if p.suffix in ("", ".py", ".ipynb", ".toml", ".json", ".txt") or p.name == "Makefile"]


def git_tree(root: Path) -> dict[str, str] | None:
    """{path: blob hash} of the checked paths at ``HEAD``; None when ``root`` is not a git checkout."""
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-tree", "-r", "-z", "HEAD", "--", *CHECKED],
            capture_output=True,
            timeout=30,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.SubprocessError):
        return None
    tree = {}
    for entry in filter(None, out.split("\0")):
        meta, path = entry.split("\t", 1)
        tree[path] = meta.split()[2]
    return tree


def course_changes(root: Path = ROOT, manifest: Path | None = None) -> tuple[str, list[str]]:
    """(what the files were compared with, the changed files) for the course at ``root``."""
    tree = git_tree(root)
    if tree is not None:
        how, hashed, expected = "the course's git commit (HEAD)", _git_hash, tree
    else:
        manifest = manifest or Path(sys.prefix) / MANIFEST_NAME
        try:
            expected = json.loads(manifest.read_text(encoding="utf-8"))["sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            return "nothing (not a git checkout, and no hashes written at set-up)", []
        how, hashed = f"the hashes written at set-up ({manifest})", lambda b: hashlib.sha256(b).hexdigest()
    present = {p.relative_to(root).as_posix(): p for p in _course_files(root)}
    changed = [f"{rel} (missing)" for rel in expected if rel not in present]
    for rel, path in present.items():
        if rel not in expected:
            if path.suffix in (".py", ".ipynb") or path.name == "Makefile":
                changed.append(f"{rel} (new)")
        elif hashed(path.read_bytes()) != expected[rel]:
            changed.append(f"{rel} (changed)")
    return how, sorted(changed)


def write_manifest(root: Path = ROOT, path: Path | None = None) -> Path:
    """Record the sha256 of every checked file (for a course that is not a git checkout)."""
    path = path or Path(sys.prefix) / MANIFEST_NAME
    files = {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in _course_files(root)}
    path.write_text(json.dumps({"root": str(root), "sha256": files}, indent=1, sort_keys=True) + "\n")
    return path


def site_dirs() -> list[Path]:
    """The venv's site-packages folders (where ``.pth`` files run at every start)."""
    import site

    dirs = site.getsitepackages() if hasattr(site, "getsitepackages") else []
    return [Path(d) for d in dirs if Path(d).is_dir() and Path(d).resolve().is_relative_to(Path(sys.prefix).resolve())]


def startup_hooks(dirs: list[Path] | None = None) -> list[str]:
    """``.pth`` lines that run code the course does not know, and ``sitecustomize``/``usercustomize`` modules.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "evil.pth").write_text("import os; os.system('echo hi')\\n")
    >>> startup_hooks([d])[0].endswith("evil.pth runs code at every Python start: import os; os.system('echo hi')")
    True
    """
    found = []
    for d in site_dirs() if dirs is None else dirs:
        for name in ("sitecustomize.py", "usercustomize.py", "sitecustomize", "usercustomize"):
            if (d / name).exists():
                found.append(f"{d / name} runs at every Python start")
        for pth in sorted(d.glob("*.pth")):
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                if not line.startswith(("import ", "import\t")) or _known(pth, line):
                    continue
                found.append(f"{pth} runs code at every Python start: {line.strip()[:80]}")
                break
    return found


def _known(pth: Path, line: str) -> bool:
    if _line_hash(line) in KNOWN_PTH:
        return True
    stem = pth.stem.removeprefix("__editable__.").replace("-", "_").replace(".", "_")
    finder = f"__editable___{stem}_finder"  # pip's editable install of qlesson itself
    return pth.stem.startswith("__editable__.qlesson-") and line.strip() == f"import {finder}; {finder}.install()"


def bytecode_mismatches(package: Path = PACKAGE) -> list[str]:
    """``.pyc`` files Python would load for a ``qlesson`` module without holding that module's code."""
    found = [f"{p} (a .pyc outside __pycache__)" for p in package.rglob("*.pyc") if p.parent.name != "__pycache__"]
    tag = sys.implementation.cache_tag
    for source in sorted(package.rglob("*.py")):
        for opt in ("", ".opt-1", ".opt-2"):
            pyc = source.parent / "__pycache__" / f"{source.stem}.{tag}{opt}.pyc"
            if pyc.is_file() and _used(pyc, source) and not _same_code(pyc, source, len(opt) and int(opt[-1])):
                found.append(f"{pyc} (does not hold the code of {source.name})")
    return found


def _used(pyc: Path, source: Path) -> bool:
    """Whether Python would load ``pyc`` rather than compile ``source`` (its header matches)."""
    head = pyc.read_bytes()[:16]
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags = int.from_bytes(head[4:8], "little")
    if flags & 1:  # hash-based: checked ones are verified by Python itself, unchecked ones are used as they are
        return not flags & 2 or head[8:16] != importlib.util.source_hash(source.read_bytes())
    st = source.stat()
    return (
        int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
        and int.from_bytes(head[12:16], "little") == st.st_size & 0xFFFFFFFF
    )


def _same_code(pyc: Path, source: Path, optimize: int) -> bool:
    try:
        stored = marshal.loads(pyc.read_bytes()[16:])  # data only: marshal runs no code
        fresh = compile(source.read_bytes(), str(source), "exec", dont_inherit=True, optimize=optimize)
    except (ValueError, EOFError, TypeError, SyntaxError):
        return False
    return stored == fresh


def findings(root: Path = ROOT) -> list[str]:
    """Everything found wrong with the course and its venv, one line each (empty when all is as shipped)."""
    _, changed = course_changes(root)
    lines = [f"{rel}: not as the course shipped it" for rel in changed]
    return lines + startup_hooks() + bytecode_mismatches(root / "qlesson" if (root / "qlesson").is_dir() else PACKAGE)


def warning_lines(found: list[str], limit: int = 5) -> list[str]:
    """What ``make grade`` prints about ``found``: nothing when it is empty."""
    if not found:
        return []
    lines = ["WARNING: the course's own files or its venv were changed, so these scores cannot be trusted:"]
    lines += [f"  {line}" for line in found[:limit]]
    if len(found) > limit:
        lines.append(f"  ... and {len(found) - limit} more (python -m qlesson.course.integrity lists them all)")
    lines.append("  restore them (git status; git checkout -- FILE; delete a stray .pth or .pyc) and grade again")
    return lines


def main(argv: list[str]) -> int:
    if argv[:1] == ["write"]:
        print(f"hashes written: {write_manifest()}")
        return 0
    how, _ = course_changes()
    found = findings()
    print(f"course files compared with {how}")
    for line in found:
        print(line)
    print("all as the course shipped them" if not found else f"{len(found)} finding(s)")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""A small mutation pass: do the tests notice a one-line change to the code they guard?

Not part of the test run (pytest collects ``test_*.py`` only). Run it by hand from the repo root::

    .venv/bin/python tests/mutate.py            # every target: a table of killed / survived, and the kill rate
    .venv/bin/python tests/mutate.py --list     # the mutants only, without running anything
    .venv/bin/python tests/mutate.py kv gptq    # the targets whose name contains one of these words

Each mutant changes one operator or name on one line of a named function (``==`` to ``!=``,
``<`` to ``<=``, ``+`` to ``-``, ``and`` to ``or``, ``min`` to ``max``, ``0`` to ``1``...):
the first change on that line that still compiles. No file is written: the code and the tests
are imported once, and each mutant runs in a forked copy of this process whose functions get
the mutant's code (``function.__code__``), so every reference to them runs it; the target's
fast tests then run there (``-x``: the first failure kills the mutant). POSIX only (``os.fork``).
A survivor is a gap in the tests, or a mutant that changes nothing (an equivalent mutant):
read it, then add a test or ignore it.

``--root`` runs the pass on another copy of the repository (e.g. ``git archive HEAD``'s), to
compare kill rates before and after a change.
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import signal
import sys
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (name, file, functions (Class.method for a method), fast tests: paths, then pytest options)
TARGETS: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] = [
    (
        "checking",
        "qlesson/course/checking.py",
        ("Verdict.passed", "same", "changed_inputs", "named_mistake", "reshaped", "evaluate"),
        (
            "qlesson/course/checking.py",
            "tests/test_checks.py",
            "tests/test_edges_mutants.py",
            "-k",  # the engine's own tests and the tasks of lessons 01 and 05 (the whole file takes 45 s)
            "checking or 01 or 05 or in_place or print or stub or not_implemented or unknown or friendly or verdict "
            "or vector",
        ),
    ),
    (
        "recall",
        "qlesson/course/recall.py",
        ("Choice.__post_init__", "Choice.shown", "Numeric.__post_init__"),
        (
            "qlesson/course/recall.py",
            "tests/test_edges_mutants.py",
            "tests/test_checks.py",
            "-k",
            "choice or letter or numeric or answering or Choice",
        ),
    ),
    (
        "gptq",
        "qlesson/quant/gptq.py",
        ("hessian",),
        ("qlesson/quant/gptq.py", "tests/test_gptq.py", "tests/test_edges_mutants.py", "-k", "hessian"),
    ),
    (
        "intervals",
        "qlesson/teach/intervals.py",
        ("Interval.excludes_zero", "Interval.verdict", "interval", "_check", "_jackknife"),
        ("qlesson/teach/intervals.py", "tests/test_intervals.py", "tests/test_edges_mutants.py"),
    ),
    (
        "kv",
        "qlesson/quant/kv.py",
        ("quantized_tokens", "fake_quantize_kv", "_rows", "kv_cache_bytes"),
        ("qlesson/quant/kv.py", "tests/test_kv.py", "tests/test_edges_fuzz.py"),
    ),
]

SWAPS = {
    "==": "!=",
    "!=": "==",
    "<": "<=",
    "<=": "<",
    ">": ">=",
    ">=": ">",
    "+": "-",
    "-": "+",
    "*": "/",
    "/": "*",
    "//": "/",
    "%": "//",
    "and": "or",
    "or": "and",
    "not": "",
    "True": "False",
    "False": "True",
    "min": "max",
    "max": "min",
    "amin": "amax",
    "amax": "amin",
    "any": "all",
    "all": "any",
    "is": "is not",
    "in": "not in",
    "0": "1",
    "1": "0",
    "2": "3",
}


@dataclass(frozen=True)
class Mutant:
    target: str
    file: str
    line: int
    old: str
    new: str
    source: str  # the whole mutated file

    def describe(self) -> str:
        return f"{self.file}:{self.line}  {self.old.strip()}  ->  {self.new.strip()}"


def _function_lines(tree: ast.Module, name: str) -> range | None:
    """The lines of function ``name`` (``Class.method`` for a method), without its docstring."""
    scope: list[ast.stmt] = tree.body
    *outer, last = name.split(".")
    for part in outer:
        cls = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == part), None)
        if cls is None:
            return None
        scope = cls.body
    fn = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == last), None)
    if fn is None:
        return None
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1:
        body = body[1:]  # the docstring is documentation, not code
    return range(body[0].lineno, (fn.end_lineno or body[-1].lineno) + 1)


def mutants(root: Path, target: tuple[str, str, tuple[str, ...], tuple[str, ...]]) -> list[Mutant]:
    """One mutant per code line of the target's functions: its first swap that still compiles."""
    name, file, functions, _ = target
    path = root / file
    if not path.exists():
        return []
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    wanted: set[int] = set()
    for fn in functions:
        r = _function_lines(tree, fn)
        wanted |= set(r) if r else set()
    by_line: dict[int, list[tokenize.TokenInfo]] = {}
    before: list[str] = ["", ""]
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        keyword = before == ["strict", "="]  # zip(strict=True) -> False changes nothing when lengths agree
        before = [before[1], tok.string]
        if tok.start[0] in wanted and tok.start[0] == tok.end[0] and tok.string in SWAPS and not keyword:
            if tok.type in (tokenize.OP, tokenize.NAME, tokenize.NUMBER):
                by_line.setdefault(tok.start[0], []).append(tok)
    out = []
    for line in sorted(by_line):
        for tok in by_line[line]:
            old = lines[line - 1]
            new = old[: tok.start[1]] + SWAPS[tok.string] + old[tok.end[1] :]
            source = "".join(lines[: line - 1]) + new + "".join(lines[line:])
            try:
                compile(source, file, "exec")
            except SyntaxError:
                continue
            out.append(Mutant(name, file, line, old, new, source))
            break
    return out


def _lookup(scope: object, dotted: str) -> object:
    """The function object behind ``dotted`` (``Class.method``, a property's getter) in a module or namespace."""
    import inspect

    obj = scope
    for part in dotted.split("."):
        obj = obj[part] if isinstance(obj, dict) else inspect.getattr_static(obj, part)
    if isinstance(obj, property):
        obj = obj.fget
    return getattr(obj, "__func__", obj)


def _patch(m: Mutant, functions: tuple[str, ...]) -> None:
    """Give the loaded module's functions the mutant's code: every reference to them, anywhere, now runs it."""
    import importlib

    name = m.file[:-3].replace("/", ".")
    module = importlib.import_module(name)
    ns: dict = {"__name__": name, "__file__": module.__file__}
    exec(compile(m.source, m.file, "exec"), ns)  # noqa: S102 (the mutant of our own source)
    for fn in functions:
        try:
            old, new = _lookup(module, fn), _lookup(ns, fn)
        except (AttributeError, KeyError):
            continue  # a function this copy of the code does not have
        old.__code__ = new.__code__  # type: ignore[attr-defined]


def _preload(root: Path, targets: list) -> None:
    """Import the code and the test modules once, so each forked run starts with them loaded."""
    import importlib

    sys.path[:0] = [str(root), str(root / "tests")]
    for _, file, _, tests in targets:
        importlib.import_module(file[:-3].replace("/", "."))
        for t in tests:
            if t.startswith("tests/") and (root / t).exists():
                try:
                    importlib.import_module(Path(t).stem)
                except Exception:  # noqa: BLE001 (pytest reports it in the run itself)
                    pass


def _run(m: Mutant | None, functions: tuple[str, ...], tests: tuple[str, ...], root: Path, timeout: int) -> str:
    """``killed``, ``survived``, ``timeout`` or ``error``: the fast tests, in a forked copy of this process."""
    args = [a for a in tests if a.startswith("-") or not a.endswith(".py") or (root / a).exists()]
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:  # the child: patch, run pytest here, leave without cleanup
        code = 3
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            if m is not None:
                _patch(m, functions)
            import pytest

            code = int(pytest.main(["-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly", *args]))
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.1)
    code = os.waitstatus_to_exitcode(status)
    return {0: "survived", 1: "killed", 2: "killed"}.get(code, "error")  # 2: a collection error, also a kill


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("only", nargs="*", help="run the targets whose name contains one of these words")
    ap.add_argument("--root", type=Path, default=ROOT, help="the repository to mutate (default: this one)")
    ap.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per mutant before it counts as killed")
    ap.add_argument("--at", nargs="*", default=(), help="only the mutants at these places, e.g. checking.py:163")
    a = ap.parse_args(argv)
    targets = [t for t in TARGETS if not a.only or any(w in t[0] for w in a.only)]
    root = a.root.resolve()
    every = [(t, m) for t in targets for m in mutants(root, t)]
    every = [(t, m) for t, m in every if not a.at or any(f"{m.file}:{m.line}".endswith(w) for w in a.at)]
    if a.list:
        for _, m in every:
            print(m.describe())
        print(f"{len(every)} mutants")
        return 0
    os.environ.update(OMP_NUM_THREADS="1", PYTHONHASHSEED="0")  # one thread: safe to fork, fair to others
    sys.dont_write_bytecode = True
    os.chdir(root)
    _preload(root, targets)
    for t in targets:  # the unmutated code must pass, or every mutant would look killed
        if _run(None, t[2], t[3], root, a.timeout) != "survived":
            print(f"{t[0]}: its tests fail without any mutant; fix them first", file=sys.stderr)
            return 2
    tally: dict[str, int] = {}
    for t, m in every:
        start = time.monotonic()
        result = _run(m, t[2], t[3], root, a.timeout)
        tally[result] = tally.get(result, 0) + 1
        print(f"{result:>8}  {time.monotonic() - start:5.1f}s  {m.describe()}", flush=True)
    n, killed = len(every), tally.get("killed", 0) + tally.get("timeout", 0)
    print(f"killed {killed} of {n} mutants ({100 * killed / max(n, 1):.0f}%); {tally}")
    return 0 if killed == n else 1


if __name__ == "__main__":
    sys.exit(main())

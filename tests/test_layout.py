"""The package's layout shows its architecture, and its functions stay readable.

Three parts: ``qlesson.quant`` (the library) depends on nothing else of qlesson;
``qlesson.teach`` (what the lessons use to show it) on the library only; ``qlesson.engines``
(the exporters to real engines) on those two; the course
machinery (``qlesson.course``) and the per-lesson data (``qlesson.lessons``) on anything.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "qlesson"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_FUNCTION_LINES = 80
ALLOWED = {
    "quant": {"quant"},
    "teach": {"quant", "teach"},
    "engines": {"quant", "teach", "engines"},
    "bench": {"quant", "teach", "engines", "bench"},
    "course": {"quant", "teach", "engines", "course", "lessons"},
    "lessons": {"quant", "teach", "engines", "course", "lessons"},
}


def _part(path: Path) -> str:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else ""


def _qlesson_imports(tree: ast.AST) -> set[str]:
    """The parts (quant, teach, ...) a module imports from, absolute or relative."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.startswith("qlesson."):
                found.add(node.module.split(".")[1])
            elif node.level == 0 and node.module == "qlesson":
                found |= {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("qlesson.")}
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_parts_depend_only_downwards(path):
    part = _part(path)
    if part not in ALLOWED:
        return  # the top-level __init__ and __main__ may use every part
    used = _qlesson_imports(ast.parse(path.read_text()))
    assert used <= ALLOWED[part], f"{part} must not import from {sorted(used - ALLOWED[part])}"


def test_the_three_parts_are_folders():
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert flat == ["__init__.py", "__main__.py"], flat
    for part in ("quant", "teach", "course", "lessons"):
        assert (PACKAGE / part / "__init__.py").exists()


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_is_too_long(path):
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long


def test_the_checker_for_long_functions_can_fail():
    src = "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
    node = ast.parse(src).body[0]
    assert node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES


def test_the_import_checker_sees_every_form():
    tree = ast.parse("from qlesson.teach import plots\nimport qlesson.course.tasks\nfrom qlesson import lessons")
    assert _qlesson_imports(tree) == {"teach", "course", "lessons"}


def test_everything_about_a_lesson_is_found_from_its_number():
    from qlesson import lessons

    for number, name in lessons.numbers().items():
        stem = f"{number}_{name[4:]}"
        assert (ROOT / "notebooks" / f"{stem}.py").exists(), f"lesson source for {name}"
        assert (ROOT / "notebooks" / f"{stem}.ipynb").exists()
        mod = lessons.module(number)
        if getattr(mod, "TASKS", None):
            assert (ROOT / "exercises" / "solutions" / f"{stem}.py").exists(), f"exercise source for {name}"
            assert all(t.task_id.startswith(f"{number}.") for t in mod.TASKS)


def test_v1_module_names_still_import():
    import qlesson as ql
    from qlesson import plots, recall, widgets  # noqa: F401  (lazy aliases of the v1 layout)

    assert recall.answer and ql.formats.bits_per_weight("Q4_0") == 4.5

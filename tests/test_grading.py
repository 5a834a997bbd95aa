"""Grading a learner can trust: cheats never pass, correct answers never fail.

Each test edits a copy of a solution notebook the way a learner might, then grades it.
"""

import shutil
from pathlib import Path

import nbformat
import pytest

from qlesson.course import grade

ROOT = Path(__file__).resolve().parents[1]
SOLUTION_02 = ROOT / "exercises" / "solutions" / "02_one_ruler_or_many.ipynb"


def _copy(tmp_path: Path, src: Path = SOLUTION_02) -> Path:
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    return dst


def _edit(path: Path, find: str, new_source: str | None) -> None:
    """Replace (or with ``None`` delete) the first code cell whose source contains ``find``."""
    nb = nbformat.read(str(path), as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and find in c.source)
    if new_source is None:
        del nb.cells[i]
    else:
        nb.cells[i].source = new_source
    nbformat.write(nb, str(path))


def _results(path: Path) -> dict[str, grade.TaskResult]:
    return {r.task: r for r in grade.grade_notebook(path)}


STUB_SCALE = "def per_channel_scale(w, bits):\n    ...  # your code here"


@pytest.mark.parametrize(
    ("check_cell", "how"),
    [
        ('print("✓ 02.per_channel_scale case 1: the 2x4 example")', "replaced by printed ticks"),
        (None, "deleted"),
        ('# NBVAL_SKIP\ncheck("02.per_channel_scale", per_channel_scale)', "skipped"),
    ],
)
def test_an_edited_check_cell_never_passes(tmp_path, check_cell, how):
    path = _copy(tmp_path)
    _edit(path, 'check("02.per_channel_scale"', check_cell)
    results = _results(path)
    assert "02.per_channel_scale" in results, how
    r = results["02.per_channel_scale"]
    assert not r.passed and r.status == "check cell missing or edited" and "restore the check cell" in r.detail, how
    assert results["02.per_tensor_scale"].passed  # the other tasks are untouched


def test_an_edited_check_cell_with_a_stub_answer_is_still_not_attempted(tmp_path):
    path = _copy(tmp_path)
    _edit(path, "def per_channel_scale", STUB_SCALE)
    _edit(path, 'check("02.per_channel_scale"', 'print("✓")')
    r = _results(path)["02.per_channel_scale"]
    assert r.status == "not attempted" and "restore the check cell" in r.detail


def test_removing_the_check_tag_does_not_hide_a_task(tmp_path):
    path = _copy(tmp_path)
    nb = nbformat.read(str(path), as_version=4)
    for c in nb.cells:
        c.metadata.pop("tags", None)
        c.metadata.pop("qlesson", None)
    nbformat.write(nb, str(path))
    _edit(path, "def per_channel_scale", STUB_SCALE)
    results = _results(path)
    assert len(results) == len(grade.course_tasks(path.stem))
    assert results["02.per_channel_scale"].status == "not attempted"


def test_patching_the_checker_from_an_answer_cell_changes_nothing(tmp_path):
    path = _copy(tmp_path)
    _edit(
        path,
        "def per_channel_scale",
        "import qlesson.course.checking as checking\n"
        "checking.same = lambda *a, **k: True\n"
        "checking.evaluate = lambda *a, **k: None\n"
        "def per_channel_scale(w, bits):\n    return w.abs().amax(dim=0)",
    )
    r = _results(path)["02.per_channel_scale"]
    assert r.status == "fail"


def test_an_always_equal_object_is_rejected(tmp_path):
    path = _copy(tmp_path)
    _edit(
        path,
        "def per_channel_scale",
        "class Yes:\n    def __eq__(self, other):\n        return True\n"
        "def per_channel_scale(w, bits):\n    return Yes()",
    )
    r = _results(path)["02.per_channel_scale"]
    assert not r.passed and r.status in {"fail", "error"}


def test_a_correct_answer_with_prints_and_warnings_passes(tmp_path):
    path = _copy(tmp_path)
    _edit(
        path,
        "def per_channel_scale",
        "import warnings\n"
        "def per_channel_scale(w, bits):\n"
        "    print('debugging:', w.shape)\n"
        "    warnings.warn('a harmless warning')\n"
        "    return (w.abs().amax(dim=1) / (2 ** (bits - 1) - 1)).tolist()  # a plain list is fine\n"
        "print('top-level output is fine too')",
    )
    r = _results(path)["02.per_channel_scale"]
    assert r.passed, r.detail


def test_a_stale_check_output_does_not_matter(tmp_path):
    path = _copy(tmp_path)
    nb = nbformat.read(str(path), as_version=4)
    for c in nb.cells:
        if c.cell_type == "code" and 'check("02.per_channel_scale"' in c.source:
            c.outputs = [nbformat.v4.new_output("error", ename="CheckFailed", evalue="case 1 failed", traceback=[])]
    nbformat.write(nb, str(path))
    assert _results(path)["02.per_channel_scale"].passed  # graded by running, not by stored text


def test_a_wrong_answer_names_its_mistake(tmp_path):
    path = _copy(tmp_path)
    _edit(
        path,
        "def per_channel_scale",
        "def per_channel_scale(w, bits):\n    return w.abs().amax(dim=0) / (2 ** (bits - 1) - 1)",
    )
    r = _results(path)["02.per_channel_scale"]
    assert r.status == "fail" and "wrong axis" in r.detail
    assert "came back:" in r.full and "expected:" in r.full


def test_an_answer_cell_that_raises_reports_the_error(tmp_path):
    path = _copy(tmp_path)
    _edit(path, "def per_channel_scale", "def per_channel_scale(w, bits):\n    return w.nope()")
    r = _results(path)["02.per_channel_scale"]
    assert r.status == "error" and "AttributeError" in r.detail


def test_a_syntax_error_is_reported_not_crashed_on(tmp_path):
    path = _copy(tmp_path)
    _edit(path, "def per_channel_scale", "def per_channel_scale(w, bits)\n    return 1")
    results = _results(path)
    assert results["02.per_channel_scale"].status == "error"
    assert "SyntaxError" in results["02.per_channel_scale"].detail
    assert results["02.per_tensor_scale"].passed


def test_exit_in_the_notebook_is_an_error_for_every_task(tmp_path):
    path = _copy(tmp_path)
    _edit(path, "def per_channel_scale", "import os\nos._exit(3)")
    assert {r.status for r in grade.grade_notebook(path)} == {"error"}


def test_recall_answers_are_graded_from_the_course(tmp_path):
    path = _copy(tmp_path)
    nb = nbformat.read(str(path), as_version=4)
    for c in nb.cells:
        if c.cell_type == "code" and c.source.startswith("recall_") and "BEGIN SOLUTION" in c.source:
            name = c.source.split()[0]
            c.source = f'{name} = "a"'  # answering (a) everywhere
    nbformat.write(nb, str(path))
    recall = [r for r in grade.grade_notebook(path) if r.task.startswith("recall ")]
    assert recall and not all(r.passed for r in recall)


def test_the_table_fits_100_columns_without_colour(tmp_path):
    path = _copy(tmp_path)
    _edit(path, "def per_channel_scale", "def per_channel_scale(w, bits):\n    return w.abs().amax(dim=0) / 7")
    lines = grade.report_lines(grade.grade_notebook(path))
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    assert not any("\x1b" in line for line in lines)
    detail = grade.report_lines(grade.grade_notebook(path), detail=True)
    assert any("expected:" in line for line in detail)

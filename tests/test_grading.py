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
    assert results["02.rescued_rows"].passed  # the other tasks are untouched


def test_an_edited_check_cell_with_a_stub_answer_is_still_not_attempted(tmp_path):
    path = _copy(tmp_path)
    _edit(path, "def per_channel_scale", STUB_SCALE)
    _edit(path, 'check("02.per_channel_scale"', 'print("✓")')
    r = _results(path)["02.per_channel_scale"]
    assert r.status == "not attempted" and "restore the check cell" in r.detail


def test_an_exercise_as_shipped_is_all_to_do_without_running(tmp_path, monkeypatch):
    course = ROOT / "exercises" / "02_one_ruler_or_many.ipynb"
    path = _copy(tmp_path, course)
    ran = []
    monkeypatch.setattr(grade, "Sandbox", lambda *a, **k: ran.append(a))
    results = grade.grade_notebook(path)
    assert not ran and len(results) == len(grade.course_tasks(path.stem))
    assert {r.status for r in results} == {"not attempted"} and not any(r.failing for r in results)
    _edit(path, "def per_channel_scale", STUB_SCALE + "\n\n")  # a blank line added changes nothing
    assert {r.status for r in grade.grade_notebook(path)} == {"not attempted"} and not ran


def test_one_changed_cell_runs_the_notebook(tmp_path):
    path = _copy(tmp_path, ROOT / "exercises" / "02_one_ruler_or_many.ipynb")
    _edit(
        path,
        "def per_channel_scale",
        "def per_channel_scale(w, bits):\n    return w.abs().amax(dim=1, keepdim=True) / 7",
    )
    results = _results(path)
    assert results["02.per_channel_scale"].status != "not attempted"


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
    assert results["02.rescued_rows"].passed


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


def test_an_answer_that_unpickles_into_code_runs_nothing_in_the_grader(tmp_path):
    marker = tmp_path / "ran-in-the-grader"
    attack = f"open({str(marker)!r}, 'w').close()"
    path = _copy(tmp_path)
    _edit(
        path,
        "def per_channel_scale",
        "class Evil:\n"
        "    def __reduce__(self):\n"
        f"        return (exec, ({attack!r},))\n"
        "def per_channel_scale(w, bits):\n    return Evil()",
    )
    r = _results(path)["02.per_channel_scale"]
    assert not marker.exists(), "the grading process unpickled the learner's object"
    assert r.status == "error" and "Evil" in r.detail and "not a number" in r.detail
    assert "LearnerError" not in r.detail and "_Remote" not in r.detail


def test_a_recall_value_that_unpickles_into_code_is_one_row_not_a_crash(tmp_path):
    marker = tmp_path / "ran-in-the-grader"
    path = _copy(tmp_path)
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("recall_"))
    name = cell.source.split()[0]
    attack = f"open({str(marker)!r}, 'w').close()"
    cell.source = f"class Evil:\n    def __reduce__(self):\n        return (exec, ({attack!r},))\n{name} = Evil()"
    nbformat.write(nb, str(path))
    results = grade.grade_notebook(path)
    assert not marker.exists()
    bad = [r for r in results if r.status == "error"]
    assert len(bad) == 1 and "Evil" in bad[0].detail, [(r.task, r.status, r.detail) for r in results]
    assert results[0].passed  # the other tasks are graded


def test_a_learner_rewriting_the_checker_file_changes_no_verdict(tmp_path):
    """The learner's code appends to checking.py: the grader never imports what it wrote, and says so."""
    import qlesson

    pkg = tmp_path / "pkg"
    shutil.copytree(Path(qlesson.__file__).parent, pkg / "qlesson", ignore=shutil.ignore_patterns("__pycache__"))
    path = _copy(tmp_path)
    _edit(
        path,
        "def per_channel_scale",
        "import qlesson.course.checking as checking\n"
        "with open(checking.__file__, 'a') as f:\n"
        "    f.write('\\nsame = lambda *a, **k: True\\n')\n"
        "def per_channel_scale(w, bits):\n    return w.abs().amax(dim=0)",
    )
    import subprocess
    import sys

    code = (
        "from pathlib import Path; from qlesson.course import grade\n"
        f"args = Path({str(path)!r}), Path({str(ROOT / 'exercises')!r})\n"
        "check_files = grade._changed\n"
        "grade._changed = lambda *a: []  # the verdict alone, as if the rewrite went unnoticed\n"
        "print([(r.task, r.status) for r in grade.grade_notebook(*args) if r.task == '02.per_channel_scale'])\n"
        "grade._changed = check_files\n"
        "print({(r.status, r.detail) for r in grade.grade_notebook(*args)})"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(pkg)}
    real = Path(qlesson.__file__).parent / "course" / "checking.py"
    untouched = real.read_bytes()
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=pkg, capture_output=True, text=True, timeout=600)
    assert "same = lambda" in (pkg / "qlesson" / "course" / "checking.py").read_text(), out.stderr[-2000:]
    assert real.read_bytes() == untouched  # the attack ran on the copy only
    verdict, noticed = out.stdout.splitlines()[-2:]
    assert verdict == "[('02.per_channel_scale', 'fail')]", out.stdout + out.stderr
    assert noticed.startswith("{('error', \"your code changed the course's file qlesson/course/checking.py"), noticed


@pytest.mark.parametrize(
    "data",
    [
        __import__("pickle").dumps(("ok", 1)),
        b'{"tensor": {"dtype": "float32", "shape": [3], "data": "AAAA"}}',
        b'{"ndarray": {"dtype": "object", "shape": [1], "data": ""}}',
        b'{"module": "os", "name": "system"}',
        b"[" * 100_000,
    ],
    ids=["a pickle", "bytes short of the shape", "an object array", "an unknown kind", "deep nesting"],
)
def test_the_grader_decodes_plain_data_only(data):
    from qlesson.course import plain

    with pytest.raises(plain.NotPlain, match="the grader does not accept"):
        plain.decode(data)


def test_every_module_a_verdict_uses_is_imported_before_learner_code():
    import sys

    grade.preload()
    wanted = ["qlesson.course.checking", "qlesson.course.recall", "qlesson.quant.formats", "qlesson.teach.models"]
    wanted += [f"qlesson.lessons.{name}" for name in grade.lessons.numbers().values()]
    assert [m for m in wanted if m not in sys.modules] == []


def test_an_endless_loop_is_named_and_the_other_tasks_still_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(grade, "TASK_TIMEOUT_S", 2.0)
    path = _copy(tmp_path)
    _edit(path, "def per_channel_scale", "def per_channel_scale(w, bits):\n    while True:\n        pass")
    results = _results(path)
    r = results["02.per_channel_scale"]
    assert r.status == "error" and "02.per_channel_scale" in r.detail and "within 2 s" in r.detail, r.detail
    assert all(x.passed for k, x in results.items() if k != "02.per_channel_scale"), results


def test_a_copy_of_an_exercise_is_one_row_not_a_traceback(tmp_path):
    copy = tmp_path / "02_one_ruler_or_many-Copy1.ipynb"
    shutil.copy(SOLUTION_02, copy)
    folder_paths = grade.exercise_paths(folder=tmp_path)
    assert folder_paths == [copy]
    (r,) = grade.grade(folder_paths)
    assert r.status == "error" and "not a course exercise" in r.detail and "02_one_ruler_or_many.ipynb" in r.detail


def test_a_list_of_0d_tensors_is_as_good_as_a_tensor(tmp_path):
    path = _copy(tmp_path)
    _edit(
        path,
        "def per_channel_scale",
        "def per_channel_scale(w, bits):\n    return [row.abs().max() / (2 ** (bits - 1) - 1) for row in w]",
    )
    r = _results(path)["02.per_channel_scale"]
    assert r.passed, r.detail


def test_matplotlib_magics_in_an_answer_cell_are_fine(tmp_path):
    path = _copy(tmp_path)
    _edit(
        path,
        "def per_channel_scale",
        "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n"
        "def per_channel_scale(w, bits):\n    return w.abs().amax(dim=1) / (2 ** (bits - 1) - 1)",
    )
    r = _results(path)["02.per_channel_scale"]
    assert r.passed, r.detail


def test_a_value_task_never_prints_its_answer():
    from qlesson.course.checking import evaluate
    from qlesson.course.tasks import tasks

    v = evaluate(tasks()["04.q5_0_bits_per_weight"], 3.0)
    assert v.status == "fail" and "5.5" not in v.detail + v.summary and "expected" not in v.detail


def test_a_wrong_number_gets_its_explanation_only_after_three_tries(capsys):
    from qlesson.course import recall
    from qlesson.course.checking import CheckFailed

    q = recall.questions("01")[0]
    assert not recall.feedback(q, 0.7)[0] and q.why not in recall.feedback(q, 0.7)[1]
    assert q.why in recall.feedback(q, 0.7, reveal=True)[1]
    recall._tries.pop(("01", 1), None)
    for _ in range(recall.REVEAL_AFTER):
        with pytest.raises(CheckFailed):
            recall.answer("01", 1, 0.7)
    lines = capsys.readouterr().out.splitlines()
    assert [q.why in line for line in lines] == [False] * (recall.REVEAL_AFTER - 1) + [True]


@pytest.mark.parametrize("response", [10**400, "1,27", [1.27], "\u2212" * 3])
def test_odd_numeric_recall_responses_are_refused_with_a_message(response):
    from qlesson.course import recall

    ok, why = recall.feedback(recall.questions("01")[0], response)
    assert not ok and "answer with a number" in why


def test_a_number_written_as_a_string_or_with_a_unicode_minus_is_read():
    from qlesson.course import recall

    q = recall.questions("01")[0]
    assert recall.feedback(q, "1.27")[0] and not recall.feedback(q, "\u22121.27")[0]
    assert "-1.27 is not it" in recall.feedback(q, "\u22121.27")[1]


def test_a_folder_named_like_a_notebook_and_invalid_json_are_rows(tmp_path):
    (tmp_path / "01_the_ruler.ipynb").mkdir()
    (tmp_path / "02_one_ruler_or_many.ipynb").write_text("{ not json")
    results = grade.grade(grade.exercise_paths(folder=tmp_path))
    assert results and {r.status for r in results} == {"error"}
    named = {r.detail.split(":")[0] for r in results}
    assert named == {"cannot read 01_the_ruler.ipynb", "cannot read 02_one_ruler_or_many.ipynb"}


def test_a_cell_without_metadata_is_graded(tmp_path):
    import json

    path = _copy(tmp_path)
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        cell.pop("metadata", None)
    path.write_text(json.dumps(nb))
    results = grade.grade_notebook(path)
    assert results and all(r.passed for r in results), [(r.task, r.detail) for r in results if not r.passed]


def test_make_grade_prints_no_traceback_on_a_broken_folder(tmp_path, capsys, monkeypatch):
    (tmp_path / "01_the_ruler-Copy1.ipynb").write_text("{}")
    (tmp_path / "02_one_ruler_or_many.ipynb").mkdir()
    monkeypatch.setattr(grade, "EXERCISES", tmp_path)
    monkeypatch.setattr(grade.exercise_paths, "__defaults__", (None, tmp_path))
    assert grade.main([]) == 1
    out = capsys.readouterr().out
    assert "Traceback" not in out and "not a course exercise" in out and "cannot read" in out


@pytest.mark.parametrize(
    "number", ["3", 3.0, 10**400, True, 0, -1, None], ids=["str", "float", "huge", "bool", "zero", "negative", "none"]
)
def test_recall_answer_with_an_odd_question_number_is_one_short_line(number):
    from qlesson.course import recall

    words = r"number=.{1,40} is not a question of lesson 04; use a whole number from 1"
    with pytest.raises(ValueError, match=words) as err:
        recall.answer("04", number, 4.125)
    assert len(str(err.value)) < 200


SOLUTION_09 = ROOT / "exercises" / "solutions" / "09_smarter_rounding.ipynb"
IN_PLACE = (
    "def push_error(w, j, q_col, hinv):\n"
    "    err = (w[:, j] - q_col) / hinv[j, j]\n"
    "    w[:, j:] -= err[:, None] * hinv[j, j:]\n"
    "    return {ret}"
)


@pytest.mark.parametrize("ret", ["w", "w.clone()"])
def test_an_answer_that_changes_its_input_in_place_fails_where_the_task_asks_for_a_copy(tmp_path, ret):
    """09.push_error returns a new w: the right numbers written into the caller's w are a named failure."""
    path = _copy(tmp_path, SOLUTION_09)
    _edit(path, "def push_error(", IN_PLACE.format(ret=ret))
    r = _results(path)["09.push_error"]
    assert r.status == "fail" and "changed its input in place" in r.detail, (r.status, r.detail)


def test_the_same_answer_on_a_copy_passes(tmp_path):
    path = _copy(tmp_path, SOLUTION_09)
    _edit(path, "def push_error(", IN_PLACE.format(ret="w").replace("    err =", "    w = w.clone()\n    err =", 1))
    assert _results(path)["09.push_error"].passed

"""Exercises: learner versions come from the solutions, and grading judges behaviour.

Grading runs the learner's code in a separate process and checks their functions against the
course's own task list; these tests try the cheats and the false failures a learner can hit.
"""

import json
from pathlib import Path

import nbformat
import pytest

from qlesson.course import grade
from qlesson.course.exercises import learner_path, learner_version, recall_markdown

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "exercises" / "solutions").glob("[0-9][0-9]_*.ipynb"))
LEARNER = sorted((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))


def test_one_exercise_per_lesson():
    lessons = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb") if p.stem[:2] != "00")
    assert [p.stem for p in LEARNER] == lessons
    assert [p.stem for p in SOLUTIONS] == lessons


@pytest.mark.parametrize("sol", SOLUTIONS, ids=lambda p: p.stem)
def test_learner_version_is_generated_from_the_solution(sol):
    expected = learner_version(nbformat.read(str(sol), as_version=4))
    committed = nbformat.read(str(learner_path(sol)), as_version=4)
    assert json.dumps(committed, sort_keys=True) == json.dumps(expected, sort_keys=True), (
        "edit exercises/solutions/NN_*.py and run `make exercises N=NN`"
    )


@pytest.mark.parametrize("path", LEARNER, ids=lambda p: p.stem)
def test_learner_notebook_shape(path):
    nb = nbformat.read(str(path), as_version=4)
    answers = [c for c in nb.cells if "your-answer" in c.metadata.get("tags", [])]
    checks = [c for c in nb.cells if "check" in c.metadata.get("tags", [])]
    assert 3 <= len([c for c in checks if "recall" not in c.source]) <= 6
    assert len(answers) == len(checks) == len(grade.course_tasks(path.stem))
    for c in answers:
        assert not c.outputs and "BEGIN SOLUTION" not in c.source and "..." in c.source
    for c in checks:  # no stored pass that could pass for the learner's own
        assert not c.outputs and c.execution_count is None
    assert "SPOILERS" not in json.dumps(nb)


@pytest.mark.parametrize("path", LEARNER, ids=lambda p: p.stem)
def test_recall_text_in_the_exercise_matches_the_bank(path):
    nb = nbformat.read(str(path), as_version=4)
    shown = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("### Recall ")]
    keys = [t.key for t in grade.course_tasks(path.stem) if t.key.startswith("recall ")]
    assert len(shown) == len(keys)
    for text, key in zip(shown, keys, strict=True):
        lesson, number = key.split()[1].split(".")
        assert text == recall_markdown(lesson, int(number)), "run `make exercises` after changing recall questions"


@pytest.mark.parametrize("sol", SOLUTIONS, ids=lambda p: p.stem)
def test_solutions_are_stored_executed_so_nbval_compares_them(sol):
    """The learner copies are stored unexecuted on purpose (stubs; no stored pass); their solutions are
    what nbval checks, so each code cell must carry its run, in order, and every check cell its output."""
    code = [c for c in nbformat.read(str(sol), as_version=4).cells if c.cell_type == "code" and c.source.strip()]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "run `make exercises N=NN`"
    assert all(c.outputs for c in code if "check" in c.metadata.get("tags", [])), "a check cell stored no output"


@pytest.mark.parametrize("sol", SOLUTIONS, ids=lambda p: p.stem)
def test_every_solution_grades_all_green(sol):
    results = grade.grade_notebook(sol)
    assert results and all(r.passed for r in results), [(r.task, r.status, r.detail) for r in results if not r.passed]


def test_unsolved_notebooks_are_not_attempted_and_not_modified():
    before = {p: p.read_bytes() for p in LEARNER}
    results = grade.grade(LEARNER)
    assert all(p.read_bytes() == b for p, b in before.items())
    assert len(results) == sum(len(grade.course_tasks(p.stem)) for p in LEARNER)
    assert {r.status for r in results} == {"not attempted"}, [r for r in results if r.status != "not attempted"][:3]


def test_grade_cli_exit_codes(capsys):
    assert grade.main([str(next(p for p in SOLUTIONS if p.stem.startswith("04")))]) == 0
    out = capsys.readouterr().out
    n = len(grade.course_tasks(next(p for p in LEARNER if p.stem.startswith("04")).stem))
    assert f"total: {n} / {n} tasks pass" in out
    assert grade.main([str(next(p for p in LEARNER if p.stem.startswith("04")))]) == 0  # to do is not failing
    with pytest.raises(SystemExit, match="no exercise called 'nope'"):
        grade.main(["nope"])


@pytest.mark.parametrize("path", LEARNER, ids=lambda p: p.stem)
def test_recall_letters_vary_within_each_exercise(path):
    from qlesson.course.recall import Choice, questions

    letters = []
    for t in grade.course_tasks(path.stem):
        if t.key.startswith("recall "):
            lesson, number = t.key.split()[1].split(".")
            q = questions(lesson)[int(number) - 1]
            letters += [q.correct_letter()] if isinstance(q, Choice) else []
    assert len(set(letters)) >= 2, f"every multiple-choice answer is {letters}: answering one letter everywhere passes"


@pytest.mark.parametrize("sol", SOLUTIONS, ids=lambda p: p.stem)
def test_the_setup_cell_imports_what_the_answers_use(sol):
    cells = [c for c in nbformat.read(str(sol), as_version=4).cells if c.cell_type == "code"]
    answers = "\n".join(c.source for c in cells if "solution" in c.metadata.get("tags", []))
    setup = cells[0].source
    for module in ("torch", "np", "math"):
        if f"{module}." in answers.replace(f"import {module}", ""):
            assert f"import {module}" in setup or f"as {module}" in setup, f"the setup cell lacks `import {module}`"


def test_the_lessons_without_an_exercise_are_the_ones_readme_and_lesson_00_name():
    root = Path(__file__).resolve().parents[1]
    lessons = {p.name[:2] for p in (root / "notebooks").glob("[0-9][0-9]_*.py")}
    with_exercise = {p.name[:2] for p in (root / "exercises" / "solutions").glob("[0-9][0-9]_*.py")}
    assert lessons - with_exercise == {"00"}
    assert "except 00 (the start page) has an exercise" in " ".join((root / "README.md").read_text().split())
    assert "except this one has an exercise" in " ".join((root / "notebooks" / "00_start_here.py").read_text().split())

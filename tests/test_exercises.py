"""Exercises: learner versions come from the solutions, and grading is real."""

import hashlib
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from qlesson.course import grade
from qlesson.course.exercises import learner_path, learner_version
from qlesson.course.recall import Choice, bank

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "exercises" / "solutions").glob("[0-9][0-9]_*.ipynb"))
LEARNER = sorted((ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"))


def test_one_exercise_per_lesson():
    lessons = sorted(p.stem for p in (ROOT / "notebooks").glob("0[1-9]_*.ipynb") if p.stem != "07_calculator")
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
    assert len(answers) == len(checks)
    for c in answers:
        assert not c.outputs and "BEGIN SOLUTION" not in c.source and "..." in c.source
    for c in checks:
        assert c.outputs and "✓" in "".join(o.get("text", "") for o in c.outputs), c.source
    assert "SPOILERS" not in json.dumps(nb)


def test_unsolved_notebooks_fail_every_check_and_are_not_modified():
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in LEARNER}
    results = grade.grade(LEARNER)
    assert {hashlib.sha256(p.read_bytes()).hexdigest() for p in LEARNER} == set(before.values())
    n_checks = sum(len(grade._check_cells(p)) for p in LEARNER)
    assert len(results) == n_checks
    failing = [r for r in results if not r.passed]
    assert len(failing) == n_checks
    assert all("not attempted yet" in r.detail for r in failing), [r.detail for r in failing][:3]


def _solved_copy(tmp_path: Path, stem: str) -> Path:
    sol = next(p for p in SOLUTIONS if p.stem == stem)
    dst = tmp_path / sol.name
    shutil.copy(sol, dst)
    return dst


def test_a_solved_notebook_grades_all_green(tmp_path):
    path = _solved_copy(tmp_path, "02_one_ruler_or_many")
    results = grade.grade([path])
    assert results and all(r.passed for r in results), results


def test_a_wrong_answer_in_a_notebook_names_the_mistake(tmp_path):
    path = _solved_copy(tmp_path, "02_one_ruler_or_many")
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if "def per_channel_scale" in cell.source:
            cell.source = "def per_channel_scale(w, bits):\n    return w.abs().amax(dim=0) / 7"
    nbformat.write(nb, str(path))
    results = {r.task: r for r in grade.grade([path])}
    wrong = results["02.per_channel_scale"]
    assert not wrong.passed and "wrong axis" in wrong.detail
    assert results["02.per_tensor_scale"].passed


def test_grade_cli_exit_codes(tmp_path, capsys):
    assert grade.main([str(_solved_copy(tmp_path, "04_groups_and_formats"))]) == 0
    assert "total: 6 / 6 tasks pass" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no exercise called 'nope'"):
        grade.main(["nope"])


def test_recall_bank():
    for lesson, qs in bank().items():
        assert len(qs) >= 5, lesson
        for q in qs:
            if isinstance(q, Choice):
                assert sum(o.correct for o in q.options) == 1, q.prompt
                assert all(o.why for o in q.options)
    assert any(
        "Common wrong answer" in o.why for qs in bank().values() for q in qs if isinstance(q, Choice) for o in q.options
    )


def test_recall_numeric_answers_are_computed_facts():
    import torch

    import qlesson as ql
    from qlesson.course import recall
    from qlesson.quant import formats

    facts = {
        ("01", 1): 127 * 0.01,
        ("01", 2): 0.01 / 2,
        ("02", 6): int(ql.quantize(torch.tensor([[-2.0, -1.5, 1.0, 1.8]]), 8).q[0, 3]),
        ("03", 1): ql.scale_shape(ql.PerChannel(0), (64, 3, 3, 3))[0],
        ("04", 3): ql.footprint((4096, 4096), 4, ql.PerGroup(128)).bits_per_weight,
        ("04", 4): formats.bits_per_weight("Q4_0"),
        ("04", 6): ql.footprint((4, 1024), 4, ql.PerGroup(128)).n_scales,
        ("05", 2): int(ql.quantize(torch.tensor([-1.70, -0.94]), 8, symmetric=False, signed=False).zero_point),
        ("06", 2): 256 * 4096,
    }
    numeric = {(lesson, i + 1) for lesson, qs in bank().items() for i, q in enumerate(qs) if not isinstance(q, Choice)}
    assert numeric == set(facts)
    for (lesson, n), value in facts.items():
        ok, why = recall.feedback(bank()[lesson][n - 1], value)
        assert ok, (lesson, n, value, why)

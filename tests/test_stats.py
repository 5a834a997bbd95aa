"""The times a lesson states are the times it takes, and each lesson keeps to its budget.

``python -m qlesson stats`` computes an honest time from the stored notebooks (words read at 150 a
minute, printed output and markdown tables at 80, plus the stored run time, plus the exercise); the first cell of
each lesson and README's table state it. These tests keep the statements within 20%.
"""

import json
import re
from pathlib import Path

import nbformat
import pytest

from qlesson.course import stats

ROOT = Path(__file__).resolve().parents[1]
LESSONS = stats.lessons()
# lessons issue 30 has yet to cut (their times are stated truly, but they are over the budget)
OVER_BUDGET: set[str] = set()


@pytest.fixture(scope="module")
def rows():
    return {p.name[:2]: stats.lesson_stats(p) for p in LESSONS}


def test_every_lesson_has_a_stored_run_time(rows):
    assert set(stats.run_times()) >= set(rows), "run `python -m qlesson stats --measure NN` for the missing ones"


@pytest.mark.parametrize("number", [p.name[:2] for p in LESSONS])
def test_the_first_cell_states_the_honest_time(rows, number):
    r = rows[number]
    problems = [p for p in r.problems() if "states" in p]
    assert problems == [], f"{number}: {problems}; `python -m qlesson stats {number}`"


@pytest.mark.parametrize("number", [p.name[:2] for p in LESSONS if p.name[:2] not in OVER_BUDGET])
def test_within_budget(rows, number):
    problems = [p for p in rows[number].problems() if "states" not in p]
    assert problems == [], f"{number}: {problems}"


def _table_times_agree(text: str, rows, where: str, skip: tuple[str, ...] = ()):
    for number, r in rows.items():
        if number in skip:
            continue
        line = next((ln for ln in text.splitlines() if ln.lstrip("# ").startswith("|") and f"{number}_" in ln), None)
        assert line, f"{where}'s table has no row for lesson {number}"
        m = re.search(r"(\d+)(?: \+ (\d+))? min", line)
        assert m, f"{where}'s row for {number} states no time ('N + M min')"
        assert int(m.group(1)) == r.stated, f"{where} says {m.group(1)} min for {number}, the lesson {r.stated}"
        said_ex = int(m.group(2)) if m.group(2) else None
        assert said_ex == r.stated_exercise, (
            f"{where}'s exercise time for {number}: {said_ex}, lesson's {r.stated_exercise}"
        )


def test_readme_states_the_same_times(rows):
    _table_times_agree((ROOT / "README.md").read_text(), rows, "README")


def test_lesson_00s_course_map_states_the_same_times(rows):
    _table_times_agree((ROOT / "notebooks" / "00_start_here.py").read_text(), rows, "lesson 00", skip=("00",))


def _lesson(tmp_path: Path, header: str, main: str, deeper: str = "") -> Path:
    cells = [nbformat.v4.new_markdown_cell(header), nbformat.v4.new_markdown_cell(main)]
    code = nbformat.v4.new_code_cell("print(1)")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="one two three four\n")]
    cells.append(code)
    if deeper:
        cells.append(nbformat.v4.new_markdown_cell("## Going deeper\n\n" + deeper))
    path = tmp_path / "42_x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(path))
    return path


def test_going_deeper_is_counted_apart_and_an_untrue_time_is_caught(tmp_path):
    main = " ".join(["word"] * 1500)
    path = _lesson(tmp_path, "# 42\n\n**Time**: about 3 minutes.", main, deeper=" ".join(["more"] * 900))
    r = stats.lesson_stats(path, times={"42": {"main_s": 60.0}})
    assert (r.prose, r.output, r.code_cells) == (1500 + 5, 4, 1)  # the header's 5 words count too
    assert r.deeper_prose == 900 + 2
    assert r.minutes == pytest.approx(10.0 + 0.05 + 4 / 80 + 1 / 150 + 1.0, abs=0.1)
    assert any("states 3 minutes for the lesson" in p for p in r.problems())
    honest = stats.lesson_stats(_lesson(tmp_path, "**Time**: about 11 minutes.", main), times={"42": {"main_s": 60}})
    assert not [p for p in honest.problems() if "lesson" in p]


def test_going_deeper_time_is_computed_and_an_untrue_statement_is_caught(tmp_path):
    deeper = " ".join(["more"] * 1498)  # with the heading's 2 words: 1500 words, 10 minutes, plus 30 s of run time
    header = "**Time**: about 1 minutes; *Going deeper*: about {} more."
    for said, caught in ((10, False), (4, True)):
        path = _lesson(tmp_path, header.format(said), "Prose.", deeper=deeper)
        r = stats.lesson_stats(path, times={"42": {"main_s": 0.0, "deeper_s": 30.0}})
        assert (r.stated_deeper, r.deeper_minutes) == (said, pytest.approx(10.5, abs=0.05))
        assert any("for the Going deeper" in p for p in r.problems()) is caught
    unstated = stats.lesson_stats(_lesson(tmp_path, "**Time**: about 1 minutes.", "Prose.", deeper=deeper), times={})
    assert any("states no time for the Going deeper" in p for p in unstated.problems())


def test_a_markdown_table_is_read_like_printed_output(tmp_path):
    table = "\n".join(["| lesson | minutes |", "|---|---|"] + [f"| {i:02d} | {i} |" for i in range(40)])
    r = stats.lesson_stats(_lesson(tmp_path, "**Time**: about 3 minutes.", "Prose here.\n\n" + table), times={})
    plain = stats.lesson_stats(_lesson(tmp_path, "**Time**: about 3 minutes.", "Prose here."), times={})
    assert r.prose == plain.prose  # the table's 82 words are not prose
    assert r.output == plain.output + 2 + 40 * 2  # they are read at the printed-output rate
    assert r.minutes > plain.minutes + 82 / 80 - 0.1


def test_the_quiz_counts_a_minute_a_question_not_its_text_sheet(tmp_path):
    path = _lesson(tmp_path, "**Time**: about 3 minutes.", "Prose here.")
    nb = nbformat.read(str(path), as_version=4)
    sheet = nbformat.v4.new_code_cell('recall.show("42")')
    text = "1. A first question?\n   a) yes\n   b) no\n2. A second one, with " + "many words " * 40 + "\n"
    sheet.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": text}, execution_count=1)]
    nb.cells.append(sheet)
    nbformat.write(nb, str(path))
    r = stats.lesson_stats(path, times={})
    plain = stats.lesson_stats(_lesson(tmp_path, "**Time**: about 3 minutes.", "Prose here."), times={})
    assert r.output == plain.output  # the sheet's words are not read as output...
    assert r.minutes == pytest.approx(plain.minutes + 2 * stats.RECALL_MINUTES + 3 / 150, abs=0.06)  # ...2 questions


def test_over_budget_is_reported(tmp_path):
    path = _lesson(tmp_path, "**Time**: about 14 minutes.", " ".join(["word"] * 2100))
    r = stats.lesson_stats(path, times={"42": {"main_s": 61.0}})
    assert any("prose 2104 words > 2000" in p for p in r.problems())
    assert any("runs 61 s > 60 s" in p for p in r.problems())


def test_stated_reads_both_times():
    cells = [{"cell_type": "markdown", "source": "**Time**: about 12 minutes, plus about 15 for the exercise."}]
    assert stats.stated(cells) == (12, 15)
    assert stats.stated([{"cell_type": "markdown", "source": "no time"}]) == (None, None)


def test_the_command_prints_a_row_per_lesson_and_check_fails_on_a_problem(capsys, monkeypatch, tmp_path):
    assert stats.main(["--nope"]) == 2
    assert capsys.readouterr().out.startswith("usage")
    assert stats.main(["01"]) in (0, 1)
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:2] == ["lesson", "prose"] and out.splitlines()[1].split()[0] == "01"
    monkeypatch.setattr(stats, "RUN_TIMES", tmp_path / "none.json")
    assert stats.main(["--check", "01"]) == 1  # no stored run time is a problem
    assert "no stored run time" in capsys.readouterr().out


def test_run_times_file_is_well_formed():
    times = json.loads(stats.RUN_TIMES.read_text())
    assert all(set(v) == {"main_s", "deeper_s"} and v["main_s"] > 0 for v in times.values())

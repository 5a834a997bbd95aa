"""Predict-then-run widgets, hidden exercise cases, one-letter recall answers and the folded site."""

import nbformat
import pytest
import torch

from qlesson.course import recall, site
from qlesson.course.checking import Case, CheckFailed, Mistake, NotAttempted, Task, evaluate, run_task


def _task() -> Task:
    return Task(
        "99.double",
        "double it",
        lambda x: 2 * x,
        [
            Case((torch.tensor([2.0]),), "two: doubled or plus two agree"),
            Case((torch.tensor([123.0, -7.5]),), "the secret", hidden=True),
        ],
        "multiply by two",
        [Mistake("added two instead", lambda x: x + 2)],
    )


def test_a_hidden_case_that_fails_shows_no_inputs_no_label_and_no_expected_value(capsys):
    v = evaluate(_task(), lambda x: 2 * x if x.numel() == 1 else x * 3)
    assert v.status == "fail" and "a hidden case" in v.summary
    assert "123" not in v.detail and "246" not in v.detail and "secret" not in v.detail
    assert "expected" not in v.detail and "came back" not in v.detail
    named = evaluate(_task(), lambda x: x + 2 if x.numel() > 1 else 2 * x)
    assert named.mistake == "added two instead" and "246" not in named.detail
    with pytest.raises(CheckFailed):
        run_task(_task(), lambda x: x + 2 if x.numel() > 1 else 2 * x)
    assert "secret" not in capsys.readouterr().out


def test_a_hidden_case_that_passes_is_listed_without_its_label(capsys):
    run_task(_task(), lambda x: x * 2)
    out = capsys.readouterr().out
    assert "case 2: a hidden case" in out and "secret" not in out


@pytest.mark.parametrize("response", ["", "ab", "abc", "bc", " "])
def test_a_recall_answer_is_exactly_one_letter(response):
    q = recall.questions("01")[0]
    ok, why = recall.feedback(q, response) if isinstance(q, recall.Choice) else (False, "not an option")
    assert not ok


def test_a_blank_recall_answer_is_not_attempted():
    with pytest.raises(NotAttempted):
        recall.answer("01", 1, "  ")


@pytest.fixture
def guess(monkeypatch):
    """Lesson 01 with one prediction of the test's own, whatever the lesson defines."""
    from qlesson import lessons

    q = recall.choice("Which is larger?", ("2", True, "two is more"), ("1", False, "one is less"))
    monkeypatch.setattr(lessons.module("01"), "PREDICT", {"larger": q}, raising=False)
    return "01", "larger"


def test_every_prediction_is_well_formed_and_has_its_why():
    for number in ("01", "02", "03", "04", "05", "07", "08", "10", "11"):
        for key, q in recall.predictions(number).items():
            assert isinstance(q, recall.Choice) and all(o.why for o in q.options), (number, key)
            text = repr(recall.PredictionSheet(number, key))
            assert text.startswith("Predict: ") and "a) " in text and "b) " in text
    with pytest.raises(ValueError, match="has no prediction"):
        recall.predict("01", "no such key")


def test_the_prediction_widget_locks_before_it_explains(guess):
    number, key = guess
    box = recall.predict(number, key)
    _prompt, pick, buttons, out = box.children
    lock, explain = buttons.children
    assert explain.layout.display == "none"
    lock.click()
    assert out.value == "Pick a letter first." and not pick.disabled
    pick.value = "a"
    lock.click()
    assert pick.disabled and explain.layout.display is None and "Locked in: a" in out.value
    explain.click()
    assert out.value.startswith(("✓ right", "✗ not this one"))


def test_the_numeric_quiz_box_starts_empty_so_an_empty_check_asks_for_an_answer():
    number = next(n for n, qs in recall.bank().items() if any(isinstance(q, recall.Numeric) for q in qs))
    box = recall.quiz(number)
    i = next(i for i, q in enumerate(recall.questions(number)) if isinstance(q, recall.Numeric))
    _title, pick, row = box.children[i].children
    button, out = row.children
    assert pick.value == ""
    for _ in range(recall.REVEAL_AFTER):
        button.click()
    assert out.value == "Pick an answer first."


def test_the_site_folds_going_deeper_and_makes_predictions_static(guess):
    number, key = guess
    cell = nbformat.v4.new_code_cell(f'recall.predict("{number}", "{key}")')
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/plain": "VBox()"})]
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# T\n\nmain line"),
            cell,
            nbformat.v4.new_markdown_cell("## Going deeper\n\nfolded text"),
        ]
    )
    page = site.render(site.for_the_web(nb), "T", "nav")
    assert "<b>Predict:</b>" in page and "After the next cell: the answer" in page
    assert page.index('<details class="ql-deeper">') < page.index("folded text") < page.index("</details><nav")
    assert page.index("main line") < page.index('<details class="ql-deeper">')


def test_exercise_only_questions_are_numbered_after_the_quiz_and_left_out_of_it(monkeypatch):
    """A lesson's EXERCISE_RECALL follows its RECALL in one numbering; the lesson's quiz shows RECALL only."""
    from qlesson import lessons

    module = lessons.module("01")
    extra = recall.Numeric("How many codes has a 3-bit restricted ruler?", 7, "-3..3: 2**3 - 1 codes.")
    monkeypatch.setattr(module, "EXERCISE_RECALL", (extra,), raising=False)
    n = len(module.RECALL)
    assert recall.questions("01")[n].prompt == extra.prompt
    assert len(recall.quiz_questions("01")) == n
    assert extra.prompt not in recall.text("01")
    recall.answer("01", n + 1, 7)

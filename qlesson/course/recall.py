"""Recall questions for every lesson: multiple choice with an explanation for every option,
and short numeric questions checked with a tolerance.

In a notebook :func:`quiz` renders a lesson's questions as widgets (options, a Check button,
feedback). Without widgets, :func:`answer` checks one response and prints the feedback, so
an exercise notebook graded by nbval can use it:

>>> answer("04", 2, 4.125)
✓ correct: 4 bits of code plus 16 bits of fp16 scale shared by 128 weights: 4 + 16/128.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from dataclasses import dataclass, replace
from typing import Any

from qlesson.course.checking import CheckFailed, NotAttempted


@dataclass(frozen=True)
class Option:
    text: str
    correct: bool
    why: str


LETTERS = "abcdefgh"


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question, written with its correct option anywhere.

    Learners see the options in :meth:`shown` order: the correct one at ``position`` (which
    :func:`bank` assigns so that, within a lesson, the correct letter cycles through a, b, c,
    ...) and the others in a fixed order derived from their text; stable from run to run.
    """

    prompt: str
    options: tuple[Option, ...]
    source: str = ""
    position: int = 0

    def __post_init__(self) -> None:
        if sum(o.correct for o in self.options) != 1 or not 2 <= len(self.options) <= len(LETTERS):
            raise ValueError(f"{self.prompt!r}: a choice needs 2 to 8 options, exactly one correct")

    def shown(self) -> tuple[Option, ...]:
        """The options in the order learners see them: the correct one at ``position``."""
        wrong = sorted(
            (o for o in self.options if not o.correct),
            key=lambda o: hashlib.sha256(f"{self.prompt}|{o.text}".encode()).hexdigest(),
        )
        right = next(o for o in self.options if o.correct)
        at = self.position % len(self.options)
        return (*wrong[:at], right, *wrong[at:])

    def correct_letter(self) -> str:
        return LETTERS[[o.correct for o in self.shown()].index(True)]


@dataclass(frozen=True)
class Numeric:
    """A question answered with a number, accepted within ``tol`` (absolute) of ``answer``.

    ``mistakes`` are (value, why) pairs for the wrong numbers the lesson warns about; each
    must lie outside the tolerance, so a named mistake can never pass.
    """

    prompt: str
    answer: float
    why: str
    tol: float = 0.0
    mistakes: tuple[tuple[float, str], ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        for value, why in self.mistakes:
            if abs(value - self.answer) <= self.tol:
                raise ValueError(f"{self.prompt!r}: mistake {value} ({why}) lies within tol {self.tol} of the answer")


Question = Choice | Numeric


def choice(prompt: str, *options: tuple[str, bool, str], source: str = "") -> Choice:
    """A :class:`Choice` from ``(text, correct, why)`` tuples."""
    return Choice(prompt, tuple(Option(*o) for o in options), source)


LESSON = "lesson (source: Pause and recall)"
INTERVIEW = "interview question (common wrong answer included)"


def bank() -> dict[str, tuple[Question, ...]]:
    """Every lesson's recall questions, by lesson number: each lesson module's ``RECALL`` (the lesson's quiz),
    then its ``EXERCISE_RECALL`` (asked only in the exercise, numbered after the quiz's)."""
    from qlesson import lessons

    out = {}
    for number in lessons.numbers():
        module = lessons.module(number)
        qs = [*getattr(module, "RECALL", ()), *getattr(module, "EXERCISE_RECALL", ())]
        k = 0
        for i, q in enumerate(qs):
            if isinstance(q, Choice):  # the correct letter cycles, starting at a lesson-dependent one
                qs[i] = replace(q, position=(k + int(number)) % len(q.options))
                k += 1
        if qs:
            out[number] = tuple(qs)
    return out


def questions(lesson: str) -> tuple[Question, ...]:
    """The questions of ``lesson`` ("01", "02", ...)."""
    every = bank()
    if lesson not in every:
        raise ValueError(f"no recall questions for lesson {lesson!r}; use one of {', '.join(every)}")
    return every[lesson]


def quiz_questions(lesson: str) -> tuple[Question, ...]:
    """The questions of ``lesson``'s own quiz (its ``RECALL``): :func:`questions` less the exercise-only ones."""
    from qlesson import lessons

    return questions(lesson)[: len(getattr(lessons.module(lesson), "RECALL", ()))]


REVEAL_AFTER = 3  # wrong tries before a numeric question's explanation is shown
_AGAIN = "go back to the lesson's section on it and try again"
_tries: dict[tuple[str, int], int] = {}


def feedback(q: Question, response: Any, reveal: bool = False) -> tuple[bool, str]:
    """(correct?, explanation) for a response: an option letter ("a", "b", ...) or a number.

    A wrong number that is not a known mistake gets the explanation only with ``reveal`` (after
    :data:`REVEAL_AFTER` tries), so the feedback never hands out the answer to a guess.
    """
    if isinstance(q, Numeric):
        try:
            value = float(response.replace("\u2212", "-") if isinstance(response, str) else response)
        except OverflowError:
            return False, "that number is too large for a float; answer with a number such as 0.5"
        except (TypeError, ValueError):
            what = repr(response[:40]) if isinstance(response, str) else f"a {type(response).__name__}"
            return False, f"{what} is not a number; answer with a number such as 0.5"
        if not math.isfinite(value):
            return False, f"{value} is not a finite number; answer with a number such as 0.5"
        if abs(value - q.answer) <= q.tol:
            return True, q.why
        for wrong, why in q.mistakes:
            if abs(value - wrong) <= q.tol:
                return False, f"{value:g}: {why}"
        return False, f"{value:g} is not it. {q.why}" if reveal else f"{value:g} is not it; {_AGAIN}"
    shown = q.shown()
    letters = LETTERS[: len(shown)]
    key = str(response).strip().lower().rstrip(")")
    if len(key) != 1 or key not in letters:  # one letter: "" and "ab" are in "abcd" as substrings
        return False, f"{response!r} is not an option; answer with one of {', '.join(letters)}"
    opt = shown[letters.index(key)]
    return opt.correct, opt.why


def answer(lesson: str, number: int, response: Any) -> None:
    """Check one response (question ``number`` counts from 1); prints feedback, raises if wrong."""
    qs = questions(lesson)
    if isinstance(number, bool) or not isinstance(number, numbers.Integral) or not 1 <= number <= len(qs):
        shown = repr(number) if len(repr(number)) <= 40 else repr(number)[:37] + "..."
        raise ValueError(f"number={shown} is not a question of lesson {lesson}; use a whole number from 1 to {len(qs)}")
    if response is None or response is Ellipsis or (isinstance(response, str) and not response.strip()):
        raise NotAttempted(f"recall {lesson}.{number}: not attempted yet")
    tries = _tries[lesson, number] = _tries.get((lesson, number), 0) + 1
    ok, why = feedback(qs[number - 1], response, reveal=tries >= REVEAL_AFTER)
    if not ok:
        print(f"✗ {why}")
        raise CheckFailed(f"recall {lesson}.{number}: {why}")
    print(f"✓ correct: {why}")


def text(lesson: str) -> str:
    """The questions as plain text, with lettered options (for a page without widgets)."""
    lines = []
    for i, q in enumerate(quiz_questions(lesson), start=1):
        lines.append(f"{i}. {q.prompt}")
        if isinstance(q, Choice):
            lines += [f"   {LETTERS[j]}) {o.text}" for j, o in enumerate(q.shown())]
    return "\n".join(lines)


class Sheet:
    """A lesson's recall questions for a page without widgets.

    Its plain-text form (what nbval compares) lists the questions; its HTML form adds each answer
    and its explanation, folded in a ``<details>`` block. In a notebook the whole sheet is folded
    too (the quiz widget above it asks the same questions); the static site shows :meth:`page_html`.
    """

    def __init__(self, lesson: str) -> None:
        self.lesson = lesson
        self.questions = quiz_questions(lesson)

    def __repr__(self) -> str:
        return text(self.lesson)

    def _repr_html_(self) -> str:
        """In a notebook the quiz widget above already asks these questions: the sheet comes folded, one line."""
        return (
            "<details><summary>The same questions as a sheet, answers folded (for a page without widgets)"
            "</summary>" + self.page_html() + "</details>"
        )

    def page_html(self) -> str:
        """The questions with each answer folded: the static site's quiz, where no widget runs."""
        from html import escape

        parts = []
        for i, q in enumerate(self.questions, start=1):
            body = f"<p><b>{i}. {escape(q.prompt)}</b></p>"
            if isinstance(q, Choice):
                shown = q.shown()
                # the letter is part of the text: list numbering is restyled by every host (JupyterLab's own
                # ol rule shows 1, 2, 3), while the answers and the feedback name options by letter
                items = "".join(f"<li>{LETTERS[j]}) {escape(o.text)}</li>" for j, o in enumerate(shown))
                body += f"<ul style='list-style: none; padding-left: 1.2em'>{items}</ul>"
                right = next(o for o in shown if o.correct)
                answer = f"{q.correct_letter()}) {escape(right.text)}: {escape(right.why)}"
            else:
                answer = f"{q.answer:g}: {escape(q.why)}"
            parts.append(f"{body}<details><summary>Answer</summary><p>{answer}</p></details>")
        return "<div class='ql-recall'>" + "".join(parts) + "</div>"


def show(lesson: str) -> Sheet:
    """The questions as text, with the answers folded in the HTML view (static pages).

    >>> print(repr(show("04")).splitlines()[0])
    1. One weight in a row of 4096 is 50x the others. At int4 with groups of 32, which weights does it coarsen?
    >>> "<details>" in show("04")._repr_html_()
    True
    """
    return Sheet(lesson)


def quiz(lesson: str) -> Any:
    """A widget with every question of ``lesson``: options or a number box, Check, and feedback."""
    import ipywidgets as W

    boxes = []
    for i, q in enumerate(quiz_questions(lesson), start=1):
        if isinstance(q, Choice):
            pick = W.RadioButtons(
                options=[(f"{LETTERS[j]}) {o.text}", LETTERS[j]) for j, o in enumerate(q.shown())],
                value=None,
                layout=W.Layout(width="auto"),
            )
        else:  # a text box: FloatText(value=None) would start at 0.0, a number that can be checked
            pick = W.Text(value="", placeholder="a number", description="answer")
        button = W.Button(description="Check")
        out = W.HTML()

        count = [0]  # wrong tries of this question

        def on_click(_b: Any, q: Question = q, pick: Any = pick, out: Any = out, tries: list[int] = count) -> None:
            if pick.value is None or not str(pick.value).strip():
                out.value = "Pick an answer first."
                return
            tries[0] += 1
            ok, why = feedback(q, pick.value, reveal=tries[0] >= REVEAL_AFTER)
            out.value = f"{'✓ correct' if ok else '✗ not quite'}: {why}"

        button.on_click(on_click)
        boxes.append(W.VBox([W.HTML(f"<b>{i}. {q.prompt}</b>"), pick, W.HBox([button, out])]))
    return W.VBox(boxes)


def predictions(lesson: str) -> dict[str, Choice]:
    """The predict-then-run questions of ``lesson`` (its module's ``PREDICT``), correct letters cycling.

    >>> predictions("99")
    Traceback (most recent call last):
    ...
    ValueError: no lesson '99'; use one of 00, 01, 02, 03, 04, 05, 06, 07, 08, 09, 10, 11
    """
    from qlesson import lessons

    if lesson not in lessons.numbers():
        raise ValueError(f"no lesson {lesson!r}; use one of {', '.join(lessons.numbers())}")
    raw = dict(getattr(lessons.module(lesson), "PREDICT", {}))
    return {key: replace(q, position=(k + int(lesson) + 1) % len(q.options)) for k, (key, q) in enumerate(raw.items())}


def _prediction(lesson: str, key: str) -> Choice:
    every = predictions(lesson)
    if key not in every:
        known = ", ".join(repr(k) for k in every) or "none"
        raise ValueError(f"lesson {lesson} has no prediction {key!r}; its predictions: {known}")
    return every[key]


class PredictionSheet:
    """A prediction for a page without widgets: the question and its options; the HTML folds the answer."""

    def __init__(self, lesson: str, key: str) -> None:
        self.question = _prediction(lesson, key)

    def __repr__(self) -> str:
        q = self.question
        lines = [f"Predict: {q.prompt}", *(f"   {LETTERS[j]}) {o.text}" for j, o in enumerate(q.shown()))]
        return "\n".join([*lines, "Commit to a letter, then run the next cell."])

    def _repr_html_(self) -> str:
        from html import escape

        q = self.question
        shown = q.shown()
        items = "".join(f"<li>{LETTERS[j]}) {escape(o.text)}</li>" for j, o in enumerate(shown))
        right = next(o for o in shown if o.correct)
        return (
            f"<div class='ql-predict'><p><b>Predict:</b> {escape(q.prompt)}</p>"
            f"<ul style='list-style: none; padding-left: 1.2em'>{items}</ul>"
            f"<details><summary>After the next cell: the answer</summary><p>{q.correct_letter()}) "
            f"{escape(right.text)}: {escape(right.why)}</p></details></div>"
        )


def predict(lesson: str, key: str) -> Any:
    """Commit to a prediction before the next cell shows the result: options, **Lock in**, then **Explain**.

    The explanation of the chosen option (and the right one) appears only after locking in.
    Without ipywidgets, the :class:`PredictionSheet` (text, with the answer folded in HTML).
    """
    q = _prediction(lesson, key)
    try:
        import ipywidgets as W
    except ImportError:  # pragma: no cover - ipywidgets is pinned; a page without it gets the sheet
        return PredictionSheet(lesson, key)
    shown = q.shown()
    pick = W.RadioButtons(
        options=[(f"{LETTERS[j]}) {o.text}", LETTERS[j]) for j, o in enumerate(shown)],
        value=None,
        layout=W.Layout(width="auto"),
    )
    lock, explain, out = W.Button(description="Lock in"), W.Button(description="Explain"), W.HTML()
    explain.layout.display = "none"

    def on_lock(_b: Any) -> None:
        if pick.value is None:
            out.value = "Pick a letter first."
            return
        pick.disabled = lock.disabled = True
        explain.layout.display = None
        out.value = f"Locked in: {pick.value}. Run the next cell, then press Explain."

    def on_explain(_b: Any) -> None:
        ok, why = feedback(q, pick.value)
        text = f"{'✓ right' if ok else '✗ not this one'}: {why}"
        if not ok:
            right = next(o for o in shown if o.correct)
            text += f"<br>The answer is {q.correct_letter()}) {right.text}: {right.why}"
        out.value = text

    lock.on_click(on_lock)
    explain.on_click(on_explain)
    return W.VBox([W.HTML(f"<b>Predict:</b> {q.prompt}"), pick, W.HBox([lock, explain]), out])

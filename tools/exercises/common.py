"""Cell helpers for the exercise solution notebooks (the single source of truth)."""

from inspect import cleandoc

import nbformat

from qlesson.notebook_tools import code, md


def header(number: str, title: str, lesson: str, learn: str) -> list:
    spoiler = nbformat.v4.new_markdown_cell(
        "> **SPOILERS.** This is the solution notebook. The exercise is `exercises/"
        f"{lesson}.ipynb`; try it first."
    )
    spoiler.metadata["tags"] = ["solutions-only"]
    return [
        spoiler,
        md(
            f"""
            # Exercise {number} · {title} (SOLUTIONS: spoilers)

            Practice for lesson `notebooks/{lesson}.ipynb`. {learn}

            **How it works.** Each task has a cell for your answer (it starts as a stub: `...`) and a
            check cell right below it. Write your code, run your cell, then run the check. A pass
            prints one `✓` line per test case; a failure shows the first failing input, what came
            back, what was expected and a hint. The check cells already show the `✓` lines a correct
            answer prints: that stored output is what grading compares against, not a sign that
            you have passed. When you are done, grade everything from the repo root with
            `make grade` (or `python -m qlesson.grade {number}`); it never changes your notebooks.
            """
        ),
        code(
            """
            import torch

            import qlesson as ql
            from qlesson import recall
            from qlesson.tasks import check
            """
        ),
    ]


def answer(source: str):
    cell = code(source)
    cell.metadata["tags"] = ["solution"]
    return cell


def check(task_id: str, name: str):
    cell = code(f'check("{task_id}", {name})')
    cell.metadata["tags"] = ["check"]
    cell.metadata["qlesson"] = {"task": task_id}
    return cell


def recall_task(lesson: str, number: int, solution: str) -> list:
    from qlesson.recall import questions, Choice

    q = questions(lesson)[number - 1]
    text = q.prompt
    if isinstance(q, Choice):
        text += "\n\n" + "\n".join(f"- **{'abcdefgh'[j]})** {o.text}" for j, o in enumerate(q.options))
    var = f"recall_{number}"
    chk = code(f'recall.answer("{lesson}", {number}, {var})')
    chk.metadata["tags"] = ["check"]
    chk.metadata["qlesson"] = {"task": f"recall {lesson}.{number}"}
    return [
        md(f"### Recall {lesson}.{number}\n\n{text}\n\nAnswer with the option letter or a number."),
        answer(f"{var} = ...  # STUB\n# BEGIN SOLUTION\n{var} = {solution}\n# END SOLUTION"),
        chk,
    ]


__all__ = ["answer", "check", "cleandoc", "code", "header", "md", "recall_task"]

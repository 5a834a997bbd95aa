"""The task registry: every lesson's ``TASKS`` (in :mod:`qlesson.lessons`), by task id.

Learners call :func:`check` from a check cell, passing their function (or value) in:

>>> check("04.q5_0_bits_per_weight", 5.5)
✓ 04.q5_0_bits_per_weight case 1: one Q5_0 block of 32 weights
"""

from __future__ import annotations

from typing import Any

from qlesson import lessons
from qlesson.course.checking import Task, run_task

_TASKS: dict[str, Task] | None = None


def tasks() -> dict[str, Task]:
    """All tasks by id, gathered once from the lesson modules."""
    global _TASKS
    if _TASKS is None:
        _TASKS = {}
        for number in lessons.numbers():
            for task in getattr(lessons.module(number), "TASKS", []):
                if not task.task_id.startswith(f"{number}."):
                    raise ValueError(
                        f"task {task.task_id!r} is defined in lesson {number}; its id must start {number}."
                    )
                _TASKS[task.task_id] = task
    return _TASKS


def check(task_id: str, answer: Any) -> None:
    """Grade ``answer`` for ``task_id``: ✓ lines on success, a clear failure otherwise."""
    all_tasks = tasks()
    if task_id not in all_tasks:
        raise ValueError(f"unknown task {task_id!r}; known tasks: {', '.join(all_tasks)}")
    run_task(all_tasks[task_id], answer)

"""The task registry: every lesson's ``TASKS`` (in :mod:`qlesson.lessons`), by task id.

Learners call :func:`check` from a check cell, passing their function (or value) in:

>>> check("04.q5_0_bits_per_weight", 5.5)
✓ 04.q5_0_bits_per_weight case 1: one Q5_0 block of 32 weights
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from qlesson import lessons
from qlesson.course.checking import Task, run_task

_TASKS: dict[str, Task] | None = None


def _asym_roundtrip_times_inverse(x: torch.Tensor, bits: int) -> torch.Tensor:
    """05.asymmetric_roundtrip as PyTorch's ``fake_quantize_per_tensor_affine`` computes it: ``x * (1 / scale)``.

    The task text does not ask to divide, and multiplying by ``1 / scale`` moves an exact tie by an ulp
    (``1.2 / 0.096`` is 12.5 in float32, ``1.2 * (1 / 0.096)`` just above it), so this form is right too.
    """
    lo, hi = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (hi - lo) / (2**bits - 1)
    if scale == 0:
        return torch.zeros_like(x)
    zp = torch.clamp(torch.round(-lo / scale), 0, 2**bits - 1)
    return (torch.clamp(torch.round(x * (1 / scale)) + zp, 0, 2**bits - 1) - zp) * scale


# Right answers the lesson's task does not list yet (each belongs in its Task's ``also_correct``).
_ALSO_CORRECT: dict[str, tuple[Callable[..., Any], ...]] = {
    "05.asymmetric_roundtrip": (_asym_roundtrip_times_inverse,),
}


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
                extra = [f for f in _ALSO_CORRECT.get(task.task_id, ()) if f not in task.also_correct]
                task.also_correct = (*task.also_correct, *extra)
                _TASKS[task.task_id] = task
    return _TASKS


def check(task_id: str, answer: Any) -> None:
    """Grade ``answer`` for ``task_id``: ✓ lines on success, a clear failure otherwise."""
    all_tasks = tasks()
    if task_id not in all_tasks:
        raise ValueError(f"unknown task {task_id!r}; known tasks: {', '.join(all_tasks)}")
    run_task(all_tasks[task_id], answer)

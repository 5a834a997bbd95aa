"""The checker engine behind every exercise: data-driven cases, friendly failures.

A task is a list of cases (inputs and the expected answer) plus a list of typical
mistakes, each a small wrong implementation with a description. ``run_task`` calls the
learner's function (passed in explicitly) on every case:

* pass: one ``✓`` line per case;
* a stub (``...``, ``pass``, ``None``, ``NotImplementedError``): ``NotAttempted``;
* a wrong answer: the first failing input, what came back, what was expected, the named
  mistake if the answer matches a known one, and a hint; then ``CheckFailed`` is raised,
  so the check fails even if a wrong output was saved into the notebook.

Both exceptions render in Jupyter as their message alone, without a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch


class _Friendly(Exception):
    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"{type(self).__name__}: {line}" if i == 0 else line for i, line in enumerate(str(self).splitlines())]


class NotAttempted(_Friendly):
    """The learner's cell still holds the stub."""


class CheckFailed(_Friendly):
    """A case came back wrong; the message says which, and why if the mistake is a known one."""


@dataclass(frozen=True)
class Case:
    """Inputs for one check; ``args`` may be a zero-argument callable for expensive inputs."""

    args: tuple | Callable[[], tuple]
    label: str

    def resolve(self) -> tuple:
        return self.args() if callable(self.args) else self.args


@dataclass(frozen=True)
class Mistake:
    description: str
    fn: Callable[..., Any]


@dataclass
class Task:
    """One exercise task: a reference solution, the cases, known mistakes and a hint."""

    task_id: str
    title: str
    reference: Callable[..., Any]
    cases: Sequence[Case]
    hint: str
    mistakes: Sequence[Mistake] = field(default_factory=tuple)
    rtol: float = 1e-5
    atol: float = 1e-6
    is_value: bool = False  # the learner gives a value, not a function


def _as_tensor(v: Any) -> torch.Tensor | None:
    if isinstance(v, torch.Tensor):
        return v.detach().double().cpu()
    if isinstance(v, np.ndarray):
        return torch.from_numpy(np.asarray(v, dtype=np.float64))
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return torch.tensor(float(v), dtype=torch.float64)
    return None


def same(got: Any, expected: Any, rtol: float, atol: float, broadcast: bool = False) -> bool:
    """Numbers, tensors and tuples of them, compared with a tolerance and by shape.

    ``broadcast`` (used to recognise mistakes) also accepts shapes that broadcast together,
    so a per-tensor scalar matches a per-channel vector filled with that scalar.
    """
    if isinstance(expected, tuple):
        return (
            isinstance(got, (tuple, list))
            and len(got) == len(expected)
            and all(same(g, e, rtol, atol, broadcast) for g, e in zip(got, expected, strict=True))
        )
    g, e = _as_tensor(got), _as_tensor(expected)
    if e is None:
        return got == expected
    if g is None:
        return False
    if broadcast and g.shape != e.shape:
        try:
            g, e = torch.broadcast_tensors(g, e)
        except RuntimeError:
            return False
    if g.shape != e.shape:
        return g.numel() == 1 and e.numel() == 1 and bool(torch.isclose(g.flatten(), e.flatten(), rtol, atol).all())
    return bool(torch.allclose(g, e, rtol=rtol, atol=atol))


def _show(v: Any) -> str:
    if isinstance(v, tuple):
        return "(" + ", ".join(_show(x) for x in v) + ")"
    t = _as_tensor(v)
    if t is None:
        return repr(v)
    if t.ndim == 0:
        return f"{float(t):.6g}"
    flat = ", ".join(f"{x:.4g}" for x in t.flatten()[:8].tolist())
    more = ", ..." if t.numel() > 8 else ""
    return f"shape {tuple(t.shape)}: [{flat}{more}]"


def _is_stub(value: Any) -> bool:
    return value is None or value is Ellipsis


def run_task(task: Task, answer: Any) -> None:
    """Check ``answer`` (a function, or a value for value tasks) against every case of ``task``."""
    if _is_stub(answer):
        raise NotAttempted(
            f"{task.task_id} ({task.title}): not attempted yet. Fill in the cell above, run it, then this one."
        )
    for i, case in enumerate(task.cases, start=1):
        args = case.resolve()
        expected = task.reference(*args)
        if task.is_value:
            got = answer
        else:
            try:
                got = answer(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
            except NotImplementedError:
                raise NotAttempted(f"{task.task_id} ({task.title}): not attempted yet (NotImplementedError).") from None
            if _is_stub(got):
                raise NotAttempted(
                    f"{task.task_id} ({task.title}): not attempted yet (your function returned {got!r})."
                )
        if not same(got, expected, task.rtol, task.atol):
            named = [m.description for m in task.mistakes if _matches(m, args, got, task)]
            lines = [
                f"{task.task_id} ({task.title}): case {i} failed: {case.label}",
                f"  came back: {_show(got)}",
                f"  expected:  {_show(expected)}",
            ]
            if named:
                lines.append(f"  mistake: {named[0]}")
            lines.append(f"  hint: {task.hint}")
            print("\n".join(lines))
            summary = f"{task.task_id} case {i} failed"
            if named:
                summary += f"; mistake: {named[0]}"
            raise CheckFailed(f"{summary}; hint: {task.hint}")
        print(f"✓ {task.task_id} case {i}: {case.label}")


def _matches(m: Mistake, args: tuple, got: Any, task: Task) -> bool:
    try:
        wrong = m.fn(*args)
    except Exception:  # a mistake that cannot even run on this case cannot be the one made
        return False
    return same(got, wrong, task.rtol, task.atol, broadcast=True)

"""The checker engine behind every exercise: data-driven cases, named mistakes, one verdict.

A task is a list of cases (inputs), a reference implementation and a list of typical
mistakes, each a small wrong implementation with a description. :func:`evaluate` calls the
learner's function (passed in explicitly) on every case and returns a :class:`Verdict`:

* ``pass``: every case agrees with the reference;
* ``not attempted``: a stub (``...``, ``pass``, ``None``, ``NotImplementedError``) on every case;
* ``fail``: the first failing case, what came back, what was expected, the named mistake
  (only when the answer agrees with that mistake on *every* case, so a mistake is never
  named for an answer that merely coincides with it once) or, where no mistake is named, the
  task's hint; a case that came back
  ``None`` while others did not, a tensor argument changed in place, and right values in the
  wrong shape (``[N, 1]`` for ``[N]``) are each said as such;
* ``error``: the function raised.

:func:`run_task` is what a check cell calls: it prints one ``✓`` line per case, or the
failure, and raises so a wrong answer never looks green. ``python -m qlesson grade`` uses
:func:`evaluate` directly, in its own process (see :mod:`qlesson.course.grade`).

>>> t = Task("demo.double", "double it", lambda x: 2 * x, [Case((1.0,), "one"), Case((3.0,), "three")],
...          "multiply by 2", [Mistake("added 2 instead of doubling", lambda x: x + 2)])
>>> evaluate(t, lambda x: x + x).status
'pass'
>>> evaluate(t, lambda x: x + 2).mistake
'added 2 instead of doubling'
>>> evaluate(t, lambda x: 4.0 if x == 3.0 else 2 * x).mistake is None  # agrees with x + 2 on one case only
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch


class _Friendly(Exception):
    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"{type(self).__name__}: {line}" if i == 0 else line for i, line in enumerate(str(self).splitlines())]


class RaisedElsewhere(Exception):
    """The learner's code raised in another process; the message is already ``Type: message``."""


class NotAttempted(_Friendly):
    """The learner's cell still holds the stub."""


class CheckFailed(_Friendly):
    """A case came back wrong; the message says which, and why if the mistake is a known one."""


@dataclass(frozen=True)
class Case:
    """Inputs for one check; ``args`` may be a zero-argument callable for expensive inputs.

    A ``hidden`` case runs like any other, but a failure on it shows neither its inputs, its
    label nor the expected value: only that a hidden case failed, the named mistake or the hint,
    so an answer cannot be fitted to it.
    """

    args: tuple | Callable[[], tuple]
    label: str
    hidden: bool = False

    def shown_label(self) -> str:
        """What a learner sees of this case: its label, or "a hidden case"."""
        return "a hidden case" if self.hidden else self.label

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
    also_correct: Sequence[Callable[..., Any]] = ()  # other right answers (another order of the same steps)
    keeps_inputs: bool = True  # changing a tensor or array argument in place fails (False: the task asks for it)
    # a challenge with many right answers: judge(answer's value, *case args) -> None when accepted, else what is wrong
    judge: Callable[..., str | None] | None = None
    # form(answer's value) -> None when it has the task's form, else how to write it: checked before any
    # comparison, so a misspelt right answer is told so instead of getting the hint for a wrong idea
    form: Callable[[Any], str | None] | None = None
    minutes: float = 3.0  # a learner's honest time for the task (the stats command adds them up)
    shows_expected: bool = True  # False: a failure never prints the expected value (it would answer a prediction)


Status = Literal["pass", "fail", "not attempted", "error"]


@dataclass(frozen=True)
class Verdict:
    """What the checker decided: ``status``, one sentence for a table, and the full detail."""

    task_id: str
    status: Status
    summary: str
    detail: str = ""
    mistake: str | None = None
    passed_cases: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def _as_tensor(v: Any) -> torch.Tensor | None:
    if isinstance(v, torch.Tensor):
        return v.detach().double().cpu()
    if isinstance(v, np.ndarray) and v.dtype.kind in "fiub":
        return torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64))  # v[::-1] has negative strides
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return torch.tensor(float(v), dtype=torch.float64)
    seq = (list, tuple)  # a tuple of numbers is as good as a list (a tuple *answer* is compared part by part)
    if isinstance(v, seq) and v and all(isinstance(x, (bool, np.bool_)) for x in v):  # a mask, as a bool tensor is
        return torch.tensor([bool(x) for x in v], dtype=torch.float64)
    if isinstance(v, seq) and v and all(isinstance(x, (int, float, *seq)) and not isinstance(x, bool) for x in v):
        try:  # a plain list of numbers (or of lists) is as good as a tensor
            return torch.tensor(v, dtype=torch.float64)
        except (TypeError, ValueError):
            pass
    if isinstance(v, seq) and v:  # a list of 0-d tensors, numpy scalars or equal-shaped tensors
        parts = [_as_tensor(x) for x in v]
        if all(p is not None for p in parts) and len({p.shape for p in parts}) == 1:
            return torch.stack(parts)
    return None


def same(got: Any, expected: Any, rtol: float, atol: float, broadcast: bool = False) -> bool:
    """Numbers, tensors, arrays, lists and tuples of them, compared with a tolerance and by shape.

    ``broadcast`` (used to recognise mistakes) also accepts shapes that broadcast together,
    so a per-tensor scalar matches a per-channel vector filled with that scalar.

    >>> same([1.0, 2.0], torch.tensor([1.0, 2.0]), 1e-5, 1e-6)
    True
    >>> same(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0, 3.0]), 1e-5, 1e-6)
    False
    >>> same((1.0, 2.0), torch.tensor([1.0, 2.0]), 1e-5, 1e-6), same(torch.full((3,), 2.0), 2.0, 1e-5, 1e-6)
    (True, False)
    >>> same(torch.ones(2), torch.ones(3), 1e-5, 1e-6, broadcast=True)  # shapes that cannot broadcast
    False
    >>> same("0.5", torch.tensor(0.5), 1e-5, 1e-6), same(None, 0.5, 1e-5, 1e-6)  # not numbers at all
    (False, False)
    >>> same([True, False], torch.tensor([True, False]), 0, 0), same([False, False], torch.tensor([True, False]), 0, 0)
    (True, False)
    """
    if isinstance(expected, tuple):
        return (
            isinstance(got, (tuple, list))
            and len(got) == len(expected)
            and all(same(g, e, rtol, atol, broadcast) for g, e in zip(got, expected, strict=True))
        )
    g, e = _as_tensor(got), _as_tensor(expected)
    if e is None:
        return type(got) is type(expected) and got == expected
    if g is None:
        return False
    if broadcast and g.shape != e.shape:
        try:
            g, e = torch.broadcast_tensors(g, e)
        except RuntimeError:
            return False
    if g.shape != e.shape:
        return g.numel() == 1 and e.numel() == 1 and bool(torch.isclose(g.flatten(), e.flatten(), rtol, atol).all())
    return bool(torch.equal(g.isnan(), e.isnan()) and torch.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True))


def show(v: Any) -> str:
    """A short, readable rendering of a value for a failure message.

    >>> show((torch.tensor([1.0, 2.5]), 3))
    '(shape (2,): [1, 2.5], 3)'
    """
    if isinstance(v, tuple):
        return "(" + ", ".join(show(x) for x in v) + ")"
    t = _as_tensor(v)
    if t is None:
        text = repr(v)
        return text if len(text) <= 80 else text[:77] + "..."
    if t.ndim == 0:
        return f"{float(t):.6g}"
    flat = ", ".join(f"{x:.4g}" for x in t.flatten()[:8].tolist())
    more = ", ..." if t.numel() > 8 else ""
    return f"shape {tuple(t.shape)}: [{flat}{more}]"


def first_difference(got: Any, expected: Any, rtol: float, atol: float) -> str | None:
    """The first position where two same-shaped tensors differ beyond the tolerance, as a line for a failure.

    >>> first_difference(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.5]), 1e-5, 1e-6)
    '  first difference at index (2,): came back 3, expected 3.5'
    """
    g, e = _as_tensor(got), _as_tensor(expected)
    if g is None or e is None or g.shape != e.shape or g.ndim == 0:
        return None
    bad = ~torch.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return None
    index = tuple(int(i) for i in bad.nonzero()[0])
    return f"  first difference at index {index}: came back {float(g[index]):.6g}, expected {float(e[index]):.6g}"


def _is_stub(value: Any) -> bool:
    return value is None or value is Ellipsis


class _Raised:
    def __init__(self, err: BaseException) -> None:
        self.text = str(err) if isinstance(err, RaisedElsewhere) else f"{type(err).__name__}: {err}"


def _outputs(task: Task, answer: Any, inputs: list[tuple]) -> list[Any]:
    """The learner's result for every case (a value task gives the same value each time)."""
    if task.is_value:
        return [answer for _ in inputs]
    out = []
    for args in inputs:
        given = [_copy(a) for a in args]  # the case's own inputs stay as they are, whatever the answer does
        try:
            value = answer(*given)
            # a local function changes `given` itself; one run in the sandbox reports it on the proxy
            changed = getattr(answer, "changed_input", False) or changed_inputs(
                [a if isinstance(a, (torch.Tensor, np.ndarray)) else None for a in args], given
            )
            out.append(_ChangedInput(value) if task.keeps_inputs and changed else value)
        except NotImplementedError:
            out.append(Ellipsis)
        except Exception as err:  # the learner's code failed: reported, never a pass
            out.append(_Raised(err))
    return out


def _copy(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return a.clone()
    return a.copy() if isinstance(a, np.ndarray) else a


class _ChangedInput:
    """An answer that returned ``value`` but changed one of its arguments in place."""

    def __init__(self, value: Any) -> None:
        self.value = value


def changed_inputs(before: list[Any], after: Sequence[Any]) -> bool:
    """Whether a call changed a tensor or array argument in place (``before``: untouched copies, None for others).

    Compared bit for bit, so a NaN that stayed a NaN is no change.

    >>> x = torch.tensor([1.0, float("nan")])
    >>> changed_inputs([x.clone()], [x]), changed_inputs([x.clone()], [x.mul_(2)])
    (False, True)
    >>> changed_inputs([x.clone()], [x.unsqueeze_(0)])  # the same values in another shape
    True
    >>> raw = np.arange(3, dtype=np.uint8)
    >>> changed_inputs([raw.copy()], [raw]), changed_inputs([raw.copy()], [np.add(raw, 1, out=raw)])
    (False, True)
    >>> changed_inputs([None], [raw])  # an argument without a copy (the sandbox copies tensors only) is not looked at
    False
    """
    for b, a in zip(before, after, strict=True):
        if isinstance(b, np.ndarray) and isinstance(a, np.ndarray):
            if b.shape != a.shape or b.dtype != a.dtype or b.tobytes() != a.tobytes():
                return True
            continue
        if b is None or not isinstance(a, torch.Tensor):
            continue
        if b.shape != a.shape or b.dtype != a.dtype:
            return True
        if not torch.equal(b.contiguous().reshape(-1).view(torch.uint8), a.contiguous().reshape(-1).view(torch.uint8)):
            return True
    return False


def named_mistake(task: Task, inputs: list[tuple], got: list[Any]) -> str | None:
    """The first known mistake that the answer agrees with on every case it answered."""
    answered = [(args, g) for args, g in zip(inputs, got, strict=True) if not isinstance(g, _Raised)]
    if not answered:
        return None
    for m in task.mistakes:
        try:
            if all(same(g, m.fn(*args), task.rtol, task.atol, broadcast=True) for args, g in answered):
                return m.description
        except Exception:  # a mistake that cannot run on some case is not the one made
            continue
    return None


def kind_problem(got: Any, expected: Any) -> str | None:
    """What is off when a string came back where a number was expected, else None.

    >>> kind_problem("7", 7)
    "came back as text, '7'; answer with the number itself, without quotes"
    >>> kind_problem(7, 7) is None, kind_problem("a", "b") is None
    (True, True)
    """
    number = isinstance(expected, (int, float)) and not isinstance(expected, bool)
    if isinstance(got, str) and (number or isinstance(expected, torch.Tensor)):
        return f"came back as text, {got!r}; answer with the number itself, without quotes"
    return None


def _agrees_with_another_form(task: Task, inputs: list[tuple], got: list[Any]) -> bool:
    """Whether the answer matches one of ``task.also_correct`` on every case."""
    return any(
        all(same(g, alt(*args), task.rtol, task.atol) for args, g in zip(inputs, got, strict=True))
        for alt in task.also_correct
    )


def reshaped(got: Any, expected: Any, rtol: float, atol: float) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(your shape, expected shape)`` when ``got`` holds the right values in the wrong shape, else None.

    A tuple answer is looked at part by part (the first part with this problem is named).

    >>> reshaped(torch.ones(3, 1), torch.ones(3), 1e-5, 1e-6)
    ((3, 1), (3,))
    >>> reshaped(torch.ones(3), torch.ones(3), 1e-5, 1e-6) is None, reshaped(torch.ones(1, 3), torch.zeros(3), 0, 0)
    (True, None)
    >>> reshaped((2.0, torch.ones(2, 1)), (2.0, torch.ones(2)), 1e-5, 1e-6)  # the second part of a tuple answer
    ((2, 1), (2,))
    """
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return None
        found = (reshaped(g, e, rtol, atol) for g, e in zip(got, expected, strict=True))
        return next((f for f in found if f is not None), None)
    g, e = _as_tensor(got), _as_tensor(expected)
    if g is None or e is None or g.shape == e.shape or g.numel() != e.numel() or e.numel() <= 1:
        return None
    return (tuple(g.shape), tuple(e.shape)) if same(g.reshape(e.shape), e, rtol, atol) else None


def _expected(task: Task, expected: Any) -> list[str]:
    """The expected line of a failure; none for a value task, where it would be the answer itself, nor for
    a task whose expected values answer a prediction the exercise asks for (``shows_expected=False``)."""
    return [] if task.is_value or not task.shows_expected else [f"  expected:  {show(expected)}"]


def evaluate(task: Task, answer: Any) -> Verdict:
    """Decide ``answer`` (a function, or a value for value tasks) against every case of ``task``."""
    head = f"{task.task_id} ({task.title})"
    if _is_stub(answer):
        return Verdict(task.task_id, "not attempted", "not attempted yet: fill in your cell and run it")
    inputs = [case.resolve() for case in task.cases]
    got = _outputs(task, answer, inputs)
    if all(_is_stub(g) for g in got):
        said = (
            "returns None on every case (a print instead of a return? None is the answer to none of them)"
            if any(g is None for g in got)
            else "returns the stub"
        )
        return Verdict(task.task_id, "not attempted", f"not attempted yet: your function still {said}")
    for i, (case, args, g) in enumerate(zip(task.cases, inputs, got, strict=True), start=1):
        label = case.shown_label()
        if task.judge is not None and not isinstance(g, (_ChangedInput, _Raised)) and not _is_stub(g):
            problem = task.judge(g, *args)
            if problem is None:
                continue
            lines = [f"{head}: case {i} failed: {label}", *([] if case.hidden else [f"  came back: {show(g)}"])]
            lines.append(f"  mistake: {problem}")  # a named mistake says more than the hint
            return Verdict(task.task_id, "fail", f"{problem} [case {i}: {label}]", "\n".join(lines), problem)
        if task.form is not None and not isinstance(g, (_ChangedInput, _Raised)) and not _is_stub(g):
            if (problem := task.form(g)) is not None:
                lines = [f"{head}: case {i} failed: {label}"]
                if not case.hidden:
                    lines += [f"  came back: {show(g)}", *_expected(task, task.reference(*args))]
                lines.append(f"  mistake: {problem}")
                return Verdict(task.task_id, "fail", f"{problem} [case {i}: {label}]", "\n".join(lines), problem)
        expected = task.reference(*args)
        if _is_stub(g):  # the other cases came back: this one fell through a branch without a return
            said = "None (a branch without a return?)" if g is None else "the stub (... or NotImplementedError)"
            lines = [f"{head}: case {i} failed: {label}", f"  came back: {said}", f"  hint: {task.hint}"]
            summary = f"case {i} ({label}) returned {said}; the other cases returned a value"
            return Verdict(task.task_id, "fail", summary, "\n".join(lines))
        if isinstance(g, _ChangedInput):
            lines = [f"{head}: case {i} failed: {label}", "  your function changed its input in place"]
            lines.append(f"  hint: {task.hint}")
            summary = f"changed its input in place [case {i}: {label}]: work on a copy (.clone())"
            return Verdict(task.task_id, "fail", summary, "\n".join(lines), "changed its input in place")
        if isinstance(g, _Raised):
            lines = [f"{head}: case {i} failed: {label}", f"  came back: raised {g.text}"]
            lines += [*([] if case.hidden else _expected(task, expected)), f"  hint: {task.hint}"]
            return Verdict(task.task_id, "error", f"case {i} ({label}) raised {g.text}", "\n".join(lines))
        if same(g, expected, task.rtol, task.atol):
            continue
        if _agrees_with_another_form(task, inputs, got):
            break
        mistake = kind_problem(g, expected) or named_mistake(task, inputs, got)
        shapes = reshaped(g, expected, task.rtol, task.atol)
        lines = [f"{head}: case {i} failed: {label}"]
        if not case.hidden:
            lines += [f"  came back: {show(g)}", *_expected(task, expected)]
            if (
                not task.is_value and task.shows_expected and show(g) == show(expected)
            ):  # the previews agree: point at where the values part
                lines += [line for line in [first_difference(g, expected, task.rtol, task.atol)] if line]
        if shapes:  # a hidden case's shapes are not shown
            told = "" if case.hidden else f", but the shape is {shapes[0]}, not {shapes[1]}"
            lines.append(f"  shape: the values are right{told}")
        # a named mistake says more than the task's hint, which may point elsewhere
        lines.append(f"  mistake: {mistake}" if mistake else f"  hint: {task.hint}")
        summary = f"case {i} ({label}) is wrong: {task.hint}"
        if shapes:
            told = "the wrong shape" if case.hidden else f"shape {shapes[0]}; return shape {shapes[1]}"
            summary = f"case {i} ({label}): right values in {told}"
        summary = f"{mistake} [case {i}: {label}]" if mistake else summary
        return Verdict(task.task_id, "fail", summary, "\n".join(lines), mistake)
    labels = tuple(c.shown_label() for c in task.cases)
    return Verdict(task.task_id, "pass", f"all {len(labels)} cases pass", passed_cases=labels)


def run_task(task: Task, answer: Any) -> None:
    """A check cell: ``✓`` lines on success; otherwise print the failure and raise."""
    v = evaluate(task, answer)
    if v.status == "not attempted":
        raise NotAttempted(f"{task.task_id} ({task.title}): {v.summary}")
    if v.status == "pass":
        for i, label in enumerate(v.passed_cases, start=1):
            print(f"✓ {task.task_id} case {i}: {label}")
        return
    print(v.detail)
    raise CheckFailed(f"{task.task_id} {v.summary}")

"""One source of truth for exercises: solution notebooks produce the learner notebooks.

A solution notebook (``exercises/solutions/NN_*.ipynb``, spoilers; its source is the jupytext
script ``exercises/solutions/NN_*.py`` beside it, as for lessons) marks its answer cells
with the tag ``solution``. Inside them, lines between ``# BEGIN SOLUTION`` and
``# END SOLUTION`` are the answer, and a line ending in ``# STUB`` is what the learner sees
instead. :func:`learner_version` removes the answers, keeps the stubs, clears the answer
cells' and the check cells' outputs (a stored ✓ would look like the learner's own pass).

    python -m qlesson.course.exercises build [NN ...]   # sources -> executed solutions -> learner versions
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "exercises" / "solutions"
BEGIN, END, STUB = "# BEGIN SOLUTION", "# END SOLUTION", "# STUB"


def strip_solution(source: str) -> str:
    """The learner's text of one answer cell.

    >>> cell = "def f(x):\\n    ...  # STUB\\n    # BEGIN SOLUTION\\n    return 2 * x\\n    # END SOLUTION"
    >>> print(strip_solution(cell))
    def f(x):
        ...  # your code here
    """
    out, inside = [], False
    for line in source.splitlines():
        if line.strip() == BEGIN:
            inside = True
        elif line.strip() == END:
            inside = False
        elif not inside:
            out.append(re.sub(r"\s*# STUB$", "  # your code here", line))
    if inside:
        raise ValueError(f"a cell opens {BEGIN!r} without {END!r}")
    return "\n".join(out)


def learner_version(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The learner notebook derived from an executed solution notebook."""
    nb = copy.deepcopy(solution)
    nb.metadata.pop("jupytext", None)  # the learner's copy is not paired with a source
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "code" and "solution" in tags:
            cell.source = strip_solution(cell.source)
            cell.outputs = []
            cell.execution_count = None
            cell.metadata["tags"] = [t for t in tags if t != "solution"] + ["your-answer", "nbval-ignore-output"]
        elif cell.cell_type == "code":
            # a stored pass would look like the learner's own, and a stored result would answer a
            # "predict, then run" cell before the learner predicts: they run every cell themselves
            cell.outputs = []
            cell.execution_count = None
        elif cell.cell_type == "markdown":
            cell.source = cell.source.replace("(SOLUTIONS: spoilers)", "")
    nb.cells = [c for c in nb.cells if "solutions-only" not in c.metadata.get("tags", [])]
    return nb


def recall_markdown(lesson: str, number: int) -> str:
    """The markdown an exercise shows above recall question ``lesson.number`` (options as learners see them).

    >>> print(recall_markdown("04", 3).splitlines()[0])
    ### Recall 04.3
    """
    from qlesson.course.recall import LETTERS, Choice, questions

    q = questions(lesson)[number - 1]
    lines = [f"### Recall {lesson}.{number}", "", q.prompt]
    if isinstance(q, Choice):
        lines += ["", *[f"- **{LETTERS[j]})** {o.text}" for j, o in enumerate(q.shown())]]
        lines += ["", "Answer with the option's letter as a string (in quotes)."]
    else:
        lines += ["", "Answer with a number."]
    return "\n".join(lines)


def learner_path(solution_path: Path) -> Path:
    return solution_path.parent.parent / solution_path.name


def write_learner_versions(numbers: list[str] | None = None) -> list[Path]:
    """Rewrite the learner notebooks from the (executed) solution notebooks."""
    written = []
    for sol in sorted(SOLUTIONS.glob("[0-9][0-9]_*.ipynb")):
        if numbers and sol.name[:2] not in numbers:
            continue
        nb = learner_version(nbformat.read(str(sol), as_version=4))
        nbformat.write(nb, str(learner_path(sol)))
        written.append(learner_path(sol))
    return written


def build(numbers: list[str] | None = None, run: bool = True) -> list[Path]:
    """Solution sources -> solution notebooks (executed unless ``run`` is false) -> learner notebooks."""
    from qlesson.course.notebooks import execute, lesson_sources, sync

    notebooks = [sync(s) for s in lesson_sources(numbers or [], SOLUTIONS)]
    if run:
        execute(notebooks)
    return write_learner_versions(numbers)


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] not in ("build", "learner"):
        print("usage: python -m qlesson.course.exercises build [NN ...]   (sources -> solutions, executed -> learner)")
        print("       python -m qlesson.course.exercises learner [NN ...] (learner versions only)")
        raise SystemExit(2)
    paths = build(args[1:]) if args[0] == "build" else write_learner_versions(args[1:])
    for p in paths:
        print(f"wrote {p.relative_to(ROOT)}")

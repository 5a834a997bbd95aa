"""How long each lesson really takes: ``python -m qlesson stats [NN ...]``.

Per lesson, from the stored notebooks: the words of the main line's prose and of its *Going
deeper* part (everything from the ``## Going deeper`` heading on), the words of the main line's
printed output, its code cells and code words, the main line's run time (measured by
``python -m qlesson stats --measure``, which executes the notebook and stores the seconds in
``notebooks/results/run_times.json``), and an honest time:

* the lesson: prose / 150 + code / 150 + printed output / 80 words a minute (a markdown table
  is read like printed output, at 80), plus the run time, plus a minute for each predict-then-run
  question, two for each widget's guided experiment, and a minute for each quiz question (the
  quiz's text sheet, ``recall.show``, is then not counted as printed output);
* the exercise: its prose / 150 words a minute, plus each graded task's minutes (3 unless its ``Task``
  says more) and 1 a recall answer;
* *Going deeper*: its prose, code and printed output read at the same rates, plus its run time.

Each lesson states its times in its first cell (``**Time**: about N minutes, plus about M for
the exercise; *Going deeper*: about K more.``) and README's table repeats the first two;
``tests/test_stats.py`` keeps all of them within 20%.

>>> words("The `scale` is 0.05, see [lesson 01](01_the_ruler.ipynb).")
7
>>> honest_minutes(prose=1500, code=150, output=160, run_s=60)
14.0
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "notebooks"
EXERCISES = ROOT / "exercises"
RUN_TIMES = LESSONS / "results" / "run_times.json"

PROSE_WPM, CODE_WPM, OUTPUT_WPM = 150, 150, 80
TASK_MINUTES, RECALL_MINUTES = 3.0, 1.0
PREDICT_MINUTES, WIDGET_MINUTES = 1.0, 2.0  # committing to a prediction; a widget's guided experiment
MAX_PROSE = 2000  # main-line prose words; 00 and 07 get half
MAX_RUN_S = 60.0  # main-line run time on 2 cores
TOLERANCE = 0.2  # stated times within 20% of the computed ones
DEEPER = re.compile(r"^##\s+Going deeper\b", re.M)
_STATED = re.compile(
    r"\*\*Time\*\*:\s*about\s+(\d+)\s+minutes(?:,\s*plus\s+about\s+(\d+)\s+(?:minutes\s+)?for\s+the\s+exercise)?", re.I
)
_DEEPER_STATED = re.compile(r"\*Going deeper\*:\s*about\s+(\d+)\s+(?:minutes\s+)?more", re.I)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’.,:/%+\-]*")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_HTML_TAG = re.compile(r"<[^>]+>")
_QUESTION = re.compile(r"(?m)^\d+\. ")  # a numbered question in recall.show's text sheet


def words(text: str) -> int:
    """Words a reader reads: link targets and HTML tags dropped, markdown punctuation ignored."""
    return len(_WORD.findall(_HTML_TAG.sub(" ", _LINK_TARGET.sub("]", text))))


def honest_minutes(
    prose: int, code: int, output: int, run_s: float, predicts: int = 0, widgets: int = 0, quiz: int = 0
) -> float:
    """Reading at 150 (prose, code) and 80 (printed output) words a minute, plus the run time,
    a minute per prediction, two per widget experiment and one per quiz question."""
    reading = prose / PROSE_WPM + code / CODE_WPM + output / OUTPUT_WPM + run_s / 60
    return round(reading + PREDICT_MINUTES * predicts + WIDGET_MINUTES * widgets + RECALL_MINUTES * quiz, 1)


def table_words(text: str) -> int:
    """Words in markdown table rows (lines that start and end with ``|``): read like printed output.

    >>> table_words("Some prose.\\n| lesson | time |\\n|---|---|\\n| 01 | 18 min |\\n|value| over 0.5")
    5
    """
    rows = (line.strip() for line in text.splitlines())
    return sum(words(row) for row in rows if len(row) > 1 and row.startswith("|") and row.endswith("|"))


def _source(cell: Any) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _printed(cell: Any) -> str:
    """The text a learner reads in a code cell's outputs (no widgets, no images)."""
    parts = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "application/vnd.jupyter.widget-view+json" in data:
            continue
        if out.get("output_type") == "stream":
            parts.append("".join(out.get("text", "")))
        elif "text/plain" in data and "image/png" not in data:
            parts.append("".join(data["text/plain"]))
    return "\n".join(parts)


def split(cells: list[Any]) -> tuple[list[Any], list[Any]]:
    """(main line, Going deeper): the second part starts at the cell holding ``## Going deeper``."""
    for i, cell in enumerate(cells):
        if cell.get("cell_type") == "markdown" and DEEPER.search(_source(cell)):
            return cells[:i], cells[i:]
    return cells, []


def stated(cells: list[Any]) -> tuple[int | None, int | None]:
    """The (lesson, exercise) minutes the first markdown cell states; None where it states none."""
    first = next((_source(c) for c in cells if c.get("cell_type") == "markdown"), "")
    m = _STATED.search(first)
    if not m:
        return None, None
    return int(m.group(1)), int(m.group(2)) if m.group(2) else None


def stated_deeper(cells: list[Any]) -> int | None:
    """The *Going deeper* minutes the first markdown cell states (``*Going deeper*: about K more``), or None.

    >>> stated_deeper([{"cell_type": "markdown", "source": "**Time**: about 9 minutes; *Going deeper*: about 4 more."}])
    4
    """
    first = next((_source(c) for c in cells if c.get("cell_type") == "markdown"), "")
    m = _DEEPER_STATED.search(first)
    return int(m.group(1)) if m else None


def exercise_minutes(number: str, folder: Path = EXERCISES) -> float | None:
    """Honest minutes for lesson ``number``'s exercise (the learner's notebook); None if it has none."""
    found = sorted(folder.glob(f"{number}_*.ipynb"))
    if not found:
        return None
    cells = json.loads(found[0].read_text())["cells"]
    prose = sum(words(_source(c)) for c in cells if c["cell_type"] == "markdown")
    ids = [
        str(c["metadata"].get("qlesson", {}).get("task", ""))
        for c in cells
        if "check" in c.get("metadata", {}).get("tags", [])
    ]
    recall = sum(1 for t in ids if t.startswith("recall"))
    return round(
        prose / PROSE_WPM + sum(task_minutes(t) for t in ids if not t.startswith("recall")) + RECALL_MINUTES * recall, 1
    )


def task_minutes(task_id: str) -> float:
    """A graded task's minutes: its ``Task.minutes`` (3 unless the lesson says a task takes longer)."""
    from qlesson.course.tasks import tasks

    task = tasks().get(task_id)
    return TASK_MINUTES if task is None else task.minutes


def run_times(path: Path | None = None) -> dict[str, dict[str, float]]:
    """The stored run times, by lesson number: ``{"03": {"main_s": 41.0, "deeper_s": 20.5}}``."""
    path = RUN_TIMES if path is None else path
    return json.loads(path.read_text()) if path.exists() else {}


@dataclass(frozen=True)
class LessonStats:
    lesson: str
    prose: int  # markdown words outside tables
    deeper_prose: int
    output: int  # printed output words plus markdown table words (both read at 80 a minute)
    code_cells: int
    code: int
    run_s: float | None
    deeper_run_s: float | None
    minutes: float
    exercise: float | None
    stated: int | None
    stated_exercise: int | None
    deeper_minutes: float = 0.0
    stated_deeper: int | None = None

    @property
    def prose_budget(self) -> int:
        return MAX_PROSE // 2 if self.lesson in ("00", "07") else MAX_PROSE

    def problems(self) -> list[str]:
        """What is over budget or stated untruly; an empty list means within budget and true."""
        out = []
        if self.prose > self.prose_budget:
            out.append(f"main-line prose {self.prose} words > {self.prose_budget}")
        if self.run_s is None:
            out.append("no stored run time: run `python -m qlesson stats --measure " + self.lesson + "`")
        elif self.run_s > MAX_RUN_S:
            out.append(f"main line runs {self.run_s:.0f} s > {MAX_RUN_S:.0f} s")
        out += _untrue("lesson", self.stated, self.minutes)
        out += _untrue("exercise", self.stated_exercise, self.exercise)
        if self.deeper_prose or self.stated_deeper is not None:
            out += _untrue("Going deeper", self.stated_deeper, self.deeper_minutes or None)
        return out


def _untrue(what: str, said: int | None, honest: float | None) -> list[str]:
    if honest is None:
        return [] if said is None else [f"states {said} minutes for an {what} it does not have"]
    if said is None:
        return [f"states no time for the {what} (honest: {honest:.0f} minutes)"]
    if abs(said - honest) > TOLERANCE * honest + 0.5:
        return [f"states {said} minutes for the {what}; honest: {honest:.0f}"]
    return []


def lesson_stats(path: Path, times: dict[str, dict[str, float]] | None = None) -> LessonStats:
    """The stats of one stored lesson notebook."""
    number = path.name[:2]
    cells = json.loads(path.read_text())["cells"]
    main, deeper = split(cells)
    code = [c for c in main if c["cell_type"] == "code" and _source(c).strip()]
    markdown = [_source(c) for c in main if c["cell_type"] == "markdown"]
    tables = sum(table_words(m) for m in markdown)
    prose = sum(words(m) for m in markdown) - tables
    code_words = sum(len(_source(c).split()) for c in code)
    sheets = [c for c in code if "recall.show(" in _source(c)]
    quiz = sum(len(_QUESTION.findall(_printed(c))) for c in sheets)  # answered in the widget, a minute each
    output = sum(words(_printed(c)) for c in code if c not in sheets) + tables
    timed = (run_times() if times is None else times).get(number, {})
    run_s = timed.get("main_s")
    said, said_ex = stated(cells)
    deeper_code = [c for c in deeper if c["cell_type"] == "code" and _source(c).strip()]
    deeper_markdown = [_source(c) for c in deeper if c["cell_type"] == "markdown"]
    deeper_tables = sum(table_words(m) for m in deeper_markdown)
    deeper_prose = sum(words(m) for m in deeper_markdown) - deeper_tables
    deeper_minutes = honest_minutes(
        deeper_prose,
        sum(len(_source(c).split()) for c in deeper_code),
        sum(words(_printed(c)) for c in deeper_code) + deeper_tables,
        timed.get("deeper_s") or 0.0,
    )
    predicts = sum(1 for c in code if "recall.predict(" in _source(c))
    widgets = sum(1 for c in code if "widgets." in _source(c))
    return LessonStats(
        lesson=number,
        prose=prose,
        deeper_prose=deeper_prose,
        output=output,
        code_cells=len(code),
        code=code_words,
        run_s=run_s,
        deeper_run_s=timed.get("deeper_s"),
        minutes=honest_minutes(prose, code_words, output, run_s or 0.0, predicts, widgets, quiz),
        exercise=exercise_minutes(number),
        stated=said,
        stated_exercise=said_ex,
        deeper_minutes=deeper_minutes,
        stated_deeper=stated_deeper(cells),
    )


def lessons(numbers: list[str] | None = None, folder: Path = LESSONS) -> list[Path]:
    every = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    chosen = [p for p in every if not numbers or p.name[:2] in numbers]
    if numbers and not chosen:
        raise ValueError(f"no lesson numbered {' or '.join(numbers)}; choose from {', '.join(p.stem for p in every)}")
    return chosen


def measure(path: Path, timeout: int = 1800) -> dict[str, float]:
    """Execute a copy of the lesson and time its main line and its Going deeper part (seconds)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    main, _ = split(nb.cells)
    seconds: list[float] = []

    class _Timed(NotebookClient):
        async def async_execute_cell(self, cell: Any, cell_index: int, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            out = await super().async_execute_cell(cell, cell_index, *args, **kwargs)
            if cell.cell_type == "code":
                seconds.append((cell_index, time.perf_counter() - start))
            return out

    client = _Timed(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    n_main = len(main)
    return {
        "main_s": round(sum(s for i, s in seconds if i < n_main), 1),
        "deeper_s": round(sum(s for i, s in seconds if i >= n_main), 1),
    }


HEADER = (
    "lesson",
    "prose",
    "deeper",
    "output",
    "code cells",
    "run s",
    "deeper s",
    "honest min",
    "exercise",
    "deeper min",
    "stated",
)


def table(rows: list[LessonStats]) -> str:
    """The stats as an aligned text table, one row per lesson, then what is over budget."""

    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.0f}" if isinstance(v, float) else str(v)

    body = [
        (
            r.lesson,
            r.prose,
            r.deeper_prose,
            r.output,
            r.code_cells,
            r.run_s,
            r.deeper_run_s,
            r.minutes,
            r.exercise,
            r.deeper_minutes if r.deeper_prose else None,
            f"{fmt(r.stated)} + {fmt(r.stated_exercise)}" + (f" (+{r.stated_deeper})" if r.stated_deeper else ""),
        )
        for r in rows
    ]
    cols = [HEADER, *[tuple(fmt(v) for v in row) for row in body]]
    width = [max(len(c[i]) for c in cols) for i in range(len(HEADER))]
    lines = ["  ".join(c[i].rjust(width[i]) for i in range(len(HEADER))) for c in cols]
    for r in rows:
        lines += [f"{r.lesson}: {p}" for p in r.problems()]
    return "\n".join(lines)


USAGE = """usage: python -m qlesson stats [--measure] [--check] [NN ...]
  (no flag)   print each lesson's words, run time and honest time against what it states
  --measure   execute the lessons first and store their run times (notebooks/results/run_times.json)
  --check     exit 1 when a lesson is over budget or states an untrue time"""


def main(argv: list[str]) -> int:
    flags = {a for a in argv if a.startswith("--")}
    numbers = [a for a in argv if not a.startswith("--")]
    if flags - {"--measure", "--check"} or any(not (len(n) == 2 and n.isdigit()) for n in numbers):
        print(USAGE)
        return 2
    paths = lessons(numbers)
    if "--measure" in flags:
        for path in paths:
            seconds = measure(path)
            times = run_times() | {path.name[:2]: seconds}  # read again: each lesson is stored as it is measured
            RUN_TIMES.write_text(json.dumps(dict(sorted(times.items())), indent=1) + "\n")
            print(f"measured {path.stem}: {seconds}", flush=True)
    rows = [lesson_stats(p) for p in paths]
    print(table(rows))
    return 1 if "--check" in flags and any(r.problems() for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Authors' tools: lesson sources (jupytext) -> notebooks -> stored outputs, and their checks.

Each lesson is written as ``notebooks/NN_name.py``, a jupytext "percent" script (``# %%``
cells) paired with ``notebooks/NN_name.ipynb``, the notebook learners open. Edit either one:
in JupyterLab, open the ``.py`` as a notebook (right click, Open With, Jupytext Notebook) and
saving writes both; in an editor, change the ``.py`` and run ``make lessons`` (or
``python -m qlesson.course.notebooks build 03``), which writes the notebook from the source
and re-executes it in place with timing metadata off, the only way stored outputs are made.
Tests fail when a notebook and its source disagree.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MAX_OUTPUT_BYTES = 1_000_000
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "notebooks"
_MACHINE = re.compile(r"(/(tmp|root|work|home|Users)/)|(0x[0-9a-fA-F]{6,})|([A-Z]:\\\\)")


def source_of(notebook: str | Path) -> Path:
    """The jupytext source paired with ``notebook`` (same folder and name, ``.py``)."""
    return Path(notebook).with_suffix(".py")


def _cell_key(cell: Any) -> tuple:
    meta = {k: v for k, v in cell.get("metadata", {}).items() if k in ("tags", "qlesson")}
    return (cell["cell_type"], cell["source"].strip(), json.dumps(meta, sort_keys=True))


def out_of_sync(notebook: str | Path) -> list[str]:
    """How ``notebook`` differs from its jupytext source (cell types, sources, tags, order).

    An empty list means they agree; outputs are not compared (the source has none).
    """
    import jupytext
    import nbformat

    src = source_of(notebook)
    if not src.exists():
        return [f"{Path(notebook).name} has no source {src.name} beside it"]
    a = [_cell_key(c) for c in jupytext.read(str(src)).cells]
    b = [_cell_key(c) for c in nbformat.read(str(notebook), as_version=4).cells]
    problems = []
    if len(a) != len(b):
        problems.append(f"{src.name} has {len(a)} cells, {Path(notebook).name} has {len(b)}")
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            what = "type" if x[0] != y[0] else "source" if x[1] != y[1] else "tags"
            problems.append(f"cell {i} differs in {what}: source starts {x[1][:50]!r}, notebook {y[1][:50]!r}")
            break
    return problems


def sync(source: str | Path) -> Path:
    """Write the notebook paired with a jupytext ``source``: new inputs, the stored outputs kept.

    Outputs of cells whose source changed are dropped; :func:`execute` makes them again.
    """
    import jupytext
    import nbformat
    from jupytext.combine import combine_inputs_with_outputs

    source = Path(source)
    notebook = source.with_suffix(".ipynb")
    nb = jupytext.read(str(source))
    if notebook.exists():
        nb = combine_inputs_with_outputs(nb, nbformat.read(str(notebook), as_version=4))
    nb.metadata["kernelspec"] = KERNEL
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, str(notebook))
    return notebook


def execute(paths: Iterable[str | Path], timeout: int = 600) -> None:
    """Run each notebook top to bottom in its own folder and store the outputs in place."""
    import nbformat
    from nbclient import NotebookClient

    for path in map(Path, paths):
        nb = nbformat.read(str(path), as_version=4)
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            record_timing=False,
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
        nb.metadata.pop("widgets", None)  # widget state holds random model ids: not reproducible
        nb.metadata["language_info"] = {"name": "python"}
        nbformat.write(nb, str(path))
        print(f"executed {path}")


def hygiene(path: str | Path) -> list[str]:
    """Problems that would make a stored notebook untrustworthy; an empty list means clean."""
    nb = json.loads(Path(path).read_text())
    problems = []
    counts = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or not "".join(cell["source"]).strip():
            continue
        if cell.get("execution_count") is None:
            problems.append(f"cell {i} was never executed")
        else:
            counts.append(cell["execution_count"])
        for out in cell.get("outputs", []):
            if out["output_type"] == "error":
                problems.append(f"cell {i} stores an error: {out.get('ename')}")
            text = json.dumps(out.get("text", "")) + json.dumps(out.get("data", {}).get("text/plain", ""))
            if _MACHINE.search(text):
                problems.append(f"cell {i} output contains a machine path or memory address")
            if len(json.dumps(out)) > MAX_OUTPUT_BYTES:
                problems.append(f"cell {i} stores an output over 1 MB")
    if counts != list(range(1, len(counts) + 1)):
        problems.append(f"cells were not executed once, top to bottom (execution counts {counts})")
    return problems


def lesson_sources(numbers: list[str], folder: Path = LESSONS) -> list[Path]:
    """The jupytext sources in ``folder`` whose names start with one of ``numbers`` (all if empty)."""
    every = sorted(folder.glob("[0-9][0-9]_*.py"))
    chosen = [p for p in every if not numbers or p.name[:2] in numbers]
    if numbers and not chosen:
        raise SystemExit(f"no lesson numbered {' or '.join(numbers)}; choose from {', '.join(p.stem for p in every)}")
    return chosen


USAGE = """usage: python -m qlesson.course.notebooks COMMAND [NN ...]
  build [NN ...]    write each lesson notebook from its source (notebooks/NN_*.py), then execute it
  sync [NN ...]     write the notebooks from their sources, keeping stored outputs (no execution)
  check [NN ...]    report notebooks that disagree with their source or store untrustworthy outputs"""


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("build", "sync", "check"):
        print(USAGE)
        return 2
    sources = lesson_sources(argv[1:])
    if argv[0] in ("build", "sync"):
        notebooks = [sync(s) for s in sources]
        if argv[0] == "build":
            execute(notebooks)
        return 0
    bad = {
        s.with_suffix(".ipynb"): out_of_sync(s.with_suffix(".ipynb")) + hygiene(s.with_suffix(".ipynb"))
        for s in sources
    }
    for p, problems in bad.items():
        for problem in problems:
            print(f"{p.name}: {problem}")
    return 1 if any(bad.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Build, execute and check the course notebooks (authors' tools; ``make execute`` uses them).

``python -m qlesson.notebook_tools execute notebooks/*.ipynb`` re-executes in place with
timing metadata off, the only way stored outputs are produced.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

MAX_OUTPUT_BYTES = 1_000_000
_MACHINE = re.compile(r"(/(tmp|root|work|home|Users)/)|(0x[0-9a-fA-F]{6,})|([A-Z]:\\\\)")


def md(text: str) -> dict:
    """A markdown cell (leading indentation of the triple-quoted text removed)."""
    from inspect import cleandoc

    import nbformat

    return nbformat.v4.new_markdown_cell(cleandoc(text))


def code(source: str, *tags: str) -> dict:
    """A code cell; ``tags`` such as ``"nbval-ignore-output"``."""
    from inspect import cleandoc

    import nbformat

    cell = nbformat.v4.new_code_cell(cleandoc(source))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def write(cells: list[dict], path: str | Path) -> None:
    """Write a notebook with the course kernel; outputs come only from :func:`execute`."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, str(path))


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


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("execute", "check"):
        print("usage: python -m qlesson.notebook_tools {execute|check} NOTEBOOK...")
        return 2
    if argv[0] == "execute":
        execute(argv[1:])
        return 0
    bad = {p: hygiene(p) for p in argv[1:]}
    for p, problems in bad.items():
        for problem in problems:
            print(f"{p}: {problem}")
    return 1 if any(bad.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

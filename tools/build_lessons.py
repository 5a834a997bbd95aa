"""Write the lesson notebooks from tools/lessons/*.py, then run `make execute` to store outputs.

    .venv/bin/python tools/build_lessons.py [NAME ...]   # e.g. 01_the_ruler
"""

import importlib.util
import sys
from pathlib import Path

from qlesson.notebook_tools import write

ROOT = Path(__file__).resolve().parents[1]


def main(names: list[str]) -> None:
    for src in sorted((ROOT / "tools" / "lessons").glob("nb*.py")):
        spec = importlib.util.spec_from_file_location(src.stem, src)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if names and mod.NAME not in names:
            continue
        write(mod.CELLS, ROOT / "notebooks" / f"{mod.NAME}.ipynb")
        print(f"wrote notebooks/{mod.NAME}.ipynb")


if __name__ == "__main__":
    main(sys.argv[1:])

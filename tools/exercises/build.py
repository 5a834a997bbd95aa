"""Write the exercise solution notebooks, execute them, and derive the learner notebooks.

    .venv/bin/python tools/exercises/build.py
"""

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from qlesson.exercise_tools import build  # noqa: E402
from qlesson.notebook_tools import execute, write  # noqa: E402

paths = []
for src in sorted(HERE.glob("ex*.py")):
    spec = importlib.util.spec_from_file_location(src.stem, src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if sys.argv[1:] and mod.NAME[:2] not in sys.argv[1:]:
        continue
    path = ROOT / "exercises" / "solutions" / f"{mod.NAME}.ipynb"
    write(mod.CELLS, path)
    paths.append(path)
execute(paths)
for p in build():
    print(f"wrote {p.relative_to(ROOT)}")

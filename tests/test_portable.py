"""Stored outputs hold on another CPU: the notebooks that run MiniLM, re-executed under a second float path.

A learner's machine sums floats in another order than the one that stored the outputs
(AVX-512 here, AVX2 or NEON there, one thread or many). ``ATEN_CPU_CAPABILITY=default``
turns off PyTorch's vector kernels and ``OMP_NUM_THREADS=1`` its threads: a different float
path on this very machine. Every notebook that loads the model must print the same digits
under it as stored (nbval, strict). The notebooks are found by what their source calls, so
a new lesson that loads the model is covered without editing this file.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")) + sorted(
    (ROOT / "exercises" / "solutions").glob("[0-9][0-9]_*.py")
)
MODEL_NOTEBOOKS = [p.with_suffix(".ipynb") for p in SOURCES if "load_minilm" in p.read_text(encoding="utf-8")]
SECOND_PATH = {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_the_model_lessons_are_found():
    names = {p.stem[:2] for p in MODEL_NOTEBOOKS if p.parent.name == "notebooks"}
    assert {"03", "05", "08", "09", "10"} <= names, names


def _engine_lessons() -> tuple[str, ...]:
    """The root conftest's ENGINE_LESSONS: it skips their cells when llama-cpp-python is missing."""
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ENGINE_LESSONS


@pytest.mark.slow
@pytest.mark.parametrize("notebook", MODEL_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_same_outputs_under_a_second_float_path(notebook: Path) -> None:
    engines = importlib.util.find_spec("llama_cpp") is not None or os.environ.get("QLESSON_REQUIRE_ENGINES") == "1"
    if notebook.parent.name == "notebooks" and notebook.name in _engine_lessons() and not engines:
        pytest.skip(f"{notebook.name} needs llama-cpp-python (`make engines`); nbval skips its cells here")
    env = {**os.environ, **SECOND_PATH, "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    result = subprocess.run(
        [*cmd, str(notebook.relative_to(ROOT))], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    tail = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, f"{notebook.name} prints other digits under {SECOND_PATH}:\n{tail}"
    assert " passed" in tail and " failed" not in tail, tail

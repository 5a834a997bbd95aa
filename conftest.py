"""Root pytest hooks: the jupytext sources beside the notebooks are lessons, not modules.

``--doctest-modules`` would import (run) them; nbval runs their paired ``.ipynb`` instead.
The learner's ``workspace/`` is never collected. A lesson that runs llama.cpp (lesson 11) needs the optional
llama-cpp-python (``make engines``): without it, nbval skips that lesson with one line saying so, unless
``QLESSON_REQUIRE_ENGINES=1`` (CI), where it runs and fails.
"""

import importlib.util
import os
from pathlib import Path

import pytest

collect_ignore_glob = ["notebooks/*.py", "exercises/*.py", "exercises/solutions/*.py", "workspace/*"]

ENGINE_LESSONS = ("11_your_model_in_an_engine.ipynb",)  # lesson notebooks whose cells call llama_cpp
_LESSONS = Path(__file__).resolve().parent / "notebooks"


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec("llama_cpp") is not None or os.environ.get("QLESSON_REQUIRE_ENGINES") == "1":
        return
    skip = pytest.mark.skip(reason="llama-cpp-python is not installed: run `make engines` (lesson 11 runs llama.cpp)")
    for item in items:
        path = Path(str(item.fspath)).resolve()
        if path.parent == _LESSONS and path.name in ENGINE_LESSONS:
            item.add_marker(skip)

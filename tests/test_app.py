"""`make app`: the calculator page alone, and a quiet log when a tab closes (no browser needed here).

tests/test_browser.py drives the page itself in Chromium.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

from qlesson.course import app

ROOT = Path(__file__).resolve().parents[1]


def test_the_app_notebook_is_the_calculator_alone():
    nb = nbformat.read(str(app.NOTEBOOK), as_version=4)
    assert [c.cell_type for c in nb.cells] == ["code"]
    assert nb.cells[0].source == "from qlesson.teach import widgets\n\nwidgets.calculator()"
    assert nb.cells[0].outputs == []  # Voila runs it; nothing stored
    assert "$(PY) -m qlesson.course.app --port=$(APP_PORT)" in (ROOT / "Makefile").read_text()


def test_the_app_runs_on_localhost_with_a_pre_heated_kernel():
    args = app.voila_args(["--port=9999"])
    assert args[0] == str(app.NOTEBOOK) and args[-1] == "--port=9999"
    assert {"--Voila.ip=127.0.0.1", "--preheat_kernel=True", "--pool_size=1", "--no-browser"} <= set(args)


_LOGS = """
import logging, sys
from tornado.websocket import WebSocketClosedError
from qlesson.course.app import quiet_closed_tabs

voila = logging.getLogger("Voila")  # as traitlets sets up an application's log: its own handler
voila.addHandler(logging.StreamHandler(sys.stderr))
voila.propagate = False
quiet_closed_tabs()
for name in ("asyncio", "tornado.general", "Voila"):
    for err in (WebSocketClosedError(), ValueError(f"a real error via {name}")):
        try:
            raise err
        except Exception:
            logging.getLogger(name).error("Exception in callback", exc_info=True)
"""


def test_a_closed_tab_leaves_no_traceback_and_real_errors_still_show():
    out = subprocess.run([sys.executable, "-c", _LOGS], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "WebSocketClosedError" not in out.stderr
    for name in ("asyncio", "tornado.general", "Voila"):
        assert f"ValueError: a real error via {name}" in out.stderr, out.stderr

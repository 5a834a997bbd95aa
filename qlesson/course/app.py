"""``make app``: lesson 07's calculator alone, as a page served by Voila on localhost.

The page is ``app/calculator.ipynb``: one cell, ``widgets.calculator()``, and nothing else (no
environment table, no quiz, no lesson text; Voila shows outputs, never code). Voila keeps one
kernel *pre-heated*: it has already imported qlesson and run the cell before a browser asks, so
the widget shows within about a second or two of the page loading instead of after a kernel
start and an import of torch (about 10 s on a busy 2-core machine). The pool refills in the
background after each visit.

When a browser tab closes while the kernel is still sending it messages, tornado or Voila log a
``WebSocketClosedError`` with its traceback: nothing is wrong (the page is gone), so
:class:`ClosedTab` leaves those records out of the log.

``python -m qlesson.course.app [--port=8866]`` serves it (``make app`` runs exactly this).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "app" / "calculator.ipynb"


def voila_args(argv: list[str], notebook: Path = NOTEBOOK) -> list[str]:
    """Voila's command line for the calculator page: localhost, one pre-heated kernel, no browser opened.

    >>> voila_args(["--port=9000"], Path("calc.ipynb"))  # doctest: +NORMALIZE_WHITESPACE
    ['calc.ipynb', '--no-browser', '--Voila.ip=127.0.0.1', '--preheat_kernel=True', '--pool_size=1', '--port=9000']
    """
    return [
        str(notebook),
        "--no-browser",
        "--Voila.ip=127.0.0.1",
        "--preheat_kernel=True",
        "--pool_size=1",
        *argv,  # e.g. --port=NNNN (Voila's default is 8866)
    ]


class ClosedTab(logging.Filter):
    """Leaves out log records about a message sent to a browser tab that was already closed."""

    def filter(self, record: logging.LogRecord) -> bool:
        from tornado.iostream import StreamClosedError
        from tornado.websocket import WebSocketClosedError

        err = record.exc_info[1] if record.exc_info else None
        return not isinstance(err, (WebSocketClosedError, StreamClosedError))


def quiet_closed_tabs() -> None:
    """Put :class:`ClosedTab` on every log handler (the root logger gets one if it has none)."""
    root = logging.getLogger()
    if not root.handlers:  # else records would reach logging's last-resort handler, which no filter sees
        root.addHandler(logging.StreamHandler())
    loggers = [root, *(v for v in logging.root.manager.loggerDict.values() if isinstance(v, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if not any(isinstance(f, ClosedTab) for f in handler.filters):
                handler.addFilter(ClosedTab())


def main(argv: list[str]) -> int:
    """Serve the calculator page until Ctrl-C."""
    from voila.app import Voila

    app = Voila.instance()
    app.initialize(voila_args(argv))
    quiet_closed_tabs()  # after initialize: Voila's own handler exists by then
    app.start()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Run a learner's notebook code in a separate process and call their functions from outside.

The grader must judge behaviour where the learner's code cannot reach it: an answer cell that
replaces a name in :mod:`qlesson.course.checking` changes only the child process. The parent
sends inputs (pickled: the parent's own data), the child runs the learner's function and sends
back the result as plain data (:mod:`qlesson.course.plain`: JSON, arrays as raw bytes), never a
pickle, so nothing the learner's code returns can run code in the parent. The child is
``python -m qlesson.course.sandbox`` talking over a loopback socket (so whatever the learner
prints cannot garble the exchange). A call that does not return in time stops the child; the
sandbox is then ``broken`` and the grader starts a fresh one for the remaining tasks.

>>> with Sandbox(["def double(x):\\n    print('debug output is fine')\\n    return 2 * x", "n = 7"]) as box:
...     box.answer("double")(21), box.answer("n"), box.answer("missing").defined
(42, 7, False)
"""

from __future__ import annotations

import pickle
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import torch

from qlesson.course import plain
from qlesson.course.checking import RaisedElsewhere, changed_inputs

CALL_TIMEOUT_S = 30.0
START_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Missing:
    """A name the learner's code did not define (``errors``: what their cells raised)."""

    name: str
    errors: tuple[str, ...] = ()
    defined: bool = False


class LearnerError(RaisedElsewhere):
    """The learner's function raised, or returned something that cannot leave its process."""


def _send(conn: Connection, obj: Any) -> None:  # parent -> child: the grader's own inputs
    # plain pickle: Connection.send would share tensors through torch's shared-memory reducers
    conn.send_bytes(pickle.dumps(obj))


def _reply(conn: Connection, status: str, value: Any = None) -> None:  # child -> parent: plain data only
    try:
        data = plain.encode((status, value))
    except plain.NotPlain as err:
        data = plain.encode(("raised", str(err)))
    except Exception as err:  # a tensor that cannot be read (meta, a broken subclass): the learner's
        data = plain.encode(("raised", f"returned a value that could not be read ({type(err).__name__})"))
    conn.send_bytes(data)


def _reply_status(data: bytes) -> tuple[str, Any]:
    """A child's reply, decoded without running any code; a malformed one is the learner's error."""
    try:
        reply = plain.decode(data)
    except plain.NotPlain as err:
        raise LearnerError(str(err)) from None
    if not (isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[0], str)):
        raise LearnerError("the process running your code sent a malformed reply")
    return reply


def _run_cells(sources: list[str]) -> tuple[dict[str, Any], list[str]]:
    import io
    import os
    import warnings
    from contextlib import redirect_stderr, redirect_stdout

    from IPython.core.interactiveshell import InteractiveShell

    os.environ["MPLBACKEND"] = "Agg"  # plots are drawn nowhere; `%matplotlib inline` is accepted
    shell = InteractiveShell.instance(colors="nocolor")
    shell.register_magic_function(lambda line: None, "line", "matplotlib")  # any backend: nothing to show
    errors = []
    sink = io.StringIO()
    with warnings.catch_warnings(), redirect_stdout(sink), redirect_stderr(sink):
        warnings.simplefilter("ignore")
        for i, src in enumerate(sources):
            result = shell.run_cell(src, silent=True, store_history=False)
            err = result.error_before_exec or result.error_in_exec
            if err is not None:
                errors.append(f"cell {i + 1}: {type(err).__name__}: {err}")
    return shell.user_ns, errors


def _serve(conn: Connection, sources: list[str]) -> None:  # runs in the child process
    import io
    import warnings
    from contextlib import redirect_stderr, redirect_stdout

    ns, errors = _run_cells(sources)
    _reply(conn, "ready", errors)
    while True:
        try:
            kind, name, args = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        if name not in ns:
            _reply(conn, "missing")
            continue
        target = ns[name]
        if kind == "get" and callable(target):
            _reply(conn, "callable")
            continue
        before = [a.clone() if isinstance(a, torch.Tensor) else None for a in args]  # to see in-place changes
        try:
            with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                value = target(*args) if kind == "call" else target
        except NotImplementedError:
            _reply(conn, "not-implemented")
            continue
        except BaseException as err:  # the learner's error, reported as theirs
            _reply(conn, "raised", f"{type(err).__name__}: {err}")
            continue
        _reply(conn, "ok-changed-input" if changed_inputs(before, args) else "ok", value)


def _child(port: int) -> None:
    """Entry point of the child: read the token and the cells from stdin, then serve."""
    token, sources = pickle.loads(sys.stdin.buffer.read())
    sock = socket.create_connection(("127.0.0.1", port))
    conn = Connection(sock.detach())
    conn.send_bytes(token.encode("ascii"))
    _serve(conn, sources)


class _Remote:
    """A learner's function, called in the sandbox process."""

    def __init__(self, box: Sandbox, name: str) -> None:
        self.box, self.name = box, name

    def __repr__(self) -> str:
        return f"your function {self.name}"

    def __call__(self, *args: Any) -> Any:
        status, value = self.box._ask("call", self.name, args)
        if status == "not-implemented":
            raise NotImplementedError
        self.changed_input = status == "ok-changed-input"  # read by the checker for tasks that keep inputs
        if status not in ("ok", "ok-changed-input"):
            raise LearnerError(value)
        return value


class Sandbox:
    """A child process that ran ``sources`` (code cells, IPython syntax allowed) in order."""

    def __init__(self, sources: list[str]) -> None:
        self.sources = sources
        self.errors: list[str] = []
        self.broken: str | None = None  # why the child was stopped; every later call fails at once
        self.deadline: float | None = None  # time.monotonic() by which calls must return
        self.limit_s = CALL_TIMEOUT_S

    def __enter__(self) -> Sandbox:
        token = secrets.token_hex(16)
        server = socket.create_server(("127.0.0.1", 0))
        server.settimeout(60)
        cmd = [sys.executable, "-m", "qlesson.course.sandbox", str(server.getsockname()[1])]
        out = subprocess.DEVNULL
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=out, stderr=out)
        self._proc.stdin.write(pickle.dumps((token, self.sources)))
        self._proc.stdin.close()
        try:
            sock, _ = server.accept()
        except TimeoutError:
            self._proc.kill()
            raise LearnerError("the grading process did not start within 60 s") from None
        finally:
            server.close()
        self._conn = Connection(sock.detach())
        try:
            if self._conn.recv_bytes(64) != token.encode("ascii") or not self._conn.poll(START_TIMEOUT_S):
                self.close()
                raise LearnerError(f"your notebook did not finish running within {START_TIMEOUT_S:.0f} s")
            status, errors = _reply_status(self._conn.recv_bytes())
        except (EOFError, OSError):
            self.close()
            raise LearnerError("your notebook's code ended the Python process (exit() or a crash)") from None
        if status != "ready" or not (isinstance(errors, list) and all(isinstance(e, str) for e in errors)):
            self.close()
            raise LearnerError("the process running your notebook sent a malformed reply")
        self.errors = errors
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if hasattr(self, "_conn"):
            self._conn.close()
        self._proc.kill()
        self._proc.wait(5)

    def limit(self, seconds: float) -> None:
        """Calls from now on must all return within ``seconds`` (one task's time)."""
        self.limit_s, self.deadline = seconds, time.monotonic() + seconds

    def _break(self, why: str) -> LearnerError:
        self.broken = why
        self.close()
        return LearnerError(why)

    def _ask(self, kind: str, name: str, args: tuple = ()) -> tuple[str, Any]:
        if self.broken:
            raise LearnerError(self.broken)
        wait = CALL_TIMEOUT_S if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        try:
            _send(self._conn, (kind, name, args))
            if not self._conn.poll(wait):
                raise self._break(f"{name} did not return within {self.limit_s:g} s (an endless loop?)")
            return _reply_status(self._conn.recv_bytes())
        except (EOFError, OSError):
            raise self._break(f"the process running your code stopped while running {name}") from None

    def answer(self, name: str) -> Any:
        """The learner's ``name``: a callable proxy for a function, the value itself otherwise."""
        status, value = self._ask("get", name)
        if status == "missing":
            return Missing(name, tuple(self.errors))
        if status == "callable":
            return _Remote(self, name)
        if status == "ok":
            return value
        if status == "not-implemented":
            return Ellipsis
        raise LearnerError(value)


if __name__ == "__main__":
    _child(int(sys.argv[1]))

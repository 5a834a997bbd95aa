"""Run a learner's notebook code in a separate process and call their functions from outside.

The grader must judge behaviour where the learner's code cannot reach it: an answer cell that
replaces a name in :mod:`qlesson.course.checking` changes only the child process. The parent
sends inputs, the child runs the learner's function and sends back the result (pickled), and
the parent compares it with its own reference. The child is ``python -m qlesson.course.sandbox``
talking over a loopback socket (so whatever the learner prints cannot garble the exchange).

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
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

CALL_TIMEOUT_S = 120.0
START_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Missing:
    """A name the learner's code did not define (``errors``: what their cells raised)."""

    name: str
    errors: tuple[str, ...] = ()
    defined: bool = False


class LearnerError(Exception):
    """The learner's function raised, or returned something that cannot leave its process."""


def _send(conn: Connection, obj: Any) -> None:
    # plain pickle: Connection.send would share tensors through torch's shared-memory reducers
    conn.send_bytes(pickle.dumps(obj))


def _recv(conn: Connection) -> Any:
    return pickle.loads(conn.recv_bytes())


def _run_cells(sources: list[str]) -> tuple[dict[str, Any], list[str]]:
    import io
    import warnings
    from contextlib import redirect_stderr, redirect_stdout

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance(colors="nocolor")
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
    _send(conn, ("ready", errors))
    while True:
        try:
            request = _recv(conn)
        except EOFError:
            return
        kind, name, args = request
        if name not in ns:
            _send(conn, ("missing", None))
            continue
        target = ns[name]
        if kind == "get" and callable(target):
            _send(conn, ("callable", None))
            continue
        try:
            with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                value = target(*args) if kind == "call" else target
        except NotImplementedError:
            _send(conn, ("not-implemented", None))
            continue
        except BaseException as err:  # the learner's error, reported as theirs
            _send(conn, ("raised", f"{type(err).__name__}: {err}"))
            continue
        try:
            _send(conn, ("ok", value))
        except Exception:
            text = repr(value)[:80]
            _send(conn, ("raised", f"returned {text}, which is not a number, tensor, list or tuple"))


def _child(port: int) -> None:
    """Entry point of the child: read the token and the cells from stdin, then serve."""
    token, sources = pickle.loads(sys.stdin.buffer.read())
    sock = socket.create_connection(("127.0.0.1", port))
    conn = Connection(sock.detach())
    _send(conn, token)
    _serve(conn, sources)


class _Remote:
    """A learner's function, called in the sandbox process."""

    def __init__(self, box: Sandbox, name: str) -> None:
        self.box, self.name = box, name

    def __call__(self, *args: Any) -> Any:
        status, value = self.box._ask("call", self.name, args)
        if status == "not-implemented":
            raise NotImplementedError
        if status != "ok":
            raise LearnerError(value)
        return value


class Sandbox:
    """A child process that ran ``sources`` (code cells, IPython syntax allowed) in order."""

    def __init__(self, sources: list[str]) -> None:
        self.sources = sources
        self.errors: list[str] = []

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
            if _recv(self._conn) != token or not self._conn.poll(START_TIMEOUT_S):
                self.close()
                raise LearnerError(f"your notebook did not finish running within {START_TIMEOUT_S:.0f} s")
            _, self.errors = _recv(self._conn)
        except EOFError:
            self.close()
            raise LearnerError("your notebook's code ended the Python process (exit() or a crash)") from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()
        self._proc.kill()
        self._proc.wait(5)

    def _ask(self, kind: str, name: str, args: tuple = ()) -> tuple[str, Any]:
        try:
            _send(self._conn, (kind, name, args))
            if not self._conn.poll(CALL_TIMEOUT_S):
                raise LearnerError(f"{name} did not return within {CALL_TIMEOUT_S:.0f} s")
            return _recv(self._conn)
        except (EOFError, BrokenPipeError, OSError):
            raise LearnerError(f"the process running your code stopped while running {name}") from None

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

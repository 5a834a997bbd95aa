"""Run a learner's notebook code in a separate process and call their functions from outside.

The grader must judge behaviour where the learner's code cannot reach it: an answer cell that
replaces a name in :mod:`qlesson.course.checking` changes only the child process. The parent
sends inputs (pickled: the parent's own data), the child runs the learner's function and sends
back the result as plain data (:mod:`qlesson.course.plain`: JSON, arrays as raw bytes), never a
pickle, so nothing the learner's code returns can run code in the parent. The exchange runs over
a private socket (a socket pair on Linux and macOS, loopback with a token on Windows), so
whatever the learner prints cannot garble it. A call that does not return in time stops the
child; the sandbox is then ``broken`` and the grader starts a fresh one for the remaining tasks.

The child is isolated where that costs nothing:

* ``python -I`` (no ``PYTHON*`` variables, no user site, no current directory on ``sys.path``),
  importing the parent's own ``qlesson`` package by its path;
* a throw-away working directory (``folder``'s files copied in, so a helper ``.py`` beside the
  notebook imports as in JupyterLab), deleted at the end;
* a scrubbed environment (:func:`child_env`), with ``QLESSON_GRADING=1`` so that ``make grade``
  run from inside a graded notebook refuses instead of recursing;
* its own process group (session), killed whole at the end: a background process a cell
  started dies with it;
* optionally an OS sandbox: ``wrap(workdir)`` gives a command prefix (the clean room's
  bubblewrap, :mod:`qlesson.course.cleanroom`).

>>> with Sandbox(["def double(x):\\n    print('debug output is fine')\\n    return 2 * x", "n = 7"]) as box:
...     box.answer("double")(21), box.answer("n"), box.answer("missing").defined
(42, 7, False)
"""

from __future__ import annotations

import os
import pickle
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch

import qlesson
from qlesson.course import plain
from qlesson.course.checking import RaisedElsewhere, changed_inputs

CALL_TIMEOUT_S = 30.0
MAX_REPLY_BYTES = 2**30  # a learner's reply above 1 GiB is refused unread
START_TIMEOUT_S = 120.0  # the whole notebook's cells; the solutions take under 10 s on one core
GRADING_VAR = "QLESSON_GRADING"  # set in the child: `make grade` inside a graded notebook refuses
# what the child keeps of the environment (everything else, tokens and PYTHON* included, is dropped)
_KEEP = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TERM", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_HOME"}
_KEEP |= {"SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "XDG_CACHE_HOME"}
_KEEP_PREFIXES = ("LC_", "HF_", "TRANSFORMERS_", "TOKENIZERS_")
# the child imports exactly the parent's qlesson, by path, whatever sys.path says
_BOOT = (
    "import importlib.util as u, sys; pkg = sys.argv[1]\n"
    "spec = u.spec_from_file_location('qlesson', pkg + '/__init__.py', submodule_search_locations=[pkg])\n"
    "m = sys.modules['qlesson'] = u.module_from_spec(spec); spec.loader.exec_module(m)\n"
    "from qlesson.course.sandbox import _child; _child(sys.argv[2])"
)


@dataclass(frozen=True)
class Missing:
    """A name the learner's code did not define (``errors``: what their cells raised)."""

    name: str
    errors: tuple[str, ...] = ()
    defined: bool = False


class LearnerError(RaisedElsewhere):
    """The learner's function raised, or returned something that cannot leave its process."""


class _Wire:
    """The parent's end of the private socket: multiprocessing's framing, with a deadline on every read and write.

    A child that stops reading (a stopped process) or sends a frame's header and then nothing
    cannot hang the grader, and a reply larger than ``MAX_REPLY_BYTES`` is refused unread.
    Messages to the child are plain pickles of the grader's own inputs (``Connection.send`` would
    share tensors through torch's shared-memory reducers).
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, obj: Any, deadline: float) -> None:
        data = pickle.dumps(obj)
        head = struct.pack("!i", len(data)) if len(data) <= 0x7FFFFFFF else struct.pack("!iQ", -1, len(data))
        self._wait(deadline)
        self.sock.sendall(head + data)  # the timeout bounds the whole sendall

    def recv(self, deadline: float, limit: int = 0) -> bytes:
        (size,) = struct.unpack("!i", self._read(4, deadline))
        if size == -1:
            (size,) = struct.unpack("!Q", self._read(8, deadline))
        if not 0 <= size <= (limit or MAX_REPLY_BYTES):
            raise _BadFrame(f"a reply of {size} bytes (at most {(limit or MAX_REPLY_BYTES) >> 20} MB)")
        return self._read(size, deadline)

    def _read(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            self._wait(deadline)
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def _wait(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)


class _BadFrame(Exception):
    """The child sent something that is not one of its replies (the stream can no longer be read)."""


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


def _copy(arg: Any) -> Any:
    """An untouched copy of a tensor or array argument (None for anything else), to see in-place changes."""
    import numpy as np

    if isinstance(arg, torch.Tensor):
        return arg.clone()
    return arg.copy() if isinstance(arg, np.ndarray) else None


def _run_cells(sources: list[str]) -> tuple[dict[str, Any], list[str]]:
    import io
    import os
    import warnings
    from contextlib import redirect_stderr, redirect_stdout

    from IPython.core.interactiveshell import InteractiveShell

    os.environ["MPLBACKEND"] = "Agg"  # plots are drawn nowhere; `%matplotlib inline` is accepted
    sys.path.insert(0, os.getcwd())  # as in JupyterLab: a helper .py beside the notebook imports (this process only)
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
                first = next((line.strip() for line in src.splitlines() if line.strip()), "")
                errors.append(f"your code cell {i + 1} (it starts `{first[:60]}`): {type(err).__name__}: {err}")
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
        before = [_copy(a) for a in args]  # to see in-place changes
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


def _child(where: str) -> None:
    """Entry point of the child: ``fd:N`` (an inherited socket) or ``port:N`` (loopback, with a token on stdin)."""
    kind, _, number = where.partition(":")
    if kind == "fd":
        conn = Connection(int(number))
        sources = pickle.loads(conn.recv_bytes())
    else:
        token, sources = pickle.loads(sys.stdin.buffer.read())
        sock = socket.create_connection(("127.0.0.1", int(number)))
        conn = Connection(sock.detach())
        conn.send_bytes(token.encode("ascii"))
    _serve(conn, sources)


def child_env(workdir: Path) -> dict[str, str]:
    """The child's environment: a short allow-list of the parent's, plus the grader's own settings.

    >>> env = child_env(Path("w"))
    >>> env["QLESSON_GRADING"], env["MPLBACKEND"], "PYTHONPATH" in env, "HF_TOKEN" in env
    ('1', 'Agg', False, False)
    """
    env = {k: v for k, v in os.environ.items() if k in _KEEP or k.startswith(_KEEP_PREFIXES)}
    env.pop("HF_TOKEN", None)
    env |= {"MPLBACKEND": "Agg", "MPLCONFIGDIR": str(workdir / ".matplotlib"), GRADING_VAR: "1"}
    env |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TMPDIR": str(workdir)}
    return env


def _adopt_orphans() -> bool:
    """On Linux, make this process the subreaper of its descendants (``PR_SET_CHILD_SUBREAPER``).

    A process a learner's cell detaches from its process group (``setsid``, a double fork) then
    comes back to this process as its child when its parent ends, where :func:`_kill_strays` finds it;
    otherwise it would outlive ``make grade`` (the clean room's bubblewrap kills its whole process tree).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    """The process ids whose parent is this process (``/proc/PID/stat``'s fourth field)."""
    me, found = os.getpid(), []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me:
            found.append(int(entry.name))
    return found


def _kill_strays(known: set[int]) -> None:
    """Kill and reap this process's children that are not in ``known``: what a graded notebook left behind."""
    for _ in range(20):  # a killed stray's own children come back here in turn
        strays = [pid for pid in _children() if pid not in known]
        if not strays:
            return
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


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
    """A child process that ran ``sources`` (code cells, IPython syntax allowed) in order.

    ``folder``: files copied into the child's throw-away working directory (the notebook's own
    folder); ``wrap``: given that directory, a command prefix that runs the child in an OS sandbox.
    """

    def __init__(
        self,
        sources: list[str],
        folder: Path | None = None,
        wrap: Callable[[Path], list[str]] | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.sources = sources
        self.folder, self.wrap, self.start_timeout_s = folder, wrap, start_timeout_s
        self.errors: list[str] = []
        self.broken: str | None = None  # why the child was stopped; every later call fails at once
        self.deadline: float | None = None  # time.monotonic() by which calls must return
        self.limit_s = CALL_TIMEOUT_S

    def _workdir(self) -> Path:
        work = Path(tempfile.mkdtemp(prefix="qlesson-grade-")).resolve()
        if self.folder is not None and self.folder.is_dir():
            skip = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", ".git", "*.bak*")
            shutil.copytree(self.folder, work, ignore=skip, dirs_exist_ok=True, symlinks=True)
        return work

    def __enter__(self) -> Sandbox:
        self._known = set(_children()) if _adopt_orphans() else None  # this process's own children, before the box
        self.workdir = self._workdir()
        package = str(Path(qlesson.__file__).resolve().parent)
        cmd = [*(self.wrap(self.workdir) if self.wrap else []), sys.executable, "-I", "-c", _BOOT, package]
        popen = {"cwd": self.workdir, "env": child_env(self.workdir), "stdout": subprocess.DEVNULL}
        popen["stderr"] = subprocess.DEVNULL
        if os.name == "posix":  # a private socket pair; the child leads its own session (process group)
            mine, theirs = socket.socketpair()
            cmd.append(f"fd:{theirs.fileno()}")
            self._proc = subprocess.Popen(cmd, pass_fds=[theirs.fileno()], start_new_session=True, **popen)
            theirs.close()
            self._wire = _Wire(mine)
            self._start_posix()
        else:
            self._start_loopback(cmd, popen)
        try:
            status, errors = _reply_status(self._wire.recv(time.monotonic() + self.start_timeout_s))
        except TimeoutError:
            self.close()
            raise LearnerError(f"your notebook did not finish running within {self.start_timeout_s:.0f} s") from None
        except (EOFError, OSError, _BadFrame):
            self.close()
            raise LearnerError("your notebook's code ended the Python process (exit() or a crash)") from None
        if status != "ready" or not (isinstance(errors, list) and all(isinstance(e, str) for e in errors)):
            self.close()
            raise LearnerError("the process running your notebook sent a malformed reply")
        self.errors = errors
        return self

    def _start_posix(self) -> None:
        try:
            self._wire.send(self.sources, time.monotonic() + 60)
        except OSError:
            self.close()
            raise LearnerError("the grading process did not start") from None

    def _start_loopback(self, cmd: list[str], popen: dict[str, Any]) -> None:
        token = secrets.token_hex(16)
        server = socket.create_server(("127.0.0.1", 0))
        server.settimeout(60)
        cmd.append(f"port:{server.getsockname()[1]}")
        flags = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, creationflags=flags, **popen)
        self._proc.stdin.write(pickle.dumps((token, self.sources)))
        self._proc.stdin.close()
        try:
            sock, _ = server.accept()
        except TimeoutError:
            self.close()
            raise LearnerError("the grading process did not start within 60 s") from None
        finally:
            server.close()
        self._wire = _Wire(sock)
        try:
            ok = self._wire.recv(time.monotonic() + 60, limit=64) == token.encode("ascii")
        except (EOFError, OSError, _BadFrame):
            ok = False
        if not ok:
            self.close()
            raise LearnerError("your notebook's code ended the Python process (exit() or a crash)")

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the child and everything it started in its process group, and delete its directory."""
        if hasattr(self, "_wire"):
            self._wire.sock.close()
        if hasattr(self, "_proc"):
            if os.name == "posix":
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            self._proc.kill()
            self._proc.wait(5)
        if getattr(self, "_known", None) is not None:
            _kill_strays(self._known | {self._proc.pid} if hasattr(self, "_proc") else self._known)
        if getattr(self, "workdir", None) is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

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
        deadline = time.monotonic() + CALL_TIMEOUT_S if self.deadline is None else self.deadline
        try:
            self._wire.send((kind, name, args), deadline)
            data = self._wire.recv(deadline)
        except TimeoutError:  # also a child that stopped reading, or sent half a reply
            raise self._break(f"{name} did not return within {self.limit_s:g} s (an endless loop?)") from None
        except _BadFrame as err:
            raise self._break(f"{name} sent {err}, not a result") from None
        except (EOFError, OSError):
            raise self._break(f"the process running your code stopped while running {name}") from None
        return _reply_status(data)

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
    _child(sys.argv[1])

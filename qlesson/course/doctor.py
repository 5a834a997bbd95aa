"""``make doctor``: is this set-up sound? One line per check, and the fix for each FAIL.

Checks the Python version, that it runs in the course's ``.venv``, every pinned version, the
Python behind the ``python3`` kernel JupyterLab will start, Chromium for the authors' browser
tests (optional: an INFO line, never a failure), and free disk. ``python -m qlesson.course.doctor``
(what ``make doctor`` and ``course.py doctor`` run inside the venv) exits 1 when any check fails.

>>> print(Check("disk", False, "0.2 GiB free", "free up some space").line())
FAIL disk                   0.2 GiB free -> fix: free up some space
>>> print(Check("chromium", False, "not found", "apt-get install chromium", optional=True).line())
INFO chromium               not found (only the authors' browser tests need it: apt-get install chromium)
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from qlesson.course.env import PINS, ROOT, installed_version, matches_pin, pins

MIN_PYTHON = (3, 11)
MIN_FREE_GIB = 1.0
CHROMIUM = Path("/usr/bin/chromium")
SETUP = "make setup (Windows: py course.py setup)"


@dataclass(frozen=True)
class Check:
    """One check's result: ``fix`` says what to do when ``ok`` is False."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    optional: bool = False  # a learner never needs it: reported as INFO, never as a failure

    @property
    def failed(self) -> bool:
        return not self.ok and not self.optional

    def line(self) -> str:
        """``OK   name  detail``, ``FAIL name  detail -> fix: ...`` or, optional, ``INFO name  detail (...)``."""
        if not self.ok and self.optional:
            return f"{'INFO':<4} {self.name:<22} {self.detail} (only the authors' browser tests need it: {self.fix})"
        head = f"{'OK' if self.ok else 'FAIL':<4} {self.name:<22} {self.detail}"
        return head if self.ok else f"{head} -> fix: {self.fix}"


def check_python(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> Check:
    """Python 3.11 or newer.

    >>> check_python((3, 10, 4)).ok, check_python((3, 11, 7)).ok
    (False, True)
    """
    shown = ".".join(map(str, version))
    fix = "install Python 3.11 (python.org, pyenv, or your package manager), then make clean && make setup"
    return Check("python", tuple(version[:2]) >= MIN_PYTHON, shown, fix)


def check_venv(prefix: Path = Path(sys.prefix), venv: Path = ROOT / ".venv") -> Check:
    """Running in the course's own ``.venv``.

    >>> check_venv(Path("/usr"), Path("/repo/.venv")).ok
    False
    """
    ok = prefix.resolve() == venv.resolve()
    detail = f"{venv.name} in use" if ok else f"running in {prefix}, not {venv}"
    return Check("venv", ok, detail, f"{SETUP}, then run the course's commands (make ...) that use {venv.name}")


def check_pins(pins_file: Path = PINS) -> list[Check]:
    """One check per pinned package: installed version against the pin (``+cpu`` accepted)."""
    if not pins_file.exists():
        return [Check("pins", False, f"{pins_file} not found", "run this from the course's repo")]
    out = []
    for name, pinned in pins(pins_file).items():
        have = installed_version(name)
        ok = matches_pin(have, pinned)
        detail = f"{have}" if ok else f"{have}, pinned {pinned}"
        out.append(Check(name, ok, detail, SETUP if have == "not installed" else f"make clean && {SETUP}"))
    return out


def kernel_executable(name: str = "python3") -> str | None:
    """The Python that JupyterLab's ``name`` kernel starts (None when there is no such kernel)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        argv = KernelSpecManager().get_kernel_spec(name).argv
    except NoSuchKernel:
        return None
    # jupyter_client starts a kernel whose argv[0] is a bare "python" with the server's own Python
    bare = {"python", "python3", "python{}.{}".format(*sys.version_info[:2])}
    return sys.executable if argv[0] in bare else argv[0]


def check_kernel(executable: str | None, expected: str = sys.executable) -> Check:
    """The ``python3`` kernel runs ``expected`` (the venv's Python), not another installation.

    >>> check_kernel("/usr/bin/python3", "/repo/.venv/bin/python").ok
    False
    """
    fix = "python -m ipykernel install --sys-prefix  (run with the venv's python), or pick that kernel in JupyterLab"
    if executable is None:
        return Check("kernel", False, "no python3 kernel found", fix)
    ok = Path(executable).absolute() == Path(expected).absolute()
    return Check("kernel", ok, f"python3 runs {executable}", fix)


def check_chromium(path: Path = CHROMIUM) -> Check:
    """Chromium for the authors' browser tests (they skip without it; CI installs it): optional."""
    fix = "sudo apt-get install -y chromium on Debian/Ubuntu; elsewhere they skip"
    return Check("chromium", path.exists(), str(path) if path.exists() else f"{path} not found", fix, optional=True)


def check_disk(path: Path = ROOT, need_gib: float = MIN_FREE_GIB) -> Check:
    """At least ``need_gib`` GiB free where the course lives.

    >>> check_disk(need_gib=1e9).ok
    False
    """
    free = shutil.disk_usage(path).free / 2**30
    return Check("disk", free >= need_gib, f"{free:.1f} GiB free", f"free at least {need_gib:g} GiB on {path}")


def checks() -> list[Check]:
    """Every check, in the order ``make doctor`` prints them."""
    try:
        kernel = kernel_executable()
    except ImportError:  # jupyter_client missing: the pins check says what to install
        kernel = None
    return [check_python(), check_venv(), *check_pins(), check_kernel(kernel), check_chromium(), check_disk()]


def main() -> int:
    """Print one line per check; 0 when all pass, 1 otherwise."""
    results = checks()
    for c in results:
        print(c.line())
    failed = [c.name for c in results if c.failed]
    info = sum(not c.ok and c.optional for c in results)
    print(
        f"doctor: {sum(c.ok for c in results)} OK, {len(failed)} FAIL"
        + (f" ({', '.join(failed)})" if failed else "")
        + (f", {info} INFO" if info else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Set up and run the course the same way on Linux, macOS and Windows (standard library only).

    python course.py setup     create .venv: CPU torch, the pinned versions, qlesson itself
    python course.py lab       set up if needed, then open JupyterLab on your workspace
    python course.py test      set up if needed, then run the whole test suite
    python course.py doctor    check the set-up: one line per check, with the fix for each FAIL
    python course.py site      set up if needed, then render the lessons as static HTML in site/
    python course.py grade     grade your exercises in workspace/exercises (NN for one; --detail)
    python course.py stats     each lesson's words, run time and honest time
    python course.py latest    a separate .venv-latest with the newest releases, then the suite
    python course.py engines   the optional engines of lesson 11 (llama-cpp-python, built from source once)

On Windows type ``py`` for ``python``. The Makefile calls this script for ``make setup``,
``make doctor`` and ``make test-latest``; ``make lab`` and ``make test`` run the same commands.

torch comes from PyTorch's CPU-only wheel index (small, no CUDA libraries). The environment
variable TORCH_INDEX picks another index: TORCH_INDEX=pypi takes PyPI's build (the CUDA build
on Linux, for the GPU rows of lesson 06). If the index does not answer within 5 seconds,
torch comes from PyPI instead, with a one-line message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
LATEST_VENV = ROOT / ".venv-latest"
REQUIREMENTS = ROOT / "requirements" / "requirements.txt"
LOCK = ROOT / "requirements" / "lock.txt"
STAMP_NAME = ".qlesson-installed"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_PIN = "torch==2.13.0"
PROBE_SECONDS = 5.0
MIN_PYTHON = (3, 11)
BAR = ["--progress-bar", "on"]  # the two large installs show pip's download bar (never --quiet)


def venv_python(venv: Path = VENV) -> Path:
    """The Python inside ``venv``: ``bin/python`` on Linux and macOS, ``Scripts\\python.exe`` on Windows."""
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def torch_index() -> str:
    """The index torch comes from: $TORCH_INDEX, else PyTorch's CPU-only wheel index."""
    return os.environ.get("TORCH_INDEX", "").strip() or CPU_INDEX


def index_answers(index: str, seconds: float = PROBE_SECONDS) -> bool:
    """Does ``index`` serve a torch page within ``seconds`` (DNS included)? Never raises."""
    answered: list[bool] = []

    def probe() -> None:
        try:
            with urllib.request.urlopen(index.rstrip("/") + "/torch/", timeout=seconds) as r:
                answered.append(r.status == 200)
        except Exception:  # any failure (DNS, refused, TLS, HTTP error) means: not reachable
            answered.append(False)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(seconds + 1)
    return bool(answered and answered[0])


def torch_commands(python: Path, spec: str, index: str, reachable: bool) -> list[list[str]]:
    """The pip commands that install torch, first choice first (the next runs only if one fails).

    ``spec`` from ``index`` when it answered, else (or when that fails) :data:`TORCH_PIN` from
    PyPI; ``index="pypi"`` means PyPI's own build. torch alone (``--no-deps``): its dependencies
    come with the course's, under the lock.
    """
    pip = [str(python), "-m", "pip", "install", *BAR, "--no-deps"]
    if index == "pypi":
        return [[*pip, spec]]
    fallback = [*pip, TORCH_PIN]
    if not reachable:
        return [fallback]
    return [[*pip, "--index-url", index, "--timeout", "10", "--retries", "1", spec], fallback]


def install_torch(python: Path, spec: str = TORCH_PIN) -> None:
    """Install ``spec`` from :func:`torch_index`; when that fails, :data:`TORCH_PIN` from PyPI, with one line."""
    index = torch_index()
    reachable = index == "pypi" or index_answers(index)
    if not reachable:
        print(f"torch: {index} is not reachable; installing {TORCH_PIN} from PyPI instead")
    commands = torch_commands(python, spec, index, reachable)
    for i, cmd in enumerate(commands):
        if subprocess.call(cmd) == 0:
            return
        if i + 1 < len(commands):
            print(f"torch: installing from {index} failed; installing {TORCH_PIN} from PyPI instead")
    raise SystemExit(f"torch could not be installed: {' '.join(commands[-1])}")


def check_python() -> None:
    if sys.version_info < MIN_PYTHON:
        have = ".".join(map(str, sys.version_info[:3]))
        raise SystemExit(f"qlesson needs Python 3.11 or newer; this is {have}. Install 3.11 and run it with that.")


def make_venv(venv: Path) -> Path:
    python = venv_python(venv)
    if not python.exists():
        check_python()
        run([sys.executable, "-m", "venv", str(venv)])
    return python


def run(cmd: list[str]) -> None:
    """Run a command from the repo root; stop with its exit code if it fails."""
    code = subprocess.call(cmd, cwd=ROOT)
    if code != 0:
        raise SystemExit(code)


# What each stage puts on disk (measured in a Linux .venv; tests/test_setup.py keeps these within 25%)
TORCH_MB = 760
PINS_MB = 1200


def stage(n: int, what: str) -> None:
    """One line per set-up stage, flushed before pip's own output (and its download bar) begins."""
    print(f"setup {n}/4: {what}", flush=True)


def pinned_count(lock: Path = LOCK) -> int:
    """How many packages the lock pins (torch, installed on its own, left out)."""
    names = [line.split("==")[0].strip().lower() for line in lock.read_text().splitlines() if "==" in line]
    return len([n for n in names if n and not n.startswith("#") and n != "torch"])


def setup(venv: Path = VENV) -> Path:
    """Create ``venv`` with the pinned versions (torch first, from the CPU index) and qlesson.

    One line per stage, with what it puts on disk; pip shows its download bar for the two large ones.
    """
    made = venv_python(venv).exists()
    stage(1, f"a virtual environment in {venv.name}" + (" (there already: kept)" if made else ""))
    python = make_venv(venv)
    build = "CPU build" if torch_index() == CPU_INDEX else f"from {torch_index()}"
    stage(2, f"{TORCH_PIN.replace('==', ' ')}, {build} (about {TORCH_MB} MB on disk; pip's bar shows the download)")
    install_torch(python)
    stage(3, f"the course's {pinned_count()} pinned packages (about {PINS_MB / 1000:.1f} GB on disk)")
    run([str(python), "-m", "pip", "install", *BAR, "-r", str(REQUIREMENTS), "-c", str(LOCK)])
    stage(4, "qlesson itself (editable, under 1 MB)")
    run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(ROOT)])
    (venv / STAMP_NAME).touch()
    print(f"setup done: {venv.name} is ready; next: make lab (Windows: py course.py lab)", flush=True)
    return python


def needs_setup(venv: Path = VENV) -> bool:
    """True when the venv is missing or older than the pins (what make's stamp rule decides)."""
    stamp = venv / STAMP_NAME
    if not stamp.exists():
        return True
    inputs = (REQUIREMENTS, LOCK, ROOT / "pyproject.toml")
    return any(p.stat().st_mtime > stamp.stat().st_mtime for p in inputs)


def direct_names(requirements: Path = REQUIREMENTS) -> list[str]:
    """The direct dependencies' names, without their pins (for the newest-releases test)."""
    names = []
    for line in requirements.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            names.append(line.split("==")[0].strip())
    return names


def latest(venv: Path = LATEST_VENV) -> int:
    """Build ``venv`` with the newest release of every direct dependency and run the suite there."""
    python = make_venv(venv)
    # the newest torch on PyPI is the multi-GB CUDA build on Linux: the newest comes from the
    # CPU index only; when that fails, torch stays at the pin
    install_torch(python, "torch" if torch_index() != "pypi" else TORCH_PIN)
    others = [n for n in direct_names() if n != "torch"]
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", *others])
    run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(ROOT)])
    code = "from qlesson.course.env import pins_line, versions; print(versions()); print(pins_line())"
    run([str(python), "-c", code])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.call([str(python), "-m", "pytest", "-n", "2", "--dist", "loadfile", "--nbval"], cwd=ROOT, env=env)


def doctor(venv: Path = VENV) -> int:
    """Run the checks inside ``venv``; without a usable venv, say so and how to make one."""
    python = venv_python(venv)
    if not python.exists():
        print(f"FAIL venv        {venv.name} not found -> fix: make setup (Windows: py course.py setup)")
        return 1
    code = subprocess.call([str(python), "-m", "qlesson.course.doctor"], cwd=ROOT)
    if code not in (0, 1):
        print(f"FAIL qlesson     cannot run in {venv.name} -> fix: delete {venv.name}, then make setup")
        return 1
    return code


ENGINES_PIN = "llama-cpp-python==0.3.36"  # pyproject.toml's optional extra `engines`
COMPILERS = ("c++", "g++", "clang++", "cl")
BUILD_TOOLS = (
    "building llama.cpp needs cmake and a C++ compiler; install them, then run this again: "
    "Debian/Ubuntu: sudo apt-get install cmake g++ | macOS: xcode-select --install && brew install cmake | "
    "Windows: Visual Studio Build Tools (Desktop development with C++) and winget install Kitware.CMake"
)


def engines(venv: Path = VENV) -> int:
    """Install the optional extra ``engines`` (llama-cpp-python, compiled from source by pip) into ``venv``."""
    missing = [] if shutil.which("cmake") else ["cmake"]
    if not any(shutil.which(c) for c in COMPILERS):
        missing.append("a C++ compiler")
    if missing:
        print(f"engines: missing {' and '.join(missing)}. {BUILD_TOOLS}", flush=True)
        return 1
    python = setup(venv) if needs_setup(venv) else venv_python(venv)
    have = "import importlib.metadata as m, sys; sys.exit(m.version('llama-cpp-python') != sys.argv[1])"
    if subprocess.call([str(python), "-c", have, ENGINES_PIN.split("==")[1]], cwd=ROOT, stderr=subprocess.DEVNULL) == 0:
        print(f"engines: {ENGINES_PIN.replace('==', ' ')} is installed already", flush=True)
        return 0
    print(
        f"engines: {ENGINES_PIN.replace('==', ' ')}: building llama.cpp from source: 5-13 minutes on 2 cores, "
        "once; pip caches the wheel",
        flush=True,
    )
    # A portable build: llama.cpp's default -march=native can emit instructions (AMX, some AVX-512) that a VM's
    # CPU lists but traps on (SIGILL, a dead kernel in lesson 11). Set CMAKE_ARGS yourself to build otherwise.
    env = {**os.environ, "CMAKE_ARGS": os.environ.get("CMAKE_ARGS", "-DGGML_NATIVE=OFF")}
    return subprocess.call([str(python), "-m", "pip", "install", *BAR, ENGINES_PIN], cwd=ROOT, env=env)


def in_venv(args: list[str]) -> int:
    """Set up if needed, then run ``python ARGS`` with the venv's Python from the repo root."""
    python = setup() if needs_setup() else venv_python()
    env = {**os.environ, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if args[:2] == ["-m", "pytest"]:  # as `make test`: two workers, one thread each (no oversubscription)
        env |= {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.call([str(python), *args], cwd=ROOT, env={**env, "TOKENIZERS_PARALLELISM": "false"})


COMMANDS = {
    "lab": ["-m", "qlesson", "lab"],
    "test": ["-m", "pytest", "-n", "2", "--dist", "loadfile", "--nbval"],
    "site": ["-m", "qlesson.course.site"],
    "grade": ["-I", "-m", "qlesson", "grade"],  # -I: the current folder and PYTHON* variables import nothing
    "stats": ["-m", "qlesson", "stats"],
}


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "setup":
        setup()
        return 0
    if command == "doctor":
        return doctor()
    if command == "latest":
        return latest()
    if command == "engines":
        return engines()
    if command in COMMANDS:
        return in_venv(COMMANDS[command] + argv[1:])
    print(__doc__.split("\n\n")[1])
    return 0 if command in ("-h", "--help") else 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

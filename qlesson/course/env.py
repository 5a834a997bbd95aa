"""What the course runs on: the first cell of every notebook calls :func:`show_environment`."""

from __future__ import annotations

import platform
import re
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PINS = ROOT / "requirements" / "requirements.txt"

PACKAGES = ("qlesson", "torch", "numpy", "matplotlib", "ipywidgets", "gguf", "sentence-transformers")


def versions() -> dict[str, str]:
    """Installed versions of the packages the course uses ("not installed" if absent).

    >>> versions()["torch"].startswith("2.")
    True
    """
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def matches_pin(installed: str, pinned: str) -> bool:
    """Does an installed version satisfy ``==pinned``? A local label (``+cpu``) is accepted, as pip does.

    >>> matches_pin("2.13.0+cpu", "2.13.0"), matches_pin("2.13.0", "2.13.0"), matches_pin("2.13.1", "2.13.0")
    (True, True, False)
    >>> matches_pin("2.13.0+cpu", "2.13.0+cu128")
    False
    """
    if "+" in pinned:
        return installed == pinned
    return installed.split("+", 1)[0] == pinned


def pins(pins_file: Path = PINS) -> dict[str, str]:
    """The ``name==version`` pins of a requirements file, in file order.

    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "req.txt"
    >>> _ = f.write_text("# a comment\\ntorch==2.13.0  # why\\nnumpy==2.4.6\\n")
    >>> pins(f)
    {'torch': '2.13.0', 'numpy': '2.4.6'}
    """
    out = {}
    for line in pins_file.read_text().splitlines():
        m = re.match(r"^\s*([A-Za-z0-9_.\-]+)==([^\s#;]+)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def installed_version(name: str) -> str:
    """The installed version of ``name``, or "not installed"."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def pin_mismatches(pins_file: Path = PINS) -> dict[str, tuple[str, str]] | None:
    """Pinned packages whose installed version differs: name -> (installed, pinned).

    ``None`` when the pins file is not there (qlesson installed outside its repo).

    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "req.txt"
    >>> _ = f.write_text("torch==0.0.1  # a pin that cannot match\\nnot-a-real-package-xyz==1.0\\n")
    >>> sorted(pin_mismatches(f))
    ['not-a-real-package-xyz', 'torch']
    >>> _ = f.write_text("torch==" + installed_version("torch").split("+")[0] + "\\n")
    >>> pin_mismatches(f)  # a local label such as +cpu matches its pin
    {}
    """
    if not pins_file.exists():
        return None
    out = {}
    for name, pinned in pins(pins_file).items():
        installed = installed_version(name)
        if not matches_pin(installed, pinned):
            out[name] = (installed, pinned)
    return out


def pins_line(pins_file: Path = PINS) -> str:
    """One line: do the versions in use match the course's pins?"""
    bad = pin_mismatches(pins_file)
    if bad is None:
        return "pins: requirements/requirements.txt not found (qlesson is installed outside its repo)"
    if not bad:
        return "pins: every pinned version matches requirements/requirements.txt"
    listed = ", ".join(f"{k} {have} (pinned {want})" for k, (have, want) in sorted(bad.items()))
    return f"pins: {len(bad)} differ: {listed}; run `make setup` or use the course's .venv kernel"


def kernel_python(executable: str | None = None, prefix: str | None = None) -> str:
    """The Python this kernel runs, named relative to the repo when it is the course's venv.

    A conda environment (its prefix holds ``conda-meta/``) is README's conda route, not a wrong
    kernel: it is named as such, and the pins line below it checks its versions.

    >>> import tempfile
    >>> env = Path(tempfile.mkdtemp()) / "qlesson"
    >>> (env / "conda-meta").mkdir(parents=True)
    >>> kernel_python(str(env / "bin" / "python"), str(env)).endswith("(conda environment qlesson)")
    True
    >>> print(kernel_python("/usr/bin/python3", "/usr"))
    /usr/bin/python3 (not the course's .venv: check the kernel picker, top right)
    >>> print(kernel_python(str(ROOT / ".venv" / "bin" / "python"), str(ROOT / ".venv")))
    .venv/bin/python (the course's venv)
    """
    exe = Path(sys.executable if executable is None else executable)
    env = Path(sys.prefix if prefix is None else prefix)
    try:
        return f"{exe.relative_to(ROOT).as_posix()} (the course's venv)"
    except ValueError:
        pass
    if (env / "conda-meta").is_dir():
        return f"{exe} (conda environment {env.name})"
    return f"{exe} (not the course's .venv: check the kernel picker, top right)"


def cuda_device() -> str | None:
    """Name of the first CUDA GPU, or None when there is none."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return None


def show_environment() -> None:
    """Print the versions in use, whether they match the pins, the kernel's Python, and the GPU."""
    for name, version in versions().items():
        print(f"{name:<22} {version}")
    print(f"{'kernel Python':<22} {kernel_python()}")
    print(pins_line())
    gpu = cuda_device()
    print(f"{'CUDA GPU':<22} {gpu if gpu else 'none (no lesson cell needs one; lesson 06 shows stored GPU runs)'}")

"""What the course runs on: the first cell of every notebook calls :func:`show_environment`."""

from __future__ import annotations

import platform
from importlib import metadata

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


def cuda_device() -> str | None:
    """Name of the first CUDA GPU, or None when there is none."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return None


def show_environment() -> None:
    """Print the versions in use and whether a CUDA GPU is present."""
    for name, version in versions().items():
        print(f"{name:<22} {version}")
    gpu = cuda_device()
    print(f"{'CUDA GPU':<22} {gpu if gpu else 'none (CPU only: GPU cells will skip)'}")

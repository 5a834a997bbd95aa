"""Shared pytest hooks: list the artefacts (screenshots) a run wrote, so CI logs show where they are."""

import time
from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
_START = time.time()


def pytest_terminal_summary(terminalreporter):
    if not ARTIFACTS.exists():
        return
    new = sorted(p for p in ARTIFACTS.glob("*.png") if p.stat().st_mtime >= _START)
    if new:
        terminalreporter.section("artefacts written by this run")
        for p in new:
            terminalreporter.write_line(f"screenshot: {p}")

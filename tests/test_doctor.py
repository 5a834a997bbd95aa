"""`make doctor`: one line per check, OK or FAIL, and a fix for every FAIL."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from qlesson.course import doctor
from qlesson.course.env import installed_version

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^(OK  |FAIL|INFO) \S+ +.+$")


def test_failed_check_names_its_fix_and_passed_one_does_not():
    bad = doctor.Check("chromium", False, "/usr/bin/chromium not found", "sudo apt-get install -y chromium")
    good = doctor.Check("python", True, "3.11.7", "never shown")
    assert bad.line().startswith("FAIL chromium") and bad.line().endswith("-> fix: sudo apt-get install -y chromium")
    assert good.line().startswith("OK   python") and "fix" not in good.line()


def test_each_pin_is_checked_and_a_local_label_is_accepted(tmp_path):
    torch_base = installed_version("torch").split("+")[0]
    pins = tmp_path / "requirements.txt"
    pins.write_text(f"torch=={torch_base}\nnumpy==0.0.1\nnot-a-real-package-xyz==1.0\n")
    results = {c.name: c for c in doctor.check_pins(pins)}
    assert list(results) == ["torch", "numpy", "not-a-real-package-xyz"]
    assert results["torch"].ok
    assert not results["numpy"].ok and "pinned 0.0.1" in results["numpy"].detail
    assert "make clean && make setup" in results["numpy"].fix
    assert not results["not-a-real-package-xyz"].ok and results["not-a-real-package-xyz"].fix.startswith("make setup")
    missing = doctor.check_pins(tmp_path / "absent.txt")
    assert [c.ok for c in missing] == [False]


def test_python_venv_kernel_chromium_and_disk_checks_can_fail(tmp_path):
    assert not doctor.check_python((3, 10, 12)).ok and doctor.check_python((3, 12, 0)).ok
    assert doctor.check_venv(tmp_path, tmp_path).ok and not doctor.check_venv(Path(sys.prefix), tmp_path / ".venv").ok
    assert doctor.check_kernel(sys.executable, sys.executable).ok
    other = doctor.check_kernel("/usr/bin/python3", sys.executable)
    assert not other.ok and "ipykernel install --sys-prefix" in other.fix
    assert not doctor.check_kernel(None).ok
    assert not doctor.check_chromium(tmp_path / "chromium").ok and doctor.check_chromium(Path(sys.executable)).ok
    no_browser = doctor.check_chromium(tmp_path / "chromium")  # a learner's laptop: INFO, never a failure
    assert not no_browser.failed and no_browser.line().startswith("INFO chromium")
    assert doctor.check_disk(tmp_path, 0).ok and not doctor.check_disk(tmp_path, 1e9).ok


def test_kernel_jupyterlab_starts_is_found():
    exe = doctor.kernel_executable()
    assert exe is not None and Path(exe).name.startswith("python")
    assert doctor.kernel_executable("no-such-kernel-xyz") is None


def test_doctor_prints_one_line_per_check_and_fails_when_one_fails(capsys):
    code = doctor.main()
    lines = capsys.readouterr().out.splitlines()
    assert all(LINE.match(line) for line in lines[:-1]), lines
    names = [line.split()[1] for line in lines[:-1]]
    for name in ("python", "venv", "torch", "numpy", "kernel", "chromium", "disk"):
        assert name in names
    fails = [line for line in lines[:-1] if line.startswith("FAIL")]
    assert code == (1 if fails else 0)
    assert all("-> fix: " in line for line in fails)
    infos = [line for line in lines[:-1] if line.startswith("INFO")]
    assert lines[-1] == f"doctor: {len(lines) - 1 - len(fails) - len(infos)} OK, {len(fails)} FAIL" + (
        f" ({', '.join(line.split()[1] for line in fails)})" if fails else ""
    ) + (f", {len(infos)} INFO" if infos else "")


def _course():
    spec = importlib.util.spec_from_file_location("course_script", ROOT / "course.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_make_doctor_without_a_venv_says_how_to_make_one(tmp_path, capsys):
    course = _course()
    assert course.doctor(tmp_path / ".venv") == 1
    assert capsys.readouterr().out.startswith("FAIL venv") and "make setup" in (ROOT / "Makefile").read_text()


def test_make_doctor_runs_the_checks_in_the_venv():
    """course.py doctor (what `make doctor` runs) with this test run's Python as the venv."""
    code = "import sys, course; raise SystemExit(course.doctor(course.Path(sys.prefix)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    lines = out.stdout.splitlines()
    assert out.returncode in (0, 1) and lines[-1].startswith("doctor: "), out.stdout + out.stderr
    assert all(LINE.match(line) for line in lines[:-1])
    assert "@$(PYTHON) course.py doctor" in (ROOT / "Makefile").read_text()

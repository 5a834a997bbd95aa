"""Lesson 00 §1 tells the learner to read the `kernel Python` line: it must not raise a false alarm
on README's conda route, and must still flag a Python that is neither the venv nor conda."""

import sys

from qlesson.course import env


def test_an_active_conda_environment_is_named_not_sent_to_the_kernel_picker(tmp_path, monkeypatch):
    prefix = tmp_path / "envs" / "qlesson"
    (prefix / "conda-meta").mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(prefix / "bin" / "python"))
    monkeypatch.setattr(sys, "prefix", str(prefix))
    line = env.kernel_python()
    assert line.endswith("(conda environment qlesson)") and "kernel picker" not in line


def test_a_python_that_is_neither_the_venv_nor_conda_is_flagged(tmp_path, monkeypatch):
    prefix = tmp_path / "somewhere"
    prefix.mkdir()
    monkeypatch.setattr(sys, "executable", str(prefix / "bin" / "python"))
    monkeypatch.setattr(sys, "prefix", str(prefix))
    assert "check the kernel picker" in env.kernel_python()


def test_the_course_venv_is_named_as_such():
    exe = env.ROOT / ".venv" / "bin" / "python"
    assert env.kernel_python(str(exe), str(exe.parent.parent)) == ".venv/bin/python (the course's venv)"

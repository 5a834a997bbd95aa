"""The repo sets itself up from pinned versions and qlesson imports light."""

import ast
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _course():
    """The stdlib-only set-up script at the repo root, imported as a module."""
    spec = importlib.util.spec_from_file_location("course_script", ROOT / "course.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pins(lines):
    return {
        m.group(1).lower(): m.group(2)
        for line in lines
        if (m := re.match(r"^\s*-?\s*([A-Za-z0-9_.\-]+)==([^\s#]+)", line))
    }


def test_environment_yml_matches_requirements():
    req = _pins((ROOT / "requirements/requirements.txt").read_text().splitlines())
    env = _pins((ROOT / "environment.yml").read_text().splitlines())
    assert req["torch"] == "2.13.0"
    assert env == req


def test_torch_pin_and_cpu_index_agree_everywhere():
    course = _course()
    req = _pins((ROOT / "requirements/requirements.txt").read_text().splitlines())
    lock = _pins((ROOT / "requirements/lock.txt").read_text().splitlines())
    assert course.TORCH_PIN == f"torch=={req['torch']}" == f"torch=={lock['torch']}"
    assert course.CPU_INDEX == "https://download.pytorch.org/whl/cpu"
    assert f"TORCH_INDEX ?= {course.CPU_INDEX}" in (ROOT / "Makefile").read_text()
    assert f"--extra-index-url {course.CPU_INDEX}" in (ROOT / "environment.yml").read_text()


def test_every_direct_pin_is_in_the_lock():
    req = _pins((ROOT / "requirements/requirements.txt").read_text().splitlines())
    lock = _pins((ROOT / "requirements/lock.txt").read_text().splitlines())
    assert req, "no pins read"
    mismatched = {k: (v, lock.get(k)) for k, v in req.items() if lock.get(k) != v}
    assert not mismatched


def test_setup_installs_torch_first_from_the_cpu_index(monkeypatch, tmp_path):
    """`make setup` runs course.py, which installs torch alone from the CPU index, then the pins."""
    course = _course()
    assert "$(PYTHON) course.py setup" in (ROOT / "Makefile").read_text()
    assert "make test" in (ROOT / ".ci/run").read_text()
    calls = []
    monkeypatch.setattr(course.subprocess, "call", lambda cmd, **kw: calls.append(cmd) or 0)
    monkeypatch.setattr(course, "index_answers", lambda index, seconds=5: True)
    monkeypatch.delenv("TORCH_INDEX", raising=False)
    venv = tmp_path / "venv"
    course.venv_python(venv).parent.mkdir(parents=True)
    course.venv_python(venv).touch()
    course.setup(venv)
    assert calls[0][-7:] == ["--index-url", course.CPU_INDEX, "--timeout", "10", "--retries", "1", "torch==2.13.0"]
    assert "--no-deps" in calls[0]
    assert calls[1][-4:] == ["-r", str(course.REQUIREMENTS), "-c", str(course.LOCK)]
    assert calls[2][-3:] == ["--no-deps", "-e", str(ROOT)]
    assert len(calls) == 3 and (venv / course.STAMP_NAME).exists()


def test_setup_says_each_stage_with_its_size_and_shows_pips_bar_for_the_big_ones(monkeypatch, capsys, tmp_path):
    course = _course()
    calls = []

    def call(cmd, **kw):
        calls.append(cmd)
        print(f"<pip {len(calls)}>")  # where pip's own output lands among the stage lines
        return 0

    monkeypatch.setattr(course.subprocess, "call", call)
    monkeypatch.setattr(course, "index_answers", lambda index, seconds=5: True)
    monkeypatch.delenv("TORCH_INDEX", raising=False)
    venv = tmp_path / "venv"
    course.venv_python(venv).parent.mkdir(parents=True)
    course.venv_python(venv).touch()
    course.setup(venv)
    lines = capsys.readouterr().out.splitlines()
    assert [line[:9] for line in lines[:-1]] == [
        "setup 1/4",
        "setup 2/4",
        "<pip 1>",
        "setup 3/4",
        "<pip 2>",
        "setup 4/4",
        "<pip 3>",
    ], lines
    assert "torch 2.13.0, CPU build (about 760 MB on disk" in lines[1]
    assert f"{course.pinned_count()} pinned packages (about 1.2 GB on disk)" in lines[3]
    assert lines[-1].startswith("setup done") and "make lab" in lines[-1]
    for big in calls[:2]:  # torch and the pins: pip's progress bar, never --quiet
        assert "--quiet" not in big and big[4:6] == ["--progress-bar", "on"]
    assert "--quiet" in calls[2]  # qlesson itself: small, quiet


def _installed_mb(names: set[str] | None = None, leave_out: frozenset = frozenset()) -> float:
    from importlib import metadata

    total = 0
    for dist in metadata.distributions():
        name = dist.metadata["Name"].lower()
        if (names is None or name in names) and name not in leave_out:
            total += sum(p.stat().st_size for f in dist.files or [] if (p := Path(dist.locate_file(f))).is_file())
    return total / 1e6


def test_the_stated_sizes_match_this_venv():
    """The sizes the stage lines state are within 25% of what this environment holds."""
    course = _course()
    lock = {n.lower().replace("_", "-") for n in _pins((ROOT / "requirements/lock.txt").read_text().splitlines())}
    assert course.pinned_count() == len(lock - {"torch"})
    torch_mb = _installed_mb({"torch"})
    pins_mb = _installed_mb(lock - {"torch"})
    assert abs(torch_mb / course.TORCH_MB - 1) < 0.25, torch_mb
    assert abs(pins_mb / course.PINS_MB - 1) < 0.25, pins_mb


def test_unreachable_index_falls_back_to_pypi_quickly(monkeypatch, capsys, tmp_path):
    course = _course()
    monkeypatch.setenv("TORCH_INDEX", "http://127.0.0.1:9/whl/cpu")  # nothing listens on port 9
    start = time.monotonic()
    assert course.index_answers(course.torch_index()) is False
    assert time.monotonic() - start < course.PROBE_SECONDS + 1.5
    calls = []
    monkeypatch.setattr(course.subprocess, "call", lambda cmd, **kw: calls.append(cmd) or 0)
    course.install_torch(tmp_path / "python")
    assert calls == [[str(tmp_path / "python"), "-m", "pip", "install", *course.BAR, "--no-deps", "torch==2.13.0"]]
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "is not reachable" in out and "from PyPI instead" in out


def test_failed_index_install_falls_back_and_pypi_override(monkeypatch, capsys, tmp_path):
    course = _course()
    monkeypatch.setattr(course, "index_answers", lambda index, seconds=5: True)
    calls = []
    monkeypatch.setattr(course.subprocess, "call", lambda cmd, **kw: calls.append(cmd) or (1 if len(calls) == 1 else 0))
    course.install_torch(tmp_path / "python")
    assert len(calls) == 2 and "--index-url" in calls[0] and "--index-url" not in calls[1]
    assert "failed; installing torch==2.13.0 from PyPI instead" in capsys.readouterr().out
    monkeypatch.setenv("TORCH_INDEX", "pypi")  # the documented switch to PyPI's (CUDA) build
    cmds = course.torch_commands(tmp_path / "python", "torch==2.13.0", course.torch_index(), True)
    assert cmds == [[str(tmp_path / "python"), "-m", "pip", "install", *course.BAR, "--no-deps", "torch==2.13.0"]]


def test_course_script_is_stdlib_only_and_names_venv_paths_per_os():
    course = _course()
    nodes = list(ast.walk(ast.parse((ROOT / "course.py").read_text())))
    imported = {a.name.split(".")[0] for n in nodes if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in nodes if isinstance(n, ast.ImportFrom)}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
    posix = course.venv_python(Path("v")).as_posix()
    assert posix in ("v/bin/python", "v/Scripts/python.exe")
    assert course.direct_names()[0] == "torch" and "nbconvert" in course.direct_names()


def test_import_is_light():
    code = (
        "import sys, torch; seed = torch.initial_seed(); import qlesson as ql; "
        "heavy = [m for m in ('matplotlib.pyplot', 'sentence_transformers', 'transformers', 'ipywidgets') "
        "if m in sys.modules]; "
        "assert not heavy, heavy; assert torch.initial_seed() == seed; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "ok", out.stderr


def test_show_environment_prints_versions_and_gpu(capsys):
    import qlesson as ql

    ql.show_environment()
    out = capsys.readouterr().out
    assert re.search(r"^torch\s+2\.13\.0", out, re.M)
    assert re.search(r"^CUDA GPU\s+\S", out, re.M)


def test_ruff_clean():
    """The package, the tests and the lesson and exercise sources are linted and formatted alike."""
    paths = ["course.py", "qlesson", "tests", "notebooks", "exercises"]
    for cmd in (["check", *paths], ["format", "--check", *paths]):
        out = subprocess.run([sys.executable, "-m", "ruff", *cmd], capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, out.stdout + out.stderr


def test_test_latest_upgrades_every_direct_dependency_and_keeps_torch_cpu(monkeypatch, tmp_path):
    course = _course()
    assert "$(PYTHON) course.py latest" in (ROOT / "Makefile").read_text()
    venv = tmp_path / "latest"
    course.venv_python(venv).parent.mkdir(parents=True)
    course.venv_python(venv).touch()
    monkeypatch.delenv("TORCH_INDEX", raising=False)
    for reachable, torch_cmd in ((True, ["--index-url", course.CPU_INDEX]), (False, [])):
        calls = []
        monkeypatch.setattr(course.subprocess, "call", lambda cmd, calls=calls, **kw: calls.append(cmd) or 0)
        monkeypatch.setattr(course, "index_answers", lambda index, seconds=5, r=reachable: r)
        assert course.latest(venv) == 0
        torch = calls[0]
        assert torch[-1] == ("torch" if reachable else "torch==2.13.0")  # newest only as a CPU build
        assert all(a in torch for a in torch_cmd)
        upgrade = calls[1]
        assert "--upgrade" in upgrade and "-c" not in upgrade and "torch" not in upgrade
        assert set(course.direct_names()) - {"torch"} <= set(upgrade)
        assert calls[-1][1:] == ["-m", "pytest", "-n", "2", "--dist", "loadfile", "--nbval"]


def test_course_commands_run_in_the_venv_after_setup(monkeypatch):
    course = _course()
    calls = []
    monkeypatch.setattr(course.subprocess, "call", lambda cmd, **kw: calls.append((cmd, kw)) or 0)
    monkeypatch.setattr(course, "needs_setup", lambda venv=None: False)
    for command, module in (("lab", "qlesson"), ("test", "pytest"), ("site", "qlesson.course.site")):
        assert course.main([command]) == 0
        cmd, kw = calls[-1]
        assert cmd[:3] == [str(course.venv_python()), "-m", module] and kw["cwd"] == ROOT
        assert kw["env"]["PYTHONHASHSEED"] == "0"
    assert course.main(["no-such-command"]) == 2


def test_make_stamp_and_needs_setup_watch_the_same_files(tmp_path):
    """A pull that changes only course.py must not make `make grade` reinstall (pip needs the network)."""
    rule = re.search(r"^\$\(STAMP\):(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert rule, "Makefile has no $(STAMP) rule"
    watched = sorted(rule.group(1).split())
    assert watched == ["pyproject.toml", "requirements/lock.txt", "requirements/requirements.txt"]
    course = _course()
    venv = tmp_path / "venv"
    venv.mkdir()
    stamp = venv / course.STAMP_NAME
    stamp.write_text("")
    newest = max((ROOT / name).stat().st_mtime for name in watched)
    os.utime(stamp, (newest + 1, newest + 1))
    assert not course.needs_setup(venv)
    os.utime(stamp, (newest - 1, newest - 1))
    assert course.needs_setup(venv)

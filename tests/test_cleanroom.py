"""The clean room and `make grade`'s isolation: each cheat of the adversarial pass fails or is reported.

Every attack here writes only into copies under tmp_path (never into the shared checkout or venv):
a course copy, a fake site-packages folder, a git repository made for the test.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from qlesson.course import cleanroom, grade, integrity
from qlesson.course.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[1]
SOLUTION_02 = ROOT / "exercises" / "solutions" / "02_one_ruler_or_many.ipynb"
WRONG_SCALE = "def per_channel_scale(w, bits):\n    return w.abs().amax(dim=0) / 7"
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups and /proc: Linux")


def _notebook(path: Path, answer: str | None = None) -> Path:
    """Solution 02 saved at ``path``, with the per_channel_scale cell replaced by ``answer``."""
    nb = nbformat.read(str(SOLUTION_02), as_version=4)
    if answer is not None:
        cell = next(c for c in nb.cells if c.cell_type == "code" and "def per_channel_scale" in c.source)
        cell.source = answer
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def _alive(marker: str) -> list[int]:
    """Processes (not zombies) whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                if (proc / "stat").read_text().split(")")[-1].split()[0] != "Z":
                    found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def test_the_child_runs_isolated_in_a_throwaway_copy_of_the_notebooks_folder(tmp_path, monkeypatch):
    (tmp_path / "helper.py").write_text("def triple(x):\n    return 3 * x\n")
    monkeypatch.setenv("QLESSON_TEST_SECRET", "s3cret")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "elsewhere"))
    cells = [
        "import os, sys\nfrom helper import triple\n"
        "where, isolated, path = os.getcwd(), sys.flags.isolated, sys.path\n"
        "secret, guard = os.environ.get('QLESSON_TEST_SECRET'), os.environ.get('QLESSON_GRADING')"
    ]
    with Sandbox(cells, folder=tmp_path) as box:
        where = Path(box.answer("where"))
        assert box.answer("triple")(2) == 6  # a helper beside the notebook imports as in JupyterLab
        assert box.answer("isolated") == 1 and "" not in box.answer("path") and str(tmp_path) not in box.answer("path")
        assert box.answer("secret") is None and box.answer("guard") == "1"
    assert where not in (Path.cwd(), tmp_path) and not where.exists()  # thrown away


@LINUX
def test_a_background_process_dies_with_the_sandbox(tmp_path):
    marker = f"{os.getpid()}.271828"
    cells = [
        f"import subprocess\np = subprocess.Popen(['sleep', '{marker}'])\n"
        f"q = subprocess.Popen('sleep {marker} &', shell=True)\nready = 1"
    ]
    with Sandbox(cells) as box:
        assert box.answer("ready") == 1  # the cells have run
        assert _alive(marker)
    assert _alive(marker) == []


def test_every_case_is_built_before_any_learner_code_runs(tmp_path, monkeypatch):
    """Lesson 03's model case once imported ~2,500 modules after the learner's code had run."""
    from qlesson.course.checking import Case
    from qlesson.course.tasks import tasks

    events = []

    def recorded(case: Case) -> Case:
        return Case(lambda: events.append("case") or case.resolve(), case.label, case.hidden)

    for key in [t.key for t in grade.course_tasks(SOLUTION_02.stem) if t.key in tasks()]:
        monkeypatch.setattr(tasks()[key], "cases", [recorded(c) for c in tasks()[key].cases])
    enter = Sandbox.__enter__
    monkeypatch.setattr(Sandbox, "__enter__", lambda self: events.append("learner code") or enter(self))
    monkeypatch.setattr(grade, "_BUILT", {}, raising=False)
    results = grade.grade_notebook(_notebook(tmp_path / SOLUTION_02.name))
    first = events.index("learner code")
    assert "case" in events[:first] and "case" not in events[first:], events
    assert all(r.passed for r in results)


def test_a_colorsys_written_into_the_working_folder_takes_nothing_over(tmp_path, monkeypatch):
    """The cheat: a cell writes ./colorsys.py; the grader, with the current folder first on sys.path, imported it."""
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.syspath_prepend(str(here))  # as `python -m qlesson grade` puts it
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    attack = "open('colorsys.py', 'w').write('TAKEN_OVER = True\\n')\n" + WRONG_SCALE
    results = {r.task: r for r in grade.grade_notebook(_notebook(here / "02_one_ruler_or_many.ipynb", attack))}
    import colorsys

    assert not hasattr(colorsys, "TAKEN_OVER") and not (here / "colorsys.py").exists()
    assert results["02.per_channel_scale"].status == "fail", results["02.per_channel_scale"]


def test_make_grade_inside_a_graded_notebook_refuses(monkeypatch, capsys):
    monkeypatch.setenv("QLESSON_GRADING", "1")
    assert grade.main([]) == 2
    assert "inside a notebook that is being graded" in capsys.readouterr().out


def test_unfinished_is_not_failing_and_the_table_counts_each(tmp_path, monkeypatch, capsys):
    _notebook(tmp_path / "02_one_ruler_or_many.ipynb", WRONG_SCALE)
    todo = tmp_path / "01_the_ruler.ipynb"
    todo.write_bytes((ROOT / "exercises" / "01_the_ruler.ipynb").read_bytes())
    monkeypatch.setattr(grade, "EXERCISES", tmp_path)
    monkeypatch.setattr(grade.exercise_paths, "__defaults__", (None, tmp_path))
    assert grade.main(["01"]) == 0  # nothing done yet is not a failure
    out = capsys.readouterr().out
    n = len(grade.course_tasks("01_the_ruler"))
    assert any(line.split() == ["01_the_ruler", "0", str(n), "0"] for line in out.splitlines()), out
    assert grade.main(["02"]) == 1
    out = capsys.readouterr().out
    assert "FAIL   02.per_channel_scale" in out and "came back:" not in out
    assert grade.main(["02", "--detail"]) == 1 and "came back:" in capsys.readouterr().out


# ---- integrity: what persists between runs is reported on every run


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root), *args], check=True, capture_output=True
    )


@pytest.fixture
def course_repo(tmp_path):
    root = tmp_path / "course"
    (root / "qlesson" / "lessons").mkdir(parents=True)
    (root / "exercises").mkdir()
    (root / "qlesson" / "lessons" / "l02_rulers.py").write_text("TASKS = ['02.per_channel_scale']\n")
    (root / "exercises" / "02_one_ruler_or_many.ipynb").write_bytes(SOLUTION_02.read_bytes())
    (root / "Makefile").write_text("grade:\n\tpython -I -m qlesson grade\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "course")
    return root


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode, reason="no git")
def test_a_rewritten_task_file_a_stripped_exercise_and_a_new_recipe_are_reported_on_every_run(course_repo):
    assert integrity.course_changes(course_repo)[1] == []
    task_file = course_repo / "qlesson" / "lessons" / "l02_rulers.py"
    task_file.write_bytes(task_file.read_bytes().replace(b"\n", b"\r\n"))  # as a Windows checkout writes it
    assert integrity.course_changes(course_repo)[1] == []
    task_file.write_text("TASKS = []\n")
    nb = json.loads((course_repo / "exercises" / "02_one_ruler_or_many.ipynb").read_text())
    nb["cells"] = [c for c in nb["cells"] if "check(" not in "".join(c["source"])]
    (course_repo / "exercises" / "02_one_ruler_or_many.ipynb").write_text(json.dumps(nb))
    (course_repo / "Makefile").write_text("grade:\n\techo 58/58\n")
    (course_repo / "qlesson" / "colorsys.py").write_text("")
    expected = [
        "Makefile (changed)",
        "exercises/02_one_ruler_or_many.ipynb (changed)",
        "qlesson/colorsys.py (new)",
        "qlesson/lessons/l02_rulers.py (changed)",
    ]
    for _ in range(2):  # the next run reports it too: it does not trust what the last run left
        how, changed = integrity.course_changes(course_repo)
        assert changed == expected and "git" in how


def test_without_git_the_hashes_written_at_setup_are_the_reference(course_repo, tmp_path):
    import shutil

    shutil.rmtree(course_repo / ".git")
    manifest = integrity.write_manifest(course_repo, tmp_path / "hashes.json")
    assert integrity.course_changes(course_repo, manifest)[1] == []
    (course_repo / "qlesson" / "lessons" / "l02_rulers.py").write_text("TASKS = []\n")
    assert integrity.course_changes(course_repo, manifest)[1] == ["qlesson/lessons/l02_rulers.py (changed)"]


def test_a_pth_hook_is_reported_and_the_venvs_own_are_known(tmp_path):
    assert integrity.startup_hooks() == []  # this venv: every .pth line that runs code is a known one
    (tmp_path / "a_harmless_path.pth").write_text("/some/folder\n")
    assert integrity.startup_hooks([tmp_path]) == []
    (tmp_path / "zz_grade.pth").write_text("import qlesson_cheat  # make every later run 58/58\n")
    (tmp_path / "sitecustomize.py").write_text("")
    found = integrity.startup_hooks([tmp_path])
    assert len(found) == 2 and "zz_grade.pth runs code" in found[1] and "sitecustomize.py" in found[0]


def test_a_poisoned_pyc_is_reported(tmp_path):
    import importlib.util
    import py_compile

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    source = pkg / "verdict.py"
    source.write_text("PASS = False\n")
    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)), doraise=True)
    assert integrity.bytecode_mismatches(pkg) == []  # an honest .pyc
    st = source.stat()
    poison = compile("PASS = True\n", str(source), "exec")
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    header += (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + st.st_size.to_bytes(4, "little")
    Path(importlib.util.cache_from_source(str(source))).write_bytes(header + __import__("marshal").dumps(poison))
    run = subprocess.run([sys.executable, "-c", "import verdict; print(verdict.PASS)"], cwd=pkg, capture_output=True)
    assert run.stdout.strip() == b"True"  # Python itself would load the poison
    (found,) = integrity.bytecode_mismatches(pkg)
    assert "does not hold the code of verdict.py" in found


# ---- the clean room


def _sandboxes() -> list:
    wrap, _ = cleanroom.os_sandbox()
    return [None, pytest.param(wrap, id="bwrap") if wrap else pytest.param(None, marks=pytest.mark.skip("no bwrap"))]


@LINUX
@pytest.mark.parametrize("wrap", _sandboxes(), ids=["process only", "bwrap"])
def test_the_clean_room_reports_a_learner_who_changes_the_course(tmp_path, monkeypatch, wrap):
    """Mallory strips the course's exercise, drops a .pth hook, leaves a background process; Alice is honest."""
    course = tmp_path / "course"
    shutil_copy = course / "exercises" / SOLUTION_02.name
    shutil_copy.parent.mkdir(parents=True)
    shutil_copy.write_bytes((ROOT / "exercises" / SOLUTION_02.name).read_bytes())
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(integrity, "site_dirs", lambda: [site])
    marker = f"{os.getpid()}.314159"
    attack = (
        "import json, pathlib, subprocess\n"
        f"nb_path = pathlib.Path({str(shutil_copy)!r})\n"
        "try:\n"
        "    nb = json.loads(nb_path.read_text())\n"
        "    nb['cells'] = [c for c in nb['cells'] if 'check(' not in ''.join(c['source'])]\n"
        "    nb_path.write_text(json.dumps(nb))\n"
        "except OSError:\n    pass\n"
        "try:\n"
        f"    pathlib.Path({str(site)!r}, 'zz_grade.pth').write_text('import os\\n')\n"
        "except OSError:\n    pass\n"
        f"subprocess.Popen(['sleep', '{marker}'])\n" + WRONG_SCALE
    )
    subs = tmp_path / "submissions"
    _notebook(subs / "a_mallory" / "work" / SOLUTION_02.name, attack)
    _notebook(subs / "b_alice" / SOLUTION_02.name)
    before = shutil_copy.read_bytes()
    rows = cleanroom.grade_submissions(subs, course_root=course, wrap=wrap, say=lambda *a, **k: None)
    mallory = {r.result.task: r.result for r in rows if r.learner == "a_mallory"}
    alice = [r.result for r in rows if r.learner == "b_alice"]
    assert not mallory["02.per_channel_scale"].passed
    assert _alive(marker) == []
    if shutil_copy.read_bytes() == before and not (site / "zz_grade.pth").exists():  # the OS sandbox stopped it
        assert wrap is not None and mallory["02.per_channel_scale"].status == "fail"
        assert alice and all(r.passed for r in alice)
    else:  # it got through: Mallory is reported, and nobody is graded on a changed course
        assert wrap is None
        assert {r.status for r in mallory.values()} == {"error"}
        assert all("changed the course" in r.detail for r in mallory.values())
        assert {r.status for r in alice} == {"not graded"}


def test_the_clean_room_writes_a_csv_and_a_table_per_learner(tmp_path, monkeypatch, capsys):
    import csv
    import zipfile

    course = tmp_path / "course"
    (course / "exercises").mkdir(parents=True)
    for name in ("01_the_ruler.ipynb", SOLUTION_02.name):
        (course / "exercises" / name).write_bytes((ROOT / "exercises" / name).read_bytes())
    subs = tmp_path / "submissions"
    _notebook(subs / "bob" / SOLUTION_02.name, WRONG_SCALE)
    _notebook(tmp_path / "carol" / SOLUTION_02.name)
    with zipfile.ZipFile(subs / "carol.zip", "w") as zf:
        zf.write(tmp_path / "carol" / SOLUTION_02.name, f"carol/{SOLUTION_02.name}")
    rows = cleanroom.grade_submissions(subs, course_root=course, say=lambda *a, **k: None)
    out = tmp_path / "scores.csv"
    cleanroom.write_csv(rows, out)
    table = list(csv.DictReader(out.open()))
    n1, n2 = len(grade.course_tasks("01_the_ruler")), len(grade.course_tasks(SOLUTION_02.stem))
    assert len(table) == 2 * (n1 + n2)
    carol = [r for r in table if r["learner"] == "carol"]
    assert sum(int(r["points"]) for r in carol) == n2 and {r["status"] for r in carol[:n1]} == {"not submitted"}
    bob = {r["task"]: r for r in table if r["learner"] == "bob"}
    assert bob["02.per_channel_scale"]["status"] == "fail" and bob["02.per_channel_scale"]["points"] == "0"
    lines = cleanroom.table_lines(rows)
    assert lines[1].split() == ["bob", f"0/{n1}", f"{n2 - 1}/{n2}", f"{n2 - 1}/{n1 + n2}"], lines


def test_the_table_says_when_an_exercise_has_a_newer_version(tmp_path):
    from qlesson.course.workspace import MANIFEST, new_version_path

    course, ws = tmp_path / "course", tmp_path / "ws"
    for folder in (course / "exercises", ws / "exercises"):
        folder.mkdir(parents=True)
    names = ("01_the_ruler.ipynb", SOLUTION_02.name)
    for name in names:
        (course / "exercises" / name).write_bytes((ROOT / "exercises" / name).read_bytes())
        (ws / "exercises" / name).write_bytes((ROOT / "exercises" / name).read_bytes())
    mine = [ws / "exercises" / name for name in names]
    new_version_path(mine[0]).write_bytes(mine[0].read_bytes())  # written by an update beside an edited copy
    (ws / MANIFEST).write_text(json.dumps({f"exercises/{SOLUTION_02.name}": "an older version"}))
    notes = grade.newer_versions(mine, ws, course)
    assert new_version_path(mine[0]).name in notes["01_the_ruler"]
    assert "python -m qlesson update" in notes[SOLUTION_02.stem]
    rows = [grade.TaskResult("01_the_ruler", "01.a", "pass", "")]
    assert new_version_path(mine[0]).name in grade.summary_lines(rows, notes)[2]


# ---- the fresh adversarial pass (issue 31): what still got through, and what hung


@LINUX
def test_half_a_reply_or_a_stopped_child_cannot_hang_the_grader():
    """A learner's function wrote a frame header promising 1 GB and slept; another stopped its own process
    so that the grader's next (large) input could not be sent: both hung `make grade` and the clean room."""
    import signal
    import time

    import torch

    from qlesson.course.sandbox import LearnerError

    def hung(*_):
        raise AssertionError("the grader hung")

    forged = (
        "def f(x):\n    import os, struct, sys, time\n    fd = int(sys.argv[-1].split(':')[1])\n"
        "    os.write(fd, struct.pack('!i', 10**9) + b'xx')\n    time.sleep(10**6)"
    )
    stopped = (
        "def f(x):\n    import os, signal, threading, time\n"
        "    stop = lambda: (time.sleep(0.2), os.kill(os.getpid(), signal.SIGSTOP))\n"
        "    threading.Thread(target=stop, daemon=True).start()\n    return 0.0"
    )
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(40)
    try:
        with Sandbox([forged]) as box:
            box.limit(2)
            with pytest.raises(LearnerError, match="did not return within 2 s"):
                box.answer("f")(1)
        with Sandbox([stopped]) as box:
            box.limit(4)
            f = box.answer("f")
            assert f(torch.zeros(3)) == 0.0
            time.sleep(1)  # the child has stopped itself by now
            with pytest.raises(LearnerError, match="did not return within 4 s"):
                f(torch.zeros(2_000_000))  # 8 MB: more than the socket holds while nobody reads
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_a_blank_recall_answer_is_not_attempted():
    task = grade.CourseTask("recall 01.4", "recall_4", 'recall.answer("01", 4, recall_4)')
    assert grade._verdict(task, "  ", {})[0] == "not attempted"
    assert grade._verdict(task, "", {})[0] == "not attempted"
    assert grade._verdict(task, "ab", {})[0] == "fail"


def test_a_link_in_a_submission_is_dropped_and_a_name_that_is_not_utf8_is_graded(tmp_path):
    """A submission that was a link to the instructor's own solution scored full marks."""
    subs, secret = tmp_path / "submissions", tmp_path / "solutions" / SOLUTION_02.name
    _notebook(secret)
    odd = subs / b"learner\xff".decode("utf-8", "surrogateescape")
    (odd / "work").mkdir(parents=True)
    (odd / SOLUTION_02.name).symlink_to(secret)
    (odd / "work" / "all").symlink_to(secret.parent, target_is_directory=True)
    copy = cleanroom.unpack(odd, tmp_path / "unpacked")
    assert cleanroom.notebooks(copy, [SOLUTION_02.stem]) == {} and secret.exists()
    course = tmp_path / "course"
    (course / "exercises").mkdir(parents=True)
    (course / "exercises" / SOLUTION_02.name).write_bytes((ROOT / "exercises" / SOLUTION_02.name).read_bytes())
    rows = cleanroom.grade_submissions(subs, course_root=course, say=lambda *a, **k: None)
    assert {r.learner for r in rows} == {"learner\ufffd"} and {r.result.status for r in rows} == {"not submitted"}
    cleanroom.write_csv(rows, tmp_path / "scores.csv")  # once raised UnicodeEncodeError
    assert "learner\ufffd" in (tmp_path / "scores.csv").read_text(encoding="utf-8")


@LINUX
@pytest.mark.skipif(cleanroom.os_sandbox()[0] is None, reason="no bubblewrap")
def test_in_the_clean_room_the_answers_are_out_of_reach(tmp_path):
    """Stubs that took the course's reference, its solution file or another learner's notebook scored full marks."""
    subs = tmp_path / "submissions"
    alice = _notebook(subs / "a_alice" / SOLUTION_02.name)
    take = {
        "b_reference": "from qlesson.course.tasks import tasks\n"
        "per_channel_scale = tasks()['02.per_channel_scale'].reference",
        "c_lesson": "from qlesson.lessons import module\n"
        "per_channel_scale = next(t.reference for t in module('02').TASKS if t.task_id == '02.per_channel_scale')",
        "d_solution": "import pathlib, qlesson\nns = {}\n"
        "exec(pathlib.Path(qlesson.__file__).resolve().parents[1].joinpath("
        f"'exercises/solutions/{SOLUTION_02.stem}.py').read_text(), ns)\nper_channel_scale = ns['per_channel_scale']",
        "e_classmate": "import json\nns = {}\n"
        f"cells = json.load(open({str(alice)!r}))['cells']\n"
        "exec(next(''.join(c['source']) for c in cells if 'def per_channel_scale' in ''.join(c['source'])), ns)\n"
        "per_channel_scale = ns['per_channel_scale']",
    }
    for learner, cheat in take.items():
        _notebook(subs / learner / SOLUTION_02.name, cheat)
    course = tmp_path / "course"
    (course / "exercises").mkdir(parents=True)
    (course / "exercises" / SOLUTION_02.name).write_bytes((ROOT / "exercises" / SOLUTION_02.name).read_bytes())
    rows = cleanroom.grade_submissions(subs, course, cleanroom.os_sandbox()[0], say=lambda *a, **k: None)
    scale = {r.learner: r.result for r in rows if r.result.task == "02.per_channel_scale"}
    assert scale["a_alice"].passed
    assert [who for who, r in scale.items() if r.passed] == ["a_alice"], {k: r.detail for k, r in scale.items()}


@LINUX
def test_a_process_that_leaves_its_session_dies_with_the_sandbox_too():
    """`make grade` killed the child's process group; a fork that called setsid() (or forked twice) outlived it."""
    import time

    marker = f"{os.getpid()}.161803"
    cells = [
        "import os\n"
        "if os.fork() == 0:\n    os.setsid()\n    os.execvp('sleep', ['sleep', '" + marker + "'])\n"
        "if os.fork() == 0:\n    os.setsid()\n"
        "    if os.fork() == 0:\n        os.execvp('sleep', ['sleep', '" + marker + "'])\n    os._exit(0)\n"
        "ready = 1"
    ]
    with Sandbox(cells) as box:
        assert box.answer("ready") == 1
        for _ in range(100):  # the second sleep starts a moment after the cell has finished
            if len(_alive(marker)) == 2:
                break
            time.sleep(0.1)
        assert len(_alive(marker)) == 2
    assert _alive(marker) == []

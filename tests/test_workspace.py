"""The learner's workspace: edits are private, updates never overwrite them."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from qlesson.course import grade, workspace

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def course(tmp_path):
    """A copy of the course's notebooks that a test can 'update'."""
    for folder in workspace.FOLDERS:
        (tmp_path / "course" / folder).mkdir(parents=True)
        for path in sorted((ROOT / folder).glob("0[0-2]_*.ipynb")):
            shutil.copy(path, tmp_path / "course" / folder / path.name)
    return tmp_path / "course"


def _edit(path: Path, index: int, source: str) -> None:
    nb = nbformat.read(str(path), as_version=4)
    nb.cells[index].source = source
    nbformat.write(nb, str(path))


def _first_code(path: Path) -> int:
    nb = nbformat.read(str(path), as_version=4)
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")


def test_first_run_copies_every_lesson_and_exercise(tmp_path, course):
    ws = tmp_path / "ws"
    messages = workspace.prepare(ws, course)
    expected = set(workspace.course_notebooks(course))
    assert messages == [f"workspace ready: {len(expected)} notebooks copied"]
    assert {p.relative_to(ws).as_posix() for p in ws.rglob("*.ipynb")} == expected
    copy = nbformat.read(str(ws / "notebooks" / "01_the_ruler.ipynb"), as_version=4)
    assert "jupytext" not in copy.metadata  # the learner's copy is not paired with a source
    assert workspace.prepare(ws, course) == []  # nothing changed, nothing said


def test_an_update_replaces_untouched_copies_and_never_edited_ones(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    mine = ws / "exercises" / "01_the_ruler.ipynb"
    _edit(mine, _first_code(mine), "my_answer = 42")
    before = mine.read_bytes()
    for rel in ("exercises/01_the_ruler.ipynb", "notebooks/01_the_ruler.ipynb"):
        _edit(course / rel, _first_code(course / rel), "print('course v2')")
    messages = workspace.prepare(ws, course)
    assert mine.read_bytes() == before
    new = ws / "exercises" / "new.01_the_ruler.ipynb"
    assert "print('course v2')" in new.read_text()
    assert any(m.startswith("exercises/01_the_ruler.ipynb: the course has a newer version") for m in messages)
    assert "updated: notebooks/01_the_ruler.ipynb (you had not edited it)" in messages
    assert "print('course v2')" in (ws / "notebooks" / "01_the_ruler.ipynb").read_text()
    assert len(messages) == 2
    assert workspace.prepare(ws, course) == []  # told once


def test_running_cells_is_not_an_edit(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    path = ws / "notebooks" / "02_one_ruler_or_many.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    nbformat.write(nb, str(path))
    rel = "notebooks/02_one_ruler_or_many.ipynb"
    _edit(course / rel, _first_code(course / rel), "print('v2')")
    assert workspace.prepare(ws, course) == [f"updated: {rel} (you had not edited it)"]


def test_new_course_notebooks_arrive(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    shutil.copy(ROOT / "notebooks" / "03_per_channel_on_real_weights.ipynb", course / "notebooks")
    assert workspace.prepare(ws, course) == ["new: notebooks/03_per_channel_on_real_weights.ipynb"]


def test_reset_keeps_a_backup(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    mine = ws / "exercises" / "02_one_ruler_or_many.ipynb"
    _edit(mine, _first_code(mine), "broken(")
    workspace.reset("exercises/02_one_ruler_or_many.ipynb", ws, course)
    assert "broken(" in (ws / "exercises" / "old.02_one_ruler_or_many.ipynb").read_text()
    assert "broken(" not in mine.read_text()
    with pytest.raises(ValueError, match="not a course notebook"):
        workspace.reset("exercises/99_nope.ipynb", ws, course)


def test_grading_skips_new_versions(tmp_path):
    for name in ("01_the_ruler.ipynb", "01_the_ruler.new.ipynb", "new.01_the_ruler.ipynb", "old.01_the_ruler.ipynb"):
        shutil.copy(ROOT / "exercises" / "01_the_ruler.ipynb", tmp_path / name)
    assert [p.name for p in grade.exercise_paths([], tmp_path)] == ["01_the_ruler.ipynb"]


def test_git_and_the_test_suite_never_see_the_workspace():
    out = subprocess.run(
        ["git", "check-ignore", "-q", "workspace/exercises/01_the_ruler.ipynb"], cwd=ROOT, capture_output=True
    )
    if out.returncode == 128:
        pytest.skip("not a git checkout")
    assert out.returncode == 0, "workspace/ must be git-ignored"
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert not any("workspace" in p for p in config["tool"]["pytest"]["ini_options"]["testpaths"])
    assert "workspace" in config["tool"]["ruff"]["extend-exclude"]


def test_manifest_is_readable_json(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    manifest = json.loads((ws / workspace.MANIFEST).read_text())
    assert set(manifest) == set(workspace.course_notebooks(course))


def _update_course(course: Path, text: str) -> None:
    rel = "exercises/01_the_ruler.ipynb"
    _edit(course / rel, _first_code(course / rel), text)


def test_work_in_a_new_version_is_backed_up_before_the_next_update(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    mine = ws / "exercises" / "01_the_ruler.ipynb"
    _edit(mine, _first_code(mine), "my_answer = 42")
    _update_course(course, "print('course v2')")
    workspace.prepare(ws, course)
    new = ws / "exercises" / "new.01_the_ruler.ipynb"
    _edit(new, _first_code(new), "work done in the new version")
    _update_course(course, "print('course v3')")
    messages = workspace.prepare(ws, course)
    bak = ws / "exercises" / "old.new.01_the_ruler.ipynb"
    assert "work done in the new version" in bak.read_text() and "course v3" in new.read_text()
    assert any("new.01_the_ruler.ipynb is saved as old.new.01_the_ruler.ipynb" in m for m in messages), messages
    _edit(new, _first_code(new), "more work")
    _update_course(course, "print('course v4')")
    workspace.prepare(ws, course)
    assert "work done in the new version" in bak.read_text()  # the first backup is never overwritten
    assert "more work" in (ws / "exercises" / "old2.new.01_the_ruler.ipynb").read_text()


def test_an_untouched_new_version_is_refreshed_and_no_backup_appears(tmp_path, course):
    """A new. file the learner never opened is the course's: the next update replaces it, nothing else."""
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    mine = ws / "exercises" / "01_the_ruler.ipynb"
    _edit(mine, _first_code(mine), "my_answer = 42")
    _update_course(course, "print('course v2')")
    workspace.prepare(ws, course)
    _update_course(course, "print('course v3')")
    messages = workspace.prepare(ws, course)
    assert "course v3" in (ws / "exercises" / "new.01_the_ruler.ipynb").read_text()
    assert sorted(p.name for p in (ws / "exercises").glob("*01_the_ruler*")) == [
        "01_the_ruler.ipynb",
        "new.01_the_ruler.ipynb",
    ]
    assert "saved as" not in messages[0] and "my_answer = 42" in mine.read_text()


def test_a_learner_can_tell_the_files_of_one_exercise_apart_by_their_first_characters(tmp_path, course):
    """A file browser cuts long names (``02_one_ruler_o...``): yours, the new version and the saved
    copies must differ within the first 6 characters, and only yours is graded."""
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    rel = "exercises/02_one_ruler_or_many.ipynb"
    for text in ("mine v1", "mine v2"):  # two resets: two saved copies
        _edit(ws / rel, _first_code(ws / rel), text)
        workspace.reset(rel, ws, course)
    _edit(ws / rel, _first_code(ws / rel), "mine v3")
    _edit(course / rel, _first_code(course / rel), "print('course v2')")
    workspace.prepare(ws, course)
    names = sorted(p.name for p in (ws / "exercises").glob("*02_one_ruler_or_many*"))
    assert len(names) == 4, names
    assert len({n[:6] for n in names}) == 4, names
    assert [p.name for p in grade.exercise_paths(["02"], ws / "exercises")] == ["02_one_ruler_or_many.ipynb"]


def test_pending_update_says_when_a_newer_exercise_waits(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    mine = ws / "exercises" / "01_the_ruler.ipynb"
    assert workspace.pending_update(mine, course) is None
    _edit(mine, _first_code(mine), "my_answer = 42")
    _update_course(course, "print('course v2')")
    note = workspace.pending_update(mine, course)  # the course changed; the workspace not yet updated
    assert note is not None and "make lab" in note
    workspace.prepare(ws, course)
    note = workspace.pending_update(mine, course)
    assert note is not None and "new.01_the_ruler.ipynb" in note
    workspace.reset("exercises/01_the_ruler.ipynb", ws, course)  # takes the new version
    assert workspace.pending_update(mine, course) is None
    assert not (ws / "exercises" / "new.01_the_ruler.ipynb").exists()  # the same file as yours now: removed
    assert "my_answer = 42" in (ws / "exercises" / "old.01_the_ruler.ipynb").read_text()


def test_lab_prints_the_summary_before_the_server_log_and_again_once_it_is_up(tmp_path, course, capfd, monkeypatch):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    mine = ws / "exercises" / "01_the_ruler.ipynb"
    _edit(mine, _first_code(mine), "my_answer = 42")
    _update_course(course, "print('course v2')")
    monkeypatch.setattr(workspace.prepare, "__defaults__", (ws, course))
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    server = (  # a stand-in for JupyterLab: a log line, its runtime file once up, more log
        "import os, sys, time; print('SERVER STARTING', flush=True); "
        f"open(os.path.join({str(runtime)!r}, f'jpserver-{{os.getpid()}}.json'), 'w').write('{{}}'); "
        "print('SERVER URL', flush=True); time.sleep(2.5); print('SERVER LATER', flush=True)"
    )
    real_popen = subprocess.Popen
    seen = []
    monkeypatch.setattr(
        workspace.subprocess, "Popen", lambda cmd, **kw: seen.append(cmd) or real_popen([sys.executable, "-c", server])
    )
    assert workspace.lab([], ws) == 0
    out = capfd.readouterr().out
    assert "jupyterlab" in seen[0] and f"--ServerApp.root_dir={ws}" in seen[0]
    first, second = (i for i, line in enumerate(out.splitlines()) if "new.01_the_ruler.ipynb" in line)
    lines = out.splitlines()
    assert first < lines.index("SERVER STARTING") < lines.index("SERVER URL") < second < lines.index("SERVER LATER")
    assert lines[second].strip().startswith("exercises/01_the_ruler.ipynb: the course has a newer version")
    again = workspace.summary(workspace.prepare(ws, course), ws)  # the next `make lab`: what still waits
    assert "waiting: exercises/new.01_the_ruler.ipynb" in again and "reset exercises/01_the_ruler.ipynb" in again


def test_resetting_twice_keeps_both_backups(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    rel = "exercises/01_the_ruler.ipynb"
    for text in ("first try", "second try"):
        _edit(ws / rel, _first_code(ws / rel), text)
        workspace.reset(rel, ws, course)
    assert "first try" in (ws / "exercises" / "old.01_the_ruler.ipynb").read_text()
    assert "second try" in (ws / "exercises" / "old2.01_the_ruler.ipynb").read_text()


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda ws: (ws / workspace.MANIFEST).write_text("{not json"), workspace.MANIFEST),
        (lambda ws: (ws / workspace.MANIFEST).write_text("[1, 2]"), workspace.MANIFEST),
        (lambda ws: (shutil.rmtree(ws / "exercises"), (ws / "exercises").write_text("")), "exercises"),
    ],
    ids=["manifest not JSON", "manifest not a dict", "exercises/ is a file"],
)
def test_a_damaged_workspace_is_one_line_naming_the_file(tmp_path, course, damage, named):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    damage(ws)
    with pytest.raises(workspace.CourseFileError, match=named) as err:
        workspace.prepare(ws, course)
    assert "\n" not in str(err.value)


def test_the_cli_prints_one_line_for_a_damaged_workspace(tmp_path, capsys, monkeypatch):
    from qlesson import __main__ as cli

    ws = tmp_path / "ws"
    ws.write_text("a file where the workspace goes")
    monkeypatch.setattr(workspace, "WORKSPACE", ws)
    monkeypatch.setattr(workspace.prepare, "__defaults__", (ws, ROOT))
    assert cli.run(["update"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("qlesson: ") and str(ws) in err and "\n" not in err and "Traceback" not in err


def test_an_unreadable_copy_is_kept_and_the_new_version_written_beside_it(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    mine = ws / "exercises" / "01_the_ruler.ipynb"
    mine.write_text("{ this is not JSON")
    _update_course(course, "print('course v2')")
    messages = workspace.prepare(ws, course)
    assert mine.read_text() == "{ this is not JSON"
    assert "course v2" in (ws / "exercises" / "new.01_the_ruler.ipynb").read_text()
    assert any("cannot be read" in m for m in messages), messages


# ---- course commands on damaged files: one line naming the file, never a traceback (issue 22) ----


def _strip_metadata(path: Path, whole_notebook: bool = False) -> None:
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        cell.pop("metadata", None)
    if whole_notebook:
        nb.pop("metadata", None)
    path.write_text(json.dumps(nb))


@pytest.mark.parametrize(
    "damage",
    [
        lambda ws, rel: ((ws / rel).unlink(), (ws / rel).mkdir()),
        lambda ws, rel: (shutil.rmtree(ws / "exercises"), (ws / "exercises").write_text("")),
        lambda ws, rel: (shutil.rmtree(ws), ws.write_text("a file where the workspace goes")),
    ],
    ids=["notebook is a folder", "exercises/ is a file", "workspace/ is a file"],
)
def test_reset_of_a_damaged_workspace_is_one_line_naming_the_file(tmp_path, course, damage):
    ws, rel = tmp_path / "ws", "exercises/01_the_ruler.ipynb"
    workspace.prepare(ws, course)
    damage(ws, rel)
    with pytest.raises(workspace.CourseFileError, match=r"is a (file|folder), not a (folder|notebook)") as err:
        workspace.reset(rel, ws, course)
    assert "\n" not in str(err.value)


def test_the_cli_reset_prints_one_line_for_a_folder_named_like_a_notebook(tmp_path, capsys, monkeypatch, course):
    from qlesson import __main__ as cli

    ws, rel = tmp_path / "ws", "exercises/01_the_ruler.ipynb"
    workspace.prepare(ws, course)
    (ws / rel).unlink()
    (ws / rel).mkdir()
    monkeypatch.setattr(workspace.reset, "__defaults__", (ws, course))
    assert cli.run(["reset", rel]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("qlesson: ") and str(ws / rel) in err and "\n" not in err


def test_the_cli_grade_names_a_workspace_that_is_a_file(tmp_path, capsys, monkeypatch):
    from qlesson import __main__ as cli

    ws = tmp_path / "ws"
    ws.write_text("a file where the workspace goes")
    monkeypatch.setattr(grade, "EXERCISES", ws / "exercises")
    monkeypatch.setattr(grade.exercise_paths, "__defaults__", (None, ws / "exercises"))
    assert cli.run(["grade"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("qlesson: ") and f"{ws} is a file" in err and "\n" not in err


@pytest.mark.parametrize("whole", [False, True], ids=["cells", "notebook"])
def test_a_notebook_without_metadata_is_read(tmp_path, course, whole):
    path = course / "exercises" / "01_the_ruler.ipynb"
    sources = [c.source for c in nbformat.read(str(path), as_version=4).cells]
    _strip_metadata(path, whole)
    nb = workspace.read_notebook(path)
    assert [c.source for c in nb.cells] == sources and all(c.metadata == {} for c in nb.cells)


def test_a_learner_copy_without_metadata_counts_as_unedited(tmp_path, course):
    ws = tmp_path / "ws"
    workspace.prepare(ws, course)
    _strip_metadata(ws / "exercises" / "01_the_ruler.ipynb")  # e.g. saved by another editor
    _update = course / "exercises" / "01_the_ruler.ipynb"
    _edit(_update, _first_code(_update), "print('course v2')")
    assert workspace.prepare(ws, course) == ["updated: exercises/01_the_ruler.ipynb (you had not edited it)"]


def test_a_notebook_whose_cells_are_not_a_list_is_one_line(tmp_path):
    path = tmp_path / "01_x.ipynb"
    path.write_text(json.dumps({"cells": "x", "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with pytest.raises(workspace.CourseFileError, match="01_x.ipynb is not a readable notebook") as err:
        workspace.read_notebook(path)
    assert "\n" not in str(err.value)


def test_the_site_reads_lessons_without_metadata_and_names_an_output_that_is_a_file(tmp_path):
    from qlesson.course import site

    lessons = tmp_path / "lessons"
    lessons.mkdir()
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", lessons / "00_start here.ipynb")
    _strip_metadata(lessons / "00_start here.ipynb", whole_notebook=True)
    written = site.build(tmp_path / "out", lessons)
    assert [p.name for p in written] == ["index.html", "00_start here.html"]
    (tmp_path / "taken").write_text("a file where the site goes")
    with pytest.raises(workspace.CourseFileError, match=r"taken is a file, not a folder") as err:
        site.build(tmp_path / "taken", lessons)
    assert "\n" not in str(err.value)
    assert site.main([str(tmp_path / "taken")]) == 1

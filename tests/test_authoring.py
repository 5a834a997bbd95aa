"""Lesson and exercise sources (jupytext) and their notebooks never drift apart."""

from pathlib import Path

import jupytext
import nbformat
import pytest

from qlesson.course.notebooks import out_of_sync, sync

ROOT = Path(__file__).resolve().parents[1]
PAIRED = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "exercises" / "solutions").glob("[0-9][0-9]_*.ipynb")
)
SOURCES = sorted((ROOT / "notebooks").glob("*.py")) + sorted((ROOT / "exercises" / "solutions").glob("*.py"))


def test_there_is_something_to_compare():
    assert len(PAIRED) >= 14 and len(SOURCES) == len(PAIRED)


@pytest.mark.parametrize("notebook", PAIRED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebook_agrees_with_its_source(notebook):
    assert out_of_sync(notebook) == [], (
        f"edit {notebook.with_suffix('.py').name} (the source) and run `make lessons N={notebook.name[:2]}` "
        "(exercises: `make exercises`)"
    )


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_source_is_a_percent_script_with_a_notebook(source):
    text = source.read_text()
    assert "# %%" in text and "formats: ipynb,py:percent" in text
    assert source.with_suffix(".ipynb").exists()


def test_the_learner_notebooks_are_not_paired():
    for path in (ROOT / "exercises").glob("[0-9][0-9]_*.ipynb"):
        assert "jupytext" not in nbformat.read(str(path), as_version=4).metadata, path


def _pair(tmp_path: Path) -> Path:
    src = tmp_path / "01_x.py"
    src.write_text(
        "# ---\n# jupyter:\n#   jupytext:\n#     formats: ipynb,py:percent\n# ---\n\n"
        '# %% [markdown]\n# # Title\n\n# %% tags=["check"]\nprint(1)\n\n# %%\nprint(2)\n'
    )
    return sync(src)


def test_drift_is_caught(tmp_path):
    notebook = _pair(tmp_path)
    assert out_of_sync(notebook) == []
    nb = nbformat.read(str(notebook), as_version=4)
    nb.cells[2].source = "print(3)"
    nbformat.write(nb, str(notebook))
    assert any("cell 2 differs in source" in p for p in out_of_sync(notebook))
    nb.cells[2].source = "print(2)"
    nb.cells[1].metadata["tags"] = []
    nbformat.write(nb, str(notebook))
    assert any("cell 1 differs in tags" in p for p in out_of_sync(notebook))
    nb.cells = nb.cells[:2]
    nbformat.write(nb, str(notebook))
    assert any("has 3 cells" in p for p in out_of_sync(notebook))


def test_sync_keeps_outputs_of_unchanged_cells(tmp_path):
    notebook = _pair(tmp_path)
    nb = nbformat.read(str(notebook), as_version=4)
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    nb.cells[1].execution_count = 1
    nbformat.write(nb, str(notebook))
    src = notebook.with_suffix(".py")
    src.write_text(src.read_text().replace("print(2)", "print(22)"))
    sync(src)
    nb = nbformat.read(str(notebook), as_version=4)
    assert nb.cells[1].outputs[0]["text"] == "1\n" and nb.cells[2].source == "print(22)"
    assert jupytext.read(str(src)).cells[2].source == "print(22)"

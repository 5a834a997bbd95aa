"""The repo sets itself up from pinned versions and qlesson imports light."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pins(lines):
    return {
        m.group(1).lower(): m.group(2)
        for line in lines
        if (m := re.match(r"^\s*-?\s*([A-Za-z0-9_.\-]+)==([^\s#]+)", line))
    }


def test_environment_yml_matches_requirements():
    req = _pins((ROOT / "requirements/requirements.txt").read_text().splitlines())
    env = _pins((ROOT / "environment.yml").read_text().splitlines())
    req["torch"] = "2.13.0"  # installed first by the Makefile, listed in environment.yml
    assert env == req


def test_every_direct_pin_is_in_the_lock():
    req = _pins((ROOT / "requirements/requirements.txt").read_text().splitlines())
    lock = _pins((ROOT / "requirements/lock.txt").read_text().splitlines())
    assert req, "no pins read"
    mismatched = {k: (v, lock.get(k)) for k, v in req.items() if lock.get(k) != v}
    assert not mismatched


def test_makefile_installs_torch_first_and_exactly():
    text = (ROOT / "Makefile").read_text()
    torch_at = text.index("pip install --quiet torch==2.13.0")
    assert torch_at < text.index("-r requirements/requirements.txt")
    assert "make test" in (ROOT / ".ci/run").read_text()


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
    paths = ["qlesson", "tests", "notebooks", "exercises"]
    for cmd in (["check", *paths], ["format", "--check", *paths]):
        out = subprocess.run([sys.executable, "-m", "ruff", *cmd], capture_output=True, text=True, cwd=ROOT)
        assert out.returncode == 0, out.stdout + out.stderr

"""Launching a chapter where its launch buttons send it, simulated without network.

On Colab the first cell of every chapter clones the book's repository into
``attnlib-book``, installs attnlib from the clone and moves into ``attnlib-book/book``,
where the chapter finds ``data/``. These tests run that cell as it is, in a fresh
Python process that believes it is on Colab (a ``google.colab`` module), with the two
commands that need the network redirected: ``git clone`` clones this checkout's
committed HEAD (not the remote named in the cell) and ``pip install`` installs the
clone without dependencies into a folder on ``sys.path`` (the environment already has
them). What this cannot check: that the remote exists and is public, that pip resolves
the dependencies from an index, and Colab's own Python. The data files every chapter
reads are checked against the files git tracks (what a clone contains).
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted(p for p in BOOK.glob("*.ipynb") if re.match(r"\d\d_", p.name))

SIMULATE = textwrap.dedent(
    """
    import json, os, subprocess, sys, types
    site, repo, chapter = sys.argv[1:4]
    sys.path.insert(0, site)  # stands for Colab's site-packages
    colab = types.ModuleType("google.colab")
    colab.output = types.ModuleType("google.colab.output")  # jax imports it on Colab
    sys.modules["google.colab"] = colab
    real_run = subprocess.run

    def offline_run(cmd, **kw):
        if cmd[:2] == ["git", "clone"]:
            cmd = ["git", "clone", "-q", "--depth=1", "file://" + repo, cmd[-1]]
        elif cmd[1:4] == ["-m", "pip", "install"]:
            src = cmd[-1].split("[")[0]
            cmd = [cmd[0], "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                   "--no-index", "--target", site, src]
        return real_run(cmd, **kw)

    subprocess.run = offline_run
    nb = json.load(open(chapter))
    setup = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])
    exec(compile(setup, "setup cell", "exec"), {"__name__": "__main__"})
    del sys.modules["google.colab"]  # (jax would import google.colab.output from it)
    import attnlib
    import data
    where = {"cwd": os.getcwd(), "attnlib": attnlib.__file__, "data": list(data.__path__)[0]}
    print(json.dumps(where))
    """
)


def _data_files(chapter: Path) -> list[str]:
    """The names ``DATA / "name"`` in the chapter's code cells."""
    cells = json.loads(chapter.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return re.findall(r'DATA / "([^"]+)"', code)


def _git(*args) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def test_colab_setup_cell_offline(tmp_path):
    """A chapter's setup cell on a simulated Colab: clone, install, chdir, imports, data."""
    if _git("rev-parse", "--is-inside-work-tree").strip() != "true":
        pytest.skip("not a git checkout")
    chapter = BOOK / "05_state_evolution.ipynb"
    content, site = tmp_path / "content", tmp_path / "site"
    content.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ATTNLIB_QUICK")}
    out = subprocess.run(
        [sys.executable, "-c", SIMULATE, str(site), str(ROOT), str(chapter)],
        cwd=content,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    where = json.loads(out.stdout.strip().splitlines()[-1])
    clone = content / "attnlib-book"
    assert Path(where["cwd"]) == clone / "book"
    assert Path(where["attnlib"]).is_relative_to(site), where  # installed from the clone
    assert Path(where["data"]).is_relative_to(clone / "book" / "data"), where
    assert _data_files(chapter)
    for name in _data_files(chapter):
        assert (clone / "book" / "data" / name).is_file(), name


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.name for p in CHAPTERS])
def test_chapter_data_files_are_tracked(path):
    """Every file a chapter reads from book/data/ is in git, so a clone has it."""
    if _git("rev-parse", "--is-inside-work-tree").strip() != "true":
        pytest.skip("not a git checkout")
    tracked = set(_git("ls-files", "book/data").split())
    for name in _data_files(path):
        assert f"book/data/{name}" in tracked, (
            f"{path.name} reads data/{name}, which git does not track"
        )

"""The book's table of contents and the committed state of its chapters."""

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))


def _toc_entries(node) -> list[str]:
    """Every `file:` (and the root) of a jb-book _toc.yml, in order."""
    found = []
    if isinstance(node, dict):
        for key in ("root", "file"):
            if key in node:
                found.append(node[key])
        for value in node.values():
            if isinstance(value, (dict, list)):
                found.extend(_toc_entries(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_toc_entries(item))
    return found


def _resolve(entry: str) -> Path | None:
    """A toc entry has no suffix: it names a .md or a .ipynb file."""
    matches = [ROOT / f"{entry}{suffix}" for suffix in (".md", ".ipynb")]
    matches = [p for p in matches if p.exists()]
    assert len(matches) <= 1, f"{entry} is ambiguous: {matches}"
    return matches[0] if matches else None


def _toc() -> dict:
    return yaml.safe_load((ROOT / "_toc.yml").read_text())


def test_toc_format():
    toc = _toc()
    assert toc["format"] == "jb-book"
    assert toc["root"] == "book/intro"


def test_every_toc_entry_exists_once():
    entries = _toc_entries(_toc())
    assert len(entries) == len(set(entries)), "a page is listed twice"
    missing = [e for e in entries if _resolve(e) is None]
    assert missing == [], f"listed in _toc.yml but missing: {missing}"


def test_every_page_is_in_toc():
    listed = {_resolve(e) for e in _toc_entries(_toc())}
    pages = sorted(BOOK.glob("*.md")) + NOTEBOOKS
    unlisted = [p.relative_to(ROOT).as_posix() for p in pages if p not in listed]
    assert unlisted == [], f"pages not in _toc.yml: {unlisted}"


SKIP_TAGS = {"skip-execution", "nbval-skip"}  # e.g. the cell that regenerates book/data/


def _code_cells(nb: dict, *, executed_only: bool = False) -> list[dict]:
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    if executed_only:
        cells = [c for c in cells if not SKIP_TAGS & set(c.get("metadata", {}).get("tags", []))]
    return cells


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_committed_with_outputs(path):
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3", "kernel spec must be python3"
    cells = _code_cells(nb, executed_only=True)
    assert cells, "a chapter without code"
    unexecuted = [i for i, c in enumerate(cells) if c.get("execution_count") is None]
    assert unexecuted == [], f"code cells never executed (indices among code cells): {unexecuted}"
    counts = [c["execution_count"] for c in cells]
    assert counts == list(range(1, len(cells) + 1)), "cells not executed once, top to bottom"
    assert any(c["outputs"] for c in cells), "no outputs stored: nbval has nothing to compare"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_has_no_error_output(path):
    nb = json.loads(path.read_text())
    errors = [
        (i, out.get("ename"))
        for i, c in enumerate(_code_cells(nb))
        for out in c["outputs"]
        if out["output_type"] == "error"
    ]
    assert errors == [], f"cells with an error output: {errors}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_skipped_cells_carry_no_stale_output(path):
    """A cell the build skips (e.g. the one regenerating book/data/) is never re-run, so
    any output it stores would be stale."""
    nb = json.loads(path.read_text())
    stale = [
        i
        for i, c in enumerate(_code_cells(nb))
        if SKIP_TAGS & set(c.get("metadata", {}).get("tags", [])) and c["outputs"]
    ]
    assert stale == [], f"skipped cells with stored outputs (indices among code cells): {stale}"

"""The print edition: `make pdf` builds the whole book as one PDF (slow: minutes, and
TeX from Debian's packages when missing; run by `make test-all`)."""

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from docutils import nodes

ROOT = Path(__file__).resolve().parents[1]
MIN_PAGES_PER_PAGE_OF_TOC = 3  # a chapter is many printed pages; notation, API and intro too


def _toc_files() -> list[Path]:
    """The pages of _toc.yml (an entry without a file is test_book_structure's to report)."""
    text = (ROOT / "_toc.yml").read_text()
    names = re.findall(r"^\s*(?:root|- file):\s*(\S+)", text, re.M)
    paths = [ROOT / f"{name}{suffix}" for name in names for suffix in (".md", ".ipynb")]
    return [p for p in paths if p.exists()]


def _title(path: Path) -> str:
    """The page's first level-1 heading, as written in its source."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    else:
        text = path.read_text()
    return re.search(r"^# +(.+)$", text, re.M).group(1).strip()


def _plain(text: str) -> str:
    """What a title looks like in pdftotext's output: no markup, math or hyphens."""
    text = re.sub(r"\$[^$]*\$|`", " ", text)
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def test_titles_of_the_toc_are_read_from_the_sources():
    titles = [_title(p) for p in _toc_files()]
    assert len(titles) >= 8 and all(titles)
    assert yaml.safe_load((ROOT / "_toc.yml").read_text())["root"] == "book/intro"


def _latex_fixes():
    spec = importlib.util.spec_from_file_location(
        "book_latex_fixes", ROOT / "tools" / "book_latex_fixes.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(tags: list[str]) -> nodes.container:
    """A code cell as myst-nb builds it: a source container and an output container."""
    cell = nodes.container(nb_element="cell_code", cell_metadata={"tags": tags})
    cell += nodes.container(
        "", nodes.literal_block("x = 1", "x = 1"), nb_element="cell_code_source"
    )
    cell += nodes.container("", nodes.paragraph("", "1"), nb_element="cell_code_output")
    return cell


@pytest.mark.parametrize("fmt", ["latex", "html"])
def test_collapsed_sources_are_dropped_on_paper_only(fmt):
    doc = nodes.document(None, None)
    hidden, shown = _cell(["hide-input"]), _cell([])
    doc += [hidden, shown]
    app = SimpleNamespace(builder=SimpleNamespace(format=fmt))
    _latex_fixes()._drop_hidden_sources(app, doc, "page")
    kinds = [[child["nb_element"] for child in cell.children] for cell in (hidden, shown)]
    both = ["cell_code_source", "cell_code_output"]
    assert kinds == ([["cell_code_output"], both] if fmt == "latex" else [both, both])


@pytest.mark.slow
def test_make_pdf_builds_the_whole_book(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = tmp_path / "pdf"
    run = subprocess.run(
        ["make", "pdf", f"PDF_OUT={out}"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    pdf = out / "_build" / "latex" / "book.pdf"
    assert pdf.is_file() and pdf.stat().st_size > 100_000
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
    pages = int(re.search(r"^Pages:\s+(\d+)", info.stdout, re.M).group(1))
    pages_of_toc = _toc_files()
    print(f"book.pdf: {pages} pages, {pdf.stat().st_size / 1e6:.1f} MB")
    assert pages >= MIN_PAGES_PER_PAGE_OF_TOC * len(pages_of_toc), pages
    text = subprocess.run(
        ["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    flat = _plain(text.replace("-\n", ""))
    missing = [_title(p) for p in pages_of_toc if _plain(_title(p)) not in flat]
    assert missing == [], f"page titles not found in the PDF's text: {missing}"

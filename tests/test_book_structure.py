"""The book's table of contents and the committed state of its chapters."""

import json
import math
import re
from pathlib import Path

import pytest
import yaml

from attnlib import book

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


# --- Book conventions (every chapter: book/NN_*.ipynb, the primer 00 included) ---------

CHAPTERS = [p for p in NOTEBOOKS if re.match(r"\d\d_", p.name)]
CHAPTER_IDS = [p.name for p in CHAPTERS]

# The first code cell of every chapter, character for character (README: class mode, Colab).
SETUP_CELL = """# Setup. On Colab: fetch the book's repository and install attnlib from it.
# ATTNLIB_QUICK=1 runs this chapter's simulations live at small d (class mode).
import os
import subprocess
import sys

REPOSITORY = "{repository}"
if "google.colab" in sys.modules and not os.path.isdir("data"):
    subprocess.run(["git", "clone", "--depth=1", REPOSITORY, "attnlib-book"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "./attnlib-book[book]"], check=True)
    os.chdir("attnlib-book/book")
QUICK = os.environ.get("ATTNLIB_QUICK", "0") == "1"

import attnlib

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles"""


def _repository_url() -> str:
    return yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def _tags(cell: dict) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _markdown(nb: dict) -> str:
    return "\n\n".join(_source(c) for c in nb["cells"] if c["cell_type"] == "markdown")


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_chapters_exist():
    assert len(CHAPTERS) >= 6, [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_first_code_cell_is_the_setup_cell(path):
    cell = _code_cells(_load(path))[0]
    expected = SETUP_CELL.format(repository=_repository_url())
    assert _source(cell).strip() == expected, "first code cell differs from the setup cell"
    assert "hide-input" in _tags(cell), "the setup cell must be tagged hide-input"


def test_setup_cell_names_the_configured_repository():
    match = re.search(r'REPOSITORY = "([^"]+)"', SETUP_CELL.format(repository=_repository_url()))
    assert match and match.group(1) == _repository_url()
    assert _repository_url().startswith("https://github.com/")


_IMPORT_LINE = re.compile(r"^(import \S+|from \S+ import .+|#.*|)$")


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_plumbing_cells_are_hidden(path):
    """Cells made only of imports are plumbing: collapsed (hide-input) like the setup cell."""
    shown = [
        i
        for i, cell in enumerate(_code_cells(_load(path)))
        if all(_IMPORT_LINE.match(line.strip()) for line in _source(cell).splitlines())
        and not _tags(cell) & {"hide-input", "remove-input", "remove-cell"}
    ]
    assert shown == [], f"import-only cells without hide-input (indices among code cells): {shown}"


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_opens_with_learning_goals_and_setting(path):
    nb = _load(path)
    first_code = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
    opening = "\n".join(
        _source(c) for c in nb["cells"][:first_code] if c["cell_type"] == "markdown"
    )
    assert opening.lstrip().startswith("# "), "a chapter starts with its title"
    goals = re.search(r"```\{admonition\} Learning goals\n(.*?)```", opening, re.S)
    assert goals, "no ```{admonition} Learning goals``` before the first code cell"
    bullets = [ln for ln in goals.group(1).splitlines() if re.match(r"\s*[-*] ", ln)]
    assert 3 <= len(bullets) <= 5, f"{len(bullets)} learning goals (3-5 expected)"
    assert re.search(r"^\s*(\*\*)?Setting[.:]", opening, re.M), "no 'Setting' line at the top"


def _sections(markdown: str) -> list[tuple[str, str]]:
    """(title, body) of every level-2 section, in order."""
    parts = re.split(r"^## +(.+)$", markdown, flags=re.M)
    return list(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_ends_with_summary_then_problems(path):
    titles = [t.strip() for t, _ in _sections(_markdown(_load(path)))]
    assert titles[-2:] == ["Summary", "Problems"], f"last sections: {titles[-2:]}"


_EXERCISE = re.compile(r"^(`{3,}|:{3,})\{exercise\}.*?\n\s*:label: *(\S+)", re.M)
_SOLUTION = re.compile(r"^(`{3,}|:{3,})\{solution\} *(\S+)\n((?:\s*:[\w-]+:.*\n)*)", re.M)


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_problems_have_hidden_solutions(path):
    problems = _sections(_markdown(_load(path)))[-1][1]
    exercises = [m.group(2) for m in _EXERCISE.finditer(problems)]
    solutions = {m.group(2): m.group(3) for m in _SOLUTION.finditer(problems)}
    assert 6 <= len(exercises) <= 8, f"{len(exercises)} problems (6-8 expected)"
    assert len(set(exercises)) == len(exercises), "duplicate exercise labels"
    missing = [label for label in exercises if label not in solutions]
    assert missing == [], f"problems without a solution: {missing}"
    shown = [label for label, options in solutions.items() if "dropdown" not in options]
    assert shown == [], f"solutions not hidden (:class: dropdown): {shown}"


_GRADED = re.compile(r"^(?:`{3,}|:{3,})\{exercise\} *(\S*)", re.M)


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_problems_are_graded_and_two_are_implemented(path):
    """Each problem's title opens with its difficulty (one to three stars), and at least
    two are implementation problems: a stub cell after the Problems heading whose stored
    output says it is not yet implemented (the student replaces the stub)."""
    nb = _load(path)
    problems = _sections(_markdown(nb))[-1][1]
    marks = [m.group(1) for m in _GRADED.finditer(problems)]
    ungraded = [m for m in marks if m not in ("★", "★★", "★★★")]
    assert ungraded == [], f"problem titles without a difficulty of 1-3 stars: {ungraded}"
    cells = nb["cells"]
    start = next(
        i
        for i, c in enumerate(cells)
        if c["cell_type"] == "markdown" and _PROBLEMS_HEADING.search(_source(c))
    )
    stubs = sum(
        any("not yet implemented" in "".join(o.get("text", "")) for o in c.get("outputs", []))
        for c in cells[start:]
        if c["cell_type"] == "code"
    )
    assert stubs >= 2, f"{stubs} implementation problems (stub cells) after Problems; 2 expected"


_GLUE_ROLE = re.compile(r"\{glue(?::[\w-]+)?\}`([^`<>:]+)")
_GLUE_DIRECTIVE = re.compile(r"^(?:`{3,}|:{3,})\{glue(?::[\w-]+)?\} *(\S+)", re.M)


def _glued_names(nb: dict) -> list[str]:
    """Names glued by the code cells, read from the stored outputs (myst-nb's glue
    writes display data whose metadata carries the name)."""
    return [
        out["metadata"]["scrapbook"]["name"]
        for cell in _code_cells(nb)
        for out in cell.get("outputs", [])
        if "scrapbook" in out.get("metadata", {})
    ]


def _used_names(nb: dict) -> set[str]:
    text = _markdown(nb)
    return {m.strip() for m in _GLUE_ROLE.findall(text) + _GLUE_DIRECTIVE.findall(text)}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_glued_names_are_unique_used_and_defined(path):
    nb = _load(path)
    glued, used = _glued_names(nb), _used_names(nb)
    duplicates = sorted({name for name in glued if glued.count(name) > 1})
    assert duplicates == [], f"names glued more than once: {duplicates}"
    assert sorted(used - set(glued)) == [], "used in markdown but never glued"
    assert sorted(set(glued) - used) == [], "glued but never used in markdown"


_GLUE_FORMATTED = re.compile(r"\{glue(?::text)?\}`([^`<>:]+):([^`]+)`")  # name, format


def _stored_glue_text(nb: dict) -> dict[str, str]:
    """The text/plain each glued name stores, by name."""
    stored = {}
    for cell in _code_cells(nb):
        for out in cell.get("outputs", []):
            if "scrapbook" not in out.get("metadata", {}):
                continue
            data = out.get("data", {})
            text = next((v for k, v in data.items() if k.endswith("text/plain")), None)
            stored[out["metadata"]["scrapbook"]["name"]] = (
                text if text is None or isinstance(text, str) else "".join(text)
            )
    return stored


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_formatted_glue_values_are_plain_numbers(path):
    """{glue:text}`name:.3f` formats the stored text/plain: with numpy 2 a glued
    np.float64 is stored as 'np.float64(...)', which the build cannot format (a
    warning, so -W fails). Glue float(value) / int(value)."""
    nb = _load(path)
    stored = _stored_glue_text(nb)
    bad = []
    for name in {name for name, _ in _GLUE_FORMATTED.findall(_markdown(nb))}:
        text = stored.get(name.strip())
        if text is None:
            continue  # reported by test_glued_names_are_unique_used_and_defined
        try:
            float(text)
        except ValueError:
            bad.append(f"{name}: {text!r}")
    assert bad == [], f"formatted glue values that are not plain numbers: {bad}"


_FORMAT_SPEC = re.compile(r"[+\- ]?\.(\d+)([efg%])")


def _digits_shown(value: float, spec: str) -> int:
    """Significant digits of ``value`` that the format ``spec`` prints (e.g. ``.3f``)."""
    if spec == "g":
        return 6
    match = _FORMAT_SPEC.fullmatch(spec)
    if match is None:
        raise ValueError(f"format {spec!r} not understood by this test")
    places, kind = int(match.group(1)), match.group(2)
    if kind in "eg":
        return places + (kind == "e")
    scale = 100 * abs(value) if kind == "%" else abs(value)
    return max(0, math.floor(math.log10(scale)) + 1 + places) if scale else 0


def test_digits_shown_counts_what_a_format_prints():
    assert _digits_shown(408.2, ".1f") == 4 and _digits_shown(0.0336, ".4f") == 3
    assert _digits_shown(0.123, ".1%") == 3 and _digits_shown(5e-7, ".1e") == 2
    assert _digits_shown(15.0, "+.1f") == 3 and _digits_shown(0.0, ".3f") == 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_prose_quotes_fewer_digits_than_glue_stores(path):
    """attnlib.book.glue rounds to SIGNIFICANT_DIGITS; a formatted paste that showed
    as many digits would print the rounding (and the machine's last bits) to the
    reader. Two digits of margin."""
    nb = _load(path)
    stored = _stored_glue_text(nb)
    too_fine = []
    for name, spec in set(_GLUE_FORMATTED.findall(_markdown(nb))):
        try:
            value = float(stored.get(name.strip()))
        except (TypeError, ValueError):
            continue  # reported by the two tests above
        shown = _digits_shown(value, spec)
        if shown > book.SIGNIFICANT_DIGITS - 2:
            too_fine.append(f"{name}:{spec} shows {shown} digits of {value!r}")
    assert too_fine == [], f"pastes finer than the stored precision allows: {too_fine}"


_GLUE_ROLE_BODY = re.compile(r"\{glue(?::text)?\}`([^`]*)`")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_glue_roles_are_closed(path):
    """A glue role's body is ``name`` or ``name:format``: a brace or a newline inside it
    means its closing backtick is missing (the build then looks up a garbled key)."""
    bad = [b for b in _GLUE_ROLE_BODY.findall(_markdown(_load(path))) if set(b) & set("{}\n ")]
    assert bad == [], f"unclosed glue roles: {bad}"


# --- A chapter is one lecture: its reading time and what its visible cells show ------

WORDS_PER_MINUTE = 120  # prose
CODE_LINES_PER_MINUTE = 10  # visible code (hidden cells are not read)
MINUTES_PER_FIGURE = 1
LECTURE_MINUTES = 60
_HIDDEN = {"hide-input", "remove-input", "remove-cell", "hide-cell"}
_PROBLEMS_HEADING = re.compile(r"^## +Problems\s*$", re.M)


def reading_minutes(nb: dict) -> tuple[float, int, int, int]:
    """Reading time of a chapter's main line, up to its Problems section:
    words / 120 + visible code lines / 10 + one minute a figure shown.

    Returns (minutes, words, visible code lines, figures)."""
    words = lines = figures = 0
    for cell in nb["cells"]:
        src = _source(cell)
        if cell["cell_type"] == "markdown":
            end = _PROBLEMS_HEADING.search(src)
            words += len((src[: end.start()] if end else src).split())
            if end:
                break
        elif cell["cell_type"] == "code":
            if not _tags(cell) & _HIDDEN:
                lines += sum(1 for line in src.splitlines() if line.strip())
            if not _tags(cell) & {"remove-output", "remove-cell"}:
                figures += sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))
    minutes = (
        words / WORDS_PER_MINUTE + lines / CODE_LINES_PER_MINUTE + figures * MINUTES_PER_FIGURE
    )
    return minutes, words, lines, figures


def test_reading_minutes_counts_words_code_and_figures():
    md = {"cell_type": "markdown", "source": ["one two three\n", "## Problems\nnot counted"]}
    shown = {"cell_type": "code", "source": ["x = 1\n\ny = 2\n"], "metadata": {}, "outputs": []}
    hidden = {
        "cell_type": "code",
        "source": ["z = 3\n"],
        "metadata": {"tags": ["hide-input"]},
        "outputs": [{"output_type": "display_data", "data": {"image/png": ""}}],
    }
    after = {"cell_type": "code", "source": ["w = 4\n"], "metadata": {}, "outputs": []}
    minutes, words, lines, figures = reading_minutes({"cells": [shown, hidden, md, after]})
    assert (words, lines, figures) == (3, 2, 1)
    assert minutes == pytest.approx(3 / 120 + 2 / 10 + 1)


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_reads_in_one_lecture(path):
    minutes, words, lines, figures = reading_minutes(_load(path))
    print(f"{path.name}: {minutes:.0f} min ({words} words, {lines} code lines, {figures} figures)")
    assert minutes <= LECTURE_MINUTES, (
        f"{path.name} reads in {minutes:.0f} min ({words} words, {lines} visible code lines, "
        f"{figures} figures): split it or move methods to the appendix (at most {LECTURE_MINUTES})"
    )


# Plotting boilerplate: axis methods and pyplot calls. A visible cell draws a figure by
# one call to attnlib.plotting or to a hidden helper of the chapter, never with these.
_PLOTTING_CALL = re.compile(
    r"(\bplt\.|\.(plot|errorbar|scatter|hist|bar|fill_between|loglog|semilogx|semilogy|"
    r"axvline|axhline|legend|annotate|imshow|colorbar|tight_layout|subplots|twinx|"
    r"set_\w+)\()"
)
_GLUE_CALL = re.compile(r"\bglue\(")


def _visible_code(nb: dict) -> list[tuple[int, str]]:
    return [(i, _source(c)) for i, c in enumerate(_code_cells(nb)) if not _tags(c) & _HIDDEN]


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_visible_cells_hold_no_glue(path):
    shown = [i for i, src in _visible_code(_load(path)) if _GLUE_CALL.search(src)]
    assert shown == [], f"visible cells calling glue() (indices among code cells): {shown}"


@pytest.mark.parametrize("path", CHAPTERS, ids=CHAPTER_IDS)
def test_visible_cells_hold_no_plotting_boilerplate(path):
    shown = [
        (i, sorted({m.group(0) for m in _PLOTTING_CALL.finditer(src)}))
        for i, src in _visible_code(_load(path))
        if _PLOTTING_CALL.search(src)
    ]
    assert shown == [], f"visible cells with plotting calls (index, calls): {shown}"


def test_the_visible_cell_checks_can_fail():
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "source": ["fig, ax = plt.subplots()\nax.set_xlabel('a')\nglue('x', 1)\n"],
            }
        ]
    }
    ((_, src),) = _visible_code(nb)
    assert _GLUE_CALL.search(src) and _PLOTTING_CALL.search(src)
    nb["cells"][0]["metadata"]["tags"] = ["hide-input"]
    assert _visible_code(nb) == []

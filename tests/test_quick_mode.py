"""Class mode: every chapter runs with ATTNLIB_QUICK=1 without error and fast.

With ATTNLIB_QUICK=1 a chapter runs its simulations live at small d instead of
reading book/data/ (the setup cell sets QUICK). A teacher relies on each chapter
finishing in about a minute on two cores. Each chapter is executed by nbclient
in book/ (the kernel's working directory, as in the build) and the kernel's CPU
time (user + system, all threads, and any child processes it waited for) is
compared with the budget, ATTNLIB_QUICK_BUDGET_S seconds (default 60). CPU time,
not wall-clock time: on a loaded machine the time in cells grows with the load
(chapters 2 and 3 took 128 s and 189 s in cells at load average 7 for 64 s and
98 s of kernel CPU), the CPU time much less, so the test fails on a slower
chapter, not on a busy machine. The time in cells and with kernel start-up is
printed beside it. Marked `quick`: `make test-quick` runs these tests,
`make test` does not (they add minutes; .ci/run calls both).
"""

import os
import re
import time
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted(p for p in BOOK.glob("*.ipynb") if re.match(r"\d\d_", p.name))
BUDGET_S = float(os.environ.get("ATTNLIB_QUICK_BUDGET_S", "60"))

pytestmark = pytest.mark.quick
CPU_TIME = (
    "import resource\n"
    "_usage = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]\n"
    "print(round(sum(u.ru_utime + u.ru_stime for u in _usage), 2))"
)


def _cell_seconds(cell) -> float:
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return 0.0
    parse = datetime.fromisoformat
    return (parse(end.replace("Z", "+00:00")) - parse(start.replace("Z", "+00:00"))).total_seconds()


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.name for p in CHAPTERS])
def test_chapter_runs_in_quick_mode(path, monkeypatch):
    monkeypatch.setenv("ATTNLIB_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "agg")  # no figures need to be stored here
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    nb = nbformat.read(path, as_version=4)
    skipped = {"skip-execution", "nbval-skip"}  # e.g. the cells that regenerate book/data/
    nb.cells = [c for c in nb.cells if not skipped & set(c.get("metadata", {}).get("tags", []))]
    n_chapter = len(nb.cells)
    # the kernel's CPU time (all threads, and its children): the budgeted quantity; on
    # a loaded machine the cell time grows with the load, the CPU time much less
    nb.cells.append(nbformat.v4.new_code_cell(CPU_TIME))
    client = NotebookClient(
        nb,
        timeout=int(5 * BUDGET_S),
        kernel_name="python3",
        resources={"metadata": {"path": str(BOOK)}},
        record_timing=True,
    )
    wall = time.perf_counter()
    client.execute()  # raises CellExecutionError on the first failing cell
    wall = time.perf_counter() - wall
    cells = sum(_cell_seconds(c) for c in nb.cells[:n_chapter] if c.cell_type == "code")
    cpu = float("".join(o.get("text", "") for o in nb.cells[-1].get("outputs", [])))
    load = os.getloadavg()[0]
    print(
        f"{path.name}: kernel CPU {cpu:.1f} s (budget {BUDGET_S:.0f} s); wall: cells "
        f"{cells:.1f} s, with kernel start {wall:.1f} s; load average {load:.1f}"
    )
    assert cpu < BUDGET_S, (
        f"{path.name} used {cpu:.0f} s of kernel CPU in quick mode (budget {BUDGET_S:.0f} s; "
        f"{cells:.0f} s wall-clock in cells at load average {load:.1f})"
    )

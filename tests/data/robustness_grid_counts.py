"""Counts of the robustness grid (tests/test_se.py::test_robust_by_default_grid), point by point.

Runs the grid's check (``_check_robust_point``: a fixed point under the independent map,
the same point from continuation in ``lam``, the same lowest objective where several fixed
points were found; or NaN) on the 16 points of each case named on the command line, one
JSON line per point, and with ``--table`` turns such lines into the table of
``robustness_grid_counts.md``. From the repository root::

    python -m tests.data.robustness_grid_counts seq2lab:0.2:nuclear ... > grid.jsonl
    python -m tests.data.robustness_grid_counts --table grid.jsonl

A case is ``task:kappa0:penalty`` with ``task`` a key of ``ROBUST_TASKS``. Unlike the
test, a failed check is recorded (``err``) and the case goes on.
"""

import collections
import json
import pathlib
import sys
import time

import attnlib
from attnlib import se
from attnlib.targets import Wishart

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # as pytest does
import test_se as T  # noqa: E402

attnlib.configure_jax()  # float64 and the compilation cache, as the tests' conftest does

ALPHAS = (0.02, 0.1, 0.3, 1.0)
LAMS = (1e-6, 1e-3, 0.1, 10.0)


def run_case(spec):
    name, kappa0, penalty = spec.split(":")
    calls, solve = [], se.solve

    def recording(*args, **kw):
        calls.append(solve(*args, **kw))
        return calls[-1]

    T.se.solve = recording  # the three solves of the check: direct, neighbour, continuation
    try:
        for alpha in ALPHAS:
            for lam in LAMS:
                calls.clear()
                t0, err = time.perf_counter(), None
                try:
                    task, target = T.ROBUST_TASKS[name], Wishart(float(kappa0))
                    T._check_robust_point(task, target, alpha, lam, penalty)
                except AssertionError as e:
                    err = str(e)[:300]
                r, back = calls[0], (calls[2] if len(calls) > 2 else None)
                status = "nan" if not r.converged else ("zero" if r.v == 0.0 else "conv")
                row = dict(
                    case=spec, alpha=alpha, lam=lam, status=status, n_alt=len(r.alternatives),
                    n_alt_back=None if back is None else len(back.alternatives),
                    obj=r.objective, obj_back=None if back is None else back.objective,
                    n_iter=r.n_iter, err=err, t=round(time.perf_counter() - t0, 1),
                )  # fmt: skip
                print(json.dumps(row), flush=True)
    finally:
        T.se.solve = solve


def table(paths):
    cases = collections.OrderedDict()
    rows = (json.loads(line) for p in paths for line in open(p) if line.strip())
    for r in (r for r in rows if "status" in r):  # (other lines: e.g. a case's total time)
        c = cases.setdefault(r["case"], collections.Counter())
        c["points"] += 1
        c[r["status"]] += 1
        c["failed"] += r["err"] is not None
        if r["n_alt"] or r["n_alt_back"]:
            c["several"] += 1
            c["agree"] += abs(r["obj"] - r["obj_back"]) <= 1e-4 * abs(r["obj"]) + 1e-10
        c["seconds"] += r["t"]
    head = ["case", "points", "fixed point", "zero phase", "NaN", "failed checks"]
    print("| " + " | ".join([*head, "several", "agree", "minutes"]) + " |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k, c in cases.items():
        cols = [c[f] for f in ("points", "conv", "zero", "nan", "failed", "several", "agree")]
        print(f"| {k} | " + " | ".join(map(str, cols)) + f" | {c['seconds'] / 60:.1f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--table"]:
        table(sys.argv[2:])
    else:
        for case in sys.argv[1:]:
            run_case(case)

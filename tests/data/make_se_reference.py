"""Reference results of the state evolution on a grid, made BEFORE the engine rewrite.

Run from the repository root (about 30 CPU-minutes; writes ``se_reference.json``)::

    python -m tests.data.make_se_reference

Each point is solved with the engine's defaults (``se.solve(task, target, alpha,
lam, penalty)``, fields ``default_*``). The residual of the SE map at the returned
``(m, q, v)`` is then recomputed independently of the solver's own bookkeeping
(``map_residual``: the largest relative change of ``(m, q, v)`` under one cold-started
map; ``NaN`` where the map is undefined there), so that points the engine reported
as converged but that are not fixed points are recorded. Every converged point is
then polished (warm start, ``tol=1e-10``; fields ``m, q, v, ...``): the new engine
is compared with those to ``1e-6``.
"""

import json
import math
import pathlib
import time
import warnings

import numpy as np

import attnlib  # noqa: F401  (float64)
from attnlib import se, tasks
from attnlib.targets import Wishart

FIELDS = ("m", "q", "v", "train_loss", "test_error", "mse", "rank_fraction")
TASKS = {
    "linear_T1": tasks.Linear(T=1),
    "linear_T1_noisy": tasks.Linear(T=1, noise=0.25),
    "seq2seq_T2": tasks.Seq2Seq(T=2),
    "seq2seq_T2_noisy": tasks.Seq2Seq(T=2, noise=0.25),
    "seq2lab_T2": tasks.Seq2Lab(T=2),
}
KAPPA0 = (0.2, 0.5, 1.0)
PENALTIES = ("nuclear", "frobenius")
ALPHAS = (0.05, 0.2, 0.6)
LAMS = (1e-4, 1e-2, 1.0)
OUT = pathlib.Path(__file__).with_name("se_reference.json")


def map_residual(task, target, alpha, lam, penalty, r):
    """Relative change of (m, q, v) under one SE map (cold prox), ``nan`` if undefined."""
    if r.m == r.q == r.v == 0.0:  # zero phase: checked by the engine at the origin
        return 0.0
    x = np.array([r.m, r.q, r.v])
    if not (np.all(np.isfinite(x)) and r.q > 0 and r.v > 0):
        return math.nan
    try:
        ev = se._OutputEvaluator(task, alpha, target.Q0, 8192, 4, 0)
        o = ev(*x, mode="cold")
        i = se.input_side(target, o.m_hat, o.q_hat, o.a_hat, lam, penalty, Q0=target.Q0)
    except ValueError:
        return math.nan
    fx = np.array([i.m, i.q, i.v])
    return float(np.max(np.abs(fx - x) / np.maximum(np.abs(x), 1e-3)))


def one_point(name, task, kappa0, penalty, alpha, lam):
    target = Wishart(kappa0)
    row = dict(task=name, kappa0=kappa0, penalty=penalty, alpha=alpha, lam=lam)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = se.solve(task, target, alpha, lam, penalty)
        except RuntimeError as err:
            row.update(error=str(err), default_converged=False, converged=False)
            return row
        row["seconds"] = time.perf_counter() - t0
        row.update({f"default_{f}": float(getattr(r, f)) for f in FIELDS})
        row["default_converged"] = bool(r.converged)
        row["default_residual"] = float(r.residual)
        row["map_residual"] = map_residual(task, target, alpha, lam, penalty, r)
        p = r
        if r.converged and r.v > 0:
            p = se.solve(task, target, alpha, lam, penalty, init=r, tol=1e-10, max_iter=200)
        row.update({f: float(getattr(p, f)) for f in FIELDS})
        row["converged"] = bool(p.converged)
        row["residual"] = float(p.residual)
    return row


def main():
    rows = []
    for name, task in TASKS.items():
        for kappa0 in KAPPA0:
            for penalty in PENALTIES:
                for alpha in ALPHAS:
                    for lam in LAMS:
                        row = one_point(name, task, kappa0, penalty, alpha, lam)
                        rows.append(row)
                        print(json.dumps(row), flush=True)
                        OUT.write_text(json.dumps(rows, indent=0) + "\n")


if __name__ == "__main__":
    main()

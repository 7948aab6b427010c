"""The minimised ERM objective on data at several sizes d (the replica chapter).

For one setting (linear task, T = 1, label noise 0.1, Wishart target kappa0 = 0.5,
nuclear penalty lam = 0.05, alpha = 0.3), :func:`run_point` samples a target whose
eigenvalues are the d quantiles of the limiting Wishart spectrum (Haar eigenvectors:
the target's own norm does not fluctuate from seed to seed), a training set of
``n = alpha d^2`` sequences, solves the convex ERM with
:func:`attnlib.train.train_convex` and records the objective per sequence
``(sum_mu loss + d lam Tr S) / n`` with its two parts, the training loss and
``Tr S / d``. The chapter extrapolates the mean over seeds linearly in ``1/d``.

Run from book/ as ``python -m data.make_replica`` (writes ``replica_objective.npz``,
about five CPU-minutes); the chapter calls ``run(quick=True)`` in class mode (small d,
two seeds, seconds).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import attnlib
from attnlib import targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
KEY = jax.random.PRNGKey(25)
TARGET = targets.Wishart(0.5)
TASK = tasks.Linear(T=1, noise=0.1)
ALPHA, LAM = 0.3, 0.05
FULL = dict(d=(30, 40, 50, 60), seeds=tuple(range(24)))
QUICK = dict(d=(20, 30), seeds=(0, 1))


def run_point(d: int, seed: int) -> dict:
    """One convex ERM at size ``d``: objective per sequence, train loss, Tr S / d."""
    k = jax.random.fold_in(jax.random.fold_in(KEY, d), seed)
    S0 = targets.Explicit(tuple(TARGET.eigenvalues(d))).sample(jax.random.fold_in(k, 0), d)
    n = tasks.n_samples(ALPHA, d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), TASK, S0, n)
    res = train.train_convex(TASK, data, LAM, tol=1e-8)
    return dict(
        objective=train.objective(TASK, data, res.S, LAM) / n,
        train_loss=float(res.train_loss),
        trace=float(jnp.trace(res.S)) / d,
        converged=bool(res.converged),
    )


def run(quick: bool = False) -> dict:
    """Arrays ``(len(seeds), len(d))`` of ``objective``, ``train_loss``, ``trace``,
    ``converged``, and the sizes ``d``."""
    P = QUICK if quick else FULL
    t0 = time.time()
    rows = [[run_point(d, s) for d in P["d"]] for s in P["seeds"]]
    out = {k: np.array([[r[k] for r in row] for row in rows]) for k in rows[0][0]}
    out["d"] = np.array(P["d"], dtype=int)
    print(f"[replica] {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def load(path: Path = HERE / "replica_objective.npz") -> dict:
    """The stored full run (what ``run(quick=False)`` returns)."""
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    np.savez(
        HERE / ("replica_objective_quick.npz" if quick else "replica_objective.npz"), **run(quick)
    )

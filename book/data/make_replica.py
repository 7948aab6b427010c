"""The minimised ERM objective on data at several sizes d (the replica chapter).

For one setting (linear task, T = 1, label noise 0.1, Wishart target kappa0 = 0.5,
nuclear penalty lam = 0.05, alpha = 0.3), :func:`run_point` samples a target whose
eigenvalues are the d quantiles of the limiting Wishart spectrum (Haar eigenvectors:
the target's own norm does not fluctuate from seed to seed), a training set of
``n = alpha d^2`` sequences, solves the convex ERM with
:func:`attnlib.train.train_convex` and records the objective per sequence
``(sum_mu loss + d lam Tr S) / n`` with its two parts, the training loss and
``Tr S / d``. The chapter extrapolates the mean over seeds linearly in ``1/d``.

Run from ``book/``::

    python -m data.make_replica --serial                # -> data/replica_objective.npz
    python -m data.make_replica --quick --serial --out DIR  # -> replica_objective_quick.npz

(about five CPU-minutes; ``--help`` for the options). The sizes and seeds are one
:class:`attnlib.sweep.Grid` of the pure point function :func:`run_point` (cached on
disk, Dask or serial); the chapter calls ``run(quick=True)`` in class mode (small d,
two seeds, seconds).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import jax.numpy as jnp
import numpy as np
from data import _common as C

import attnlib
from attnlib import sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
KEY = jax.random.PRNGKey(25)
TARGET = targets.Wishart(0.5)
TASK = tasks.Linear(T=1, noise=0.1)
ALPHA, LAM = 0.3, 0.05
FULL = dict(d=(30, 40, 50, 60), seeds=24)
QUICK = dict(d=(20, 30), seeds=2)
FIELDS = ("objective", "train_loss", "trace", "converged")


def run_point(d: int, seed: int) -> dict:
    """One convex ERM at size ``d``: objective per sequence, train loss, Tr S / d."""
    k = jax.random.fold_in(jax.random.fold_in(KEY, d), seed)
    S0 = targets.Explicit(tuple(TARGET.eigenvalues(d))).sample(jax.random.fold_in(k, 0), d)
    n = tasks.n_samples(ALPHA, d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), TASK, S0, n)
    res = train.train_convex(TASK, data, LAM, tol=1e-8)
    return dict(
        objective=float(train.objective(TASK, data, res.S, LAM) / n),
        train_loss=float(res.train_loss),
        trace=float(jnp.trace(res.S)) / d,
        converged=bool(res.converged),
    )


def grid(cfg) -> sweep.Grid:
    return sweep.Grid(run_point, sweep.product(d=cfg["d"]), seeds=cfg["seeds"])


def run(quick: bool = False, runner=None) -> dict:
    """Arrays ``(seeds, len(d))`` of ``objective``, ``train_loss``, ``trace``,
    ``converged``, and the sizes ``d``."""
    cfg = QUICK if quick else FULL
    table = (runner or C.Runner())(grid(cfg))
    axes = {"seed": range(cfg["seeds"]), "d": cfg["d"]}
    out = {f: sweep.pivot(table, f, axes) for f in FIELDS}
    out["converged"] = out["converged"] == 1  # NaN (a failed point) counts as not converged
    out["d"] = np.array(cfg["d"], dtype=int)
    return out


def load(path: Path = HERE / "replica_objective.npz") -> dict:
    """The stored full run (what ``run(quick=False)`` returns)."""
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def main(argv=None) -> None:
    args = C.parser(__doc__, ["objective"]).parse_args(argv)
    name = "replica_objective_quick.npz" if args.quick else "replica_objective.npz"
    parts = C.npz_parts({"objective": name}, lambda _, quick, runner: run(quick, runner))
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    main()

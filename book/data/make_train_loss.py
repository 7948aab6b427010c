r"""Train loss (and test error, ``||S - S0||_F^2 / d``) at finite ``d``: the points where
the learning curves of ``book/02_erm_asymptotics.ipynb`` sit furthest from the state
evolution, at several ``d`` for an extrapolation in ``1/d``.

Run from ``book/``::

    python -m data.make_train_loss --serial   # -> data/train_loss_fs.npz (about 10 CPU-minutes)
    python -m data.make_train_loss --quick --serial --out DIR  # -> train_loss_fs_quick.npz

Three studies, each a :class:`attnlib.sweep.Grid` per size ``d`` of the pure point
function :func:`run_point` of ``(study, lam, d, seed)`` (cached on disk, so an interrupted
run resumes; Dask or serial; ``--help`` for the options):

- ``linear``: linear task ``T = 1``, label noise ``Delta = 0.25``, ``alpha = 0.1``
  (deep in the interpolating regime, ``alpha_interp(Delta) = 0.324``), penalties
  ``1e-3, 1e-2, 1e-1``. At the smallest penalties the stored learning curves at
  ``d = 60`` have a train loss 20-60 times the state evolution's.
- ``seq2seq``: softmax seq2seq ``T = 2``, noise-free labels, ``alpha = 0.45`` (about
  twice ``alpha_PR = 0.211``), penalties ``1e-3, 1e-2``: the train loss at ``1e-3`` is
  three times below the state evolution at ``d = 60``, the test error at ``1e-2`` 17 %
  below it.
- ``peak``: the linear task with noise at ``alpha = 0.335``, ``lam = 1e-3``, where the
  state-evolution test error peaks (no point of the learning-curve grid is there).

The convex solver (:func:`attnlib.train.train_convex`, tolerance ``1e-11``, at most
``MAX_ITER`` iterations, started from ``S = 0``) runs on the same data sets for every
penalty (keys depend on the study, ``d`` and the seed only). Every run also records the
fraction of eigenvalues of ``S_hat`` at zero (below ``1e-8`` times the largest). The
state-evolution value at each point is stored with the runs (:func:`se_references`; a
chapter in class mode runs the quick grid and reads them from the file).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import se, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 2027
KAPPA0 = 0.5
TOL = 1e-11
MAX_ITER = 50000
N_TEST = 20000
STUDIES = {
    "linear": {"task": tasks.Linear(T=1, noise=0.25), "alpha": 0.1, "lams": (1e-3, 1e-2, 1e-1)},
    "seq2seq": {"task": tasks.Seq2Seq(T=2, noise=0.0), "alpha": 0.45, "lams": (1e-3, 1e-2)},
    "peak": {"task": tasks.Linear(T=1, noise=0.25), "alpha": 0.335, "lams": (1e-3,)},
}
FULL = {
    "linear": {20: 4, 30: 4, 40: 4, 60: 4},
    "seq2seq": {20: 4, 30: 4, 40: 4, 60: 3},
    "peak": {20: 4, 30: 4, 40: 4, 60: 3},
}
QUICK = {"linear": {12: 2, 16: 2}, "seq2seq": {12: 2, 16: 1}, "peak": {12: 2, 16: 1}}
FIELDS = ("train_loss", "test_error", "mse", "null_fraction", "converged", "seconds")
STUDY_ID = {name: i for i, name in enumerate(STUDIES)}


def dataset(study: str, d: int, seed: int):
    """``(task, S0, training set, test key)`` of data set ``seed`` at dimension ``d``."""
    if study not in STUDIES:
        raise ValueError(f"study must be one of {sorted(STUDIES)}, got {study!r}")
    spec = STUDIES[study]
    key = jax.random.PRNGKey(SEED)
    for part in (STUDY_ID[study], d, seed):
        key = jax.random.fold_in(key, part)
    k_s0, k_data, k_test = jax.random.split(key, 3)
    S0 = targets.Wishart(KAPPA0).sample(k_s0, d)
    return (
        spec["task"],
        S0,
        tasks.make_dataset(k_data, spec["task"], S0, tasks.n_samples(spec["alpha"], d)),
        k_test,
    )


def run_point(study: str, lam: float, d: int, seed: int) -> dict:
    """The convex solver on data set ``seed`` at dimension ``d``; a dict of FIELDS
    (``seconds``, the solver's CPU time, as ``cpu_seconds``)."""
    if study not in STUDIES:
        raise ValueError(f"study must be one of {sorted(STUDIES)}, got {study!r}")
    task, S0, data, k_test = dataset(study, d, seed)
    t0 = time.process_time()
    r = train.train_convex(task, data, lam, tol=TOL, max_iter=MAX_ITER)
    S = np.asarray(r.S)
    ev = np.linalg.eigvalsh(S)
    return {
        "train_loss": float(r.train_loss),
        "test_error": float(train.test_error(k_test, task, S0, r.S, n_test=N_TEST)),
        "mse": float(np.sum((S - np.asarray(S0)) ** 2) / d),
        "null_fraction": float(np.mean(ev <= 1e-8 * max(ev.max(), 1e-300))),
        "converged": float(r.residual <= TOL),
        "cpu_seconds": time.process_time() - t0,  # stored as "seconds" (a column of the table)
    }


def se_point(study: str, lam: float) -> dict:
    """The state evolution of ``study`` at ``lam``: train loss, test error, mse."""
    spec = STUDIES[study]
    r = se.solve(spec["task"], targets.Wishart(KAPPA0), alpha=spec["alpha"], lam=lam)
    return {f: float(getattr(r, f)) for f in ("train_loss", "test_error", "mse", "converged")}


def grids(study: str, dims: dict) -> list[sweep.Grid]:
    """One grid per size ``d``: every penalty of ``study`` on ``dims[d]`` data sets."""
    lams = STUDIES[study]["lams"]
    return [
        sweep.Grid(run_point, sweep.product(study=study, d=d, lam=lams), seeds=n_seeds)
        for d, n_seeds in dims.items()
    ]


def run(quick: bool = False, studies=tuple(STUDIES), runner=None) -> dict:
    """The runs of ``studies``; flat arrays keyed ``<study>.<field>`` (and ``.d``, ``.lam``),
    ordered by ``d``, then seed, then penalty."""
    runner = runner or C.Runner()
    out = {}
    for study in studies:
        dims, lams = (QUICK if quick else FULL)[study], STUDIES[study]["lams"]
        cols = {key: [] for key in ("d", "seed", "lam", *FIELDS)}
        for (d, n_seeds), g in zip(dims.items(), grids(study, dims), strict=True):
            table = runner(g)
            axes = {"seed": range(n_seeds), "lam": lams}
            for f in FIELDS:
                cols[f].append(sweep.pivot(table, "cpu_seconds" if f == "seconds" else f, axes))
            cols["d"].append(np.full((n_seeds, len(lams)), d))
            cols["seed"].append(np.repeat(np.arange(n_seeds), len(lams)).reshape(n_seeds, -1))
            cols["lam"].append(np.tile(np.array(lams), (n_seeds, 1)))
        for key, parts in cols.items():
            out[f"{study}.{key}"] = np.concatenate([x.ravel() for x in parts])
        out[f"{study}.alpha"] = np.array(STUDIES[study]["alpha"])
    return out


def se_references(studies=tuple(STUDIES), runner=None) -> dict:
    """The state evolution at every point, keyed ``<study>.se.<lam>.<field>``."""
    pts = [{"study": st, "lam": lam} for st in studies for lam in STUDIES[st]["lams"]]
    table = (runner or C.Runner())(sweep.Grid(se_point, pts))
    if not (table["status"] == "ok").all():
        raise RuntimeError(f"state evolution did not converge:\n{table[table.status != 'ok']}")
    return {
        f"{row.study}.se.{row.lam:g}.{f}": np.array(getattr(row, f))
        for row in table.itertuples()
        for f in ("train_loss", "test_error", "mse")
    }


def per_d(runs: dict, study: str, lam: float, field: str) -> tuple[np.ndarray, list]:
    """The runs of ``study`` at penalty ``lam`` (arrays keyed as :func:`run` returns them):
    the sizes ``d`` (ascending, float) and, per size, the values of ``field`` over its
    data sets."""
    sel = np.isclose(runs[f"{study}.lam"], lam)
    d_all, v_all = runs[f"{study}.d"][sel], runs[f"{study}.{field}"][sel]
    ds = np.unique(d_all).astype(float)
    return ds, [v_all[d_all == d] for d in ds]


def main(argv=None) -> None:
    args = C.parser(__doc__, ["fs"]).parse_args(argv)
    name = "train_loss_fs_quick.npz" if args.quick else "train_loss_fs.npz"

    def compute(_, quick, runner):
        return {**run(quick, runner=runner), **se_references(runner=runner)}

    C.run_parts(args, C.npz_parts({"fs": name}, compute), lambda *a: None)


if __name__ == "__main__":
    main()

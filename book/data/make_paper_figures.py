r"""The paper's main theory figures in its own conventions, for ``paper_conventions``.

Conventions of :cite:`boncoraglio2025attention`: noise on the target
(``noise_on="target"``, pair variance ``(Delta/2)(1 + delta_ab)``), the test error
against noisy test labels (``test_error_noisy``, floor ``e0``), Wishart target
``kappa0 = 0.5``, nuclear + PSD penalty (attnlib's ``lam`` is the paper's
``sqrt(kappa) lam_W``), ``alpha = n/d^2``.

Parts:

- ``theory``: :func:`attnlib.se.learning_curve` along ``alpha`` for the curves
  ``CURVES`` (seq2seq ``T = 2`` at several ``lam``; seq2lab; ``T = 3``; several
  ``beta``), each with a time limit (a point past it stays NaN); and the closed-form
  interpolation threshold (:func:`attnlib.thresholds.interpolation_formula`) of each task.
- ``sims``: the convex solver (:func:`attnlib.train.train_convex`) on fresh data sets
  at ``d`` and a few ``(alpha, lam)`` of the seq2seq ``T = 2`` curves; each minimiser's
  ``test_error_noisy``, ``e0`` and ``test_error`` on a fresh noisy test set
  (:func:`attnlib.train.test_errors`).

Run from ``book/``::

    python -m data.make_paper_figures --serial          # -> data/paper_figures_*.npz
    python -m data.make_paper_figures --quick --serial  # smoke run -> data/quick/

One :class:`attnlib.sweep.Grid` per part over pure point functions (cached on disk,
Dask or serial; ``--help`` for the options).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import se, sweep, targets, tasks, thresholds, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 33
KAPPA0, NOISE = 0.5, 0.25
TARGET = targets.Wishart(KAPPA0)


def make_task(name: str, T: int, beta: float):
    cls = {"seq2seq": tasks.Seq2Seq, "seq2lab": tasks.Seq2Lab}[name]
    return cls(T=T, noise=NOISE, noise_on="target", beta=beta)


# curve key -> (task name, T, beta, lam)
CURVES = {
    "lam1e-4": ("seq2seq", 2, 1.0, 1e-4),
    "lam1e-3": ("seq2seq", 2, 1.0, 1e-3),
    "lam1e-2": ("seq2seq", 2, 1.0, 1e-2),
    "lam1e-1": ("seq2seq", 2, 1.0, 1e-1),
    "lam1e+0": ("seq2seq", 2, 1.0, 1.0),
    "seq2lab": ("seq2lab", 2, 1.0, 1e-2),
    "T3": ("seq2seq", 3, 1.0, 1e-2),
    "beta0.5": ("seq2seq", 2, 0.5, 1e-2),
    "beta2": ("seq2seq", 2, 2.0, 1e-2),
}
FIELDS = ("test_error_noisy", "e0", "test_error", "replicon")
FULL = dict(
    alpha=(0.05, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5,
           2.0, 3.0),
    n_qmc=8192, time_limit=900.0,  # 2048 before the Newton correction became the default:
    # corrected from 2048 points it missed beta = 2 at alpha >= 1.5 by half (make_se_default)
    d=50, reps=3, sim_lam=(1e-2, 1e-1), sim_alpha=(0.1, 0.25, 0.5, 1.0, 2.0), n_test=20000,
)  # fmt: skip
QUICK = dict(
    alpha=(0.1, 0.3, 1.0), n_qmc=1024, time_limit=30.0,
    d=20, reps=2, sim_lam=(1e-1,), sim_alpha=(0.25, 1.0), n_test=4000,
)  # fmt: skip


def theory_curve(curve: str, quick: bool) -> dict:
    """One learning curve of CURVES: FIELDS along the grid's ``alpha`` (NaN where a point
    failed or ran past the time limit)."""
    name, T, beta, lam = CURVES[curve]
    cfg = QUICK if quick else FULL
    alphas, n_qmc, time_limit = cfg["alpha"], cfg["n_qmc"], cfg["time_limit"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lc = se.learning_curve(make_task(name, T, beta), TARGET, list(alphas), lam,
                               n_qmc=n_qmc, time_limit=time_limit)  # fmt: skip
    return {f: np.asarray(getattr(lc, f), float).tolist() for f in FIELDS}


def interp_alpha(curve: str) -> float:
    """The closed-form interpolation threshold of the curve's task (the paper's Cor. 3.2);
    NaN for seq2lab, which the closed form does not cover."""
    name, T, beta, _ = CURVES[curve]
    if name != "seq2seq":
        return float("nan")
    return float(thresholds.interpolation_formula(make_task(name, T, beta), TARGET).alpha)


def sim_point(lam: float, alpha: float, rep: int, d: int, n_test: int) -> dict:
    """The convex solver on one fresh data set of seq2seq ``T = 2``; its three test errors."""
    task = make_task("seq2seq", 2, 1.0)
    key = C.key_for(SEED, int(round(1e4 * lam)), int(round(1e3 * alpha)), rep, d)
    k_target, k_data, k_test = jax.random.split(key, 3)
    S0 = TARGET.sample(k_target, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    res = train.train_convex(task, data, lam, tol=1e-8)
    te = train.test_errors(k_test, task, S0, res.S, n_test=n_test)
    return {"test_error_noisy": float(te.test_error_noisy), "e0": float(te.e0),
            "test_error": float(te.test_error), "converged": bool(res.converged)}  # fmt: skip


def _theory(quick, out, runner) -> None:
    cfg = QUICK if quick else FULL
    pts = sweep.product(curve=tuple(CURVES), quick=bool(quick))
    rows = C.records(runner(sweep.Grid(theory_curve, pts)))
    arrays = {"alpha": np.asarray(cfg["alpha"])}
    for row in rows:
        for f in FIELDS:
            arrays[f"{row['curve']}.{f}"] = np.asarray(row[f], float)
        arrays[f"{row['curve']}.alpha_interp"] = np.asarray(interp_alpha(row["curve"]))
    meta = dict(kappa0=KAPPA0, noise=NOISE, noise_on="target", penalty="nuclear",
                curves=CURVES, **{k: cfg[k] for k in ("n_qmc", "time_limit")})  # fmt: skip
    arrays["meta"] = np.asarray(json.dumps(meta))
    C.save_npz(out / "paper_figures_theory.npz", arrays)


def _sims(quick, out, runner) -> None:
    cfg = QUICK if quick else FULL
    pts = sweep.product(lam=cfg["sim_lam"], alpha=cfg["sim_alpha"], rep=tuple(range(cfg["reps"])),
                        d=cfg["d"], n_test=cfg["n_test"])  # fmt: skip
    table = runner(sweep.Grid(sim_point, pts))
    axes = {"lam": cfg["sim_lam"], "alpha": cfg["sim_alpha"], "rep": tuple(range(cfg["reps"]))}
    keys = ("test_error_noisy", "e0", "test_error", "converged")
    arrays = {f: sweep.pivot(table, f, axes) for f in keys}
    meta = dict(d=cfg["d"], reps=cfg["reps"], n_test=cfg["n_test"], seed=SEED, tol=1e-8)
    C.save_npz(out / "paper_figures_sims.npz", {"lam": np.asarray(cfg["sim_lam"]),
               "alpha": np.asarray(cfg["sim_alpha"]), **arrays,
               "meta": np.asarray(json.dumps(meta))})  # fmt: skip


PARTS = {"theory": _theory, "sims": _sims}


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, lambda *a: None)


if __name__ == "__main__":
    main()

r"""Simulations for the variant panels of ``paper_conventions`` (seq2lab, ``T = 3``, ``beta``).

The paper's conventions as in :mod:`data.make_paper_figures` (whose tasks, target and
curves this script imports): noise on the target, ``Delta = 1/4``, Wishart target
``kappa0 = 0.5``, nuclear + PSD penalty at ``lam = 1e-2``.

Parts:

- ``sims``: the convex solver (:func:`attnlib.train.train_convex`) on fresh data sets
  at ``d`` for each curve of ``VARIANTS`` at a few ``alpha``; each minimiser's train loss,
  ``||S - S0||_F^2 / d`` and its three test errors on a fresh noisy test set
  (:func:`attnlib.train.test_errors`).
- ``se``: :func:`attnlib.se.learning_curve` at the simulated ``alpha`` of each curve
  (the stored curves of ``paper_figures_theory.npz`` keep the test errors only): train
  loss, ``mse``, ``test_error_noisy`` and ``e0``, for the table of gaps.
- ``interp``: seq2lab's interpolation threshold at ``T = 2`` with the paper's noise from
  the ``lam = 0`` state evolution (:func:`attnlib.thresholds.interpolation_se_bracket`,
  bisected; the closed form :func:`attnlib.thresholds.interpolation_formula` does not
  cover seq2lab), and the convex solver at small ``lam`` around it: its train loss.

Run from ``book/``::

    python -m data.make_paper_variants --serial          # -> data/paper_variants.npz
    python -m data.make_paper_variants --quick --serial  # smoke run -> data/quick/
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C
from data.make_paper_figures import CURVES, TARGET, make_task

import attnlib
from attnlib import se, sweep, tasks, thresholds, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 3301
VARIANTS = ("seq2lab", "T3", "beta0.5", "beta2")
SIM_FIELDS = ("train_loss", "mse", "test_error_noisy", "e0", "test_error", "converged", "n_iter")
SE_FIELDS = ("train_loss", "mse", "test_error_noisy", "e0", "converged")
FULL = dict(
    d=50, reps=3, alpha=(0.1, 0.25, 0.5, 1.0, 2.0), n_test=20000, n_qmc=8192, time_limit=300.0,
    interp_xtol=5e-3, interp_time=900.0, small_lam=1e-4, small_alpha=(0.3, 0.4, 0.5, 0.6, 0.8),
)  # fmt: skip
QUICK = dict(
    d=20, reps=2, alpha=(0.25, 1.0), n_test=4000, n_qmc=1024, time_limit=30.0,
    interp_xtol=2e-2, interp_time=60.0, small_lam=1e-3, small_alpha=(0.3, 0.8),
)  # fmt: skip


def _cfg(quick: bool) -> dict:
    return QUICK if quick else FULL


def _task(curve: str):
    name, T, beta, _ = CURVES[curve]
    return make_task(name, T, beta)


def _fit(curve: str, lam: float, alpha: float, rep: int, d: int, n_test: int) -> dict:
    """The convex solver on one fresh data set of ``curve``'s task; its metrics."""
    task = _task(curve)
    key = C.key_for(SEED, VARIANTS.index(curve) if curve in VARIANTS else 9,
                    int(round(1e5 * lam)), int(round(1e3 * alpha)), rep, d)  # fmt: skip
    k_target, k_data, k_test = jax.random.split(key, 3)
    S0 = TARGET.sample(k_target, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    res = train.train_convex(task, data, lam, tol=1e-8)
    te = train.test_errors(k_test, task, S0, res.S, n_test=n_test)
    return {"train_loss": float(res.train_loss), "mse": train.mse(res.S, S0),
            "test_error_noisy": te.test_error_noisy, "e0": te.e0, "test_error": te.test_error,
            "converged": bool(res.converged), "n_iter": int(res.n_iter)}  # fmt: skip


def sim_point(curve: str, alpha: float, rep: int, d: int, n_test: int) -> dict:
    """One data set of ``curve`` at its ``lam``."""
    return _fit(curve, CURVES[curve][3], alpha, rep, d, n_test)


def small_lam_point(lam: float, alpha: float, rep: int, d: int, n_test: int) -> dict:
    """One data set of seq2lab ``T = 2`` at a small ``lam`` (near-ridgeless)."""
    return _fit("seq2lab", lam, alpha, rep, d, n_test)


def se_curve(curve: str, quick: bool) -> dict:
    """SE_FIELDS of ``curve`` at the simulated ``alpha`` (NaN past the time limit)."""
    cfg = _cfg(quick)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lc = se.learning_curve(_task(curve), TARGET, list(cfg["alpha"]), CURVES[curve][3],
                               n_qmc=cfg["n_qmc"], time_limit=cfg["time_limit"])  # fmt: skip
    return {f: np.asarray(getattr(lc, f), float).tolist() for f in SE_FIELDS}


def interp_seq2lab(quick: bool) -> dict:
    """seq2lab's ``alpha_interp`` at ``T = 2`` (state evolution at ``lam = 0``, bisected)."""
    cfg = _cfg(quick)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = thresholds.interpolation_se_bracket(_task("seq2lab"), TARGET, xtol=cfg["interp_xtol"],
                                                time_limit=cfg["interp_time"])  # fmt: skip
    return {"alpha": float(b.alpha), "lo": float(b.lo), "hi": float(b.hi),
            "n_solves": int(b.n_solves), "wall_s": time.perf_counter() - t0}  # fmt: skip


def _sims(quick, out, runner) -> None:
    cfg = _cfg(quick)
    reps = tuple(range(cfg["reps"]))
    pts = sweep.product(curve=VARIANTS, alpha=cfg["alpha"], rep=reps, d=cfg["d"],
                        n_test=cfg["n_test"])  # fmt: skip
    table = runner(sweep.Grid(sim_point, pts))
    axes = {"curve": VARIANTS, "alpha": cfg["alpha"], "rep": reps}
    arrays = {f"sim.{f}": sweep.pivot(table, f, axes) for f in SIM_FIELDS}
    meta = dict(d=cfg["d"], reps=cfg["reps"], n_test=cfg["n_test"], seed=SEED, tol=1e-8,
                curves={k: CURVES[k] for k in VARIANTS})  # fmt: skip
    arrays.update(curves=np.asarray(VARIANTS), alpha=np.asarray(cfg["alpha"]),
                  meta=np.asarray(json.dumps(meta)))  # fmt: skip
    C.save_npz(out / "paper_variants_sims.npz", arrays)


def _se(quick, out, runner) -> None:
    cfg = _cfg(quick)
    keys = (*VARIANTS, "lam1e-2")
    rows = C.records(runner(sweep.Grid(se_curve, sweep.product(curve=keys, quick=bool(quick)))))
    arrays = {f"se.{r['curve']}.{f}": np.asarray(r[f], float) for r in rows for f in SE_FIELDS}
    meta = dict(n_qmc=cfg["n_qmc"], time_limit=cfg["time_limit"])
    C.save_npz(out / "paper_variants_se.npz", {"alpha": np.asarray(cfg["alpha"]), **arrays,
               "meta": np.asarray(json.dumps(meta))})  # fmt: skip


def _interp(quick, out, runner) -> None:
    cfg = _cfg(quick)
    (row,) = C.records(runner(sweep.Grid(interp_seq2lab, sweep.product(quick=bool(quick)))))
    reps = tuple(range(cfg["reps"]))
    pts = sweep.product(lam=cfg["small_lam"], alpha=cfg["small_alpha"], rep=reps, d=cfg["d"],
                        n_test=cfg["n_test"])  # fmt: skip
    table = runner(sweep.Grid(small_lam_point, pts))
    axes = {"alpha": cfg["small_alpha"], "rep": reps}
    arrays = {f"small.{f}": sweep.pivot(table, f, {"lam": (cfg["small_lam"],), **axes})[0]
              for f in SIM_FIELDS}  # fmt: skip
    meta = dict(d=cfg["d"], reps=cfg["reps"], xtol=cfg["interp_xtol"],
                time_limit=cfg["interp_time"], n_solves=row["n_solves"],
                wall_s=round(row["wall_s"], 1), small_lam=cfg["small_lam"])  # fmt: skip
    C.save_npz(out / "paper_variants_interp.npz", {
        "alpha_interp": np.asarray(row["alpha"]), "lo": np.asarray(row["lo"]),
        "hi": np.asarray(row["hi"]), "small_alpha": np.asarray(cfg["small_alpha"]), **arrays,
        "meta": np.asarray(json.dumps(meta))})  # fmt: skip


PARTS = {"sims": _sims, "se": _se, "interp": _interp}


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, lambda *a: None)


if __name__ == "__main__":
    from data import make_paper_variants  # the importable module: workers load it by name

    make_paper_variants.main()

r"""Hardmax attention (book/09_bayes_optimal): the test error of the ERM ray and of the
Bayes-optimal estimator against ``alpha``, and GAMP on data at several ``alpha``.

Run from ``book/``::

    python -m data.make_hardmax_theory --serial              # every part
    python -m data.make_hardmax_theory --serial --part theory
    python -m data.make_hardmax_theory --quick --serial --out DIR

Setting: hardmax seq2seq, ``T = 2``, no noise, Wishart target ``kappa0 = 1/2``,
nuclear penalty (the ERM learns a direction only, the same for every ``lam > 0``:
:mod:`attnlib.hardmax.state_evolution`).

Parts and files (``book/data/``):

- ``theory``  the fixed ray of the ERM state evolution (:func:`attnlib.hardmax.solve`,
  warm-started along ``alpha``, for ``ray_seeds`` QMC seeds: the damped iteration ends in
  a small cycle, so the seeds measure the curve's own error) on a dense ``alpha`` grid;
  the same state evolution's iterates from GAMP's start at ``alpha = 0.5``; and the
  Bayes-optimal state evolution (:func:`attnlib.bayes.solve`) on a coarser grid, with the
  exact ``T = 2`` channel (:mod:`attnlib.channels.posterior_hardmax_exact`: bivariate Gaussian
  orthants, a two-dimensional Gauss-Legendre outer integral; no QMC size to choose).
  -> ``hardmax_theory.npz``: ``alpha`` (ray grid) and, shape ``(seed, alpha)``,
  ``gamma``, ``test_error``, ``rank_fraction``, ``integration_error``, ``converged``;
  ``se_iterates`` ``(seed, iteration)``; ``bayes.alpha`` and, shape ``(alpha,)``,
  ``bayes.test_error`` (the best predictor of the label, a posterior average of
  one-hot rows), ``bayes.test_error_plugin`` (hardmax of the posterior-mean
  pre-activations), ``bayes.mse``, ``bayes.integration_error`` (relative error of the
  channel's ``J``), ``bayes.residual``.
- ``gamp``    renormalised, undamped GAMP (:func:`attnlib.hardmax.gamp`, 15 iterations
  from the identity with ``v = 0.3``, as ``make_hardmax.py`` at ``alpha = 0.5``) at
  ``alpha`` in ``gamp_alphas``, sizes ``d`` and seeds: the cosine with the target after
  each iteration, and the test error of the last iterate on fresh sequences.
  -> ``hardmax_gamp_curve.npz``: ``alpha``, ``d``, ``cosine`` ``(alpha, d, seed,
  iteration)``, ``test_error_last`` and ``residual_plateau`` (the mean relative change of
  the normalised ``S_hat`` over iterations 6..15) ``(alpha, d, seed)``.

Point functions are pure functions of one point's parameters (and seed) returning a
dict of numbers; grids are :class:`attnlib.sweep.Grid` objects (cached on disk).
``hardmax_meta.json`` records the parameters and run times.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import warnings

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import bayes, hardmax, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 1414
KAPPA0 = 0.5
V0 = 0.3  # GAMP's starting v (as make_hardmax.py)
N_ITER = 15  # GAMP iterations (no convergence at finite d)
ITER_ALPHA = 0.5  # the state evolution's iterates from GAMP's start (make_hardmax.py's alpha)
PLATEAU = 5  # iterations PLATEAU + 1 .. N_ITER: GAMP fluctuates around the state evolution's ray

FULL = {
    "alphas": sorted({*np.round(np.geomspace(0.1, 8.0, 25), 6).tolist(), 0.25, 0.5, 1.0, 2.0, 4.0}),
    "ray_qmc": 262144,
    "ray_tol": 1e-3,
    "ray_seeds": 4,  # QMC seeds of the ray (its iteration ends in a cycle of a few 1e-4)
    "bayes_alphas": [0.1, 0.15, 0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0, 5.6, 8.0],
    "gamp_alphas": [0.25, 0.5, 1.0, 2.0],
    "gamp_ds": [100, 150, 200],
    "seeds": 8,
    "n_test": 20000,
}
QUICK = {
    "alphas": [0.1, 0.25, 0.5, 1.0, 2.0, 8.0],
    "ray_qmc": 8192,
    "ray_tol": 1e-2,
    "ray_seeds": 1,
    "bayes_alphas": [0.25, 1.0, 4.0],
    "gamp_alphas": [0.5],
    "gamp_ds": [40],
    "seeds": 2,
    "n_test": 4000,
}


def task() -> tasks.Task:
    return tasks.Hardmax(T=2)


def target() -> targets.Target:
    return targets.Wishart(KAPPA0)


# ----------------------------------------------------------------------------
# Theory: the ERM ray and the Bayes-optimal estimator
# ----------------------------------------------------------------------------


def ray_point(*, alpha: float, n_qmc: int, tol: float, seed: int, init=None) -> tuple[dict, tuple]:
    """The ERM ray at ``alpha`` with the QMC points of ``seed`` (warm start ``init = (gamma,
    rho)``); a dict and the state (``init`` again where the ray was not reached)."""
    r, notes = C.quiet(
        hardmax.solve, task(), target(), alpha, 1.0, init=init, tol=tol, n_qmc=n_qmc, n_rep=8,
        seed=seed,
    )  # fmt: skip
    if notes:
        C.log(f"    [ray] alpha={alpha:g}: {notes} (residual {r.residual:.1e})")
    row = {
        "gamma": r.cos_theta,
        "test_error": r.test_error,
        "rank_fraction": r.rank_fraction,
        "integration_error": r.integration_error,
        "converged": float(r.converged),
    }
    return row, ((r.cos_theta, r.rho) if r.converged else init)  # a failed ray (NaN) starts nothing


def se_iterates(*, alpha: float, n_qmc: int, n_iter: int, seed: int) -> dict:
    """The undamped state evolution from GAMP's start (cosine ``sqrt(kappa0 / Q0)`` of the
    identity, ``rho = V0 / sqrt(Q0)``): the cosine after each map."""
    Q0 = float(target().Q0)
    start = (float(np.sqrt(KAPPA0 / Q0)), float(V0 / np.sqrt(Q0)))
    tr = hardmax.trajectory(task(), target(), alpha, 1.0, n_iter, start=start, n_qmc=n_qmc,
                            n_rep=8, seed=seed)  # fmt: skip
    return {f"cosine_{t}": float(g) for t, g in enumerate(tr.cos_theta)}


def bayes_point(*, alpha: float) -> dict:
    """The Bayes-optimal fixed point at ``alpha`` with the exact ``T = 2`` channel (the QMC
    sizes of :class:`attnlib.bayes.BayesSettings` are not used by it); test errors with
    noise-free labels, both in closed form. ``integration_error``: relative error of ``J``
    (the change from a quadrature rule with 2/3 of the points, ``< 1e-9``); ``residual``:
    relative fixed-point residual (Brent on a smooth equation: ``~1e-11`` or less)."""
    settings = bayes.BayesSettings(check_unique=False)
    r, _ = C.quiet(bayes.solve, task(), target(), alpha, settings=settings)
    return {
        "residual": r.residual,
        "test_error": r.test_error,
        "test_error_plugin": r.test_error_plugin,
        "mse": r.mse,
        "integration_error": r.integration_error,
    }


def grids_theory(cfg) -> tuple[sweep.Grid, sweep.Grid, sweep.Grid]:
    ray = sweep.Grid(
        ray_point, {"alpha": cfg["alphas"], "n_qmc": cfg["ray_qmc"], "tol": cfg["ray_tol"]},
        seeds=cfg["ray_seeds"],
        chain="alpha",
    )  # fmt: skip
    bo = sweep.Grid(bayes_point, {"alpha": cfg["bayes_alphas"]})
    it = sweep.Grid(
        se_iterates, {"alpha": ITER_ALPHA, "n_qmc": cfg["ray_qmc"], "n_iter": N_ITER},
        seeds=cfg["ray_seeds"],
    )  # fmt: skip
    return ray, bo, it


# ----------------------------------------------------------------------------
# GAMP on data
# ----------------------------------------------------------------------------


def gamp_point(*, alpha: float, d: int, n_test: int, seed: int) -> dict:
    """Renormalised GAMP on one data set: the cosine with ``S0`` after each iteration and
    the test error of the last iterate on ``n_test`` fresh sequences."""
    k_target, k_data, k_test = jax.random.split(C.key_for(SEED, round(1000 * alpha), d, seed), 3)
    S0 = np.asarray(target().sample(k_target, d))
    data = tasks.make_dataset(k_data, task(), S0, tasks.n_samples(alpha, d))

    def cosine(S):
        return float(np.sum(S * S0) / np.sqrt(np.sum(S**2) * np.sum(S0**2)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no convergence asked for
        r = hardmax.gamp(task(), data, target(), max_iter=N_ITER, tol=1e-300, damping=0.0,
                         v_init=V0, observe=cosine)  # fmt: skip
    row = {f"cosine_{t}": float(c) for t, c in enumerate(r.trace)}
    row["test_error_last"] = float(train.test_error(k_test, task(), S0, r.S, n_test=n_test))
    row["residual_plateau"] = float(np.mean(r.history[PLATEAU:]))  # relative change of S_hat
    return row


def grid_gamp(cfg) -> sweep.Grid:
    pts = sweep.product(alpha=cfg["gamp_alphas"], d=cfg["gamp_ds"], n_test=cfg["n_test"])
    return sweep.Grid(gamp_point, pts, seeds=cfg["seeds"])


# ----------------------------------------------------------------------------
# Assembling the files
# ----------------------------------------------------------------------------


def arrays_theory(cfg, run) -> dict:
    g_ray, g_bo, g_it = grids_theory(cfg)
    t_ray, t_bo, t_it = run(g_ray), run(g_bo), run(g_it)
    seeds = range(cfg["ray_seeds"])
    arr = {"alpha": np.array(cfg["alphas"]), "bayes.alpha": np.array(cfg["bayes_alphas"])}
    for f in ("gamma", "test_error", "rank_fraction", "integration_error", "converged"):
        arr[f] = sweep.pivot(t_ray, f, {"seed": seeds, "alpha": cfg["alphas"]})  # (seed, alpha)
    for f in ("test_error", "test_error_plugin", "mse", "integration_error", "residual"):
        arr[f"bayes.{f}"] = sweep.pivot(t_bo, f, {"alpha": cfg["bayes_alphas"]})  # (alpha,)
    its = [sweep.pivot(t_it, f"cosine_{t}", {"seed": seeds}) for t in range(N_ITER)]
    arr["se_iterates"] = np.stack(its, axis=-1)  # (seed, iteration) at alpha = ITER_ALPHA
    arr["se_iterates.alpha"] = ITER_ALPHA
    return arr


def arrays_gamp(cfg, run) -> dict:
    t = run(grid_gamp(cfg))
    axes = {"alpha": cfg["gamp_alphas"], "d": cfg["gamp_ds"], "seed": range(cfg["seeds"])}
    cos = np.stack([sweep.pivot(t, f"cosine_{i}", axes) for i in range(N_ITER)], axis=-1)
    return {
        "alpha": np.array(cfg["gamp_alphas"]),
        "d": np.array(cfg["gamp_ds"]),
        "cosine": cos,  # (alpha, d, seed, iteration)
        "test_error_last": sweep.pivot(t, "test_error_last", axes),  # (alpha, d, seed)
        "residual_plateau": sweep.pivot(t, "residual_plateau", axes),  # (alpha, d, seed)
        "n_test": cfg["n_test"],
    }


FILES = {"theory": "hardmax_theory.npz", "gamp": "hardmax_gamp_curve.npz"}
BUILDERS = {"theory": arrays_theory, "gamp": arrays_gamp}


def compute(part: str, quick: bool = False, runner=None) -> dict:
    """The arrays of one part (in this process, nothing written)."""
    return BUILDERS[part](QUICK if quick else FULL, runner or C.Runner())


def main(argv=None) -> None:
    args = C.parser(__doc__, FILES).parse_args(argv)
    params = {"kappa0": KAPPA0, "T": 2, "v0": V0, "n_iter": N_ITER, "seed": SEED}
    meta = C.meta_recorder("hardmax_meta.json", params, FULL, QUICK)
    C.run_parts(args, C.npz_parts(FILES, compute), meta)


if __name__ == "__main__":
    main()

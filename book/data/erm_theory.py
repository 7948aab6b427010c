r"""The state-evolution parts of ``make_erm_data``: learning curves for several ``lam``,
the optimal ``lam`` against ``alpha`` and ``kappa0`` for both penalties, a scan in
``lam`` (-> ``erm_theory.npz``). Declarations only: every point is a call of
:func:`attnlib.se.drivers.solve_nearby` or :func:`attnlib.se.drivers.search_lambda`
(the optimal ``lam``, chained along ``alpha`` or ``kappa0``: each search starts around
the previous optimum), on :mod:`attnlib.sweep` grids."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from data import _common as C
from data.erm_config import (
    CURVE_FIELDS,
    KAPPA0,
    LAM_BOUNDS,
    LAM_XATOL,
    NOISE,
    NOISES,
    PENALTIES,
    TASKS,
    make_task,
    scaled,
    theory_lams,
)

import attnlib
from attnlib import sweep, targets
from attnlib.se import drivers, optimal

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles


def se_row(task, target, alpha, lam, penalty, init):
    """One SE point as a dict of CURVE_FIELDS, and the warm start for the next one."""
    (r, w), notes = C.quiet(
        drivers.solve_nearby, task, target, alpha, lam, penalty, init=init, return_warm=True
    )
    if notes or not r.converged:
        C.log(
            f"    [SE] alpha={alpha:g}, lam={lam:g}, {penalty}: {notes} (residual {r.residual:.1e})"
        )
    return {f: getattr(r, f) for f in CURVE_FIELDS}, optimal.warm_start(r, w, init)


def se_curve_point(*, task, noise, kappa0, alpha, lam, penalty, init=None):
    """A point of an SE learning curve (chained along ``alpha`` or ``lam``)."""
    return se_row(make_task(task, noise), targets.Wishart(kappa0), alpha, lam, penalty, init)


def _optimal(task, noise, kappa0, alpha, penalty, init, previous):
    """The optimal ``lam`` (searched around ``previous`` when given) as a row, and the
    search (its ``warm`` start and ``lam`` travel along the chain)."""
    s, notes = C.quiet(
        drivers.search_lambda, make_task(task, noise), targets.Wishart(kappa0), alpha, penalty,
        bounds=LAM_BOUNDS, xatol=LAM_XATOL, previous=previous, init=init,
    )  # fmt: skip
    if notes:
        C.log(f"    [optimal lam] alpha={alpha:g}, kappa0={kappa0:g}, {penalty}: {notes}")
    row = {"opt_lam": s.lam, "test_error": s.result.test_error,
           "rank_fraction": s.result.rank_fraction}  # fmt: skip
    return row, s


def optimal_point(*, task, noise, kappa0, alpha, penalty, init=None):
    """Optimal ``lam`` at one ``alpha`` (chained along ``alpha``: the SE warm start and
    the previous optimum travel as ``init = (warm start, lam)``)."""
    se_init, lam_prev = init if init is not None else (None, None)
    row, s = _optimal(task, noise, kappa0, alpha, penalty, se_init, lam_prev)
    return row, (s.warm, s.lam)


def optimal_point_kappa0(*, task, noise, kappa0, alpha, penalty, init=None):
    """Optimal ``lam`` at one ``kappa0`` (chained along ``kappa0``: only the previous
    optimum travels; each target's state evolution starts cold)."""
    row, s = _optimal(task, noise, kappa0, alpha, penalty, None, init)
    return row, s.lam


def grid_theory_curves(cfg) -> sweep.Grid:
    """SE learning curves, warm-started along ``alpha`` (one chain per curve)."""
    points = []
    for noise_name, noise in NOISES.items():
        for task in TASKS:
            for lam in theory_lams(cfg, noise_name):
                pts = sweep.product(
                    task=task,
                    noise=noise,
                    lam=lam,
                    penalty="nuclear",
                    alpha=scaled(cfg, "theory_alphas", task),
                    kappa0=KAPPA0,
                )
                points += pts
    return sweep.Grid(se_curve_point, points, chain="alpha")


def grid_theory_optimal(cfg) -> sweep.Grid:
    """Optimal ``lam`` along ``alpha`` (warm-started), both penalties, noisy labels."""
    points = [
        p
        for task in TASKS
        for penalty in PENALTIES
        for p in sweep.product(
            task=task,
            noise=NOISE,
            penalty=penalty,
            kappa0=KAPPA0,
            alpha=scaled(cfg, "cmp_alphas", task),
        )
    ]
    return sweep.Grid(optimal_point, points, chain="alpha")


def grid_theory_kappa0(cfg) -> sweep.Grid:
    """Optimal ``lam`` against ``kappa0`` at one ``alpha`` (seq2seq; the search is chained
    along ``kappa0``, the state evolution starts cold at each target)."""
    params = {
        "task": "seq2seq",
        "noise": NOISE,
        "penalty": list(PENALTIES),
        "alpha": cfg["cmp_alpha_kappa0"],
        "kappa0": cfg["cmp_kappa0s"],
    }
    return sweep.Grid(optimal_point_kappa0, params, chain="kappa0")


def grid_theory_scan(cfg) -> sweep.Grid:
    """Test error against ``lam`` at one ``alpha``, warm-started from large ``lam`` down."""
    params = {
        "task": "seq2seq",
        "noise": NOISE,
        "alpha": cfg["scan_alpha"],
        "penalty": "nuclear",
        "kappa0": KAPPA0,
        "lam": sorted(cfg["scan_lams_theory"], reverse=True),
    }
    return sweep.Grid(se_curve_point, params, chain="lam")


def arrays_theory(cfg, run) -> dict:
    arr = {}
    t = run(grid_theory_curves(cfg))
    for noise_name, noise in NOISES.items():
        for task in TASKS:
            alphas = scaled(cfg, "theory_alphas", task)
            for lam in theory_lams(cfg, noise_name):
                g = f"curve.{task}.{noise_name}.{lam:g}"
                sel = t[(t.task == task) & (t.noise == noise) & (t.lam == lam)]
                arr[f"{g}.alpha"] = np.asarray(alphas, float)
                for f in CURVE_FIELDS:
                    arr[f"{g}.{f}"] = sweep.pivot(sel, f, {"alpha": alphas})
                arr[f"{g}.converged"] = arr[f"{g}.converged"].astype(bool)
    t = run(grid_theory_optimal(cfg))
    for task in TASKS:
        alphas = scaled(cfg, "cmp_alphas", task)
        for penalty in PENALTIES:
            g, sel = f"opt.{task}.{penalty}", t[(t.task == task) & (t.penalty == penalty)]
            arr[f"{g}.alpha"] = np.asarray(alphas, float)
            for f in ("lam", "test_error", "rank_fraction"):
                arr[f"{g}.{f}"] = sweep.pivot(
                    sel, f"opt_{f}" if f == "lam" else f, {"alpha": alphas}
                )
    t = run(grid_theory_kappa0(cfg))
    for penalty in PENALTIES:
        g, sel, k0s = f"kappa0.{penalty}", t[t.penalty == penalty], cfg["cmp_kappa0s"]
        arr[f"{g}.kappa0"] = np.asarray(k0s, float)
        arr[f"{g}.lam"] = sweep.pivot(sel, "opt_lam", {"kappa0": k0s})
        arr[f"{g}.test_error"] = sweep.pivot(sel, "test_error", {"kappa0": k0s})
    t = run(grid_theory_scan(cfg))
    lams = sorted(cfg["scan_lams_theory"])
    arr["scan.lam"] = np.array(lams)
    arr["scan.test_error"] = sweep.pivot(t, "test_error", {"lam": lams})
    arr["scan.train_loss"] = sweep.pivot(t, "train_loss", {"lam": lams})
    return arr

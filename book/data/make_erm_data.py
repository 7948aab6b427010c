r"""Theory curves and simulations for ``book/02_erm_asymptotics.ipynb`` and
``book/03_factorisation.ipynb``.

Run from ``book/`` (``make data`` runs every script)::

    python -m data.make_erm_data                    # every part, on a local Dask cluster
    python -m data.make_erm_data --part adam        # one part
    python -m data.make_erm_data --quick --out DIR  # the quick grids, elsewhere
    python -m data.make_erm_data --address tcp://scheduler:8786   # on a Dask cluster

Every grid is an :class:`attnlib.sweep.Grid` over a point function below: points are
cached on disk, so an interrupted run resumes and a finished one computes nothing.
In a chapter, ``make_erm_data.compute("curves", quick=True)`` returns the arrays of a
part (the quick grid, in this process) without writing anything.

Parts and the files they write (``book/data/``):

- ``theory``  state evolution (:mod:`attnlib.se`) for every figure: learning curves
  for several ``lam``, optimal ``lam`` against ``alpha`` and ``kappa0`` for both
  penalties, a scan in ``lam``. -> ``erm_theory.npz``
- ``curves``  the convex (nuclear + PSD) solver, :func:`attnlib.train.train_convex`,
  on the learning-curve grid. -> ``erm_curves.npz``
- ``adam``    Adam on the factorised model of width ``kappa = 1``
  (:func:`attnlib.train.train_factorized`). -> ``erm_adam.npz``
- ``width``   Adam for widths ``kappa`` below and above the minimal width. -> ``erm_width.npz``
- ``compare`` factorised (nuclear) against direct (Frobenius) training, each at the
  optimal ``lam`` of the theory (needs ``erm_theory.npz``). -> ``erm_compare.npz``

``erm_meta.json`` records the parameters and the run time of every part. All
randomness comes from explicit PRNG keys derived from ``SEED``; every array is stored
under a flat key ``"<group>.<name>"``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math

import jax
import numpy as np
import scipy.optimize
from data import _common as C

import attnlib
from attnlib import sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 2025

# ----------------------------------------------------------------------------
# Parameters (the chapter reads them back from erm_meta.json)
# ----------------------------------------------------------------------------

KAPPA0 = 0.5  # target rank fraction (Wishart)
NOISE = 0.25  # label-noise variance Delta, on the logits, for the noisy experiments
NOISES = {"clean": 0.0, "noisy": NOISE}
TASKS = ("seq2seq", "linear")
PENALTIES = ("nuclear", "frobenius")
# alpha scales with 1 / m_eff (seq2seq T=2: m_eff = 2, linear T=1: m_eff = 1)
ALPHA_SCALE = {"seq2seq": 1.0, "linear": 2.0}
RANK_CUTOFF = 1e-3  # an eigenvalue counts towards the rank if > RANK_CUTOFF * largest one
LAM_BOUNDS = (1e-4, 10.0)  # search range of the optimal lam
LAM_XATOL = 0.15  # tolerance on log(lam): the test error is flat near its minimum
CURVE_FIELDS = ("train_loss", "test_error", "rank_fraction", "mse", "converged")

FULL = {
    # learning curves (theory grid, convex-solver points)
    # (seq2seq values; the linear task uses twice these alphas, see ALPHA_SCALE)
    "theory_alphas": np.round(np.arange(0.02, 0.5001, 0.01), 2).tolist(),  # 49 points
    "lams": {"clean": [1e-3, 1e-2, 1e-1], "noisy": [1e-3, 1e-2, 1e-1, 1.0]},
    "sim_alphas": [0.05, 0.1, 0.15, 0.2, 0.3, 0.45],
    "d_convex": 60,
    "seeds": 3,
    # Adam, kappa = 1
    "adam_lam": 0.1,
    "adam_alphas": [0.05, 0.1, 0.2, 0.3, 0.45],
    "d_adam": 80,
    "adam_steps": 6000,
    # minimal width
    "width_alpha": 0.3,
    "width_lam": 0.1,
    "width_kappas": [0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0],
    "d_width": 60,
    # factorised vs direct
    # 27 points: every 0.02, and the simulated alphas
    "cmp_alphas": sorted({*np.round(np.arange(0.02, 0.5001, 0.02), 2).tolist(), 0.05, 0.15}),
    "cmp_sim_alphas": [0.05, 0.15, 0.3, 0.5],
    "cmp_alpha_kappa0": 0.15,
    "cmp_kappa0s": np.round(np.linspace(0.05, 1.0, 20), 2).tolist(),
    "cmp_sim_kappa0s": [0.1, 0.5, 1.0],
    "d_cmp": 60,
    # test error against lam at one alpha
    "scan_alpha": 0.2,
    "scan_lams": [1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0],
    "scan_lams_theory": np.round(np.logspace(-3, 0.5, 15), 6).tolist(),
    "n_test": 10000,
}

QUICK = {
    **FULL,
    "theory_alphas": [0.05, 0.2],
    "lams": {"clean": [1e-2], "noisy": [1e-1]},
    "sim_alphas": [0.2],
    "d_convex": 20,
    "seeds": 2,
    "adam_alphas": [0.2],
    "d_adam": 20,
    "adam_steps": 1000,
    "width_kappas": [0.2, 1.0],
    "d_width": 20,
    "cmp_alphas": [0.15],
    "cmp_sim_alphas": [0.15],
    "cmp_kappa0s": [0.5],
    "cmp_sim_kappa0s": [0.5],
    "d_cmp": 20,
    "scan_lams": [0.1],
    "scan_lams_theory": [0.1],
    "n_test": 2000,
}


def make_task(task: str, noise: float) -> tasks.Task:
    return {"seq2seq": tasks.Seq2Seq(T=2, noise=noise), "linear": tasks.Linear(T=1, noise=noise)}[
        task
    ]


# ----------------------------------------------------------------------------
# Point functions (keyword parameters; explicit keys; each returns a dict of numbers)
# ----------------------------------------------------------------------------


def se_row(task, target, alpha, lam, penalty, init):
    """One SE point as a dict of CURVE_FIELDS, and the warm start for the next one."""
    r, zero = C.se_solve(task, target, alpha, lam, penalty, init)
    if r is not None and not r.converged and init is None:  # a cold start failed:
        near, _ = C.se_solve(task, target, 1.5 * alpha, lam, penalty, None)  # start nearby
        if near is not None and near.converged:
            r, zero = C.se_solve(task, target, alpha, lam, penalty, near)
    if r is None:  # S_hat = 0 where se.solve gave no result
        C.log(f"    [SE] alpha={alpha:g}, lam={lam:g}: S_hat = 0 (all eigenvalues thresholded)")
        return C.zero_estimator(task, target), init
    return {f: getattr(r, f) for f in CURVE_FIELDS}, C.warm(r, zero, init)


def se_curve_point(*, task, noise, kappa0, alpha, lam, penalty, init=None):
    """A point of an SE learning curve (chained along ``alpha`` or ``lam``)."""
    return se_row(make_task(task, noise), targets.Wishart(kappa0), alpha, lam, penalty, init)


LAM_STEP = 0.4  # chained search: log(lam) steps around the previous optimum
LAM_MOVES = 6  # at most this many shifts of the three-point bracket before falling back


def _brent(objective, lo, hi):
    res = scipy.optimize.minimize_scalar(
        objective, bounds=(math.log(lo), math.log(hi)), method="bounded",
        options={"xatol": LAM_XATOL},
    )  # fmt: skip
    return res.x


def _parabola(objective, x0):
    """Minimum of ``objective`` (of ``log lam``) near ``x0``: a bracket of three points
    ``LAM_STEP`` apart is shifted downhill until its middle is lowest, then the vertex
    of the parabola through them. ``None`` when no bracket is found (or it leaves
    ``LAM_BOUNDS``): the caller falls back to Brent on the whole range."""
    lo, hi = (math.log(b) for b in LAM_BOUNDS)
    xs = [x0 - LAM_STEP, x0, x0 + LAM_STEP]
    fs = [objective(x) for x in xs]
    for _ in range(LAM_MOVES):
        if fs[1] <= min(fs[0], fs[2]):
            break
        step = -LAM_STEP if fs[0] < fs[2] else LAM_STEP
        xs = [x + step for x in xs]
        if not (lo <= xs[0] and xs[2] <= hi):
            return None
        fs = [fs[0], fs[0], fs[1]] if step < 0 else [fs[1], fs[2], fs[2]]
        k = 0 if step < 0 else 2
        fs[k] = objective(xs[k])
    else:
        return None
    curv = fs[0] - 2 * fs[1] + fs[2]
    if not curv > 0:
        return None
    return xs[1] + 0.5 * LAM_STEP * (fs[0] - fs[2]) / curv


def _optimal(task, target, alpha, penalty, init, lam_prev=None):
    """``lam`` minimising the SE test error; a ``lam`` in the zero phase is evaluated as
    ``S_hat = 0``. Without ``lam_prev``: bounded Brent search on ``log lam`` over
    ``LAM_BOUNDS``. With ``lam_prev`` (the optimum of the previous point of a chain): the
    vertex of a parabola through three points bracketing the minimum near it
    (:func:`_parabola`), Brent when that fails. Returns ``(lam, metrics, warm start)``."""
    state, cache = {"init": init}, {}

    def objective(loglam):
        if loglam not in cache:
            row, state["init"] = se_row(
                task, target, alpha, math.exp(loglam), penalty, state["init"]
            )
            cache[loglam] = row
        return cache[loglam]["test_error"]

    x = _parabola(objective, math.log(lam_prev)) if lam_prev is not None else None
    if x is None:
        x = _brent(objective, *LAM_BOUNDS)
    objective(x)
    return math.exp(x), cache[x], state["init"]


def optimal_point(*, task, noise, kappa0, alpha, penalty, init=None):
    """Optimal ``lam`` at one ``alpha`` (chained along ``alpha``: the SE warm start and
    the previous optimum travel as ``init = (warm start, lam)``)."""
    se_init, lam_prev = init if init is not None else (None, None)
    lam, row, state = _optimal(
        make_task(task, noise), targets.Wishart(kappa0), alpha, penalty, se_init, lam_prev
    )
    return {
        "opt_lam": lam,
        "test_error": row["test_error"],
        "rank_fraction": row["rank_fraction"],
    }, (state, lam)


def optimal_point_kappa0(*, task, noise, kappa0, alpha, penalty, init=None):
    """Optimal ``lam`` at one ``kappa0`` (chained along ``kappa0``: only the previous
    optimum travels; each target's state evolution starts cold)."""
    lam, row, _ = _optimal(
        make_task(task, noise), targets.Wishart(kappa0), alpha, penalty, None, init
    )
    return {
        "opt_lam": lam,
        "test_error": row["test_error"],
        "rank_fraction": row["rank_fraction"],
    }, lam


def _data(task, target, alpha, d, key, n_keys):
    keys = jax.random.split(C.key_for(SEED, *key), n_keys)
    S0 = target.sample(keys[0], d)
    return S0, tasks.make_dataset(keys[1], task, S0, tasks.n_samples(alpha, d)), keys[2:]


def convex_chain_point(*, task, noise, alpha, lam, d, n_test, key, seed, init=None):
    """Convex solver on one data set (``key + [seed]``), warm-started along ``lam``."""
    task_ = make_task(task, noise)
    S0, data, (k_test,) = _data(task_, targets.Wishart(KAPPA0), alpha, d, [*key, seed], 3)
    r, notes = C.quiet(train.train_convex, task_, data, lam, S_init=init, tol=1e-7)
    if notes:
        C.log(f"    [convex] {notes} (lam={lam:g}, residual {r.residual:.1e})")
    row = {
        "train_loss": float(r.train_loss),
        "test_error": float(train.test_error(k_test, task_, S0, r.S, n_test=n_test)),
        "rank_fraction": C.rank_fraction(r.S, 1e-6),
    }
    return row, r.S


def adam(task, data, p, lam, key, *, steps, W_init=None):
    """Adam on W with weight decay lam_W = lam / sqrt(kappa); returns (TrainResult, notes)."""
    lam_W = lam / math.sqrt(p / data.X.shape[2])
    return C.quiet(train.train_factorized, key, task, data, p, lam_W, steps=steps, W_init=W_init)


def adam_point(*, task, alpha, d, lam, steps, n_test, key, seed):
    """Adam at ``kappa = 1``; at seed 0 also its distance to the convex minimiser."""
    task_ = make_task(task, NOISE)
    S0, data, (k_test, k_init) = _data(task_, targets.Wishart(KAPPA0), alpha, d, [*key, seed], 4)
    r, notes = adam(task_, data, d, lam, k_init, steps=steps)
    if notes:
        C.log(f"    [adam] {notes} (residual {r.residual:.1e})")
    row = {
        "train_loss": float(r.train_loss),
        "test_error": float(train.test_error(k_test, task_, S0, r.S, n_test=n_test)),
        "rank_fraction": C.rank_fraction(r.S, RANK_CUTOFF),
        "n_steps": float(r.n_steps),
        "rel_dist_convex": math.nan,
    }
    if seed == 0:
        c, _ = C.quiet(train.train_convex, task_, data, lam, tol=1e-8)
        row["rel_dist_convex"] = float(np.linalg.norm(r.S - c.S) / np.linalg.norm(c.S))
    return row


def width_p(kappa, d) -> int:
    return max(1, int(round(kappa * d)))


def _width_metrics(task, data, r, S0, lam, *, k_test, n_test, cutoff) -> dict:
    """Per-sequence nuclear objective, train loss, test error and rank of ``r.S``."""
    return {
        "objective": float(train.objective(task, data, r.S, lam, "nuclear") / data.X.shape[0]),
        "train_loss": float(r.train_loss),
        "test_error": float(train.test_error(k_test, task, S0, r.S, n_test=n_test)),
        "rank_fraction": C.rank_fraction(r.S, cutoff),
    }


def width_adam_point(*, alpha, lam, d, n_test, ik, kappa, steps, seed):
    """Adam at width ``kappa`` on the data set of ``seed`` (shared by every width)."""
    task = make_task("seq2seq", NOISE)
    S0, data, (k_test, k_init) = _data(task, targets.Wishart(KAPPA0), alpha, d, [3, seed], 4)
    r, notes = adam(task, data, width_p(kappa, d), lam, jax.random.fold_in(k_init, ik), steps=steps)
    if notes:
        C.log(f"    [adam] {notes} (kappa={kappa}, residual {r.residual:.1e})")
    return _width_metrics(task, data, r, S0, lam, k_test=k_test, n_test=n_test, cutoff=RANK_CUTOFF)


def width_convex_point(*, alpha, lam, d, n_test, seed):
    """The convex minimiser on the data set of ``seed``."""
    task = make_task("seq2seq", NOISE)
    S0, data, (k_test, _) = _data(task, targets.Wishart(KAPPA0), alpha, d, [3, seed], 4)
    c, _ = C.quiet(train.train_convex, task, data, lam, tol=1e-8)
    return _width_metrics(task, data, c, S0, lam, k_test=k_test, n_test=n_test, cutoff=1e-6)


def interp_lam(theory, group, x, key="alpha"):
    xs, lams = theory[f"{group}.{key}"], theory[f"{group}.lam"]
    return float(np.exp(np.interp(x, xs, np.log(lams))))


def compare_point(*, task, kappa0, alpha, d, lam_nuc, lam_fro, steps, n_test, key, seed):
    """Test errors of factorised Adam (nuclear, kappa = 1) and direct Adam (Frobenius)."""
    task_ = make_task(task, NOISE)
    S0, data, (k_test, k_init) = _data(task_, targets.Wishart(kappa0), alpha, d, [*key, seed], 4)
    fac, n1 = adam(task_, data, d, lam_nuc, k_init, steps=steps)
    dirc, n2 = C.quiet(train.train_direct, task_, data, lam_fro, steps=steps)
    for note in n1 + n2:
        C.log(f"    [{note}]")
    return {
        "e_fac": float(train.test_error(k_test, task_, S0, fac.S, n_test=n_test)),
        "e_dir": float(train.test_error(k_test, task_, S0, dirc.S, n_test=n_test)),
    }


def config(quick: bool) -> dict:
    return QUICK if quick else FULL


def scaled(cfg, name, task_name):
    return [a * ALPHA_SCALE[task_name] for a in cfg[name]]


# ----------------------------------------------------------------------------
# Grids (full or quick): one function each, so a chapter can run one live
# ----------------------------------------------------------------------------


def theory_lams(cfg, noise_name) -> list:
    lams = list(cfg["lams"][noise_name])
    if noise_name == "noisy" and cfg["adam_lam"] not in lams:
        lams.append(cfg["adam_lam"])
    return lams


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


def grid_curves(cfg) -> sweep.Grid:
    """Convex solver on the learning-curve grid, warm-started along ``lam`` (downwards)."""
    points = []
    for i_noise, (noise_name, noise) in enumerate(NOISES.items()):
        for i_task, task in enumerate(TASKS):
            for ia, alpha in enumerate(scaled(cfg, "sim_alphas", task)):
                points += sweep.product(
                    task=task,
                    noise=noise,
                    alpha=alpha,
                    d=cfg["d_convex"],
                    n_test=cfg["n_test"],
                    key=[[1, i_noise, i_task, ia]],
                    lam=sorted(cfg["lams"][noise_name], reverse=True),
                )
    return sweep.Grid(convex_chain_point, points, seeds=cfg["seeds"], chain="lam")


def grid_adam(cfg) -> sweep.Grid:
    points = []
    for i_task, task in enumerate(TASKS):
        for ia, alpha in enumerate(scaled(cfg, "adam_alphas", task)):
            points += sweep.product(
                task=task,
                alpha=alpha,
                d=cfg["d_adam"],
                lam=cfg["adam_lam"],
                steps=cfg["adam_steps"],
                n_test=cfg["n_test"],
                key=[[2, i_task, ia]],
            )
    return sweep.Grid(adam_point, points, seeds=cfg["seeds"])


def grid_width(cfg) -> tuple[sweep.Grid, sweep.Grid]:
    """Adam at every width and the convex solver, on one data set per seed."""
    common = {
        "alpha": cfg["width_alpha"],
        "lam": cfg["width_lam"],
        "d": cfg["d_width"],
        "n_test": cfg["n_test"],
    }
    adam = [
        {**common, "ik": ik, "kappa": k, "steps": cfg["adam_steps"]}
        for ik, k in enumerate(cfg["width_kappas"])
    ]
    return (
        sweep.Grid(width_adam_point, adam, seeds=cfg["seeds"]),
        sweep.Grid(width_convex_point, [common], seeds=cfg["seeds"]),
    )


def grid_compare(cfg, theory: dict) -> tuple[sweep.Grid, sweep.Grid, sweep.Grid]:
    """Factorised against direct training at the theory's optimal ``lam``s; the convex
    ``lam`` scan."""
    base = {"d": cfg["d_cmp"], "steps": cfg["adam_steps"], "n_test": cfg["n_test"]}
    along_alpha = []
    for i_task, task in enumerate(TASKS):
        for ia, alpha in enumerate(scaled(cfg, "cmp_sim_alphas", task)):
            along_alpha.append(
                {
                    **base,
                    "task": task,
                    "kappa0": KAPPA0,
                    "alpha": alpha,
                    "lam_nuc": interp_lam(theory, f"opt.{task}.nuclear", alpha),
                    "lam_fro": interp_lam(theory, f"opt.{task}.frobenius", alpha),
                    "key": [4, i_task, ia],
                }
            )
    along_k0 = []
    for ik, k0 in enumerate(cfg["cmp_sim_kappa0s"]):
        along_k0.append(
            {
                **base,
                "task": "seq2seq",
                "kappa0": k0,
                "alpha": cfg["cmp_alpha_kappa0"],
                "lam_nuc": interp_lam(theory, "kappa0.nuclear", k0, key="kappa0"),
                "lam_fro": interp_lam(theory, "kappa0.frobenius", k0, key="kappa0"),
                "key": [5, ik],
            }
        )
    scan = {
        "task": "seq2seq",
        "noise": NOISE,
        "alpha": cfg["scan_alpha"],
        "d": cfg["d_convex"],
        "n_test": cfg["n_test"],
        "key": [[6]],
        "lam": sorted(cfg["scan_lams"], reverse=True),
    }
    return (
        sweep.Grid(compare_point, along_alpha, seeds=cfg["seeds"]),
        sweep.Grid(compare_point, along_k0, seeds=cfg["seeds"]),
        sweep.Grid(convex_chain_point, scan, seeds=cfg["seeds"], chain="lam"),
    )


# ----------------------------------------------------------------------------
# Parts: run the grids, arrange the tables as the chapter's arrays
# ----------------------------------------------------------------------------


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


def arrays_curves(cfg, run) -> dict:
    arr, t = {}, run(grid_curves(cfg))
    for noise_name, noise in NOISES.items():
        for task in TASKS:
            alphas, lams = scaled(cfg, "sim_alphas", task), sorted(cfg["lams"][noise_name])
            sel, g = t[(t.task == task) & (t.noise == noise)], f"{task}.{noise_name}"
            axes = {"lam": lams, "seed": range(cfg["seeds"]), "alpha": alphas}
            arr[f"{g}.alpha"], arr[f"{g}.lam"] = np.array(alphas), np.array(lams)
            for f in ("train_loss", "test_error", "rank_fraction"):
                arr[f"{g}.{f}"] = sweep.pivot(sel, f, axes)
    return arr


def arrays_adam(cfg, run) -> dict:
    arr, t = {}, run(grid_adam(cfg))
    for task in TASKS:
        alphas, sel = scaled(cfg, "adam_alphas", task), t[t.task == task]
        axes = {"seed": range(cfg["seeds"]), "alpha": alphas}
        arr[f"{task}.alpha"] = np.array(alphas)
        for f in ("train_loss", "test_error", "rank_fraction", "n_steps"):
            arr[f"{task}.{f}"] = sweep.pivot(sel, f, axes)
        arr[f"{task}.rel_dist_convex"] = sweep.pivot(sel, "rel_dist_convex", axes)[0]
    return arr


def arrays_width(cfg, run) -> dict:
    g_adam, g_convex = grid_width(cfg)
    ta, tc = run(g_adam), run(g_convex)
    kappas, seeds = cfg["width_kappas"], range(cfg["seeds"])
    arr = {"kappa": np.array(kappas), "p": np.array([width_p(k, cfg["d_width"]) for k in kappas])}
    for f in ("objective", "train_loss", "test_error", "rank_fraction"):
        arr[f] = sweep.pivot(ta, f, {"seed": seeds, "kappa": kappas})
    for f in ("objective", "train_loss", "test_error", "rank_fraction"):
        arr[f"convex.{f}"] = sweep.pivot(tc, f, {"seed": seeds})
    return arr


def arrays_compare(cfg, run, theory: dict) -> dict:
    g_alpha, g_k0, g_scan = grid_compare(cfg, theory)
    ta, tk, ts = run(g_alpha), run(g_k0), run(g_scan)
    seeds, arr = range(cfg["seeds"]), {}
    for task in TASKS:
        alphas, sel = scaled(cfg, "cmp_sim_alphas", task), ta[ta.task == task]
        axes = {"seed": seeds, "alpha": alphas}
        arr[f"alpha.{task}.alpha"] = np.array(alphas)
        arr[f"alpha.{task}.lam"] = np.stack(
            [sweep.pivot(sel, f, axes)[0] for f in ("lam_nuc", "lam_fro")]
        )
        arr[f"alpha.{task}.test_error"] = np.stack(
            [sweep.pivot(sel, f, axes) for f in ("e_fac", "e_dir")]
        )
    k0s = cfg["cmp_sim_kappa0s"]
    arr["kappa0.kappa0"] = np.array(k0s)
    arr["kappa0.test_error"] = np.stack(
        [sweep.pivot(tk, f, {"seed": seeds, "kappa0": k0s}) for f in ("e_fac", "e_dir")]
    )
    lams = sorted(cfg["scan_lams"])
    arr["scan.lam"] = np.array(lams)
    arr["scan.test_error"] = sweep.pivot(ts, "test_error", {"seed": seeds, "lam": lams})
    return arr


def compute(part: str, quick: bool = True, runner=None, out: Path = C.HERE) -> dict:
    """The arrays of one part (the quick grid by default), computed without writing.
    ``compare`` reads the optimal ``lam``s from ``out/erm_theory.npz``."""
    cfg, run = config(quick), runner or C.Runner()
    if part == "compare":
        path = Path(out) / "erm_theory.npz"
        if not path.exists():
            raise SystemExit(f"{path} missing: run --part theory first")
        return arrays_compare(cfg, run, C.load_npz(path))
    return ARRAYS[part](cfg, run)


ARRAYS = {
    "theory": arrays_theory,
    "curves": arrays_curves,
    "adam": arrays_adam,
    "width": arrays_width,
}
FILES = {p: f"erm_{p}.npz" for p in ("theory", "curves", "adam", "width", "compare")}


def _part(name):
    def part(quick, out, runner):
        C.save_npz(Path(out) / FILES[name], compute(name, quick, runner, out))

    return part


PARTS = {name: _part(name) for name in FILES}


def meta_update(args, name, seconds, info=None) -> None:
    updates = {
        "attnlib_version": attnlib.__version__,
        "seed": SEED,
        "kappa0": KAPPA0,
        "noise": NOISE,
        "noise_on": "logits",
        "rank_cutoff": RANK_CUTOFF,
        "quick": bool(args.quick),
        "config": config(args.quick),
    }
    C.update_meta(args.out / "erm_meta.json", updates, "runtime_s", name, seconds)


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, meta_update)


if __name__ == "__main__":
    from data import make_erm_data  # the importable module: workers load its functions by name

    make_erm_data.main()

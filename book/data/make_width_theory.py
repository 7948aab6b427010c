r"""Students narrower than the convex solution (``book/03_factorisation.ipynb``): theory, checks.

Run from ``book/``::

    python -m data.make_width_theory --serial              # every part
    python -m data.make_width_theory --serial --part theory
    python -m data.make_width_theory --quick --serial --out DIR

The factorised student of width ``kappa = p / d`` with weight decay is the nuclear +
PSD ERM restricted to rank ``<= kappa d`` (``lam = sqrt(kappa) lam_W``). Below the
rank fraction ``kappa_star`` of the convex minimiser the constraint binds; its
state evolution is :func:`attnlib.width.solve` (the convex one with the input map
``f(x) = (c x - tau)_+`` cut at the top-``kappa`` quantile of ``rho_R``).

Parts and files (``book/data/``):

- ``theory``  the chapter's point (seq2seq ``T = 2``, ``Delta = 0.25`` on the logits,
  Wishart ``kappa0 = 1/2``, ``alpha = 0.3``, ``lam = 0.1``): the rank-constrained state
  evolution on a grid of widths. -> ``width_theory.npz``
- ``interp``  interpolation against the width (linear task ``T = 1``, ``Delta = 0.25``):
  Adam on ``W`` at ``lam -> 0`` on ``n = rel * n_pred`` sequences around the smaller
  of two upper bounds on what a width-``kappa`` student can fit,
  ``n_pred = min(dim, alpha_interp d^2)``: the counting bound ``dim = p d - p (p - 1)
  / 2`` (no rank-``p`` student fits more noisy equations) and the convex threshold
  ``alpha_interp`` of the unconstrained PSD problem (``interp_thresholds.json``);
  the rank-constrained state evolution does not describe this regime
  (:mod:`attnlib.width`). -> ``width_interp.npz``
- ``adam``    Adam on ``W`` at widths below ``kappa_star`` and the convex solver, at
  several ``d`` and seeds (the finite-size check of ``theory``). -> ``width_adam.npz``

Point functions are pure functions of one point's parameters (and seed) returning a
dict of numbers; grids are :class:`attnlib.sweep.Grid` objects (cached on disk).
``width_meta.json`` records the parameters and run times.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import functools
import json
import math
import warnings

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import se, sweep, targets, tasks, train, width
from attnlib.width import capacity

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 4242
KAPPA0 = 0.5
NOISE = 0.25
ALPHA, LAM = 0.3, 0.1  # the chapter's minimal-width point
RANK_CUTOFF = 1e-3  # an eigenvalue of Adam's S counts if > RANK_CUTOFF * the largest one

FULL = {
    "kappas": [0.04, 0.06, 0.08, 0.1, 0.125, 0.15, 0.175, 0.2, 0.225, 0.25]
    + [0.275, 0.3, 0.325, 0.35, 0.375, 0.39, 0.4],
    "interp_kappas": [0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0],
    "interp_rels": [0.8, 0.9, 0.95, 1.05, 1.1, 1.2],
    "interp_d": 40,
    "interp_seeds": 3,
    "interp_steps": 20000,
    "adam_kappas": [0.1, 0.2, 0.3],
    "adam_ds": [40, 60, 80, 100, 120],
    "seeds": 8,
    "adam_steps": 8000,
    "n_test": 10000,
}
QUICK = {
    **FULL,
    "kappas": [0.1, 0.3],
    "interp_kappas": [0.2, 0.7],
    "interp_rels": [0.85, 1.15],
    "interp_d": 16,
    "interp_seeds": 1,
    "interp_steps": 8000,
    "adam_kappas": [0.2],
    "adam_ds": [16, 24],
    "seeds": 2,
    "adam_steps": 1000,
    "n_test": 2000,
}


def seq2seq_task() -> tasks.Task:
    return tasks.Seq2Seq(T=2, noise=NOISE)


def linear_task() -> tasks.Task:
    return tasks.Linear(T=1, noise=NOISE)


# --- Theory: the rank-constrained state evolution against kappa


@functools.lru_cache(maxsize=8)
def convex_se(alpha: float, lam: float) -> tuple:
    """The convex fixed point at ``(alpha, lam)`` and its warm start (solved once per
    process)."""
    return se.solve(seq2seq_task(), targets.Wishart(KAPPA0), alpha, lam, return_warm=True)


def theory_point(*, alpha: float, lam: float, kappa: float) -> dict:
    """Rank-constrained SE at ``(alpha, lam, kappa)`` for the seq2seq task (a dict of numbers).

    ``trace`` and ``objective`` (the nuclear objective per sequence, ``train_loss +
    lam Tr(S)/(d alpha)``) are those of the rank-constrained fixed point (NaN if not converged).
    """
    convex, warm = convex_se(alpha, lam)
    r = width.solve(
        seq2seq_task(), targets.Wishart(KAPPA0), alpha, lam, kappa, convex=convex, init=warm
    )
    s = r.se
    return {
        "kappa_star": r.kappa_star,
        "constrained": float(r.constrained),
        "converged": float(s.converged),
        "test_error": s.test_error,
        "train_loss": s.train_loss,
        "mse": s.mse,
        "m": s.m,
        "q": s.q,
        "rank_fraction": s.rank_fraction,
        "trace": s.trace,
        "objective": s.objective,
        "integration_error": s.integration_error,
    }


def grid_theory(cfg) -> sweep.Grid:
    pts = sweep.product(alpha=ALPHA, lam=LAM, kappa=cfg["kappas"])
    return sweep.Grid(theory_point, pts)


# --- Interpolation against kappa (linear task): Adam at lam -> 0 around the counting bound


def convex_interp() -> float:
    """The convex ``alpha_interp`` of the linear task at ``Delta = 0.25`` (computed by
    ``data/make_interp_thresholds.py`` with :func:`attnlib.thresholds.interpolation_se`)."""
    points = json.loads((Path(__file__).parent / "interp_thresholds.json").read_text())
    (p,) = [q for q in points["points"] if q["task"] == "linear" and q["noise"] == NOISE]
    return float(p["alpha"])


def interp_point(*, kappa: float, rel: float, d: int, steps: int, seed: int) -> dict:
    """Adam on ``W`` (``p = round(kappa d)``, ``lam_W = 1e-5``) on ``n = rel * n_pred``
    noisy linear sequences (:func:`attnlib.width.capacity.fit_capacity`); the train loss
    per sequence (0 where the data are interpolated)."""
    p = max(1, round(kappa * d))
    n = max(1, round(rel * capacity.fit_capacity(d, p, convex_interp())))
    k_s, k_x, k_i = jax.random.split(C.key_for(SEED, 7, d, seed), 3)
    task = linear_task()
    S0 = targets.Wishart(KAPPA0).sample(k_s, d)
    data = tasks.make_dataset(k_x, task, S0, n)
    r, _ = C.quiet(train.train_factorized, k_i, task, data, p, 1e-5, max_iter=steps, tol=1e-12)
    return {"train_loss": float(r.train_loss), "alpha": n / d**2, "n_steps": float(r.n_iter)}


def grid_interp(cfg) -> sweep.Grid:
    pts = sweep.product(
        kappa=cfg["interp_kappas"], rel=cfg["interp_rels"], d=cfg["interp_d"],
        steps=cfg["interp_steps"],
    )  # fmt: skip
    return sweep.Grid(interp_point, pts, seeds=cfg["interp_seeds"])


# --- Simulations: Adam on W at width kappa, and the convex solver, on one data set per seed


def _data(d: int, seed: int):
    k_s, k_x, k_test, k_init = jax.random.split(C.key_for(SEED, d, seed), 4)
    task = seq2seq_task()
    S0 = targets.Wishart(KAPPA0).sample(k_s, d)
    return task, S0, tasks.make_dataset(k_x, task, S0, tasks.n_samples(ALPHA, d)), k_test, k_init


def _metrics(task, data, S, S0, k_test, n_test, cutoff) -> dict:
    return {
        "objective": float(train.objective(task, data, S, LAM, "nuclear") / data.X.shape[0]),
        "train_loss": float(train.train_loss(task, data, S)),
        "test_error": float(train.test_error(k_test, task, S0, S, n_test=n_test)),
        "rank_fraction": C.rank_fraction(S, cutoff),
    }


def adam_point(*, d: int, kappa: float, steps: int, n_test: int, seed: int) -> dict:
    """Adam on ``W`` (``p = round(kappa d)``, ``lam_W = lam / sqrt(p / d)``) on the seed's data."""
    task, S0, data, k_test, k_init = _data(d, seed)
    p = max(1, round(kappa * d))
    r, notes = C.quiet(
        train.train_factorized, k_init, task, data, p, LAM / math.sqrt(p / d), max_iter=steps
    )
    if notes:
        C.log(f"    [adam] {notes} (d={d}, kappa={kappa}, residual {r.residual:.1e})")
    row = _metrics(task, data, r.S, S0, k_test, n_test, RANK_CUTOFF)
    row["n_steps"] = float(r.n_iter)
    return row


def convex_point(*, d: int, n_test: int, seed: int) -> dict:
    """The convex (nuclear + PSD) minimiser on the seed's data."""
    task, S0, data, k_test, _ = _data(d, seed)
    c, _ = C.quiet(train.train_convex, task, data, LAM, tol=1e-8)
    return _metrics(task, data, c.S, S0, k_test, n_test, 1e-6)


def grids_adam(cfg) -> tuple[sweep.Grid, sweep.Grid]:
    common = {"n_test": cfg["n_test"]}
    pts = sweep.product(d=cfg["adam_ds"], kappa=cfg["adam_kappas"], steps=cfg["adam_steps"])
    return (
        sweep.Grid(adam_point, [{**p, **common} for p in pts], seeds=cfg["seeds"]),
        sweep.Grid(convex_point, sweep.product(d=cfg["adam_ds"], **common), seeds=cfg["seeds"]),
    )


# --- Assembling the files

THEORY_FIELDS = ("test_error", "train_loss", "mse", "rank_fraction", "objective", "converged")
SIM_FIELDS = ("objective", "train_loss", "test_error", "rank_fraction")


def arrays_theory(cfg, run) -> dict:
    t = run(grid_theory(cfg))
    axes = {"kappa": cfg["kappas"]}
    arr = {"kappa": np.array(cfg["kappas"]), "alpha": ALPHA, "lam": LAM}
    for f in THEORY_FIELDS:
        arr[f] = sweep.pivot(t, f, axes)
    arr["kappa_star"] = float(np.nanmax(sweep.pivot(t, "kappa_star", axes)))
    conv, _ = convex_se(ALPHA, LAM)
    arr["convex.test_error"], arr["convex.train_loss"] = conv.test_error, conv.train_loss
    arr["convex.mse"] = conv.mse
    return arr


def arrays_interp(cfg, run) -> dict:
    t = run(grid_interp(cfg))
    kappas, rels = cfg["interp_kappas"], cfg["interp_rels"]
    axes = {"kappa": kappas, "rel": rels, "seed": range(cfg["interp_seeds"])}
    d = cfg["interp_d"]
    ps = [max(1, round(k * d)) for k in kappas]
    return {
        "kappa": np.array(kappas),
        "rel": np.array(rels),
        "d": d,
        "train_loss": sweep.pivot(t, "train_loss", axes),  # (kappa, rel, seed)
        "alpha": sweep.pivot(t, "alpha", axes)[..., 0],  # (kappa, rel)
        "counting": np.array([width.counting_bound(linear_task(), k) for k in kappas]),
        "counting_d": np.array([capacity.rank_manifold_dim(d, p) / d**2 for p in ps]),
        "convex_interp": convex_interp(),
    }


def arrays_adam(cfg, run) -> dict:
    g_adam, g_cvx = grids_adam(cfg)
    ta, tc = run(g_adam), run(g_cvx)
    seeds = range(cfg["seeds"])
    arr = {"kappa": np.array(cfg["adam_kappas"]), "d": np.array(cfg["adam_ds"])}
    axes = {"d": cfg["adam_ds"], "kappa": cfg["adam_kappas"], "seed": seeds}
    for f in SIM_FIELDS:
        arr[f] = sweep.pivot(ta, f, axes)  # (d, kappa, seed)
        arr[f"convex.{f}"] = sweep.pivot(tc, f, {"d": cfg["adam_ds"], "seed": seeds})
    return arr


FILES = {"theory": "width_theory.npz", "interp": "width_interp.npz", "adam": "width_adam.npz"}
BUILDERS = {"theory": arrays_theory, "interp": arrays_interp, "adam": arrays_adam}


def compute(part: str, quick: bool = False, runner=None) -> dict:
    """The arrays of one part (in this process, nothing written)."""
    cfg = QUICK if quick else FULL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        return BUILDERS[part](cfg, runner or C.Runner())


def main(argv=None) -> None:
    args = C.parser(__doc__, FILES).parse_args(argv)
    params = {"kappa0": KAPPA0, "noise": NOISE, "alpha": ALPHA, "lam": LAM, "seed": SEED}
    meta = C.meta_recorder("width_meta.json", params, FULL, QUICK)
    C.run_parts(args, C.npz_parts(FILES, compute), meta)


if __name__ == "__main__":
    main()

"""Precompute the heavy parts of book/04_gamp.ipynb and book/05_state_evolution.ipynb.

Run from ``book/`` (``make data`` runs every script)::

    python -m data.make_amp_data                       # every part, on a local Dask cluster
    python -m data.make_amp_data --part thresholds     # fixedpoint | thresholds | curves | se
    python -m data.make_amp_data --quick --out DIR     # the quick grids, elsewhere

Every grid is an :class:`attnlib.sweep.Grid` over a point function below (cached
on disk, resumable). In a chapter, ``make_amp_data.compute("curves", quick=True)``
returns a part's arrays (the quick grid, in this process) without writing.

Writes three small files next to this script:

- ``amp_fixed_point.npz``: GAMP and the convex solver on the seq2seq data set of
  the chapter's fixed-point check (regenerated in the chapter from the same key),
  and the state-evolution output side at GAMP's overlaps.
- ``amp_curves.npz``: the final figure of 05_state_evolution. For two settings (the
  linear task at T = 1 with label noise, softmax seq2seq at T = 2 without noise;
  Wishart target kappa0 = 0.5, nuclear penalty lam = 0.05) it stores, on a grid of
  alpha and for several seeds, GAMP and the convex solver run on the same data
  (overlaps m, q, training loss, Monte Carlo test error, GAMP variance v), and for
  seq2seq the state-evolution learning curve (the linear one is cheap and is
  computed in the chapter). The part ``se`` recomputes only these SE curves.
- ``amp_thresholds.npz``: convex-solver simulations at small lam for the
  perfect-recovery (noise-free) and interpolation (two noise levels) thresholds
  of the linear task at T = 1.

Every random draw derives from explicit PRNG keys, so the files are reproducible.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import amp, se, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

TARGET = targets.Wishart(0.5)
LAM = 0.05
SEEDS = (0, 1, 2)

SETTINGS = {
    # name: (task, d, data alphas, SE alphas or None, GAMP damping)
    "linear": (tasks.Linear(T=1, noise=0.1), 60, (0.1, 0.2, 0.3, 0.5, 0.7, 1.0), None, 0.6),
    "seq2seq": (
        tasks.Seq2Seq(T=2),
        50,
        (0.05, 0.1, 0.15, 0.2, 0.3, 0.4),
        (0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.18, 0.21, 0.25, 0.3, 0.35, 0.4, 0.45),
        0.6,
    ),
}
FULL = {
    "seeds": len(SEEDS),
    "d": {"linear": 60, "seq2seq": 50},
    "alphas": {name: s[2] for name, s in SETTINGS.items()},
    "se_alphas": {name: s[3] for name, s in SETTINGS.items()},
    "d_thresholds": 40,
    "pr_alpha": [0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6],
    "interp_alpha": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45],
    "noises": [0.1, 20.0],
    "fixed_point": {"key_seed": 3, "fold": 21, "d": 40, "alpha": 0.15},
}
# QUICK: the chapter's simulations at small d, run live (ATTNLIB_QUICK=1). Each solver
# compiles once per data-set shape (n = alpha d^2), so the quick grids share shapes: the
# fixed point is the seq2seq curve point at alpha = 0.2 (d = 16), and the threshold runs
# use four alphas in all. The quick alphas are full-grid alphas, so the stored SE curves
# (theory: read, not recomputed, in class mode) contain them.
QUICK = {
    "seeds": 2,
    "d": {"linear": 20, "seq2seq": 16},
    "alphas": {"linear": (0.2, 0.5, 1.0), "seq2seq": (0.1, 0.2, 0.4)},
    "se_alphas": {"linear": None, "seq2seq": None},
    "d_thresholds": 16,
    "pr_alpha": [0.3, 0.45, 0.6],
    "interp_alpha": [0.2, 0.3, 0.45],
    "noises": [0.1, 20.0],
    "fixed_point": {"key_seed": 3, "fold": 21, "d": 16, "alpha": 0.2},
    # at d = 16-20 GAMP with damping 0.6 does not converge at the smallest alphas (6000
    # iterations, then a retry); 0.85 converges everywhere (same fixed points)
    "gamp_damping": 0.85,
}
CURVES_KEY, THRESHOLDS_KEY = 20250301, 20250302


def config(quick: bool) -> dict:
    return QUICK if quick else FULL


# ----------------------------------------------------------------------------
# Point functions
# ----------------------------------------------------------------------------


def robust_gamp(task, data, damping, lam=LAM):
    """GAMP with the given damping; if it breaks down or does not converge, heavier damping."""
    res = None
    for damp in (damping, 0.85, 0.95):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = amp.gamp(task, data, lam, damping=damp, tol=1e-7, max_iter=6000)
        if r.status == "breakdown":
            C.log(f"   GAMP broke down with damping {damp} (after {r.n_iter} iterations)")
            continue
        res = r
        if res.converged:
            return res
        C.log(f"   GAMP did not converge with damping {damp} (residual {res.residual:.1e})")
    if res is None:
        raise FloatingPointError("GAMP broke down at every damping")
    return res


def fixed_point_point(*, key_seed, fold, d, alpha):
    """GAMP and the convex solver on the seq2seq data set of the chapter's fixed-point check.

    The chapter regenerates the same data from the key ``fold_in(PRNGKey(seed), fold)``
    (its ``key(21)``), split as in the chapter's ``gamp_vs_convex``.
    """
    task = tasks.Seq2Seq(T=2)
    k = jax.random.fold_in(jax.random.PRNGKey(key_seed), fold)
    S0 = TARGET.sample(jax.random.fold_in(k, 0), d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), task, S0, tasks.n_samples(alpha, d))
    rg = robust_gamp(task, data, 0.6)
    rc = train.train_convex(task, data, LAM, tol=1e-10, max_iter=40000)
    ov = train.overlaps(rg.S, S0)
    out = se.output_side(task, alpha, ov.Q0, ov.m, ov.q, rg.v)
    C.log(
        f"fixed point: GAMP converged {rg.converged} in {rg.n_iter} iterations, convex "
        f"converged {rc.converged}, |S_g - S_c|/|S_c| = "
        f"{np.linalg.norm(rg.S - rc.S) / np.linalg.norm(rc.S):.1e}"
    )
    return {
        "Y_sum": float(np.sum(np.asarray(data.Y))),
        "gamp_S": np.asarray(rg.S),
        "gamp_v": rg.v,
        "gamp_a_hat": rg.a_hat,
        "gamp_converged": bool(rg.converged),
        "gamp_n_iter": rg.n_iter,
        "gamp_residual": rg.residual,
        "convex_S": np.asarray(rc.S),
        "convex_converged": bool(rc.converged),
        "se_a_hat": out.a_hat,
        "se_q_hat": out.q_hat,
        "se_m_hat": out.m_hat,
    }


def curve_point(*, setting, d, alpha, seed, damping=None):
    """GAMP and the convex solver on one data set; returns a dict of scalars.

    ``damping``: GAMP's first damping (default: the setting's)."""
    task, _, _, _, default_damping = SETTINGS[setting]
    damping = default_damping if damping is None else damping
    base_key = jax.random.fold_in(jax.random.PRNGKey(CURVES_KEY), list(SETTINGS).index(setting))
    k = jax.random.fold_in(jax.random.fold_in(base_key, seed), int(round(alpha * 1e4)))
    k_s0, k_data, k_test = jax.random.split(k, 3)
    S0 = TARGET.sample(k_s0, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    out = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rg = robust_gamp(task, data, damping)
        rc = train.train_convex(task, data, LAM, tol=1e-9, max_iter=40000)
    for w in caught:
        C.log(f"   warning: {w.message}")
    for name, S in (("gamp", rg.S), ("convex", rc.S)):
        ov = train.overlaps(S, S0)
        te = train.test_error_stats(k_test, task, S0, S, n_test=20000)
        out[f"{name}_m"] = ov.m
        out[f"{name}_q"] = ov.q
        out[f"{name}_Q0"] = ov.Q0
        out[f"{name}_train"] = train.train_loss(task, data, S)
        out[f"{name}_test"] = te.mean
        out[f"{name}_test_err"] = te.stderr
    out["gamp_v"] = rg.v
    out["gamp_a_hat"] = rg.a_hat
    out["gamp_converged"] = float(rg.converged)
    out["convex_converged"] = float(rc.converged)
    out["rel_diff"] = float(np.linalg.norm(rg.S - rc.S) / np.linalg.norm(rc.S))
    return {k: float(v) for k, v in out.items()}


SE_FIELDS = ("alpha", "m", "q", "v", "train_loss", "test_error", "converged")


def se_curve_point(*, setting, alphas):
    """State-evolution learning curve of a setting on ``alphas`` (warm starts inside)."""
    lc = se.learning_curve(SETTINGS[setting][0], TARGET, np.asarray(alphas), LAM, "nuclear")
    return {f: np.asarray(getattr(lc, f), dtype=float) for f in SE_FIELDS}


def _threshold_S0(s, d):
    return TARGET.sample(jax.random.fold_in(jax.random.PRNGKey(THRESHOLDS_KEY), s), d)


def pr_point(*, d, i, alpha, seed):
    """Noise-free linear task at small lam: mse of the convex solver (perfect recovery)."""
    base_key = jax.random.PRNGKey(THRESHOLDS_KEY)
    k = jax.random.fold_in(jax.random.fold_in(base_key, 100 + seed), i)
    S0 = _threshold_S0(seed, d)
    data = tasks.make_dataset(k, tasks.Linear(T=1), S0, tasks.n_samples(alpha, d))
    r = train.train_convex(tasks.Linear(T=1), data, 1e-3, tol=1e-9, max_iter=40000)
    return {"mse": float(train.mse(r.S, S0))}


def interp_point(*, d, j, noise, i, alpha, seed):
    """Noisy linear task at tiny lam: training loss of the convex solver (interpolation)."""
    base_key = jax.random.PRNGKey(THRESHOLDS_KEY)
    k = jax.random.fold_in(jax.random.fold_in(base_key, 200 + 10 * seed + j), i)
    task = tasks.Linear(T=1, noise=float(noise))
    data = tasks.make_dataset(k, task, _threshold_S0(seed, d), tasks.n_samples(alpha, d))
    # the noise is in the labels; the loss, hence the solver (compiled once per task
    # object), is the noise-free task's
    r = train.train_convex(tasks.Linear(T=1), data, 1e-4, tol=1e-9, max_iter=40000)
    return {"train": float(r.train_loss)}


# ----------------------------------------------------------------------------
# Grids and parts
# ----------------------------------------------------------------------------


def grid_fixed_point(cfg) -> sweep.Grid:
    return sweep.Grid(fixed_point_point, cfg["fixed_point"])


def grid_curves(cfg) -> sweep.Grid:
    points = [
        p
        for name in SETTINGS
        for p in sweep.product(setting=name, d=cfg["d"][name], alpha=list(cfg["alphas"][name]))
    ]
    if "gamp_damping" in cfg:
        points = [{**p, "damping": cfg["gamp_damping"]} for p in points]
    return sweep.Grid(curve_point, points, seeds=cfg["seeds"])


def grid_se(cfg) -> sweep.Grid:
    points = [
        {"setting": name, "alphas": np.union1d(se_alphas, cfg["alphas"][name]).tolist()}
        for name, se_alphas in cfg["se_alphas"].items()
        if se_alphas is not None
    ]
    return sweep.Grid(se_curve_point, points)


def grid_thresholds(cfg) -> tuple[sweep.Grid, sweep.Grid]:
    d = cfg["d_thresholds"]
    pr = [{"d": d, "i": i, "alpha": a} for i, a in enumerate(cfg["pr_alpha"])]
    interp = [
        {"d": d, "j": j, "noise": noise, "i": i, "alpha": a}
        for j, noise in enumerate(cfg["noises"])
        for i, a in enumerate(cfg["interp_alpha"])
    ]
    return (
        sweep.Grid(pr_point, pr, seeds=cfg["seeds"]),
        sweep.Grid(interp_point, interp, seeds=cfg["seeds"]),
    )


FP_FIELDS = (
    "Y_sum gamp_S gamp_v gamp_a_hat gamp_converged gamp_n_iter gamp_residual convex_S "
    "convex_converged se_a_hat se_q_hat se_m_hat"
).split()


def arrays_fixed_point(cfg, run) -> dict:
    grid = grid_fixed_point(cfg)
    point, row = grid.points[0], run(grid).iloc[0]
    arrays = {("seed" if k == "key_seed" else k): np.array(v) for k, v in point.items()}
    arrays["lam"] = np.array(LAM)
    arrays.update({k: np.array(row[k]) for k in FP_FIELDS})
    return arrays


def arrays_se(cfg, run) -> dict:
    if all(a is None for a in cfg["se_alphas"].values()):  # quick: no SE curve computed
        return {}
    t, arrays = run(grid_se(cfg)), {}
    for _, row in t.iterrows():
        arrays.update({f"{row['setting']}_se_{f}": np.asarray(row[f]) for f in SE_FIELDS})
    return arrays


def arrays_curves(cfg, run) -> dict:
    t, arrays = run(grid_curves(cfg)), {}
    skip = ("setting", "d", "alpha", "seed", "damping", *sweep.table.META_COLUMNS)
    fields = [c for c in t.columns if c not in skip]
    for name in SETTINGS:
        alphas, sel = cfg["alphas"][name], t[t.setting == name]
        arrays[f"{name}_alpha"] = np.array(alphas)
        arrays[f"{name}_d"] = np.array(cfg["d"][name])
        for f in fields:
            axes = {"seed": range(cfg["seeds"]), "alpha": alphas}
            arrays[f"{name}_{f}"] = sweep.pivot(sel, f, axes)
    return arrays | arrays_se(cfg, run)


def arrays_thresholds(cfg, run) -> dict:
    g_pr, g_interp = grid_thresholds(cfg)
    tp, ti = run(g_pr), run(g_interp)
    seeds = range(cfg["seeds"])
    return {
        "d": np.array(cfg["d_thresholds"]),
        "pr_alpha": np.array(cfg["pr_alpha"]),
        "pr_mse": sweep.pivot(tp, "mse", {"seed": seeds, "alpha": cfg["pr_alpha"]}),
        "interp_alpha": np.array(cfg["interp_alpha"]),
        "noise": np.array(cfg["noises"]),
        "interp_train": sweep.pivot(
            ti, "train", {"noise": cfg["noises"], "seed": seeds, "alpha": cfg["interp_alpha"]}
        ),
    }


ARRAYS = {
    "fixedpoint": arrays_fixed_point,
    "thresholds": arrays_thresholds,
    "curves": arrays_curves,
    "se": arrays_se,
}
FILES = {
    "fixedpoint": "amp_fixed_point.npz",
    "thresholds": "amp_thresholds.npz",
    "curves": "amp_curves.npz",
    "se": "amp_curves.npz",
}


def compute(part: str, quick: bool = True, runner=None) -> dict:
    """The arrays of one part (the quick grids by default), computed without writing."""
    return ARRAYS[part](config(quick), runner or C.Runner())


# QUICK mode in 04_gamp and 05_state_evolution: each returns the dict of arrays of its
# file (same keys and layout as np.load of it), computed live in this process on the
# quick grid.
def run_curves(quick: bool = True) -> dict:
    """``amp_curves.npz``: GAMP and the convex solver on the alpha grid, SE curve.

    Quick: the simulations run live; the seq2seq SE curve (theory, minutes) is the
    stored one of ``amp_curves.npz``, whose alpha grid contains the quick alphas."""
    arrays = compute("curves", quick)
    if quick:
        stored = C.load_npz(C.HERE / FILES["curves"])
        arrays |= {k: v for k, v in stored.items() if k.startswith("seq2seq_se_")}
    return arrays


def run_thresholds(quick: bool = True) -> dict:
    """``amp_thresholds.npz``: perfect-recovery and interpolation runs."""
    return compute("thresholds", quick)


def run_fixed_point(quick: bool = True) -> dict:
    """``amp_fixed_point.npz``: GAMP and convex on one seq2seq data set (quick: d = 16)."""
    return compute("fixedpoint", quick)


def _part(name):
    def part(quick, out, runner):
        arrays = compute(name, quick, runner)
        path = Path(out) / FILES[name]
        if name == "se":  # only the SE curves of an existing amp_curves.npz
            arrays = C.load_npz(path) | arrays
        C.save_npz(path, arrays)

    return part


PARTS = {name: _part(name) for name in ("fixedpoint", "thresholds", "curves", "se")}


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    if not args.part:
        args.part = ["fixedpoint", "thresholds", "curves"]  # "curves" includes "se"
    C.run_parts(args, PARTS, lambda *a: None)


if __name__ == "__main__":
    from data import make_amp_data  # the importable module: workers load its functions by name

    make_amp_data.main()

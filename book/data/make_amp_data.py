"""Precompute the heavy parts of book/04_gamp.ipynb and book/05_state_evolution.ipynb.

Run from ``book/`` (``make data`` runs every script)::

    python -m data.make_amp_data                       # every part, on a local Dask cluster
    python -m data.make_amp_data --part thresholds     # fixedpoint | thresholds | curves | se
    python -m data.make_amp_data --quick --out DIR     # the quick grids, elsewhere

Every grid is an :class:`attnlib.sweep.Grid` over a point function below (cached on
disk, resumable); ``make_amp_data.compute("curves", quick=True)`` returns a part's arrays
(the quick grid, in this process) without writing. All randomness comes from explicit
PRNG keys. Files (``book/data/``):

- ``amp_fixed_point.npz``: GAMP (:func:`attnlib.amp.robust_gamp`) and the convex solver on
  the seq2seq data set of the chapter's fixed-point check (regenerated in the chapter from
  the same key), and the state-evolution output side at GAMP's overlaps.
- ``amp_curves.npz``: the final figure of 05_state_evolution. For the linear task at T = 1
  with label noise and softmax seq2seq at T = 2 (Wishart kappa0 = 0.5, nuclear lam =
  0.05): on a grid of alpha and seeds, GAMP and the convex solver on the same data
  (:func:`attnlib.train.evaluate`: overlaps, training loss, Monte Carlo test error; GAMP's
  v), and for seq2seq the SE learning curve (part ``se`` recomputes only that curve).
- ``amp_thresholds.npz``: the convex solver at small lam for the perfect-recovery
  (noise-free) and interpolation (two noise levels) thresholds of the linear task, T = 1.
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

# fmt: off
SETTINGS = {
    # name: (task, d, data alphas, SE alphas or None, GAMP damping)
    "linear": (tasks.Linear(T=1, noise=0.1), 60, (0.1, 0.2, 0.3, 0.5, 0.7, 1.0), None, 0.6),
    "seq2seq": (tasks.Seq2Seq(T=2), 50, (0.05, 0.1, 0.15, 0.2, 0.3, 0.4),
                (0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.18, 0.21, 0.25, 0.3, 0.35, 0.4, 0.45),
                0.6),
}
FULL = {
    "seeds": 3, "d": {"linear": 60, "seq2seq": 50},
    "alphas": {name: s[2] for name, s in SETTINGS.items()},
    "se_alphas": {name: s[3] for name, s in SETTINGS.items()},
    "d_thresholds": 40, "pr_alpha": [0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6],
    "interp_alpha": [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45], "noises": [0.1, 20.0],
    "fixed_point": {"key_seed": 3, "fold": 21, "d": 40, "alpha": 0.15},
}
# QUICK: the chapter's simulations at small d, run live (ATTNLIB_QUICK=1). The solvers
# compile once per data-set shape, so the quick grids share shapes (the fixed point is the
# seq2seq curve point at alpha = 0.2, d = 16; four threshold alphas in all); the quick
# alphas are full-grid alphas, so the stored SE curves (read in class mode) contain them.
QUICK = {
    "seeds": 2, "d": {"linear": 20, "seq2seq": 16},
    "alphas": {"linear": (0.2, 0.5, 1.0), "seq2seq": (0.1, 0.2, 0.4)},
    "se_alphas": {"linear": None, "seq2seq": None},
    "d_thresholds": 16, "pr_alpha": [0.3, 0.45, 0.6], "interp_alpha": [0.2, 0.3, 0.45],
    "noises": [0.1, 20.0], "fixed_point": {"key_seed": 3, "fold": 21, "d": 16, "alpha": 0.2},
    # at d = 16-20 GAMP with damping 0.6 does not converge at the smallest alphas (6000
    # iterations, then a retry); 0.85 converges everywhere (same fixed points)
    "gamp_damping": 0.85,
}
# fmt: on
CURVES_KEY, THRESHOLDS_KEY = 20250301, 20250302


GAMP_FALLBACK = (0.85, 0.95)  # heavier dampings where GAMP breaks down or stalls
GAMP_KW = {"tol": 1e-7, "max_iter": 6000}


FP_FIELDS = ("Y_sum gamp_S gamp_v gamp_a_hat gamp_converged gamp_n_iter gamp_residual convex_S "
             "convex_converged se_a_hat se_q_hat se_m_hat").split()  # fmt: skip


def fixed_point_point(*, key_seed, fold, d, alpha):
    """GAMP and the convex solver on the seq2seq data set of the chapter's fixed-point check.

    The chapter regenerates the same data from the key ``fold_in(PRNGKey(seed), fold)``
    (its ``key(21)``), split as in the chapter's ``gamp_vs_convex``.
    """
    task = tasks.Seq2Seq(T=2)
    k = C.key_for(key_seed, fold)
    S0 = TARGET.sample(jax.random.fold_in(k, 0), d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), task, S0, tasks.n_samples(alpha, d))
    rg = amp.robust_gamp(task, data, LAM, dampings=(0.6, *GAMP_FALLBACK), **GAMP_KW)
    rc = train.train_convex(task, data, LAM, tol=1e-10, max_iter=40000)
    ov = train.overlaps(rg.S, S0)
    out = se.output_side(task, alpha, ov.Q0, ov.m, ov.q, rg.v)
    gap = np.linalg.norm(rg.S - rc.S) / np.linalg.norm(rc.S)
    C.log(f"fixed point: GAMP {rg.converged} ({rg.n_iter} its), convex {rc.converged}, {gap:.1e}")
    found = (float(np.sum(np.asarray(data.Y))), np.asarray(rg.S), rg.v, rg.a_hat)
    found += (bool(rg.converged), rg.n_iter, rg.residual, np.asarray(rc.S), bool(rc.converged))
    return dict(zip(FP_FIELDS, found + (out.a_hat, out.q_hat, out.m_hat), strict=True))


EVAL_KEYS = ("m", "q", "Q0", "train", "test", "test_err")  # the fields of train.Evaluation


def curve_point(*, setting, d, alpha, seed, damping=None):
    """GAMP and the convex solver on one data set; returns a dict of scalars.

    ``damping``: GAMP's first damping (default: the setting's)."""
    task, _, _, _, default_damping = SETTINGS[setting]
    damping = default_damping if damping is None else damping
    k = C.key_for(CURVES_KEY, list(SETTINGS).index(setting), seed, int(round(alpha * 1e4)))
    k_s0, k_data, k_test = jax.random.split(k, 3)
    S0 = TARGET.sample(k_s0, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rg = amp.robust_gamp(task, data, LAM, dampings=(damping, *GAMP_FALLBACK), **GAMP_KW)
        rc = train.train_convex(task, data, LAM, tol=1e-9, max_iter=40000)
    for w in caught:
        C.log(f"   warning: {w.message}")
    out = {}
    for name, S in (("gamp", rg.S), ("convex", rc.S)):
        e = train.evaluate(k_test, task, data, S, S0, n_test=20000)
        out |= {f"{name}_{k}": v for k, v in zip(EVAL_KEYS, e, strict=True)}
    out |= {"gamp_v": rg.v, "gamp_a_hat": rg.a_hat, "gamp_converged": float(rg.converged)}
    out["convex_converged"] = float(rc.converged)
    out["rel_diff"] = float(np.linalg.norm(rg.S - rc.S) / np.linalg.norm(rc.S))
    return {k: float(v) for k, v in out.items()}


SE_FIELDS = ("alpha", "m", "q", "v", "train_loss", "test_error", "converged")


def se_curve_point(*, setting, alphas):
    """State-evolution learning curve of a setting on ``alphas`` (warm starts inside)."""
    lc = se.learning_curve(SETTINGS[setting][0], TARGET, np.asarray(alphas), LAM, "nuclear")
    return {f: np.asarray(getattr(lc, f), dtype=float) for f in SE_FIELDS}


def pr_point(*, d, i, alpha, seed):
    """Noise-free linear task at small lam: mse of the convex solver (perfect recovery)."""
    k = C.key_for(THRESHOLDS_KEY, 100 + seed, i)
    S0 = TARGET.sample(C.key_for(THRESHOLDS_KEY, seed), d)
    data = tasks.make_dataset(k, tasks.Linear(T=1), S0, tasks.n_samples(alpha, d))
    r = train.train_convex(tasks.Linear(T=1), data, 1e-3, tol=1e-9, max_iter=40000)
    return {"mse": float(train.mse(r.S, S0))}


def interp_point(*, d, j, noise, i, alpha, seed):
    """Noisy linear task at tiny lam: training loss of the convex solver (interpolation)."""
    k = C.key_for(THRESHOLDS_KEY, 200 + 10 * seed + j, i)
    task = tasks.Linear(T=1, noise=float(noise))
    S0 = TARGET.sample(C.key_for(THRESHOLDS_KEY, seed), d)
    data = tasks.make_dataset(k, task, S0, tasks.n_samples(alpha, d))
    # the noise is in the labels; the loss (hence the compiled solver) is the noise-free one
    r = train.train_convex(tasks.Linear(T=1), data, 1e-4, tol=1e-9, max_iter=40000)
    return {"train": float(r.train_loss)}


# --- Grids and parts


def grid_curves(cfg) -> sweep.Grid:
    damping = {"damping": cfg["gamp_damping"]} if "gamp_damping" in cfg else {}
    points = []
    for name in SETTINGS:
        pts = sweep.product(setting=name, d=cfg["d"][name], alpha=list(cfg["alphas"][name]))
        points += [{**p, **damping} for p in pts]
    return sweep.Grid(curve_point, points, seeds=cfg["seeds"])


def grid_se(cfg) -> sweep.Grid:
    se_alphas = {k: a for k, a in cfg["se_alphas"].items() if a is not None}
    points = [{"setting": k, "alphas": np.union1d(a, cfg["alphas"][k]).tolist()}
              for k, a in se_alphas.items()]  # fmt: skip
    return sweep.Grid(se_curve_point, points)


def grid_thresholds(cfg) -> tuple[sweep.Grid, sweep.Grid]:
    d = cfg["d_thresholds"]
    pr = [{"d": d, "i": i, "alpha": a} for i, a in enumerate(cfg["pr_alpha"])]
    interp = [
        {"d": d, "j": j, "noise": noise, "i": i, "alpha": a}
        for j, noise in enumerate(cfg["noises"])
        for i, a in enumerate(cfg["interp_alpha"])
    ]
    seeds = cfg["seeds"]
    return sweep.Grid(pr_point, pr, seeds=seeds), sweep.Grid(interp_point, interp, seeds=seeds)


def arrays_fixed_point(cfg, run) -> dict:
    grid = sweep.Grid(fixed_point_point, cfg["fixed_point"])
    point, row = grid.points[0], run(grid).iloc[0]
    arrays = {("seed" if k == "key_seed" else k): np.array(v) for k, v in point.items()}
    return arrays | {"lam": np.array(LAM)} | {k: np.array(row[k]) for k in FP_FIELDS}


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
    tp, ti = (run(g) for g in grid_thresholds(cfg))
    seeds = range(cfg["seeds"])
    interp_axes = {"noise": cfg["noises"], "seed": seeds, "alpha": cfg["interp_alpha"]}
    return {
        "d": np.array(cfg["d_thresholds"]), "pr_alpha": np.array(cfg["pr_alpha"]),
        "pr_mse": sweep.pivot(tp, "mse", {"seed": seeds, "alpha": cfg["pr_alpha"]}),
        "interp_alpha": np.array(cfg["interp_alpha"]), "noise": np.array(cfg["noises"]),
        "interp_train": sweep.pivot(ti, "train", interp_axes),
    }  # fmt: skip


ARRAYS = {"fixedpoint": arrays_fixed_point, "thresholds": arrays_thresholds,
          "curves": arrays_curves, "se": arrays_se}  # fmt: skip
FILES = {"fixedpoint": "amp_fixed_point.npz", "thresholds": "amp_thresholds.npz",
         "curves": "amp_curves.npz", "se": "amp_curves.npz"}  # fmt: skip


def compute(part: str, quick: bool = True, runner=None) -> dict:
    """The arrays of one part (the quick grids by default), computed without writing."""
    return ARRAYS[part](QUICK if quick else FULL, runner or C.Runner())


# QUICK mode in 04_gamp and 05_state_evolution: each returns the arrays of its file
# (the keys and layout of np.load of it), computed live in this process on the quick grid.
def run_curves(quick: bool = True) -> dict:
    """``amp_curves.npz``: GAMP and the convex solver on the alpha grid, SE curve. Quick: the
    simulations run live; the seq2seq SE curve (theory, minutes) is the stored one."""
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

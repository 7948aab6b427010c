"""Precompute the heavy parts of chapter 3 (book/03_amp_derivation.ipynb).

Writes three small files next to this script:

- ``amp_fixed_point.npz``: GAMP and the convex solver on the seq2seq data set of
  the chapter's fixed-point check (regenerated in the chapter from the same key),
  and the state-evolution output side at GAMP's overlaps.
- ``amp_curves.npz``: the final figure of the chapter. For two settings (the
  linear task at T = 1 with label noise, softmax seq2seq at T = 2 without noise;
  Wishart target kappa0 = 0.5, nuclear penalty lam = 0.05) it stores, on a grid of
  alpha and for several seeds, GAMP and the convex solver run on the same data
  (overlaps m, q, training loss, Monte Carlo test error, GAMP variance v), and for
  seq2seq the state-evolution learning curve (the linear one is cheap and is
  computed in the chapter).
- ``amp_thresholds.npz``: convex-solver simulations at small lam for the
  perfect-recovery (noise-free) and interpolation (two noise levels) thresholds
  of the linear task at T = 1.

Run from the repository root (about 30-60 minutes on two cores):

    python book/data/make_amp_data.py            # everything
    python book/data/make_amp_data.py thresholds # only some parts: fixedpoint | thresholds | curves
    python book/data/make_amp_data.py se         # only the SE curves of an existing amp_curves.npz

Every random draw derives from explicit PRNG keys, so the files are reproducible.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

from attnlib import amp, se, targets, tasks, train

HERE = Path(__file__).resolve().parent
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


def log(msg: str) -> None:
    print(f"[make_amp_data {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def robust_gamp(task, data, damping, lam=LAM):
    """GAMP with the given damping; if it breaks down or does not converge, heavier damping."""
    res = None
    for damp in (damping, 0.85, 0.95):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                res = amp.gamp(task, data, lam, damping=damp, tol=1e-7, max_iter=6000)
        except FloatingPointError as err:
            log(f"   GAMP broke down with damping {damp} ({err})")
            continue
        if res.converged:
            return res
        log(f"   GAMP did not converge with damping {damp} (residual {res.residual:.1e})")
    if res is None:
        raise FloatingPointError("GAMP broke down at every damping")
    return res


def make_fixed_point(path: Path) -> None:
    """GAMP and the convex solver on the seq2seq data set of the chapter's fixed-point check.

    The chapter regenerates the same data from the key ``fold_in(PRNGKey(seed), fold)``
    (its ``key(21)``), split as in the chapter's ``gamp_vs_convex``.
    """
    seed, fold, d, alpha = 3, 21, 40, 0.15
    task = tasks.Seq2Seq(T=2)
    k = jax.random.fold_in(jax.random.PRNGKey(seed), fold)
    S0 = TARGET.sample(jax.random.fold_in(k, 0), d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), task, S0, tasks.n_samples(alpha, d))
    t0 = time.time()
    rg = robust_gamp(task, data, 0.6)
    rc = train.train_convex(task, data, LAM, tol=1e-10, max_iter=40000)
    ov = train.overlaps(rg.S, S0)
    out = se.output_side(task, alpha, ov.Q0, ov.m, ov.q, rg.v)
    log(
        f"fixed point: GAMP converged {rg.converged} in {rg.n_iter} iterations, convex "
        f"converged {rc.converged}, |S_g - S_c|/|S_c| = "
        f"{np.linalg.norm(rg.S - rc.S) / np.linalg.norm(rc.S):.1e} ({time.time() - t0:.0f} s)"
    )
    np.savez_compressed(
        path,
        seed=np.array(seed),
        fold=np.array(fold),
        d=np.array(d),
        alpha=np.array(alpha),
        lam=np.array(LAM),
        Y_sum=np.array(float(np.sum(np.asarray(data.Y)))),
        gamp_S=rg.S,
        gamp_v=np.array(rg.v),
        gamp_a_hat=np.array(rg.a_hat),
        gamp_converged=np.array(rg.converged),
        gamp_n_iter=np.array(rg.n_iter),
        gamp_residual=np.array(rg.residual),
        convex_S=rc.S,
        convex_converged=np.array(rc.converged),
        se_a_hat=np.array(out.a_hat),
        se_q_hat=np.array(out.q_hat),
        se_m_hat=np.array(out.m_hat),
    )
    log(f"wrote {path}")


def run_point(task, d, alpha, seed, damping, base_key):
    """GAMP and the convex solver on one data set; returns a dict of scalars."""
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
        log(f"   warning: {w.message}")
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
    return out


def se_curve(name: str) -> dict:
    """State-evolution learning curve of a setting, on its SE grid and its data alphas."""
    task, _, alphas, se_alphas, _ = SETTINGS[name]
    if se_alphas is None:
        return {}
    grid = np.union1d(np.asarray(se_alphas), np.asarray(alphas))
    t0 = time.time()
    lc = se.learning_curve(task, TARGET, grid, LAM, "nuclear")
    log(f"{name}: SE learning curve of {len(grid)} points ({time.time() - t0:.0f} s)")
    fields = ("alpha", "m", "q", "v", "train_loss", "test_error", "converged")
    return {f"{name}_se_{f}": np.asarray(getattr(lc, f), dtype=float) for f in fields}


def update_se(path: Path) -> None:
    """Recompute only the state-evolution curves of an existing ``amp_curves.npz``."""
    with np.load(path) as f:
        arrays = dict(f)
    for name in SETTINGS:
        arrays.update(se_curve(name))
    np.savez_compressed(path, **arrays)
    log(f"updated {path}")


def make_curves(path: Path) -> None:
    arrays = {}
    base_key = jax.random.PRNGKey(20250301)
    for idx, (name, (task, d, alphas, _, damping)) in enumerate(SETTINGS.items()):
        arrays[f"{name}_alpha"] = np.array(alphas)
        arrays[f"{name}_d"] = np.array(d)
        rows = {}
        for i, alpha in enumerate(alphas):
            for s in SEEDS:
                t0 = time.time()
                res = run_point(task, d, alpha, s, damping, jax.random.fold_in(base_key, idx))
                for key_, val in res.items():
                    rows.setdefault(key_, np.full((len(SEEDS), len(alphas)), np.nan))[s, i] = val
                log(
                    f"{name} alpha={alpha:.3f} seed={s}: test gamp {res['gamp_test']:.4f} "
                    f"convex {res['convex_test']:.4f}, |S_g - S_c|/|S_c| = {res['rel_diff']:.1e} "
                    f"({time.time() - t0:.0f} s)"
                )
        for key_, val in rows.items():
            arrays[f"{name}_{key_}"] = val
        arrays.update(se_curve(name))
    np.savez_compressed(path, **arrays)
    log(f"wrote {path}")


def make_thresholds(path: Path) -> None:
    d = 40
    base_key = jax.random.PRNGKey(20250302)
    pr_alpha = np.array([0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6])
    interp_alpha = np.array([0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45])
    noises = np.array([0.1, 20.0])
    pr = np.zeros((len(SEEDS), len(pr_alpha)))
    interp = np.zeros((len(noises), len(SEEDS), len(interp_alpha)))
    for s in SEEDS:
        S0 = TARGET.sample(jax.random.fold_in(base_key, s), d)
        for i, alpha in enumerate(pr_alpha):
            k = jax.random.fold_in(jax.random.fold_in(base_key, 100 + s), i)
            data = tasks.make_dataset(k, tasks.Linear(T=1), S0, tasks.n_samples(alpha, d))
            r = train.train_convex(tasks.Linear(T=1), data, 1e-3, tol=1e-9, max_iter=40000)
            pr[s, i] = train.mse(r.S, S0)
            log(f"perfect recovery: seed {s}, alpha {alpha:.2f}: mse {pr[s, i]:.4f}")
        for j, noise in enumerate(noises):
            task = tasks.Linear(T=1, noise=float(noise))
            for i, alpha in enumerate(interp_alpha):
                k = jax.random.fold_in(jax.random.fold_in(base_key, 200 + 10 * s + j), i)
                data = tasks.make_dataset(k, task, S0, tasks.n_samples(alpha, d))
                r = train.train_convex(task, data, 1e-4, tol=1e-9, max_iter=40000)
                interp[j, s, i] = r.train_loss
                log(
                    f"interpolation: noise {noise}, seed {s}, alpha {alpha:.2f}: {r.train_loss:.2e}"
                )
    np.savez_compressed(
        path,
        d=np.array(d),
        pr_alpha=pr_alpha,
        pr_mse=pr,
        interp_alpha=interp_alpha,
        noise=noises,
        interp_train=interp,
    )
    log(f"wrote {path}")


def main(parts) -> None:
    if "fixedpoint" in parts:
        make_fixed_point(HERE / "amp_fixed_point.npz")
    if "thresholds" in parts:
        make_thresholds(HERE / "amp_thresholds.npz")
    if "curves" in parts:
        make_curves(HERE / "amp_curves.npz")
    elif "se" in parts:
        update_se(HERE / "amp_curves.npz")


if __name__ == "__main__":
    main(sys.argv[1:] or ("fixedpoint", "thresholds", "curves"))

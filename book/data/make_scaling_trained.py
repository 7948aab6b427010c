"""Trained points on a scaling curve (book/08_scaling_laws).

The linear-scores task (``Linear(T=2)``, noise-free labels) on a power-law target
with 16 extensive modes (``gamma = 2``, equal shares, ``kappa0 = 1``) and a fixed
nuclear penalty ``LAM``, chosen so that the window ``ALPHA_SIM`` sees the threshold
move from mode 2 to mode 8 (the threshold phase of the chapter, derived exponent
``zeta = 2 - r = 1.5``). :func:`run_point` trains one model with the convex solver
(:func:`attnlib.train.train_convex`) and returns its excess test error (noise-free
test labels, so ``e_0 = 0``), its matrix error and its number of recovered modes;
:func:`theory` is the state-evolution curve on a dense grid.

Run from book/ as ``python -m data.make_scaling_trained`` (writes
``scaling_trained.npz``, a few CPU-minutes); the chapter calls ``run(quick=True)``
in class mode.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

import attnlib
from attnlib import scaling, se, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
TASK = tasks.Linear(T=2)
TARGET = scaling.PowerLawModes(gamma=2.0, n_modes=16)
LAM = 1.25  # threshold lam / (12 alpha) crosses mode 2 at alpha ~ 0.1 and mode 8 at ~ 1.8
KEY = jax.random.PRNGKey(5051)
# sizes d (multiples of 16: every mode gets d/16 eigenvalues), seeds, trained and SE grids
FULL = dict(
    d=(48, 64, 96),
    seeds=(0, 1, 2),
    alpha_sim=np.geomspace(0.12, 1.8, 5),
    alpha_th=np.geomspace(0.05, 4.0, 48),
)
QUICK = dict(
    d=(32,),
    seeds=(0, 1),
    alpha_sim=np.geomspace(0.15, 1.2, 3),
    alpha_th=np.geomspace(0.05, 4.0, 16),
)


def run_point(alpha: float, d: int, seed: int) -> dict:
    """One trained model: excess test error, mse_S, recovered modes, solver convergence."""
    k = jax.random.fold_in(jax.random.fold_in(KEY, d), seed)
    k = jax.random.fold_in(k, int(round(1e4 * alpha)))
    S0 = TARGET.sample(jax.random.fold_in(k, 0), d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), TASK, S0, tasks.n_samples(alpha, d))
    res = train.train_convex(TASK, data, LAM, tol=1e-8)
    ov = train.overlaps(res.S, S0)
    return dict(
        excess=se.test_error_from_overlaps(TASK, ov.Q0, ov.m, ov.q),
        mse=ov.Q0 - 2 * ov.m + ov.q,
        n_recovered=scaling.recovered_modes_trained(res.S, S0, TARGET).count,
        converged=float(res.converged),
    )


def theory(alphas) -> scaling.ExcessRiskCurve:
    """The state-evolution excess-risk curve at the same penalty (warm-started along alpha)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", se.SEConvergenceWarning)  # no unconverged point
        return scaling.excess_risk_curve(TASK, TARGET, np.asarray(alphas), LAM)


def run(quick: bool = False) -> dict:
    """Trained points (len(d), len(seeds), len(alpha_sim)) per field, and the theory curve."""
    P = QUICK if quick else FULL
    t0 = time.time()
    out = {"d": np.array(P["d"]), "alpha_sim": P["alpha_sim"], "lam": LAM}
    rows = [
        [[run_point(float(a), d, s) for a in P["alpha_sim"]] for s in P["seeds"]] for d in P["d"]
    ]
    for f in ("excess", "mse", "n_recovered", "converged"):
        out[f"sim_{f}"] = np.array([[[r[f] for r in row] for row in rd] for rd in rows])
    th = theory(P["alpha_th"])
    for f in ("alpha", "excess", "n_recovered", "threshold", "Delta_eff", "converged"):
        out[f"th_{f}"] = np.asarray(getattr(th, f))
    print(f"[scaling_trained] {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def load(path: Path = HERE / "scaling_trained.npz") -> dict:
    """The stored full run (what ``run(quick=False)`` returns)."""
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


if __name__ == "__main__":
    np.savez(HERE / "scaling_trained.npz", **run(quick="--quick" in sys.argv))

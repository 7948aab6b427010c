"""Hardmax attention: GAMP on data against the state evolution, iteration by iteration.

Run from ``book/``::

    python -m data.make_hardmax            # the full grid, writes hardmax_gamp.npz
    python -m data.make_hardmax --quick    # the quick grid (class mode), writes nothing

Setting: hardmax seq2seq, T = 2, no noise, Wishart target kappa0 = 0.5, nuclear
penalty (the direction does not depend on lam), alpha = 0.5. GAMP with the
zero-scale (projection) channel, renormalised after each step, undamped, started
from the identity with v = 0.3 (:func:`attnlib.hardmax.gamp`); the state evolution
from the same start (cosine sqrt(kappa0 / Q0), rho = 0.3 / sqrt(Q0)), undamped.
Stored: the cosine with the target after each iteration, per (d, seed), and the
state-evolution trajectory and fixed ray.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np

import attnlib
from attnlib import hardmax, targets, tasks
from attnlib.hardmax import state_evolution as hse

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

TASK = tasks.Hardmax(T=2)
TARGET = targets.Wishart(0.5)
ALPHA = 0.5
V0 = 0.3
N_ITER = 15
FULL = {"d": (100, 200, 300), "seeds": (0, 1, 2, 3)}
QUICK = {"d": (40,), "seeds": (0, 1)}
OUT = Path(__file__).resolve().parent / "hardmax_gamp.npz"


def se_trajectory(n_iter: int = N_ITER, n_qmc: int = 65536) -> np.ndarray:
    """Cosines of the undamped state evolution from GAMP's start, ``(n_iter,)``."""
    Q0 = TARGET.Q0
    y = np.array([np.arctanh(np.sqrt(TARGET.kappa0 / Q0)), np.log(V0 / np.sqrt(Q0))])
    out = []
    for _ in range(n_iter):
        y, _ = hse._map(TASK, TARGET, ALPHA, y, (n_qmc, 8, 0))
        out.append(np.tanh(y[0]))
    return np.array(out)


def point(d: int, seed: int, n_iter: int = N_ITER) -> dict:
    """GAMP on one data set: the cosine with the target after each iteration."""
    k_target, k_data = jax.random.split(jax.random.PRNGKey(seed))
    S0 = np.asarray(TARGET.sample(k_target, d))
    data = tasks.make_dataset(k_data, TASK, S0, tasks.n_samples(ALPHA, d))

    def cosine(S):
        return float(np.sum(S * S0) / np.sqrt(np.sum(S**2) * np.sum(S0**2)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no convergence asked for
        r = hardmax.gamp(TASK, data, TARGET, max_iter=n_iter, tol=1e-300, damping=0.0,
                         v_init=V0, observe=cosine)  # fmt: skip
    return {"cosine": r.trace, "kappa_scale": r.trajectory.scale[-1]}


def run(quick: bool = False) -> dict:
    grid = QUICK if quick else FULL
    cos = np.full((len(grid["d"]), len(grid["seeds"]), N_ITER), np.nan)
    for i, d in enumerate(grid["d"]):
        for j, s in enumerate(grid["seeds"]):
            cos[i, j] = point(d, s)["cosine"]
            print(f"d={d} seed={s}: " + " ".join(f"{c:.4f}" for c in cos[i, j]), flush=True)
    ray = hardmax.solve(TASK, TARGET, ALPHA)
    return {"d": np.array(grid["d"]), "seeds": np.array(grid["seeds"]), "gamp_cosine": cos,
            "se_cosine": se_trajectory(), "se_ray": ray.gamma, "se_test_error": ray.test_error,
            "alpha": ALPHA}  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    res = run(quick=args.quick)
    if not args.quick:
        np.savez(OUT, **res)

"""The linear task at alpha = 0.1 in 1/d: training loss, test error and mse_S of the ERM
against the state evolution (the appendix page methods_gamp_iterates).

Setting of the last figure of 05_state_evolution: linear task at T = 1, label noise
Delta = 0.1, Wishart target kappa0 = 0.5, nuclear penalty lam = 0.05, alpha = 0.1 (the
point where the simulated training loss at d = 60 is far from the theory). For each
size d and seed, the convex solver (tolerance 1e-9) on a fresh data set; stored per
run: training loss, mse_S = ||S - S0||_F^2 / d, the test error (exact at every d for the
linear task: a function of the overlaps), and the Jensen factor of the spread of
||Z_mu||_F^2 (see :func:`jensen_factor`). Run from book/ as
``python -m data.make_amp_finite_size`` (writes ``amp_finite_size.npz``, about ten
CPU-minutes).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import se, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
TARGET = targets.Wishart(0.5)
TASK = tasks.Linear(T=1, noise=0.1)
LAM, ALPHA = 0.05, 0.1
SIZES = (30, 40, 50, 60, 80)
SEEDS = tuple(range(6))
KEY_SEED = 2024


def sequence_weights(X) -> np.ndarray:
    """r_mu = ||Z_mu||_F^2 d / (2 D) for T = 1: (|x|^4 - 2|x|^2 + d) / (d (d + 1)), mean 1."""
    d = X.shape[-1]
    n2 = np.sum(np.asarray(X)[:, 0] ** 2, axis=-1)
    return (n2**2 - 2 * n2 + d) / (d * (d + 1))


def jensen_factor(r, v: float) -> float:
    """mean_mu (1 + 4v)^2 / (1 + 4 v r_mu)^2: the factor by which a spread of the
    per-sequence variance V_mu = 2 v r_mu raises the training loss of the linear channel,
    whose residual is (y - omega) / (1 + 2 V_mu), over the uniform-variance value."""
    return float(np.mean((1 + 4 * v) ** 2 / (1 + 4 * v * np.asarray(r)) ** 2))


def point(d: int, seed: int, v_se: float) -> dict:
    k = C.key_for(KEY_SEED, d, seed)
    S0 = TARGET.sample(jax.random.fold_in(k, 0), d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), TASK, S0, tasks.n_samples(ALPHA, d))
    rc = train.train_convex(TASK, data, LAM, tol=1e-9, max_iter=100000)
    ov = train.overlaps(rc.S, S0)
    return {
        "train": train.train_loss(TASK, data, rc.S),
        "mse": float(np.sum((np.asarray(rc.S) - np.asarray(S0)) ** 2) / d),
        "test": float(se.test_error_from_overlaps(TASK, ov.Q0, ov.m, ov.q)),
        "jensen": jensen_factor(sequence_weights(data.X), v_se),
        "converged": float(rc.converged),
    }


def main() -> None:
    th = se.solve(TASK, TARGET, ALPHA, LAM, on_fail="raise")
    out = {"sizes": np.array(SIZES), "seeds": np.array(SEEDS), "alpha": ALPHA, "lam": LAM}
    out.update(se_train=th.train_loss, se_test=th.test_error, se_v=th.v)
    out["se_mse"] = float(TARGET.Q0 - 2 * th.m + th.q)
    fields = ("train", "mse", "test", "jensen", "converged")
    table = {f: np.zeros((len(SIZES), len(SEEDS))) for f in fields}
    for i, d in enumerate(SIZES):
        for j, seed in enumerate(SEEDS):
            p = point(d, seed, th.v)
            for f in fields:
                table[f][i, j] = p[f]
            C.log(f"d = {d}, seed {seed}: " + ", ".join(f"{f} {p[f]:.4g}" for f in fields))
    out.update(table)
    np.savez(HERE / "amp_finite_size.npz", **out)
    C.log("wrote amp_finite_size.npz")


if __name__ == "__main__":
    main()

"""The linear task at alpha = 0.1 in 1/d: training loss, test error and mse_S of the ERM
against the state evolution (the appendix page methods_gamp_iterates).

Setting of the last figure of 05_state_evolution: linear task at T = 1, label noise
Delta = 0.1, Wishart target kappa0 = 0.5, nuclear penalty lam = 0.05, alpha = 0.1 (the
point where the simulated training loss at d = 60 is far from the theory). For each
size d and seed (:func:`point`, on the grid of :func:`grid`, an
:class:`attnlib.sweep.Grid` cached on disk), the convex solver (tolerance 1e-9) on a
fresh data set; stored per run: training loss, mse_S = ||S - S0||_F^2 / d, the test
error (exact at every d for the linear task: a function of the overlaps), and the Jensen
factor of the spread of ||Z_mu||_F^2 (see :func:`jensen_factor`). Run from book/::

    python -m data.make_amp_finite_size                               # amp_finite_size.npz
    python -m data.make_amp_finite_size --quick --serial --out DIR    # d = 30, 40; 2 seeds

(about ten CPU-minutes for the full grid).
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
from attnlib import gamp, se, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

TARGET = targets.Wishart(0.5)
TASK = tasks.Linear(T=1, noise=0.1)
LAM, ALPHA = 0.05, 0.1
FULL = {"sizes": (30, 40, 50, 60, 80), "seeds": 6}
QUICK = {"sizes": (30, 40), "seeds": 2}
KEY_SEED = 2024
FIELDS = ("train", "mse", "test", "jensen", "converged")


def jensen_factor(r, v: float) -> float:
    """mean_mu (1 + 4v)^2 / (1 + 4 v r_mu)^2: the factor by which a spread of the
    per-sequence variance V_mu = 2 v r_mu raises the training loss of the linear channel,
    whose residual is (y - omega) / (1 + 2 V_mu), over the uniform-variance value
    (``r_mu``: :func:`attnlib.gamp.sequence_weights`, mean 1)."""
    return float(np.mean((1 + 4 * v) ** 2 / (1 + 4 * v * np.asarray(r)) ** 2))


def point(d: int, seed: int, v_se: float) -> dict:
    """The convex solver on the data set ``(d, seed)``; ``v_se``: the SE's ``v``."""
    k = C.key_for(KEY_SEED, d, seed)
    S0 = TARGET.sample(jax.random.fold_in(k, 0), d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), TASK, S0, tasks.n_samples(ALPHA, d))
    rc = train.train_convex(TASK, data, LAM, tol=1e-9, max_iter=100000)
    ov = train.overlaps(rc.S, S0)
    return {
        "train": train.train_loss(TASK, data, rc.S),
        "mse": train.mse(rc.S, S0),
        "test": float(se.test_error_from_overlaps(TASK, ov.Q0, ov.m, ov.q)),
        "jensen": jensen_factor(gamp.sequence_weights(data.X)[:, 0], v_se),
        "converged": float(rc.converged),
    }


def grid(cfg: dict, v_se: float) -> sweep.Grid:
    return sweep.Grid(point, {"d": list(cfg["sizes"]), "v_se": v_se}, seeds=cfg["seeds"])


def compute(quick: bool = False, runner=None) -> dict:
    """The arrays of ``amp_finite_size.npz``: the SE point, and ``(size, seed)`` tables."""
    cfg = QUICK if quick else FULL
    th = se.solve(TASK, TARGET, ALPHA, LAM)
    if not th.converged:
        raise RuntimeError(f"no state-evolution fixed point at alpha {ALPHA}, lam {LAM}")
    seeds = range(cfg["seeds"])
    out = {"sizes": np.array(cfg["sizes"]), "seeds": np.array(seeds), "alpha": ALPHA, "lam": LAM}
    out.update(se_train=th.train_loss, se_test=th.test_error, se_v=th.v)
    out["se_mse"] = float(TARGET.Q0 - 2 * th.m + th.q)
    table = (runner or C.Runner())(grid(cfg, th.v))
    axes = {"d": list(cfg["sizes"]), "seed": seeds}
    out.update({f: sweep.pivot(table, f, axes) for f in FIELDS})  # (size, seed)
    return out


def main(argv=None) -> None:
    parts = C.npz_parts({"finite_size": "amp_finite_size.npz"}, lambda _, q, r: compute(q, r))
    args = C.parser(__doc__, parts).parse_args(argv)
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    from data import make_amp_finite_size  # the importable module: workers load its functions

    make_amp_finite_size.main()

"""Precompute the heavy parts of the Bayes-optimal chapter (book/09_bayes_optimal.ipynb).

Writes next to this script:

- ``bayes_erm.npz``: the ERM (nuclear penalty, state evolution) at its optimal
  ``lam`` (``se.drivers.search_lambda``, minimum test error) on a grid of ``alpha``, for
  softmax seq2seq at T = 2 without noise and with logit noise Delta = 0.1
  (Wishart target kappa0 = 0.5). The linear task is cheap and computed in the chapter.
- ``bayes_gamp.npz``: GAMP-RIE on finite data sets (two sizes d, several seeds) at
  a few ``alpha`` for the same two seq2seq settings and the linear task at T = 1
  with noise Delta = 0.1: final ``||S - S0||_F^2 / d`` and ``Delta_eff``.
- ``bayes_gamp_a005.npz``: GAMP-RIE for noise-free seq2seq at alpha = 0.05, six
  seeds at d = 150 (seeds 0 and 1 are those of bayes_gamp.npz), with the spread of
  the mse over the last iterates.

Each experiment is a pure function of one point's parameters and seed that returns
a dict of numbers (:func:`erm_point`, :func:`gamp_point`), with a full and a quick
grid. Run from book/ (about 30 minutes on two busy cores):

    python -m data.make_bayes_data          # everything
    python -m data.make_bayes_data gamp     # only one part: erm | gamp | seeds

Every random draw derives from explicit PRNG keys, so the files are reproducible.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

import attnlib
from attnlib import bayes, targets, tasks
from attnlib.se import drivers

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
TARGET = targets.Wishart(0.5)
SETTINGS = {
    "seq2seq": tasks.Seq2Seq(T=2),
    "seq2seq_noisy": tasks.Seq2Seq(T=2, noise=0.1),
    "linear_noisy": tasks.Linear(T=1, noise=0.1),
}
ERM_GRID = {
    "seq2seq": (0.03, 0.06, 0.09, 0.12, 0.15, 0.18, 0.21, 0.24, 0.27),
    "seq2seq_noisy": (0.03, 0.06, 0.1, 0.15, 0.2, 0.25, 0.3),
}
GAMP_FULL = {
    "alphas": {
        "seq2seq": (0.05, 0.1, 0.15),
        "seq2seq_noisy": (0.1, 0.2, 0.3),
        "linear_noisy": (0.1, 0.3, 0.5),
    },
    "sizes": (75, 150),
    "seeds": (0, 1),
}
# quick: at d = 40 the mse after 50 iterations is within about 1 % of its value after 150
GAMP_QUICK = {
    "alphas": {"seq2seq": (0.05, 0.1, 0.15), "seq2seq_noisy": (0.1, 0.2, 0.3), "linear_noisy": ()},
    "sizes": (40,),
    "seeds": (0, 1),
    "max_iter": 50,
}


def log(msg: str) -> None:
    print(f"[make_bayes_data {time.strftime('%H:%M:%S')}] {msg}", flush=True)


DAMPINGS = (0.5, 0.8, 0.9)
LAM_GRID = np.logspace(-3.0, -0.5, 5)
N_QMC = 2048  # QMC points of the ERM state evolution (integration error reported)


def erm_point(setting: str, alpha: float, init=None) -> dict:
    """ERM (nuclear penalty) at its test-optimal ``lam``: :func:`attnlib.se.drivers.
    search_lambda` over the log grid ``LAM_GRID`` (warm-started from the last non-zero
    fixed point), then a bounded search on ``log lam`` between the grid neighbours of the
    best point. Returns lam, test error, mse, convergence (and the warm start of the
    result, for the next ``alpha``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s = drivers.search_lambda(SETTINGS[setting], TARGET, alpha, "nuclear", grid=LAM_GRID,
                                  xatol=0.05, init=init, n_qmc=N_QMC)  # fmt: skip
    r = s.result
    return {
        "lam": s.lam,
        "test_error": r.test_error,
        "mse": r.mse,
        "converged": float(r.converged),
        "_warm": s.result_warm if r.q > 0 else None,
    }


def gamp_point(setting: str, alpha: float, d: int, seed: int, max_iter: int = 150) -> dict:
    """GAMP-RIE on one data set: final mse, Delta_eff, iterations and convergence."""
    task = SETTINGS[setting]
    key = jax.random.fold_in(jax.random.PRNGKey(seed), int(round(alpha * 1e4)) + 7 * d)
    k_s0, k_data = jax.random.split(key)
    S0 = TARGET.sample(k_s0, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    bound = 2 * (TARGET.Q0 - TARGET.measure().moment(1) ** 2)
    for damping in DAMPINGS:  # heavier damping when an iteration blows up
        r = bayes.gamp_rie(task, data, TARGET, S0=S0, max_iter=max_iter, tol=1e-5, damping=damping)
        if np.all(np.isfinite(r.trajectory.v)) and r.trajectory.v[-1] < bound:
            break
        log(f"   gamp {setting} alpha={alpha} d={d} seed={seed}: diverged at damping {damping}")
    return {
        "damping": damping,
        "mse": float(r.trace[-1]),  # the mse of each iterate (the observe hook of gamp_rie)
        "Delta_eff": float(1.0 / (2 * r.trajectory.a_hat[-1])),
        "n_iter": float(r.n_iter),
        "converged": float(r.converged),
    }


def run_erm() -> dict:
    out = {}
    for setting, alphas in ERM_GRID.items():
        rows, init = [], None
        for a in alphas:
            t0 = time.time()
            p = erm_point(setting, a, init)
            init = p.pop("_warm")
            rows.append(p)
            log(
                f"erm {setting} alpha={a}: lam={p['lam']:.4g} test={p['test_error']:.5f} "
                f"mse={p['mse']:.5f} ({time.time() - t0:.0f} s)"
            )
        out[f"{setting}_alpha"] = np.array(alphas)
        for k in rows[0]:
            out[f"{setting}_{k}"] = np.array([r[k] for r in rows])
    return out


def run_gamp(grid: dict) -> dict:
    out = {}
    for setting, alphas in grid["alphas"].items():
        if not alphas:
            continue
        shape = (len(alphas), len(grid["sizes"]), len(grid["seeds"]))
        res = {k: np.zeros(shape) for k in ("mse", "Delta_eff", "n_iter", "converged", "damping")}
        for i, a in enumerate(alphas):
            for j, d in enumerate(grid["sizes"]):
                for s, seed in enumerate(grid["seeds"]):
                    p = gamp_point(setting, a, d, seed, grid.get("max_iter", 150))
                    for k in res:
                        res[k][i, j, s] = p[k]
                log(f"gamp {setting} alpha={a} d={d}: mse {res['mse'][i, j].mean():.4f}")
        out[f"{setting}_alpha"] = np.array(alphas)
        out.update({f"{setting}_{k}": v for k, v in res.items()})
    out["sizes"] = np.array(grid["sizes"])
    out["seeds"] = np.array(grid["seeds"])
    return out


# alpha = 0.05, noise-free seq2seq, where two seeds put GAMP-RIE at d = 150 below the
# Bayes-optimal error: six seeds at that size, and the spread of the mse over the last
# iterates of each run (how far from a fixed point a run that did not converge is)
SEEDS_A005 = {"alpha": 0.05, "sizes": (150,), "seeds": tuple(range(6)), "tail": 30}


def run_seeds_a005(grid: dict = SEEDS_A005) -> dict:
    """GAMP-RIE at one alpha, more seeds: final mse, its mean and spread over the last
    ``tail`` iterates, convergence, iterations."""
    shape = (len(grid["sizes"]), len(grid["seeds"]))
    keys = ("mse", "mse_tail_mean", "mse_tail_std", "converged", "n_iter")
    res = {k: np.zeros(shape) for k in (*keys, "damping")}
    task, a = SETTINGS["seq2seq"], grid["alpha"]
    for j, d in enumerate(grid["sizes"]):
        for s, seed in enumerate(grid["seeds"]):
            key = jax.random.fold_in(jax.random.PRNGKey(seed), int(round(a * 1e4)) + 7 * d)
            k_s0, k_data = jax.random.split(key)
            S0 = TARGET.sample(k_s0, d)
            data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(a, d))
            bound = 2 * (TARGET.Q0 - TARGET.measure().moment(1) ** 2)
            for damping in DAMPINGS:  # as gamp_point: heavier damping when a run blows up
                r = bayes.gamp_rie(
                    task, data, TARGET, S0=S0, max_iter=150, tol=1e-5, damping=damping
                )
                if np.all(np.isfinite(r.trajectory.v)) and r.trajectory.v[-1] < bound:
                    break
            res["damping"][j, s] = damping
            tail = np.asarray(r.trace[-grid["tail"] :])
            values = (r.trace[-1], tail.mean(), tail.std(), r.converged, r.n_iter)
            for k, v in zip(keys, values, strict=True):
                res[k][j, s] = float(v)
            log(f"gamp seeds alpha={a} d={d} seed={seed}: mse {res['mse'][j, s]:.4f}")
    return {**res, "alpha": np.array(a), "sizes": np.array(grid["sizes"])}


def run(quick: bool = False) -> dict:
    """GAMP-RIE data of the chapter (quick: d = 40, two seeds; used live in QUICK mode)."""
    return run_gamp(GAMP_QUICK if quick else GAMP_FULL)


def main(parts) -> None:
    if "erm" in parts:
        np.savez_compressed(HERE / "bayes_erm.npz", **run_erm())
        log("wrote bayes_erm.npz")
    if "gamp" in parts:
        np.savez_compressed(HERE / "bayes_gamp.npz", **run())
        log("wrote bayes_gamp.npz")
    if "seeds" in parts:
        np.savez_compressed(HERE / "bayes_gamp_a005.npz", **run_seeds_a005())
        log("wrote bayes_gamp_a005.npz")


if __name__ == "__main__":
    main(sys.argv[1:] or ("erm", "gamp", "seeds"))

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
a dict of numbers (:func:`erm_point`, chained along ``alpha`` for its warm starts, and
:func:`gamp_point`), declared as :class:`attnlib.sweep.Grid` objects with a full and a
quick grid (cached on disk). Run from book/ (about 30 minutes on two busy cores)::

    python -m data.make_bayes_data                       # every part
    python -m data.make_bayes_data --part gamp           # erm | gamp | seeds
    python -m data.make_bayes_data --quick --serial --out DIR

``run(quick=True)`` gives the GAMP-RIE arrays in this process (the chapter's QUICK mode).
Every random draw derives from explicit PRNG keys, so the files are reproducible.

GAMP-RIE is run with heavier damping (0.5, then 0.8, then 0.9) where a run blows up: its
``v`` not finite or above the prior variance bound ``2 (Q0 - m1^2)`` (:func:`gamp_point`).
The library's :func:`attnlib.amp.robust_gamp` is the ERM's GAMP and retries until a run
*converges*; this script keeps a stable run that stops at ``max_iter`` (23 of the 36 runs
of ``bayes_gamp.npz`` and all 6 of ``bayes_gamp_a005.npz``, whose spread the chapter
reports), so its acceptance test is its own, on the same retry ladder
(:func:`attnlib.follow.retry`).
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
from attnlib import bayes, follow, sweep, targets, tasks
from attnlib.se import drivers

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

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
ERM_QUICK = {"seq2seq": (0.03, 0.06), "seq2seq_noisy": (0.03,)}  # the chains' first points
# alpha = 0.05, noise-free seq2seq, where two seeds put GAMP-RIE at d = 150 below the
# Bayes-optimal error: six seeds at that size, and the spread of the mse over the last
# iterates of each run (how far from a fixed point a run that did not converge is)
SEEDS_A005 = {"alpha": 0.05, "sizes": (150,), "seeds": tuple(range(6)), "tail": 30}
SEEDS_QUICK = {**SEEDS_A005, "sizes": (40,), "seeds": (0, 1)}
TAIL = SEEDS_A005["tail"]

DAMPINGS = (0.5, 0.8, 0.9)
LAM_GRID = np.logspace(-3.0, -0.5, 5)
N_QMC = 2048  # QMC points of the ERM state evolution (integration error reported)


def erm_point(setting: str, alpha: float, init=None) -> tuple[dict, object]:
    """ERM (nuclear penalty) at its test-optimal ``lam``: :func:`attnlib.se.drivers.
    search_lambda` over the log grid ``LAM_GRID`` (warm-started from the last non-zero
    fixed point), then a bounded search on ``log lam`` between the grid neighbours of the
    best point. Returns lam, test error, mse, convergence, and the warm start of the
    result for the next ``alpha`` (``None`` in the zero phase)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s = drivers.search_lambda(SETTINGS[setting], TARGET, alpha, "nuclear", grid=LAM_GRID,
                                  xatol=0.05, init=init, n_qmc=N_QMC)  # fmt: skip
    r = s.result
    row = {"lam": s.lam, "test_error": r.test_error, "mse": r.mse, "converged": float(r.converged)}
    return row, (s.result_warm if r.q > 0 else None)


def _gamp_rie(task, data, S0, max_iter: int, where: str):
    """GAMP-RIE with the first damping of ``DAMPINGS`` whose run stays finite with ``v``
    below the prior variance bound (the last one otherwise); and that damping."""
    bound = 2 * (TARGET.Q0 - TARGET.measure().moment(1) ** 2)

    def run(damping):
        return bayes.gamp_rie(
            task, data, TARGET, S0=S0, max_iter=max_iter, tol=1e-5, damping=damping
        )

    def stays_finite(r):
        return np.all(np.isfinite(r.trajectory.v)) and r.trajectory.v[-1] < bound

    def diverged(damping, r):
        C.log(f"   gamp {where}: diverged at damping {damping}")

    t = follow.retry(run, DAMPINGS, accept=stays_finite, failed=diverged)
    return t.result, t.rung


def gamp_point(setting: str, alpha: float, d: int, seed: int, max_iter: int = 150) -> dict:
    """GAMP-RIE on one data set: final mse, Delta_eff, iterations, convergence, damping, and
    the mean and spread of the mse over the last ``TAIL`` iterates."""
    task = SETTINGS[setting]
    key = jax.random.fold_in(jax.random.PRNGKey(seed), int(round(alpha * 1e4)) + 7 * d)
    k_s0, k_data = jax.random.split(key)
    S0 = TARGET.sample(k_s0, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    r, damping = _gamp_rie(task, data, S0, max_iter, f"{setting} alpha={alpha} d={d} seed={seed}")
    tail = np.asarray(r.trace[-TAIL:])
    return {
        "damping": damping,
        "mse": float(r.trace[-1]),  # the mse of each iterate (the observe hook of gamp_rie)
        "Delta_eff": float(1.0 / (2 * r.trajectory.a_hat[-1])),
        "n_iter": float(r.n_iter),
        "converged": float(r.converged),
        "mse_tail_mean": float(tail.mean()),
        "mse_tail_std": float(tail.std()),
    }


def _gamp_points(settings: dict, sizes, max_iter: int) -> list[dict]:
    """The points ``(setting, alpha, d, max_iter)`` of every setting's alphas and ``sizes``."""
    return [p for name, alphas in settings.items() if alphas
            for p in sweep.product(setting=name, alpha=list(alphas), d=list(sizes),
                                   max_iter=max_iter)]  # fmt: skip


def run_erm(grid: dict = ERM_GRID, runner=None) -> dict:
    pts = [p for name, a in grid.items() for p in sweep.product(setting=name, alpha=list(a))]
    table = (runner or C.Runner())(sweep.Grid(erm_point, pts, chain="alpha"))
    out = {}
    for setting, alphas in grid.items():
        out[f"{setting}_alpha"] = np.array(alphas)
        for k in ("lam", "test_error", "mse", "converged"):
            out[f"{setting}_{k}"] = sweep.pivot(table, k, {"setting": [setting], "alpha": alphas})[
                0
            ]
    return out


def run_gamp(grid: dict, runner=None) -> dict:
    seeds = tuple(grid["seeds"])
    assert seeds == tuple(range(len(seeds))), "seeds are 0 .. n - 1"
    pts = _gamp_points(grid["alphas"], grid["sizes"], grid.get("max_iter", 150))
    table = (runner or C.Runner())(sweep.Grid(gamp_point, pts, seeds=len(seeds)))
    out = {}
    for setting, alphas in grid["alphas"].items():
        if not alphas:
            continue
        axes = {"setting": [setting], "alpha": alphas, "d": grid["sizes"], "seed": seeds}
        out[f"{setting}_alpha"] = np.array(alphas)
        for k in ("mse", "Delta_eff", "n_iter", "converged", "damping"):
            out[f"{setting}_{k}"] = sweep.pivot(table, k, axes)[0]  # (alpha, size, seed)
    out["sizes"] = np.array(grid["sizes"])
    out["seeds"] = np.array(grid["seeds"])
    return out


def run_seeds_a005(grid: dict = SEEDS_A005, runner=None) -> dict:
    """GAMP-RIE at one alpha, more seeds: final mse, its mean and spread over the last
    ``tail`` iterates, convergence, iterations (the points of :func:`gamp_point`)."""
    seeds = tuple(grid["seeds"])
    assert seeds == tuple(range(len(seeds))) and grid["tail"] == TAIL
    pts = _gamp_points({"seq2seq": (grid["alpha"],)}, grid["sizes"], 150)
    table = (runner or C.Runner())(sweep.Grid(gamp_point, pts, seeds=len(seeds)))
    axes = {"alpha": [grid["alpha"]], "d": grid["sizes"], "seed": seeds}
    keys = ("mse", "mse_tail_mean", "mse_tail_std", "converged", "n_iter", "damping")
    res = {k: sweep.pivot(table, k, axes)[0] for k in keys}  # (size, seed)
    return {**res, "alpha": np.array(grid["alpha"]), "sizes": np.array(grid["sizes"])}


def run(quick: bool = False, runner=None) -> dict:
    """GAMP-RIE data of the chapter (quick: d = 40, two seeds; used live in QUICK mode)."""
    return run_gamp(GAMP_QUICK if quick else GAMP_FULL, runner)


def compute(part: str, quick: bool = False, runner=None) -> dict:
    """The arrays of one part (in this process, nothing written)."""
    if part == "erm":
        return run_erm(ERM_QUICK if quick else ERM_GRID, runner)
    if part == "gamp":
        return run(quick, runner)
    return run_seeds_a005(SEEDS_QUICK if quick else SEEDS_A005, runner)


FILES = {"erm": "bayes_erm.npz", "gamp": "bayes_gamp.npz", "seeds": "bayes_gamp_a005.npz"}


def main(argv=None) -> None:
    args = C.parser(__doc__, FILES).parse_args(argv)
    C.run_parts(args, C.npz_parts(FILES, compute), lambda *a: None)


if __name__ == "__main__":
    from data import make_bayes_data  # the importable module: workers load its functions by name

    make_bayes_data.main()
